/* wino.c: the forward pass of a 3x3 convolution of stride 1 and its
 * input's gradient by Winograd's minimal filtering F(2x2, 3x3): 16
 * products of (tiles, C) by (C, K) where im2col takes one 2.25 times their
 * size (per output).
 *
 * The input's gradient is a convolution of the same kind (geom_of): at
 * stride 1 the adjoint of the layer's convolution reads dy padded by
 * 2 - p with the weights turned by 180 degrees and input and output
 * channels exchanged, and writes every pixel of dx (H + 2 (2 - p) - 2 = the
 * input's height when the output's is H + 2 p - 2). The weights' gradient
 * stays with the columns (conv.c).
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
 * product M_xi (tiles, K) = V_xi (tiles, C) U_xi (C, K) by dcz_gemm_f32:
 * 16 products of C by K per tile of 4 outputs, where im2col's product
 * holds 9 C by K per output.
 *
 * Layout. The transforms run on 16 channels a vector, so the layer's input
 * and output channels are multiples of 16, and they read and write pixels
 * whose channels are consecutive: a sample's input is transposed (16 x 16
 * blocks) into a zero-bordered image of pixels, P (PH, PW, C), the tile
 * (ty, tx) reading P's rows 2 ty .. 2 ty + 3, columns 2 tx .. 2 tx + 3;
 * its outputs go to F (OH OW, K), transposed into y's planes at the end.
 * A slot (one per thread) takes whole samples; their tiles go through the
 * products WINO_TILES at a time (the rows of the products' A), several
 * samples' together when a sample has fewer.
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
 * WINO_IN and WINO_OUT (the scalar reference, dcz_wino_forward_ref, and the
 * AVX-512 variant run the same operations, so give the same bits); against
 * a direct convolution each output differs by the rounding of the
 * transforms' sums, a few units of the last place of the inputs' and
 * weights' magnitudes (tests/unit/test_train.c bounds it as it does
 * im2col's).
 */
#include <string.h>

#include "runtime/model.h"
#include "train/internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* Tiles a round of the 16 products takes (their rows). Against 96, a
 * tenth of an epoch at 2 threads, median ratio of alternated pairs: the
 * conv-heavy CNN 0.988 and 0.989 (3 and 4 pairs), the ResNet-style preset
 * 0.973 (3); 48, 144 and 192 took 1.020, 1.010 and 1.033 on the CNN. */
#define WINO_TILES 64

typedef struct wino_geom {
    size_t C, K, kp;     /* input and output channels; K rounded as B's rows are */
    size_t H, W, OH, OW, ph, pw;   /* input and output planes, padding */
    size_t in, out;      /* floats of a sample's input and output */
    size_t TH, TW, T;    /* tiles down, across and of a sample */
    size_t PH, PW, ps;   /* P's rows, columns and floats */
    size_t ns;           /* samples a round takes at most (1 when T > WINO_TILES) */
    size_t vs, ms;       /* floats between V's and M's 16 blocks */
    size_t v, m, f, floats;   /* a slot's blocks: after P, in floats from its start */
} wino_geom;

static size_t up16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

/* The convolution the transforms run: the layer's (grad 0), or the one
 * that takes dy to dx (grad 1): dy's K planes in, padded by 2 - p, the
 * weights turned by 180 degrees with input and output channels exchanged,
 * dx's C planes out (at stride 1, the adjoint of the layer's). */
