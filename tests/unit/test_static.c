/* test_static.c: models built inside a caller's arena (dcz_plan,
 * dcz_open_static) allocate nothing, need exactly the planned arena, read
 * dense fp32 weights in place, and compute what heap models compute, bit
 * for bit.
 *
 * Allocations are counted by link-time wrapping: the Makefile links this
 * program with -Wl,--wrap=malloc (and calloc, realloc, free, aligned_alloc,
 * posix_memalign), so every call to them from this program's objects and
 * from the members of libdcz.a it pulls in goes through the __wrap_
 * functions below, which count while `counting` is set and forward to
 * libc (or to the sanitizer's allocator under SANITIZE=). The first test
 * proves the counter is live: a malloc of this file and the allocations of
 * dcz_open_memory inside libdcz are both seen.
 *
 * Models: every file of tests/fuzz/corpus/dcz/ but the regress-* ones that
 * must fail (dense, sparse fp32, codebook with raw and Huffman streams,
 * convolutions on the direct and im2col kernels, pools, softmax, int8,
 * fixed8 and fixed16 calibrated models, the calibrated ones also forced to
 * fp32), and, where the toolchain's writer is linked (not in the
 * runtime-only build of `make test-aarch64`, which reports SKIP), models
 * built here: a network of im2col convolutions, and calibrated int8
 * versions of it and of an MLP, and an MLP whose first layer is split over
 * threads, and convolutional nets whose layers, and a batch's chunks of
 * samples, run over threads, float and int8 (natively, capped to AVX2 and
 * on the references forced) (1, 2, 3, 16 threads: the same bits). For each: dcz_plan with max_batch 3; the
 * arena at its least favourable address (one byte past a DCZ_ARENA_ALIGN
 * boundary) is refused one byte short and accepted at the planned size,
 * and an aligned arena needs exactly DCZ_ARENA_ALIGN - 1 bytes less; zero
 * allocations in dcz_open_static, dcz_run at batch 1 and 7 (7 runs as
 * chunks 3, 3, 1) and dcz_close; outputs equal to dcz_open_memory's model
 * run on the same chunks, bit for bit, and on the whole batch, bit for bit
 * too but where this CPU runs lane forms (a chunk of one sample takes them,
 * and they fuse their sums: within 1e-5 there); every pointer
 * of the model inside the arena, but dense weights and biases inside the
 * file buffer (little-endian hosts); a changed bias in the file buffer
 * changes the output of a float model; a float model within 1e-4 of 1 +
 * |reference| of the same model on the reference kernels (some corpus
 * model has a sparse convolution expanded to dense weights where this CPU
 * runs the dense product); a file buffer off a 4-byte boundary
 * is planned larger and copied. Corruptions of every byte (checksums
 * recomputed so they reach the parsers) give dcz_plan, dcz_open_memory and
 * dcz_open_static the same status.
 */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/shift.h"
#include "runtime/cpu/f32/wino.h"
#include "runtime/cpu/q8/qshift.h"
#include "runtime/model.h"
#include "tests/check.h"
#define TEST_RNG_SEED 777
#include "tests/unit/test_util.h"
#ifndef DCZ_RUNTIME_ONLY
#include "calibrate/calibrate.h"
#include "model/doc.h"
#include "tests/unit/doc_build.h"
#endif

