/* data.c: datasets for training: MNIST-style IDX files (gzip or plain),
 * and the entry point that also finds folders of PNG images (data_png.c);
 * what every dataset offers whichever its form: reading samples (varied
 * for training, augment.c), holding a part out, freeing.
 *
 * An IDX file is big-endian: two zero bytes, a type byte (0x08 = unsigned
 * bytes, the only type accepted), a rank byte, one 32-bit size per
 * dimension, then the data. Images are rank 3 (count, rows, cols), labels
 * rank 1 (count). dcz_idx_parse trusts nothing in the buffers: every size is
 * checked against the buffer length in 64-bit arithmetic before it is used,
 * so a damaged or hostile file gives DCZ_ERR_DATA and a one-line reason.
 *
 * Files are read whole through zlib's gzread, which reads gzip and plain
 * files alike, then parsed from memory.
 * Tested by tests/unit/test_idx.c (streaming sets by tests/unit/test_png.c);
 * dcz_idx_parse is fuzzed by tests/fuzz/fuzz_idx.c.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <zlib.h>

#include "train/internal.h"
#include "train/png.h"

#define FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#define IDX_TYPE_UBYTE 0x08
#define IDX_MAX_SAMPLE ((uint64_t)1 << 24)     /* floats in one sample */

static uint32_t be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
           ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

uint32_t dcz_train_crc32(uint32_t crc, const uint8_t *p, size_t len)
{
    while (len > 0) {
        uInt chunk = len > (1u << 30) ? (1u << 30) : (uInt)len;
        crc = (uint32_t)crc32(crc, p, chunk);
        p += chunk;
        len -= chunk;
    }
    return crc;
}

/* Checks the 4-byte magic of an IDX buffer: ubyte data of the given rank. */
static dcz_status idx_magic(const uint8_t *p, size_t len, unsigned rank,
                            const char *what, char *err, size_t errlen)
{
    if (len < 4) {
        dcz_train_err(err, errlen, "%s: %zu bytes, too short for an IDX header", what, len);
        return DCZ_ERR_DATA;
    }
    if (p[0] != 0 || p[1] != 0) {
        dcz_train_err(err, errlen, "%s: not an IDX file (bad magic %02x %02x)", what, p[0], p[1]);
        return DCZ_ERR_DATA;
    }
    if (p[2] != IDX_TYPE_UBYTE) {
        dcz_train_err(err, errlen, "%s: IDX element type 0x%02x unsupported (only 0x08, unsigned bytes)",
                      what, p[2]);
        return DCZ_ERR_DATA;
    }
    if (p[3] != rank) {
        dcz_train_err(err, errlen, "%s: IDX rank %u, expected %u", what, p[3], rank);
        return DCZ_ERR_DATA;
    }
    if (len < 4 + 4 * (size_t)rank) {
        dcz_train_err(err, errlen, "%s: IDX header truncated (%zu bytes)", what, len);
        return DCZ_ERR_DATA;
    }
    return DCZ_OK;
}

