/* internal.h: helpers shared by the files of train/ and used nowhere else.
 *
 * Checked through the public functions they serve, by tests/unit/test_train.c
 * and tests/unit/test_idx.c.
 */
#ifndef DCZ_TRAIN_INTERNAL_H
#define DCZ_TRAIN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/format/format.h"
#include "runtime/shapes.h"
#include "runtime/tool.h"
#include "train/train.h"

/* Writes a printf-style one-line reason to err (errlen bytes); err may be
 * NULL or errlen 0, then nothing is written. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void dcz_train_err(char *err, size_t errlen, const char *fmt, ...);

/* ---- files (data.c) ---------------------------------------------------------- */

/* Reads a whole file, gzip-compressed or plain, into a malloc'd buffer of
 * at most max bytes; DCZ_ERR_IO (cannot open or read), DCZ_ERR_DATA
 * (damaged gzip data), DCZ_ERR_LIMIT (more than max bytes, decompressed)
 * or DCZ_ERR_NOMEM with a reason in err. */
dcz_status dcz_train_read_file(const char *path, uint64_t max, uint8_t **buf, size_t *len, char *err,
                               size_t errlen);

/* zlib's crc32 over a buffer of any length. */
uint32_t dcz_train_crc32(uint32_t crc, const uint8_t *p, size_t len);

/* ---- the files of a streaming dataset (data_png.c) ---------------------------- */

/* One more reference to f; a release drops one, and the last frees f
 * (NULL-safe). */
void dcz_image_files_retain(dcz_image_files *f);
void dcz_image_files_release(dcz_image_files *f);

/* dcz_dataset_samples_aug of a streaming set, its indexes and aug checked
 * (aug NULL for none). */
dcz_status dcz_image_files_samples(const dcz_dataset *d, const size_t *idx, size_t first, size_t n,
                                   const dcz_augment *aug, float *x, char *err, size_t errlen);

/* The hash of a part of a streaming set (dcz_dataset_holdout): its n
 * files pick[0 .. n) and labels y. */
uint32_t dcz_image_files_part_hash(const dcz_image_files *f, const uint32_t *pick, const uint8_t *y, size_t n);

/* The reason of the last failed read of f's samples, "" for none. */
const char *dcz_image_files_error(dcz_image_files *f);

/* ---- shapes (net.c) -------------------------------------------------------- */

/* The shape of one sample's activations as (c, h, w); a flat vector of n
 * features is (n, 1, 1). 64-bit so that products of unchecked sizes cannot
 * overflow. */
typedef struct dcz_chw { int64_t c, h, w; } dcz_chw;

/* Layer l's output shape from the shapes t of the tensors it reads
 * (l->tin[0 .. nin), nin >= 1), by the operator table's rule (dcz_op_shape)
 * on the attributes of its settings (dcz_tlayer_attrs), not from its
 * recorded sizes. DCZ_ERR_ARG for an op the trainer does not run;
 * DCZ_ERR_SHAPE when its settings break the format's rules (a stride 0,
 * padding not below the window, groups that do not divide the channels, a
 * non-finite activation attribute) or the inputs do not fit them (a window
 * larger than the padded input, mismatched channels). */
dcz_status dcz_tlayer_shape(const dcz_tlayer *l, const dcz_chw *t, dcz_chw *out);

/* ---- flat parameter state (net.c) ------------------------------------------ */

/* Nonzero for layers with parameters: DENSE, CONV, BATCHNORM. */
static inline int dcz_tlayer_has_params(const dcz_tlayer *l)
{
    return dcz_tlayer_has_weights(l) || l->op == DCZ_OP_BATCHNORM;
}

/* Kinds of parameter state, each one flat buffer of the net (dcz_net.param,
 * grad, mom). */
typedef enum { DCZ_FLAT_PARAM, DCZ_FLAT_GRAD, DCZ_FLAT_MOM } dcz_flat_kind;

/* Lays the state of kind out in its flat buffer, keeping every value the
 * layers hold (zeros where a layer has none yet); does nothing when it is
 * laid out already. DCZ_ERR_ARG for DCZ_FLAT_PARAM while a layer with
 * parameters lacks w or b; DCZ_ERR_NOMEM (the net unchanged). */
