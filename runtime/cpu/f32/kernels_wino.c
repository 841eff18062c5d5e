/* kernels_wino.c: 3x3 convolutions of stride 1 by Winograd's minimal
 * filtering F(2x2, 3x3) (wino.h): 16 products
 * of (tiles, C) by (C, K) where im2col's product is 2.25 times their size
 * (per output). The training engine runs its forward passes and input
 * gradients by them (train/wino.c), the runtime dense float convolutions
 * that fit (dcz_conv2d_pick_wino).
 *
 * Each 2x2 block of outputs (a tile) of an output channel k is
 *   Y = A^T [ sum over input channels c of U(k, c) . V(c) ] A + b[k]
 * where U(k, c) = G g(k, c) G^T (4x4, from the 3x3 weights g), V(c) =
 * B^T d(c) B (4x4, from the 4x4 input patch d(c) at the tile's top left,
 * zero outside the input), "." the entrywise product, and
 *   G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
 *   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
 *   A^T = [1 1 1 0; 0 1 -1 -1].
 * The sum over c is, for each of the 16 entries xi of the 4x4 matrices, a
 * product M_xi (tiles, K) = V_xi (tiles, C) U_xi (C, K) by dcz_gemm_f32.
 *
 * Layout. The transforms run on 16 channels a vector, so input and output
 * channels are multiples of 16, and they read and write pixels whose
 * channels are consecutive: a sample's input is transposed (16 x 16
 * blocks, dcz_transpose_planes) into a zero-bordered image of pixels, P
 * (PH, PW, C), the tile (ty, tx) reading P's rows 2 ty .. 2 ty + 3,
 * columns 2 tx .. 2 tx + 3; its outputs go to F (OH OW, K), transposed into
 * y's planes at the end. The samples' tiles go through the products
 * DCZ_WINO_TILES at a time (the rows of the products' A), several samples'
 * together when a sample has fewer.
 *
 * Cost. The transforms and the transposes are passes over the input and
 * the output that im2col does not have. In a training run of the
 * conv-heavy CNN (2 threads, samples of perf): the products 52% -> 37% of
 * the time, the transforms 9% and these transposes about 7%. Through a
 * flat copy of the input and scalar tails the transposes cost more (0.96
 * of im2col's time; writing P's rows and reading F's directly, partial
 * 16 x 16 blocks by masks: 0.904).
 *
 * Rounding: the transforms add and subtract in the order written in
 * WINO_IN and WINO_OUT (the scalar reference and the AVX-512 variant run
 * the same operations, and dcz_gemm_f32 gives its reference's bits, so
 * both give the same bits); against a direct convolution each output
 * differs by the rounding of the transforms' sums, a few units of the last
 * place of the inputs' and weights' magnitudes (tests/unit/test_train.c
 * and test_kernels.c bound it as they do im2col's).
 */
#include <string.h>

#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/wino.h"
#include "runtime/model.h"
#include "runtime/threads.h"

#if DCZ_BUILD_F32_X86
#include <immintrin.h>

#include "runtime/cpu/avx2_lanes.h"
#include "runtime/cpu/f32/act_x86.h"
#endif

static size_t up16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

void dcz_wino_init(dcz_wino *g, uint32_t C, uint32_t K, uint32_t H, uint32_t W, uint32_t ph, uint32_t pw)
{
    g->C = C;
    g->K = K;
    g->H = H;
    g->W = W;
    g->OH = H + 2 * (size_t)ph - 2;
    g->OW = W + 2 * (size_t)pw - 2;
    g->ph = ph;
    g->pw = pw;
    g->in = g->C * g->H * g->W;
    g->out = g->K * g->OH * g->OW;
    g->kp = dcz_gemm_ldb(g->K);
    g->TH = (g->OH + 1) / 2;
    g->TW = (g->OW + 1) / 2;
    g->T = g->TH * g->TW;
    g->PH = 2 * g->TH + 2;
    g->PW = 2 * g->TW + 2;
    g->ps = g->PH * g->PW * g->C;
    g->ns = g->T >= DCZ_WINO_TILES ? 1 : DCZ_WINO_TILES / g->T;
    /* a line more than the blocks: 16 blocks a multiple of 4 KB apart
     * would share a set of the first-level cache */
    g->vs = DCZ_WINO_TILES * g->C + 16;
    g->ms = DCZ_WINO_TILES * g->kp + 16;
    g->v = up16(g->ns * g->ps);
    g->m = g->v + 16 * g->vs;
    g->f = g->m + 16 * g->ms;
    g->scratch = up16(g->f + g->ns * g->OH * g->OW * g->K);
}