dcz_status dcz_idx_parse(const uint8_t *img, size_t img_len,
                         const uint8_t *lbl, size_t lbl_len,
                         dcz_dataset *out, char *err, size_t errlen)
{
    if (!out) return DCZ_ERR_ARG;
    memset(out, 0, sizeof *out);
    if ((!img && img_len) || (!lbl && lbl_len)) {
        dcz_train_err(err, errlen, "idx: NULL buffer");
        return DCZ_ERR_ARG;
    }
    dcz_status st = idx_magic(img, img_len, 3, "images", err, errlen);
    if (st != DCZ_OK) return st;
    st = idx_magic(lbl, lbl_len, 1, "labels", err, errlen);
    if (st != DCZ_OK) return st;

    uint32_t n = be32(img + 4), h = be32(img + 8), w = be32(img + 12);
    uint32_t nl = be32(lbl + 4);
    if (n == 0) {
        dcz_train_err(err, errlen, "images: count is 0");
        return DCZ_ERR_DATA;
    }
    if (h == 0 || w == 0) {
        dcz_train_err(err, errlen, "images: zero dimension (%u x %u)", h, w);
        return DCZ_ERR_DATA;
    }
    if (nl != n) {
        dcz_train_err(err, errlen, "count mismatch: %u images, %u labels", n, nl);
        return DCZ_ERR_DATA;
    }
    uint64_t sample = (uint64_t)h * w;   /* < 2^64: both factors < 2^32 */
    if (sample > IDX_MAX_SAMPLE) {
        dcz_train_err(err, errlen, "images: sample of %u x %u exceeds %llu values",
                      h, w, (unsigned long long)IDX_MAX_SAMPLE);
        return DCZ_ERR_DATA;
    }
    uint64_t need = 16 + (uint64_t)n * sample;   /* <= 16 + 2^32 * 2^24 */
    if ((uint64_t)img_len != need) {
        dcz_train_err(err, errlen, "images: %zu bytes, header (%u x %u x %u) needs %llu%s",
                      img_len, n, h, w, (unsigned long long)need,
                      (uint64_t)img_len < need ? " (truncated)" : " (trailing data)");
        return DCZ_ERR_DATA;
    }
    need = 8 + (uint64_t)n;
    if ((uint64_t)lbl_len != need) {
        dcz_train_err(err, errlen, "labels: %zu bytes, header (%u labels) needs %llu%s",
                      lbl_len, n, (unsigned long long)need,
                      (uint64_t)lbl_len < need ? " (truncated)" : " (trailing data)");
        return DCZ_ERR_DATA;
    }
    /* the buffer holds every value, so the floats need 4 x its length */
    uint64_t total = (uint64_t)n * sample;
    if (total > SIZE_MAX / sizeof(float)) {
        dcz_train_err(err, errlen, "images: %llu values do not fit in memory",
                      (unsigned long long)total);
        return DCZ_ERR_NOMEM;
    }
    float *x = malloc((size_t)total * sizeof(float));   /* (n, h*w) */
    uint8_t *y = malloc(n);                              /* (n) */
    if (!x || !y) {
        free(x);
        free(y);
        dcz_train_err(err, errlen, "out of memory for %u samples of %u x %u", n, h, w);
        return DCZ_ERR_NOMEM;
    }
    float scale[256];   /* correctly rounded v / 255 */
    for (int v = 0; v < 256; v++) scale[v] = (float)v / 255.0f;
    const uint8_t *pix = img + 16;
    for (size_t i = 0; i < (size_t)total; i++) x[i] = scale[pix[i]];
    unsigned maxl = 0;
    for (uint32_t i = 0; i < n; i++) {
        y[i] = lbl[8 + i];
        if (y[i] > maxl) maxl = y[i];
    }
    out->n = n;
    out->c = 1;
    out->h = h;
    out->w = w;
    out->classes = maxl + 1;
    out->x = x;
    out->y = y;
    out->hash = dcz_train_crc32(dcz_train_crc32((uint32_t)crc32(0, Z_NULL, 0), img, img_len), lbl, lbl_len);
    return DCZ_OK;
}

void dcz_dataset_free(dcz_dataset *d)
{
    if (!d) return;
    free(d->x);
    free(d->y);
    free(d->pick);
    dcz_image_files_release(d->files);
    memset(d, 0, sizeof *d);
}

dcz_status dcz_dataset_samples(const dcz_dataset *d, const size_t *idx, size_t first, size_t n, float *x,
                               char *err, size_t errlen)
{
    return dcz_dataset_samples_aug(d, idx, first, n, NULL, x, err, errlen);
}

