# dcz: one Makefile for the toolchain, the runtime library, tests and benchmarks.
#
#   ./configure       installs the Debian packages the build needs (on a
#                     bare machine, make itself), writes config.mk
#   make              bin/dcz and lib/libdcz.a
#   make test         checks the packages again, builds, runs every test
#   make demo         LeNet-300-100 on Fashion-MNIST through the whole pipeline
#                     (MODEL=lenet5 or MODEL=cnn for the convolutional ones)
#   make bench        benchmarks (ratios against baselines of the same run),
#                     a LeNet-5 training epoch and batch-1 LeNet latency next
#                     to PyTorch when installed, the scaling of retraining
#                     over MPI ranks (bench/scaling.sh), the peak memory
#                     of training on image folders (bench/stream_memory.sh),
#                     and torchvision's nine networks, dense, compressed and
#                     int8, against ONNX Runtime (bench/torchvision.sh; SKIP
#                     without python3-torchvision)
#   make fuzz         libFuzzer targets (needs clang) with ASan and UBSan, where
#                     any sanitizer report is a failure, and their corpus
#                     replays built the same way (build/fuzz/)
#   make fuzz-run     every fuzz target for FUZZ_SECONDS (default 60; FUZZ_RUNS
#                     caps the inputs), FUZZ_JOBS (2) at a time, each from a
#                     copy of its corpus; prints inputs, inputs/s, coverage
#                     and findings (inputs kept in build/fuzz/findings/);
#                     FUZZ_TARGETS="fuzz_png fuzz_idx" picks some
#   make fuzz-merge   adds the inputs of the last fuzz-run that add coverage
#                     to the committed corpus tests/fuzz/corpus/ (explicit:
#                     review and commit the new files)
#   make install PREFIX=/usr/local
#   make CROSS=aarch64-linux-gnu-
#                     libdcz and its runtime tests for another target, in
#                     build-aarch64/ and lib-aarch64/ (the native build stays)
#   make test-aarch64 those tests under qemu-user (SKIP without the tools)
#   make size         text bytes of libdcz built with -Os, with every kernel,
#                     with the references and the integer kernels
#                     (KERNELS=ref,q8) and with the scalar references alone
#                     (ISA=scalar); for the Cortex-M4 (make mcu), libdcz as a
#                     firmware links it and the int8 LeNet-300-100
#                     firmware's flash and RAM (scripts/mcu-size.sh)
#   make mcu          libdcz for a Cortex-M4 (arm-none-eabi, picolibc), in
#                     build-arm/ and lib-arm/; samples/mcu/ is a firmware
#   make test-mcu     that firmware under qemu-system-arm against the host,
#                     bit for bit (part of make test; SKIP without the tools)
#   make test-scalar  the ISA=scalar and KERNELS=ref,q8 builds against the
#                     native one, model by
#                     model (part of make test)
#   make test-bare    the README's two commands in a minimal Debian chroot
#                     with only git (scripts/bare-check.sh; root, network)
#
# Toggles (a comment never shares a toggle's line: GNU make would keep the
# spaces before it in the value, and `DEPS ?= 1   # ...` is not 1):
#   CUDA      auto: libdcz's CUDA backend (runtime/cuda/) when nvcc
#             is found (PATH, or NVCC=/path/to/nvcc); 1 requires it; 0 builds
#             the CPU runtime alone. Machine code for sm_90 (CUDA_SM) and PTX
#             for the oldest architecture the nvcc compiles (compute_70 up to
#             CUDA 12, compute_75 from CUDA 13), which the driver compiles for
#             any newer GPU. With it libdcz links the CUDA runtime and cuBLAS.
#             nvcc contracts no multiply-add (--fmad=false), as the host code
#             (-ffp-contract=off): element-wise ops round as on the CPU.
#   MPI       auto: multi-process retraining (mpirun, srun) when OpenMPI's
#             development files are found (Debian: libopenmpi-dev); 1
#             requires them; 0 builds a single-process dcz
#   SANITIZE  e.g. address,undefined (tests and the CLI); any report fails
#             the program (-fno-sanitize-recover=all)
#   DEBUG     1: -O0 -g3
#   DEPS      0: do not check or install Debian packages before test, demo
#             and bench (scripts/deps.sh)
#   CROSS     a cross compiler's prefix: builds libdcz and the runtime tests only
#   ISA       native: libdcz with every vector kernel of the target (x86:
#             AVX2, AVX-512, VNNI, VBMI, AMX, each run where the CPU has it;
#             64-bit Arm: NEON); scalar: the scalar references alone, for a
#             target whose vector units libdcz has no kernels for, or the
#             smallest library (in build-scalar/ and lib-scalar/; make size
#             reports both)
#   KERNELS   all: every kernel family; or the families to build, by commas,
#             among ref (the scalar references, always built), f32 (the
#             float vector kernels) and q8 (the 8-bit integer ones): the
#             plan falls back on the references for a family left out.
#             KERNELS=ref,q8 is the smallest library that runs calibrated
#             models at speed (in build-ref-q8/ and lib-ref-q8/; make size
#             reports it)
# ./configure writes config.mk (PREFIX, DEPS); the command line still wins.
-include config.mk
CC       ?= cc
CUDA     ?= auto
MPI      ?= auto
NCCL     ?= auto
SANITIZE ?=
DEBUG    ?= 0
PREFIX   ?= /usr/local
DEPS     ?= 1
CROSS    ?=
ISA      ?= native
KERNELS  ?= all
THREADS  ?= 1
HEAP     ?= 1

