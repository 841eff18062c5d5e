/* isa.h: the instruction sets this build of libdcz compiles kernels for.
 *
 * DCZ_BUILD_X86: the x86 vector kernels (AVX2 and AVX-512 with their
 * extensions, VNNI, VBMI, AMX; each run only where the CPU has it);
 * DCZ_BUILD_NEON: the 64-bit Arm ones. A build with ISA=scalar (the
 * Makefile's toggle, -DDCZ_SCALAR) compiles neither, on any target: the
 * scalar references alone, which every vector kernel matches bit for bit,
 * and the plan (plan.c) finds no extra form to build and picks them.
 * Every kernel file tests these, never the compiler's target macros.
 */
#ifndef DCZ_RUNTIME_CPU_ISA_H
#define DCZ_RUNTIME_CPU_ISA_H

#include <stddef.h>

#include "dcz.h"

#if (defined(__x86_64__) || defined(__i386__)) && !defined(DCZ_SCALAR)
#define DCZ_BUILD_X86 1
#else
#define DCZ_BUILD_X86 0
#endif
#if defined(__aarch64__) && defined(__ARM_NEON) && !defined(DCZ_SCALAR)
#define DCZ_BUILD_NEON 1
#else
#define DCZ_BUILD_NEON 0
#endif

/* The kernel families a build compiles vector kernels for (the Makefile's
 * KERNELS=, which passes -DDCZ_NO_F32 or -DDCZ_NO_Q8 for a family left
 * out): the float kernels (cpu/f32/) and the 8-bit integer ones (cpu/q8/);
 * the scalar references (cpu/ref/) are always built. A family's files test
 * its pair of these, never DCZ_BUILD_X86 or DCZ_BUILD_NEON; a family left
 * out compiles its scalar paths alone, as in a scalar build: its variant
 * functions find no vector kernel and say so, and the plan builds none of
 * its forms (load.c: want_forms). */
#if DCZ_BUILD_X86 && !defined(DCZ_NO_F32)
#define DCZ_BUILD_F32_X86 1
#else
#define DCZ_BUILD_F32_X86 0
#endif
#if DCZ_BUILD_NEON && !defined(DCZ_NO_F32)
#define DCZ_BUILD_F32_NEON 1
#else
#define DCZ_BUILD_F32_NEON 0
#endif
#if DCZ_BUILD_X86 && !defined(DCZ_NO_Q8)
#define DCZ_BUILD_Q8_X86 1
#else
#define DCZ_BUILD_Q8_X86 0
#endif
#if DCZ_BUILD_NEON && !defined(DCZ_NO_Q8)
#define DCZ_BUILD_Q8_NEON 1
#else
#define DCZ_BUILD_Q8_NEON 0
#endif

/* DCZ_REF_ONLY: both families left out (KERNELS=ref): the scalar references
 * alone. Every layer runs its _ref kernel, as if dcz_options.force_reference
 * were set (load.c, plan.c), no extra form is built, and the runner's table
 * (run.c) names no other kernel, so the families' other scalar paths are
 * never reached and a link with --gc-sections keeps none of them: the
 * smallest library, for a microcontroller (make mcu). */
#if defined(DCZ_NO_F32) && defined(DCZ_NO_Q8)
#define DCZ_REF_ONLY 1
#else
#define DCZ_REF_ONLY 0
#endif

/* DCZ_THREADS: worker threads (pthread) for heap models; 0 where the build
 * has none (THREADS=0, -DDCZ_NO_THREADS: a bare-metal target): every model
 * runs on the caller's thread, and nothing is thread-local. DCZ_HEAP: the
 * heap loaders (dcz_open_memory, dcz_open_file, dcz_plan); 0 with HEAP=0
 * (-DDCZ_NO_HEAP): the arena API alone (dcz_plan_static, dcz_open_static),
 * and no object of libdcz refers to an allocator. */
#ifdef DCZ_NO_THREADS
#define DCZ_THREADS 0
#define DCZ_THREAD_LOCAL
#else
#define DCZ_THREADS 1
#define DCZ_THREAD_LOCAL __thread
#endif
#ifdef DCZ_NO_HEAP
#define DCZ_HEAP 0
#else
#define DCZ_HEAP 1
#endif

/* The features of this CPU that libdcz's kernels use, probed once (the
 * first call; threads may race to it) and read by every choice between
 * variants: nonzero where the build has kernels for the feature and the
 * CPU has it (all zero in a scalar build). AMX, which the kernel must also
 * grant, is asked apart (dcz_amx_ready) where amx allows it. Read on every
 * kernel call, so the read is one load once probed (features.c fills it
 * under pthread_once and sets probed last).
 *
 * A model whose options cap the instruction sets (dcz_options.isa) keeps
 * the probed features less those above the cap (dcz_cpu_capped) in its
 * own copy, and its load and runs read that copy: dcz_cpu_enter makes it
 * the calling thread's view until dcz_cpu_leave, and the thread pool hands
 * the view of the thread that runs a job to the workers that share it
 * (threads.c). Everything under them asks dcz_cpu_features(). */
typedef struct dcz_cpu {
    unsigned char avx2, fma, avx512f, avx512bw, avx512vl, avx512vnni, avx512vbmi;
    unsigned char amx;      /* AMX may be asked for (dcz_amx_ready): no cap below it */
    unsigned char neon;
    unsigned char amd;      /* the vendor, where a cost rule differs by it */
    unsigned char full512;  /* a core that runs 512-bit vectors whole: Intel's with AVX-512,
                               AMD's from Zen 5 (family 1Ah), where Zen 4 runs them in 256-bit
                               halves: the cost rules fitted on Zen 4 differ there */
    unsigned char probed;
} dcz_cpu;
extern dcz_cpu dcz_cpu_probed;
extern DCZ_THREAD_LOCAL const dcz_cpu *dcz_cpu_view;
void dcz_cpu_probe(void);
static inline const dcz_cpu *dcz_cpu_features(void)
{
    const dcz_cpu *v = dcz_cpu_view;
    if (v) return v;
    if (!__atomic_load_n(&dcz_cpu_probed.probed, __ATOMIC_ACQUIRE)) dcz_cpu_probe();
    return &dcz_cpu_probed;
}

/* The probed features less those above cap, in *out; DCZ_ERR_DEVICE, with
 * why (may be NULL) saying what this CPU or build lacks, when cap names an
 * instruction set the kernels could not use here; DCZ_ERR_ARG for a value
 * that is no dcz_isa_cap. */
dcz_status dcz_cpu_capped(dcz_isa_cap cap, dcz_cpu *out, char *why, size_t why_len);

/* Makes c the calling thread's view of the CPU (NULL: the probed one) and
 * returns the view it replaces, for dcz_cpu_leave; c must outlive the view
 * (functions, not inline: a view taken and left within one call is
 * correct, but a compiler that sees the local address stored warns). */
const dcz_cpu *dcz_cpu_enter(const dcz_cpu *c);
void dcz_cpu_leave(const dcz_cpu *was);

#endif /* DCZ_RUNTIME_CPU_ISA_H */