dcz_status dcz_dataset_samples_aug(const dcz_dataset *d, const size_t *idx, size_t first, size_t n,
                                   const dcz_augment *aug, float *x, char *err, size_t errlen)
{
    if (!d || (n && !x) || !dcz_dataset_ready(d) || first > SIZE_MAX - n) return DCZ_ERR_ARG;
    if (aug && aug->what & ~DCZ_AUG_ALL) return DCZ_ERR_ARG;
    if (aug && !aug->what) aug = NULL;
    if (aug && aug->what & DCZ_AUG_CROP && !d->files) {
        dcz_train_err(err, errlen, "random crops need the images of an image folder; in-memory (IDX) samples "
                      "have one size and are not cropped");
        return DCZ_ERR_UNSUPPORTED;
    }
    if (idx) {
        for (size_t j = 0; j < n; j++)
            if (idx[first + j] >= d->n) {
                dcz_train_err(err, errlen, "sample %zu of a dataset of %zu", idx[first + j], d->n);
                return DCZ_ERR_ARG;
            }
    } else if (first + n > d->n) {
        dcz_train_err(err, errlen, "samples %zu to %zu of a dataset of %zu", first, first + n, d->n);
        return DCZ_ERR_ARG;
    }
    if (n == 0) return DCZ_OK;
    if (d->files) return dcz_image_files_samples(d, idx, first, n, aug, x, err, errlen);
    const size_t per = (size_t)d->c * d->h * d->w;
    if (!idx) memcpy(x, d->x + first * per, n * per * sizeof *x);
    else
        for (size_t j = 0; j < n; j++) memcpy(x + j * per, d->x + idx[first + j] * per, per * sizeof *x);
    for (size_t j = 0; aug && j < n; j++) {   /* flips only (crops were refused) */
        dcz_rng r;
        dcz_augment_rng(aug->key, idx ? idx[first + j] : first + j, &r);
        if (dcz_augment_draw_flip(&r)) dcz_augment_flip(x + j * per, d->c, d->h, d->w);
    }
    return DCZ_OK;
}

const char *dcz_dataset_error(const dcz_dataset *d)
{
    return d && d->files ? dcz_image_files_error(d->files) : "";
}

/* The samples idx[0 .. n) of d into out (n of them, same shape): a copy of
 * an in-memory set's, a list of a streaming set's files. */
