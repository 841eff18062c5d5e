/* fuzz_dcz.c: libFuzzer target for the .dcz readers.
 *
 * Feeds the input to the runtime loader (and, when it loads, runs one
 * sample) and to the toolchain's document reader. Neither may crash, leak or
 * read out of bounds, whatever the bytes. Seeds: tests/fuzz/corpus/dcz/,
 * written by tests/fuzz/gen_dcz_corpus.c.
 */
#include <stdlib.h>

#include "runtime/doc.h"
#include "runtime/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dcz_model *m = NULL;
    if (dcz_open_memory(data, size, NULL, &m) == DCZ_OK) {
        size_t in = dcz_input_size(m), out = dcz_output_size(m);
        float *x = calloc(in * 2, sizeof *x), *y = calloc(out * 2, sizeof *y);
        if (x && y) {
            for (size_t i = 0; i < in * 2; i++) x[i] = (float)(i % 7) - 3.0f;
            dcz_run(m, x, 1, y);
            dcz_run(m, x, 2, y);
        }
        free(x);
        free(y);
        dcz_close(m);
    }
    dcz_doc *d = NULL;
    if (dcz_doc_read(data, size, &d) == DCZ_OK) dcz_doc_free(d);
    return 0;
}
