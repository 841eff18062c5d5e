/* dcz.h: the public API of libdcz, the dcz inference runtime.
 *
 * libdcz loads a .dcz file (docs/FORMAT.md) written by any stage of the dcz
 * toolchain and runs it. It links with libc and libm alone (built with the
 * CUDA backend, with the CUDA runtime and cuBLAS as well), never prints and
 * never exits; every function reports failure through a dcz_status.
 *
 * Devices: a heap model runs on the CPU, or on an NVIDIA GPU when libdcz
 * was built with its CUDA backend (make CUDA=auto finds nvcc). On a GPU
 * the compressed weights are uploaded once at open in their compressed
 * form and read by sparse codebook kernels; dense weights go through
 * cuBLAS; activations stay on the device between layers, and batch-1 runs
 * are replayed from a captured CUDA graph. Calibrated models of the 8-bit
 * schemes run their integer kernels on the GPU too (int8, dp4a, 32-bit
 * sums, the CPU's requantization: the same output bits); fixed16 ones
 * (64-bit sums) run their integer kernels on the CPU only.
 * Arena models (dcz_plan, dcz_open_static) run on the CPU only.
 *
 * Two ways to load a model:
 *   - on the heap: dcz_open_file / dcz_open_memory allocate what the model
 *     needs and copy what they use, so the file buffer may be freed as soon
 *     as they return; dcz_run grows the activation buffers on demand.
 *   - in an arena (embedded use): dcz_plan tells how many bytes the model
 *     needs, dcz_open_static builds it inside a buffer the caller gives and
 *     allocates nothing; dcz_run on such a model allocates nothing either.
 *     The file buffer must outlive the model: dense fp32 weights are read
 *     where they lie in it (an mmap'd file or flash).
 *
 * Ownership: a dcz_model returned by dcz_open_* belongs to the caller and is
 * released with dcz_close (which accepts NULL). Buffers passed in stay owned
 * by the caller.
 *
 * Thread safety: distinct models may be used from distinct threads; one model
 * must not be run from two threads at once (it owns its activation buffers).
 *
 * On x86 CPUs with AMX-INT8, each load asks Linux once for the process's
 * use of the AMX tile registers (arch_prctl ARCH_REQ_XCOMP_PERM), which the
 * convolutions of calibrated 8-bit models run on; where that is refused
 * (an older kernel, a seccomp filter) they run on their other kernels,
 * with the same results.
 */
#ifndef DCZ_H
#define DCZ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DCZ_VERSION_MAJOR 0
#define DCZ_VERSION_MINOR 1
#define DCZ_VERSION_PATCH 0
#define DCZ_VERSION_STRING "0.1.0"

/* Every failure libdcz (and the dcz toolchain) can report. 0 is success. */
typedef enum dcz_status {
    DCZ_OK = 0,
    DCZ_ERR_ARG,          /* invalid argument from the caller */
    DCZ_ERR_IO,           /* a file could not be opened, read or written */
    DCZ_ERR_NOMEM,        /* an allocation failed or an arena is too small */
    DCZ_ERR_FORMAT,       /* input is not a valid .dcz (bad magic, bounds, ...) */
    DCZ_ERR_CRC,          /* a checksum does not match: the file is damaged */
    DCZ_ERR_VERSION,      /* the file's major version is not supported */
    DCZ_ERR_UNSUPPORTED,  /* valid file using a feature this build lacks */
    DCZ_ERR_SHAPE,        /* tensor shapes do not agree */
    DCZ_ERR_DATA,         /* a dataset or other input file is malformed */
    DCZ_ERR_DEVICE,       /* the requested device is absent or failed */
    DCZ_ERR_INTERNAL,     /* a bug in dcz */
    DCZ_ERR_DIVERGED,     /* training diverged: a loss or weight is no longer finite
                             (the toolchain only; its settings, a learning rate or
                             momentum too high, are to blame) */
    DCZ_ERR_LIMIT         /* an input needs more than a limit allows: a model more
                             work per sample than dcz_options.max_work, a dataset
                             more memory than the toolchain's bound */
} dcz_status;

/* A short, static, human-readable message for s. Never NULL. */
const char *dcz_status_str(dcz_status s);

typedef enum dcz_device {
    DCZ_DEVICE_AUTO = 0,  /* a GPU when the build and machine have one and the backend
                             runs the model, else the CPU (dcz_model_device_note says why) */
    DCZ_DEVICE_CPU,
    DCZ_DEVICE_GPU        /* a GPU or DCZ_ERR_DEVICE (none, or a build without the
                             backend); DCZ_ERR_UNSUPPORTED for a fixed16 model */
} dcz_device;

typedef enum dcz_precision {
    DCZ_PRECISION_AUTO = 0, /* a calibrated model runs on integers, others in fp32 */
    DCZ_PRECISION_FP32      /* floating point always (a calibration table is ignored) */
} dcz_precision;