dcz_status dcz_net_flatten(dcz_net *net, dcz_flat_kind kind);

/* ---- running the layers (net.c) -------------------------------------------- */

/* Grows the activation buffers (act) and the shared scratch (work) to hold
 * batch samples; with train set, also the gradient buffers (dact) and the
 * layer caches a training pass needs. */
dcz_status dcz_net_reserve(dcz_net *net, int batch, int train);

/* Samples per chunk of an inference run over many samples: at most max, and
 * few enough that the activation buffers stay within a fixed budget. */
int dcz_net_chunk(const dcz_net *net, int max);

/* Modes of dcz_net_run_layers, or-ed together. */
enum {
    DCZ_RUN_TRAIN = 1,  /* training: batch statistics in BATCHNORM (running
                           statistics updated), dropout active, forward values
                           kept in the layer caches for the backward pass */
    DCZ_RUN_PROBS = 2   /* the final softmax computes probabilities (else it is
                           the identity and act[nlayers] holds logits) */
};

/* The trainer's entry of an op (layers.c): its forward pass over a batch
 * (xs: the tensors it reads, (batch, width) each; flags DCZ_RUN_*), and
 * its backward pass, which writes the gradient of input k to dxs[k] (NULL:
 * not needed) and of its parameters to gw, gb (and gcb). */
typedef void (*dcz_tforward_fn)(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y,
                                int batch, unsigned flags);
typedef void (*dcz_tbackward_fn)(dcz_net *net, dcz_tlayer *l, const float *const *xs,
                                 const float *y, const float *dy, float *const *dxs, int batch);
typedef struct dcz_train_op {
    dcz_op op;
    dcz_tforward_fn forward;
    dcz_tbackward_fn backward;
    /* the op's attributes (docs/FORMAT.md, nattr of the operator table)
     * from the layer's settings and the shape of its first input */
    void (*attrs)(const dcz_tlayer *l, dcz_chw in, int32_t *attr);
    /* the layer's settings from checked attributes */
    void (*settings)(dcz_tlayer *l, const int32_t *attr);
    /* the layer's buffers and its settings that have no attribute (batch
     * norm, dropout): DCZ_OK or DCZ_ERR_ARG; NULL: nothing to check */
    dcz_status (*check)(const dcz_tlayer *l);
    /* bytes of l->cache for batch samples; NULL: none */
    size_t (*cache_bytes)(const dcz_tlayer *l, int batch);
    /* nonzero: the layer keeps its input and output geometry (in_c .. out_w) */
    uint8_t geometry;
    /* nonzero: each sample's output, input gradient and slice of l->cache
     * (cache_bytes linear in the batch) depend on that sample alone, and
     * neither pass writes the layer: dcz_train_forward and
     * dcz_train_backward split the batch over the threads */
    uint8_t per_sample;
} dcz_train_op;

/* The entry of op, or NULL for an op the trainer does not run. */
const dcz_train_op *dcz_train_op_get(dcz_op op);

/* The attributes of layer l (as dcz_train_op.attrs) into attr
 * (DCZ_MAX_ATTRS); returns their count, 0 for an op the trainer does not
 * run. in is the shape of its first input. */
uint32_t dcz_tlayer_attrs(const dcz_tlayer *l, dcz_chw in, int32_t *attr);

/* Layer l's forward and backward passes by its table entry, the batch
 * split over the trainer's threads when the entry is per_sample. */
void dcz_train_forward(dcz_net *net, dcz_tlayer *l, const float *const *xs, float *y, int batch,
                       unsigned flags);
void dcz_train_backward(dcz_net *net, dcz_tlayer *l, const float *const *xs, const float *y,
                        const float *dy, float *const *dxs, int batch);

/* ---- threads (par.c; dcz_train_par in train.h) ------------------------------ */

/* The threads the trainer's pool has or will have: the count
 * dcz_train_set_threads gave, else every online core (at most
 * DCZ_POOL_MAX). */
int dcz_train_threads(void);

/* C (M, N) = alpha op(A) op(B) + beta C, row major, op(X) = X^T when its
 * flag is set: cblas_sgemm's product with C's longer side cut into
 * OpenBLAS calls that the product's shape alone decides (one for a small
 * product), shared among the trainer's threads: the same bits for any
 * thread count. */