static dcz_status gather(const dcz_dataset *d, const uint32_t *idx, size_t n, dcz_dataset *out)
{
    const size_t per = (size_t)d->c * d->h * d->w;
    memset(out, 0, sizeof *out);
    out->n = n;
    out->c = d->c;
    out->h = d->h;
    out->w = d->w;
    out->classes = d->classes;
    out->y = malloc(n ? n : 1);
    if (d->files) out->pick = malloc((n ? n : 1) * sizeof *out->pick);
    else out->x = malloc((n ? n : 1) * per * sizeof *out->x);
    if (!out->y || (!out->x && !out->pick)) {
        dcz_dataset_free(out);
        return DCZ_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) out->y[i] = d->y[idx[i]];
    if (d->files) {
        for (size_t i = 0; i < n; i++) out->pick[i] = d->pick ? d->pick[idx[i]] : idx[i];
        dcz_image_files_retain(d->files);
        out->files = d->files;
        /* provenance: the files held (names, the CRC32 of their bytes) */
        out->hash = dcz_image_files_part_hash(d->files, out->pick, out->y, n);
        return DCZ_OK;
    }
    for (size_t i = 0; i < n; i++) memcpy(out->x + i * per, d->x + (size_t)idx[i] * per, per * sizeof *out->x);
    /* provenance: the samples as held, then the seed's choice */
    out->hash = dcz_train_crc32(dcz_train_crc32((uint32_t)crc32(0, Z_NULL, 0), (const uint8_t *)out->x,
                                                n * per * sizeof *out->x), out->y, n);
    return DCZ_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

dcz_status dcz_dataset_holdout(const dcz_dataset *d, size_t n, uint64_t seed, dcz_dataset *held,
                               dcz_dataset *rest)
{
    if (!d || !held || !dcz_dataset_ready(d) || n == 0 || n >= d->n || d->n > UINT32_MAX) return DCZ_ERR_ARG;
    uint32_t *perm = malloc(d->n * sizeof *perm);
    if (!perm) return DCZ_ERR_NOMEM;
    for (size_t i = 0; i < d->n; i++) perm[i] = (uint32_t)i;
    dcz_rng r;
    dcz_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {   /* the first n places of a Fisher-Yates shuffle */
        const size_t j = i + dcz_rng_below(&r, (uint32_t)(d->n - i));
        const uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    /* each part keeps the data's order */
    qsort(perm, n, sizeof *perm, cmp_u32);
    qsort(perm + n, d->n - n, sizeof *perm, cmp_u32);
    dcz_status s = gather(d, perm, n, held);
    if (s == DCZ_OK && rest && (s = gather(d, perm + n, d->n - n, rest)) != DCZ_OK) dcz_dataset_free(held);
    free(perm);
    return s;
}

dcz_status dcz_train_read_file(const char *path, uint64_t max, uint8_t **buf_out, size_t *len_out,
                               char *err, size_t errlen)
{
    *buf_out = NULL;
    *len_out = 0;
    errno = 0;
    gzFile f = gzopen(path, "rb");
    if (!f) {
        dcz_train_err(err, errlen, "cannot open %s: %s", path,
                      errno ? strerror(errno) : "out of memory");
        return DCZ_ERR_IO;
    }
    dcz_status st = DCZ_OK;
    size_t cap = 1 << 20, len = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            dcz_train_err(err, errlen, "out of memory reading %s", path);
            st = DCZ_ERR_NOMEM;
            goto cleanup;
        }
        if (len == cap) {
            if (cap > SIZE_MAX / 2) {
                dcz_train_err(err, errlen, "out of memory reading %s", path);
                st = DCZ_ERR_NOMEM;
                goto cleanup;
            }
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) free(buf);
            buf = nb;
            cap *= 2;
            continue;
        }
        size_t want = cap - len;
        if (max - len < want) want = (size_t)(max - len) + 1;   /* one byte past max tells */
        if (want > (1u << 30)) want = 1u << 30;
        int got = gzread(f, buf + len, (unsigned)want);
        if (got <= 0) break;   /* end of data; errors are reported by gzerror below */
        len += (size_t)got;
        if (len > max) {
            dcz_train_err(err, errlen, "%s holds more than %llu MiB (decompressed), over the limit on a "
                          "dataset's memory", path, (unsigned long long)(max >> 20));
            st = DCZ_ERR_LIMIT;
            goto cleanup;
        }
    }
    int errnum = Z_OK;
    const char *zmsg = gzerror(f, &errnum);
    if (errnum == Z_ERRNO) {
        dcz_train_err(err, errlen, "cannot read %s: %s", path, strerror(errno));
        st = DCZ_ERR_IO;
    } else if (errnum != Z_OK) {
        dcz_train_err(err, errlen, "%s: damaged gzip data (%s)", path, zmsg ? zmsg : "?");
        st = DCZ_ERR_DATA;
    }
cleanup:
    /* gzclose also reports a stream that ended mid-way */
    if (gzclose(f) != Z_OK && st == DCZ_OK) {
        dcz_train_err(err, errlen, "%s: damaged or truncated gzip data", path);
        st = DCZ_ERR_DATA;
    }
    if (st != DCZ_OK) {
        free(buf);
        return st;
    }
    *buf_out = buf;
    *len_out = len;
    return DCZ_OK;
}

static int is_file(const char *path)
{
    struct stat s;
    return stat(path, &s) == 0 && S_ISREG(s.st_mode);
}

/* Finds dir/base or dir/base.gz (the plain file first). */
/* Nonzero when dir holds a folder that holds an image file: class folders
 * (ROOT/CLASS/NAME.png or .jpg) without the train and test level. */
