/* test_idx.c: tests of the IDX dataset reader (train/data.c): parsing tiny
 * buffers built here, loading them back from a temporary directory as plain
 * and gzip files, rejecting malformed input with DCZ_ERR_DATA and a message,
 * missing files with DCZ_ERR_IO, and, when Debian's dataset-fashion-mnist is
 * installed, loading its test split.
 *
 * Run by `make test` (build/tests/test_idx).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "tests/check.h"
#include "train/train.h"

/* REQUIRE evaluates its condition twice: calls go through this instead. */
#define REQUIRE_OK(call, ...) do { \
    dcz_status req_st_ = (call); \
    REQUIRE(req_st_ == DCZ_OK, __VA_ARGS__); \
} while (0)

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* A tiny dataset: N samples of H x W, pixel (s, i) = 10 s + i, labels below. */
enum { N = 3, H = 2, W = 4, IMG_LEN = 16 + N * H * W, LBL_LEN = 8 + N };
static const uint8_t labels[N] = { 0, 4, 2 };

static void build(uint8_t img[IMG_LEN], uint8_t lbl[LBL_LEN])
{
    memset(img, 0, IMG_LEN);
    img[2] = 0x08;
    img[3] = 3;
    put_be32(img + 4, N);
    put_be32(img + 8, H);
    put_be32(img + 12, W);
    for (int s = 0; s < N; s++)
        for (int i = 0; i < H * W; i++) img[16 + s * H * W + i] = (uint8_t)(10 * s + i);
    memset(lbl, 0, LBL_LEN);
    lbl[2] = 0x08;
    lbl[3] = 1;
    put_be32(lbl + 4, N);
    memcpy(lbl + 8, labels, N);
}

static uint32_t crc_of(const uint8_t *img, size_t il, const uint8_t *lbl, size_t ll)
{
    uLong c = crc32(0, Z_NULL, 0);
    c = crc32(c, img, (uInt)il);
    return (uint32_t)crc32(c, lbl, (uInt)ll);
}

static int check_tiny(const dcz_dataset *d)
{
    int ok = d->n == N && d->c == 1 && d->h == H && d->w == W && d->classes == 5;
    for (int s = 0; ok && s < N; s++) {
        ok &= d->y[s] == labels[s];
        for (int i = 0; i < H * W; i++)
            ok &= d->x[s * H * W + i] == (float)(10 * s + i) / 255.0f;
    }
    return ok;
}

static int is_zeroed(const dcz_dataset *d)
{
    return d->n == 0 && d->x == NULL && d->y == NULL && d->classes == 0;
}

static void test_parse_valid(void)
{
    uint8_t img[IMG_LEN], lbl[LBL_LEN];
    build(img, lbl);
    dcz_dataset d;
    char err[256] = "";
    REQUIRE_OK(dcz_idx_parse(img, IMG_LEN, lbl, LBL_LEN, &d, err, sizeof err), "%s", err);
    CHECK(check_tiny(&d), "parsed dataset differs");
    CHECK(d.hash == crc_of(img, IMG_LEN, lbl, LBL_LEN), "hash %08x", d.hash);
    dcz_dataset_free(&d);
    CHECK(is_zeroed(&d), "free does not zero");
    dcz_dataset_free(NULL);
}

/* Parses img/lbl expecting want; checks the message and that out is empty. */
static void expect_reject(const char *what, const uint8_t *img, size_t il,
                          const uint8_t *lbl, size_t ll, dcz_status want)
{
    dcz_dataset d;
    char err[256] = "";
    dcz_status st = dcz_idx_parse(img, il, lbl, ll, &d, err, sizeof err);
    CHECK(st == want, "%s: status %d, want %d", what, (int)st, (int)want);
    CHECK(err[0] != '\0' && strchr(err, '\n') == NULL, "%s: message \"%s\"", what, err);
    CHECK(is_zeroed(&d), "%s: dataset not empty", what);
    if (st == DCZ_OK) dcz_dataset_free(&d);
}

