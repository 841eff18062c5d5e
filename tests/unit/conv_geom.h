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

/* Case i of the grid the convolution tests share: kernels 1, 3 and 5,
 * strides 1 and 2, padding 0 and 1 (below the kernel), images 7 x 9 and
 * 11 x 5, 3 -> 4 channels, in that nesting order. 0 past the last case. */
static inline int conv_grid(size_t i, dcz_conv_geom *g)
{
    static const uint32_t kernels[] = { 1, 3, 5 }, strides[] = { 1, 2 }, pads[] = { 0, 1 };
    static const uint32_t sizes[][2] = { { 7, 9 }, { 11, 5 } };
    size_t n = 0;
    for (size_t ki = 0; ki < 3; ki++)
        for (size_t si = 0; si < 2; si++)
            for (size_t pi = 0; pi < 2; pi++)
                for (size_t zi = 0; zi < 2; zi++) {
                    const uint32_t k = kernels[ki], st = strides[si], pad = pads[pi];
                    if (pad >= k || n++ != i) continue;
                    *g = conv_geom(3, 4, sizes[zi][0], sizes[zi][1], k, k, st, st, pad, pad);
                    return 1;
                }
    return 0;
}

/* The cases beyond the grid, into g (room for CONV_EXTRA): grouped and
 * depthwise convolutions, non-square windows, mixed strides and paddings,
 * a kernel as large as the padded image, a 1 x 1 image, rows of
 * 16 x 5 x 5 = 400 columns, where fillers occur at 1% density, planes
 * wide and tall enough for several register tiles of 16-lane vectors, and
 * depthwise ones for each path of the depthwise kernels (8 channels or
 * more: with the channels in the lanes), a 1 x 1 one over planes of
 * whole vectors, whose dense product reads the input as it lies, and
 * depthwise ones over planes wider than two vectors, with the channels
 * in the lanes among them, and depthwise 1 x 1 ones. */
