/* data_png.c: a dataset from folders of PNG and JPEG images,
 * ROOT/{train,test}/CLASS/NAME.{png,jpg,jpeg} (rules in png.h,
 * dcz_png_folder_load).
 *
 * Two passes over the files of a split: the first decodes every image to
 * check it (a PNG or JPEG, decodable, the size of the first) and learn whether any
 * has colour; the second decodes them again into the sample array, as gray
 * or RGB for the whole split, and checks that nothing changed in between.
 *
 * Tested by tests/unit/test_png.c (layouts, every refusal) and
 * tests/cli/interop.sh (training and evaluating on a PNG folder).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <zlib.h>

#include "train/internal.h"
#include "train/png.h"

#define MAX_CLASSES 256

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

/* One file of the split: where it is and its label. */
typedef struct entry {
    char *path;
    uint8_t label;
} entry;

typedef struct split {
    entry *e;
    size_t n, cap;
} split;

static void split_free(split *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->e[i].path);
    free(s->e);
    memset(s, 0, sizeof *s);
}

/* The class list of root, and the files of the split, in class order then
 * name order. */
static dcz_status list_split(const char *root, int split_id, names *classes, split *files, char *err, size_t errlen)
{
    char dir[4096], cdir[4096];
    const char *sub = split_id == DCZ_SPLIT_TRAIN ? "train" : "test";
    memset(files, 0, sizeof *files);
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
            if (files->n == files->cap) {
                size_t cap = files->cap ? files->cap * 2 : 256;
                entry *ne = realloc(files->e, cap * sizeof *ne);
                if (!ne) { st = DCZ_ERR_NOMEM; break; }
                files->e = ne;
                files->cap = cap;
            }
            size_t len = strlen(cdir) + strlen(imgs.v[i]) + 2;
            char *p = malloc(len);
            if (!p) { st = DCZ_ERR_NOMEM; break; }
            snprintf(p, len, "%s/%s", cdir, imgs.v[i]);
            files->e[files->n].path = p;
            files->e[files->n++].label = (uint8_t)c;
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
        split_free(files);
    }
    return st;
}

/* Reads and decodes one file of the split. */
static dcz_status load_image(const entry *f, uint64_t max, dcz_image *img, uint8_t **bytes, size_t *len, char *err,
                             size_t errlen)
{
    dcz_status st = dcz_train_read_file(f->path, max, bytes, len, err, errlen);
    if (st != DCZ_OK) return st;
    char why[200];
    st = dcz_image_decode(*bytes, *len, img, why, sizeof why);
    if (st != DCZ_OK) {
        dcz_train_err(err, errlen, "%s: %s", f->path, why);
        free(*bytes);
        *bytes = NULL;
    }
    return st;
}

dcz_status dcz_png_folder_load(const char *root, int split_id, uint64_t max_bytes, dcz_dataset *out, char *err,
                               size_t errlen)
{
    if (!out || !root) return DCZ_ERR_ARG;
    memset(out, 0, sizeof *out);
    names classes;
    split files;
    dcz_status st = list_split(root, split_id, &classes, &files, err, errlen);
    if (st != DCZ_OK) return st;
    uint32_t w = 0, h = 0, c = 1;
    /* pass 1: every file decodes, has the first one's size; any colour? */
    for (size_t i = 0; i < files.n && st == DCZ_OK; i++) {
        dcz_image img;
        uint8_t *bytes;
        size_t len;
        if ((st = load_image(&files.e[i], max_bytes, &img, &bytes, &len, err, errlen)) != DCZ_OK) break;
        if (i == 0) {
            w = img.w;
            h = img.h;
        } else if (img.w != w || img.h != h) {
            dcz_train_err(err, errlen, "%s is %u x %u; %s, the first image, is %u x %u (every image of a dataset "
                          "has one size)", files.e[i].path, img.w, img.h, files.e[0].path, w, h);
            st = DCZ_ERR_DATA;
        }
        if (st == DCZ_OK && c == 1 && !dcz_image_is_gray(&img)) c = 3;
        dcz_image_free(&img);
        free(bytes);
    }
    const uint64_t sample = (uint64_t)c * h * w;
    if (st == DCZ_OK && (sample > DCZ_PNG_MAX_VALUES || (uint64_t)files.n > SIZE_MAX / sizeof(float) / sample)) {
        dcz_train_err(err, errlen, "%zu samples of %llu values do not fit in memory", files.n,
                      (unsigned long long)sample);
        st = DCZ_ERR_NOMEM;
    } else if (st == DCZ_OK && (uint64_t)files.n * sample * sizeof(float) > max_bytes) {
        dcz_train_err(err, errlen, "%zu samples of %llu values take %.1f MiB as floats, over the limit of %.1f MiB "
                      "on a dataset's memory", files.n, (unsigned long long)sample,
                      (double)files.n * (double)sample * sizeof(float) / 1048576.0, (double)max_bytes / 1048576.0);
        st = DCZ_ERR_LIMIT;
    }
    float *x = NULL;
    uint8_t *y = NULL;
    if (st == DCZ_OK) {
        x = malloc(files.n * (size_t)sample * sizeof *x);   /* (n, c*h*w) */
        y = malloc(files.n);
        if (!x || !y) {
            dcz_train_err(err, errlen, "out of memory for %zu images", files.n);
            st = DCZ_ERR_NOMEM;
        }
    }
    /* pass 2: the samples; the hash covers names (from root), bytes, labels */
    uint32_t crc = (uint32_t)crc32(0, Z_NULL, 0);
    const size_t skip = strlen(root) + 1;
    for (size_t i = 0; i < files.n && st == DCZ_OK; i++) {
        dcz_image img;
        uint8_t *bytes;
        size_t len;
        if ((st = load_image(&files.e[i], max_bytes, &img, &bytes, &len, err, errlen)) != DCZ_OK) break;
        if (img.w != w || img.h != h || (c == 1 && !dcz_image_is_gray(&img))) {
            dcz_train_err(err, errlen, "%s changed while it was read", files.e[i].path);
            st = DCZ_ERR_DATA;
        }
        char why[200];
        if (st == DCZ_OK && dcz_image_to_sample(&img, c, h, w, 0, x + i * (size_t)sample, why, sizeof why) != DCZ_OK) {
            dcz_train_err(err, errlen, "%s: %s", files.e[i].path, why);
            st = DCZ_ERR_DATA;
        }
        y[i] = files.e[i].label;
        const char *rel = files.e[i].path + skip;
        crc = dcz_train_crc32(crc, (const uint8_t *)rel, strlen(rel) + 1);
        crc = dcz_train_crc32(crc, bytes, len);
        dcz_image_free(&img);
        free(bytes);
    }
    if (st == DCZ_OK) crc = dcz_train_crc32(crc, y, files.n);
    if (st == DCZ_OK) {
        out->n = files.n;
        out->c = c;
        out->h = h;
        out->w = w;
        out->classes = (uint32_t)classes.n;
        out->x = x;
        out->y = y;
        out->hash = crc;
    } else {
        free(x);
        free(y);
    }
    names_free(&classes);
    split_free(&files);
    return st;
}