void dcz_train_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc);

/* The geometry of a CONV, pool or channel-gather layer as the runtime's
 * kernels and the GPU bodies read it. */
static inline dcz_conv_geom dcz_tlayer_geom(const dcz_tlayer *l)
{
    const dcz_conv_geom g = { (uint32_t)l->in_c, (uint32_t)l->in_h, (uint32_t)l->in_w, (uint32_t)l->out_c,
                              (uint32_t)l->out_h, (uint32_t)l->out_w, (uint32_t)l->kh, (uint32_t)l->kw,
                              (uint32_t)l->sh, (uint32_t)l->sw, (uint32_t)l->ph, (uint32_t)l->pw,
                              (uint32_t)(l->op == DCZ_OP_CONV2D && l->group > 1 ? l->group : 1) };
    return g;
}

/* The backward pass's walk (sgd.c's grad_core and the device path's):
 * need[t] (nlayers + 1) is set where tensor t depends on a parameter, so
 * that its gradient is computed; going from the last layer back, layer i's
 * input k gets its gradient in dx[k]: dact[t] (of the tensor t it reads)
 * when nothing is written there yet (set[t] 0 and no earlier input of the
 * layer reads t), else a part of gsum, which the caller then adds to
 * dact[t]; NULL for a tensor that needs none. The pointers may be the
 * host's or a device's. */
void dcz_train_need(const dcz_net *net, uint8_t *need);
void dcz_train_grad_dests(const dcz_net *net, const uint8_t *need, const uint8_t *set, int i, int batch,
                          float *const *dact, float *gsum, float **dx);

/* Sharded steps (dcz_sgd.shards, .comm; sgd.c): each part of a step's batch
 * runs as a batch of its own, its gradients times its size summed in 64-bit
 * fixed point over the parts and the ranks, and the batch-norm running
 * statistics moved once by the parts' mean. One part's gradient is a
 * dcz_part_fn: with the part's samples in net->act[0] and its labels y, it
 * leaves the part's gradients in net's gradient buffers, and in each batch
 * norm's running statistics the part's own (its momentum is 1 meanwhile),
 * and the part's mean loss in *loss (on the CPU grad_core; on a device the
 * device path's). dcz_shards_new needs the net's gradients allocated (their
 * layout chooses what is summed); dcz_shards_grad then gives one step's
 * summed gradients in net->grad, the running statistics moved and the
 * step's mean loss, and draws the step's dropout seed from net->rng. */
typedef struct dcz_shards dcz_shards;
typedef dcz_status (*dcz_part_fn)(dcz_net *net, const uint8_t *y, int batch, void *ctx, double *loss);
dcz_status dcz_shards_new(const dcz_net *net, const dcz_sgd *opt, dcz_shards **out);
dcz_status dcz_shards_grad(dcz_net *net, const dcz_dataset *data, const size_t *perm, size_t start, int bs,
                           const dcz_sgd *opt, const dcz_augment *aug, dcz_shards *s, uint8_t *yb,
                           dcz_part_fn part, void *part_ctx, double *loss);
void dcz_shards_free(dcz_shards *s);

/* An epoch's order of n samples (perm: Fisher-Yates from rng) and, when
 * augment (DCZ_AUG_* bits) is not 0, its variations' key, drawn from rng
 * after the shuffle (aug->what 0 otherwise): dcz_train_epoch's and the
 * device path's. */
void dcz_train_order(dcz_rng *rng, size_t n, unsigned augment, size_t *perm, dcz_augment *aug);
/* The rate of step `step` of an epoch of `steps` (the warmup's ramp of
 * dcz_sgd, else opt->lr). */
float dcz_train_step_lr(const dcz_sgd *opt, size_t step, size_t steps);
/* DCZ_OK when data fits the validated net: sample size (and shape for a
 * net of rank 3) and labels; DCZ_ERR_SHAPE or DCZ_ERR_ARG otherwise. */
dcz_status dcz_train_check_data(const dcz_net *net, const dcz_dataset *d);

