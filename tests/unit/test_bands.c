/* test_bands.c: a pointwise convolution and the depthwise one after it,
 * run together by bands of output rows (runtime/cpu/f32/kernels_bands.c),
 * give the bits of the two layers run apart on the references.
 *
 * The kernel: on a grid of geometries (planes of 64, 56, 40, 36 and 18
 * columns, so alignments 1, 2, 4 and 8 of the rows the product computes
 * at a time; rows of one vector (16 columns at stride 1) and of several;
 * 3 x 3 and 5 x 5 windows at strides 1 and 2; the activations a pair
 * takes; batch 1 and 2; the bands on one thread and split over 2, 3 and
 * 16 threads, whose first bands start the ring anew, 16 being more than
 * some layers have bands), random weights, biases and inputs (none of
 * them zero), every output equal to dcz_conv2d_dense_im2col_act's
 * reference then dcz_conv2d_shift_act's, bit for bit. The model: an
 * inverted residual block whose wide tensor outgrows the second-level
 * cache, loaded from a file, pairs its expansion and depthwise layers (the
 * plan and dcz_describe say so), at strides 2 and 1 (whose block adds its
 * input after the pair: at stride 2 the expansion's input is free once
 * read, and the pair writes as it reads it), and its runs give the bits of
 * the runs with taps, which run every layer apart, at batch 1 and 3, on 2
 * threads (the pair split over them), loaded by a measured plan, and built
 * inside an arena (dcz_plan, dcz_open_static: the arena the loader sized
 * holds the pair's ring and its places); a block whose wide tensor another
 * layer reads too does not pair. Where this CPU lacks AVX-512 nothing
 * pairs, and the tests say SKIP with that reason.
 */
#include <math.h>
#include <string.h>

#include "dcz.h"
#include "model/doc.h"
#include "runtime/cpu/f32/bands.h"
#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/f32/shift.h"
#include "runtime/model.h"
#include "runtime/tool.h"
#include "tests/check.h"
#include "tests/unit/doc_build.h"
#include "tests/unit/test_util.h"
#include "tests/unit/sparse_mat.h"

/* away from 0: a zero weight would leave the shift form (a whole window
 * the bands' kernel takes is every cell stored) */
static float away(void)
{
    const float v = frand();
    return v >= 0 ? v + 0.05f : v - 0.05f;
}

typedef struct pair_case {
    uint32_t in_c, c, h, w, k, s;
} pair_case;

/* the pair's two geometries: pw 1 x 1 in_c -> c, d depthwise k x k at
 * stride s, padded (k - 1) / 2 */
static void pair_geoms(const pair_case *pc, dcz_conv_geom *pw, dcz_conv_geom *d)
{
    memset(pw, 0, sizeof *pw);
    memset(d, 0, sizeof *d);
    pw->in_c = pc->in_c; pw->out_c = pc->c; pw->in_h = pw->out_h = pc->h; pw->in_w = pw->out_w = pc->w;
    pw->kh = pw->kw = 1; pw->sh = pw->sw = 1; pw->group = 1;
    d->in_c = d->out_c = d->group = pc->c; d->in_h = pc->h; d->in_w = pc->w; d->kh = d->kw = pc->k;
    d->sh = d->sw = pc->s; d->ph = d->pw = (pc->k - 1) / 2;
    d->out_h = (pc->h + 2 * d->ph - pc->k) / pc->s + 1;
    d->out_w = (pc->w + 2 * d->pw - pc->k) / pc->s + 1;
}