static int has_class_folders(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char sub[4096];
        if (snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) >= (int)sizeof sub) continue;
        DIR *c = opendir(sub);
        if (!c) continue;
        struct dirent *f;
        while (!found && (f = readdir(c))) found = dcz_image_name(f->d_name);
        closedir(c);
    }
    closedir(d);
    return found;
}

static dcz_status find_file(const char *dir, const char *base, int debian, char *path,
                            size_t pathlen, char *err, size_t errlen)
{
    int n = snprintf(path, pathlen, "%s/%s", dir, base);
    if (n < 0 || (size_t)n + 3 >= pathlen) {
        dcz_train_err(err, errlen, "data path too long: %s", dir);
        return DCZ_ERR_ARG;
    }
    if (is_file(path)) return DCZ_OK;
    memcpy(path + n, ".gz", 4);
    if (is_file(path)) return DCZ_OK;
    if (debian)
        dcz_train_err(err, errlen, "no %s/%s[.gz]: install Debian's dataset-fashion-mnist "
                      "(apt-get install dataset-fashion-mnist)", dir, base);
    else if (has_class_folders(dir))
        dcz_train_err(err, errlen, "%s holds class folders of images but no train/ and test/ folders: "
                      "an image dataset is ROOT/train/CLASS/*.png (or .jpg) and ROOT/test/CLASS/*.png", dir);
    else
        dcz_train_err(err, errlen, "no %s/%s[.gz]: --data takes fashion-mnist, a folder of IDX files "
                      "({train,t10k}-{images-idx3,labels-idx1}-ubyte, each optionally .gz) or image folders "
                      "ROOT/{train,test}/CLASS/*.png (or .jpg)", dir, base);
    return DCZ_ERR_IO;
}

dcz_status dcz_data_load(const char *spec, int split, dcz_dataset *out,
                         char *err, size_t errlen)
{
    return dcz_data_load_max(spec, split, DCZ_DATA_DEFAULT_MAX, out, err, errlen);
}

dcz_status dcz_data_load_max(const char *spec, int split, uint64_t max_bytes, dcz_dataset *out,
                             char *err, size_t errlen)
{
    return dcz_data_load_prep(spec, split, max_bytes, NULL, out, err, errlen);
}

/* IDX samples (one size, in memory) through preprocessing p: normalized;
 * a resize or crop that would change their size is refused. */
static dcz_status idx_prep(const dcz_preprocess *p, dcz_dataset *d, char *err, size_t errlen)
{
    uint32_t ow, oh;
    dcz_status s = dcz_prep_size(p, d->w, d->h, &ow, &oh, err, errlen);
    if (s == DCZ_OK && (ow != d->w || oh != d->h || p->channels != d->c)) {
        dcz_train_err(err, errlen, "the model's preprocessing makes %ux%u images of %u channel%s of the IDX "
                      "samples, which are %ux%u of %u", ow, oh, p->channels, p->channels == 1 ? "" : "s", d->w, d->h,
                      d->c);
        s = DCZ_ERR_SHAPE;
    }
    if (s != DCZ_OK) {
        dcz_dataset_free(d);
        return s;
    }
    const size_t plane = (size_t)d->h * d->w;
    for (size_t i = 0; i < d->n; i++)
        for (uint32_t c = 0; c < d->c; c++) {
            float *x = d->x + (i * d->c + c) * plane;
            for (size_t k = 0; k < plane; k++) x[k] = (x[k] - p->mean[c]) / p->std[c];
        }
    return DCZ_OK;
}

