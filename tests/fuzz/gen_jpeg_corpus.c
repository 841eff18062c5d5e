/* gen_jpeg_corpus.c: writes the seed corpus of fuzz_jpeg.c.
 *
 * JPEGs made by libjpeg: gray and colour baseline (4:2:0 and 4:4:4),
 * progressive, with restart markers, optimized Huffman tables, a 1 x 1
 * image, CMYK (refused), and one cut short (refused).
 * Not part of the build; regenerate with
 *   cc -std=c11 tests/fuzz/gen_jpeg_corpus.c -ljpeg -o /tmp/gen && /tmp/gen tests/fuzz/corpus/jpeg
 * The output is deterministic.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

typedef struct spec {
    const char *name;
    unsigned w, h;
    int c;             /* 1 gray, 3 RGB, 4 CMYK */
    int full_chroma, progressive, restart, optimize, quality;
    int cut;           /* write only the first half */
} spec;

static void put(const char *dir, const spec *s)
{
    struct jpeg_compress_struct j;
    struct jpeg_error_mgr e;
    j.err = jpeg_std_error(&e);
    jpeg_create_compress(&j);
    unsigned char *out = NULL;
    unsigned long n = 0;
    jpeg_mem_dest(&j, &out, &n);
    j.image_width = s->w;
    j.image_height = s->h;
    j.input_components = s->c;
    j.in_color_space = s->c == 1 ? JCS_GRAYSCALE : s->c == 3 ? JCS_RGB : JCS_CMYK;
    jpeg_set_defaults(&j);
    jpeg_set_quality(&j, s->quality, TRUE);
    if (s->full_chroma)
        for (int k = 0; k < j.num_components; k++) j.comp_info[k].h_samp_factor = j.comp_info[k].v_samp_factor = 1;
    if (s->progressive) jpeg_simple_progression(&j);
    j.restart_in_rows = s->restart;
    j.optimize_coding = s->optimize;
    jpeg_start_compress(&j, TRUE);
    unsigned char *row = malloc((size_t)s->w * s->c);
    while (j.next_scanline < s->h) {
        for (unsigned x = 0; x < s->w; x++)
            for (int k = 0; k < s->c; k++)
                row[x * s->c + k] = (unsigned char)(37 * x + 23 * j.next_scanline + 71 * k + (x * j.next_scanline) % 13);
        jpeg_write_scanlines(&j, &row, 1);
    }
    jpeg_finish_compress(&j);
    jpeg_destroy_compress(&j);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, s->name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(out, 1, s->cut ? n / 2 : n, f) != (s->cut ? n / 2 : n)) {
        perror(path);
        exit(1);
    }
    fclose(f);
    free(out);
    free(row);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_jpeg_corpus DIR\n");
        return 2;
    }
    static const spec specs[] = {
        { "gray_8x8.jpg", 8, 8, 1, 0, 0, 0, 0, 90, 0 },
        { "rgb_17x11_420.jpg", 17, 11, 3, 0, 0, 0, 0, 75, 0 },
        { "rgb_9x9_444.jpg", 9, 9, 3, 1, 0, 0, 0, 95, 0 },
        { "rgb_24x16_progressive.jpg", 24, 16, 3, 0, 1, 0, 0, 80, 0 },
        { "gray_16x16_progressive.jpg", 16, 16, 1, 0, 1, 0, 0, 80, 0 },
        { "rgb_32x24_restart.jpg", 32, 24, 3, 0, 0, 1, 0, 70, 0 },
        { "rgb_12x12_optimized.jpg", 12, 12, 3, 0, 0, 0, 1, 85, 0 },
        { "gray_1x1.jpg", 1, 1, 1, 0, 0, 0, 0, 50, 0 },
        { "cmyk_8x8.jpg", 8, 8, 4, 1, 0, 0, 0, 90, 0 },
        { "rgb_16x16_cut.jpg", 16, 16, 3, 0, 0, 0, 0, 90, 1 },
    };
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) put(argv[1], &specs[i]);
    return 0;
}