ifneq ($(filter-out native scalar,$(strip $(ISA))),)
$(error ISA=$(ISA): native or scalar)
endif
# the families asked for, sorted: "all", or some of "f32 q8 ref"
comma := ,
KFAM := $(sort $(subst $(comma), ,$(strip $(KERNELS))))
ifneq ($(filter-out f32 q8 ref,$(KFAM)),)
ifneq ($(KFAM),all)
$(error KERNELS=$(KERNELS): all, or families by commas among ref, f32 and q8 (ref is always built))
endif
endif
ifeq ($(filter all,$(KFAM))$(filter f32,$(KFAM))$(filter q8,$(KFAM)),f32q8)
KFAM := all
endif
KTAG := $(if $(filter all,$(KFAM)),,ref$(if $(filter f32,$(KFAM)),-f32)$(if $(filter q8,$(KFAM)),-q8))
ifeq ($(strip $(CROSS))$(filter scalar,$(strip $(ISA)))$(KTAG),)
BUILD  := build
LIBDIR := lib
else ifeq ($(strip $(CROSS))$(KTAG),)
BUILD  := build-scalar
LIBDIR := lib-scalar
else ifeq ($(strip $(CROSS))$(filter scalar,$(strip $(ISA))),)
BUILD  := build-$(KTAG)
LIBDIR := lib-$(KTAG)
else
CC     := $(strip $(CROSS))gcc
XARCH  := $(firstword $(subst -, ,$(strip $(CROSS))))
BUILD  := build-$(XARCH)
LIBDIR := lib-$(XARCH)
endif
# a build of libdcz and its runtime tests alone: another target, ISA=scalar
# or some kernel families
RTONLY := $(strip $(CROSS))$(filter scalar,$(strip $(ISA)))$(KTAG)
# a bare-metal target (a CROSS prefix such as arm-none-eabi-): libdcz alone,
# no test program (they need an operating system)
BARE := $(findstring -none-,$(strip $(CROSS)))
WARN  := -Wall -Wextra -Wshadow -Wno-unused-parameter
ifeq ($(strip $(DEBUG)),1)
OPT := -O0 -g3
else
OPT := -O2 -g
endif
# -ffp-contract=off: a*b+c stays two roundings unless the code asks for a
# fused multiply-add, so results do not depend on the compiler (GCC in ISO
# mode already does this; clang fuses by default), and the runtime's batch-1
# and batch-N kernels agree bit for bit on every compiler
CFLAGS_ALL := -std=c11 $(WARN) $(OPT) -ffp-contract=off -D_POSIX_C_SOURCE=200809L -Iinclude -I. $(CFLAGS)
ifeq ($(strip $(ISA)),scalar)
CFLAGS_ALL += -DDCZ_SCALAR
endif
ifeq ($(filter all f32,$(KFAM)),)
CFLAGS_ALL += -DDCZ_NO_F32
endif
ifeq ($(filter all q8,$(KFAM)),)
CFLAGS_ALL += -DDCZ_NO_Q8
endif
ifeq ($(strip $(THREADS)),0)
CFLAGS_ALL += -DDCZ_NO_THREADS
endif
ifeq ($(strip $(HEAP)),0)
CFLAGS_ALL += -DDCZ_NO_HEAP
endif
LDLIBS_TOOL := $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas) -lz -lm -lpthread
ifeq ($(strip $(CROSS)),)
CFLAGS_ALL += $(shell pkg-config --cflags openblas 2>/dev/null)
endif
# ONNX (interop/), PNG and JPEG (train/): protobuf-c, libpng and libjpeg
# (libjpeg-turbo), toolchain only
CFLAGS_ALL += -I$(BUILD)/onnx $(shell pkg-config --cflags libpng libjpeg libprotobuf-c 2>/dev/null)
LDLIBS_TOOL += $(shell pkg-config --libs libpng libjpeg libprotobuf-c 2>/dev/null || echo -lpng16 -ljpeg -lprotobuf-c)
# figures (plot/): cairo, toolchain only
CFLAGS_ALL += $(shell pkg-config --cflags cairo 2>/dev/null)
LDLIBS_TOOL += $(shell pkg-config --libs cairo 2>/dev/null || echo -lcairo)
# CUDA: nvcc on PATH, else where the CUDA toolkit installs it
ifeq ($(strip $(CROSS)),)
NVCC ?= $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc))
endif
ifeq ($(strip $(CUDA)),auto)
CUDA_ON := $(if $(strip $(CROSS)),0,$(if $(strip $(NVCC)),1,0))
else ifeq ($(strip $(CUDA)),0)
CUDA_ON := 0
else
CUDA_ON := 1
endif
CUDA_SM ?= 90
ifeq ($(CUDA_ON),1)
CUDA_HOME := $(patsubst %/bin/,%,$(dir $(realpath $(NVCC))))
CUDA_PTX  := $(if $(shell $(NVCC) --list-gpu-arch 2>/dev/null | grep -x compute_70),70,75)
CUDA_LIBDIR := $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib))
NVFLAGS := -std=c++17 $(OPT) -Iinclude -I. -DDCZ_CUDA=1 \
           -gencode arch=compute_$(CUDA_SM),code=sm_$(CUDA_SM) \
           -gencode arch=compute_$(CUDA_PTX),code=compute_$(CUDA_PTX) \
           -Xcompiler -Wall,-Wextra,-Wno-unused-parameter -Werror=all-warnings \
           --fmad=false
