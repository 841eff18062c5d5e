/* png.h: PNG and JPEG images for dcz, read with libpng and libjpeg: one
 * image into model input, and folders of images as a dataset.
 *
 * Pixels are scaled as the IDX loader scales Fashion-MNIST: value / maximum
 * (255 for 8-bit, 65535 for 16-bit), so an 8-bit gray PNG of a test image
 * gives exactly the floats of its IDX sample. Palette images are expanded to
 * RGB, transparency (alpha or tRNS) is composited over black, 1-, 2- and
 * 4-bit gray is widened to 8 bits. Colour becomes gray by the ITU-R BT.601
 * luma (299 R + 587 G + 114 B) / 1000, rounded, in integers (so an RGB
 * image whose channels are equal gives exactly its gray value); gray
 * becomes colour by repeating it.
 *
 * A folder dataset streams (data_png.c): it keeps its file list, not its
 * samples, and each read of a sample reads, checks and decodes its file
 * again, through one conversion from decoded pixels to floats: the
 * model's preprocessing, or for training samples its random variant
 * (dcz_augment).
 *
 * Tested by tests/unit/test_png.c; dcz_png_decode and dcz_image_to_sample
 * are fuzzed by tests/fuzz/fuzz_png.c, dcz_jpeg_decode by
 * tests/fuzz/fuzz_jpeg.c.
 */
#ifndef DCZ_TRAIN_PNG_H
#define DCZ_TRAIN_PNG_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"
#include "train/train.h"

#define DCZ_PNG_MAX_VALUES ((uint64_t)1 << 24)   /* width x height x channels */

/* A decoded image: h rows of w pixels of c interleaved channels (1 gray,
 * 2 gray + alpha, 3 RGB, 4 RGBA), each 0..maxval. */
typedef struct dcz_image {
    uint32_t w, h, c;
    uint32_t maxval;          /* 255 or 65535 */
    uint16_t *pix;            /* (h, w, c), owned */
} dcz_image;

/* Nonzero when buf starts with the 8-byte PNG signature. */
int dcz_png_sniff(const void *buf, size_t len);

/* Decodes a whole PNG file held in memory. DCZ_ERR_DATA with a one-line
 * reason in err for anything that is not a complete, valid PNG (bad
 * signature, truncation, checksum or zlib errors, an image of more than
 * DCZ_PNG_MAX_VALUES values); DCZ_ERR_NOMEM. *img is zeroed on failure. */
dcz_status dcz_png_decode(const void *buf, size_t len, dcz_image *img, char *err, size_t errlen);

/* JPEG (jpeg.c, libjpeg): gray JPEGs decode to c 1, colour ones (YCbCr,
 * RGB) to c 3, maxval 255; CMYK, 12-bit and corrupt or truncated data give
 * DCZ_ERR_DATA with a one-line reason in err, as do images of more than
 * DCZ_PNG_MAX_VALUES values (checked before any pixel buffer). */
int dcz_jpeg_sniff(const void *buf, size_t len);
dcz_status dcz_jpeg_decode(const void *buf, size_t len, dcz_image *img, char *err, size_t errlen);
/* A PNG or a JPEG by its first bytes; DCZ_ERR_DATA for neither. */
dcz_status dcz_image_decode(const void *buf, size_t len, dcz_image *img, char *err, size_t errlen);

/* Releases the pixels and zeroes img. NULL-safe. */
void dcz_image_free(dcz_image *img);

/* Nonzero when the image has no colour: one gray channel, or colour
 * channels equal in every pixel. */
int dcz_image_is_gray(const dcz_image *img);

/* Converts img into one sample of c channels (1 or 3) of h x w floats in
 * [0, 1], planar (C, H, W): alpha composited over black, channels converted
 * (see above), values / maxval. When the image is not h x w, resize set
 * resamples it (bilinear, widened to average every source pixel when
 * shrinking); otherwise DCZ_ERR_SHAPE with the two sizes in err. out holds
 * c * h * w floats. DCZ_ERR_ARG for another c or an empty size. */
dcz_status dcz_image_to_sample(const dcz_image *img, uint32_t c, uint32_t h, uint32_t w, int resize, float *out,
                               char *err, size_t errlen);

/* img made into one input of (p->channels, h, w) floats by preprocessing p
 * (prep.c, docs/FORMAT.md "PREPROCESS section"): channels converted as
 * dcz_image_to_sample converts them, the shorter side resized as PIL does,
 * the center crop, (v / 255 - mean) / std. DCZ_ERR_SHAPE with a reason in
 * err when the result is not h x w (or the image is smaller than the
 * crop), DCZ_ERR_ARG, DCZ_ERR_NOMEM. */
dcz_status dcz_prep_apply(const dcz_preprocess *p, const dcz_image *img, uint32_t h, uint32_t w, float *out,
                          char *err, size_t errlen);