static wino_geom geom_of(const dcz_tlayer *l, int grad)
{
    wino_geom g;
    g.C = (size_t)(grad ? l->out_c : l->in_c);
    g.K = (size_t)(grad ? l->in_c : l->out_c);
    g.H = (size_t)(grad ? l->out_h : l->in_h);
    g.W = (size_t)(grad ? l->out_w : l->in_w);
    g.OH = (size_t)(grad ? l->in_h : l->out_h);
    g.OW = (size_t)(grad ? l->in_w : l->out_w);
    g.ph = (size_t)(grad ? 2 - l->ph : l->ph);
    g.pw = (size_t)(grad ? 2 - l->pw : l->pw);
    g.in = g.C * g.H * g.W;
    g.out = g.K * g.OH * g.OW;
    g.kp = dcz_gemm_ldb(g.K);
    g.TH = (g.OH + 1) / 2;
    g.TW = (g.OW + 1) / 2;
    g.T = g.TH * g.TW;
    g.PH = 2 * g.TH + 2;
    g.PW = 2 * g.TW + 2;
    g.ps = g.PH * g.PW * g.C;
    g.ns = g.T >= WINO_TILES ? 1 : WINO_TILES / g.T;
    const size_t ohw = g.OH * g.OW;
    /* a line more than the blocks: 16 blocks a multiple of 4 KB apart
     * would share a set of the first-level cache */
    g.vs = WINO_TILES * g.C + 16;
    g.ms = WINO_TILES * g.kp + 16;
    g.v = up16(g.ns * g.ps);
    g.m = g.v + 16 * g.vs;
    g.f = g.m + 16 * g.ms + DCZ_GEMM_PAD;
    g.floats = up16(g.f + g.ns * ohw * g.K);
    return g;
}

/* A slot's scratch at most, in floats, for either pass: a sample's image
 * and outputs as pixels take it, where the columns' tiles take 2^17 floats
 * whatever the image; past it (an image of 64 channels over 180 x 180)
 * the columns run the layer. */
#define WINO_SLOT_MAX ((size_t)1 << 22)

int dcz_wino_fits(const dcz_tlayer *l)
{
    if (!(l->kh == 3 && l->kw == 3 && l->sh == 1 && l->sw == 1 && dcz_tlayer_groups(l) == 1 &&
          l->in_c % 16 == 0 && l->out_c % 16 == 0 && l->ph <= 2 && l->pw <= 2 && l->out_h > 0 && l->out_w > 0))
        return 0;
    const wino_geom f = geom_of(l, 0), b = geom_of(l, 1);
    return f.floats <= WINO_SLOT_MAX && b.floats <= WINO_SLOT_MAX;
}

/* U (16, C, kp): U_xi[c][k] = (G g(k, c) G^T)[xi], the padding 0. */
static size_t shared_floats(const wino_geom *g)
{
    return up16(16 * g->C * g->kp);
}

static size_t work_floats_of(const wino_geom *g)
{
    return shared_floats(g) + (size_t)dcz_train_threads() * g->floats;
}

size_t dcz_wino_work_floats(const dcz_tlayer *l)
{
    const wino_geom f = geom_of(l, 0), b = geom_of(l, 1);
    const size_t a = work_floats_of(&f), c = work_floats_of(&b);
    return a > c ? a : c;
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

/* U from the layer's weights (out_c, in_c, 3, 3) (grad: turned and
 * exchanged, geom_of), input channel by input
 * channel through tmp (16 K floats): U's 16 blocks lie C kp floats apart,
 * a multiple of 4 KB for many layers, and written in place 16 rows at a
 * time they evicted each other from the first-level cache (the transform
 * took 6% of a training run). */
static void weights_transform(const dcz_tlayer *l, const wino_geom *g, int grad, float *u, float *tmp)
{
    memset(u, 0, shared_floats(g) * sizeof *u);
    for (size_t c = 0; c < g->C; c++) {
        for (size_t k = 0; k < g->K; k++) {
            float w[9];   /* weight (k, c) of the convolution run */
            if (grad)
                for (int t = 0; t < 9; t++) w[t] = l->w[(c * g->K + k) * 9 + 8 - t];
            else
                memcpy(w, l->w + (k * g->C + c) * 9, sizeof w);
            for (int i = 0; i < 4; i++) {   /* row i of G g, then times G^T */
                const float a0 = i == 0 ? w[0] : i == 3 ? w[6] : 0.5f * (w[0] + (i == 1 ? w[3] : -w[3]) + w[6]);
                const float a1 = i == 0 ? w[1] : i == 3 ? w[7] : 0.5f * (w[1] + (i == 1 ? w[4] : -w[4]) + w[7]);
                const float a2 = i == 0 ? w[2] : i == 3 ? w[8] : 0.5f * (w[2] + (i == 1 ? w[5] : -w[5]) + w[8]);
                float *e = tmp + (size_t)4 * i * g->K + k;
                e[0] = a0;
                e[g->K] = 0.5f * (a0 + a1 + a2);
                e[2 * g->K] = 0.5f * (a0 - a1 + a2);
                e[3 * g->K] = a2;
            }
        }
        for (int xi = 0; xi < 16; xi++)
            memcpy(u + ((size_t)xi * g->C + c) * g->kp, tmp + (size_t)xi * g->K, g->K * sizeof *u);
    }
}

/* ---- one slot's samples ---- */

typedef struct wino_job {
    const dcz_tlayer *l;
    const float *x, *bias;   /* bias NULL: none */
    float *y, *work;
    wino_geom g;
    size_t slots;
    int batch, vec;
} wino_job;

/* P of sample x (C, H, W) at p, its border left as it is (0): each row of
 * x's planes transposed into P's row. */
static void image_in(const wino_geom *g, const float *x, float *p)
{
    for (size_t r = 0; r < g->H; r++)
        dcz_transpose_planes(x + r * g->W, g->H * g->W, g->C, g->W, p + ((r + g->ph) * g->PW + g->pw) * g->C, g->C);
}

/* The tile u of a round (sample u / T of the round's first, in P's of
 * ps floats each): its top left in P. */
static const float *tile_in(const wino_geom *g, const float *p, size_t u)
{
    const size_t s = u / g->T, t = u % g->T;
    return p + s * g->ps + (2 * (t / g->TW) * g->PW + 2 * (t % g->TW)) * g->C;
}

static void in_ref(const wino_geom *g, const float *p, size_t u0, size_t n, float *v)
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
static void out_ref(const wino_geom *g, const float *bias, const float *m, size_t u0, size_t n, float *f)
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
                    if (oy + a < g->OH && ox + c < g->OW) f[(s * ohw + (oy + a) * g->OW + ox + c) * g->K + k] = y[a][c];
        }
    }
}