/* The most of the CPU's instruction sets a model's kernels may use
 * (dcz_options.isa), so that each variant can be run and compared on one
 * machine; every level runs the same operators, only slower below the
 * CPU's best. Levels above what the CPU has (or the build compiled, as in
 * a scalar-only build) are refused at load with DCZ_ERR_DEVICE. */
typedef enum dcz_isa_cap {
    DCZ_CAP_NATIVE = 0,   /* all this CPU and build have (the default) */
    DCZ_CAP_SCALAR,       /* no vector instructions: the scalar kernels */
    DCZ_CAP_AVX2,         /* x86: AVX2 and FMA */
    DCZ_CAP_AVX512,       /* x86: and AVX-512 F, BW, VL */
    DCZ_CAP_AVX512_VNNI,  /* x86: and AVX-512 VNNI */
    DCZ_CAP_AVX512_VBMI,  /* x86: and AVX-512 VBMI: every x86 kernel but AMX's */
    DCZ_CAP_NEON,         /* 64-bit Arm: NEON */
    DCZ_CAP_COUNT
} dcz_isa_cap;

/* How a load chooses each layer's CPU kernel (dcz_options.plan). */
typedef enum dcz_plan_mode {
    DCZ_PLAN_RULES = 0,   /* by the kernel families' rules, measured on the CPUs
                             libdcz was tuned on (the default; a load takes no time
                             to choose) */
    DCZ_PLAN_MEASURE      /* each weighted layer that more than one kernel can run
                             gets the one that ran it fastest on this CPU: at load,
                             the model runs a few times on a generated input of
                             max_batch samples with each layer's candidates, timed
                             layer by layer (the FFTW_MEASURE idea). The load takes
                             a few of the model's runs longer; a float model's
                             outputs may then differ from the rules' in their last
                             bits (its kernels sum in other orders), an integer
                             model's never. Heap models on the CPU: AUTO takes the
                             CPU, GPU and dcz_open_static are DCZ_ERR_ARG. */
} dcz_plan_mode;

/* The level's name as the CLI's --isa takes it ("native", "scalar",
 * "avx2", "avx512", "avx512-vnni", "avx512-vbmi", "neon"); "?" for no
 * level. */
const char *dcz_isa_cap_name(dcz_isa_cap cap);

/* The level named name into *out; DCZ_ERR_ARG for a name of none. */
dcz_status dcz_isa_cap_parse(const char *name, dcz_isa_cap *out);

/* DCZ_OK when models capped at cap run here: this build has the level's
 * kernels and this CPU its instructions; else DCZ_ERR_DEVICE, and why
 * (why_len bytes, may be NULL) says what is missing and lists what this
 * machine has. */
dcz_status dcz_isa_probe(dcz_isa_cap cap, char *why, size_t why_len);

typedef struct dcz_options {
    dcz_device device;
    int threads;          /* heap models: threads a large sparse fully connected layer
                             is split over (its rows; results do not depend on it);
                             0: every online processor, at most 16. Models of
                             dcz_open_static run on the caller's thread only. */
    int force_reference;  /* nonzero: run the scalar reference kernels only */
    dcz_precision precision;
    size_t max_batch;     /* dcz_plan, dcz_open_static: samples the arena holds
                             activations for (0 means 1); dcz_run takes larger
                             batches max_batch samples at a time. The heap
                             loaders ignore it. */
    uint64_t max_work;    /* the most work one sample may take: multiply-adds of
                             the weighted layers (every stored weight once per
                             output position) plus the pools' window reads and an
                             element per output of the other layers. A model
                             above it is refused at load with DCZ_ERR_LIMIT, so a
                             program that loads untrusted models is not stalled.
                             0 means DCZ_DEFAULT_MAX_WORK; UINT64_MAX: no bound. */
    dcz_isa_cap isa;      /* CPU kernels: the most of the instruction sets they may
                             use (DCZ_CAP_NATIVE, 0: all there are). A capped model
                             runs on the CPU: AUTO takes it, GPU is DCZ_ERR_ARG. */
    dcz_plan_mode plan;   /* how the CPU kernels are chosen (DCZ_PLAN_RULES, 0) */
    int stream_weights;   /* dcz_plan, dcz_plan_static, dcz_open_static: nonzero keeps the
                             compressed (codebook) weights of fully connected layers
                             where the buffer holds them, read as stored at every run
                             (the same outputs, bit for bit): the arena holds no
                             decoded copy of them, only their codebooks (on integers,
                             a table of the codebook per output row), and each run
                             decodes them again, in about ten times the time of the
                             references on the decoded form. For a microcontroller,
                             whose flash holds the file (samples/mcu/). The buffer
                             must outlive the model, as for every static model. The
                             heap loaders and the GPU: DCZ_ERR_ARG. */
} dcz_options;

