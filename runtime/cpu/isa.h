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

#endif /* DCZ_RUNTIME_CPU_ISA_H */
