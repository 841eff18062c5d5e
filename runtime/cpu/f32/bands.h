/* bands.h: a pointwise convolution and the depthwise one after it, run
 * together by bands of output rows (kernels_bands.c).
 *
 * An inverted residual block (MobileNetV2, EfficientNet) widens its input
 * by a 1 x 1 convolution to six times the channels, then runs a 3 x 3 or
 * 5 x 5 depthwise convolution over that wide tensor, which nothing else
 * reads. Over 112 x 112 or 56 x 56 planes the wide tensor (4.8 MB in
 * MobileNetV2's second block) outgrows the second-level cache: written
 * whole by the first layer, it is read back from the third level or from
 * memory by the second. Run together, the first layer computes only the
 * input rows the next band of the second's output rows reads, into a ring
 * of rows that stays in the cache, and the second reads them there: the
 * wide tensor is never written whole. Each output is computed as the two
 * layers compute it apart, so the bits are theirs. Dense layers and
 * compressed ones (the first on its shift form, the second by its taps)
 * alike.
 */
#ifndef DCZ_RUNTIME_CPU_F32_BANDS_H
#define DCZ_RUNTIME_CPU_F32_BANDS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/model.h"
#include "runtime/threads.h"

/* The plan of a pair, from the depthwise layer's geometry: output rows a
 * band (a multiple of the depthwise kernel's calls), input rows a
 * channel's ring holds, and the rows the first layer computes at a time
 * start on a multiple of `align` (so that its product reads no float past
 * its input's last). */
typedef struct dcz_bands {
    uint32_t rows, ring, align;
} dcz_bands;

/* The floats of scratch one thread of the pair needs where depthwise
 * layer d (geometry alone) may run by bands on this CPU, else 0: what the
 * loader reserves before it knows which layers pair. */
uint64_t dcz_conv2d_bands_floats(const dcz_conv_geom *d);
/* Whether pointwise convolution pw (1 x 1 at stride 1, no padding: dense
 * weights, or its shift form pf) and depthwise convolution d on the shift
 * form f, which reads pw's output, run by bands on this CPU. */
int dcz_conv2d_bands_takes(const dcz_conv_geom *pw, const dcz_shift *pf, const dcz_conv_geom *d, const dcz_shift *f);
/* The plan of a pair dcz_conv2d_bands_takes takes. */
void dcz_conv2d_bands_of(const dcz_conv_geom *d, dcz_bands *p);
/* y = d's convolution (bias db, then dact) of pw's (dense weights w, or
 * where w is NULL its shift form pf; bias pb, then pact) of x, by bands:
 * the bits of the two run apart (dcz_conv2d_dense_im2col_act or
 * dcz_conv2d_shift_act, then dcz_conv2d_shift_act). A sample's
 * bands are split over pool's threads (NULL: the caller's alone), each
 * taking its slice of `slice` floats of the scratch (at least
 * dcz_conv2d_bands_floats(d) each): the same bits at any thread count. */
void dcz_conv2d_bands_pool(dcz_pool *pool, const dcz_conv_geom *pw, const float *w, const dcz_shift *pf,
                           const float *pb, const dcz_act *pact, const dcz_conv_geom *d, const dcz_shift *f,
                           const float *db, const dcz_act *dact, const float *x, size_t batch, float *scratch,
                           uint64_t slice, float *y);

#endif /* DCZ_RUNTIME_CPU_F32_BANDS_H */