void dcz_wino_init_geom(dcz_wino *p, const dcz_conv_geom *g)
{
    dcz_wino_init(p, g->in_c, g->out_c, g->in_h, g->in_w, g->ph, g->pw);
}

int dcz_wino_fits_geom(const dcz_conv_geom *g)
{
    if (!(g->kh == 3 && g->kw == 3 && g->sh == 1 && g->sw == 1 && dcz_conv_groups(g) == 1 && g->in_c % 16 == 0 &&
          g->out_c % 16 == 0 && g->ph <= 2 && g->pw <= 2 && g->out_h > 0 && g->out_w > 0))
        return 0;
    dcz_wino p;
    dcz_wino_init_geom(&p, g);
    return p.scratch <= DCZ_WINO_SCRATCH_MAX;
}

uint64_t dcz_wino_weights_floats(const dcz_wino *g)
{
    return up16(16 * g->C * g->kp);
}

/* ---- transposes ---- */

#if DCZ_BUILD_F32_X86
/* d (nc, mr) = s (mr, nc) transposed, mr and nc at most 16; s rows lds
 * floats apart, d rows ldd: pairs of rows interleaved, then pairs of pairs,
 * then 128-bit lanes exchanged in two steps. Reads and writes nothing
 * outside the two blocks. */
__attribute__((target("avx512f")))
static void transpose16__avx512(const float *s, size_t lds, float *d, size_t ldd, int mr, int nc)
{
    __m512 r[16], t[16];
    const __mmask16 cols = (__mmask16)((1u << nc) - 1), rows = (__mmask16)((1u << mr) - 1);
    for (int i = 0; i < 16; i++) r[i] = i < mr ? _mm512_maskz_loadu_ps(cols, s + (size_t)i * lds) : _mm512_setzero_ps();
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
    for (int i = 0; i < nc; i++) _mm512_mask_storeu_ps(d + (size_t)i * ldd, rows, r[i]);
}
#endif

#if DCZ_BUILD_F32_X86
/* transpose16__avx512 in AVX2, blocks of 8 x 8: pairs of rows interleaved,
 * then pairs of pairs, then the 128-bit halves exchanged; partial blocks
 * by masked loads and stores. */
__attribute__((target("avx2")))
static void transpose8__avx2(const float *s, size_t lds, float *d, size_t ldd, int mr, int nc)
{
    __m256 r[8], t[8];
    const __m256i cols = dcz_mask8__avx2((uint32_t)nc), rows = dcz_mask8__avx2((uint32_t)mr);
    for (int i = 0; i < 8; i++)
        r[i] = i >= mr ? _mm256_setzero_ps() : nc == 8 ? _mm256_loadu_ps(s + (size_t)i * lds)
                                                        : _mm256_maskload_ps(s + (size_t)i * lds, cols);
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
        t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
    }
    for (int i = 0; i < nc; i++) {
        if (mr == 8) _mm256_storeu_ps(d + (size_t)i * ldd, t[i]);
        else _mm256_maskstore_ps(d + (size_t)i * ldd, rows, t[i]);
    }
}
#endif