CFLAGS_ALL += -DDCZ_CUDA=1 -I$(CUDA_HOME)/include '-DDCZ_CUDA_TARGETS="sm_$(CUDA_SM) + compute_$(CUDA_PTX) PTX"'
LDLIBS_RT := -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcublas -lcudart -lstdc++
CUDA_SAYS := CUDA backend: built ($(NVCC), sm_$(CUDA_SM) + compute_$(CUDA_PTX) PTX)
else
LDLIBS_RT :=
CUDA_SAYS := CUDA backend: not built ($(if $(filter 0,$(strip $(CUDA))),CUDA=0,no nvcc found))
endif
LDLIBS_TOOL += $(LDLIBS_RT)
# MPI (train/dist_mpi.c, the CLI only; libdcz never links it): found
# through pkg-config's ompi-c
ifeq ($(strip $(MPI)),auto)
MPI_ON := $(if $(strip $(CROSS)),0,$(shell pkg-config --exists ompi-c 2>/dev/null && echo 1 || echo 0))
else ifeq ($(strip $(MPI)),0)
MPI_ON := 0
else
MPI_ON := 1
endif
ifeq ($(MPI_ON),1)
MPI_CFLAGS  := $(shell pkg-config --cflags ompi-c 2>/dev/null)
LDLIBS_TOOL += $(shell pkg-config --libs ompi-c 2>/dev/null || echo -lmpi)
DIST_OFF    := train/dist_single.c
MPI_SAYS    := MPI: built (Open MPI)
else
DIST_OFF    := train/dist_mpi.c
MPI_SAYS    := MPI: not built ($(if $(filter 0,$(strip $(MPI))),MPI=0,no libopenmpi-dev found))
endif
# NCCL (train/dist_mpi.c: the ranks' sums between their GPUs; the CLI only,
# libdcz never links it): with the CUDA backend and MPI, where the CUDA
# toolkit (or the system) has nccl.h and libnccl
NCCL_INC := $(firstword $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h))
ifeq ($(strip $(NCCL)),auto)
NCCL_ON := $(if $(and $(filter 1,$(CUDA_ON)),$(filter 1,$(MPI_ON)),$(NCCL_INC)),1,0)
else ifeq ($(strip $(NCCL)),0)
NCCL_ON := 0
else
NCCL_ON := 1
endif
ifeq ($(NCCL_ON),1)
LDLIBS_TOOL += -lnccl
NCCL_SAYS := NCCL: built
else
NCCL_SAYS := NCCL: not built ($(if $(filter 0,$(strip $(NCCL))),NCCL=0,$(if $(filter 1,$(CUDA_ON)),$(if $(filter 1,$(MPI_ON)),no nccl.h found,no MPI),no CUDA backend)))
endif
# -fno-sanitize-recover=all: the first sanitizer report ends the program
# with a failure (UBSan would otherwise print and go on, and a test or a
# corpus replay pass with undefined behaviour in its log)
ifneq ($(strip $(SANITIZE)),)
CFLAGS_ALL += -fsanitize=$(strip $(SANITIZE)) -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS_ALL := -fsanitize=$(strip $(SANITIZE)) -fno-sanitize-recover=all
endif

