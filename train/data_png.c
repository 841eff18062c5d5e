/* data_png.c: a dataset from folders of PNG and JPEG images,
 * ROOT/{train,test}/CLASS/NAME.{png,jpg,jpeg} (rules in png.h,
 * dcz_png_folder_load), which streams: the dataset keeps the list of its
 * files, never their pixels, and decodes a sample whenever it is read.
 *
 * The load lists the files (class order, then name order), then reads and
 * decodes each once to check it (a PNG or JPEG, decodable, the size of the
 * first) and learn whether any has colour, keeping of each its size and
 * the CRC32 of its bytes, and nothing of its pixels. A read
 * (dcz_dataset_samples) reads the files again, refuses one whose bytes are
 * not those checked (size and CRC32), decodes it and converts it
 * (image_sample, the one place a decoded image becomes a sample: through
 * the model's preprocessing, or for training batches its random variant,
 * augment.c, each sample drawing from a generator of its own).
 *
 * Both passes split the files over the trainer's threads (dcz_train_par);
 * each file's result is written to its own place, and of several failures
 * the first in order is reported, so nothing depends on the thread count.
 * The hash of a split is a CRC32 over each file's name (from ROOT, NUL
 * included) and bytes, then the labels, put together from the per-file
 * CRCs with zlib's crc32_combine: the same value as one CRC over them read
 * in order.
 *
 * Tested by tests/unit/test_png.c (layouts, every refusal, the samples
 * against decoding the files directly, holdout parts, files changed or
 * deleted after the load, one thread against two) and tests/cli/interop.sh
 * (training and evaluating on a PNG folder).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <zlib.h>

#include "train/internal.h"
#include "train/png.h"

#define MAX_CLASSES 256
#define ERR_LEN 512
#define PATH_LEN 8192

/* The list's memory per file besides its name: where the name starts, its
 * label, its size and CRC32 as checked. */
#define PER_FILE (sizeof(size_t) + 1 + sizeof(uint64_t) + sizeof(uint32_t))

struct dcz_image_files {
    pthread_mutex_t lock;   /* refs and err */
    size_t refs;
    size_t n;               /* files */
    char *dir;              /* ROOT/train or ROOT/test */
    char *sub;              /* "train", "test" or "val": a name in the hash is sub/CLASS/NAME */
    char *names;            /* the n names CLASS/NAME, each ending in NUL */
    size_t *at;             /* (n) where file i's name starts in names */
    uint64_t *len;          /* (n) its bytes as the load read them */
    uint32_t *crc;          /* (n) the CRC32 of those bytes */
    uint32_t c, h, w;       /* the sample shape */
    int has_prep;           /* images become samples through prep (any size), else as they are */
    dcz_preprocess prep;
    char err[ERR_LEN];      /* the last failure of a read, "" for none */
};

typedef struct names {
    char **v;
    size_t n, cap;
} names;

static void names_free(names *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

static int names_push(names *s, const char *name)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        char **nv = realloc(s->v, cap * sizeof *nv);
        if (!nv) return -1;
        s->v = nv;
        s->cap = cap;
    }
    size_t len = strlen(name);
    if (!(s->v[s->n] = malloc(len + 1))) return -1;
    memcpy(s->v[s->n++], name, len + 1);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_dir(const char *path)
{
    struct stat s;
    return stat(path, &s) == 0 && S_ISDIR(s.st_mode);
}

/* The folder of a split under ROOT. */
static const char *split_name(int split_id)
{
    return split_id == DCZ_SPLIT_TRAIN ? "train" : split_id == DCZ_SPLIT_VAL ? "val" : "test";
}

int dcz_data_has_val(const char *spec)
{
    char p[4096];
    const int n = snprintf(p, sizeof p, "%s/val", spec);
    return strcmp(spec, "fashion-mnist") != 0 && dcz_png_folder_is(spec) && n > 0 && (size_t)n < sizeof p &&
           is_dir(p);
}

int dcz_png_folder_is(const char *dir)
{
    char p[4096];
    int n = snprintf(p, sizeof p, "%s/train", dir);
    if (n > 0 && (size_t)n < sizeof p && is_dir(p)) return 1;
    n = snprintf(p, sizeof p, "%s/test", dir);
    return n > 0 && (size_t)n < sizeof p && is_dir(p);
}