void dcz_transpose_planes(const float *s, size_t lds, size_t m, size_t n, float *d, size_t ldd)
{
#if DCZ_BUILD_F32_X86
    if (dcz_isa_supported(DCZ_ISA_AVX512)) {
        for (size_t r = 0; r < m; r += 16)
            for (size_t c = 0; c < n; c += 16)
                transpose16__avx512(s + r * lds + c, lds, d + c * ldd + r, ldd, m - r < 16 ? (int)(m - r) : 16,
                                    n - c < 16 ? (int)(n - c) : 16);
        return;
    }
    if (dcz_isa_supported(DCZ_ISA_AVX2)) {
        for (size_t r = 0; r < m; r += 8)
            for (size_t c = 0; c < n; c += 8)
                transpose8__avx2(s + r * lds + c, lds, d + c * ldd + r, ldd, m - r < 8 ? (int)(m - r) : 8,
                                 n - c < 8 ? (int)(n - c) : 8);
        return;
    }
#endif
    for (size_t r = 0; r < m; r++)
        for (size_t c = 0; c < n; c++) d[c * ldd + r] = s[r * lds + c];
}

/* ---- the transforms: one entry (a channel) in scalars, 16 in vectors ---- */

#define WINO_IN(T, ADD, SUB, d, v)                                                    \
    do {                                                                              \
        T t_[4][4];                                                                   \
        for (int j = 0; j < 4; j++) {                                                 \
            t_[0][j] = SUB(d[0][j], d[2][j]);                                         \
            t_[1][j] = ADD(d[1][j], d[2][j]);                                         \
            t_[2][j] = SUB(d[2][j], d[1][j]);                                         \
            t_[3][j] = SUB(d[1][j], d[3][j]);                                         \
        }                                                                             \
        for (int i = 0; i < 4; i++) {                                                 \
            v[4 * i] = SUB(t_[i][0], t_[i][2]);                                       \
            v[4 * i + 1] = ADD(t_[i][1], t_[i][2]);                                   \
            v[4 * i + 2] = SUB(t_[i][2], t_[i][1]);                                   \
            v[4 * i + 3] = SUB(t_[i][1], t_[i][3]);                                   \
        }                                                                             \
    } while (0)

#define WINO_OUT(T, ADD, SUB, m, b, y)                                                \
    do {                                                                              \
        T s_[2][4];                                                                   \
        for (int j = 0; j < 4; j++) {                                                 \
            s_[0][j] = ADD(ADD(m[j], m[4 + j]), m[8 + j]);                            \
            s_[1][j] = SUB(SUB(m[4 + j], m[8 + j]), m[12 + j]);                       \
        }                                                                             \
        for (int a = 0; a < 2; a++) {                                                 \
            y[a][0] = ADD(ADD(ADD(s_[a][0], s_[a][1]), s_[a][2]), b);                 \
            y[a][1] = ADD(SUB(SUB(s_[a][1], s_[a][2]), s_[a][3]), b);                 \
        }                                                                             \
    } while (0)

#define SADD(a, b) ((a) + (b))
#define SSUB(a, b) ((a) - (b))

/* U from w, input channel by input channel through tmp (16 K floats; NULL:
 * in place, as a load does once): U's 16 blocks lie C kp floats apart, a
 * multiple of 4 KB for many layers, and written in place 16 rows at a time
 * they evicted each other from the first-level cache (the transform took
 * 6% of a training run). */