/* Runs the layers on the batch already in act[0], filling act[1..nlayers],
 * in the mode given by flags (DCZ_RUN_*; 0: inference, logits). The net must
 * be validated and reserved for batch. */
void dcz_net_run_layers(dcz_net *net, int batch, unsigned flags);

/* ---- layer kernels ----------------------------------------------------------
 * Activations are batch major: x (batch, l->in), y (batch, l->out), each
 * sample in C order (c, h, w). Backward functions take the forward input x
 * and the gradient dy of the output; dx may be NULL when no input gradient
 * is needed; parameter gradients are written (not accumulated) to gw, gb. */

/* conv.c: floats of net->work that a CONV layer needs, one scratch per
 * thread of the trainer (dcz_train_threads). The passes use as many threads
 * as work_floats has scratch for. */
size_t dcz_conv_work_floats(const dcz_tlayer *l);
void dcz_conv_forward(const dcz_tlayer *l, const float *x, float *y, int batch, float *work,
                      size_t work_floats);
void dcz_conv_backward(dcz_tlayer *l, const float *x, const float *dy, float *dx, int batch,
                       float *work, size_t work_floats);
/* A depthwise convolution's passes by the scalar planes alone: the
 * reference whose bits dcz_conv_forward and dcz_conv_backward give by
 * vectors on AVX-512. */
void dcz_depthwise_forward_ref(const dcz_tlayer *l, const float *x, float *y, int batch);
void dcz_depthwise_backward_ref(dcz_tlayer *l, const float *x, const float *dy, float *dx, int batch);

/* wino.c: the forward pass and the input's gradient of the 3x3
 * convolutions of stride 1, one group, and input and output channels
 * multiples of 16 (dcz_wino_fits) by libdcz's Winograd F(2x2, 3x3), on
 * machines with AVX-512 (dcz_wino_vector, model.h); dcz_conv_forward and
 * dcz_conv_backward take them for those layers. dcz_wino_forward writes y
 * from x, dcz_wino_input_grad dx from dy; both return 0 (nothing written)
 * when work_floats is short of what one thread needs
 * (dcz_wino_work_floats holds one per thread for either). The _ref
 * variants run the scalar transforms and dcz_gemm_f32_ref: the same bits. */
int dcz_wino_fits(const dcz_tlayer *l);
size_t dcz_wino_work_floats(const dcz_tlayer *l);
int dcz_wino_forward(const dcz_tlayer *l, const float *x, float *y, int batch, float *work, size_t work_floats);
int dcz_wino_forward_ref(const dcz_tlayer *l, const float *x, float *y, int batch, float *work,
                         size_t work_floats);
int dcz_wino_input_grad(const dcz_tlayer *l, const float *dy, float *dx, int batch, float *work,
                        size_t work_floats);
int dcz_wino_input_grad_ref(const dcz_tlayer *l, const float *dy, float *dx, int batch, float *work,
                            size_t work_floats);

/* pool.c: MAXPOOL, AVGPOOL and GAP. MAXPOOL keeps the argmax of each output
 * in l->cache (int32_t (batch, out)) when train is set, for the backward. */
void dcz_pool_forward(dcz_tlayer *l, const float *x, float *y, int batch, int train);
void dcz_pool_backward(const dcz_tlayer *l, const float *dy, float *dx, int batch);

/* bnorm.c: BATCHNORM. In training the batch mean and 1/sqrt(var + eps) of
 * each channel go to l->cache (float (2, c)) and the running statistics are
 * updated; in inference the running statistics are used. */
void dcz_bn_forward(dcz_tlayer *l, const float *x, float *y, int batch, int train);
void dcz_bn_backward(dcz_tlayer *l, const float *x, const float *dy, float *dx,
                     int batch);

/* ---- vector loops ------------------------------------------------------------
 * Written in groups of four independent statements on restrict pointers, so
 * that the basic-block vectorizer of -O2 turns each group into one SIMD
 * operation (loop vectorization is not enabled at -O2). */

/* d[j] = s[j] for j < n. */
static inline void dcz_vcopy(float *restrict d, const float *restrict s, size_t n)
{
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        d[j] = s[j]; d[j + 1] = s[j + 1]; d[j + 2] = s[j + 2]; d[j + 3] = s[j + 3];
    }
    for (; j < n; j++) d[j] = s[j];
}