static int bands_kernel_case(const pair_case *pc, const dcz_act *pact, const dcz_act *dact, size_t batch,
                             dcz_pool *const *pools, int npools)
{
    dcz_conv_geom pw, d;
    pair_geoms(pc, &pw, &d);
    const size_t nx = batch * pc->in_c * pc->h * pc->w, nmid = batch * (size_t)pc->c * pc->h * pc->w;
    const size_t ny = batch * (size_t)pc->c * d.out_h * d.out_w, nwd = (size_t)pc->c * pc->k * pc->k;
    float *w = malloc((size_t)pc->in_c * pc->c * sizeof *w), *pb = malloc(pc->c * sizeof *pb);
    float *wd = malloc(nwd * sizeof *wd), *db = malloc(pc->c * sizeof *db);
    float *x = malloc(nx * sizeof *x), *mid = malloc(nmid * sizeof *mid);
    float *want = malloc(ny * sizeof *want), *got = malloc(ny * sizeof *got);
    const uint64_t scratch_floats = dcz_conv2d_im2col_floats(&pw) + dcz_shift_scratch_floats(&d) +
                                    dcz_conv2d_bands_floats(&d);
    float *scratch = malloc((scratch_floats * 16 + 64) * sizeof *scratch);
    void *form = malloc(dcz_shift_bytes(&d, nwd, 1) + 64);
    int ran = 0;
    if (!w || !pb || !wd || !db || !x || !mid || !want || !got || !scratch || !form) {
        CHECK(0, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < (size_t)pc->in_c * pc->c; i++) w[i] = away() * 0.5f;
    for (size_t i = 0; i < nwd; i++) wd[i] = away();
    for (uint32_t i = 0; i < pc->c; i++) { pb[i] = away() * 0.2f; db[i] = away() * 0.2f; }
    for (size_t i = 0; i < nx; i++) x[i] = away();
    dcz_shift f;
    dcz_shift_build(&d, NULL, wd, 1, form, &f);
    dcz_bands p;
    if (!dcz_conv2d_bands_takes(&pw, NULL, &d, &f)) goto done;
    dcz_conv2d_bands_of(&d, &p);
    CHECK(dcz_conv2d_bands_floats(&d) > 0 && p.rows % dcz_shift_dw_band_step(&d) == 0 && p.align >= 1,
          "%ux%u: the plan of a pair it takes", pc->h, pc->w);
    dcz_conv2d_dense_im2col_act(&pw, w, pb, x, batch, 1, pact, scratch, mid);
    CHECK(dcz_conv2d_shift_act_isa(DCZ_ISA_REF, &d, &f, db, mid, batch, dact, NULL, scratch, want), "reference");
    for (int t = 0; t < npools; t++) {
        for (size_t i = 0; i < ny; i++) got[i] = NAN;
        dcz_conv2d_bands_pool(pools[t], &pw, w, NULL, pb, pact, &d, &f, db, dact, x, batch, scratch, scratch_floats,
                              got);
        CHECK(memcmp(got, want, ny * sizeof *got) == 0,
              "%u -> %u channels over %ux%u, %ux%u stride %u, acts %u %u, batch %zu, %u threads: bands %u rows, "
              "ring %u, align %u differ from the layers apart", pc->in_c, pc->c, pc->h, pc->w, pc->k, pc->k, pc->s,
              pact->op, dact->op, batch, pools[t] ? dcz_pool_threads(pools[t]) : 1, p.rows, p.ring, p.align);
    }
    ran = 1;
done:
    free(w); free(pb); free(wd); free(db); free(x); free(mid); free(want); free(got); free(scratch); free(form);
    return ran;
}

/* The pair of a compressed block: the pointwise layer on the shift form of
 * sparse weights (density pd, blocks of ob channels), the depthwise one
 * pruned to density dd (1: every cell, by whole windows), against the two
 * shift forms' references */
static int bands_sparse_case(const pair_case *pc, double pd, uint32_t ob, double dd, const dcz_act *pact,
                             const dcz_act *dact, size_t batch, dcz_pool *const *pools, int npools)
{
    dcz_conv_geom pw, d;
    pair_geoms(pc, &pw, &d);
    const size_t nx = batch * pc->in_c * pc->h * pc->w, nmid = batch * (size_t)pc->c * pc->h * pc->w;
    const size_t ny = batch * (size_t)pc->c * d.out_h * d.out_w;
    mat mp, md;
    if (!make_mat(&mp, pc->c, pc->in_c, pd, 0) || !make_mat(&md, pc->c, pc->k * pc->k, dd, 0)) {
        CHECK(0, "weights");
        return 0;
    }
    float *pb = malloc(pc->c * sizeof *pb), *db = malloc(pc->c * sizeof *db);
    float *x = malloc(nx * sizeof *x), *mid = malloc(nmid * sizeof *mid);
    float *want = malloc(ny * sizeof *want), *got = malloc(ny * sizeof *got);
    const uint64_t scratch_floats = dcz_shift_scratch_floats(&pw) + dcz_shift_scratch_floats(&d) +
                                    dcz_conv2d_bands_floats(&d);
    float *scratch = malloc((scratch_floats * 16 + 64) * sizeof *scratch);
    void *pform = malloc(dcz_shift_bytes(&pw, mp.nnz, ob) + 64), *dform = malloc(dcz_shift_bytes(&d, md.nnz, 1) + 64);
    int ran = 0;
    if (!pb || !db || !x || !mid || !want || !got || !scratch || !pform || !dform) {
        CHECK(0, "out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < pc->c; i++) { pb[i] = away() * 0.2f; db[i] = away() * 0.2f; }
    for (size_t i = 0; i < nx; i++) x[i] = away();
    dcz_shift pf, f;
    dcz_shift_build(&pw, &mp.sp, NULL, ob, pform, &pf);
    dcz_shift_build(&d, &md.sp, NULL, 1, dform, &f);
    if (dcz_conv2d_bands_takes(&pw, &pf, &d, &f)) {
        CHECK(dcz_conv2d_shift_act_isa(DCZ_ISA_REF, &pw, &pf, pb, x, batch, pact, NULL, scratch, mid) &&
                  dcz_conv2d_shift_act_isa(DCZ_ISA_REF, &d, &f, db, mid, batch, dact, NULL, scratch, want),
              "references");
        for (int t = 0; t < npools; t++) {
            for (size_t i = 0; i < ny; i++) got[i] = NAN;
            dcz_conv2d_bands_pool(pools[t], &pw, NULL, &pf, pb, pact, &d, &f, db, dact, x, batch, scratch,
                                  scratch_floats, got);
            CHECK(memcmp(got, want, ny * sizeof *got) == 0,
                  "%u -> %u channels over %ux%u (density %.2f, blocks of %u), %ux%u stride %u (density %.2f), "
                  "acts %u %u, batch %zu, %u threads: by bands differ from the layers apart", pc->in_c, pc->c, pc->h,
                  pc->w, pd, ob, pc->k, pc->k, pc->s, dd, pact->op, dact->op, batch,
                  pools[t] ? dcz_pool_threads(pools[t]) : 1);
        }
        ran = 1;
    }
done:
    free(pb); free(db); free(x); free(mid); free(want); free(got); free(scratch); free(pform); free(dform);
    free_mat(&mp);
    free_mat(&md);
    return ran;
}

static void test_bands_kernel(void)
{
    /* wide tensors of 1 MB or more (the pairs that run by bands) */
    static const pair_case cases[] = {
        { 16, 72, 64, 64, 3, 2 },  { 8, 88, 56, 56, 3, 1 },   { 12, 96, 56, 56, 5, 2 },
        { 8, 72, 40, 104, 3, 1 }, { 6, 208, 36, 36, 5, 1 },  { 10, 72, 72, 64, 3, 2 },
        { 4, 64, 60, 72, 5, 2 },  { 24, 512, 28, 28, 3, 1 }, { 8, 256, 64, 16, 3, 1 },
        { 6, 232, 64, 18, 3, 1 }, { 24, 144, 56, 56, 3, 2 },
    };
    const dcz_act clip = { DCZ_OP_CLIP, 0.0f, 6.0f }, relu = { DCZ_OP_RELU, 0, 0 }, none = { 0, 0, 0 };
    const dcz_act silu = { DCZ_OP_SILU, 0, 0 }, hswish = { DCZ_OP_HARD_SWISH, 0, 0 };
    const dcz_act *pacts[] = { &clip, &silu, &hswish, &none }, *dacts[] = { &clip, &relu, &silu, &none };
    dcz_pool *two = NULL, *three = NULL, *sixteen = NULL;
    REQUIRE(dcz_pool_start(2, &two) == DCZ_OK && dcz_pool_start(3, &three) == DCZ_OK &&
                dcz_pool_start(16, &sixteen) == DCZ_OK,
            "threads");
    dcz_pool *const pools[4] = { NULL, two, three, sixteen };
    int ran = 0, cases_n = (int)(sizeof cases / sizeof *cases);
    for (int c = 0; c < cases_n; c++)
        for (int a = 0; a < 4; a++) {
            const size_t batch = a == 1 ? 2 : 1;
            ran += bands_kernel_case(&cases[c], pacts[a], dacts[(a + c) % 4], batch, pools, 4);
        }
    /* compressed pairs: wide tensors of 2 MB or more (the shift form's
     * pairs that run by bands), the depthwise layer pruned or whole */
    static const pair_case sparse_cases[] = {
        { 16, 96, 80, 80, 3, 2 }, { 8, 144, 64, 64, 3, 1 }, { 12, 160, 56, 64, 5, 2 }, { 24, 128, 72, 72, 5, 1 },
    };
    const double dws[] = { 0.4, 1.0, 0.15 };
    int sran = 0, sparse_n = (int)(sizeof sparse_cases / sizeof *sparse_cases);
    for (int c = 0; c < sparse_n; c++)
        for (int a = 0; a < 3; a++)
            sran += bands_sparse_case(&sparse_cases[c], a == 2 ? 0.08 : 0.3, a == 1 ? 4 : 1, dws[(a + c) % 3],
                                      pacts[(a + c) % 4], dacts[a], a == 0 ? 2 : 1, pools, 4);
    /* and a pair whose wide tensor is under 2 MB stays apart */
    mat mp, md;
    const pair_case small = { 8, 144, 56, 56, 3, 1 };
    REQUIRE(make_mat(&mp, small.c, small.in_c, 0.3, 0) && make_mat(&md, small.c, 9, 0.4, 0), "weights");
    dcz_conv_geom pw, d;
    pair_geoms(&small, &pw, &d);
    void *pform = malloc(dcz_shift_bytes(&pw, mp.nnz, 1)), *dform = malloc(dcz_shift_bytes(&d, md.nnz, 1));
    REQUIRE(pform && dform, "out of memory");
    dcz_shift pf, f;
    dcz_shift_build(&pw, &mp.sp, NULL, 1, pform, &pf);
    dcz_shift_build(&d, &md.sp, NULL, 1, dform, &f);
    CHECK(!dcz_conv2d_bands_takes(&pw, &pf, &d, &f), "a compressed pair of 1.8 MB runs by bands");
    free(pform); free(dform);
    free_mat(&mp);
    free_mat(&md);
    dcz_pool_stop(two);
    dcz_pool_stop(three);
    dcz_pool_stop(sixteen);
    if (!dcz_isa_supported(DCZ_ISA_AVX512)) {
        CHECK(ran == 0 && sran == 0, "a pair ran by bands without AVX-512");
        printf("SKIP the bands' kernel: this CPU has no AVX-512 (the pairs run apart)\n");
        return;
    }
    CHECK(ran == cases_n * 4, "%d of %d cases ran by bands", ran, cases_n * 4);
    CHECK(sran == sparse_n * 3, "%d of %d compressed cases ran by bands", sran, sparse_n * 3);
}

static void activation(dcz_doc_layer *l, uint16_t op, const char *name, float lo, float hi)
{
    doc_plain_layer(l, op, name);
    if (op != DCZ_OP_CLIP) return;
    l->nattr = 2;
    l->attr[0] = dcz_f32_attr(lo);
    l->attr[1] = dcz_f32_attr(hi);
}

static void fill_away(dcz_doc_layer *l, float scale)
{
    for (size_t i = 0; i < l->t[0].n; i++) l->t[0].values[i] = away() * scale;
    for (size_t i = 0; i < l->t[1].n; i++) l->t[1].values[i] = away() * 0.2f;
}

/* l's weights kept about tenths in ten, the others 0 */
static void keep_some(dcz_doc_layer *l, uint32_t tenths)
{
    for (size_t i = 0; i < l->t[0].n; i++) {
        l->t[0].mask[i] = (uint8_t)(rnd() % 10 < tenths);
        if (!l->t[0].mask[i]) l->t[0].values[i] = 0.0f;
    }
}

/* (16, 64, 64) -> 1x1 stem (f32) -> 1x1 expand to 72 (f32; past
 * DCZ_SPLIT_MACS, so split over threads) -> CLIP [0, 6] -> depthwise 3x3
 * (f32, the stride given) -> CLIP -> 1x1 project to 8 [-> ADD the
 * block's input, at stride 1: else it is free once the expansion has
 * read it, and the pair writes its output as it reads it] -> gap -> flatten -> dense 5 -> softmax;
 * shared: a second depthwise layer reads the wide tensor too, and an ADD
 * sums the two before the projection; sparse: the expansion (to 128) and
 * the depthwise layer keep 3 and 5 tenths of their weights */
static dcz_doc *block_doc(uint32_t stride, int shared, int sparse)
{
    const uint32_t wide = sparse ? 128 : 72;   /* 2.1 MB: a compressed pair's least is 2 MB */
    dcz_doc *d;
    const uint32_t n = shared ? 12 : 10 + (stride == 1);
    if (dcz_doc_alloc(n, &d) != DCZ_OK) return NULL;
    d->input_rank = 3;
    d->input_dims[0] = 16; d->input_dims[1] = 64; d->input_dims[2] = 64;
    dcz_doc_layer *l = d->layers;
    uint32_t i = 0;
    doc_conv_layer(&l[i], "stem", 16, 16, 1, 1, 0, DCZ_ENC_F32, 0, 0, 0);
    fill_away(&l[i++], 0.5f);
    doc_conv_layer(&l[i], "expand", 16, wide, 1, 1, 0, sparse ? DCZ_ENC_SPARSE_F32 : DCZ_ENC_F32, sparse ? 8 : 0, 0,
                   0);
    fill_away(&l[i], 0.4f);
    if (sparse) keep_some(&l[i], 3);
    i++;
    activation(&l[i++], DCZ_OP_CLIP, "relu6a", 0.0f, 6.0f);
    doc_conv_layer(&l[i], "dw", wide, wide, 3, stride, 1, sparse ? DCZ_ENC_SPARSE_F32 : DCZ_ENC_F32, sparse ? 8 : 0,
                   0, 0);
    doc_conv_groups(&l[i], wide);
    fill_away(&l[i], 0.5f);
    if (sparse) keep_some(&l[i], 5);
    i++;
    activation(&l[i++], DCZ_OP_CLIP, "relu6b", 0.0f, 6.0f);
    if (shared) {
        doc_conv_layer(&l[i], "dw2", 72, 72, 3, stride, 1, DCZ_ENC_F32, 0, 0, 0);
        doc_conv_groups(&l[i], 72);
        fill_away(&l[i], 0.5f);
        l[i].nin = 1; l[i].in[0] = 3;   /* the first clip's output */
        i++;
        doc_plain_layer(&l[i], DCZ_OP_ADD, "add2");
        l[i].nin = 2; l[i].in[0] = 5; l[i].in[1] = 6;
        i++;
    }
    doc_conv_layer(&l[i], "project", wide, 16, 1, 1, 0, DCZ_ENC_F32, 0, 0, 0);
    fill_away(&l[i++], 0.2f);
    if (stride == 1 && !shared) {   /* the block's input, read again after the pair */
        doc_plain_layer(&l[i], DCZ_OP_ADD, "add");
        l[i].nin = 2; l[i].in[0] = i; l[i].in[1] = 1;
        i++;
    }
    doc_plain_layer(&l[i++], DCZ_OP_GLOBAL_AVGPOOL, "gap");
    doc_plain_layer(&l[i++], DCZ_OP_FLATTEN, "flat");
    doc_dense_layer(&l[i], "fc", 16, 5, DCZ_ENC_F32, 0, 0, 0);
    fill_away(&l[i++], 0.5f);
    doc_plain_layer(&l[i++], DCZ_OP_SOFTMAX, "prob");
    return d;
}

static void no_tap(void *ctx, uint32_t layer, const float *y, size_t batch, uint32_t width)
{
    (void)ctx; (void)layer; (void)y; (void)batch; (void)width;
}

static void block_case(uint32_t stride, int shared, int sparse)
{
    dcz_doc *d = block_doc(stride, shared, sparse);
    REQUIRE(d, "build");
    uint8_t *buf = NULL;
    size_t len = 0;
    const dcz_status ws = dcz_doc_write(d, &buf, &len);
    dcz_doc_free(d);
    REQUIRE(ws == DCZ_OK, "write: %s", dcz_status_str(ws));
    dcz_model *m;
    REQUIRE(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "open");
    const int avx512 = dcz_isa_supported(DCZ_ISA_AVX512);
    const int pairs = avx512 && !shared;
    CHECK(!sparse || m->layers[1].kernel == DCZ_K_CONV_SHIFT, "the compressed expansion on %s, not the shift form",
          dcz_kernel_name((dcz_kernel)m->layers[1].kernel));
    CHECK((m->layers[1].band == 3) == pairs && (m->layers[3].fused == DCZ_FUSED_BANDS) == pairs,
          "stride %u%s%s: the expansion pairs with the depthwise layer: %u (fused %u)", stride,
          shared ? ", wide tensor read twice" : "", sparse ? ", compressed" : "", m->layers[1].band,
          m->layers[3].fused);
    dcz_layer_desc ld;
    CHECK(dcz_describe_layer(m, 3, &ld) == DCZ_OK && (strcmp(ld.kernel, "fused") == 0) == pairs &&
              (!pairs || strstr(ld.why, "expand") != NULL),
          "describe dw: %s (%s)", ld.kernel, ld.why);
    CHECK(dcz_describe_layer(m, 1, &ld) == DCZ_OK && (strstr(ld.why, "by bands") != NULL) == pairs,
          "describe expand: %s", ld.why);
    const size_t in = dcz_input_size(m), out = dcz_output_size(m);
    float *x = malloc(3 * in * sizeof *x), *y = malloc(3 * out * sizeof *y), *yt = malloc(3 * out * sizeof *yt);
    REQUIRE(x && y && yt, "out of memory");
    for (size_t i = 0; i < 3 * in; i++) x[i] = away();
    for (size_t b = 1; b <= 3; b += 2) {
        CHECK(dcz_run(m, x, b, y) == DCZ_OK && dcz_run_tapped(m, x, b, yt, no_tap, NULL) == DCZ_OK, "run");
        CHECK(memcmp(y, yt, b * out * sizeof *y) == 0, "stride %u batch %zu: the paired run differs from the taps'",
              stride, b);
    }
    dcz_close(m);
    dcz_options o;
    dcz_options_init(&o);
    o.threads = 2;
    REQUIRE(dcz_open_memory(buf, len, &o, &m) == DCZ_OK, "open on 2 threads");
    float *y2 = malloc(3 * out * sizeof *y2);
    REQUIRE(y2, "out of memory");
    CHECK(dcz_run(m, x, 3, y2) == DCZ_OK && memcmp(y2, yt, 3 * out * sizeof *y2) == 0,
          "stride %u: 2 threads differ from the taps'", stride);
    dcz_close(m);
    /* a measured plan: each layer timed alone, then the model it keeps paired */
    dcz_options_init(&o);
    o.plan = DCZ_PLAN_MEASURE;
    REQUIRE(dcz_open_memory(buf, len, &o, &m) == DCZ_OK, "open by a measured plan");
    {   /* where the kernels it timed fastest are the pair's (the timings decide) */
        /* (on the shift form, wide tensors of 2 MB or more: the sparse block's) */
        const int kernels = (m->layers[1].kernel == DCZ_K_CONV_GEMM || m->layers[1].kernel == DCZ_K_CONV_EXPANDED ||
                             (m->layers[1].kernel == DCZ_K_CONV_SHIFT && sparse)) &&
                            m->layers[3].kernel == DCZ_K_CONV_DEPTHWISE_ROWS;
        CHECK((m->layers[3].fused == DCZ_FUSED_BANDS) == (pairs && kernels),
              "stride %u: a measured plan on %s and %s pairs: fused %u", stride,
              dcz_kernel_name((dcz_kernel)m->layers[1].kernel), dcz_kernel_name((dcz_kernel)m->layers[3].kernel),
              m->layers[3].fused);
    }
    /* (its kernels may be others than the rules': its own taps) */
    CHECK(dcz_run(m, x, 3, y2) == DCZ_OK && dcz_run_tapped(m, x, 3, y, no_tap, NULL) == DCZ_OK &&
              memcmp(y2, y, 3 * out * sizeof *y2) == 0,
          "stride %u: the measured plan differs from its taps'", stride);
    dcz_close(m);
    /* inside an arena the loader sized */
    dcz_options_init(&o);
    o.max_batch = 3;
    size_t bytes = 0;
    REQUIRE(dcz_plan(buf, len, &o, &bytes) == DCZ_OK && bytes > 0, "plan");
    void *arena = malloc(bytes);
    REQUIRE(arena, "out of memory");
    REQUIRE(dcz_open_static(buf, len, arena, bytes, &o, &m) == DCZ_OK, "open static");
    CHECK((m->layers[3].fused == DCZ_FUSED_BANDS) == pairs, "stride %u: a static model pairs: fused %u", stride,
          m->layers[3].fused);
    for (size_t i = 0; i < 3 * out; i++) y2[i] = NAN;
    CHECK(dcz_run(m, x, 3, y2) == DCZ_OK && memcmp(y2, yt, 3 * out * sizeof *y2) == 0,
          "stride %u: the static model differs from the taps'", stride);
    dcz_close(m);
    free(arena);
    free(x); free(y); free(yt); free(y2); free(buf);
    if (!avx512) printf("SKIP pairs by bands: this CPU has no AVX-512 (the model runs them apart)\n");
}

static void test_bands_model(void)
{
    block_case(2, 0, 0);
    block_case(1, 0, 0);
    block_case(1, 1, 0);
    block_case(2, 0, 1);
    block_case(1, 0, 1);
}

int main(void)
{
    RUN(test_bands_kernel);
    RUN(test_bands_model);
    return check_summary();
}