void dcz_wino_weights(const dcz_wino *g, const float *w, int turned, float *u, float *tmp)
{
    memset(u, 0, dcz_wino_weights_floats(g) * sizeof *u);
    for (size_t c = 0; c < g->C; c++) {
        for (size_t k = 0; k < g->K; k++) {
            float v[9];   /* weight (k, c) of the convolution run */
            if (turned)
                for (int t = 0; t < 9; t++) v[t] = w[(c * g->K + k) * 9 + 8 - t];
            else
                memcpy(v, w + (k * g->C + c) * 9, sizeof v);
            for (int i = 0; i < 4; i++) {   /* row i of G g, then times G^T */
                const float a0 = i == 0 ? v[0] : i == 3 ? v[6] : 0.5f * (v[0] + (i == 1 ? v[3] : -v[3]) + v[6]);
                const float a1 = i == 0 ? v[1] : i == 3 ? v[7] : 0.5f * (v[1] + (i == 1 ? v[4] : -v[4]) + v[7]);
                const float a2 = i == 0 ? v[2] : i == 3 ? v[8] : 0.5f * (v[2] + (i == 1 ? v[5] : -v[5]) + v[8]);
                /* entry xi of U(k, c) at e[xi / 4 * st], st floats apart */
                const size_t st = tmp ? g->K : g->C * g->kp;
                float *e = tmp ? tmp + (size_t)4 * i * g->K + k : u + ((size_t)4 * i * g->C + c) * g->kp + k;
                e[0] = a0;
                e[st] = 0.5f * (a0 + a1 + a2);
                e[2 * st] = 0.5f * (a0 - a1 + a2);
                e[3 * st] = a2;
            }
        }
        for (int xi = 0; tmp && xi < 16; xi++)
            memcpy(u + ((size_t)xi * g->C + c) * g->kp, tmp + (size_t)xi * g->K, g->K * sizeof *u);
    }
}

/* ---- a batch ---- */

/* Rows r0 .. r1 - 1 of P of sample x (C, H, W) at p, its border left as
 * it is (0): each row of x's planes transposed into P's row. */
static void image_in(const dcz_wino *g, const float *x, float *p, size_t r0, size_t r1)
{
    for (size_t r = r0; r < r1; r++)
        dcz_transpose_planes(x + r * g->W, g->H * g->W, g->C, g->W, p + ((r + g->ph) * g->PW + g->pw) * g->C, g->C);
}

/* The tile u of a round (sample u / T of the round's first, in P's of
 * ps floats each): its top left in P. */
static const float *tile_in(const dcz_wino *g, const float *p, size_t u)
{
    const size_t s = u / g->T, t = u % g->T;
    return p + s * g->ps + (2 * (t / g->TW) * g->PW + 2 * (t % g->TW)) * g->C;
}

static void in_ref(const dcz_wino *g, const float *p, size_t u0, size_t n, float *v)
{
    for (size_t u = 0; u < n; u++) {
        const float *q = tile_in(g, p, u0 + u);
        for (size_t c = 0; c < g->C; c++) {
            float d[4][4], e[16];
            for (int i = 0; i < 4; i++)
                for (int k = 0; k < 4; k++) d[i][k] = q[((size_t)i * g->PW + k) * g->C + c];
            WINO_IN(float, SADD, SSUB, d, e);
            for (int xi = 0; xi < 16; xi++) v[(size_t)xi * g->vs + u * g->C + c] = e[xi];
        }
    }
}

/* Outputs of tile u of the round (sample s0 + u / T of the batch): from M
 * into F (the round's samples' (OH OW, K) one after the other). */
static void out_ref(const dcz_wino *g, const float *bias, const dcz_act *act, const float *m, size_t u0, size_t n,
                    float *f)
{
    const size_t ohw = g->OH * g->OW;
    for (size_t u = 0; u < n; u++) {
        const size_t s = (u0 + u) / g->T, t = (u0 + u) % g->T, oy = 2 * (t / g->TW), ox = 2 * (t % g->TW);
        for (size_t k = 0; k < g->K; k++) {
            float e[16], y[2][2];
            for (int xi = 0; xi < 16; xi++) e[xi] = m[(size_t)xi * g->ms + u * g->kp + k];
            const float b = bias ? bias[k] : 0.0f;
            WINO_OUT(float, SADD, SSUB, e, b, y);
            for (size_t a = 0; a < 2; a++)
                for (size_t c = 0; c < 2; c++)
                    if (oy + a < g->OH && ox + c < g->OW)
                        f[(s * ohw + (oy + a) * g->OW + ox + c) * g->K + k] = dcz_act_one(act, y[a][c]);
        }
    }
}

