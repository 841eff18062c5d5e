/* conv_geom.h: convolution geometries for the kernel tests (float and
 * integer), built from sizes with the output size derived. Header-only,
 * so the runtime-only cross build of the tests needs nothing else.
 * Checked by the tests that use it.
 */
#ifndef DCZ_TESTS_CONV_GEOM_H
#define DCZ_TESTS_CONV_GEOM_H

#include "runtime/model.h"

/* in_c -> out_c over h x w, a kh x kw window, strides sh, sw, padding ph, pw */
static inline dcz_conv_geom conv_geom(uint32_t in_c, uint32_t out_c, uint32_t h, uint32_t w, uint32_t kh,
                               uint32_t kw, uint32_t sh, uint32_t sw, uint32_t ph, uint32_t pw)
{
    dcz_conv_geom g = { in_c, h, w, out_c, (h + 2 * ph - kh) / sh + 1, (w + 2 * pw - kw) / sw + 1,
                        kh, kw, sh, sw, ph, pw, 1 };
    return g;
}

/* the same in group groups */
static inline dcz_conv_geom conv_geom_grouped(uint32_t in_c, uint32_t out_c, uint32_t h, uint32_t w,
                                       uint32_t k, uint32_t stride, uint32_t pad, uint32_t groups)
{
    dcz_conv_geom g = conv_geom(in_c, out_c, h, w, k, k, stride, stride, pad, pad);
    g.group = groups;
    return g;
}

#endif /* DCZ_TESTS_CONV_GEOM_H */
