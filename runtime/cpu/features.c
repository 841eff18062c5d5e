/* features.c: the CPU's features, probed once for every kernel's choice
 * (cpu/isa.h). The one place libdcz asks the CPU what it has; and from
 * them, the instruction-set families this build and CPU run
 * (dcz_isa_supported, tool.h) and the one the sparse matrix product and
 * the other kernels of a single vector family dispatch to (dcz_isa_best,
 * model.h).
 *
 * Checked by tests/unit/test_simd.c and the kernel tests, whose variants
 * run where these say the CPU has them.
 */
#include <pthread.h>

#include "runtime/cpu/isa.h"
#include "runtime/model.h"

#if DCZ_BUILD_X86
#define DCZ_X86 1
#elif DCZ_BUILD_NEON
#define DCZ_NEON 1
#endif

/* written once, by probe, before probed is set: every later read sees the
 * same values */
dcz_cpu dcz_cpu_probed;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void probe(void)
{
#if DCZ_BUILD_X86
    __builtin_cpu_init();
    dcz_cpu_probed.avx2 = __builtin_cpu_supports("avx2") != 0;
    dcz_cpu_probed.fma = __builtin_cpu_supports("fma") != 0;
    dcz_cpu_probed.avx512f = __builtin_cpu_supports("avx512f") != 0;
    dcz_cpu_probed.avx512bw = __builtin_cpu_supports("avx512bw") != 0;
    dcz_cpu_probed.avx512vl = __builtin_cpu_supports("avx512vl") != 0;
    dcz_cpu_probed.avx512vnni = __builtin_cpu_supports("avx512vnni") != 0;
    dcz_cpu_probed.avx512vbmi = __builtin_cpu_supports("avx512vbmi") != 0;
    dcz_cpu_probed.amd = __builtin_cpu_is("amd") != 0;
#endif
#if DCZ_BUILD_NEON
    dcz_cpu_probed.neon = 1;
#endif
    __atomic_store_n(&dcz_cpu_probed.probed, 1, __ATOMIC_RELEASE);
}

void dcz_cpu_probe(void)
{
    pthread_once(&once, probe);
}

int dcz_isa_supported(dcz_isa isa)
{
    switch (isa) {
    case DCZ_ISA_REF:
        return 1;
#ifdef DCZ_X86
    case DCZ_ISA_AVX2:
        return dcz_cpu_features()->avx2 != 0;
    case DCZ_ISA_AVX512:
        return dcz_cpu_features()->avx512f != 0;
#endif
#ifdef DCZ_NEON
    case DCZ_ISA_NEON:
        return 1;
#endif
    default:
        return 0;
    }
}

dcz_isa dcz_isa_best(void)
{
    if (dcz_isa_supported(DCZ_ISA_AVX2)) return DCZ_ISA_AVX2;
    if (dcz_isa_supported(DCZ_ISA_NEON)) return DCZ_ISA_NEON;
    return DCZ_ISA_REF;
}