/* 2^36, about 69 G multiply-adds: four times VGG-16 at 224 x 224. */
#define DCZ_DEFAULT_MAX_WORK ((uint64_t)1 << 36)

/* Fills opt with the defaults (auto device, library-chosen threads, max_batch
 * 1, max_work DCZ_DEFAULT_MAX_WORK). */
void dcz_options_init(dcz_options *opt);

typedef struct dcz_model dcz_model;

/* DCZ_OK when models can run on device here (CPU: always; GPU or AUTO: this
 * build has the CUDA backend and the machine a CUDA device); else
 * DCZ_ERR_DEVICE. why (why_len bytes, may be NULL) gets the GPU's name, or
 * what is missing with the CUDA runtime's reason. */
dcz_status dcz_device_probe(dcz_device device, char *why, size_t why_len);

/* Loads the .dcz at path. opt may be NULL for defaults. On success *out is a
 * model owned by the caller; on failure *out is NULL. */
dcz_status dcz_open_file(const char *path, const dcz_options *opt, dcz_model **out);

/* Loads a .dcz held in memory (len bytes at buf). The buffer is not kept. */
dcz_status dcz_open_memory(const void *buf, size_t len, const dcz_options *opt,
                           dcz_model **out);

/* ---- loading into a caller's arena (allocates nothing) -------------------
 *
 * The arena holds the model, its layers, the execution form of compressed
 * weights (decoded once), the integer form of calibrated weights, the
 * scratch of the convolutions and of the batch kernels of sparse layers
 * (a tile of 32 samples of a layer's input), and the activation buffers (and, on integers, the
 * accumulators) of max_batch samples. Dense fp32 tensors are not copied:
 * on a little-endian host with IEEE floats they are read in place from the
 * file buffer, 4-byte aligned as the format lays them out when the buffer
 * itself is (mmap, malloc and a _Alignas(64) array are); otherwise, and for
 * fp16 and integer tensors, a converted copy lives in the arena. */

/* Alignment the model keeps inside an arena. The arena may lie at any
 * address: dcz_plan counts the DCZ_ARENA_ALIGN - 1 bytes the model may skip
 * to reach the first such boundary. */
#define DCZ_ARENA_ALIGN 16

/* Validates the .dcz in buf (len bytes) as fully as dcz_open_memory, with
 * the same errors, and writes to *arena_bytes the size of the smallest
 * arena dcz_open_static accepts at any address for this file and these
 * options (device, precision, max_batch). The size also depends on buf's
 * address modulo 4 (see above): plan with the buffer you will open, or one
 * equally aligned. It depends on the CPU too: where it has AVX-512, fully
 * connected codebook layers also get a second execution form for batch 1
 * (the lane form: the plan reserves up to about 4.5 bytes per kept
 * weight, a built form takes 2 to 4, and three shifted copies of the
 * largest such layer's input); dcz_open_static given an arena too small
 * for it but as large as the plan without it builds the model without it.
 * An arena smaller than that plan at the least favourable address is
 * refused (without lane forms, one of *arena_bytes - 1 bytes). The lane form fuses each product
 * into its sum (one rounding where the other kernels round twice), so on
 * such a CPU a sample run at batch 1 (or in a static model's chunk of one)
 * may differ in its last bits from the same sample run with others;
 * otherwise a sample gives the same bits whatever the batch, and always
 * whatever the threads.
 * *arena_bytes is 0 on failure.
 * dcz_plan itself is not static: it decodes the model once into a
 * temporary heap block (the arena's size at most), freed before it returns,
 * to find errors in compressed streams. A device that cannot allocate can
 * use a size planned offline: dcz_open_static validates as fully. */
dcz_status dcz_plan(const void *buf, size_t len, const dcz_options *opt, size_t *arena_bytes);
/* dcz_plan without the heap: the same validation and the same
 * *arena_bytes, the sizing and the decoding done inside work (work_bytes
 * bytes at any address, which may be the arena the model is then opened
 * in). Allocates nothing and calls no stdio. DCZ_ERR_NOMEM when work is
 * smaller than the answer, which *arena_bytes then holds where the sizing
 * could tell (0 when work holds not even the graph's tensors: about 200
 * bytes a layer); nothing is validated past the sizing then. The one
 * planner of a build without the heap (HEAP=0, as for a microcontroller:
 * make mcu). */
dcz_status dcz_plan_static(const void *buf, size_t len, void *work, size_t work_bytes,
                           const dcz_options *opt, size_t *arena_bytes);
/* (dcz_plan, dcz_plan_static and dcz_open_static build CPU models: device
 * GPU gives DCZ_ERR_DEVICE, AUTO the CPU.) */

