/* fuzz_dcz_parse.c: libFuzzer target for the .dcz readers alone, fast.
 *
 * The same readers as fuzz_dcz.c (the runtime loader, the toolchain's
 * document reader; a copy with every checksum recomputed too) without
 * running what loads, so that a campaign reaches tens of millions of
 * inputs; fuzz_dcz.c beside it also runs the models. Seeds: the same
 * corpus, tests/fuzz/corpus/dcz_parse (a link to corpus/dcz).
 */
#include <stdlib.h>
#include <string.h>

#include "model/doc.h"
#include "tests/unit/test_util.h"

static void parse(const uint8_t *data, size_t size)
{
    dcz_model *m = NULL;
    if (dcz_open_memory(data, size, NULL, &m) == DCZ_OK) dcz_close(m);
    dcz_doc *d = NULL;
    if (dcz_doc_read(data, size, &d) == DCZ_OK) dcz_doc_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_with_crcs(data, size, parse);
    return 0;
}
