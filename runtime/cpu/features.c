/* features.c: the CPU's features, probed once for every kernel's choice
 * (cpu/isa.h), and the caps on them a model's options ask for
 * (dcz_options.isa). The one place libdcz asks the CPU what it has; and from
 * them, the instruction-set families this build and CPU run
 * (dcz_isa_supported, tool.h) and the one the sparse matrix product and
 * the other kernels of a single vector family dispatch to (dcz_isa_best,
 * model.h).
 *
 * Checked by tests/unit/test_simd.c and the kernel tests, whose variants
 * run where these say the CPU has them; the caps by tests/isa.sh (the bits
 * of every level this machine has, against emulated CPUs and the
 * references) and test_simd (the views the pool's workers read).
 */
#include <stddef.h>
#include <string.h>

#include "runtime/cpu/isa.h"
#include "runtime/model.h"
#if DCZ_THREADS
#include <pthread.h>
#endif
#if DCZ_BUILD_X86
#include <cpuid.h>
#endif

#if DCZ_BUILD_X86
#define DCZ_X86 1
#elif DCZ_BUILD_NEON
#define DCZ_NEON 1
#endif

/* written once, by probe, before probed is set: every later read sees the
 * same values */
dcz_cpu dcz_cpu_probed;
/* the calling thread's view (cpu/isa.h); NULL: dcz_cpu_probed */
DCZ_THREAD_LOCAL const dcz_cpu *dcz_cpu_view;
#if DCZ_THREADS
static pthread_once_t once = PTHREAD_ONCE_INIT;
#endif

#if DCZ_BUILD_X86
/* The CPU's family as cpuid leaf 1 states it: the base family, plus the
 * extended family where the base is 0Fh (AMD's Zen 4 19h, Zen 5 1Ah). */
static unsigned cpu_family(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const unsigned base = (a >> 8) & 0xF;
    return base == 0xF ? base + ((a >> 20) & 0xFF) : base;
}
#endif

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
    dcz_cpu_probed.full512 = dcz_cpu_probed.avx512f && (!dcz_cpu_probed.amd || cpu_family() >= 0x1A);
    dcz_cpu_probed.amx = 1;   /* whether the CPU has it: dcz_amx_ready */
#endif
#if DCZ_BUILD_NEON
    dcz_cpu_probed.neon = 1;
#endif
    __atomic_store_n(&dcz_cpu_probed.probed, 1, __ATOMIC_RELEASE);
}

void dcz_cpu_probe(void)
{
#if DCZ_THREADS
    pthread_once(&once, probe);
#else
    if (!dcz_cpu_probed.probed) probe();   /* one thread: no race to it */
#endif
}

const dcz_cpu *dcz_cpu_enter(const dcz_cpu *c)
{
    const dcz_cpu *was = dcz_cpu_view;
    dcz_cpu_view = c;
    return was;
}

void dcz_cpu_leave(const dcz_cpu *was) { dcz_cpu_view = was; }

static const char *const cap_names[DCZ_CAP_COUNT] = {
    [DCZ_CAP_NATIVE] = "native", [DCZ_CAP_SCALAR] = "scalar", [DCZ_CAP_AVX2] = "avx2",
    [DCZ_CAP_AVX512] = "avx512", [DCZ_CAP_AVX512_VNNI] = "avx512-vnni",
    [DCZ_CAP_AVX512_VBMI] = "avx512-vbmi", [DCZ_CAP_NEON] = "neon",
};

const char *dcz_isa_cap_name(dcz_isa_cap cap)
{
    return (unsigned)cap < DCZ_CAP_COUNT ? cap_names[cap] : "?";
}

dcz_status dcz_isa_cap_parse(const char *name, dcz_isa_cap *out)
{
    for (int c = 0; name && c < DCZ_CAP_COUNT; c++)
        if (strcmp(name, cap_names[c]) == 0) {
            *out = (dcz_isa_cap)c;
            return DCZ_OK;
        }
    return DCZ_ERR_ARG;
}

/* The features a cap leaves or takes: each with its name and the lowest
 * level that needs it (an x86 level needs those of the levels below it;
 * NEON is a family of its own). */
