/* augment.c: the random variations of training samples torchvision trains
 * ImageNet networks with (RandomResizedCrop, RandomHorizontalFlip): the
 * crop box, the flip, and the generator each sample draws them from.
 *
 * Reproducible whatever the thread count or the batch a sample falls in:
 * sample s of an epoch draws from a generator of its own, seeded by a hash
 * of (the epoch's key, s), never from one shared generator consumed in the
 * order threads reach the samples. The epoch's key comes from the run's
 * seeded generator (dcz_train_epoch), so the same --seed gives the same
 * variations, another epoch other ones.
 *
 * The box follows torchvision's RandomResizedCrop.get_params with its
 * defaults, scale (0.08, 1) and ratio (3/4, 4/3): up to 10 tries of an area
 * fraction uniform in scale and an aspect ratio (width / height) uniform in
 * log(ratio), width and height rounded half to even (Python's round); the
 * first box that fits is placed uniformly; after 10 misses, the center crop
 * of the image's own ratio clamped into the range. The draws are dcz's
 * (xoshiro256**), not torch's: the same distribution, not the same boxes.
 *
 * Tested by tests/unit/test_png.c (boxes inside the image, area and ratio in
 * range, the fallback; flips; one thread and two; seeds and epochs).
 */
#include <math.h>

#include "train/train.h"

#define SCALE_LO 0.08
#define SCALE_HI 1.0
#define TRIES 10

void dcz_augment_rng(uint64_t key, size_t sample, dcz_rng *r)
{
    dcz_rng_seed(r, dcz_rng_mix64(key ^ dcz_rng_mix64((uint64_t)sample + 0x9e3779b97f4a7c15ULL)));
}

/* uniform in [lo, hi): 53 random bits */
static double uniform(dcz_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(dcz_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0));
}

dcz_box dcz_augment_crop_box(uint32_t w, uint32_t h, dcz_rng *r)
{
    const double area = (double)w * (double)h, lr_lo = log(3.0 / 4.0), lr_hi = log(4.0 / 3.0);
    for (int t = 0; t < TRIES; t++) {
        const double target = area * uniform(r, SCALE_LO, SCALE_HI), ratio = exp(uniform(r, lr_lo, lr_hi));
        /* rint: to nearest, halves to even, as Python's round */
        const double bw = rint(sqrt(target * ratio)), bh = rint(sqrt(target / ratio));
        if (bw > 0 && bw <= w && bh > 0 && bh <= h) {
            dcz_box b = { 0, 0, (uint32_t)bw, (uint32_t)bh };
            b.y = dcz_rng_below(r, h - b.h + 1);
            b.x = dcz_rng_below(r, w - b.w + 1);
            return b;
        }
    }
    /* the center, of the image's own ratio clamped into [3/4, 4/3] */
    dcz_box b = { 0, 0, w, h };
    const double in_ratio = (double)w / (double)h;
    if (in_ratio < 3.0 / 4.0) b.h = (uint32_t)rint(w / (3.0 / 4.0));
    else if (in_ratio > 4.0 / 3.0) b.w = (uint32_t)rint(h * (4.0 / 3.0));
    if (b.h > h) b.h = h;   /* round() cannot pass the side (w / (3/4) < h there); kept as a guard */
    if (b.w > w) b.w = w;
    b.y = (h - b.h) / 2;
    b.x = (w - b.w) / 2;
    return b;
}

void dcz_augment_flip(float *x, uint32_t c, uint32_t h, uint32_t w)
{
    if (w < 2) return;
    for (size_t row = 0; row < (size_t)c * h; row++) {
        float *p = x + row * w;
        for (uint32_t i = 0, j = w - 1; i < j; i++, j--) {
            const float t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
    }
}

int dcz_augment_draw_flip(dcz_rng *r)
{
    return dcz_rng_uniform(r) < 0.5f;
}