#if DCZ_BUILD_F32_X86
/* The vector transforms of one instruction set: in##SFX and out##SFX,
 * L channels a vector of type V, the operations of WINO_IN and WINO_OUT in
 * their order (so every set gives the reference's bits), ACT the fused
 * activation's vector form. */
#define WINO_VECTOR(SFX, TGT, V, L, LOAD, STORE, ZERO, ADD, SUB, ACT)                                       \
    TGT static void in##SFX(const dcz_wino *g, const float *p, size_t u0, size_t n, float *v)                  \
    {                                                                                                           \
        const size_t C = g->C, PW = g->PW, vs = g->vs;   /* read once (out##SFX) */                             \
        for (size_t u = 0; u < n; u++) {                                                                        \
            const float *q = tile_in(g, p, u0 + u);                                                             \
            for (size_t c = 0; c < C; c += L) {                                                                 \
                V d[4][4], e[16];                                                                               \
                for (int i = 0; i < 4; i++)                                                                     \
                    for (int k = 0; k < 4; k++) d[i][k] = LOAD(q + ((size_t)i * PW + k) * C + c);               \
                WINO_IN(V, ADD, SUB, d, e);                                                                     \
                for (int xi = 0; xi < 16; xi++) STORE(v + (size_t)xi * vs + u * C + c, e[xi]);                 \
            }                                                                                                   \
        }                                                                                                       \
    }                                                                                                           \
    TGT static void out##SFX(const dcz_wino *g, const float *bias, const dcz_act *act, const float *m, size_t u0, \
                             size_t n, float *f)                                                                \
    {                                                                                                           \
        /* g and act read once: a store through the vector types may alias                                      \
         * anything (dcz_act_of) */                                                                             \
        const size_t OH = g->OH, OW = g->OW, K = g->K, T = g->T, TW = g->TW, ms = g->ms, kp = g->kp;            \
        const dcz_act a1 = dcz_act_of(act);                                                                     \
        const size_t ohw = OH * OW;                                                                             \
        for (size_t u = 0; u < n; u++) {                                                                        \
            const size_t s = (u0 + u) / T, t = (u0 + u) % T, oy = 2 * (t / TW), ox = 2 * (t % TW);               \
            const int down = oy + 1 < OH, across = ox + 1 < OW;                                                 \
            float *o = f + (s * ohw + oy * OW + ox) * K;                                                        \
            for (size_t k = 0; k < K; k += L) {                                                                 \
                V e[16], y[2][2];                                                                               \
                for (int xi = 0; xi < 16; xi++) e[xi] = LOAD(m + (size_t)xi * ms + u * kp + k);                \
                const V b = bias ? LOAD(bias + k) : ZERO();                                                     \
                WINO_OUT(V, ADD, SUB, e, b, y);                                                                 \
                for (int a = 0; a < 2; a++)                                                                     \
                    for (int c = 0; c < 2; c++) y[a][c] = ACT(y[a][c], &a1);                                    \
                STORE(o + k, y[0][0]);                                                                          \
                if (across) STORE(o + K + k, y[0][1]);                                                          \
                if (down) {                                                                                     \
                    STORE(o + OW * K + k, y[1][0]);                                                             \
                    if (across) STORE(o + (OW + 1) * K + k, y[1][1]);                                           \
                }                                                                                               \
            }                                                                                                   \
        }                                                                                                       \
    }

#define VADD(a, b) _mm512_add_ps(a, b)
#define VSUB(a, b) _mm512_sub_ps(a, b)
WINO_VECTOR(__avx512, __attribute__((target("avx512f"))), __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps,
            _mm512_setzero_ps, VADD, VSUB, dcz_act__avx512)
