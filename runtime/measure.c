/* measure.c: the times of a loaded model's layers, for a load that
 * measures its kernels (dcz_options.plan DCZ_PLAN_MEASURE; load.c loads
 * the model once per candidate rank and keeps each layer's fastest).
 *
 * The model runs on a generated input (uniform in [0, 1), the same every
 * time) once to warm the caches, then a few times more with run.c timing
 * every layer (m->layer_ns); each layer keeps its best time. A weighted
 * layer owns the layers after it up to the next weighted one: the
 * activation, pool or sum it may fuse runs apart under another kernel,
 * and is counted with it either way.
 *
 * dcz_run_layer_times is the same timing for any caller (dcz bench
 * --per-layer).
 *
 * Checked by tests/unit/test_format.c (a measured load of the test models:
 * every layer's pick is its fastest candidate, the outputs the rules'
 * within float rounding, an integer model's bit for bit).
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/model.h"
#include "runtime/tool.h"
#ifdef DCZ_CUDA
#include "runtime/cuda/gpu.h"
#endif

dcz_status dcz_run_layer_times(dcz_model *m, const float *input, size_t batch, float *output, uint64_t *ns)
{
    if (!m || !input || !output || !ns) return DCZ_ERR_ARG;
#ifdef DCZ_CUDA
    if (m->gpu) return dcz_gpu_layer_times(m, input, batch, output, ns);
#endif
    m->layer_ns = ns;
    const dcz_status s = dcz_run_tapped(m, input, batch, output, NULL, NULL);
    m->layer_ns = NULL;
    return s;
}

/* Timed runs: as many as take about MEASURE_NS, from MEASURE_MIN_RUNS to
 * MEASURE_MAX_RUNS. */
#define MEASURE_NS 100000000u
#define MEASURE_MIN_RUNS 3
#define MEASURE_MAX_RUNS 20

dcz_status dcz_measure_layers(dcz_model *m, size_t batch, uint64_t *ns)
{
    if (batch == 0) batch = 1;
    const size_t nin = batch * m->in_size, nout = batch * m->out_size;
    float *x = malloc((nin ? nin : 1) * sizeof *x), *y = malloc((nout ? nout : 1) * sizeof *y);
    uint64_t *run = malloc((size_t)m->nlayers * sizeof *run);
    dcz_status s = x && y && run ? DCZ_OK : DCZ_ERR_NOMEM;
    uint32_t seed = 0x2545f491u;
    for (size_t i = 0; s == DCZ_OK && i < nin; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) * (1.0f / 16777216.0f);
    }
    for (uint32_t i = 0; i < m->nlayers; i++) ns[i] = UINT64_MAX;
    uint32_t runs = 0;
    for (uint32_t r = 0; s == DCZ_OK && r <= runs; r++) {
        memset(run, 0, (size_t)m->nlayers * sizeof *run);
        m->layer_ns = run;
        const uint64_t t0 = dcz_now_ns();
        s = dcz_run_tapped(m, x, batch, y, NULL, NULL);
        m->layer_ns = NULL;
        if (r == 0) {   /* the warm-up says how many runs the time allows */
            const uint64_t t = dcz_now_ns() - t0 + 1;
            runs = t >= MEASURE_NS / MEASURE_MIN_RUNS ? MEASURE_MIN_RUNS
                 : MEASURE_NS / t > MEASURE_MAX_RUNS ? MEASURE_MAX_RUNS : (uint32_t)(MEASURE_NS / t);
            continue;
        }
        /* each weighted layer with the layers it owns */
        uint32_t owner = UINT32_MAX;
        uint64_t sum = 0;
        for (uint32_t i = 0; i <= m->nlayers; i++) {
            if (i == m->nlayers || dcz_op_get(m->layers[i].op)->weighted) {
                if (owner != UINT32_MAX && sum < ns[owner]) ns[owner] = sum;
                if (i == m->nlayers) break;
                owner = i;
                sum = 0;
            }
            sum += run[i];
        }
    }
    free(x);
    free(y);
    free(run);
    return s;
}
