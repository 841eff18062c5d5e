/* wino.h: 3x3 convolutions of stride 1 by Winograd's F(2x2, 3x3)
 * (kernels_wino.c), for the runtime's dense convolutions and the
 * trainer's.
 *
 * A 3x3 convolution of stride 1, one group, C input and K output channels
 * (multiples of 16), padding ph, pw (at most 2), over H x W: per 2x2 block
 * of outputs, 16 products of C by K (dcz_gemm_f32) where im2col's holds
 * 36, between transforms of the input and the output. dcz_wino_init
 * fills the plan; dcz_wino_weights writes U (dcz_wino_weights_floats) from
 * the weights w (K, C, 3, 3), or when turned from the weights (C, K, 3, 3)
 * of the layer whose input's gradient this convolution is (turned by 180
 * degrees, channels exchanged), through tmp (16 K floats);
 * dcz_wino_conv: y (batch, K, OH, OW) = bias (NULL: none) + the
 * convolution of x (batch, C, H, W), then act (NULL or op 0: none, the
 * bits of dcz_act_one), in scratch of g->scratch floats; the AVX-512 or
 * AVX2 transforms, or their scalar reference (ref, or a machine without
 * either; dcz_wino_vector: 2 AVX-512, 1 AVX2, 0 none): the same bits. Against a direct convolution
 * each output differs by the rounding of the transforms' sums.
 * dcz_conv2d_pick_wino: the geometries it runs, on this machine, within
 * DCZ_WINO_SCRATCH_MAX floats of scratch (a sample's image and outputs as
 * pixels take it: 64 channels of 180 x 180 pass it).
 */
#ifndef DCZ_RUNTIME_CPU_F32_WINO_H
#define DCZ_RUNTIME_CPU_F32_WINO_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/shapes.h"
#include "runtime/threads.h"

/* Rounds of 64 tiles: against 96, training a tenth of an epoch at 2
 * threads (median ratio of alternated pairs), the conv-heavy CNN 0.988 and
 * 0.989, the ResNet-style preset 0.973; 48, 144 and 192 tiles took 1.020,
 * 1.010 and 1.033 on the CNN. */
#define DCZ_WINO_TILES 64
/* The runtime gives it the dense convolutions of at least DCZ_WINO_MIN_C
 * input and output channels: at one thread, alternated runs, the dense
 * ResNet-style preset's 16-channel layers took longer than on their shift
 * form, which also adds the residual as it stores (batch 1 138 -> 153
 * us), its 32- and 64-channel ones less (batch 1 121 -> 112 us, batch 64
 * 8.42 -> 7.91 ms); the dense conv-heavy CNN (32 to 128 channels) batch 1
 * 295 -> 237 us, batch 64 18.4 -> 15.2 ms. */
#define DCZ_WINO_MIN_C 32
#define DCZ_WINO_SCRATCH_MAX ((uint64_t)1 << 22)
typedef struct dcz_wino {
    size_t C, K, kp;          /* input and output channels; K rounded as B's rows are */
    size_t H, W, OH, OW, ph, pw;
    size_t in, out;           /* floats of a sample's input and output */
    size_t TH, TW, T;         /* tiles down, across and of a sample */
    size_t PH, PW, ps;        /* the image of pixels P: rows, columns, floats */
    size_t ns;                /* samples a round of the products takes at most */
    size_t vs, ms;            /* floats between V's and M's 16 blocks */
    size_t v, m, f, scratch;  /* the scratch's blocks after P, and its floats */
} dcz_wino;
void dcz_wino_init(dcz_wino *g, uint32_t C, uint32_t K, uint32_t H, uint32_t W, uint32_t ph, uint32_t pw);
/* The plan of convolution g (its channels, input and padding), and whether
 * g is one the transforms run: 3x3, stride 1, one group, channels
 * multiples of 16, padding at most 2, the scratch within
 * DCZ_WINO_SCRATCH_MAX (on any machine: dcz_conv2d_pick_wino adds the
 * runtime's channel floor and the vector transforms). */
void dcz_wino_init_geom(dcz_wino *p, const dcz_conv_geom *g);
int dcz_wino_fits_geom(const dcz_conv_geom *g);
uint64_t dcz_wino_weights_floats(const dcz_wino *g);
void dcz_wino_weights(const dcz_wino *g, const float *w, int turned, float *u, float *tmp);
void dcz_wino_conv(const dcz_wino *g, const float *u, const float *bias, const dcz_act *act, const float *x,
                   size_t batch, int ref, float *scratch, float *y);
/* dcz_wino_conv over pool's threads (NULL: the caller's alone): the
 * transposes in and out split by rows; each round of tiles split by tiles
 * (every step of a tile on one thread) where U is small, else by its 16
 * products (the transforms on the caller's thread): the same bits.
 * dcz_wino_splits: whether g is worth it (DCZ_SPLIT_MACS a sample,
 * threads.h). */
void dcz_wino_conv_pool(dcz_pool *pool, const dcz_wino *g, const float *u, const float *bias,
                        const dcz_act *act, const float *x, size_t batch, int ref, float *scratch, float *y);
int dcz_wino_splits(const dcz_wino *g);
int dcz_wino_vector(void);
int dcz_conv2d_pick_wino(const dcz_conv_geom *g);
/* Whether the plan's rules give g Winograd's where it runs (planes of even
 * height and width; on AMD's cores with AVX-512 odd ones too, of few
 * channels), else the shift form's. */
int dcz_conv2d_wino_rule(const dcz_conv_geom *g);
/* d (n, m) = s (m, n) transposed, d[c ldd + r] = s[r lds + c]: by 16 x 16
 * blocks of AVX-512 or 8 x 8 of AVX2 (partial ones by masks) where the
 * machine has it, else by scalars; nothing read or written outside the
 * two. */
void dcz_transpose_planes(const float *s, size_t lds, size_t m, size_t n, float *d, size_t ldd);

#endif /* DCZ_RUNTIME_CPU_F32_WINO_H */