#define CONV_EXTRA 47
static inline void conv_extra(dcz_conv_geom *g)
{
    const dcz_conv_geom e[CONV_EXTRA] = {
        conv_geom_grouped(4, 6, 7, 9, 3, 1, 1, 2),    /* grouped */
        conv_geom_grouped(6, 6, 8, 8, 3, 1, 1, 6),    /* depthwise */
        conv_geom_grouped(4, 8, 9, 7, 3, 2, 1, 4),    /* depthwise, two filters each, strided */
        conv_geom_grouped(6, 6, 5, 5, 1, 1, 0, 3),    /* grouped 1x1 */
        conv_geom(2, 3, 7, 9, 3, 5, 2, 1, 1, 2),
        conv_geom(2, 3, 9, 7, 5, 1, 1, 2, 4, 0),
        conv_geom(3, 2, 3, 3, 5, 5, 1, 1, 1, 1),
        conv_geom(1, 5, 1, 1, 3, 3, 1, 1, 1, 1),
        conv_geom(16, 5, 11, 9, 5, 5, 1, 1, 2, 2),
        conv_geom(2, 3, 6, 21, 3, 3, 1, 1, 1, 1),     /* rows of 21: two vectors of 8 and 5 over */
        conv_geom(2, 3, 17, 30, 3, 3, 1, 1, 1, 1),    /* 17 x 30: 34 vectors of 16 a plane */
        conv_geom(3, 2, 29, 27, 3, 3, 2, 2, 1, 1),    /* strided, odd sizes: 15 x 14 of 15 x 14 */
        conv_geom_grouped(5, 5, 4, 4, 3, 1, 1, 5),    /* depthwise planes of one vector */
        conv_geom_grouped(3, 3, 5, 6, 3, 2, 1, 3),    /* the same strided: 30 cells to 9 */
        conv_geom_grouped(4, 4, 14, 13, 3, 2, 1, 4),  /* depthwise by rows, strided, odd width */
        conv_geom_grouped(3, 3, 28, 28, 3, 1, 1, 3),  /* depthwise rows of two vectors */
        conv_geom_grouped(2, 2, 19, 23, 5, 2, 2, 2),  /* 5 x 5, strided: 10 x 12 */
        conv_geom_grouped(3, 3, 9, 20, 3, 1, 0, 3),   /* unpadded: 7 x 18 */
        conv_geom_grouped(2, 2, 40, 11, 3, 1, 1, 2),  /* 40 rows: 5 calls of 8 */
        conv_geom_grouped(4, 4, 7, 7, 3, 1, 1, 4),    /* depthwise 7 x 7 in registers: 4 vectors */
        conv_geom_grouped(2, 2, 6, 5, 3, 1, 1, 2),    /* the same over 30 cells: 2 vectors */
        conv_geom_grouped(2, 2, 14, 10, 3, 1, 1, 2),  /* depthwise rows 7 at a time */
        conv_geom_grouped(3, 3, 7, 7, 3, 2, 1, 3),    /* by rows, 4 at a time, strided: 4 x 4 */
        conv_geom_grouped(2, 2, 9, 32, 3, 2, 1, 2),   /* strided rows of 16 whose window spans 33 columns */
        conv_geom_grouped(2, 2, 5, 40, 3, 2, 1, 2),   /* strided rows of 20: three vectors of 8 */
        conv_geom_grouped(2, 2, 6, 61, 3, 2, 1, 2),   /* strided rows of 31: four vectors of 8 */
        conv_geom(3, 4, 14, 14, 3, 3, 1, 1, 1, 1),    /* 14 x 14: split rows of 16 cells, not 15 */
        conv_geom(3, 4, 28, 27, 3, 3, 2, 2, 1, 1),    /* the same at stride 2 */
        conv_geom_grouped(11, 11, 7, 7, 3, 1, 1, 11), /* channels in lanes: a block of 8 and one of 3 */
        conv_geom_grouped(9, 9, 10, 13, 3, 2, 1, 9),  /* the same strided, odd width: 5 x 7 */
        conv_geom_grouped(8, 8, 4, 4, 3, 1, 1, 8),    /* rows of 4: whole stores into the next row */
        conv_geom_grouped(8, 8, 2, 2, 3, 1, 1, 8),    /* a row of 2 on the plane's last: masked */
        conv_geom_grouped(10, 10, 9, 17, 5, 1, 2, 10), /* 5 x 5 windows: a load a tap */
        conv_geom(5, 3, 4, 8, 1, 1, 1, 1, 0, 0),      /* 1 x 1 over 32 cells: its patches the input itself */
        /* depthwise over large planes, by rows in runs of two vectors */
        conv_geom_grouped(2, 2, 70, 75, 3, 1, 1, 2),  /* 70 rows of 75: runs of 2, 2 and 1 vectors */
        conv_geom_grouped(2, 2, 23, 113, 3, 2, 1, 2), /* strided: rows of 57, two runs of two */
        conv_geom_grouped(2, 2, 17, 90, 5, 2, 2, 2),  /* 5 x 5 strided: rows of 45 */
        conv_geom_grouped(2, 2, 12, 50, 5, 1, 2, 2),  /* 5 x 5: rows of 50, the last run's vector of 2 */
        conv_geom_grouped(2, 2, 11, 13, 5, 1, 2, 2),  /* 5 x 5: rows of one vector, 11 rows (8 a call) */
        conv_geom_grouped(2, 2, 9, 80, 3, 2, 1, 2),   /* strided rows of 40: three vectors, the last run back one */
        /* channels in lanes over wide planes, in bands of window rows */
        conv_geom_grouped(9, 9, 12, 70, 3, 1, 1, 9),  /* rows of 70, blocks of 8 and 1 */
        conv_geom_grouped(8, 8, 13, 67, 5, 2, 2, 8),  /* 5 x 5 strided: rows of 34, five rows a window */
        conv_geom_grouped(12, 12, 9, 41, 3, 2, 0, 12), /* strided, unpadded: rows of 20, every row inside */
        conv_geom_grouped(8, 8, 40, 120, 3, 1, 1, 8), /* 40 rows in bands of 14; rows of 15 whole vectors */
        /* depthwise 1 x 1 (a batch norm), each plane one run of vectors */
        conv_geom_grouped(6, 6, 14, 14, 1, 1, 0, 6),  /* 196 cells: 12 vectors of 16 and 4 over */
        conv_geom_grouped(9, 9, 7, 9, 1, 1, 0, 9),    /* 63 cells, 9 channels */
        conv_geom_grouped(3, 3, 56, 57, 1, 1, 0, 3),  /* 3192 cells: whole vectors of 8 */
    };
    for (int i = 0; i < CONV_EXTRA; i++) g[i] = e[i];
}

#endif /* DCZ_TESTS_CONV_GEOM_H */