#define V8ADD(a, b) _mm256_add_ps(a, b)
#define V8SUB(a, b) _mm256_sub_ps(a, b)
WINO_VECTOR(__avx2, __attribute__((target("avx2,fma"))), __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps,
            _mm256_setzero_ps, V8ADD, V8SUB, dcz_act__avx2)
#endif

/* The 16 products of n tiles, xi in part `part` of parts (M_xi (n, K) =
 * V_xi (n, C) U_xi (C, K)): each its own product, so any split gives the
 * bits of one thread. */
typedef struct wino_job {
    const dcz_wino *g;
    const float *u, *v;
    float *m;
    size_t n;
    int vec;
    uint32_t parts;
} wino_job;

/* The vector or scalar transforms (vec: dcz_wino_vector, 0 the
 * reference), and the products xi0 .. xi1 - 1 of n tiles */
static void wino_in(int vec, const dcz_wino *g, const float *p, size_t u0, size_t n, float *v)
{
#if DCZ_BUILD_F32_X86
    if (vec == 2) in__avx512(g, p, u0, n, v);
    else if (vec) in__avx2(g, p, u0, n, v);
    else
#endif
        in_ref(g, p, u0, n, v);
}

static void wino_out(int vec, const dcz_wino *g, const float *bias, const dcz_act *act, const float *m, size_t u0,
                     size_t n, float *f)
{
#if DCZ_BUILD_F32_X86
    if (vec == 2) out__avx512(g, bias, act, m, u0, n, f);
    else if (vec) out__avx2(g, bias, act, m, u0, n, f);
    else
#endif
        out_ref(g, bias, act, m, u0, n, f);
}

static void wino_gemms(int vec, const dcz_wino *g, const float *u, const float *v, float *m, size_t n, uint32_t xi0,
                       uint32_t xi1)
{
    for (uint32_t xi = xi0; xi < xi1; xi++) {
        const float *a = v + (size_t)xi * g->vs, *b = u + (size_t)xi * g->C * g->kp;
        float *c = m + (size_t)xi * g->ms;
        if (vec) dcz_gemm_f32(n, g->K, (uint32_t)g->C, a, g->C, b, g->kp, NULL, NULL, c, g->kp);
        else dcz_gemm_f32_ref(n, g->K, (uint32_t)g->C, a, g->C, b, g->kp, NULL, NULL, c, g->kp);
    }
}

static void wino_products(void *ctx, uint32_t part)
{
    const wino_job *j = ctx;
    uint32_t lo, hi;
    dcz_part_range(16, part, j->parts, &lo, &hi);
    wino_gemms(j->vec, j->g, j->u, j->v, j->m, j->n, lo, hi);
}

/* A round's tiles [lo, hi) of part `part` of parts, all of their work:
 * the input transform, their rows of the 16 products, the output
 * transform. Each tile's outputs are its own sums in the order of one
 * thread (the products' rows split: each output's sum unchanged): the
 * bits of one thread. */
typedef struct wino_round {
    const dcz_wino *g;
    const float *u, *bias, *p;
    const dcz_act *act;
    float *v, *m, *f;
    size_t u0, n;
    int vec;
    uint32_t parts;
} wino_round;

static void wino_tiles(void *ctx, uint32_t part)
{
    const wino_round *j = ctx;
    const dcz_wino *g = j->g;
    uint32_t lo, hi;
    dcz_part_range((uint32_t)j->n, part, j->parts, &lo, &hi);
    if (lo == hi) return;
    float *v = j->v + (size_t)lo * g->C, *m = j->m + (size_t)lo * g->kp;
    wino_in(j->vec, g, j->p, j->u0 + lo, hi - lo, v);
    wino_gemms(j->vec, g, j->u, v, m, hi - lo, 0, 16);
    wino_out(j->vec, g, j->bias, j->act, m, j->u0 + lo, hi - lo, j->f);
}

/* The transposes in and out of the pixel images over the threads: rows
 * [lo, hi) of the input's planes into P, or F's pixels by blocks of 16
 * into y's planes; each cell's copy its own. */
