/* tool.h: what the toolchain asks of libdcz beyond its public API (dcz.h).
 *
 * The toolchain (the stages, the trainer, the working model, the CLI)
 * includes of runtime/ only the headers meant for it, and never the
 * execution form (model.h) or a kernel family's internals:
 *   runtime/tool.h            this header;
 *   runtime/format/format.h   the file format's constants and readers, which
 *                             the .dcz writer shares;
 *   runtime/format/ops.h      the operator table (attributes, shapes);
 *   runtime/shapes.h          a convolution's geometry, a fused activation;
 *   runtime/threads.h         the worker threads, which the trainer shares;
 *   runtime/cpu/f32/gemm.h    the dense matrix product, the trainer's too;
 *   runtime/cpu/f32/wino.h    Winograd's transforms, the trainer's too;
 *   runtime/cpu/f32/elem.h    the element-wise kernels, whose activations
 *                             the trainer runs too;
 *   runtime/cuda/gpu_elem.h   the GPU kernels' launch and dense per-output
 *                             bodies, which the trainer's GPU kernels share.
 * tests/layout.sh fails when a file outside runtime/ and the tests includes
 * another, or when runtime/ includes anything of the toolchain.
 *
 * What this header gives:
 * - running with a tap on every layer's output, for calibration;
 * - the instruction sets this machine runs;
 * - the layers as it runs them: which have weights, their widths, which
 *   kernel runs each and why, from the forms its loader built; threads.
 * Not installed: these are not promises to programs that embed libdcz.
 *
 * Checked by tests/unit/test_calibrate.c (taps) and tests/unit/test_kernels.c
 * (kernel descriptions).
 */
#ifndef DCZ_RUNTIME_TOOL_H
#define DCZ_RUNTIME_TOOL_H

#include <stddef.h>
#include <stdint.h>

#include "dcz.h"

/* Called after layer `layer` with its output y (batch, width) as floats. */
typedef void (*dcz_tap_fn)(void *ctx, uint32_t layer, const float *y, size_t batch,
                           uint32_t width);

/* dcz_run, calling tap after each layer (on the integer region: a weighted
 * layer's accumulators dequantized, another layer's integers times its
 * output's scale; on a static model once per chunk of act_batch samples,
 * or of the samples its chunk block holds when fewer). Each layer sees the
 * whole of each such chunk: a tapped run takes no segments by chunks.
 * Allocates when tapping a calibrated model; for the toolchain's
 * measurements, not for deployment. Runs the CPU form of a model placed
 * on a GPU too. */
dcz_status dcz_run_tapped(dcz_model *m, const float *input, size_t batch, float *output,
                          dcz_tap_fn tap, void *ctx);

/* Instruction-set families of the vector kernels. */
typedef enum dcz_isa { DCZ_ISA_REF, DCZ_ISA_AVX2, DCZ_ISA_NEON, DCZ_ISA_AVX512 } dcz_isa;

/* Nonzero when this build has isa's kernels and this CPU runs them. */
int dcz_isa_supported(dcz_isa isa);

/* The GPU backend of this build, in one line: "CUDA backend: built for
 * sm_90 + compute_75 PTX (CUDA 13.0); GPU: NAME (compute capability X.Y)"
 * or "...; no NVIDIA GPU or driver found" (or another reason the device is
 * missing), or "CUDA backend: not built". */
void dcz_backend_describe(char *buf, size_t len);

/* Layers of m (the graph's, in order). */
uint32_t dcz_model_layer_count(const dcz_model *m);

/* Threads a run of m uses. */
uint32_t dcz_model_threads(const dcz_model *m);

/* A layer as libdcz runs it. */
/* The most kernels a layer's description lists as timed. */
#define DCZ_DESC_TIMED 4
typedef struct dcz_layer_desc {
    const char *name;     /* the layer's name (the model's) */
    uint16_t op;          /* DCZ_OP_* */
    int weighted;         /* has a weight and a bias (DENSE, CONV2D) */
    size_t width;         /* elements of its output, per sample */
    const char *kernel;   /* its kernel's name ("conv2d_sparse_direct"); a
                             layer without weights: its op's label */
    char why[512];        /* why that kernel, in one sentence ("" for a layer
                             without weights) */
    const char *gpu_kernel; /* the kernel it would run with on a GPU (the CUDA
                             backend's choice, told on any machine) */
    char gpu_why[160];    /* why, in a few words ("" for a layer without weights) */
    uint32_t seg_first;   /* the first layer of its segment (run.c: layers a chunk of
                             samples goes through together) */
    uint32_t chunk;       /* samples of such a chunk, 0: the layer takes the whole batch */
    uint32_t timed;       /* kernels timed at load (dcz_options.plan DCZ_PLAN_MEASURE), the
                             rules' choice first; 0: the rules chose */
    uint32_t timed_pick;  /* the one that runs it: the fastest */
    const char *timed_kernel[DCZ_DESC_TIMED];
    double timed_us[DCZ_DESC_TIMED];   /* each one's time (the layer with the layers after
                                          it up to the next weighted one), microseconds */
} dcz_layer_desc;

/* Describes layer `layer` of m (DCZ_ERR_ARG out of range). The kernel:
 * integer kernels on the integer region of a calibrated model; else dense
 * or sparse by the weight's encoding, a sparse convolution's im2col or
 * direct form, and a sparse fully connected layer's batch-1 forms (by
 * columns, by lanes), vector instructions and threads. */
dcz_status dcz_describe_layer(const dcz_model *m, uint32_t layer, dcz_layer_desc *d);

/* dcz_run, adding each layer's time in nanoseconds to ns[layer] (m's
 * layers, in order): the time of its kernel, its threads included; on a
 * GPU, its device time between two events, the layers enqueued one by one
 * (no graph). A layer the one before it runs fused (an activation, a
 * convolution's Add: load.c) adds nothing, its time being in that layer's. */
dcz_status dcz_run_layer_times(dcz_model *m, const float *input, size_t batch, float *output, uint64_t *ns);

#endif /* DCZ_RUNTIME_TOOL_H */
