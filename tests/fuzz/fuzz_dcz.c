/* fuzz_dcz.c: libFuzzer target for the .dcz readers.
 *
 * Feeds the input to the runtime loader (and, when it loads, runs one
 * sample) and to the toolchain's document reader. Neither may crash, leak or
 * read out of bounds, whatever the bytes. A copy with every checksum
 * recomputed is fed too, so that mutations reach the parsers behind the
 * CRC checks. Seeds: tests/fuzz/corpus/dcz/, written by
 * tests/fuzz/gen_dcz_corpus.c.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/doc.h"
#include "runtime/model.h"

/* Rewrites the section and header CRCs of b where the table lets us. */
static void fix_crcs(uint8_t *b, size_t len)
{
    if (len < DCZ_HEADER_BYTES) return;
    uint32_t ns = dcz_le32(b + 24);
    if (ns > DCZ_MAX_SECTIONS || DCZ_HEADER_BYTES + (uint64_t)ns * DCZ_SECTION_ENTRY_BYTES > len) return;
    for (uint32_t i = 0; i < ns; i++) {
        uint8_t *e = b + DCZ_HEADER_BYTES + (size_t)i * DCZ_SECTION_ENTRY_BYTES;
        uint64_t off = dcz_le32(e + 8) | (uint64_t)dcz_le32(e + 12) << 32;
        uint64_t size = dcz_le32(e + 16) | (uint64_t)dcz_le32(e + 20) << 32;
        if (off <= len && size <= len - off) dcz_put32(e + 24, dcz_crc32(0, b + off, (size_t)size));
    }
    memset(b + 28, 0, 4);
    dcz_put32(b + 28, dcz_crc32(0, b, DCZ_HEADER_BYTES + (size_t)ns * DCZ_SECTION_ENTRY_BYTES));
}

static void parse(const uint8_t *data, size_t size)
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
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    parse(data, size);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    fix_crcs(copy, size);
    parse(copy, size);
    free(copy);
    return 0;
}