#if defined(__x86_64__)
#define VADD(a, b) _mm512_add_ps(a, b)
#define VSUB(a, b) _mm512_sub_ps(a, b)

__attribute__((target("avx512f")))
static void in__avx512(const wino_geom *g, const float *p, size_t u0, size_t n, float *v)
{
    for (size_t u = 0; u < n; u++) {
        const float *q = tile_in(g, p, u0 + u);
        for (size_t c = 0; c < g->C; c += 16) {
            __m512 d[4][4], e[16];
            for (int i = 0; i < 4; i++)
                for (int k = 0; k < 4; k++) d[i][k] = _mm512_loadu_ps(q + ((size_t)i * g->PW + k) * g->C + c);
            WINO_IN(__m512, VADD, VSUB, d, e);
            for (int xi = 0; xi < 16; xi++) _mm512_storeu_ps(v + (size_t)xi * g->vs + u * g->C + c, e[xi]);
        }
    }
}

__attribute__((target("avx512f")))
static void out__avx512(const wino_geom *g, const float *bias, const float *m, size_t u0, size_t n, float *f)
{
    const size_t ohw = g->OH * g->OW;
    for (size_t u = 0; u < n; u++) {
        const size_t s = (u0 + u) / g->T, t = (u0 + u) % g->T, oy = 2 * (t / g->TW), ox = 2 * (t % g->TW);
        const int down = oy + 1 < g->OH, across = ox + 1 < g->OW;
        float *o = f + (s * ohw + oy * g->OW + ox) * g->K;
        for (size_t k = 0; k < g->K; k += 16) {
            __m512 e[16], y[2][2];
            for (int xi = 0; xi < 16; xi++) e[xi] = _mm512_loadu_ps(m + (size_t)xi * g->ms + u * g->kp + k);
            const __m512 b = bias ? _mm512_loadu_ps(bias + k) : _mm512_setzero_ps();
            WINO_OUT(__m512, VADD, VSUB, e, b, y);
            _mm512_storeu_ps(o + k, y[0][0]);
            if (across) _mm512_storeu_ps(o + g->K + k, y[0][1]);
            if (down) {
                _mm512_storeu_ps(o + g->OW * g->K + k, y[1][0]);
                if (across) _mm512_storeu_ps(o + (g->OW + 1) * g->K + k, y[1][1]);
            }
        }
    }
}
#endif