typedef struct wino_copy {
    const dcz_wino *g;
    const float *x;
    float *p;
    int out;
    uint32_t parts;
} wino_copy;

static void wino_copy_part(void *ctx, uint32_t part)
{
    const wino_copy *j = ctx;
    const dcz_wino *g = j->g;
    size_t lo, hi;
    if (!j->out) {
        dcz_part_units(g->H, 1, part, j->parts, &lo, &hi);
        image_in(g, j->x, j->p, lo, hi);
        return;
    }
    const size_t ohw = g->OH * g->OW;
    dcz_part_units(ohw, 16, part, j->parts, &lo, &hi);   /* whole blocks of 16 pixels */
    if (lo < hi) dcz_transpose_planes(j->x + lo * g->K, g->K, hi - lo, g->K, j->p + lo, ohw);
}

int dcz_wino_splits(const dcz_wino *g)
{
    return 16 * (uint64_t)g->T * g->C * g->K >= DCZ_SPLIT_MACS;
}

/* Where a round's threads split its tiles (each thread every step of its
 * own tiles) rather than its 16 products (the transforms on the caller's
 * thread): U within WINO_TILES_U_BYTES, which each thread then reads
 * whole. With the products alone split, DenseNet-121's 58 layers of 128 ->
 * 32 (U 256 KB) ran 8.5 ms at one thread, 7.3 at two; by tiles (and the
 * transposes in and out split too), 5.1. One core of an AMD EPYC (Zen 5,
 * two vCPUs), dcz bench --per-layer at two threads, least of alternated
 * rounds: ResNet-18's 128 -> 128 over 28 x 28 (U 1 MB) 365 -> 335 us,
 * SqueezeNet 1.1's 48 -> 192 and 64 -> 256 136-193 -> 102-166; its 256 ->
 * 256 (U 4 MB) 340-349 -> 365, so not past 1 MB. The models at two
 * threads, batch 1 (medians of alternated runs in both orders, against the
 * products split alone): DenseNet-121 0.88 of the time, ResNet-18 0.92,
 * ResNet-50 0.97, SqueezeNet 0.95. */
#define WINO_TILES_U_BYTES (1u << 20)

void dcz_wino_conv(const dcz_wino *g, const float *u, const float *bias, const dcz_act *act, const float *x,
                   size_t batch, int ref, float *scratch, float *y)
{
    dcz_wino_conv_pool(NULL, g, u, bias, act, x, batch, ref, scratch, y);
}

void dcz_wino_conv_pool(dcz_pool *pool, const dcz_wino *g, const float *u, const float *bias, const dcz_act *act,
                        const float *x, size_t batch, int ref, float *scratch, float *y)
{
#if DCZ_BUILD_F32_X86
    const int vec = ref ? 0 : dcz_wino_vector();
#else
    const int vec = 0;
    (void)ref;
#endif
    float *p = scratch, *v = p + g->v, *m = p + g->m, *f = p + g->f;
    const size_t ohw = g->OH * g->OW;
    const uint32_t parts = pool ? dcz_pool_threads(pool) : 1;
    const int by_tiles = parts > 1 && 16 * (uint64_t)g->C * g->kp * sizeof *u <= WINO_TILES_U_BYTES;
    memset(p, 0, g->ns * g->ps * sizeof *p);   /* P's borders */
    for (size_t s0 = 0; s0 < batch; s0 += g->ns) {
        const size_t ns = batch - s0 < g->ns ? batch - s0 : g->ns, tiles = ns * g->T;
        for (size_t s = 0; s < ns; s++) {
            wino_copy c = { g, x + (s0 + s) * g->in, p + s * g->ps, 0, parts };
            dcz_pool_run(pool, wino_copy_part, &c);
        }
        for (size_t u0 = 0; u0 < tiles; u0 += DCZ_WINO_TILES) {
            const size_t n = tiles - u0 < DCZ_WINO_TILES ? tiles - u0 : DCZ_WINO_TILES;
            if (by_tiles) {
                wino_round r = { g, u, bias, p, act, v, m, f, u0, n, vec, parts };
                dcz_pool_run(pool, wino_tiles, &r);
                continue;
            }
            wino_in(vec, g, p, u0, n, v);
            wino_job j = { g, u, v, m, n, vec, parts };
            dcz_pool_run(pool, wino_products, &j);
            wino_out(vec, g, bias, act, m, u0, n, f);
        }
        for (size_t s = 0; s < ns; s++) {
            wino_copy c = { g, f + s * ohw * g->K, y + (s0 + s) * g->out, 1, parts };
            dcz_pool_run(pool, wino_copy_part, &c);
        }
    }
}