static void test_parse_rejects(void)
{
    uint8_t img[IMG_LEN], lbl[LBL_LEN], big[IMG_LEN + 1];
    build(img, lbl);
    expect_reject("empty images", img, 0, lbl, LBL_LEN, DCZ_ERR_DATA);
    expect_reject("empty labels", img, IMG_LEN, lbl, 0, DCZ_ERR_DATA);
    expect_reject("NULL images", NULL, 0, lbl, LBL_LEN, DCZ_ERR_DATA);
    expect_reject("NULL with length", NULL, 5, lbl, LBL_LEN, DCZ_ERR_ARG);
    expect_reject("short header", img, 10, lbl, LBL_LEN, DCZ_ERR_DATA);
    expect_reject("truncated images", img, IMG_LEN - 1, lbl, LBL_LEN, DCZ_ERR_DATA);
    expect_reject("truncated labels", img, IMG_LEN, lbl, LBL_LEN - 1, DCZ_ERR_DATA);
    memcpy(big, img, IMG_LEN);
    big[IMG_LEN] = 0;
    expect_reject("trailing image bytes", big, IMG_LEN + 1, lbl, LBL_LEN, DCZ_ERR_DATA);
    expect_reject("images as labels", lbl, LBL_LEN, img, IMG_LEN, DCZ_ERR_DATA);

    struct { const char *what; int off; uint8_t v; } flips[] = {
        { "bad magic", 0, 0x01 }, { "bad magic 2", 1, 0x08 }, { "type int32", 2, 0x0c },
        { "rank 2", 3, 2 }, { "zero count", 7, 0 }, { "zero rows", 11, 0 },
        { "zero cols", 15, 0 }, { "count mismatch", 7, 2 },
    };
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
        build(img, lbl);
        img[flips[i].off] = flips[i].v;
        expect_reject(flips[i].what, img, IMG_LEN, lbl, LBL_LEN, DCZ_ERR_DATA);
    }
    build(img, lbl);
    lbl[3] = 3;
    expect_reject("label rank 3", img, IMG_LEN, lbl, LBL_LEN, DCZ_ERR_DATA);
    build(img, lbl);
    lbl[7] = 4;
    expect_reject("label count", img, IMG_LEN, lbl, LBL_LEN, DCZ_ERR_DATA);

    /* dimensions whose products overflow 32 and 64 bits */
    uint32_t huge[][3] = { { 0xffffffffu, 0xffffffffu, 0xffffffffu }, { 1, 65536, 65536 },
                           { 0x80000000u, 4096, 4096 }, { 0xffffffffu, 1, 1 } };
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        build(img, lbl);
        put_be32(img + 4, huge[i][0]);
        put_be32(img + 8, huge[i][1]);
        put_be32(img + 12, huge[i][2]);
        put_be32(lbl + 4, huge[i][0]);
        expect_reject("huge dims", img, IMG_LEN, lbl, LBL_LEN, DCZ_ERR_DATA);
    }
}