/* Builds the model of buf inside arena (arena_bytes bytes at any address;
 * dcz_plan tells how many it needs). Allocates nothing and calls no stdio.
 * opt may be NULL for defaults (max_batch 1). On success *out points into
 * the arena; on failure *out is NULL and the arena's contents are
 * unspecified. Errors: those of dcz_open_memory, DCZ_ERR_NOMEM when the
 * arena is too small, DCZ_ERR_ARG for a NULL arena or out.
 * Both buffers stay owned by the caller and must outlive the model, and
 * neither may be modified while the model is in use. dcz_close on the model
 * frees nothing; reusing the arena is enough to drop it. An arena of
 * megabytes runs faster in huge pages, which the heap loaders ask for and
 * a caller of this one asks for itself: on Linux, the arena aligned to 2
 * MB and madvise(arena, bytes, MADV_HUGEPAGE) (Debian's default gives
 * pages of 4 KB to memory that does not ask). */
dcz_status dcz_open_static(const void *buf, size_t len, void *arena, size_t arena_bytes,
                           const dcz_options *opt, dcz_model **out);

/* Releases everything the model owns. m may be NULL. A model built by
 * dcz_open_static owns nothing: dcz_close does nothing on it. */
void dcz_close(dcz_model *m);

/* Number of floats in one input sample and one output sample. */
size_t dcz_input_size(const dcz_model *m);
size_t dcz_output_size(const dcz_model *m);

/* Input shape of one sample (without the batch dimension): writes up to
 * max_rank dimensions to dims and returns the rank. */
int dcz_input_shape(const dcz_model *m, uint32_t *dims, int max_rank);

/* How an image becomes the model's input, as the network was trained (see
 * docs/FORMAT.md, "PREPROCESS section"): the shorter side resized to resize
 * pixels by antialiased bilinear interpolation (0: not resized), the
 * center crop_h x crop_w kept (0: no crop), 8-bit samples scaled to [0, 1],
 * then (x - mean[c]) / std[c] for each of channels channels (1 gray, 3 RGB). */
typedef struct dcz_preprocess {
    uint32_t resize;
    uint32_t crop_h, crop_w;
    uint32_t channels;
    float mean[3], std[3];
} dcz_preprocess;

/* 1 and *out filled when m's file records its preprocessing, else 0 (the
 * caller prepares its input as it knows best). */
int dcz_model_preprocess(const dcz_model *m, dcz_preprocess *out);

/* How a model computes (see docs/FORMAT.md, "CALIB section"). */
typedef enum dcz_scheme {
    DCZ_SCHEME_NONE = 0,     /* floating point */
    DCZ_SCHEME_INT8 = 1,     /* int8 weights and activations, 32-bit sums, any scales */
    DCZ_SCHEME_FIXED8 = 2,   /* dynamic fixed point, 8 bits: power-of-two scales, shifts */
    DCZ_SCHEME_FIXED16 = 3   /* the same, 16 bits */
} dcz_scheme;

/* The scheme m runs its weighted layers in (DCZ_SCHEME_NONE for NULL). */
dcz_scheme dcz_model_scheme(const dcz_model *m);

/* The device m runs on: DCZ_DEVICE_CPU or DCZ_DEVICE_GPU. */
dcz_device dcz_model_device(const dcz_model *m);

/* Why a model opened with DCZ_DEVICE_AUTO runs on the CPU although a GPU was
 * looked for ("running on the CPU: no NVIDIA GPU or driver found"); "" when it runs
 * where it was asked to, and in a build without the CUDA backend. Owned by
 * the model. */
const char *dcz_model_device_note(const dcz_model *m);

/* Runs batch samples. input holds batch * dcz_input_size floats, output
 * receives batch * dcz_output_size floats. batch 0 is allowed and does
 * nothing. On a heap model, may grow the model's activation buffers on a
 * larger batch than seen before (DCZ_ERR_NOMEM if that fails). On a model
 * from dcz_open_static, allocates nothing: a batch above max_batch runs as
 * consecutive runs of max_batch samples (and the rest). */
dcz_status dcz_run(dcz_model *m, const float *input, size_t batch, float *output);

/* Memory for dcz_run's input and output that m's device copies fastest:
 * on a GPU model, page-locked host memory, which the copies in and out
 * read and write at the bus's full speed (other memory goes through a
 * staging copy: at batch 64 of 224 x 224 images, milliseconds a run);
 * plain heap memory on the CPU. NULL when none is left, and in a build
 * without the heap. Free it with dcz_host_free on the same model, before
 * dcz_close. */
void *dcz_host_alloc(const dcz_model *m, size_t bytes);
void dcz_host_free(const dcz_model *m, void *p);

#ifdef __cplusplus
}
#endif

#endif /* DCZ_H */