int dcz_image_name(const char *name)
{
    static const char *const ext[] = { ".png", ".jpg", ".jpeg" };
    const size_t len = strlen(name);
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
        const size_t n = strlen(ext[i]);
        if (len > n && strcasecmp(name + len - n, ext[i]) == 0) return 1;
    }
    return 0;
}

/* The entries of dir not starting with '.', sorted; dirs_only keeps
 * directories and refuses anything else (class level), otherwise every
 * entry must be a regular image file (dcz_image_name). */
static dcz_status list_dir(const char *dir, int dirs_only, names *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    DIR *d = opendir(dir);
    if (!d) {
        dcz_train_err(err, errlen, "cannot open folder %s: %s", dir, strerror(errno));
        return DCZ_ERR_IO;
    }
    dcz_status st = DCZ_OK;
    struct dirent *e;
    char path[4096];
    while (st == DCZ_OK && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        int n = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat s;
        if (n < 0 || (size_t)n >= sizeof path) {
            dcz_train_err(err, errlen, "path too long: %s/%s", dir, e->d_name);
            st = DCZ_ERR_DATA;
        } else if (stat(path, &s) != 0) {
            dcz_train_err(err, errlen, "cannot read %s: %s", path, strerror(errno));
            st = DCZ_ERR_IO;
        } else if (dirs_only && !S_ISDIR(s.st_mode)) {
            dcz_train_err(err, errlen, "%s is not a class folder (expected only folders of images here)", path);
            st = DCZ_ERR_DATA;
        } else if (!dirs_only) {
            if (!S_ISREG(s.st_mode) || !dcz_image_name(e->d_name)) {
                dcz_train_err(err, errlen, "%s is not an image file (a class folder holds .png, .jpg and .jpeg "
                              "images only)", path);
                st = DCZ_ERR_DATA;
            }
        }
        if (st == DCZ_OK && names_push(out, e->d_name) != 0) st = DCZ_ERR_NOMEM;
    }
    closedir(d);
    if (st != DCZ_OK) {
        names_free(out);
        return st;
    }
    if (out->n) qsort(out->v, out->n, sizeof *out->v, cmp_names);
    return DCZ_OK;
}


/* ---- the file list --------------------------------------------------------------- */

/* The files of a split as they are listed: names CLASS/NAME one after the
 * other, where each starts, and the labels; bytes counts the memory the
 * list will take as a dataset's (PER_FILE a file besides its name). */
typedef struct file_list {
    char *names;
    size_t used, room;
    size_t *at;
    uint8_t *label;
    size_t n, cap;
    uint64_t max, bytes;
} file_list;

static void list_free(file_list *l)
{
    free(l->names);
    free(l->at);
    free(l->label);
    memset(l, 0, sizeof *l);
}

/* Appends CLASS/NAME with its label; DCZ_ERR_LIMIT when the list would take
 * more than l->max bytes. */