static int write_file(const char *path, const uint8_t *p, size_t n, int gz)
{
    if (gz) {
        gzFile f = gzopen(path, "wb");
        if (!f) return 0;
        int ok = gzwrite(f, p, (unsigned)n) == (int)n;
        return gzclose(f) == Z_OK && ok;
    }
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static void test_load_dir(void)
{
    char dir[] = "/tmp/dcz_test_idx_XXXXXX", path[512], err[512] = "";
    REQUIRE(mkdtemp(dir) != NULL, "mkdtemp");
    uint8_t img[IMG_LEN], lbl[LBL_LEN];
    build(img, lbl);
    static const char *names[] = { "train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                   "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz" };
    int wrote = 1;
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        wrote &= write_file(path, i % 2 ? lbl : img, i % 2 ? LBL_LEN : IMG_LEN, i >= 2);
    }
    REQUIRE(wrote, "cannot write to %s", dir);

    dcz_dataset d;
    dcz_status st = dcz_data_load(dir, DCZ_SPLIT_TRAIN, &d, err, sizeof err);
    CHECK(st == DCZ_OK && check_tiny(&d), "plain train split: %s", err);
    CHECK(st != DCZ_OK || d.hash == crc_of(img, IMG_LEN, lbl, LBL_LEN), "plain hash");
    dcz_dataset_free(&d);
    st = dcz_data_load(dir, DCZ_SPLIT_TEST, &d, err, sizeof err);
    CHECK(st == DCZ_OK && check_tiny(&d), "gzip test split: %s", err);
    CHECK(st != DCZ_OK || d.hash == crc_of(img, IMG_LEN, lbl, LBL_LEN), "gzip hash");
    dcz_dataset_free(&d);
    CHECK(dcz_data_load(dir, 7, &d, err, sizeof err) == DCZ_ERR_ARG, "split 7");

    /* a truncated gzip file: damaged data, not a crash */
    snprintf(path, sizeof path, "%s/%s", dir, names[2]);
    FILE *f = fopen(path, "rb");
    uint8_t gzbuf[256];
    size_t gzlen = f ? fread(gzbuf, 1, sizeof gzbuf, f) : 0;
    if (f) fclose(f);
    REQUIRE(gzlen > 20, "gzip file of %zu bytes", gzlen);
    f = fopen(path, "wb");
    REQUIRE(f != NULL, "rewrite");
    fwrite(gzbuf, 1, gzlen - 10, f);
    fclose(f);
    err[0] = '\0';
    st = dcz_data_load(dir, DCZ_SPLIT_TEST, &d, err, sizeof err);
    CHECK(st == DCZ_ERR_DATA && err[0], "truncated gzip: status %d \"%s\"", (int)st, err);
    CHECK(is_zeroed(&d), "dataset not empty after failure");

    /* malformed content inside a valid file */
    build(img, lbl);
    img[3] = 4;
    snprintf(path, sizeof path, "%s/%s", dir, names[0]);
    REQUIRE(write_file(path, img, IMG_LEN, 0), "rewrite");
    err[0] = '\0';
    st = dcz_data_load(dir, DCZ_SPLIT_TRAIN, &d, err, sizeof err);
    CHECK(st == DCZ_ERR_DATA && strstr(err, "rank"), "rank 4: status %d \"%s\"", (int)st, err);

    /* labels missing */
    snprintf(path, sizeof path, "%s/%s", dir, names[1]);
    unlink(path);
    err[0] = '\0';
    st = dcz_data_load(dir, DCZ_SPLIT_TRAIN, &d, err, sizeof err);
    CHECK(st == DCZ_ERR_IO && strstr(err, "train-labels-idx1-ubyte"),
          "missing labels: status %d \"%s\"", (int)st, err);

    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
    err[0] = '\0';
    st = dcz_data_load(dir, DCZ_SPLIT_TRAIN, &d, err, sizeof err);
    CHECK(st == DCZ_ERR_IO && strstr(err, dir), "missing directory: status %d \"%s\"", (int)st, err);
    CHECK(dcz_data_load(NULL, DCZ_SPLIT_TRAIN, &d, err, sizeof err) == DCZ_ERR_ARG, "NULL spec");
    CHECK(dcz_data_load("/nonexistent", DCZ_SPLIT_TRAIN, &d, NULL, 0) == DCZ_ERR_IO,
          "NULL err buffer");
}

static void test_fashion_mnist(void)
{
    if (access("/usr/share/datasets/fashion-mnist", F_OK) != 0) {
        printf("SKIP test_fashion_mnist: /usr/share/datasets/fashion-mnist absent "
               "(apt-get install dataset-fashion-mnist)\n");
        return;
    }
    dcz_dataset d;
    char err[512] = "";
    REQUIRE_OK(dcz_data_load("fashion-mnist", DCZ_SPLIT_TEST, &d, err, sizeof err), "%s", err);
    CHECK(d.n == 10000 && d.c == 1 && d.h == 28 && d.w == 28 && d.classes == 10,
          "n %zu, %u x %u x %u, %u classes", d.n, d.c, d.h, d.w, d.classes);
    int out = 0, count[10] = { 0 };
    for (size_t i = 0; i < d.n * 784; i++) out += !(d.x[i] >= 0.0f && d.x[i] <= 1.0f);
    for (size_t i = 0; i < d.n; i++) count[d.y[i] % 10]++;
    CHECK(out == 0, "%d pixels outside [0, 1]", out);
    for (int c = 0; c < 10; c++) CHECK(count[c] == 1000, "class %d has %d samples", c, count[c]);
    CHECK(d.hash != 0, "no hash");
    dcz_dataset_free(&d);
}

int main(void)
{
    RUN(test_parse_valid);
    RUN(test_parse_rejects);
    RUN(test_load_dir);
    RUN(test_fashion_mnist);
    return check_summary();
}
