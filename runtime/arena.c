/* arena.c: the memory a model is loaded into (model.h's dcz_arena), taken
 * in order from one block, or only counted while the loader sizes it
 * (base NULL). Apart from the loader's files (load.c, load_layer.c,
 * qload.c), which all take from it and call one another only downwards.
 *
 * Also the heap's blocks that every run walks through (dcz_walked_alloc).
 *
 * Checked by tests/unit/test_static.c (the arena's size is exact and
 * nothing else is allocated) and tests/unit/test_format.c.
 */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE 1   /* madvise, MADV_HUGEPAGE */
#endif
#include <stdint.h>

#include "runtime/model.h"
#if DCZ_HEAP
#include <stdlib.h>
#ifdef __linux__
#include <sys/mman.h>
#endif
#endif

void *dcz_arena_take(dcz_arena *a, uint64_t bytes)
{
    size_t off = (a->used + (DCZ_ARENA_ALIGN - 1)) & ~(size_t)(DCZ_ARENA_ALIGN - 1);
    if (off < a->used || bytes > SIZE_MAX - off) { a->overflow = 1; return NULL; }
    a->used = off + (size_t)bytes;
    return a->base ? a->base + off : NULL;
}

void *dcz_arena_take_line(dcz_arena *a, uint64_t bytes)
{
    if (bytes > UINT64_MAX - 63) { a->overflow = 1; return NULL; }
    uint8_t *p = dcz_arena_take(a, bytes + 63);
    return p ? (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63) : NULL;
}

#if DCZ_HEAP
/* Linux's transparent huge pages: 2 MB */
#define HUGE_PAGE ((size_t)2 << 20)

void *dcz_walked_alloc(size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= HUGE_PAGE && bytes <= SIZE_MAX - HUGE_PAGE) {
        const size_t n = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        void *p = NULL;
        if (posix_memalign(&p, HUGE_PAGE, n) != 0) return NULL;
        (void)madvise(p, n, MADV_HUGEPAGE); /* advice: where refused, the pages stay small */
        return p;
    }
#endif
    return malloc(bytes ? bytes : 1);
}
#endif
