/* features.c: the CPU's features, probed once for every kernel's choice
 * (cpu/isa.h). The one place libdcz asks the CPU what it has.
 *
 * Checked by tests/unit/test_simd.c and the kernel tests, whose variants
 * run where these say the CPU has them.
 */
#include <pthread.h>

#include "runtime/cpu/isa.h"

static dcz_cpu features;
static pthread_once_t probed = PTHREAD_ONCE_INIT;

static void probe(void)
{
#if DCZ_BUILD_X86
    __builtin_cpu_init();
    features.avx2 = __builtin_cpu_supports("avx2") != 0;
    features.fma = __builtin_cpu_supports("fma") != 0;
    features.avx512f = __builtin_cpu_supports("avx512f") != 0;
    features.avx512bw = __builtin_cpu_supports("avx512bw") != 0;
    features.avx512vl = __builtin_cpu_supports("avx512vl") != 0;
    features.avx512vnni = __builtin_cpu_supports("avx512vnni") != 0;
    features.avx512vbmi = __builtin_cpu_supports("avx512vbmi") != 0;
    features.amd = __builtin_cpu_is("amd") != 0;
#endif
#if DCZ_BUILD_NEON
    features.neon = 1;
#endif
}

const dcz_cpu *dcz_cpu_features(void)
{
    pthread_once(&probed, probe);
    return &features;
}