# libdcz: runtime, Huffman and arithmetic decoding; links with libc and libm alone (and
# with the CUDA backend, the CUDA runtime and cuBLAS).
# runtime/ holds the API, the loader, the plan and the runner; its folders
# the format's rules (format/), the CPU kernels (cpu/ref/ the scalar
# references, cpu/f32/ the float kernels, cpu/q8/ the 8-bit integer ones)
# and the CUDA backend (cuda/): runtime/README.md is their map.
LIB_SRC  := $(wildcard runtime/*.c runtime/format/*.c runtime/cpu/*.c runtime/cpu/*/*.c) \
            $(if $(filter 1,$(CUDA_ON)),runtime/cuda/gpu.c) huffman/huff_decode.c huffman/arith_decode.c
# HEAP=0, the arena API alone: no file reading (the only stdio), no measured
# plan, and not the toolchain's window on the plan (describe.c, dcz info)
ifeq ($(strip $(HEAP)),0)
LIB_SRC  := $(filter-out runtime/open_file.c runtime/measure.c runtime/describe.c,$(LIB_SRC))
endif
LIB_CU   := $(if $(filter 1,$(CUDA_ON)),$(wildcard runtime/cuda/*.cu))
# the toolchain: everything a stage needs beyond the runtime: the working
# model (model/: the editable document and the .dcz writer), the trainer,
# the stages
TOOL_SRC := huffman/huff_encode.c huffman/arith_encode.c $(wildcard model/*.c) \
            $(filter-out $(DIST_OFF),$(wildcard train/*.c prune/*.c quantize/*.c calibrate/*.c steer/*.c plot/*.c))
CLI_SRC  := $(wildcard cli/*.c)
# ONNX import and export: C bindings generated at build time by protoc-c from
# the schema Debian's libonnx-dev installs (build/onnx/, never committed)
ONNX_PROTO ?= /usr/include/onnx/onnx.proto
ONNX_GEN   := $(BUILD)/onnx/onnx.pb-c.c
TOOL_SRC   += $(wildcard interop/*.c)

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o) $(LIB_CU:%.cu=$(BUILD)/%.cu.o)
# the trainer's CUDA device (train/cuda/), with the CUDA backend
TOOL_CU  := $(if $(filter 1,$(CUDA_ON)),$(wildcard train/cuda/*.cu))
TOOL_OBJ := $(TOOL_SRC:%.c=$(BUILD)/%.o) $(BUILD)/onnx/onnx.pb-c.o $(TOOL_CU:%.cu=$(BUILD)/%.cu.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)

UNIT_SRC := $(wildcard tests/unit/*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_SRC := $(filter-out tests/fuzz/replay.c,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_REPLAY := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/tests/replay_%)
# bench_gpu.c has its own rule (CUDA builds only: it links cuSPARSE)
BENCH_SRC := $(filter-out bench/bench_gpu.c,$(wildcard bench/*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%) $(if $(filter 1,$(CUDA_ON)),$(BUILD)/bench/bench_gpu)

# Runtime tests link libdcz alone, so they also build for CROSS targets:
# the kernel tests, and test_static and test_arith, which add models and
# streams made by the toolchain where it is built (natively). test_static
# counts allocations by wrapping the allocator at link time.
RT_ONLY  := test_kernels test_qkernels test_simd $(if $(RTONLY),test_static test_arith)
RT_BIN   := $(patsubst %,$(BUILD)/tests/%,test_kernels test_qkernels test_simd test_static test_arith)
WRAP_ALLOC := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,--wrap=aligned_alloc,--wrap=posix_memalign
$(BUILD)/tests/test_static: TEST_LDFLAGS := $(WRAP_ALLOC)

.PHONY: all test demo bench fuzz fuzz-run fuzz-merge install clean deps check-lib tests-build test-aarch64 test-scalar \
        size test-bare mcu test-mcu
ifeq ($(RTONLY),)
all: bin/dcz lib/libdcz.a lib/libdcztool.a
	@echo "dcz: $(CUDA_SAYS); $(MPI_SAYS); $(NCCL_SAYS)"
else ifneq ($(BARE),)
all: $(LIBDIR)/libdcz.a
	@echo "dcz: $(CC) build: $(LIBDIR)/libdcz.a"
else
all: $(LIBDIR)/libdcz.a $(RT_BIN) $(BUILD)/check-lib
	@echo "dcz: $(CC) build: $(LIBDIR)/libdcz.a, runtime tests in $(BUILD)/tests"
endif

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(ONNX_PROTO):
	@echo "dcz: $@ is missing: install libonnx-dev, protobuf-c-compiler and libprotobuf-c-dev (bash scripts/deps.sh)" >&2; exit 1
$(ONNX_GEN): $(ONNX_PROTO)
	@mkdir -p $(dir $@)
	protoc-c --proto_path=$(dir $(ONNX_PROTO)) --c_out=$(dir $@) $(ONNX_PROTO)
$(BUILD)/onnx/onnx.pb-c.o: $(ONNX_GEN)
	$(CC) $(CFLAGS_ALL) -c $< -o $@
# sources that include the generated header wait for it
$(filter $(BUILD)/interop/%,$(TOOL_OBJ)) $(UNIT_BIN) $(FUZZ_REPLAY): | $(ONNX_GEN)

$(BUILD)/runtime/cuda/%.cu.o: runtime/cuda/%.cu runtime/cuda/gpu.h runtime/cuda/gpu_kern.h runtime/cuda/gpu_elem.h \
                              runtime/model.h runtime/format/ops.h include/dcz.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -c $< -o $@

$(BUILD)/train/cuda/%.cu.o: train/cuda/%.cu train/cuda/tkern.h train/tdev.h runtime/cuda/gpu_elem.h runtime/shapes.h \
                            runtime/format/ops.h include/dcz.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -c $< -o $@

# every object is rebuilt when CUDA is switched (the stamp names the choice)
$(BUILD)/cuda.$(CUDA_ON):
	@mkdir -p $(BUILD) && rm -f $(BUILD)/cuda.* && touch $@
$(LIB_OBJ) $(TOOL_OBJ) $(CLI_OBJ): $(BUILD)/cuda.$(CUDA_ON)

# libdcz.a, and beside it the libraries a program linking it needs
# (libdcz.ldflags: samples/embed reads it; make install puts them in libdcz.pc)
$(LIBDIR)/libdcz.a: $(LIB_OBJ)
	@mkdir -p $(LIBDIR)
	rm -f $@ && $(strip $(CROSS))ar rcs $@ $(LIB_OBJ)
	@echo "$(strip $(LDLIBS_RT) -lm $(if $(filter 0,$(strip $(THREADS))),,-lpthread))" > $(LIBDIR)/libdcz.ldflags

# the archive is rebuilt when MPI or NCCL is switched (the stamp names the
# choice), and dist_mpi.o with NCCL
$(BUILD)/mpi.$(MPI_ON)$(NCCL_ON):
	@mkdir -p $(BUILD) && rm -f $(BUILD)/mpi.* && touch $@
$(BUILD)/train/dist_mpi.o: CFLAGS_ALL += $(MPI_CFLAGS) $(if $(filter 1,$(NCCL_ON)),-DDCZ_NCCL=1)
$(BUILD)/train/dist_mpi.o: $(BUILD)/mpi.$(MPI_ON)$(NCCL_ON)

lib/libdcztool.a: $(TOOL_OBJ) $(BUILD)/mpi.$(MPI_ON)$(NCCL_ON)
	@mkdir -p lib
	rm -f $@ && ar rcs $@ $(TOOL_OBJ)

bin/dcz: $(CLI_OBJ) lib/libdcztool.a lib/libdcz.a
	@mkdir -p bin
	$(CC) $(LDFLAGS_ALL) -o $@ $(CLI_OBJ) lib/libdcztool.a lib/libdcz.a $(LDLIBS_TOOL)

$(BUILD)/tests/%: tests/unit/%.c lib/libdcztool.a lib/libdcz.a tests/check.h $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP $(LDFLAGS_ALL) $(TEST_LDFLAGS) -o $@ $< lib/libdcztool.a lib/libdcz.a $(LDLIBS_TOOL)

$(RT_ONLY:%=$(BUILD)/tests/%): $(BUILD)/tests/%: tests/unit/%.c $(LIBDIR)/libdcz.a tests/check.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -DDCZ_RUNTIME_ONLY $(LDFLAGS_ALL) $(TEST_LDFLAGS) -o $@ $< $(LIBDIR)/libdcz.a $(LDLIBS_RT) -lm -lpthread

$(BUILD)/tests/replay_%: tests/fuzz/%.c tests/fuzz/replay.c lib/libdcztool.a lib/libdcz.a $(wildcard tests/unit/*.h) \
                         $(wildcard tests/fuzz/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< tests/fuzz/replay.c lib/libdcztool.a lib/libdcz.a $(LDLIBS_TOOL)

$(BUILD)/bench/%: bench/%.c bench/bench.h lib/libdcztool.a lib/libdcz.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< lib/libdcztool.a lib/libdcz.a $(LDLIBS_TOOL)

# bench/outbits.c (scripts/output-bits.sh, tests/scalar.sh) links libdcz alone
$(BUILD)/bench/outbits: bench/outbits.c $(LIBDIR)/libdcz.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< $(LIBDIR)/libdcz.a $(LDLIBS_RT) -lm -lpthread

# the CUDA backend's kernels next to cuBLAS and cuSPARSE (SKIP without a
# GPU): libdcz alone, and cuSPARSE as a baseline (never a libdcz dependency)
ifeq ($(CUDA_ON),1)
$(BUILD)/bench/bench_gpu: bench/bench_gpu.c bench/bench.h lib/libdcz.a runtime/cuda/gpu.h runtime/cuda/gpu_kern.h runtime/cuda/gpu_elem.h \
                          runtime/model.h include/dcz.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< lib/libdcz.a $(LDLIBS_RT) -lcusparse -lm -lpthread
endif

# a helper of tests/cli/interop.sh: PNG folders from a dataset
$(BUILD)/tests/idx2png: tests/cli/idx2png.c lib/libdcztool.a lib/libdcz.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< lib/libdcztool.a lib/libdcz.a $(LDLIBS_TOOL)

# libdcz must link with libc and libm alone (and the CUDA runtime and cuBLAS
# with the CUDA backend): a program using only dcz.h links.
$(BUILD)/check-lib: tests/lib_alone.c $(LIBDIR)/libdcz.a
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -Iinclude $(LDFLAGS_ALL) -o $@ $< $(LIBDIR)/libdcz.a $(LDLIBS_RT) -lm -lpthread

# The integer kernels hold no floating point: kernels_int.c compiled once
# more with -mgeneral-regs-only, where any float operation is a compile
# error. A failure does not stop the build; tests/run.sh reports it as a
# test, passing only when the stamp holds the checksum of the current source.
NOFLOAT := $(BUILD)/tests/kernels_int_nofloat
$(NOFLOAT).o: runtime/cpu/ref/kernels_int.c
	@mkdir -p $(dir $@)
	@rm -f $@ $(NOFLOAT).stamp
	@echo "$(CC) -mgeneral-regs-only -c $< -o $@"
	@if $(CC) $(filter-out -fsanitize=%,$(CFLAGS_ALL)) -mgeneral-regs-only -MMD -MP -c $< -o $@ \
	    > $(NOFLOAT).log 2>&1; then cksum < $< > $(NOFLOAT).stamp; \
	else echo "dcz: $< does not compile without floating point (see $(NOFLOAT).log)"; fi

deps:
ifeq ($(strip $(DEPS)),1)
	@bash scripts/deps.sh
endif

tests-build: bin/dcz $(UNIT_BIN) $(FUZZ_REPLAY) $(BUILD)/check-lib $(NOFLOAT).o $(BUILD)/tests/idx2png

# Builds started by the test, demo and size targets run JOBS at once (every
# core) unless make was itself given -j.
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
PAR  := $(if $(findstring -j,$(MAKEFLAGS)),,-j$(JOBS))

test: deps
	@$(MAKE) --no-print-directory $(PAR) tests-build
	@bash tests/run.sh

demo: deps
	@$(MAKE) --no-print-directory $(PAR) bin/dcz
	@bash samples/demo.sh $(MODEL)

bench: deps
	@$(MAKE) --no-print-directory bin/dcz $(BENCH_BIN) $(BUILD)/tests/idx2png
	@for b in $(filter-out $(BUILD)/bench/bench_train $(BUILD)/bench/outbits,$(BENCH_BIN)); do $$b || exit 1; done
	@$(BUILD)/bench/bench_spmv all 2
	@bash bench/train_epoch.sh
	@bash bench/scaling.sh
	@bash bench/latency.sh 1
	@bash bench/stream_memory.sh
	@bash bench/torchvision.sh

# libdcz for a microcontroller: ARMv7E-M (Cortex-M4 with its single-precision
# FPU), bare metal, with Debian's arm-none-eabi GCC and picolibc: the scalar
# references alone (every layer on its _ref kernel, the integer ones of
# calibrated models included), no threads, no heap (the arena API), no
# stdio; built for size (DCZ_SMALL): Huffman decoders with a first-level
# table of 64 entries, not 1024 (the stream form's readers live on the
# stack: 1.5 KB, not 5 KB), the CRC by a 16-word table, not 256 words;
# every function in a section of its own, so a firmware linked with
# --gc-sections keeps what it calls (in build-arm/ and lib-arm/;
# samples/mcu/ is such a firmware, make test-mcu runs it under QEMU).
MCU_CROSS ?= arm-none-eabi-
MCU_CPU   ?= -mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard
MCU_LIBC  ?= --specs=picolibc.specs
MCU_OPT   ?= -Os -g
MCU_MAKE  := $(MAKE) --no-print-directory $(PAR) CROSS=$(MCU_CROSS) ISA=scalar KERNELS=ref THREADS=0 HEAP=0 \
             CUDA=0 MPI=0 SANITIZE= DEBUG=0 OPT='$(MCU_OPT)' \
             CFLAGS='$(MCU_CPU) $(MCU_LIBC) -ffunction-sections -fdata-sections -DDCZ_SMALL'
mcu:
	@$(MCU_MAKE)

# The firmware of samples/mcu/ with int8 models made here, run under
# qemu-system-arm against the host's outputs, bit for bit (tests/mcu.sh;
# SKIP without the cross toolchain or QEMU)
test-mcu: bin/dcz
	@bash tests/mcu.sh

# The runtime tests on 64-bit Arm: cross-built (make CROSS=...) and run
# under qemu-user, without sanitizers; SKIP when a tool is missing.
AARCH64 := aarch64-linux-gnu-
QEMU_AARCH64 ?= qemu-aarch64 -L /usr/aarch64-linux-gnu
test-aarch64:
	@if ! command -v $(AARCH64)gcc > /dev/null 2>&1; then \
	  echo "SKIP test-aarch64: no $(AARCH64)gcc (Debian: gcc-aarch64-linux-gnu)"; \
	elif ! command -v $(firstword $(QEMU_AARCH64)) > /dev/null 2>&1; then \
	  echo "SKIP test-aarch64: no $(firstword $(QEMU_AARCH64)) (Debian: qemu-user)"; \
	else $(MAKE) --no-print-directory $(PAR) CROSS=$(AARCH64) SANITIZE= CC=$(AARCH64)gcc && \
	  bash tests/run_runtime.sh build-$(firstword $(subst -, ,$(AARCH64))) $(QEMU_AARCH64); fi

# The minimal builds (ISA=scalar: the scalar references alone; KERNELS=
# ref,q8: and the integer kernels) run every corpus and fixture model to the
# bits of the native build's references (tests/scalar.sh; part of make test).
test-scalar:
	@$(MAKE) --no-print-directory $(PAR) ISA=scalar CUDA=0 SANITIZE= build-scalar/bench/outbits > /dev/null
	@$(MAKE) --no-print-directory $(PAR) KERNELS=ref,q8 CUDA=0 SANITIZE= build-ref-q8/bench/outbits > /dev/null
	@$(MAKE) --no-print-directory $(PAR) build/bench/outbits > /dev/null
	@bash tests/scalar.sh build-scalar build-ref-q8

# The README's two commands on a bare Debian (not part of make test: it
# needs root, the network to Debian's mirror and some minutes).
test-bare:
	@bash scripts/bare-check.sh

# Text bytes of libdcz's CPU runtime built with -Os (CUDA=0), object by
# object (in $(BUILD)-size/; with CROSS=, for that target), then the same
# for the minimal builds: the references and the integer kernels (KERNELS=
# ref,q8), the scalar references alone (ISA=scalar).
size:
	@$(MAKE) --no-print-directory $(PAR) BUILD=$(BUILD)-size LIBDIR=$(LIBDIR)-size OPT=-Os SANITIZE= \
	  CUDA=0 $(LIBDIR)-size/libdcz.a > /dev/null
	@$(MAKE) --no-print-directory $(PAR) BUILD=$(BUILD)-size-scalar LIBDIR=$(LIBDIR)-size-scalar OPT=-Os SANITIZE= \
	  ISA=scalar CUDA=0 $(LIBDIR)-size-scalar/libdcz.a > /dev/null
	@$(MAKE) --no-print-directory $(PAR) BUILD=$(BUILD)-size-ref-q8 LIBDIR=$(LIBDIR)-size-ref-q8 OPT=-Os SANITIZE= \
	  KERNELS=ref,q8 CUDA=0 $(LIBDIR)-size-ref-q8/libdcz.a > /dev/null
	@$(strip $(CROSS))size -t $(LIBDIR)-size/libdcz.a
	@$(strip $(CROSS))size -t $(LIBDIR)-size/libdcz.a | \
	  awk '/TOTALS/ { printf "libdcz.a -Os text ($(CC)), every kernel: %d bytes (%.1f KiB)\n", $$1, $$1 / 1024 }'
	@$(strip $(CROSS))size -t $(LIBDIR)-size-ref-q8/libdcz.a | \
	  awk '/TOTALS/ { printf "libdcz.a -Os text ($(CC)), KERNELS=ref,q8 (the references and the integer kernels): %d bytes (%.1f KiB)\n", $$1, $$1 / 1024 }'
	@$(strip $(CROSS))size -t $(LIBDIR)-size-scalar/libdcz.a | \
	  awk '/TOTALS/ { printf "libdcz.a -Os text ($(CC)), ISA=scalar (the references alone): %d bytes (%.1f KiB)\n", $$1, $$1 / 1024 }'
	@bash scripts/mcu-size.sh

# The libFuzzer targets (clang): libdcz without its CUDA backend and the
# toolchain, built once into objects of their own with ASan and UBSan, then
# linked to each target, and to the replay driver (build/fuzz/replay_*: the
# corpus replay with the same sanitizers). -fno-sanitize-recover=all: any
# sanitizer report is a finding (a crash, its input saved), never a line in
# a log that the run goes past.
FUZZ_CC ?= clang
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_OPT := -O1
FUZZ_FLAGS := -std=c11 -g -D_POSIX_C_SOURCE=200809L -Iinclude -I. -I$(BUILD)/onnx \
              $(shell pkg-config --cflags cairo 2>/dev/null) $(MPI_CFLAGS)
FUZZ_OBJ := $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(filter-out runtime/cuda/gpu.c,$(LIB_SRC)) $(TOOL_SRC) $(ONNX_GEN))
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_REPLAY_SAN := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/replay_%)
FUZZ_LIBS := $(filter-out $(LDLIBS_RT),$(LDLIBS_TOOL))
fuzz: $(FUZZ_BIN) $(FUZZ_REPLAY_SAN)
	@echo "run e.g.: $(BUILD)/fuzz/fuzz_dcz tests/fuzz/corpus/dcz, or make fuzz-run FUZZ_SECONDS=60"
$(BUILD)/fuzz/obj/%.o: %.c | $(ONNX_GEN)
	@mkdir -p $(dir $@)
	@echo "$(FUZZ_CC) $<"
	@$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_OPT) -fsanitize=fuzzer-no-link $(FUZZ_SAN) -MMD -MP -c $< -o $@
# the shift forms at -O0: with a sanitizer report ending the program, each
# check is an exit of its loop, and clang's loop analysis at -O1 ran for
# over half an hour on their one file of before (21 seconds at -O0); every
# file of the two families (cpu/f32/shift.h, cpu/q8/qshift.h) but AMX's
FUZZ_O0 := $(addprefix $(BUILD)/fuzz/obj/runtime/cpu/f32/,kernels_shift.o shift_form.o shift_split_x86.o \
             shift_depthwise.o) \
           $(addprefix $(BUILD)/fuzz/obj/runtime/cpu/q8/,kernels_qshift.o qshift_form.o qshift_requant.o)
$(FUZZ_O0): FUZZ_OPT := -O0
$(FUZZ_BIN): $(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_OBJ) $(wildcard tests/fuzz/*.h)
	@echo "$(FUZZ_CC) $< -> $@"
	@$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_OPT) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $< $(FUZZ_OBJ) $(FUZZ_LIBS)
$(FUZZ_REPLAY_SAN): $(BUILD)/fuzz/replay_%: tests/fuzz/%.c tests/fuzz/replay.c $(FUZZ_OBJ) $(wildcard tests/fuzz/*.h)
	@echo "$(FUZZ_CC) $< replay.c -> $@"
	@$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_OPT) $(FUZZ_SAN) -o $@ $< tests/fuzz/replay.c $(FUZZ_OBJ) $(FUZZ_LIBS)
-include $(FUZZ_OBJ:.o=.d)

# make fuzz-run: every target (FUZZ_TARGETS, default all) for FUZZ_SECONDS
# each (and at most FUZZ_RUNS inputs, when set), FUZZ_JOBS at a time, from a
# copy of its committed corpus (build/fuzz/run/<target>/); per target the
# inputs run, inputs per second, coverage and every finding, whose input
# is kept in build/fuzz/findings/<target>/. make fuzz-merge then adds the
# inputs of those copies that add coverage to tests/fuzz/corpus/ (libFuzzer
# -merge=1): an explicit step, its new files to review and commit.
FUZZ_SECONDS ?= 60
FUZZ_JOBS    ?= 2
FUZZ_RUNS    ?=
FUZZ_TARGETS ?=
fuzz-run: fuzz
	@FUZZ_BUILD=$(BUILD)/fuzz FUZZ_SECONDS=$(strip $(FUZZ_SECONDS)) FUZZ_JOBS=$(strip $(FUZZ_JOBS)) \
	  FUZZ_RUNS=$(strip $(FUZZ_RUNS)) bash tests/fuzz/run.sh run $(FUZZ_TARGETS)
fuzz-merge: fuzz
	@FUZZ_BUILD=$(BUILD)/fuzz bash tests/fuzz/run.sh merge $(FUZZ_TARGETS)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 bin/dcz $(DESTDIR)$(PREFIX)/bin/dcz
	install -m 644 lib/libdcz.a $(DESTDIR)$(PREFIX)/lib/libdcz.a
	install -m 644 include/dcz.h $(DESTDIR)$(PREFIX)/include/dcz.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBS@|$(strip $(LDLIBS_RT) -lm -lpthread)|' -e 's|@VERSION@|$(shell sed -n 's/.*DCZ_VERSION_STRING "\(.*\)"/\1/p' include/dcz.h)|' \
	  libdcz.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/libdcz.pc

ifeq ($(strip $(CROSS)),)
clean:
	rm -rf $(BUILD) bin lib build-*/ lib-*/
else
clean:
	rm -rf $(BUILD) $(LIBDIR) $(BUILD)-size* $(LIBDIR)-size*
endif

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