static dcz_status list_push(file_list *l, const char *cls, const char *name, uint8_t label)
{
    const size_t a = strlen(cls), b = strlen(name), need = a + b + 2;
    l->bytes += need + PER_FILE;
    if (l->bytes > l->max) return DCZ_ERR_LIMIT;
    if (l->n == l->cap) {
        const size_t cap = l->cap ? l->cap * 2 : 256;
        size_t *at = realloc(l->at, cap * sizeof *at);
        if (!at) return DCZ_ERR_NOMEM;
        l->at = at;
        uint8_t *lab = realloc(l->label, cap);
        if (!lab) return DCZ_ERR_NOMEM;
        l->label = lab;
        l->cap = cap;
    }
    if (l->room - l->used < need) {
        size_t room = l->room ? l->room : 4096;
        while (room - l->used < need) room *= 2;
        char *nn = realloc(l->names, room);
        if (!nn) return DCZ_ERR_NOMEM;
        l->names = nn;
        l->room = room;
    }
    char *p = l->names + l->used;
    memcpy(p, cls, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    l->at[l->n] = l->used;
    l->label[l->n++] = label;
    l->used += need;
    return DCZ_OK;
}

/* The class list of root, and the files of the split, in class order then
 * name order. */
static dcz_status list_split(const char *root, int split_id, names *classes, file_list *files, char *err,
                             size_t errlen)
{
    char dir[4096], cdir[4096];
    const char *sub = split_name(split_id);
    /* classes from train/, or test/ when there is no train/ */
    snprintf(dir, sizeof dir, "%s/train", root);
    const int from_train = is_dir(dir);
    if (!from_train) snprintf(dir, sizeof dir, "%s/test", root);
    dcz_status st = list_dir(dir, 1, classes, err, errlen);
    if (st != DCZ_OK) return st;
    if (classes->n == 0 || classes->n > MAX_CLASSES) {
        dcz_train_err(err, errlen, "%s holds %zu class folders (1 to %d)", dir, classes->n, MAX_CLASSES);
        names_free(classes);
        return DCZ_ERR_DATA;
    }
    /* the folders that define the classes must be sound whichever split is
     * loaded: each holds image files and nothing else */
    if (from_train != (split_id == DCZ_SPLIT_TRAIN)) {
        for (size_t c = 0; c < classes->n && st == DCZ_OK; c++) {
            names imgs;
            const int len = snprintf(cdir, sizeof cdir, "%s/%s", dir, classes->v[c]);
            if (len < 0 || (size_t)len >= sizeof cdir) {
                dcz_train_err(err, errlen, "path too long: %s/%s", dir, classes->v[c]);
                st = DCZ_ERR_DATA;
                break;
            }
            if ((st = list_dir(cdir, 0, &imgs, err, errlen)) != DCZ_OK) break;
            if (imgs.n == 0) {
                dcz_train_err(err, errlen, "class folder %s holds no images", cdir);
                st = DCZ_ERR_DATA;
            }
            names_free(&imgs);
        }
        if (st != DCZ_OK) {
            names_free(classes);
            return st;
        }
    }
    int n = snprintf(dir, sizeof dir, "%s/%s", root, sub);
    if (n < 0 || (size_t)n >= sizeof dir || !is_dir(dir)) {
        dcz_train_err(err, errlen, "no folder %s/%s (an image dataset holds ROOT/train/CLASS/NAME.png (or .jpg) and "
                      "ROOT/test/CLASS/NAME.png)", root, sub);
        names_free(classes);
        return DCZ_ERR_IO;
    }
    names here;
    if ((st = list_dir(dir, 1, &here, err, errlen)) != DCZ_OK) {
        names_free(classes);
        return st;
    }
    for (size_t i = 0; i < here.n && st == DCZ_OK; i++)
        if (!bsearch(&here.v[i], classes->v, classes->n, sizeof *classes->v, cmp_names)) {
            dcz_train_err(err, errlen, "%s/%s: class '%s' is not among the classes of %s/train", dir, here.v[i],
                          here.v[i], root);
            st = DCZ_ERR_DATA;
        }
    for (size_t c = 0; c < classes->n && st == DCZ_OK; c++) {
        if (!bsearch(&classes->v[c], here.v, here.n, sizeof *here.v, cmp_names)) continue;
        n = snprintf(cdir, sizeof cdir, "%s/%s", dir, classes->v[c]);
        if (n < 0 || (size_t)n >= sizeof cdir) { st = DCZ_ERR_DATA; break; }
        names imgs;
        if ((st = list_dir(cdir, 0, &imgs, err, errlen)) != DCZ_OK) break;
        if (imgs.n == 0) {
            dcz_train_err(err, errlen, "class folder %s holds no images", cdir);
            st = DCZ_ERR_DATA;
        }
        for (size_t i = 0; i < imgs.n && st == DCZ_OK; i++) {
            st = list_push(files, classes->v[c], imgs.v[i], (uint8_t)c);
            if (st == DCZ_ERR_LIMIT)
                dcz_train_err(err, errlen, "%s: the list of its files takes more than %.1f MiB (%zu files listed so "
                              "far), over the limit on a dataset's memory", dir, (double)files->max / 1048576.0,
                              files->n + 1);
        }
        names_free(&imgs);
    }
    names_free(&here);
    if (st == DCZ_OK && files->n == 0) {
        dcz_train_err(err, errlen, "%s holds no images", dir);
        st = DCZ_ERR_DATA;
    }
    if (st != DCZ_OK) {
        names_free(classes);
        return st;
    }
    /* the list is kept as long as the dataset: no room to spare */
    char *nn = realloc(files->names, files->used);
    size_t *at = realloc(files->at, files->n * sizeof *at);
    uint8_t *lab = realloc(files->label, files->n);
    if (nn) files->names = nn;
    if (at) files->at = at;
    if (lab) files->label = lab;
    return DCZ_OK;
}

/* ---- the files of a streaming set -------------------------------------------------- */

static void files_free(dcz_image_files *f)
{
    pthread_mutex_destroy(&f->lock);
    free(f->dir);
    free(f->sub);
    free(f->names);
    free(f->at);
    free(f->len);
    free(f->crc);
    free(f);
}

void dcz_image_files_retain(dcz_image_files *f)
{
    pthread_mutex_lock(&f->lock);
    f->refs++;
    pthread_mutex_unlock(&f->lock);
}

void dcz_image_files_release(dcz_image_files *f)
{
    if (!f) return;
    pthread_mutex_lock(&f->lock);
    const size_t left = --f->refs;
    pthread_mutex_unlock(&f->lock);
    if (left == 0) files_free(f);
}

const char *dcz_image_files_error(dcz_image_files *f)
{
    return f ? f->err : "";
}

/* The path of file i, ROOT/SPLIT/CLASS/NAME (shorter than PATH_LEN: both
 * parts were paths of at most 4095 bytes when listed). */
static void file_path(const dcz_image_files *f, size_t i, char *path)
{
    snprintf(path, PATH_LEN, "%s/%s", f->dir, f->names + f->at[i]);
}

/* crc followed by file i's name from ROOT, SPLIT/CLASS/NAME, NUL included. */
static uint32_t name_hash(const dcz_image_files *f, uint32_t crc, size_t i)
{
    const char *name = f->names + f->at[i];
    crc = dcz_train_crc32(crc, (const uint8_t *)f->sub, strlen(f->sub));
    crc = dcz_train_crc32(crc, (const uint8_t *)"/", 1);
    return dcz_train_crc32(crc, (const uint8_t *)name, strlen(name) + 1);
}

uint32_t dcz_image_files_part_hash(const dcz_image_files *f, const uint32_t *pick, const uint8_t *y, size_t n)
{
    uint32_t crc = (uint32_t)crc32(0, Z_NULL, 0);
    for (size_t k = 0; k < n; k++) {
        const uint32_t v = f->crc[pick[k]];
        const uint8_t le[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
        crc = dcz_train_crc32(name_hash(f, crc, pick[k]), le, 4);
    }
    return dcz_train_crc32(crc, y, n);
}

/* The first failure of a parallel pass: of several, the one of the lowest
 * item, whichever thread met it first. */
typedef struct first_fail {
    pthread_mutex_t lock;
    size_t at;              /* the failing item; SIZE_MAX: none */
    dcz_status st;
    char err[ERR_LEN];
} first_fail;

static void fail_init(first_fail *ff)
{
    pthread_mutex_init(&ff->lock, NULL);
    ff->at = SIZE_MAX;
    ff->st = DCZ_OK;
    ff->err[0] = '\0';
}

/* Nonzero when an item before i failed: i's result would not be used. */
static int fail_before(first_fail *ff, size_t i)
{
    pthread_mutex_lock(&ff->lock);
    const int before = ff->at < i;
    pthread_mutex_unlock(&ff->lock);
    return before;
}

static void fail_note(first_fail *ff, size_t i, dcz_status st, const char *why)
{
    pthread_mutex_lock(&ff->lock);
    if (i < ff->at) {
        ff->at = i;
        ff->st = st;
        snprintf(ff->err, sizeof ff->err, "%s", why);
    }
    pthread_mutex_unlock(&ff->lock);
}

/* Reads file i whole (at most max bytes) and decodes it; *bytes is the
 * caller's to free on success. */
static dcz_status read_image(const dcz_image_files *f, size_t i, uint64_t max, uint8_t **bytes, size_t *len,
                             dcz_image *img, char *why, size_t whylen)
{
    char path[PATH_LEN];
    file_path(f, i, path);
    dcz_status st = dcz_train_read_file(path, max, bytes, len, why, whylen);
    if (st == DCZ_ERR_LIMIT)
        dcz_train_err(why, whylen, "%s: a file of more than %.1f MiB, over the limit on a dataset's memory", path,
                      (double)max / 1048576.0);
    if (st != DCZ_OK) return st;
    char what[ERR_LEN / 2] = "";
    st = dcz_image_decode(*bytes, *len, img, what, sizeof what);
    if (st != DCZ_OK) {
        dcz_train_err(why, whylen, "%s: %s", path, what);
        free(*bytes);
        *bytes = NULL;
    }
    return st;
}

/* Decoded pixels into a sample of f's shape: the one conversion every
 * sample of an image folder goes through, through f's preprocessing
 * (resize, crop, per-channel mean and deviation) when it has one. A
 * training sample may be varied (aug: DCZ_AUG_* bits, drawn from r): a
 * random box of the image resized to the sample's size in place of the
 * preprocessing's resize and crop (with its mean and deviation; without a
 * preprocessing, values in [0, 1] as always, through 8 bits), then a flip
 * by even odds. */
static dcz_status image_sample(const dcz_image_files *f, const dcz_image *img, unsigned aug, dcz_rng *r,
                               float *out, char *why, size_t whylen)
{
    dcz_status st;
    if (aug & DCZ_AUG_CROP) {
        dcz_preprocess plain = { .channels = f->c, .std = { 1.0f, 1.0f, 1.0f } };
        st = dcz_prep_box(f->has_prep ? &f->prep : &plain, img, dcz_augment_crop_box(img->w, img->h, r), f->h, f->w,
                          out, why, whylen);
    } else if (f->has_prep) {
        st = dcz_prep_apply(&f->prep, img, f->h, f->w, out, why, whylen);
    } else {   /* the file the load checked (its bytes, its size and colour): as it is */
        st = dcz_image_to_sample(img, f->c, f->h, f->w, 0, out, why, whylen);
    }
    if (st == DCZ_OK && (aug & DCZ_AUG_FLIP) && dcz_augment_draw_flip(r)) dcz_augment_flip(out, f->c, f->h, f->w);
    return st == DCZ_OK || st == DCZ_ERR_NOMEM ? st : DCZ_ERR_DATA;
}

/* Sample of file i into out: its bytes read again, checked against the
 * load's, decoded and converted (varied as aug says, drawn from r). */
static dcz_status file_sample(const dcz_image_files *f, size_t i, unsigned aug, dcz_rng *r, float *out, char *why,
                              size_t whylen)
{
    char path[PATH_LEN];
    file_path(f, i, path);
    uint8_t *bytes = NULL;
    size_t len = 0;
    dcz_image img;
    memset(&img, 0, sizeof img);
    char what[ERR_LEN / 2] = "";
    /* a file grown past the size checked has changed: read no further */
    dcz_status st = dcz_train_read_file(path, f->len[i], &bytes, &len, what, sizeof what);
    if (st == DCZ_ERR_LIMIT || (st == DCZ_OK && (len != f->len[i] ||
                                                 dcz_train_crc32((uint32_t)crc32(0, Z_NULL, 0), bytes, len) !=
                                                 f->crc[i]))) {
        dcz_train_err(why, whylen, "%s changed after the dataset was loaded (its bytes are not those checked then)",
                      path);
        st = DCZ_ERR_DATA;
    } else if (st == DCZ_ERR_IO) {
        dcz_train_err(why, whylen, "%s, but it was there when the dataset was loaded", what);
    } else if (st != DCZ_OK) {
        dcz_train_err(why, whylen, "%s", what);
    }
    if (st == DCZ_OK && (st = dcz_image_decode(bytes, len, &img, what, sizeof what)) != DCZ_OK)
        dcz_train_err(why, whylen, "%s: %s", path, what);
    if (st == DCZ_OK && (st = image_sample(f, &img, aug, r, out, what, sizeof what)) != DCZ_OK)
        dcz_train_err(why, whylen, "%s: %s", path, what);
    dcz_image_free(&img);
    free(bytes);
    return st;
}

/* ---- the load -------------------------------------------------------------------- */

typedef struct check_job {
    dcz_image_files *f;
    uint64_t max;           /* bytes of one file */
    int colour;             /* some image has colour (under fail.lock) */
    first_fail fail;
} check_job;

/* Checks file i (its size against f's), recording its length and CRC32;
 * *colour set when it has colour. */
static dcz_status check_file(dcz_image_files *f, size_t i, uint64_t max, int *colour, char *why, size_t whylen)
{
    dcz_image img;
    uint8_t *bytes;
    size_t len;
    dcz_status st = read_image(f, i, max, &bytes, &len, &img, why, whylen);
    if (st != DCZ_OK) return st;
    f->len[i] = len;
    f->crc[i] = dcz_train_crc32((uint32_t)crc32(0, Z_NULL, 0), bytes, len);
    uint32_t w = img.w, h = img.h;   /* the sample's size: the image's, or after preprocessing */
    char what[ERR_LEN / 2] = "";
    if (f->has_prep && (st = dcz_prep_size(&f->prep, img.w, img.h, &w, &h, what, sizeof what)) != DCZ_OK) {
        char a[PATH_LEN];
        file_path(f, i, a);
        dcz_train_err(why, whylen, "%s: %s", a, what);
        st = DCZ_ERR_DATA;
    } else if (i == 0) {
        f->w = w;
        f->h = h;
    } else if (w != f->w || h != f->h) {
        char a[PATH_LEN], b[PATH_LEN];
        file_path(f, i, a);
        file_path(f, 0, b);
        dcz_train_err(why, whylen, "%s is %u x %u%s; %s, the first image, is %u x %u (every image of a dataset has "
                      "one size%s)", a, w, h, f->has_prep ? " after resizing" : "", b, f->w, f->h,
                      f->has_prep ? ": a crop gives them one" : ", or the model's preprocessing gives them one");
        st = DCZ_ERR_DATA;
    }
    if (st == DCZ_OK && !*colour && !dcz_image_is_gray(&img)) *colour = 1;
    dcz_image_free(&img);
    free(bytes);
    return st;
}

/* Files lo + 1 .. hi + 1 (file 0 is checked first, alone). */
static void check_part(void *ctx, size_t lo, size_t hi)
{
    check_job *j = ctx;
    char why[ERR_LEN];
    int colour = 0;
    for (size_t i = lo + 1; i < hi + 1; i++) {
        if (fail_before(&j->fail, i)) break;
        const dcz_status st = check_file(j->f, i, j->max, &colour, why, sizeof why);
        if (st != DCZ_OK) {
            fail_note(&j->fail, i, st, why);
            break;
        }
    }
    if (colour) {
        pthread_mutex_lock(&j->fail.lock);
        j->colour = 1;
        pthread_mutex_unlock(&j->fail.lock);
    }
}

dcz_status dcz_png_folder_load(const char *root, int split_id, uint64_t max_bytes, const dcz_preprocess *prep,
                               dcz_dataset *out, char *err, size_t errlen)
{
    if (!out || !root) return DCZ_ERR_ARG;
    memset(out, 0, sizeof *out);
    names classes;
    file_list list;
    memset(&list, 0, sizeof list);
    list.max = max_bytes;
    dcz_status st = list_split(root, split_id, &classes, &list, err, errlen);
    if (st != DCZ_OK) {
        list_free(&list);
        return st;
    }
    const size_t n = list.n;
    const uint32_t nclasses = (uint32_t)classes.n;
    names_free(&classes);
    const char *sub = split_name(split_id);
    dcz_image_files *f = calloc(1, sizeof *f);
    check_job job;
    memset(&job, 0, sizeof job);
    fail_init(&job.fail);
    if (!f) {
        list_free(&list);
        st = DCZ_ERR_NOMEM;
        goto cleanup;
    }
    pthread_mutex_init(&f->lock, NULL);
    f->refs = 1;
    f->n = n;
    if (prep) {
        f->has_prep = 1;
        f->prep = *prep;
    }
    f->names = list.names;
    f->at = list.at;
    list.names = NULL;
    list.at = NULL;
    f->dir = malloc(strlen(root) + strlen(sub) + 2);
    f->sub = malloc(strlen(sub) + 1);
    f->len = malloc(n * sizeof *f->len);
    f->crc = malloc(n * sizeof *f->crc);
    if (!f->dir || !f->sub || !f->len || !f->crc) {
        st = DCZ_ERR_NOMEM;
        goto cleanup;
    }
    sprintf(f->dir, "%s/%s", root, sub);
    strcpy(f->sub, sub);
    /* every file decodes and has the first one's size; any colour? */
    char why[ERR_LEN];
    if ((st = check_file(f, 0, max_bytes, &job.colour, why, sizeof why)) != DCZ_OK) {
        dcz_train_err(err, errlen, "%s", why);
        goto cleanup;
    }
    job.f = f;
    job.max = max_bytes;
    dcz_train_par(n - 1, 1, check_part, &job);
    if (job.fail.at != SIZE_MAX) {
        st = job.fail.st;
        dcz_train_err(err, errlen, "%s", job.fail.err);
        goto cleanup;
    }
    f->c = f->has_prep ? f->prep.channels : job.colour ? 3 : 1;
    const uint64_t sample = (uint64_t)f->c * f->h * f->w;
    if (sample > DCZ_PNG_MAX_VALUES) {
        dcz_train_err(err, errlen, "samples of %llu values do not fit in memory", (unsigned long long)sample);
        st = DCZ_ERR_NOMEM;
        goto cleanup;
    }
    /* the hash: names (from root) and bytes in order, then the labels */
    uint32_t crc = (uint32_t)crc32(0, Z_NULL, 0);
    for (size_t i = 0; i < n; i++) {
        crc = name_hash(f, crc, i);
        crc = (uint32_t)crc32_combine(crc, f->crc[i], (z_off_t)f->len[i]);
    }
    out->n = n;
    out->c = f->c;
    out->h = f->h;
    out->w = f->w;
    out->classes = nclasses;
    out->y = list.label;
    list.label = NULL;
    out->hash = dcz_train_crc32(crc, out->y, n);
    out->files = f;
    f = NULL;
cleanup:
    pthread_mutex_destroy(&job.fail.lock);
    list_free(&list);
    if (f) files_free(f);
    return st;
}

/* ---- reading samples ----------------------------------------------------------------- */

typedef struct read_job {
    const dcz_dataset *d;
    const size_t *idx;
    size_t first;
    const dcz_augment *aug; /* NULL: none */
    float *x;               /* (n, per) */
    size_t per;
    first_fail fail;
} read_job;

static void read_part(void *ctx, size_t lo, size_t hi)
{
    read_job *j = ctx;
    char why[ERR_LEN];
    for (size_t k = lo; k < hi; k++) {
        if (fail_before(&j->fail, k)) return;
        const size_t s = j->idx ? j->idx[j->first + k] : j->first + k;
        const size_t i = j->d->pick ? j->d->pick[s] : s;
        dcz_rng r = { { 0 } };   /* sample s's own draws: the same whichever thread reads it */
        if (j->aug) dcz_augment_rng(j->aug->key, s, &r);
        const dcz_status st = file_sample(j->d->files, i, j->aug ? j->aug->what : 0, &r, j->x + k * j->per, why,
                                          sizeof why);
        if (st != DCZ_OK) {
            fail_note(&j->fail, k, st, why);
            return;
        }
    }
}

dcz_status dcz_image_files_samples(const dcz_dataset *d, const size_t *idx, size_t first, size_t n,
                                   const dcz_augment *aug, float *x, char *err, size_t errlen)
{
    read_job j = { .d = d, .idx = idx, .first = first, .aug = aug, .x = x, .per = (size_t)d->c * d->h * d->w };
    fail_init(&j.fail);
    dcz_train_par(n, 1, read_part, &j);
    pthread_mutex_destroy(&j.fail.lock);
    if (j.fail.at == SIZE_MAX) return DCZ_OK;
    dcz_image_files *f = d->files;
    pthread_mutex_lock(&f->lock);
    snprintf(f->err, sizeof f->err, "%s", j.fail.err);
    pthread_mutex_unlock(&f->lock);
    dcz_train_err(err, errlen, "%s", j.fail.err);
    return j.fail.st;
}