int dcz_wino_vector(void)
{
#if DCZ_BUILD_F32_X86
    return dcz_isa_supported(DCZ_ISA_AVX512) ? 2 : dcz_isa_supported(DCZ_ISA_AVX2);
#else
    return 0;
#endif
}

int dcz_conv2d_pick_wino(const dcz_conv_geom *g)
{
    return g->in_c >= DCZ_WINO_MIN_C && g->out_c >= DCZ_WINO_MIN_C && dcz_wino_vector() && dcz_wino_fits_geom(g);
}

/* An odd plane's last row or column of 2x2 tiles computes half of them
 * for nothing (7 x 7 takes 64 outputs' work for 49): on Intel's cores the
 * shift form ran every such layer measured faster (bench/cpu-profile.md).
 * AMD's with AVX-512 (Zen 4) keep Winograd over odd planes of few channels
 * (the ResNet-style preset's 64 -> 64 over 7 x 7: the dense model 178.5
 * us a sample with it, 187.5 without; DenseNet-121's 128 -> 32: 42 against
 * 46 us), the shift form over many (ResNet-18's and ResNet-50's 512 -> 512
 * over 7 x 7: 2.86 against 2.49-2.58 ms a layer; the models at batch 8
 * 3.7% and 5.2% faster): at most WINO_ODD_AMD_CC input times output
 * channels, between the two measured. On AVX2 the shift form takes them on
 * every vendor: on an AMD EPYC (Zen 3) ResNet-18's 7 x 7 layers ran within
 * 5% either way (best of three alternated runs), and one rule keeps a
 * level's bits the same on every CPU that has it (tests/isa.sh, against
 * an emulated Haswell). On Zen 5 (family 1Ah, 512-bit vectors run whole:
 * dcz_cpu.full512) Winograd's products gained more than the shift
 * form and take the odd planes of many channels too: ResNet-18's 512 ->
 * 512 over 7 x 7 1.12-1.17 ms a layer against 1.51-1.64 (dcz bench
 * --per-layer, one thread, batch 1), the dense models, least of five
 * alternated medians, ResNet-18 0.90 of the time, ResNet-50 0.95,
 * DenseNet-121 and RegNetX-400MF within 1%. Not on Intel's, which run
 * them whole as well (dcz_cpu.full512): on one core of an Intel Xeon
 * (family 6, model 207), ResNet-18's 512 -> 512 over 7 x 7 took 2.37-2.46
 * ms a layer by Winograd against 2.08-2.25 on the shift form, the model
 * 1.04 times as long, and SqueezeNet 1.1's odd planes of few channels
 * (16 -> 64 over 55 x 55 to 64 -> 256 over 13 x 13) gained 1.5% in sum. */
#define WINO_ODD_AMD_CC ((uint64_t)1 << 16)
int dcz_conv2d_wino_rule(const dcz_conv_geom *g)
{
    const dcz_cpu *cpu = dcz_cpu_features();
    return !((g->out_h | g->out_w) & 1) ||
           (cpu->amd && dcz_wino_vector() == 2 &&
            (cpu->full512 || (uint64_t)g->in_c * g->out_c <= WINO_ODD_AMD_CC));
}
