/* arena.c: the memory a model is loaded into (model.h's dcz_arena), taken
 * in order from one block, or only counted while the loader sizes it
 * (base NULL). Apart from the loader's files (load.c, load_layer.c,
 * qload.c), which all take from it and call one another only downwards.
 *
 * Checked by tests/unit/test_static.c (the arena's size is exact and
 * nothing else is allocated) and tests/unit/test_format.c.
 */
#include <stdint.h>

#include "runtime/model.h"

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