static const struct {
    size_t at;          /* offsetof the feature in dcz_cpu */
    const char *name;
    dcz_isa_cap level;
} features[] = {
    { offsetof(dcz_cpu, avx2), "avx2", DCZ_CAP_AVX2 },
    { offsetof(dcz_cpu, fma), "fma", DCZ_CAP_AVX2 },
    { offsetof(dcz_cpu, avx512f), "avx512f", DCZ_CAP_AVX512 },
    { offsetof(dcz_cpu, avx512bw), "avx512bw", DCZ_CAP_AVX512 },
    { offsetof(dcz_cpu, avx512vl), "avx512vl", DCZ_CAP_AVX512 },
    { offsetof(dcz_cpu, avx512vnni), "avx512-vnni", DCZ_CAP_AVX512_VNNI },
    { offsetof(dcz_cpu, avx512vbmi), "avx512-vbmi", DCZ_CAP_AVX512_VBMI },
    { offsetof(dcz_cpu, neon), "neon", DCZ_CAP_NEON },
};
#define NFEATURES (sizeof features / sizeof *features)

static unsigned char *feature(dcz_cpu *c, size_t i) { return (unsigned char *)c + features[i].at; }

/* whether level cap needs feature i */
static int needs(dcz_isa_cap cap, size_t i)
{
    const dcz_isa_cap l = features[i].level;
    if (l == DCZ_CAP_NEON || cap == DCZ_CAP_NEON) return l == cap;
    return cap >= DCZ_CAP_AVX2 && cap >= l;
}

/* Appends the strings of parts (NULL-terminated) to buf (len bytes, at
 * used), as far as they fit, keeping it terminated: the messages are
 * concatenations alone, so libdcz needs no formatted output (no stdio). */
static void cat(char *buf, size_t len, size_t *at, const char *const *parts)
{
    for (; *parts; parts++)
        for (const char *p = *parts; *p && *at + 1 < len; p++) buf[(*at)++] = *p;
    if (*at < len) buf[*at] = '\0';
}

/* Appends name to the space-separated list in buf (len bytes, at used). */
static void list_add(char *buf, size_t len, size_t *at, const char *name)
{
    cat(buf, len, at, (const char *const[]){ *at ? " " : "", name, NULL });
}

dcz_status dcz_cpu_capped(dcz_isa_cap cap, dcz_cpu *out, char *why, size_t why_len)
{
    if (why && why_len) why[0] = '\0';
    if ((unsigned)cap >= DCZ_CAP_COUNT) return DCZ_ERR_ARG;
    dcz_cpu_probe();
    dcz_cpu c = dcz_cpu_probed;   /* a cap is of the CPU, never of another cap */
    char has[160] = "", lacks[160] = "";
    size_t nhas = 0, nlacks = 0;
    for (size_t i = 0; i < NFEATURES; i++) {
        if (*feature(&c, i)) list_add(has, sizeof has, &nhas, features[i].name);
        else if (needs(cap, i)) list_add(lacks, sizeof lacks, &nlacks, features[i].name);
    }
    if (nlacks) {
        size_t at = 0;
        if (why && why_len && !DCZ_BUILD_X86 && !DCZ_BUILD_NEON)
            cat(why, why_len, &at, (const char *const[]){ cap_names[cap],
                ": this build of libdcz has no vector kernels (ISA=scalar); it runs scalar only", NULL });
        else if (why && why_len)
            cat(why, why_len, &at, (const char *const[]){ cap_names[cap], " needs ", lacks,
                ", which this CPU or build lacks; it has: ", nhas ? has : "none (scalar kernels only)", NULL });
        return DCZ_ERR_DEVICE;
    }
    if (cap != DCZ_CAP_NATIVE) {
        for (size_t i = 0; i < NFEATURES; i++)
            if (!needs(cap, i)) *feature(&c, i) = 0;
        c.amx = 0;
        c.full512 = c.full512 && c.avx512f;   /* a property of the AVX-512 units left */
    }
    *out = c;
    return DCZ_OK;
}

dcz_status dcz_isa_probe(dcz_isa_cap cap, char *why, size_t why_len)
{
    dcz_cpu c;
    return dcz_cpu_capped(cap, &c, why, why_len);
}

int dcz_isa_supported(dcz_isa isa)
{
    switch (isa) {
    case DCZ_ISA_REF:
        return 1;
#ifdef DCZ_X86
    case DCZ_ISA_AVX2:   /* with FMA, which its kernels take (the fused steps of act_x86.h's exponential) */
        return dcz_cpu_features()->avx2 != 0 && dcz_cpu_features()->fma != 0;
    case DCZ_ISA_AVX512:
        return dcz_cpu_features()->avx512f != 0;
#endif
#ifdef DCZ_NEON
    case DCZ_ISA_NEON:
        return dcz_cpu_features()->neon != 0;
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
