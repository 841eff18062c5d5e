/* main.c: libdcz on a microcontroller. The .dcz in flash (blobs.S) is
 * planned and opened inside a static arena (dcz_plan_static,
 * dcz_open_static: nothing is allocated, there is no heap), its compressed
 * fully connected weights left in flash and read as stored at every run
 * (dcz_options.stream_weights: the arena holds no decoded copy), then run on
 * the test samples stored beside it (28 x 28 8-bit images, one after the
 * other; each pixel v becomes v / 255.0f, as dcz reads Fashion-MNIST), and
 * every output is printed through semihosting as the bits of its float
 * (8 hex digits), so a host can compare them bit for bit:
 *
 *   arena NEED of HAVE bytes
 *   sample I: CLASS HEX HEX ...
 *   stack USED of STACK bytes
 *   done N samples
 *
 * Exits 0; 1 when the model does not open or run, 2 when the arena is too
 * small (rebuild with ARENA_BYTES=NEED), 4 when the stack overflowed
 * (rebuild with a larger STACK_BYTES). make test-mcu runs it under QEMU
 * against the host's outputs.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dcz.h"

#ifndef STACK_BYTES
#define STACK_BYTES 8192
#endif
#ifndef ARENA_BYTES
#define ARENA_BYTES (64u * 1024)
#endif
#define PIXELS (28 * 28)
#define MAX_OUTPUTS 16

extern const unsigned char model[], model_end[], samples[], samples_end[];   /* blobs.S */
size_t stack_used(void);   /* startup.c */
static unsigned char arena[ARENA_BYTES];

int main(void)
{
    const size_t model_len = (size_t)(model_end - model);
    const size_t count = (size_t)(samples_end - samples) / PIXELS;
    dcz_options opt;
    dcz_options_init(&opt);   /* max_batch 1 */
    opt.stream_weights = 1;   /* compressed weights stay in flash, read as stored at every run */
    size_t need = 0;
    dcz_status s = dcz_plan_static(model, model_len, arena, sizeof arena, &opt, &need);
    printf("arena %lu of %lu bytes\n", (unsigned long)need, (unsigned long)sizeof arena);
    if (s != DCZ_OK) {
        printf("plan: %s\n", dcz_status_str(s));
        return s == DCZ_ERR_NOMEM ? 2 : 1;
    }
    dcz_model *m = NULL;
    s = dcz_open_static(model, model_len, arena, sizeof arena, &opt, &m);
    if (s != DCZ_OK) {
        printf("open: %s\n", dcz_status_str(s));
        return 1;
    }
    const size_t outputs = dcz_output_size(m);
    if (dcz_input_size(m) != PIXELS || outputs == 0 || outputs > MAX_OUTPUTS) {
        printf("the model takes %lu inputs and gives %lu outputs; this firmware feeds %u and reads at most %u\n",
               (unsigned long)dcz_input_size(m), (unsigned long)outputs, PIXELS, MAX_OUTPUTS);
        return 1;
    }
    static float x[PIXELS];
    float y[MAX_OUTPUTS];
    for (size_t i = 0; i < count; i++) {
        const unsigned char *p = samples + i * PIXELS;
        for (size_t k = 0; k < PIXELS; k++) x[k] = (float)p[k] / 255.0f;
        s = dcz_run(m, x, 1, y);
        if (s != DCZ_OK) {
            printf("run: %s\n", dcz_status_str(s));
            return 1;
        }
        size_t best = 0;
        for (size_t c = 1; c < outputs; c++)
            if (y[c] > y[best]) best = c;
        printf("sample %lu: %lu", (unsigned long)i, (unsigned long)best);
        for (size_t c = 0; c < outputs; c++) {
            uint32_t bits;
            memcpy(&bits, &y[c], sizeof bits);
            printf(" %08lx", (unsigned long)bits);
        }
        printf("\n");
    }
    dcz_close(m);   /* frees nothing: the model lives in the arena */
    printf("stack %lu of %lu bytes\n", (unsigned long)stack_used(), (unsigned long)STACK_BYTES);
    if (stack_used() >= STACK_BYTES) {
        printf("the stack overflowed into the arena\n");
        return 4;
    }
    printf("done %lu samples\n", (unsigned long)count);
    return 0;
}