/* ---- counting allocations ------------------------------------------------ */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__real_aligned_alloc(size_t align, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
void *__wrap_aligned_alloc(size_t align, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);

static volatile int counting;
static volatile unsigned long allocs;   /* calls seen while counting */

void *__wrap_malloc(size_t n) { allocs += counting; return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { allocs += counting; return __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { allocs += counting; return __real_realloc(p, n); }
void __wrap_free(void *p) { allocs += counting; __real_free(p); }
void *__wrap_aligned_alloc(size_t align, size_t n)
{
    allocs += counting;
    return __real_aligned_alloc(align, n);
}
int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
    allocs += counting;
    return __real_posix_memalign(p, align, n);
}

static void count_start(void) { allocs = 0; counting = 1; }
static unsigned long count_stop(void) { counting = 0; return allocs; }

/* ---- helpers --------------------------------------------------------------- */


static int host_le_f32(void)
{
    const float one = 1.0f;
    uint8_t b[4];
    memcpy(b, &one, 4);
    return b[0] == 0 && b[1] == 0 && b[2] == 0x80 && b[3] == 0x3f;
}

#define ALIGN DCZ_ARENA_ALIGN
static uint8_t *align_up(uint8_t *p) { return p + (-(uintptr_t)p & (ALIGN - 1)); }

/* A copy of len bytes at a 64-byte boundary, as an mmap'd file would lie. */
static uint8_t *aligned_copy(const void *src, size_t len)
{
    uint8_t *p = aligned_alloc(64, (len + 63) / 64 * 64);
    if (p) memcpy(p, src, len);
    return p;
}

static int inside(const void *p, const void *lo, size_t bytes)
{
    const uint8_t *b = lo;
    return (const uint8_t *)p >= b && (const uint8_t *)p < b + bytes;
}

/* ---- one model -------------------------------------------------------------- */

#define MAX_BATCH 3
#define BATCH 7

typedef struct where {
    const uint8_t *arena; size_t arena_bytes;
    const uint8_t *file; size_t file_bytes;
    int bad;          /* pointers outside where they may lie */
    int in_file;      /* pointers into the file buffer */
} where;

/* p (non-NULL) must lie in the arena, or in the file when file_ok. */
static void place(where *w, const void *p, int file_ok, const char *what, uint32_t layer)
{
    if (!p) return;
    if (inside(p, w->arena, w->arena_bytes)) return;
    if (file_ok && inside(p, w->file, w->file_bytes)) { w->in_file++; return; }
    if (w->bad++ < 3) fprintf(stderr, "    layer %u: %s outside the arena%s\n", layer, what,
                              file_ok ? " and the file" : "");
}

static void check_places(const dcz_model *m, where *w)
{
    place(w, m, 0, "model", 0);
    place(w, m->layers, 0, "layers", 0);
    place(w, m->act, 0, "activations", 0);
    place(w, (const uint8_t *)m->act + m->act_batch * m->act_width * sizeof(float) - 1, 0,
          "activations' end", 0);
    place(w, m->tensors, 0, "tensors", 0);
    place(w, m->tensors + m->nlayers, 0, "tensors' end", 0);
    if (m->qacc) {
        place(w, m->qacc, 0, "accumulators", 0);
        place(w, (const uint8_t *)m->qacc + m->act_batch * m->max_width * 10 - 1, 0,
              "accumulators' end", 0);
    }
    if (m->scratch_floats) {
        place(w, m->scratch, 0, "scratch", 0);
        place(w, m->scratch + m->scratch_floats - 1, 0, "scratch's end", 0);
        /* the kernels' tiles and panels start on a cache line, wherever the
         * arena starts and whatever came before them in it */
        if ((uintptr_t)m->scratch % 64 && w->bad++ < 3) fprintf(stderr, "    scratch not on a cache line\n");
    }
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const dcz_exec_layer *l = &m->layers[i];
        place(w, l->w, 1, "w", i);
        place(w, l->bias, 1, "bias", i);
        const void *arena_only[] = { l->sp.row_ptr, l->sp.step, l->sp.idx, l->sp.val,
                                     l->sp.codebook, l->qs.row_ptr, l->qs.step, l->qs.idx,
                                     l->qs.qtab, l->qs.qval, l->w_scale, l->qbias, l->rq_mult,
                                     l->rq_shift, l->out_scale };
        for (size_t k = 0; k < sizeof arena_only / sizeof arena_only[0]; k++)
            place(w, arena_only[k], 0, "execution form", i);
    }
}

static size_t models_checked, inplace_models, lane_models, expanded_models, shifted_models, wt_models;

/* The largest |a[i] - b[i]| over n floats. */
static double max_difference(const float *a, const float *b, size_t n)
{
    double d = 0;
    for (size_t i = 0; i < n; i++) {
        const double e = a[i] > b[i] ? (double)a[i] - b[i] : (double)b[i] - a[i];
        if (!(e <= d)) d = e; /* NaN too */
    }
    return d;
}

/* Everything the header promises, on the file in buf (at a 64-byte
 * boundary) with options o (max_batch is set here). */
static void check_model(const char *name, uint8_t *buf, size_t len, dcz_options o)
{
    o.max_batch = MAX_BATCH;
    dcz_model *hm = NULL, *m = NULL;
    REQUIRE(dcz_open_memory(buf, len, &o, &hm) == DCZ_OK, "%s: heap load", name);
    const size_t in = dcz_input_size(hm), out = dcz_output_size(hm);
    float *x = malloc(BATCH * in * sizeof *x);
    float *yh = calloc(BATCH * out, sizeof *yh), *yc = calloc(BATCH * out, sizeof *yc);
    float *ys = calloc(BATCH * out, sizeof *ys);
    uint8_t *raw = NULL;
    if (!x || !yh || !yc || !ys) { CHECK(0, "out of memory"); goto done; }
    for (size_t i = 0; i < BATCH * in; i++) x[i] = frand();

    size_t need = 0, need_plain = 0;
    REQUIRE(dcz_plan(buf, len, &o, &need) == DCZ_OK, "%s: plan", name);
    CHECK(need > ALIGN, "%s: plan %zu", name, need);
    /* the plan without the extra forms (lane forms, expanded sparse
     * convolutions, shift forms; force_reference builds none): where this
     * CPU builds them, an arena between the two takes the model without
     * them; below the smaller one nothing is accepted. (A shift form can
     * make the plan smaller: its scratch is less than im2col's.) */
    dcz_options op = o;
    op.force_reference = 1;
    REQUIRE(dcz_plan(buf, len, &op, &need_plain) == DCZ_OK, "%s: plan without lanes", name);
    CHECK(need_plain == need || dcz_isa_supported(DCZ_ISA_AVX512) || dcz_gemm_f32_variant(),
          "%s: plans %zu and %zu without lanes", name, need, need_plain);
    const size_t least = need_plain < need ? need_plain : need;
    lane_models += need_plain < need;
    raw = malloc(need + 2 * ALIGN);
    if (!raw) { CHECK(0, "out of memory"); goto done; }
    uint8_t *worst = align_up(raw) + 1;  /* DCZ_ARENA_ALIGN - 1 bytes to skip */
    memset(raw, 0xA5, need + 2 * ALIGN); /* nothing may rely on zeroed memory */

    count_start();
    dcz_status s_short = dcz_open_static(buf, len, worst, least - 1, &o, &m);
    dcz_model *m_short = m;
    dcz_status s_between = DCZ_OK;
    dcz_model *m_between = NULL;
    int between_lanes = 0; /* lane forms in the model of the short arena */
    if (need_plain < need) {
        s_between = dcz_open_static(buf, len, worst, need - 1, &o, &m_between);
        for (uint32_t i = 0; m_between && i < m_between->nlayers; i++)
            between_lanes += m_between->layers[i].sp.lgroups != 0;
    }
    dcz_status s = dcz_open_static(buf, len, worst, need, &o, &m);
    unsigned long n_open = count_stop();
    CHECK(s_short == DCZ_ERR_NOMEM && m_short == NULL, "%s: one byte short: %s", name,
          dcz_status_str(s_short));
    if (need_plain < need) {
        CHECK(s_between == DCZ_OK && m_between, "%s: arena without room for the lane forms: %s",
              name, dcz_status_str(s_between));
        CHECK(between_lanes == 0, "%s: lane forms in a short arena", name);
    }
    if (s != DCZ_OK) { CHECK(0, "%s: open_static: %s", name, dcz_status_str(s)); goto done; }
    CHECK(n_open == 0, "%s: %lu allocations in dcz_open_static", name, n_open);
    CHECK(dcz_input_size(m) == in && dcz_output_size(m) == out &&
          dcz_model_scheme(m) == dcz_model_scheme(hm), "%s: static model differs", name);
    CHECK(m->act_batch == MAX_BATCH, "%s: act_batch %zu", name, m->act_batch);

    /* the float lane forms the model holds (their sums are fused: below) */
    int model_lanes = 0;
    for (uint32_t i = 0; i < m->nlayers; i++) model_lanes += !m->layers[i].q && m->layers[i].sp.lgroups != 0;
    where w = { worst, need, buf, len, 0, 0 };
    check_places(m, &w);
    CHECK(w.bad == 0, "%s: %d pointers outside the arena", name, w.bad);
    /* the dense product reads transposed weights by whole vectors: each
     * row on a cache line's boundary, wherever the arena lies */
    int wt = 0;
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const float *p[2] = { m->layers[i].wt, hm->layers[i].wt };
        for (int k = 0; k < 2; k++)
            if (p[k]) {
                wt = 1;
                CHECK(((uintptr_t)p[k] & 63) == 0, "%s: layer %u's transposed weights %s at %p", name,
                      i, k ? "(heap)" : "(arena)", (const void *)p[k]);
            }
    }
    wt_models += wt;
    if (host_le_f32()) {
        CHECK(w.in_file > 0 || m->nlayers == 0, "%s: no tensor used in place", name);
        inplace_models += w.in_file > 0;
    } else {
        CHECK(w.in_file == 0, "%s: tensors in place on a host that cannot", name);
    }

    /* batch 1 and batch 7 (chunks 3, 3, 1): no allocation, the heap's bits */
    const size_t batches[2] = { 1, BATCH };
    for (int bi = 0; bi < 2; bi++) {
        const size_t b = batches[bi];
        memset(ys, 0, BATCH * out * sizeof *ys);
        count_start();
        s = dcz_run(m, x, b, ys);
        unsigned long n_run = count_stop();
        CHECK(s == DCZ_OK, "%s: run batch %zu: %s", name, b, dcz_status_str(s));
        CHECK(n_run == 0, "%s: %lu allocations in dcz_run batch %zu", name, n_run, b);
        CHECK(dcz_run(hm, x, b, yh) == DCZ_OK, "%s: heap run", name);
        for (size_t d = 0; d < b; d += MAX_BATCH) {
            const size_t n = b - d < MAX_BATCH ? b - d : MAX_BATCH;
            CHECK(dcz_run(hm, x + d * in, n, yc + d * out) == DCZ_OK, "%s: heap chunk", name);
        }
        CHECK(memcmp(ys, yc, b * out * sizeof *ys) == 0,
              "%s: batch %zu differs from the heap model run in chunks", name, b);
        /* a chunk of one sample runs the lane forms, which fuse their sums
         * (kernels_lanes.c): within rounding of a larger batch there, the
         * same bits elsewhere */
        if (model_lanes)
            CHECK(max_difference(ys, yh, b * out) <= 1e-5,
                  "%s: batch %zu off the heap model run at once by %g", name, b,
                  max_difference(ys, yh, b * out));
        else
            CHECK(memcmp(ys, yh, b * out * sizeof *ys) == 0,
                  "%s: batch %zu differs from the heap model run at once", name, b);
    }

    /* a float model computes the function its reference kernels compute
     * (expanded sparse convolutions, the dense product, vector rows...) */
    if (dcz_model_scheme(hm) == DCZ_SCHEME_NONE) {
        dcz_options orf = o;
        orf.force_reference = 1;
        dcz_model *rm = NULL;
        CHECK(dcz_open_memory(buf, len, &orf, &rm) == DCZ_OK, "%s: reference load", name);
        if (rm && dcz_run(rm, x, BATCH, yc) == DCZ_OK && dcz_run(hm, x, BATCH, yh) == DCZ_OK) {
            size_t off = 0;
            for (size_t i = 0; i < BATCH * out; i++) off += !(fabsf(yh[i] - yc[i]) <= 1e-4f * (1 + fabsf(yc[i])));
            CHECK(off == 0, "%s: %zu outputs off the reference kernels' model", name, off);
        }
        dcz_close(rm);
        for (uint32_t i = 0; i < hm->nlayers; i++)
            if (hm->layers[i].kernel == DCZ_K_CONV_EXPANDED || hm->layers[i].kernel == DCZ_K_QCONV_GEMM) {
                expanded_models++;
                break;
            }
        for (uint32_t i = 0; i < hm->nlayers; i++)
            if (dcz_kernel_shifts((dcz_kernel)hm->layers[i].kernel)) { shifted_models++; break; }
    }

    /* the model reads its float biases from the file buffer: change one */
    for (uint32_t i = m->nlayers; i-- > 0;) {
        const dcz_exec_layer *l = &m->layers[i];
        if (l->q || !l->bias || !inside(l->bias, buf, len)) continue;
        uint8_t *at = buf + ((const uint8_t *)l->bias - buf), saved[4];
        const float big = 1000.0f;
        CHECK(dcz_run(m, x, 1, yh) == DCZ_OK, "run");
        memcpy(saved, at, 4);
        memcpy(at, &big, 4);
        CHECK(dcz_run(m, x, 1, ys) == DCZ_OK, "run");
        memcpy(at, saved, 4);
        CHECK(dcz_run(m, x, 1, yc) == DCZ_OK, "run");
        CHECK(memcmp(ys, yc, out * sizeof *ys) != 0, "%s: bias of layer %u not read in place",
              name, i);
        CHECK(memcmp(yc, yh, out * sizeof *yc) == 0, "%s: restored bias, other output", name);
        break;
    }

    count_start();
    dcz_close(m);
    dcz_close(m); /* frees nothing, so twice is harmless */
    unsigned long n_close = count_stop();
    CHECK(n_close == 0, "%s: %lu allocations or frees in dcz_close", name, n_close);

    /* an aligned arena: DCZ_ARENA_ALIGN - 1 bytes less, and not one fewer */
    uint8_t *best = align_up(raw);
    m = NULL;
    CHECK(dcz_open_static(buf, len, best, need - (ALIGN - 1), &o, &m) == DCZ_OK,
          "%s: aligned arena of plan - %d", name, ALIGN - 1);
    CHECK(dcz_open_static(buf, len, best, least - ALIGN, &o, &m) == DCZ_ERR_NOMEM && !m,
          "%s: aligned arena of plan - %d accepted", name, ALIGN);
    models_checked++;
done:
    dcz_close(hm);
    free(raw);
    free(x);
    free(yh);
    free(yc);
    free(ys);
}

/* ---- models --------------------------------------------------------------- */

static const char *corpus_dir = "tests/fuzz/corpus/dcz";

typedef void (*file_fn)(const char *path, uint8_t *buf, size_t len);