/* Samples [n0, n1) of the batch by the slot whose scratch is at p. */
static void wino_samples(const wino_job *j, size_t n0, size_t n1, float *p)
{
    const wino_geom *g = &j->g;
    const float *u = j->work;
    float *v = p + g->v, *m = p + g->m, *f = p + g->f;
    const size_t ohw = g->OH * g->OW;
    memset(p, 0, g->ns * g->ps * sizeof *p);   /* P's borders */
    for (size_t s0 = n0; s0 < n1; s0 += g->ns) {
        const size_t ns = n1 - s0 < g->ns ? n1 - s0 : g->ns, tiles = ns * g->T;
        for (size_t s = 0; s < ns; s++) image_in(g, j->x + (s0 + s) * g->in, p + s * g->ps);
        for (size_t u0 = 0; u0 < tiles; u0 += WINO_TILES) {
            const size_t n = tiles - u0 < WINO_TILES ? tiles - u0 : WINO_TILES;
#if defined(__x86_64__)
            if (j->vec) in__avx512(g, p, u0, n, v);
            else
#endif
                in_ref(g, p, u0, n, v);
            for (int xi = 0; xi < 16; xi++) {   /* M_xi (n, K) = V_xi (n, C) U_xi (C, K) */
                const float *a = v + (size_t)xi * g->vs, *b = u + (size_t)xi * g->C * g->kp;
                float *c = m + (size_t)xi * g->ms;
                if (j->vec) dcz_gemm_f32(n, g->K, (uint32_t)g->C, a, g->C, b, g->kp, NULL, NULL, c, g->kp);
                else dcz_gemm_f32_ref(n, g->K, (uint32_t)g->C, a, g->C, b, g->kp, NULL, NULL, c, g->kp);
            }
#if defined(__x86_64__)
            if (j->vec) out__avx512(g, j->bias, m, u0, n, f);
            else
#endif
                out_ref(g, j->bias, m, u0, n, f);
        }
        for (size_t s = 0; s < ns; s++)
            dcz_transpose_planes(f + s * ohw * g->K, g->K, ohw, g->K, j->y + (s0 + s) * g->out, ohw);
    }
}

static void wino_slots(void *ctx, size_t k0, size_t k1)
{
    const wino_job *j = ctx;
    for (size_t k = k0; k < k1; k++)
        wino_samples(j, (size_t)j->batch * k / j->slots, (size_t)j->batch * (k + 1) / j->slots,
                     j->work + shared_floats(&j->g) + k * j->g.floats);
}

static int wino_run(const dcz_tlayer *l, int grad, const float *x, float *y, int batch, float *work,
                    size_t work_floats, int vec)
{
    wino_job j = { .l = l, .x = x, .bias = grad ? NULL : l->b, .y = y, .work = work, .g = geom_of(l, grad),
                   .batch = batch, .vec = vec };
    const size_t shared = shared_floats(&j.g);
    size_t s = work_floats > shared ? (work_floats - shared) / j.g.floats : 0;
    const size_t t = (size_t)dcz_train_threads();
    if (s > t) s = t;
    if (s > (size_t)batch) s = (size_t)batch;
    if (s == 0 || batch <= 0) return 0;
    j.slots = s;
    weights_transform(l, &j.g, grad, work, work + shared);   /* the first slot's scratch, unused yet */
    dcz_train_par(j.slots, 1, wino_slots, &j);
    return 1;
}

int dcz_wino_vector(void)
{
#if defined(__x86_64__)
    return __builtin_cpu_supports("avx512f");
#else
    return 0;
#endif
}

int dcz_wino_forward(const dcz_tlayer *l, const float *x, float *y, int batch, float *work, size_t work_floats)
{
    return wino_run(l, 0, x, y, batch, work, work_floats, dcz_wino_vector());
}

int dcz_wino_forward_ref(const dcz_tlayer *l, const float *x, float *y, int batch, float *work,
                         size_t work_floats)
{
    return wino_run(l, 0, x, y, batch, work, work_floats, 0);
}

int dcz_wino_input_grad(const dcz_tlayer *l, const float *dy, float *dx, int batch, float *work,
                        size_t work_floats)
{
    return wino_run(l, 1, dy, dx, batch, work, work_floats, dcz_wino_vector());
}

int dcz_wino_input_grad_ref(const dcz_tlayer *l, const float *dy, float *dx, int batch, float *work,
                            size_t work_floats)
{
    return wino_run(l, 1, dy, dx, batch, work, work_floats, 0);
}