/* The box of img cropped and resized to exactly h x w, then normalized,
 * as torchvision's F.resized_crop on a PIL image then ToTensor and
 * Normalize (the random crop of training, DCZ_AUG_CROP): channels
 * converted as dcz_image_to_sample converts them to p->channels, the box
 * cut out, resized by the filter of dcz_prep_apply (each axis whose size
 * changes, the box's edges the filter's), (v / 255 - mean) / std; p's
 * resize and crop are not used. DCZ_ERR_ARG for a box not inside the image
 * (or empty), DCZ_ERR_SHAPE for an output of more than DCZ_PNG_MAX_VALUES
 * pixels, DCZ_ERR_NOMEM. */
dcz_status dcz_prep_box(const dcz_preprocess *p, const dcz_image *img, dcz_box box, uint32_t h, uint32_t w,
                        float *out, char *err, size_t errlen);

/* The size (*ow, *oh) a w x h image has after preprocessing p: resized,
 * then cropped. DCZ_ERR_SHAPE with a reason in err when it is smaller than
 * the crop. */
dcz_status dcz_prep_size(const dcz_preprocess *p, uint32_t w, uint32_t h, uint32_t *ow, uint32_t *oh, char *err,
                         size_t errlen);

/* ImageNet's per-channel statistics, as torchvision's networks were
 * trained with (transforms.Normalize) */
#define DCZ_IMAGENET_MEAN { 0.485f, 0.456f, 0.406f }
#define DCZ_IMAGENET_STD { 0.229f, 0.224f, 0.225f }

/* The sample shape (c, h, w) an image gives for a model input of the
 * given shape (one sample; rank 1 to 3): (C, H, W) with C 1 or 3; (H, W)
 * gray; (D) a flat input of D = h w gray or 3 h w colour values of an image
 * of its size, or with resize, a square of D = s s (gray) or 3 s s values.
 * DCZ_ERR_SHAPE or DCZ_ERR_UNSUPPORTED with a reason in err. */
dcz_status dcz_image_input_shape(const dcz_image *img, uint32_t rank, const uint32_t *dims, int resize,
                                 uint32_t *c, uint32_t *h, uint32_t *w, char *err, size_t errlen);

/* Loads one split of a folder dataset: ROOT/train/CLASS/NAME.png (or .jpg,
 * .jpeg) or ROOT/test/CLASS/NAME.png. Classes are the folders of ROOT/train (of
 * ROOT/test when there is no ROOT/train) in byte order of their names,
 * labelled 0, 1, ...; a split may lack some classes but may not add any.
 * Names starting with '.' are skipped. Every other entry of a class folder
 * must be a .png, .jpg or .jpeg file (any case) that decodes as what it
 * holds (PNG or JPEG, whatever its name says), and every image must have
 * the size of the first; a class folder without images, a file that is not
 * a PNG, a corrupt image, a different size or more than 256 classes give
 * DCZ_ERR_DATA with a one-line reason (a missing split folder DCZ_ERR_IO).
 * Samples are gray (c 1) when every image is, else RGB (c 3); values as
 * dcz_image_to_sample.
 *
 * The dataset streams: out->x is NULL, out->files lists the files (their
 * names, and the size and CRC32 of the bytes of each as checked here),
 * out->y holds the labels; dcz_dataset_samples decodes samples from the
 * files when they are read, refusing a file whose bytes are no longer
 * those checked. The load reads and decodes every file once (split over
 * the trainer's threads, dcz_train_par) to check it and keeps nothing of
 * its pixels, so the memory it takes is that of the list, a few dozen
 * bytes a file. The hash is a CRC32 over, file by file in order, its name
 * from ROOT (SPLIT/CLASS/NAME, NUL included) and its bytes, then the
 * labels: what a load that held the samples hashed. A list that would take
 * more than max_bytes, or a file of more than max_bytes (read whole only
 * when at most that), gives DCZ_ERR_LIMIT. With preprocessing prep (NULL:
 * none), images of any size become samples of prep->channels of their size
 * after it (dcz_prep_size: one for all, else DCZ_ERR_DATA), converted by
 * dcz_prep_apply. dcz_data_load calls this for a directory holding train/
 * or test/. */
dcz_status dcz_png_folder_load(const char *root, int split, uint64_t max_bytes, const dcz_preprocess *prep,
                               dcz_dataset *out, char *err, size_t errlen);

/* Nonzero when name ends in .png, .jpg or .jpeg (any case) after something:
 * the files of an image folder. */
int dcz_image_name(const char *name);

/* Nonzero when dir holds a train or test subdirectory (an image folder dataset). */
int dcz_png_folder_is(const char *dir);

#endif /* DCZ_TRAIN_PNG_H */
