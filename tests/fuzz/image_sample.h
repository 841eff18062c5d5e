/* image_sample.h: what the image fuzz targets (fuzz_png.c, fuzz_jpeg.c) ask
 * of every image a decoder accepts: that it converts into a sample of c
 * channels of h x w (resampled when resize) with every value in [0, 1],
 * or is refused with a status; anything else aborts, a finding.
 */
#ifndef DCZ_TESTS_FUZZ_IMAGE_SAMPLE_H
#define DCZ_TESTS_FUZZ_IMAGE_SAMPLE_H

#include <stdlib.h>

#include "train/png.h"

static void convert(const dcz_image *img, uint32_t c, uint32_t h, uint32_t w, int resize)
{
    float *x = malloc((size_t)c * h * w * sizeof *x);
    char err[256];
    if (!x) return;
    if (dcz_image_to_sample(img, c, h, w, resize, x, err, sizeof err) == DCZ_OK)
        for (size_t i = 0; i < (size_t)c * h * w; i++)
            if (!(x[i] >= 0.0f && x[i] <= 1.0f)) abort();
    free(x);
}

#endif /* DCZ_TESTS_FUZZ_IMAGE_SAMPLE_H */
