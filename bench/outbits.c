/* outbits.c: a fingerprint of the output bits of models, for checking that
 * a change to libdcz leaves every output as it was (scripts/output-bits.sh
 * runs it at two commits and compares).
 *
 * For each .dcz named on the command line, and each way of running it
 * (the kernels this CPU runs, and the scalar references; heap and static
 * arena), runs seeded random inputs in [-1, 1) at batch 1 (three samples
 * one at a time), 3 and 64 and prints one line: the file, the way, the
 * batch and a 64-bit FNV-1a hash of the output bytes. A model that does
 * not open prints its status instead, so a change in what opens shows too.
 *
 *   outbits MODEL.dcz...
 *
 * OUTBITS_QUICK=1 leaves out batch 64 (for runs under an emulator).
 * OUTBITS_ISA=LEVEL caps the instruction sets of the runs on this CPU's
 * kernels (dcz_options.isa; LEVEL as dcz's --isa takes it), so that a
 * level can be compared with an emulated CPU that has no more than it.
 * OUTBITS_KERNELS=1 also prints, per model, the kernels its weighted layers
 * run with on this CPU ("MODEL kernels: NAME; NAME; ..."), so that a test
 * can see which families a build runs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcz.h"
#include "runtime/tool.h"

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static float uniform(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) / 8388608.0 - 1.0);
}

static unsigned char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            unsigned char *b = realloc(buf, cap = cap ? 2 * cap : 1 << 16);
            if (!b) break;
            buf = b;
        }
        const size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (!got) break;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Runs m at the batches above and prints a line for each. */
static void fingerprint(const char *path, const char *way, dcz_model *m)
{
    const size_t in = dcz_input_size(m), out = dcz_output_size(m);
    static const size_t batches[] = { 1, 3, 64 };
    const char *quick = getenv("OUTBITS_QUICK");
    const size_t nb = quick && quick[0] == '1' ? 2 : sizeof batches / sizeof *batches;
    for (size_t k = 0; k < nb; k++) {
        const size_t b = batches[k];
        float *x = malloc(b * in * sizeof *x), *y = malloc(b * out * sizeof *y);
        if (!x || !y) {
            printf("%s %s batch %zu: out of memory\n", path, way, b);
            free(x);
            free(y);
            return;
        }
        uint64_t seed = 42 + b, h = 0xcbf29ce484222325ull;
        for (size_t i = 0; i < b * in; i++) x[i] = uniform(&seed);
        dcz_status s = DCZ_OK;
        if (b == 1)   /* three samples, one call each */
            for (int r = 0; r < 3 && s == DCZ_OK; r++) {
                for (size_t i = 0; i < in; i++) x[i] = uniform(&seed);
                s = dcz_run(m, x, 1, y);
                h = fnv(h, y, out * sizeof *y);
            }
        else {
            s = dcz_run(m, x, b, y);
            h = fnv(h, y, b * out * sizeof *y);
        }
        if (s != DCZ_OK) printf("%s %s batch %zu: %s\n", path, way, b, dcz_status_str(s));
        else printf("%s %s batch %zu: %016llx\n", path, way, b, (unsigned long long)h);
        free(x);
        free(y);
    }
}

int main(int argc, char **argv)
{
#ifndef OUTBITS_NO_ISA   /* (defined by output-bits.sh --at for commits before the cap) */
    dcz_isa_cap isa = DCZ_CAP_NATIVE;
    const char *level = getenv("OUTBITS_ISA");
    if (level && *level && dcz_isa_cap_parse(level, &isa) != DCZ_OK) {
        fprintf(stderr, "outbits: OUTBITS_ISA=%s: no such level\n", level);
        return 2;
    }
#endif
    for (int a = 1; a < argc; a++) {
        size_t len = 0;
        unsigned char *buf = read_all(argv[a], &len);
        if (!buf) {
            printf("%s: unreadable\n", argv[a]);
            continue;
        }
        for (int ref = 0; ref < 2; ref++) {
            dcz_options o;
            dcz_options_init(&o);
            o.device = DCZ_DEVICE_CPU;
            o.threads = 1;
            o.force_reference = ref;
#ifndef OUTBITS_NO_ISA
            o.isa = isa;
#endif
            const char *way = ref ? "reference" : "fast";
            dcz_model *m = NULL;
            dcz_status s = dcz_open_memory(buf, len, &o, &m);
            if (s != DCZ_OK) printf("%s %s heap: %s\n", argv[a], way, dcz_status_str(s));
            else fingerprint(argv[a], ref ? "reference-heap" : "fast-heap", m);
            if (s == DCZ_OK && !ref && getenv("OUTBITS_KERNELS")) {
                printf("%s kernels:", argv[a]);
                for (uint32_t i = 0; i < dcz_model_layer_count(m); i++) {
                    dcz_layer_desc d;
                    if (dcz_describe_layer(m, i, &d) == DCZ_OK && d.weighted) printf(" %s;", d.kernel);
                }
                printf("\n");
            }
            dcz_close(m);
            /* the static arena, for 4 samples at a time */
            o.max_batch = 4;
            size_t bytes = 0;
            s = dcz_plan(buf, len, &o, &bytes);
            void *arena = s == DCZ_OK ? aligned_alloc(64, (bytes + 63) / 64 * 64) : NULL;
            m = NULL;
            if (s == DCZ_OK && arena) s = dcz_open_static(buf, len, arena, bytes, &o, &m);
            if (s != DCZ_OK) printf("%s %s static: %s\n", argv[a], way, dcz_status_str(s));
            else if (m) fingerprint(argv[a], ref ? "reference-static" : "fast-static", m);
            dcz_close(m);
            free(arena);
        }
        free(buf);
    }
    return 0;
}