/* Calls fn on each corpus file but the regress-* ones; returns the count. */
static size_t each_corpus_model(file_fn fn)
{
    DIR *d = opendir(corpus_dir);
    if (!d) { CHECK(0, "cannot list %s", corpus_dir); return 0; }
    size_t count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        const size_t nl = strlen(n);
        if (n[0] == '.' || strncmp(n, "regress-", 8) == 0 || nl < 4 || strcmp(n + nl - 4, ".dcz"))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", corpus_dir, n);
        FILE *f = fopen(path, "rb");
        if (!f) { CHECK(0, "cannot open %s", path); continue; }
        uint8_t tmp[1 << 16];
        size_t len = fread(tmp, 1, sizeof tmp, f);
        fclose(f);
        CHECK(len > 0 && len < sizeof tmp, "%s: %zu bytes", path, len);
        uint8_t *buf = aligned_copy(tmp, len);
        if (!buf) { CHECK(0, "out of memory"); continue; }
        fn(path, buf, len);
        free(buf);
        count++;
    }
    closedir(d);
    return count;
}

static void corpus_default(const char *path, uint8_t *buf, size_t len)
{
    dcz_options o;
    dcz_options_init(&o);
    check_model(path, buf, len, o);
}

static void corpus_fp32(const char *path, uint8_t *buf, size_t len)
{
    dcz_options o;
    dcz_options_init(&o);
    dcz_model *m = NULL;
    if (dcz_open_memory(buf, len, &o, &m) != DCZ_OK) return;
    const int calibrated = dcz_model_scheme(m) != DCZ_SCHEME_NONE;
    dcz_close(m);
    if (!calibrated) return;
    o.precision = DCZ_PRECISION_FP32;
    check_model(path, buf, len, o);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_counter_is_live(void)
{
    /* through pointers the compiler cannot see into, so that it keeps the
     * calls and their order with the counter's updates */
    void *(*volatile alloc_fn)(size_t) = malloc;
    void (*volatile free_fn)(void *) = free;
    count_start();
    free_fn(alloc_fn(16));
    unsigned long own = count_stop();
    REQUIRE(own == 2, "allocation counting inactive (%lu calls seen): the program must be "
            "linked with -Wl,--wrap=malloc,--wrap=free,...", own);
    /* libdcz's own calls are seen too */
    uint8_t *buf = NULL;
    size_t len = 0;
    FILE *f = fopen("tests/fuzz/corpus/dcz/enc1_coding0.dcz", "rb");
    REQUIRE(f, "no tests/fuzz/corpus/dcz/enc1_coding0.dcz (run from the repository root)");
    uint8_t tmp[1 << 16];
    len = fread(tmp, 1, sizeof tmp, f);
    fclose(f);
    buf = aligned_copy(tmp, len);
    REQUIRE(buf, "out of memory");
    dcz_model *m = NULL;
    count_start();
    dcz_status s = dcz_open_memory(buf, len, NULL, &m);
    dcz_close(m);
    unsigned long lib = count_stop();
    CHECK(s == DCZ_OK && lib >= 2, "libdcz's allocations not seen (%lu)", lib);
    free(buf);
}

static void test_corpus(void)
{
    models_checked = inplace_models = lane_models = expanded_models = shifted_models = wt_models = 0;
    size_t n = each_corpus_model(corpus_default);
    CHECK(n >= 12 && models_checked == n, "%zu of %zu corpus models checked", models_checked, n);
    CHECK(expanded_models > 0 || !dcz_gemm_f32_variant(), "no corpus model has an expanded sparse convolution");
    CHECK(wt_models > 0 || !dcz_gemm_f32_variant(), "no corpus model has transposed dense weights");
    printf("     %zu corpus models, %zu with tensors used in place, %zu with lane forms, %zu with expanded sparse "
           "convolutions, %zu with shift forms\n", n, inplace_models, lane_models, expanded_models, shifted_models);
}

static void test_corpus_calibrated_as_fp32(void)
{
    models_checked = 0;
    each_corpus_model(corpus_fp32);
    CHECK(models_checked >= 3, "%zu calibrated corpus models run in fp32", models_checked);
}

/* The file a path names loads as its bytes do. */
static void open_file_same(const char *path, uint8_t *buf, size_t len)
{
    dcz_model *a = NULL, *b = NULL;
    CHECK(dcz_open_file(path, NULL, &a) == DCZ_OK && dcz_open_memory(buf, len, NULL, &b) == DCZ_OK,
          "%s: load", path);
    if (a && b) {
        float x[4096], ya[256], yb[256];
        const size_t in = dcz_input_size(a), out = dcz_output_size(a);
        if (in <= 4096 && out <= 256) {
            for (size_t i = 0; i < in; i++) x[i] = frand();
            CHECK(dcz_run(a, x, 1, ya) == DCZ_OK && dcz_run(b, x, 1, yb) == DCZ_OK &&
                  memcmp(ya, yb, out * sizeof *ya) == 0, "%s: file and memory differ", path);
        }
    }
    dcz_close(a);
    dcz_close(b);
}

static void test_open_file(void) { each_corpus_model(open_file_same); }

/* Rewrites the section and header CRCs of b where the table lets us (as
 * tests/fuzz/fuzz_dcz.c does), so a corruption reaches the parsers. */

static size_t corrupt_cases, corrupt_refused, corrupt_mismatch;

/* Whether byte i of a file of len bytes is flipped: every byte of a file
 * up to 4 KB; of a larger one (the two corpus files whose first layer's
 * raw weights take 9 to 18 KB of bytes all alike) every byte of its first
 * KB and its last 2 KB, where its header, tables, graph, small layers,
 * records and calibration lie, and one byte in 7 between (7: every phase
 * of 2-, 4- and 64-byte units in turn). This finds 26,098 of the 26,114
 * refusals that flipping every byte finds, in 28% of the time. */
static int flipped_here(size_t i, size_t len)
{
    /* under an emulator (check_emulated), one of those in 3: the loaders'
     * code is the same C, and 47,000 loads take a minute there */
    if (check_emulated() && i % 3 != 0) return 0;
    return len <= 4096 || i < 1024 || i >= len - 2048 || i % 7 == 0;
}

/* Each byte of the file flipped (all bits; flipped_here), checksums
 * recomputed: the three loaders agree on the status. A file that plans to
 * more than 16 MiB (a flipped dimension) is only planned and heap-loaded. */
static void corruptions_agree(const char *path, uint8_t *buf, size_t len)
{
    uint8_t *c = aligned_copy(buf, len);
    uint8_t *arena = malloc(1 << 16);
    if (!c || !arena) { CHECK(0, "out of memory"); free(c); free(arena); return; }
    for (size_t i = 0; i < len; i++) {
        if (!flipped_here(i, len)) continue;
        memcpy(c, buf, len);
        c[i] ^= 0xFF;
        fix_crcs(c, len);
        dcz_options o;
        dcz_options_init(&o);
        o.max_batch = 2;
        dcz_model *hm = NULL, *m = NULL;
        size_t need = 0;
        dcz_status sh = dcz_open_memory(c, len, &o, &hm);
        dcz_close(hm);
        dcz_status sp = dcz_plan(c, len, &o, &need);
        dcz_status ss = sp;
        /* the stream form reads its streams by its own reader: the same refusals */
        dcz_options so = o;
        so.stream_weights = 1;
        size_t sneed = 0;
        const dcz_status st = dcz_plan(c, len, &so, &sneed);
        if (sp == DCZ_OK && need <= (1u << 24)) {
            uint8_t *a = need <= (1u << 16) ? arena : malloc(need);
            ss = a ? dcz_open_static(c, len, a, need, &o, &m) : DCZ_ERR_NOMEM;
            if (a != arena) free(a);
        }
        corrupt_cases++;
        corrupt_refused += sh != DCZ_OK;
        if (sh != sp || sp != ss || st != sp) {
            if (corrupt_mismatch++ < 5)
                fprintf(stderr, "    %s byte %zu: open_memory %s, plan %s, open_static %s, plan (stream) %s\n", path,
                        i, dcz_status_str(sh), dcz_status_str(sp), dcz_status_str(ss), dcz_status_str(st));
        }
    }
    free(c);
    free(arena);
}

static void test_corruptions_same_errors(void)
{
    corrupt_cases = corrupt_refused = corrupt_mismatch = 0;
    each_corpus_model(corruptions_agree);
    CHECK(corrupt_mismatch == 0, "%zu of %zu corruptions get different statuses", corrupt_mismatch,
          corrupt_cases);
    CHECK(corrupt_refused > corrupt_cases / 4, "only %zu of %zu corruptions refused", corrupt_refused,
          corrupt_cases);
    printf("     %zu corruptions, %zu refused, the same way by all three loaders and the stream form%s\n",
           corrupt_cases, corrupt_refused, check_emulated() ? " (a third of them: under an emulator)" : "");
}

/* ---- planning without the heap ------------------------------------------------ */

static size_t plan_static_models;

/* dcz_plan_static gives dcz_plan's size without allocating, working
 * inside a buffer of that size at an odd address, with and without the
 * stream form; a buffer a byte short is DCZ_ERR_NOMEM; the model then
 * opens in the very buffer the planner worked in and runs. */
static void plan_static_same(const char *path, uint8_t *buf, size_t len)
{
    for (int stream = 0; stream < 2; stream++) {
        dcz_options o;
        dcz_options_init(&o);
        o.stream_weights = stream;
        size_t need = 0, got = 0, short_got = 0;
        if (dcz_plan(buf, len, &o, &need) != DCZ_OK) return;
        uint8_t *raw = malloc(need + 1), *work = raw + 1;
        REQUIRE(raw, "out of memory");
        count_start();
        const dcz_status s = dcz_plan_static(buf, len, work, need, &o, &got);
        const dcz_status ss = dcz_plan_static(buf, len, work, need - 1, &o, &short_got);
        CHECK(count_stop() == 0, "%s: dcz_plan_static allocated", path);
        CHECK(s == DCZ_OK && got == need, "%s (stream %d): plan_static %s, %zu bytes; dcz_plan %zu", path, stream,
              dcz_status_str(s), got, need);
        CHECK(ss == DCZ_ERR_NOMEM && (short_got == 0 || short_got == need), "%s (stream %d): a byte short: %s, %zu",
              path, stream, dcz_status_str(ss), short_got);
        dcz_model *m = NULL;
        CHECK(dcz_open_static(buf, len, work, need, &o, &m) == DCZ_OK, "%s: open in the planner's work", path);
        if (m) {
            float x[4096], y[1024];
            const size_t in = dcz_input_size(m), out = dcz_output_size(m);
            if (in <= 4096 && out <= 1024) {
                for (size_t i = 0; i < in; i++) x[i] = frand();
                CHECK(dcz_run(m, x, 1, y) == DCZ_OK, "%s: run", path);
            }
            dcz_close(m);
        }
        free(raw);
    }
    plan_static_models++;
}

static void test_plan_static(void)
{
    plan_static_models = 0;
    each_corpus_model(plan_static_same);
    CHECK(plan_static_models >= 12, "%zu corpus models planned without the heap", plan_static_models);
}

/* ---- the stream form ------------------------------------------------------- */

static size_t stream_models, stream_layers, stream_int_models;

/* A model opened with stream_weights (its fully connected codebook layers
 * read as stored at every run) gives the bits of the same model on the
 * references, at batch 1 and 3, allocating nothing; its arena holds no
 * decoded form, but each such layer's record (a few layers of a few
 * entries can take more than they did); the heap loader refuses the
 * option. */
static void stream_same(const char *path, uint8_t *buf, size_t len)
{
    dcz_options o, so;
    dcz_options_init(&o);
    o.force_reference = 1;
    o.max_batch = 3;
    so = o;
    so.stream_weights = 1;
    size_t need = 0, sneed = 0;
    if (dcz_plan(buf, len, &o, &need) != DCZ_OK) return;
    dcz_model *hm = NULL;
    CHECK(dcz_open_memory(buf, len, &so, &hm) == DCZ_ERR_ARG && !hm, "%s: a heap model took stream_weights", path);
    REQUIRE(dcz_plan(buf, len, &so, &sneed) == DCZ_OK, "%s: planned without the option, not with it", path);
    uint8_t *a = malloc(need), *sa = malloc(sneed);
    dcz_model *m = NULL, *sm = NULL;
    REQUIRE(a && sa, "out of memory");
    count_start();
    const dcz_status s1 = dcz_open_static(buf, len, a, need, &o, &m);
    const dcz_status s2 = dcz_open_static(buf, len, sa, sneed, &so, &sm);
    CHECK(count_stop() == 0, "%s: the static loads allocated", path);
    REQUIRE(s1 == DCZ_OK && s2 == DCZ_OK, "%s: open %s / with the option %s", path, dcz_status_str(s1),
            dcz_status_str(s2));
    uint32_t streamed = 0;
    for (uint32_t i = 0; i < sm->nlayers; i++) {
        const dcz_exec_layer *l = &sm->layers[i];
        const int want = l->op == DCZ_OP_DENSE && l->sparse && l->sp.codebook && !m->layers[i].sp.val &&
                         m->layers[i].sp.idx;
        CHECK(want == (l->wv != NULL), "%s: %s %s the stream form", path, l->name, l->wv ? "takes" : "lacks");
        CHECK(!l->wv || l->kernel == (l->q ? DCZ_K_QFC_STREAM_REF : DCZ_K_FC_STREAM_REF), "%s: %s runs %s", path,
              l->name, dcz_kernel_name((dcz_kernel)l->kernel));
        streamed += l->wv != NULL;
    }
    const size_t in = dcz_input_size(m), out = dcz_output_size(m);
    float *x = malloc(3 * in * sizeof *x), *y = malloc(3 * out * sizeof *y), *ys = malloc(3 * out * sizeof *ys);
    REQUIRE(x && y && ys, "out of memory");
    for (size_t i = 0; i < 3 * in; i++) x[i] = i % 5 ? frand() * 2 - 1 : 0.0f;
    for (size_t b = 1; b <= 3; b += 2) {
        count_start();
        const dcz_status r1 = dcz_run(m, x, b, y), r2 = dcz_run(sm, x, b, ys);
        CHECK(count_stop() == 0, "%s: the runs allocated", path);
        CHECK(r1 == DCZ_OK && r2 == DCZ_OK && memcmp(y, ys, b * out * sizeof *y) == 0,
              "%s batch %zu: the stream form gives other bits (%g / %g)", path, b, y[0], ys[0]);
    }
    if (streamed) {
        stream_models++;
        stream_layers += streamed;
        stream_int_models += dcz_model_scheme(m) != DCZ_SCHEME_NONE;
        CHECK(sneed <= need + streamed * (sizeof(dcz_tensor_view) + DCZ_ARENA_ALIGN),
              "%s: the arena %zu bytes with the stream form, %zu without", path, sneed, need);
    }
    dcz_close(m);
    dcz_close(sm);
    free(a); free(sa); free(x); free(y); free(ys);
}

/* The stream form of a large layer: wide_mlp's fc1 (300 x 600, about
 * 80,000 weights kept), in float and on integers: the arena loses at least
 * a byte a stored weight (the decoded form takes two and its rows), and
 * the bits are the references'. */
#ifndef DCZ_RUNTIME_ONLY
static dcz_doc *wide_mlp(void);
static dcz_doc *int8(dcz_doc *d);
static uint8_t *written(dcz_doc *d, size_t *len);
static void stream_large(dcz_doc *d, const char *name)
{
    REQUIRE(d, "%s: build", name);
    size_t len = 0;
    uint32_t kept = 0;
    for (size_t i = 0; i < d->layers[0].t[0].n; i++) kept += d->layers[0].t[0].mask[i] != 0;
    uint8_t *buf = written(d, &len);
    REQUIRE(buf, "%s: write", name);
    dcz_options o;
    dcz_options_init(&o);
    size_t need = 0, sneed = 0;
    o.stream_weights = 1;
    CHECK(dcz_plan(buf, len, &o, &sneed) == DCZ_OK, "%s: plan", name);
    o.stream_weights = 0;
    o.force_reference = 1;
    CHECK(dcz_plan(buf, len, &o, &need) == DCZ_OK, "%s: plan", name);
    CHECK(kept > 50000 && sneed + kept < need, "%s: %u weights kept, arena %zu bytes with the stream form, %zu "
          "without", name, kept, sneed, need);
    printf("     %s: %u weights kept; arena %zu bytes on the stream form, %zu decoded\n", name, kept, sneed, need);
    stream_same(name, buf, len);
    free(buf);
}
#endif

static void test_stream_weights(void)
{
    stream_models = stream_layers = stream_int_models = 0;
#ifndef DCZ_RUNTIME_ONLY
    stream_large(wide_mlp(), "wide mlp");
    stream_large(int8(wide_mlp()), "int8 wide mlp");
    CHECK(stream_models == 2 && stream_int_models == 1, "the wide mlps: %zu on the stream form", stream_models);
    stream_models = stream_layers = stream_int_models = 0;
#endif
    each_corpus_model(stream_same);
    CHECK(stream_models >= 6 && stream_int_models >= 2, "%zu corpus models with a layer on the stream form, "
          "%zu of them on integers", stream_models, stream_int_models);
    printf("     %zu corpus models (%zu on integers) with %zu layers on the stream form give the references' bits\n",
           stream_models, stream_int_models, stream_layers);
}

static void test_arguments(void)
{
    uint8_t tmp[1 << 16];
    FILE *f = fopen("tests/fuzz/corpus/dcz/conv_net_a.dcz", "rb");
    REQUIRE(f, "no conv_net_a.dcz");
    size_t len = fread(tmp, 1, sizeof tmp, f);
    fclose(f);
    uint8_t *buf = aligned_copy(tmp, len);
    REQUIRE(buf, "out of memory");
    dcz_options o;
    dcz_options_init(&o);
    CHECK(o.max_batch == 1, "default max_batch %zu", o.max_batch);
    size_t p1 = 0, p0 = 0, p5 = 0, big = 1;
    CHECK(dcz_plan(buf, len, &o, &p1) == DCZ_OK && dcz_plan(buf, len, NULL, &p0) == DCZ_OK &&
          p0 == p1, "NULL options plan %zu, defaults %zu", p0, p1);
    o.max_batch = 0;
    CHECK(dcz_plan(buf, len, &o, &p0) == DCZ_OK && p0 == p1, "max_batch 0 plans %zu, 1 %zu", p0, p1);
    o.max_batch = 5;
    CHECK(dcz_plan(buf, len, &o, &p5) == DCZ_OK && p5 > p1, "max_batch 5 plans %zu", p5);
    o.max_batch = SIZE_MAX;
    CHECK(dcz_plan(buf, len, &o, &big) == DCZ_ERR_NOMEM && big == 0, "max_batch SIZE_MAX");
    o.max_batch = 1;
    CHECK(dcz_plan(buf, len, &o, NULL) == DCZ_ERR_ARG, "NULL arena_bytes");
    CHECK(dcz_plan(buf, 10, &o, &big) == DCZ_ERR_FORMAT && big == 0, "truncated file planned");
    o.device = DCZ_DEVICE_GPU;
    CHECK(dcz_plan(buf, len, &o, &big) == DCZ_ERR_DEVICE, "gpu planned (arena models run on the CPU)");
    o.device = DCZ_DEVICE_AUTO;

    uint8_t *arena = malloc(p1);
    dcz_model *m = (dcz_model *)arena;
    REQUIRE(arena, "out of memory");
    CHECK(dcz_open_static(buf, len, NULL, p1, &o, &m) == DCZ_ERR_ARG && !m, "NULL arena");
    CHECK(dcz_open_static(buf, len, arena, p1, &o, NULL) == DCZ_ERR_ARG, "NULL out");
    CHECK(dcz_open_static(buf, len, arena, 0, &o, &m) == DCZ_ERR_NOMEM && !m, "empty arena");
    o.device = DCZ_DEVICE_GPU;
    CHECK(dcz_open_static(buf, len, arena, p1, &o, &m) == DCZ_ERR_DEVICE && !m, "gpu in an arena");
    o.device = DCZ_DEVICE_AUTO;
    CHECK(dcz_open_static(buf, len, arena, p1, &o, &m) == DCZ_OK && dcz_model_device(m) == DCZ_DEVICE_CPU,
          "auto in an arena: the CPU");
    /* options NULL: max_batch 1, which runs any batch one sample at a time */
    REQUIRE(dcz_open_static(buf, len, arena, p1, NULL, &m) == DCZ_OK, "NULL options");
    float x[4 * 180], y[4 * 2], yh[4 * 2];
    dcz_model *hm = NULL;
    REQUIRE(dcz_input_size(m) * 4 <= 4 * 180 && dcz_output_size(m) * 4 <= 4 * 2, "sizes");
    for (size_t i = 0; i < dcz_input_size(m) * 4; i++) x[i] = frand();
    CHECK(dcz_run(m, x, 0, y) == DCZ_OK && dcz_run(m, NULL, 1, y) == DCZ_ERR_ARG, "batch 0, NULL input");
    CHECK(dcz_run(m, x, 4, y) == DCZ_OK && dcz_open_memory(buf, len, NULL, &hm) == DCZ_OK &&
          dcz_run(hm, x, 4, yh) == DCZ_OK && memcmp(y, yh, sizeof y) == 0, "batch 4 by 1");
    dcz_close(hm);
    dcz_close(m);
    free(arena);
    free(buf);
}

/* A file buffer off a 4-byte boundary: nothing in place, dense tensors
 * copied into a larger arena (planned as such), the same results; a plan
 * made on an aligned copy is then too small, which is refused (on the
 * reference kernels: with extra forms the arena would take the model
 * without them). */
static void test_misaligned_file(void)
{
    uint8_t tmp[1 << 16];
    FILE *f = fopen("tests/fuzz/corpus/dcz/conv_net_a.dcz", "rb");
    REQUIRE(f, "no conv_net_a.dcz");
    size_t len = fread(tmp, 1, sizeof tmp, f);
    fclose(f);
    uint8_t *aligned = aligned_copy(tmp, len), *raw = aligned_alloc(64, (len + 127) / 64 * 64);
    REQUIRE(aligned && raw, "out of memory");
    uint8_t *odd = raw + 1;
    memcpy(odd, tmp, len);
    size_t p_al = 0, p_odd = 0;
    /* without the extra forms, which a short arena would drop to take the model */
    dcz_options o;
    dcz_options_init(&o);
    o.force_reference = 1;
    CHECK(dcz_plan(aligned, len, &o, &p_al) == DCZ_OK && dcz_plan(odd, len, &o, &p_odd) == DCZ_OK,
          "plans");
    if (host_le_f32()) CHECK(p_odd > p_al, "misaligned plan %zu, aligned %zu", p_odd, p_al);
    uint8_t *arena = malloc(p_odd);
    REQUIRE(arena, "out of memory");
    dcz_model *m = NULL, *hm = NULL;
    if (p_odd > p_al)
        CHECK(dcz_open_static(odd, len, arena, p_al, &o, &m) == DCZ_ERR_NOMEM && !m,
              "a misaligned file in the aligned file's arena");
    count_start();
    dcz_status s = dcz_open_static(odd, len, arena, p_odd, &o, &m);
    unsigned long n = count_stop();
    REQUIRE(s == DCZ_OK, "open misaligned: %s", dcz_status_str(s));
    CHECK(n == 0, "%lu allocations", n);
    where w = { arena, p_odd, odd, len, 0, 0 };
    check_places(m, &w);
    CHECK(w.bad == 0 && w.in_file == 0, "%d misplaced, %d in the misaligned file", w.bad, w.in_file);
    float x[3 * 180], y[3 * 2], yh[3 * 2];
    for (size_t i = 0; i < 3 * 180; i++) x[i] = frand();
    REQUIRE(dcz_input_size(m) == 180 && dcz_output_size(m) == 2, "shape");
    CHECK(dcz_run(m, x, 3, y) == DCZ_OK && dcz_open_memory(aligned, len, &o, &hm) == DCZ_OK &&
          dcz_run(hm, x, 3, yh) == DCZ_OK && memcmp(y, yh, sizeof y) == 0, "misaligned file runs differently");
    dcz_close(hm);
    free(arena);
    free(raw);
    free(aligned);
}

#ifndef DCZ_RUNTIME_ONLY
/* d written as a .dcz (d freed) into an aligned buffer of *len bytes;
 * NULL where d is NULL or writing fails */
static uint8_t *written(dcz_doc *d, size_t *len)
{
    uint8_t *out = NULL, *buf = NULL;
    *len = 0;
    if (d && dcz_doc_write(d, &out, len) == DCZ_OK) buf = aligned_copy(out, *len);
    free(out);
    if (d) dcz_doc_free(d);
    return buf;
}

/* deterministic weights for a layer with parameters (as the corpus has) */
static void fill(dcz_doc_layer *l, unsigned seed)
{
    dcz_doc_tensor *w = &l->t[0];
    for (uint32_t i = 0; i < w->k; i++) w->codebook[i] = (float)i * 0.125f - 0.5f;
    for (size_t i = 0; i < w->n; i++) {
        unsigned h = (unsigned)(i * 2654435761u + seed);
        if (w->mask && (h >> 28) > 6) continue;
        if (w->mask) w->mask[i] = 1;
        if (w->assign) { w->assign[i] = (uint8_t)(h % w->k); w->values[i] = w->codebook[w->assign[i]]; }
        else w->values[i] = (float)(h % 100) / 50.0f - 1.0f;
    }
    for (size_t i = 0; i < l->t[1].n; i++) l->t[1].values[i] = (float)(i % 5) * 0.1f - 0.2f;
}

/* (3, 7, 7) -> conv 3x3 pad 1 (codebook, Huffman; 7 wide: im2col) -> relu
 * -> maxpool 2 -> conv 3x3 pad 1 (sparse f32; im2col) -> avgpool 3 pad 1
 * -> gap -> flatten -> dense (f32) -> softmax */
static dcz_doc *im2col_net(void)
{
    dcz_doc *d;
    if (dcz_doc_alloc(10, &d) != DCZ_OK) return NULL;
    d->input_rank = 3;
    d->input_dims[0] = 3; d->input_dims[1] = 7; d->input_dims[2] = 7;
    dcz_doc_layer *l = d->layers;
    doc_conv_layer(&l[0], "conv1", 3, 8, 3, 1, 1, DCZ_ENC_CODEBOOK, 4, 4, DCZ_CODING_HUFFMAN);
    fill(&l[0], 1);
    doc_plain_layer(&l[1], DCZ_OP_RELU, "relu1");
    doc_pool_layer(&l[2], DCZ_OP_MAXPOOL, "pool1", 2, 2, 0, 0);
    doc_conv_layer(&l[3], "conv2", 8, 6, 3, 1, 1, DCZ_ENC_SPARSE_F32, 3, 0, DCZ_CODING_RAW);
    fill(&l[3], 2);
    doc_pool_layer(&l[4], DCZ_OP_AVGPOOL, "pool2", 3, 1, 1, 0);
    doc_plain_layer(&l[5], DCZ_OP_GLOBAL_AVGPOOL, "gap");
    doc_plain_layer(&l[6], DCZ_OP_FLATTEN, "flat");
    doc_dense_layer(&l[7], "fc", 6, 10, DCZ_ENC_F32, 0, 0, 0);
    fill(&l[7], 3);
    doc_plain_layer(&l[8], DCZ_OP_RELU, "relu2");
    doc_plain_layer(&l[9], DCZ_OP_SOFTMAX, "prob");
    return d;
}

/* keeps one in three of l's stored weights */
static void thin(dcz_doc_layer *l)
{
    dcz_doc_tensor *w = &l->t[0];
    for (size_t i = 0; i < w->n; i++)
        if (w->mask && w->mask[i] && i % 3) {
            w->mask[i] = 0;
            w->values[i] = 0.0f;
        }
}

/* (3, 24, 24) -> conv 3x3 pad 1 (codebook, Huffman, about 15% kept) ->
 * relu -> conv 3x3 stride 2 pad 1 (sparse f32, about 15%) -> depthwise
 * conv 3x3 pad 1 (dense f32) -> relu -> gap -> flatten -> dense (f32) ->
 * softmax: the three convolutions in the shift form where this CPU runs it
 * (calibrated int8: in the integer shift form where it has VNNI) */
static dcz_doc *shift_net_of(uint32_t side)
{
    dcz_doc *d;
    if (dcz_doc_alloc(10, &d) != DCZ_OK) return NULL;
    d->input_rank = 3;
    d->input_dims[0] = 3; d->input_dims[1] = side; d->input_dims[2] = side;
    dcz_doc_layer *l = d->layers;
    doc_conv_layer(&l[0], "conv1", 3, 8, 3, 1, 1, DCZ_ENC_CODEBOOK, 4, 4, DCZ_CODING_HUFFMAN);
    fill(&l[0], 7);
    thin(&l[0]);
    doc_plain_layer(&l[1], DCZ_OP_RELU, "relu1");
    doc_conv_layer(&l[2], "conv2", 8, 8, 3, 2, 1, DCZ_ENC_SPARSE_F32, 3, 0, DCZ_CODING_RAW);
    fill(&l[2], 8);
    thin(&l[2]);
    doc_conv_layer(&l[3], "dw", 8, 8, 3, 1, 1, DCZ_ENC_F32, 0, 0, 0);
    doc_conv_groups(&l[3], 8);
    fill(&l[3], 9);
    doc_plain_layer(&l[4], DCZ_OP_RELU, "relu2");
    doc_plain_layer(&l[5], DCZ_OP_GLOBAL_AVGPOOL, "gap");
    doc_plain_layer(&l[6], DCZ_OP_FLATTEN, "flat");
    doc_dense_layer(&l[7], "fc", 8, 5, DCZ_ENC_F32, 0, 0, 0);
    fill(&l[7], 10);
    doc_plain_layer(&l[8], DCZ_OP_RELU, "relu3");
    doc_plain_layer(&l[9], DCZ_OP_SOFTMAX, "prob");
    return d;
}

static dcz_doc *shift_net(void) { return shift_net_of(24); }

/* (in_c, side, side) -> conv 3x3 pad 1 to mid (dense f32) -> relu -> conv
 * 3x3 to out (dense f32, padding pad2) -> relu -> gap -> flatten -> dense
 * 5 (f32) -> softmax, weights from seeds seed .. seed + 2 */
static dcz_doc *conv_chain_net(uint32_t in_c, uint32_t side, uint32_t mid, uint32_t out, uint32_t pad2,
                               unsigned seed)
{
    dcz_doc *d;
    if (dcz_doc_alloc(8, &d) != DCZ_OK) return NULL;
    d->input_rank = 3;
    d->input_dims[0] = in_c; d->input_dims[1] = side; d->input_dims[2] = side;
    dcz_doc_layer *l = d->layers;
    doc_conv_layer(&l[0], "conv1", in_c, mid, 3, 1, 1, DCZ_ENC_F32, 0, 0, 0);
    fill(&l[0], seed);
    doc_plain_layer(&l[1], DCZ_OP_RELU, "relu1");
    doc_conv_layer(&l[2], "conv2", mid, out, 3, 1, pad2, DCZ_ENC_F32, 0, 0, 0);
    fill(&l[2], seed + 1);
    doc_plain_layer(&l[3], DCZ_OP_RELU, "relu2");
    doc_plain_layer(&l[4], DCZ_OP_GLOBAL_AVGPOOL, "gap");
    doc_plain_layer(&l[5], DCZ_OP_FLATTEN, "flat");
    doc_dense_layer(&l[6], "fc", out, 5, DCZ_ENC_F32, 0, 0, 0);
    fill(&l[6], seed + 2);
    doc_plain_layer(&l[7], DCZ_OP_SOFTMAX, "prob");
    return d;
}

/* (32, 10, 10), 32 then 48 channels, conv2 unpadded: both convolutions by
 * Winograd's F(2x2, 3x3) where this CPU runs it (dcz_conv2d_pick_wino; even
 * planes, which the rules give it on every CPU: dcz_conv2d_wino_rule; its
 * partial tiles are test_kernels'), each taking the ReLU after it */
static dcz_doc *wino_net(void) { return conv_chain_net(32, 10, 32, 48, 0, 15); }

/* (3, 24, 24) -> conv1 (codebook) -> relu1 -> conv2 (codebook) -> add
 * (conv2, relu1) -> relu -> conv3 (sparse f32) -> add (relu, conv3) -> gap
 * -> flat -> fc -> softmax: two residual blocks, the convolution's output
 * first and second of its ADD, the second ADD in place over its other
 * input */
/* c channels over side x side: conv (3 -> c), relu, conv (c -> c, a third
 * kept), add (over the first relu's output), relu, conv (c -> c), add,
 * mean, fc -> 5, softmax */
static dcz_doc *residual_net_of(uint32_t c, uint32_t side)
{
    dcz_doc *d;
    if (dcz_doc_alloc(11, &d) != DCZ_OK) return NULL;
    d->input_rank = 3;
    d->input_dims[0] = 3; d->input_dims[1] = side; d->input_dims[2] = side;
    dcz_doc_layer *l = d->layers;
    doc_conv_layer(&l[0], "conv1", 3, c, 3, 1, 1, DCZ_ENC_CODEBOOK, 4, 4, DCZ_CODING_HUFFMAN);
    fill(&l[0], 11);
    doc_plain_layer(&l[1], DCZ_OP_RELU, "relu1");
    doc_conv_layer(&l[2], "conv2", c, c, 3, 1, 1, DCZ_ENC_CODEBOOK, 4, 4, DCZ_CODING_HUFFMAN);
    fill(&l[2], 12);
    thin(&l[2]);
    doc_plain_layer(&l[3], DCZ_OP_ADD, "add1");
    l[3].nin = 2; l[3].in[0] = 3; l[3].in[1] = 2;
    doc_plain_layer(&l[4], DCZ_OP_RELU, "relu2");
    doc_conv_layer(&l[5], "conv3", c, c, 3, 1, 1, DCZ_ENC_SPARSE_F32, 3, 0, DCZ_CODING_RAW);
    fill(&l[5], 13);
    thin(&l[5]);
    doc_plain_layer(&l[6], DCZ_OP_ADD, "add2");
    l[6].nin = 2; l[6].in[0] = 5; l[6].in[1] = 6;
    doc_plain_layer(&l[7], DCZ_OP_GLOBAL_AVGPOOL, "gap");
    doc_plain_layer(&l[8], DCZ_OP_FLATTEN, "flat");
    doc_dense_layer(&l[9], "fc", c, 5, DCZ_ENC_F32, 0, 0, 0);
    fill(&l[9], 14);
    doc_plain_layer(&l[10], DCZ_OP_SOFTMAX, "prob");
    return d;
}

static dcz_doc *residual_net(void) { return residual_net_of(8, 24); }
/* large enough for its convolutions to split over threads
 * (DCZ_SPLIT_MACS) */
static dcz_doc *wide_residual_net(void) { return residual_net_of(32, 64); }

static void no_tap(void *ctx, uint32_t layer, const float *y, size_t batch, uint32_t width)
{
    (void)ctx; (void)layer; (void)y; (void)batch; (void)width;
}

/* 20 -> dense (f32) -> relu -> dense (codebook, gaps) -> softmax */
static dcz_doc *mlp(void)
{
    dcz_doc *d;
    if (dcz_doc_alloc(4, &d) != DCZ_OK) return NULL;
    d->input_rank = 1;
    d->input_dims[0] = 20;
    doc_dense_layer(&d->layers[0], "fc1", 20, 16, DCZ_ENC_F32, 0, 0, 0);
    fill(&d->layers[0], 4);
    doc_plain_layer(&d->layers[1], DCZ_OP_RELU, "relu");
    doc_dense_layer(&d->layers[2], "fc2", 16, 10, DCZ_ENC_CODEBOOK, 3, 3, DCZ_CODING_HUFFMAN);
    fill(&d->layers[2], 5);
    doc_plain_layer(&d->layers[3], DCZ_OP_SOFTMAX, "prob");
    return d;
}

/* An int8 table with per-channel weight scales from each row's largest |w|. */
static dcz_doc *int8(dcz_doc *d)
{
    if (!d) return NULL;
    dcz_doc_calib *t = calloc(1, sizeof *t);
    t->scheme = DCZ_SCHEME_INT8;
    t->e = calloc(d->nlayers, sizeof *t->e);
    for (uint32_t i = 0; i < d->nlayers; i++) {
        if (d->layers[i].op != DCZ_OP_DENSE && d->layers[i].op != DCZ_OP_CONV2D) continue;
        const dcz_doc_tensor *w = &d->layers[i].t[0];
        dcz_doc_calib_entry *e = &t->e[t->count++];
        e->layer = i;
        e->in_scale = 0.02f;
        e->nw = w->dims[0];
        e->w_scale = malloc(e->nw * sizeof *e->w_scale);
        for (uint32_t r = 0; r < e->nw; r++) {
            double m = 1e-3;
            for (size_t k = r * (w->n / e->nw); k < (r + 1) * (w->n / e->nw); k++)
                if (fabs(w->values[k]) > m) m = fabs(w->values[k]);
            e->w_scale[r] = (float)(m / 127);
        }
    }
    if (dcz_cal_install(d, t) != DCZ_OK) { dcz_doc_free(d); return NULL; }
    return d;
}

static void built(const char *name, dcz_doc *d, dcz_scheme want)
{
    REQUIRE(d, "%s: build", name);
    size_t len = 0;
    uint8_t *buf = written(d, &len);
    REQUIRE(buf, "%s: write", name);
    dcz_model *m = NULL;
    if (dcz_open_memory(buf, len, NULL, &m) == DCZ_OK) {
        CHECK(dcz_model_scheme(m) == want, "%s: scheme %d", name, (int)dcz_model_scheme(m));
        uint32_t im2col = 0;
        for (uint32_t i = 0; i < m->nlayers; i++) im2col += dcz_kernel_patches((dcz_kernel)m->layers[i].kernel);
        uint32_t shifted = 0, wino = 0;
        for (uint32_t i = 0; i < m->nlayers; i++) shifted += dcz_kernel_shifts((dcz_kernel)m->layers[i].kernel);
        for (uint32_t i = 0; i < m->nlayers; i++) wino += m->layers[i].kernel == DCZ_K_CONV_WINO && m->layers[i].wu;
        /* its two convolutions by im2col, or the shift form where this CPU
         * runs it faster (integer convolutions take no im2col patches but
         * the integer product's) */
        if (strstr(name, "im2col") && want == DCZ_SCHEME_NONE)
            CHECK(im2col + shifted == 2 && m->scratch_floats > 0, "%s: im2col layers %u, shifted %u", name,
                  im2col, shifted);
        if (strstr(name, "shift"))
            CHECK(shifted == ((want == DCZ_SCHEME_NONE ? dcz_conv2d_shift_variant() : dcz_qshift_variant()) ? 3u : 0u),
                  "%s: shifted layers %u", name, shifted);
        if (strstr(name, "wino")) {
            const int runs = dcz_wino_vector() && dcz_gemm_f32_variant();
            CHECK(wino == (runs ? 2u : 0u) && shifted + wino + im2col >= 2, "%s: Winograd layers %u", name, wino);
        }
        /* an in-place op (the activations) whose input no later layer reads
         * runs over that input's place; every net here has one */
        uint32_t over = 0;
        for (uint32_t i = 0; i < m->nlayers; i++) {
            const uint32_t u = m->layers[i].tin[0];
            if (!dcz_op_get(m->layers[i].op)->in_place || u == 0 || m->tensors[u].last != i) continue;
            CHECK(m->tensors[i + 1].off == m->tensors[u].off, "%s: %s not over its input's place", name,
                  m->layers[i].name);
            over++;
        }
        CHECK(over > 0, "%s: no layer in place", name);
        /* a float convolution takes the ReLU after it (the shift form in its
         * stores, the others by a pass over their output) */
        uint32_t fused = 0;
        for (uint32_t i = 1; i < m->nlayers; i++)
            fused += m->layers[i].fused && m->layers[i - 1].op == DCZ_OP_CONV2D;
        if (strstr(name, "shift") && want == DCZ_SCHEME_NONE)
            CHECK(fused == (dcz_conv2d_shift_variant() ? 2u : 0u) || !dcz_conv2d_shift_variant(),
                  "%s: fused activations %u", name, fused);
        if (strstr(name, "wino")) CHECK(fused == 2, "%s: fused activations %u", name, fused);
    }
    dcz_close(m);
    dcz_options o;
    dcz_options_init(&o);
    check_model(name, buf, len, o);
    if (want != DCZ_SCHEME_NONE) {
        o.precision = DCZ_PRECISION_FP32;
        check_model(name, buf, len, o);
    }
    free(buf);
}

static void test_built_im2col(void) { built("im2col net", im2col_net(), DCZ_SCHEME_NONE); }
static void test_built_shift(void) { built("shift net", shift_net(), DCZ_SCHEME_NONE); }
static void test_built_int8_shift(void) { built("int8 shift net", int8(shift_net()), DCZ_SCHEME_INT8); }
static void test_built_int8_im2col(void) { built("int8 im2col net", int8(im2col_net()), DCZ_SCHEME_INT8); }
static void test_built_int8_mlp(void) { built("int8 mlp", int8(mlp()), DCZ_SCHEME_INT8); }
static void test_built_wino(void) { built("wino net", wino_net(), DCZ_SCHEME_NONE); }

/* A heap model whose blocks pass 2 MB takes them in huge pages
 * (dcz_walked_alloc: 2 MB aligned on Linux) and gives the static model's
 * bits: the shift net over 320 x 320, 3.3 MB of activations a sample. */
static void test_walked_blocks(void)
{
    for (size_t bytes = 0; bytes < ((size_t)5 << 20); bytes += ((size_t)3 << 19) + 1) {
        uint8_t *p = dcz_walked_alloc(bytes);
        REQUIRE(p, "walked alloc of %zu bytes", bytes);
#ifdef __linux__
        CHECK(bytes < ((size_t)2 << 20) || (uintptr_t)p % ((size_t)2 << 20) == 0, "%zu bytes at %p", bytes, (void *)p);
#endif
        if (bytes) p[0] = p[bytes - 1] = 1;
        free(p);
    }
    dcz_doc *d = shift_net_of(320);
    REQUIRE(d, "large shift net: build");
    size_t len = 0;
    uint8_t *buf = written(d, &len);
    REQUIRE(buf, "large shift net: write");
    dcz_options o;
    dcz_options_init(&o);
    o.device = DCZ_DEVICE_CPU;
    dcz_model *hm = NULL, *sm = NULL;
    size_t need = 0;
    REQUIRE(dcz_open_memory(buf, len, &o, &hm) == DCZ_OK, "large shift net: heap load");
    REQUIRE(dcz_plan(buf, len, &o, &need) == DCZ_OK, "large shift net: plan");
    uint8_t *arena = malloc(need);
    const size_t in = dcz_input_size(hm), out = dcz_output_size(hm);
    float *x = malloc(in * sizeof *x), *yh = calloc(out, sizeof *yh), *ys = calloc(out, sizeof *ys);
    REQUIRE(arena && x && yh && ys, "out of memory");
    for (size_t i = 0; i < in; i++) x[i] = frand();
    REQUIRE(dcz_open_static(buf, len, arena, need, &o, &sm) == DCZ_OK, "large shift net: static load");
    CHECK(dcz_run(hm, x, 1, yh) == DCZ_OK && dcz_run(sm, x, 1, ys) == DCZ_OK, "large shift net: runs");
    CHECK(memcmp(yh, ys, out * sizeof *yh) == 0, "large shift net: heap and static outputs differ");
    const float *walked = hm->cact ? hm->cact : hm->act;
    CHECK(walked && (hm->cact ? hm->chunk_width : hm->act_width) * sizeof(float) >= ((size_t)2 << 20),
          "large shift net: activations of %zu floats", (size_t)(hm->cact ? hm->chunk_width : hm->act_width));
#ifdef __linux__
    CHECK((uintptr_t)walked % ((size_t)2 << 20) == 0, "large shift net: activations at %p", (const void *)walked);
#endif
    dcz_close(sm);
    dcz_close(hm);
    free(x);
    free(yh);
    free(ys);
    free(arena);
    free(buf);
}

/* A float ADD after a convolution on the shift form is computed in the
 * convolution's stores where this CPU's kernel adds it there (load.c):
 * the bits of the run with taps, which runs every layer apart, at batch 1
 * and in chunks. */
static void test_residual_fused(void)
{
    dcz_doc *d = residual_net();
    REQUIRE(d, "build");
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    dcz_doc_free(d);
    dcz_model *m;
    REQUIRE(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "open");
    const uint32_t adds[2] = { 3, 6 };
    for (int k = 0; k < 2; k++) {
        const dcz_exec_layer *c = &m->layers[adds[k] - 1];
        const int fuses = dcz_kernel_shifts((dcz_kernel)c->kernel) && dcz_conv2d_shift_res_fuses(&c->geom, &c->shift);
        CHECK((m->layers[adds[k]].fused == DCZ_FUSED_ADD) == fuses && (c->res != 0) == fuses,
              "%s: fused %d where the stores %s add it", m->layers[adds[k]].name, m->layers[adds[k]].fused,
              fuses ? "do" : "do not");
    }
    const size_t in = dcz_input_size(m), out = dcz_output_size(m);
    float *x = malloc(BATCH * in * sizeof *x), *y = malloc(BATCH * out * sizeof *y);
    float *yt = malloc(BATCH * out * sizeof *yt);
    REQUIRE(x && y && yt, "out of memory");
    for (size_t i = 0; i < BATCH * in; i++) x[i] = frand() - 0.5f;
    const size_t batches[2] = { 1, BATCH };
    for (int bi = 0; bi < 2; bi++) {
        CHECK(dcz_run(m, x, batches[bi], y) == DCZ_OK && dcz_run_tapped(m, x, batches[bi], yt, no_tap, NULL) == DCZ_OK,
              "run batch %zu", batches[bi]);
        CHECK(memcmp(y, yt, batches[bi] * out * sizeof *y) == 0, "batch %zu: the fused run differs from the taps'",
              batches[bi]);
    }
    dcz_close(m);
    free(x); free(y); free(yt);
    built("residual net", residual_net(), DCZ_SCHEME_NONE);
    free(buf);
}


/* 600 -> dense (codebook, 300 x 600, about 44% kept: more entries than
 * DCZ_PARALLEL_MIN_ENTRIES) -> relu -> dense (sparse f32) -> softmax */
static dcz_doc *wide_mlp(void)
{
    dcz_doc *d;
    if (dcz_doc_alloc(5, &d) != DCZ_OK) return NULL;
    d->input_rank = 1;
    d->input_dims[0] = 600;
    doc_dense_layer(&d->layers[0], "fc1", 600, 300, DCZ_ENC_CODEBOOK, 4, 4, DCZ_CODING_HUFFMAN);
    fill(&d->layers[0], 6);
    doc_plain_layer(&d->layers[1], DCZ_OP_RELU, "relu");
    doc_dense_layer(&d->layers[2], "fc2", 300, 10, DCZ_ENC_SPARSE_F32, 0, 4, DCZ_CODING_RAW);
    fill(&d->layers[2], 7);
    doc_plain_layer(&d->layers[3], DCZ_OP_RELU, "relu2");
    doc_plain_layer(&d->layers[4], DCZ_OP_SOFTMAX, "prob");
    return d;
}

/* A heap model split over 1, 2, 3 and 16 threads (workers started only
 * when a layer is large enough) computes the same bits as one thread and
 * as the static model (built: one thread, no allocation). */
static void test_threads_same_bits(void)
{
    size_t len = 0;
    uint8_t *buf = written(wide_mlp(), &len);
    REQUIRE(buf, "build and write");
    enum { B = 9 };
    float *x = malloc(B * 600 * sizeof(float)), y1[2][B * 10], y[B * 10];
    for (size_t i = 0; i < B * 600; i++) x[i] = i % 3 ? frand() : 0.0f;
    static const int threads[] = { 1, 2, 3, 16 };
    for (size_t ti = 0; ti < sizeof threads / sizeof *threads; ti++) {
        dcz_options o;
        dcz_options_init(&o);
        o.threads = threads[ti];
        dcz_model *m = NULL;
        REQUIRE(dcz_open_memory(buf, len, &o, &m) == DCZ_OK, "open on %d threads", threads[ti]);
        CHECK(m->threads == (uint32_t)threads[ti] && (m->pool != NULL) == (threads[ti] > 1),
              "%d threads: model has %u, pool %p", threads[ti], m->threads, (void *)m->pool);
        CHECK(m->layers[0].sp.entries >= DCZ_PARALLEL_MIN_ENTRIES &&
              m->layers[0].sp.cblocks == (uint32_t)threads[ti], "fc1 split in %u blocks",
              m->layers[0].sp.cblocks);
        for (size_t batch = 1; batch <= B; batch += B - 1) {
            float *one = y1[batch > 1];
            REQUIRE(dcz_run(m, x, batch, ti ? y : one) == DCZ_OK, "run");
            if (ti) CHECK(memcmp(y, one, batch * 10 * sizeof(float)) == 0,
                          "%d threads, batch %zu: other bits than one thread", threads[ti], batch);
        }
        dcz_close(m);
    }
    free(x);
    free(buf);
    built("wide mlp", wide_mlp(), DCZ_SCHEME_NONE);
}

/* Large convolutions on the shift form split their output channel blocks
 * over a heap model's threads: a residual net of 32 channels over 64 x 64
 * (whose fused ADDs write over their other input, the convolution's own
 * input place) gives one thread's bits on 2, 3 and 16, at batch 1 and 5;
 * a pool is started where a layer splits, and not for the small shift
 * net, whose layers stay on the caller's thread. */
/* (3, 64, 64), 32 channels twice, calibrated int8: an integer region whose
 * convolutions run a batch by chunks of samples */
static dcz_doc *int8_wide_chain_net(void) { return int8(conv_chain_net(3, 64, 32, 32, 1, 21)); }

static void test_threads_conv_same_bits(void)
{
    dcz_doc *(*const nets[])(void) = { shift_net, wide_residual_net, int8_wide_chain_net };
    for (size_t ni = 0; ni < 3; ni++) {
        size_t len = 0;
        uint8_t *buf = written(nets[ni](), &len);
        REQUIRE(buf, "net %zu: build and write", ni);
        dcz_model *m = NULL;
        REQUIRE(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "open");
        const size_t in = dcz_input_size(m), outs = dcz_output_size(m);
        uint32_t shifted = 0;
        for (uint32_t i = 0; i < m->nlayers; i++)
            shifted += m->layers[i].kernel == DCZ_K_CONV_SHIFT &&
                       dcz_conv2d_shift_splits(&m->layers[i].geom, &m->layers[i].shift);
        CHECK(ni == 0 ? shifted == 0 : ni == 2 || shifted >= 2 || !dcz_conv2d_shift_variant(),
              "net %zu: %u layers split", ni, shifted);
        CHECK(ni < 2 || dcz_model_scheme(m) == DCZ_SCHEME_INT8, "net %zu: int8", ni);
        enum { B = 5 };
        /* the segments whose chunks of a batch of B run at once over the threads */
        uint32_t chunked = 0;
        for (uint32_t i = 0; i < m->nlayers; i++)
            chunked += m->tensors[i + 1].chunk && m->tensors[i + 1].chunk < B;
        CHECK(ni == 0 || chunked > 0, "net %zu: no layer runs by chunks of fewer than %d samples", ni, B);
        dcz_close(m);
        float *x = malloc(B * in * sizeof *x), *y1 = malloc(B * outs * sizeof *y1), *y = malloc(B * outs * sizeof *y);
        REQUIRE(x && y1 && y, "out of memory");
        for (size_t i = 0; i < B * in; i++) x[i] = i % 4 ? frand() - 0.5f : 0.0f;
        static const int threads[] = { 1, 2, 3, 16 };
        /* the int8 net also capped to AVX2, and on the references forced,
         * whose integer convolutions sum into the accumulators (each
         * thread's own for its chunks) where the shift forms requantize in
         * their registers */
        const dcz_isa_cap caps[3] = { DCZ_CAP_NATIVE, DCZ_CAP_AVX2, DCZ_CAP_NATIVE };
        for (int ci = 0; ci < (ni == 2 ? 3 : 1); ci++) {
            if (ci == 1 && dcz_isa_probe(caps[ci], NULL, 0) != DCZ_OK) continue;
            for (size_t batch = 1; batch <= B; batch += B - 1)
                for (size_t ti = 0; ti < sizeof threads / sizeof *threads; ti++) {
                    dcz_options o;
                    dcz_options_init(&o);
                    o.threads = threads[ti];
                    o.isa = caps[ci];
                    o.force_reference = ci == 2;
                    REQUIRE(dcz_open_memory(buf, len, &o, &m) == DCZ_OK, "open on %d threads", threads[ti]);
                    /* (every convolution of these nets runs by chunks of samples) */
                    CHECK((m->pool != NULL) == (threads[ti] > 1), "net %zu, %d threads: pool %p", ni, threads[ti],
                          (void *)m->pool);
                    REQUIRE(dcz_run(m, x, batch, ti ? y : y1) == DCZ_OK, "run");
                    if (ti) CHECK(memcmp(y, y1, batch * outs * sizeof *y) == 0,
                                  "net %zu (cap %d), %d threads, batch %zu: other bits than one thread", ni,
                                  (int)caps[ci], threads[ti], batch);
                    dcz_close(m);
                }
        }
        printf("     net %zu: %u layers split over the threads, %u by chunks of samples over them\n", ni, shifted,
               chunked);
        free(x); free(y1); free(y); free(buf);
    }
}
#endif

int main(int argc, char **argv)
{
    if (argc > 1) corpus_dir = argv[1];
    RUN(test_counter_is_live);
    RUN(test_corpus);
    RUN(test_corpus_calibrated_as_fp32);
    RUN(test_open_file);
    RUN(test_arguments);
    RUN(test_misaligned_file);
    RUN(test_corruptions_same_errors);
    RUN(test_plan_static);
    RUN(test_stream_weights);
#ifndef DCZ_RUNTIME_ONLY
    RUN(test_built_im2col);
    RUN(test_built_int8_im2col);
    RUN(test_built_shift);
    RUN(test_residual_fused);
    RUN(test_built_int8_shift);
    RUN(test_built_int8_mlp);
    RUN(test_built_wino);
    RUN(test_walked_blocks);
    RUN(test_threads_same_bits);
    RUN(test_threads_conv_same_bits);
#else
    printf("SKIP models built by the toolchain's writer: this is the runtime-only build\n");
#endif
    return check_summary();
}