/* d[j] = v for j < n. */
static inline void dcz_vfill(float *d, float v, size_t n)
{
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        d[j] = v; d[j + 1] = v; d[j + 2] = v; d[j + 3] = v;
    }
    for (; j < n; j++) d[j] = v;
}

/* ---- element-wise loops and sums (vec.c) -------------------------------------
 * A table of functions per ISA, each giving the scalar references' bits;
 * a sum adds element j into partial sum j % 16 and the 16 by halves
 * (dcz_vec_tree16). */
typedef struct dcz_vec_ops {
    float (*sum)(const float *s, size_t n);                    /* sum of s[j] */
    float (*dot)(const float *a, const float *b, size_t n);    /* sum of a[j] b[j] */
    float (*sumsq_dev)(const float *s, float m, size_t n);     /* sum of (s[j] - m)^2 */
    /* *sg = sum of g[j], *sgx = sum of g[j] (x[j] - m) */
    void (*sums_grad)(const float *g, const float *x, float m, size_t n, float *sg, float *sgx);
    void (*affine)(float *restrict d, const float *restrict s, float a, float b, size_t n); /* s a + b */
    /* max(s a + b, 0), 0 for NaN */
    void (*affine_relu)(float *restrict d, const float *restrict s, float a, float b, size_t n);
    /* s a + b clipped to [lo, hi] as the runtime's CLIP clips it: t = hi < v
     * ? hi : v, then lo > t ? lo : t (NaN stays NaN) */
    void (*affine_clip)(float *restrict d, const float *restrict s, float a, float b, float lo, float hi,
                        size_t n);
    /* d = g p + x q + r */
    void (*lincomb)(float *restrict d, const float *restrict g, const float *restrict x, float p, float q,
                    float r, size_t n);
    void (*relu)(float *restrict d, const float *restrict s, size_t n);   /* max(s, 0), 0 for NaN */
    /* d = g where y > 0, else 0 (the ReLU backward) */
    void (*relu_grad)(float *restrict d, const float *restrict g, const float *restrict y, size_t n);
    /* d = g where lo < x < hi, else 0 (NaN: 0; the Clip backward, ReLU6's) */
    void (*clip_grad)(float *restrict d, const float *restrict g, const float *restrict x, float lo, float hi,
                      size_t n);
    void (*add)(float *restrict d, const float *restrict s, size_t n);    /* d += s */
    void (*sum2)(float *restrict d, const float *a, const float *b, size_t n); /* d = a + b */
    void (*axpy)(float *restrict d, const float *restrict s, float a, size_t n); /* d += a s */
} dcz_vec_ops;
/* The table of isa, NULL when this build or CPU has none (DCZ_ISA_REF: the
 * references). */
const dcz_vec_ops *dcz_vec_ops_of(dcz_isa isa);
/* The table this CPU runs best. */
const dcz_vec_ops *dcz_vec(void);
/* p[0] + ... + p[15] by halves: (p[i] + p[i + 8]), then + 4, + 2, + 1. */
float dcz_vec_tree16(const float *p);
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
/* dcz_vec_tree16 of a vector's lanes, in registers */
__attribute__((target("avx512f")))
static inline float dcz_vec_tree16__avx512(__m512 v)
{
    const __m256 t8 = _mm256_add_ps(_mm512_castps512_ps256(v),
                                    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    const __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));
    const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
    return _mm_cvtss_f32(_mm_add_ss(t2, _mm_shuffle_ps(t2, t2, 1)));
}
#endif

/* Element-wise loops shorter than this run inline, four statements a step
 * (which the compiler pairs into a vector), where the call through the
 * table cost more than it saved: the depthwise taps and their adjoint add
 * rows of 4 to 28, batch norm takes planes of 16 and 49 (the
 * MobileNetV2-style preset trained 7% slower with all of them through the
 * table). Same bits either way. */
#define DCZ_VEC_INLINE_MAX 64

/* The references of the element-wise loops that run inline (the table's
 * add, affine, lincomb and axpy of DCZ_ISA_REF): four statements a step. */