dcz_status dcz_data_load_prep(const char *spec, int split, uint64_t max_bytes, const dcz_preprocess *prep,
                              dcz_dataset *out, char *err, size_t errlen)
{
    if (!out) return DCZ_ERR_ARG;
    memset(out, 0, sizeof *out);
    if (prep && (prep->channels != 1 && prep->channels != 3)) {
        dcz_train_err(err, errlen, "preprocessing of %u channels (1 or 3)", prep->channels);
        return DCZ_ERR_ARG;
    }
    for (uint32_t c = 0; prep && c < prep->channels; c++)
        if (!(prep->std[c] > 0.0f)) {
            dcz_train_err(err, errlen, "preprocessing with a std of %g (not > 0)", prep->std[c]);
            return DCZ_ERR_ARG;
        }
    if (!spec || !*spec) {
        dcz_train_err(err, errlen, "no dataset given");
        return DCZ_ERR_ARG;
    }
    if (split != DCZ_SPLIT_TRAIN && split != DCZ_SPLIT_TEST && split != DCZ_SPLIT_VAL) {
        dcz_train_err(err, errlen, "unknown split %d", split);
        return DCZ_ERR_ARG;
    }
    int debian = strcmp(spec, "fashion-mnist") == 0;
    const char *dir = debian ? FASHION_MNIST_DIR : spec;
    struct stat s;
    if (stat(dir, &s) != 0 || !S_ISDIR(s.st_mode)) {
        if (debian)
            dcz_train_err(err, errlen, "Fashion-MNIST not found in %s: install Debian's "
                          "dataset-fashion-mnist (apt-get install dataset-fashion-mnist)", dir);
        else
            dcz_train_err(err, errlen, "no dataset directory %s: --data takes fashion-mnist (the built-in "
                          "name of Debian's dataset-fashion-mnist), a folder of IDX files or PNG folders "
                          "ROOT/{train,test}/CLASS/", dir);
        return DCZ_ERR_IO;
    }
    if (!debian && dcz_png_folder_is(dir)) return dcz_png_folder_load(dir, split, max_bytes, prep, out, err, errlen);
    if (split == DCZ_SPLIT_VAL) {
        dcz_train_err(err, errlen, "%s holds IDX files, which have no validation split (an image folder may: "
                      "ROOT/val/CLASS/NAME.png)", spec);
        return DCZ_ERR_ARG;
    }
    const char *prefix = split == DCZ_SPLIT_TRAIN ? "train" : "t10k";
    char base[64], img_path[4096], lbl_path[4096];
    snprintf(base, sizeof base, "%s-images-idx3-ubyte", prefix);
    dcz_status st = find_file(dir, base, debian, img_path, sizeof img_path, err, errlen);
    if (st != DCZ_OK) return st;
    snprintf(base, sizeof base, "%s-labels-idx1-ubyte", prefix);
    st = find_file(dir, base, debian, lbl_path, sizeof lbl_path, err, errlen);
    if (st != DCZ_OK) return st;

    uint8_t *img = NULL, *lbl = NULL;
    size_t img_len = 0, lbl_len = 0;
    /* a byte of an image becomes a float: images of max_bytes / 4 bytes and
     * their headers; a label per image */
    st = dcz_train_read_file(img_path, max_bytes / sizeof(float) + 16, &img, &img_len, err, errlen);
    if (st == DCZ_ERR_LIMIT)
        dcz_train_err(err, errlen, "%s: its images would take more than %.1f MiB as floats, over the limit on a "
                      "dataset's memory", img_path, (double)max_bytes / 1048576.0);
    if (st != DCZ_OK) goto cleanup;
    st = dcz_train_read_file(lbl_path, max_bytes / sizeof(float) + 8, &lbl, &lbl_len, err, errlen);
    if (st != DCZ_OK) goto cleanup;
    char why[256];
    why[0] = '\0';
    st = dcz_idx_parse(img, img_len, lbl, lbl_len, out, why, sizeof why);
    if (st != DCZ_OK)
        dcz_train_err(err, errlen, "%s (%s split): %s", dir, prefix, why);
    if (st == DCZ_OK && prep) st = idx_prep(prep, out, err, errlen);
cleanup:
    free(img);
    free(lbl);
    return st;
}
