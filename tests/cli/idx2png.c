/* idx2png.c: writes part of a dataset as an image-folder dataset, for the
 * CLI tests: the first TRAIN samples of each class of the train split and
 * the first TEST of the test split become 8-bit gray PNGs
 * OUT/train/CLASS/NNNNN.png and OUT/test/CLASS/NNNNN.png (classes named
 * 0-tshirt ... 9-boot for a 10-class dataset, in label order), or with
 * jpeg, gray JPEGs of quality 100 (libjpeg) OUT/.../NNNNN.jpg.
 *   idx2png DATA OUT TRAIN TEST [jpeg]  (DATA as --data: fashion-mnist, a folder)
 */
#include <png.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>

#include "train/train.h"

static const char *const fashion[10] = { "0-tshirt", "1-trouser", "2-pullover", "3-dress", "4-coat",
                                         "5-sandal", "6-shirt", "7-sneaker", "8-bag", "9-boot" };

/* an 8-bit gray w x h image as a JPEG of quality 100 at path */
static int write_jpeg(const char *path, const uint8_t *pix, unsigned w, unsigned h)
{
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    struct jpeg_compress_struct j;
    struct jpeg_error_mgr e;
    j.err = jpeg_std_error(&e);
    jpeg_create_compress(&j);
    jpeg_stdio_dest(&j, f);
    j.image_width = w;
    j.image_height = h;
    j.input_components = 1;
    j.in_color_space = JCS_GRAYSCALE;
    jpeg_set_defaults(&j);
    jpeg_set_quality(&j, 100, TRUE);
    jpeg_start_compress(&j, TRUE);
    while (j.next_scanline < h) {
        JSAMPROW row = (JSAMPROW)(pix + (size_t)j.next_scanline * w);
        jpeg_write_scanlines(&j, &row, 1);
    }
    jpeg_finish_compress(&j);
    jpeg_destroy_compress(&j);
    return fclose(f) != 0;
}

static int write_split(const char *data, int split, const char *out, const char *sub, int per_class, int jpeg)
{
    dcz_dataset d;
    char err[512];
    if (dcz_data_load(data, split, &d, err, sizeof err) != DCZ_OK) {
        fprintf(stderr, "idx2png: %s\n", err);
        return 1;
    }
    if (d.c != 1) { fprintf(stderr, "idx2png: gray datasets only\n"); dcz_dataset_free(&d); return 1; }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", out, sub);
    mkdir(path, 0755);
    int *count = calloc(d.classes, sizeof *count), rc = 0;
    uint8_t *pix = malloc((size_t)d.h * d.w);
    for (size_t i = 0; i < d.n && !rc; i++) {
        const unsigned y = d.y[i];
        if (count[y] >= per_class) continue;
        char cls[16];
        if (d.classes == 10) snprintf(cls, sizeof cls, "%s", fashion[y]);
        else snprintf(cls, sizeof cls, "%03u", y);
        snprintf(path, sizeof path, "%s/%s/%s", out, sub, cls);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/%s/%s/%05zu.%s", out, sub, cls, i, jpeg ? "jpg" : "png");
        for (size_t k = 0; k < (size_t)d.h * d.w; k++)   /* x = v / 255 exactly: back to v */
            pix[k] = (uint8_t)(d.x[i * d.h * d.w + k] * 255.0f + 0.5f);
        if (jpeg) {
            if (write_jpeg(path, pix, d.w, d.h)) {
                fprintf(stderr, "idx2png: cannot write %s\n", path);
                rc = 1;
            }
            count[y]++;
            continue;
        }
        png_image img;
        memset(&img, 0, sizeof img);
        img.version = PNG_IMAGE_VERSION;
        img.width = d.w;
        img.height = d.h;
        img.format = PNG_FORMAT_GRAY;
        if (!png_image_write_to_file(&img, path, 0, pix, 0, NULL)) {
            fprintf(stderr, "idx2png: cannot write %s: %s\n", path, img.message);
            rc = 1;
        }
        count[y]++;
    }
    free(pix);
    free(count);
    dcz_dataset_free(&d);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 5 && !(argc == 6 && strcmp(argv[5], "jpeg") == 0)) {
        fprintf(stderr, "usage: idx2png DATA OUT TRAIN TEST [jpeg]\n");
        return 1;
    }
    const int jpeg = argc == 6;
    mkdir(argv[2], 0755);
    if (write_split(argv[1], DCZ_SPLIT_TRAIN, argv[2], "train", atoi(argv[3]), jpeg)) return 1;
    return write_split(argv[1], DCZ_SPLIT_TEST, argv[2], "test", atoi(argv[4]), jpeg);
}