static inline void dcz_vadd_ref(float *restrict d, const float *restrict s, size_t n)
{
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        d[j] += s[j]; d[j + 1] += s[j + 1]; d[j + 2] += s[j + 2]; d[j + 3] += s[j + 3];
    }
    for (; j < n; j++) d[j] += s[j];
}
static inline void dcz_vaffine_ref(float *restrict d, const float *restrict s, float a, float b, size_t n)
{
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        d[j] = s[j] * a + b; d[j + 1] = s[j + 1] * a + b;
        d[j + 2] = s[j + 2] * a + b; d[j + 3] = s[j + 3] * a + b;
    }
    for (; j < n; j++) d[j] = s[j] * a + b;
}
static inline void dcz_vlincomb_ref(float *restrict d, const float *restrict g, const float *restrict x, float p,
                                    float q, float r, size_t n)
{
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        d[j] = g[j] * p + x[j] * q + r; d[j + 1] = g[j + 1] * p + x[j + 1] * q + r;
        d[j + 2] = g[j + 2] * p + x[j + 2] * q + r; d[j + 3] = g[j + 3] * p + x[j + 3] * q + r;
    }
    for (; j < n; j++) d[j] = g[j] * p + x[j] * q + r;
}
static inline void dcz_vaxpy_ref(float *restrict d, const float *restrict s, float a, size_t n)
{
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        d[j] += a * s[j]; d[j + 1] += a * s[j + 1];
        d[j + 2] += a * s[j + 2]; d[j + 3] += a * s[j + 3];
    }
    for (; j < n; j++) d[j] += a * s[j];
}

static inline void dcz_vadd(float *restrict d, const float *restrict s, size_t n)
{
    if (n < DCZ_VEC_INLINE_MAX) dcz_vadd_ref(d, s, n);
    else dcz_vec()->add(d, s, n);
}
static inline void dcz_vaffine(float *restrict d, const float *restrict s, float a, float b, size_t n)
{
    if (n < DCZ_VEC_INLINE_MAX) dcz_vaffine_ref(d, s, a, b, n);
    else dcz_vec()->affine(d, s, a, b, n);
}
/* d = g p + x q + r */
static inline void dcz_vlincomb(float *restrict d, const float *restrict g, const float *restrict x, float p,
                                float q, float r, size_t n)
{
    if (n < DCZ_VEC_INLINE_MAX) dcz_vlincomb_ref(d, g, x, p, q, r, n);
    else dcz_vec()->lincomb(d, g, x, p, q, r, n);
}
static inline void dcz_vaxpy(float *restrict d, const float *restrict s, float a, size_t n)
{
    if (n < DCZ_VEC_INLINE_MAX) dcz_vaxpy_ref(d, s, a, n);
    else dcz_vec()->axpy(d, s, a, n);
}
static inline void dcz_vaffine_relu(float *restrict d, const float *restrict s, float a, float b, size_t n)
{
    dcz_vec()->affine_relu(d, s, a, b, n);
}
static inline void dcz_vaffine_clip(float *restrict d, const float *restrict s, float a, float b, float lo,
                                    float hi, size_t n)
{
    dcz_vec()->affine_clip(d, s, a, b, lo, hi, n);
}
static inline void dcz_vrelu(float *restrict d, const float *restrict s, size_t n) { dcz_vec()->relu(d, s, n); }
static inline void dcz_vrelu_grad(float *restrict d, const float *restrict g, const float *restrict y, size_t n)
{
    dcz_vec()->relu_grad(d, g, y, n);
}
static inline void dcz_vclip_grad(float *restrict d, const float *restrict g, const float *restrict x, float lo,
                                  float hi, size_t n)
{
    dcz_vec()->clip_grad(d, g, x, lo, hi, n);
}
static inline float dcz_vdot(const float *a, const float *b, size_t n) { return dcz_vec()->dot(a, b, n); }
static inline float dcz_vsum(const float *s, size_t n) { return dcz_vec()->sum(s, n); }

/* Bytes of l->cache a layer needs for batch samples (0: none). */
size_t dcz_tlayer_cache_bytes(const dcz_tlayer *l, int batch);

#endif /* DCZ_TRAIN_INTERNAL_H */
