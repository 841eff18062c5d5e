/* fuzz_dcz.c: libFuzzer target for the .dcz readers.
 *
 * Feeds the input to the runtime loader (and, when it loads, runs one
 * sample and two), to the static loader with the stream form (fully
 * connected codebook layers read as stored at every run: its own stream
 * readers, the same runs) and to the toolchain's document reader. Neither may crash, leak or
 * read out of bounds, whatever the bytes, and the parts of a file the reader
 * takes must sum to its size. A copy with every checksum
 * recomputed is fed too, so that mutations reach the parsers behind the
 * CRC checks. A model of more than FUZZ_MAX_WORK per sample is refused at
 * load. fuzz_dcz_parse.c is the fast twin that runs nothing. Seeds:
 * tests/fuzz/corpus/dcz/, written by tests/fuzz/gen_dcz_corpus.c.
 */
#include <stdlib.h>
#include <string.h>

#include "model/doc.h"
#include "runtime/model.h"
#include "tests/unit/test_util.h"

/* models above this much work per sample are refused before they run: the
 * target's time goes to the parsers and kernels, not to one huge sample */
#define FUZZ_MAX_WORK ((uint64_t)1 << 22)

/* One sample, then two. */
static void run_model(dcz_model *m)
{
    size_t in = dcz_input_size(m), out = dcz_output_size(m);
    float *x = calloc(in * 2, sizeof *x), *y = calloc(out * 2, sizeof *y);
    if (x && y) {
        for (size_t i = 0; i < in * 2; i++) x[i] = (float)(i % 7) - 3.0f;
        dcz_run(m, x, 1, y);
        dcz_run(m, x, 2, y);
    }
    free(x);
    free(y);
}

static void parse(const uint8_t *data, size_t size)
{
    dcz_model *m = NULL;
    dcz_options opt;
    dcz_options_init(&opt);
    opt.max_work = FUZZ_MAX_WORK;
    if (dcz_open_memory(data, size, &opt, &m) == DCZ_OK) {
        run_model(m);
        dcz_close(m);
    }
    /* the stream form reads the buffer as it runs: an aligned copy that
     * outlives the model, as the option asks */
    opt.stream_weights = 1;
    opt.max_batch = 2;
    size_t need = 0;
    void *copy = malloc(size ? size : 1), *arena = NULL;
    if (copy && dcz_plan(memcpy(copy, data, size), size, &opt, &need) == DCZ_OK && need <= ((size_t)1 << 26) &&
        (arena = malloc(need)) != NULL && dcz_open_static(copy, size, arena, need, &opt, &m) == DCZ_OK) {
        run_model(m);
        dcz_close(m);
    }
    free(arena);
    free(copy);
    dcz_doc *d = NULL;
    if (dcz_doc_read(data, size, &d) == DCZ_OK) {
        if (dcz_doc_parts_total(&d->parts) != size) abort();   /* dcz info's bytes by part */
        dcz_doc_free(d);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_with_crcs(data, size, parse);
    return 0;
}
