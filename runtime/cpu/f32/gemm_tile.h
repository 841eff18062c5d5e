/* gemm_tile.h: the tiles and the walk of dcz_gemm_f32 for one vector ISA,
 * included by kernels_gemm.c once per ISA with these defined:
 *   SFX            the name suffix (__avx512, __avx2, __neon)
 *   TGT            the functions' target attribute, or nothing
 *   V, L           the vector type and its lanes (L divides DCZ_GEMM_PAD)
 *   VZERO() VSET1(f) VLOAD(p) VFMA(a, b, c) (a b + c, one rounding)
 *   VSTORE(p, v) VSTORE_PART(p, v, n) VLOAD_PART(p, n) (the first n lanes)
 *   MR, NV         the general tile: MR rows of C by NV vectors of columns
 *   KC KR GEMV_BYTES SMALLB_BYTES ROWS_KMAX VLOADC(p)
 *                  (optional, float only) the depths of a block and of a
 *                  band of B's rows, the bytes of B past which it goes by
 *                  bands, the bytes of a block of B's columns and the
 *                  depth up to which the walk by tiles of rows takes any
 *                  B, and the load of a whole vector of C: the blocked
 *                  walks (see the walk)
 *   NV1            the one-row tile's vectors (C of one row: batch 1)
 *   TA TB TC TBIAS the element types of A, B, C and the biases (float when
 *                  not defined; the integer product: int32 pairs of int16
 *                  in A and B, int64 C and biases, VFMA their pair
 *                  products added)
 *   VACT(v, act)   (optional, float only) v after the activation act (NULL
 *                  or op 0: none), dcz_act_one's bits: applied to the sums
 *                  as the tiles store them the last time (act NULL until
 *                  then)
 *   CPREFETCH(p)   (optional) a prefetch of the line of C at p: a tile
 *                  whose sums start at their biases asks for the lines it
 *                  will store before its k loop, so that where C lies past
 *                  the caches their misses overlap the loop instead of
 *                  stalling its stores (a tile that loads C back needs
 *                  none)
 * and undefined again at its end.
 * A tile keeps its MR x NV sums in registers over k (the blocked walks:
 * over a block of k, the sums stored into C between blocks and loaded
 * back, exactly): each sum starts at its bias (or 0) and takes A's element
 * times B's by a fused multiply-add, k in order, so every output has
 * dcz_gemm_f32_ref's bits whatever the tile, the walk, the ISA and the
 * rows around it. */
#ifndef TA
#define TA float
#define TB float
#define TC float
#define TBIAS float
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define NAME(n) CAT(n, SFX)

#ifdef VLOADB_PART
#define B_UNPADDED 1
#else
#define B_UNPADDED 0                 /* the integer product: B padded */
#define VLOADB_PART(p, n) VLOAD(p)
#endif

/* One step of k of a tile: B's row at bp (its last vector's first `last`
 * columns alone where part), times A's column at ap, into acc */
TGT __attribute__((always_inline))
static inline void NAME(step)(const int mr, const int nv, const int part, const TA *ap, size_t lda, const TB *bp,
                              uint32_t last, V (*acc)[NV1])
{
    V bv[NV1];
#pragma GCC unroll 8
    for (int v = 0; v < nv; v++) bv[v] = part && v == nv - 1 ? VLOADB_PART(bp + v * L, last) : VLOAD(bp + v * L);
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++) {
        const V av = VSET1(ap[(size_t)i * lda]);
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) acc[i][v] = VFMA(av, bv[v], acc[i][v]);
    }
}

/* Rows mr (constant) of C by nv (constant) vectors of columns, the last
 * one with `last` columns (1..L). */
TGT __attribute__((always_inline))
static inline void NAME(tile)(const int mr, const int nv, uint32_t k, const TA *a, size_t lda, size_t ka, const TB *b,
                              size_t ldb, const TBIAS *bias_m, const TBIAS *bias_n, TC *c, size_t ldc,
                              uint32_t last, int from_c, const dcz_act *act, dcz_gemm_ahead *ahead)
{
    V acc[MR][NV1];
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            acc[i][v] =
#ifdef KC
                from_c ? (v == nv - 1 ? VLOAD_PART(c + (size_t)i * ldc + v * L, last)
                                      : VLOADC(c + (size_t)i * ldc + v * L)) :
#endif
                bias_m ? VSET1(bias_m[i])
                      : bias_n ? (v == nv - 1 ? VLOAD_PART(bias_n + v * L, last) : VLOAD(bias_n + v * L))
                               : VZERO();
#ifdef CPREFETCH
    if (!from_c)
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
            for (int v = 0; v < nv; v++) CPREFETCH(c + (size_t)i * ldc + v * L);
#endif
    /* a row's last vector read whole runs L - last cells past its columns,
     * into the rows after it: the last rows, within L cells of B's end
     * (dcz_gemm_f32: B unpadded, no memory after it), read it only to
     * their last columns */
    const size_t tail = !B_UNPADDED || last == L ? 0 : ldb ? (L + ldb - 1) / ldb : k;
    const uint32_t whole = k > tail ? k - (uint32_t)tail : 0;
    uint32_t p = 0;
#ifdef KC
    /* this tile's share of the lines asked for ahead, one a step: the
     * float products' tiles of MR rows alone (the others, at the edges,
     * with a loop of their own each would add a tenth to the products'
     * code) */
    uint32_t asks = 0;
    const char *at = NULL;
    if (mr == MR && ahead && !ahead->lines && ahead->then_lines) {   /* the second range */
        ahead->at = ahead->then;
        ahead->lines = ahead->then_lines;
        ahead->then_lines = 0;
    }
    if (mr == MR && ahead && ahead->lines) {
        asks = (uint32_t)(ahead->lines < ahead->share ? ahead->lines : ahead->share);
        if (asks > whole) asks = whole;
        at = ahead->at;
        ahead->at += (size_t)asks * 64;
        ahead->lines -= asks;
    }
    for (; p < asks; p++) {
        NAME(step)(mr, nv, 0, a + (size_t)p * ka, lda, b + (size_t)p * ldb, last, acc);
        __builtin_prefetch(at + (size_t)p * 64, 0, 3);
    }
#else
    (void)ahead;
#endif
    for (; p < whole; p++)
        NAME(step)(mr, nv, 0, a + (size_t)p * ka, lda, b + (size_t)p * ldb, last, acc);
    for (; p < k; p++)
        NAME(step)(mr, nv, 1, a + (size_t)p * ka, lda, b + (size_t)p * ldb, last, acc);
#ifdef VACT
    const dcz_act fa = dcz_act_of(act);   /* read once (dcz_act_of) */
#endif
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            TC *cp = c + (size_t)i * ldc + v * L;
#ifdef VACT
            acc[i][v] = VACT(acc[i][v], &fa);
#else
            (void)act;
#endif
            if (v == nv - 1 && last < L) VSTORE_PART(cp, acc[i][v], last);
            else VSTORE(cp, acc[i][v]);
        }
}

typedef void (*NAME(tile_fn))(uint32_t k, const TA *a, size_t lda, size_t ka, const TB *b, size_t ldb,
                              const TBIAS *bias_m, const TBIAS *bias_n, TC *c, size_t ldc, uint32_t last,
                              int from_c, const dcz_act *act, dcz_gemm_ahead *ahead);

#define TILE(R, N)                                                                                      \
    TGT static void CAT(NAME(tile), _##R##x##N)(uint32_t k, const TA *a, size_t lda, size_t ka, const TB *b, \
                                                size_t ldb, const TBIAS *bias_m, const TBIAS *bias_n,  \
                                                TC *c, size_t ldc, uint32_t last, int from_c,          \
                                                const dcz_act *act, dcz_gemm_ahead *ahead)              \
    {                                                                                                   \
        NAME(tile)(R, N, k, a, lda, ka, b, ldb, bias_m, bias_n, c, ldc, last, from_c, act, ahead);      \
    }
#define TILE_ROW(R) TILE(R, 1) TILE(R, 2) TILE(R, 3) TILE(R, 4)
TILE_ROW(1) TILE_ROW(2) TILE_ROW(3) TILE_ROW(4)
#if MR > 4
TILE_ROW(5) TILE_ROW(6)
#endif
#if NV1 > 4
TILE(1, 5) TILE(1, 6) TILE(1, 7) TILE(1, 8)
#endif
#undef TILE_ROW
#undef TILE

#define T4(R) { NULL, CAT(NAME(tile), _##R##x1), CAT(NAME(tile), _##R##x2), CAT(NAME(tile), _##R##x3), \
                CAT(NAME(tile), _##R##x4) }
/* [rows][vectors]: the tiles */
static const NAME(tile_fn) NAME(tiles)[MR + 1][NV1 + 1] = {
    { NULL },
#if NV1 > 4
    { NULL, CAT(NAME(tile), _1x1), CAT(NAME(tile), _1x2), CAT(NAME(tile), _1x3), CAT(NAME(tile), _1x4),
      CAT(NAME(tile), _1x5), CAT(NAME(tile), _1x6), CAT(NAME(tile), _1x7), CAT(NAME(tile), _1x8) },
#else
    T4(1),
#endif
    T4(2), T4(3), T4(4),
#if MR > 4
    T4(5), T4(6),
#endif
};
#undef T4

/* Rows p .. p + depth - 1 of B's panel of columns j .. j + cols - 1 down
 * every MR rows of C: the tiles' sums start at their biases when p is 0,
 * else at what C holds; act: the rows' last (VACT). */
TGT static void NAME(panel)(size_t m, size_t j, size_t cols, uint32_t p, uint32_t depth, const TA *a, size_t lda,
                            size_t ka, const TB *b, size_t ldb, const TBIAS *bias_m, const TBIAS *bias_n, TC *c,
                            size_t ldc, const dcz_act *act, dcz_gemm_ahead *ahead)
{
    const int nv = (int)((cols + L - 1) / L);
    const uint32_t last = (uint32_t)(cols - (size_t)(nv - 1) * L);
    for (size_t i = 0; i < m; i += MR) {
        const int mr = m - i < MR ? (int)(m - i) : MR;
        NAME(tiles)[mr][nv](depth, a + i * lda + (size_t)p * ka, lda, ka, b + (size_t)p * ldb + j, ldb,
                            bias_m ? bias_m + i : NULL, bias_n ? bias_n + j : NULL, c + i * ldc + j, ldc, last, p > 0,
                            act, ahead);
    }
}

#ifdef KC
/* C of one row (batch 1) where B is past GEMV_BYTES: B's rows in order,
 * GEMV_ROWS at a time, each group swept across a chunk of C's columns
 * (GEMV_CHUNK, their sums in the first-level cache) before the next
 * group: every output its bias, then its products in k order, as in the
 * tiles. B streams from memory 16 whole rows at a time, where the band
 * walk read each of KR rows a panel (a few lines) at a time. One core of
 * an AMD EPYC (Zen 4), B from memory (a 64 MB sweep before each run),
 * medians of 41 runs: 1000 from 1280 (MobileNetV2's classifier) 367-439
 * -> 154-169 us, from 2048 (ResNet-50's) 759-803 -> 250-282, from 1024
 * 362-381 -> 104-126; 4096 x 4096 6.2-6.7 -> 3.0-3.1 ms. 4 and 8 rows a
 * group ran between. */
#define GEMV_ROWS 16
#define GEMV_CHUNK 2048
TGT static void NAME(gemv_rows)(size_t n, uint32_t k, const TA *a, size_t ka, const TB *b, size_t ldb,
                                const TBIAS *bias_m, const TBIAS *bias_n, TC *c, const dcz_act *act)
{
    TC s[GEMV_CHUNK];
    for (size_t j0 = 0; j0 < n; j0 += GEMV_CHUNK) {
        const size_t cols = n - j0 < GEMV_CHUNK ? n - j0 : GEMV_CHUNK, nv = (cols + L - 1) / L;
        const uint32_t last = (uint32_t)(cols - (nv - 1) * L);
        for (size_t v = 0; v < nv; v++)
            VSTORE(s + v * L, bias_m ? VSET1(bias_m[0])
                              : bias_n ? (v == nv - 1 ? VLOAD_PART(bias_n + j0 + v * L, last)
                                                      : VLOAD(bias_n + j0 + v * L))
                                       : VZERO());
        uint32_t p = 0;
        for (; p + GEMV_ROWS <= k; p += GEMV_ROWS) {
            const TB *bp = b + (size_t)p * ldb + j0;
            V ar[GEMV_ROWS];
#pragma GCC unroll 16
            for (int r = 0; r < GEMV_ROWS; r++) ar[r] = VSET1(a[(size_t)(p + r) * ka]);
            for (size_t v = 0; v < nv; v++) {
                V x = VLOAD(s + v * L);
                if (v + 1 == nv && last < L)   /* the rows' last columns alone (B unpadded) */
                    for (int r = 0; r < GEMV_ROWS; r++)
                        x = VFMA(ar[r], VLOADB_PART(bp + (size_t)r * ldb + v * L, last), x);
                else
#pragma GCC unroll 16
                    for (int r = 0; r < GEMV_ROWS; r++) x = VFMA(ar[r], VLOAD(bp + (size_t)r * ldb + v * L), x);
                VSTORE(s + v * L, x);
            }
        }
        for (; p < k; p++) {
            const TB *bp = b + (size_t)p * ldb + j0;
            const V ap = VSET1(a[(size_t)p * ka]);
            for (size_t v = 0; v < nv; v++)
                VSTORE(s + v * L, VFMA(ap, v + 1 == nv && last < L ? VLOADB_PART(bp + v * L, last) : VLOAD(bp + v * L),
                                       VLOAD(s + v * L)));
        }
        for (size_t v = 0; v < nv; v++) {
            V x = VLOAD(s + v * L);
#ifdef VACT
            if (act) x = VACT(x, act);
#else
            (void)act;
#endif
            if (v == nv - 1 && last < L) VSTORE_PART(c + j0 + v * L, x, last);
            else VSTORE(c + j0 + v * L, x);
        }
    }
}
#undef GEMV_ROWS
#undef GEMV_CHUNK
#endif

/* The walk: panels of columns (NV vectors; NV1 when C has one row), each
 * down every MR rows of C while the panel of B stays in cache.
 * With KC (the float products), three more walks:
 *  - more than one panel and MR rows of C, where B is at most SMALLB_BYTES
 *    (in the second-level cache) and has fewer columns (ldb) than C rows,
 *    or where k is at most ROWS_KMAX (B at most GEMV_BYTES): blocks of
 *    B's columns of at most SMALLB_BYTES (whole panels; one block or two
 *    for such a small B),
 *    each down every MR rows of C, a tile of rows across the block's
 *    panels, their rows of A in the first-level cache. A small B's A
 *    comes from memory once, where down each panel it came once a panel
 *    (1 x 1 convolutions over 7 x 7 planes, whose weights are the large
 *    operand: torchvision's MobileNetV2, 1280 from 320 and 320 from 960,
 *    one core of an AMD EPYC (Zen 3), least of four alternated dcz bench
 *    --per-layer medians, 770 -> 696 and 543 -> 489 us; 160 from 960
 *    276 -> 241); a shallow product's C is written a few rows at a time,
 *    where down each panel a tile's few multiply-adds stored into MR rows
 *    and every panel into all of them (MobileNetV2's 96 from 16 over 112
 *    x 112, the same core, least of six: 1561 -> 722 us; EfficientNet-B0's
 *    with its SiLU 2661 -> 1771; 144 from 24 over 56 x 56 within the
 *    host's noise either way, so left to the panels). Not measured on
 *    Intel's cores;
 * and two whose tiles store their sums into C between blocks of k and
 * load them back: exactly, so every output still takes its products in k
 * order from its bias, the same bits:
 *  - more than MR rows of C: a panel goes down them a block of KC rows of
 *    B at a time (KC rows of the panel, in the first-level cache for every
 *    tile but the first); a panel of a large B came from memory once per
 *    MR rows (4096 x 4096 at batch 64, one core of an Intel Xeon with
 *    AVX-512: 62 -> 24 ms);
 *  - a B of more than GEMV_BYTES (past the second-level cache): one row
 *    of C by gemv_rows (above); more, its rows
 *    in order, a band of them (KR for up to MR rows of C, else KC) across
 *    every panel before the next band, so that B streams from memory,
 *    where down a panel its rows lie a row of B apart, each a few lines
 *    (4096 x 4096 at batch 1: 3.7 -> 2.5 ms, OpenBLAS's sgemv 2.4-2.7; at
 *    batch 64 24 -> 19-22 ms, OpenBLAS's sgemm 19-22; KR by vendor on
 *    x86: kernels_gemm.c, gemv_band). */
TGT static void NAME(gemm)(size_t m, size_t n, uint32_t k, const TA *a, size_t lda, size_t ka, const TB *b, size_t ldb,
                           const TBIAS *bias_m, const TBIAS *bias_n, TC *c, size_t ldc, const dcz_act *act,
                           const void *next, size_t next_bytes)
{
    const size_t width = (size_t)(m == 1 ? NV1 : NV) * L;
#ifdef KC
    const uint64_t bbytes = (uint64_t)k * ldb * sizeof *b;
    if (m > MR && n > width &&
        ((bbytes <= SMALLB_BYTES && m > ldb) || (k <= ROWS_KMAX && bbytes <= GEMV_BYTES))) {
        /* blocks of B's columns of at most SMALLB_BYTES (whole panels),
         * each down every MR rows of C, a tile of rows across the block's
         * panels */
        size_t nc = k ? SMALLB_BYTES / ((size_t)k * sizeof *b) / width * width : n;
        if (nc < width) nc = width;
        for (size_t j0 = 0; j0 < n; j0 += nc) {
            const size_t j1 = n - j0 < nc ? n : j0 + nc;
            for (size_t i = 0; i < m; i += MR) {
                const int mr = m - i < MR ? (int)(m - i) : MR;
                for (size_t j = j0; j < j1; j += width) {
                    const size_t cols = j1 - j < width ? j1 - j : width;
                    const int nv = (int)((cols + L - 1) / L);
                    NAME(tiles)[mr][nv](k, a + i * lda, lda, ka, b + j, ldb, bias_m ? bias_m + i : NULL,
                                        bias_n ? bias_n + j : NULL, c + i * ldc + j, ldc,
                                        (uint32_t)(cols - (size_t)(nv - 1) * L), 0, act, NULL);
                }
            }
        }
        return;
    }
    if (bbytes > GEMV_BYTES && m == 1) {
        NAME(gemv_rows)(n, k, a, ka, b, ldb, bias_m, bias_n, c, act);
        return;
    }
    if (bbytes > GEMV_BYTES) {
        const uint32_t band = m <= MR ? KR : KC;
        for (uint32_t p = 0; p < k;) {
            const uint32_t depth = k - p < band ? k - p : band;
            for (size_t j = 0; j < n; j += width)
                NAME(panel)(m, j, n - j < width ? n - j : width, p, depth, a, lda, ka, b, ldb, bias_m, bias_n, c, ldc,
                            p + depth == k ? act : NULL, NULL);
            p += depth;
        }
        return;
    }
    /* blocks of KC at most, as even as they come (400: four of 100, not
     * three of 128 and one of 16, whose tiles loaded and stored their sums
     * for 16 steps: 49 x 400 x 400 warm, one core of an AMD EPYC, Zen 5,
     * 65 -> 62 us; RegNetX-400MF at batch 1 0.96 of the time, the other
     * torchvision networks within noise) */
    const uint32_t kc = m > MR && k > KC ? (k + (k + KC - 1) / KC - 1) / ((k + KC - 1) / KC) : k;
#else
    const uint32_t kc = k;
#endif
    /* the lines of next, shared evenly among the walk's tiles of MR rows */
    const size_t tiles = (n + width - 1) / width * (m >= MR ? m / MR : 1) * (k ? (k + kc - 1) / kc : 1);
    dcz_gemm_ahead ahead = { (const char *)next, next ? (next_bytes + 63) / 64 : 0, NULL, 0, 0 };
    if (n <= width && k > kc && next) {
        /* one panel by blocks of k: its blocks after the first, then next */
        ahead.then = ahead.at;
        ahead.then_lines = ahead.lines;
        ahead.at = (const char *)(b + (size_t)kc * ldb);
        ahead.lines = ((size_t)(k - kc) * ldb * sizeof *b + 63) / 64;
    }
    ahead.share = (ahead.lines + ahead.then_lines + tiles - 1) / tiles;
    for (size_t j = 0; j < n; j += width) {
        uint32_t p = 0;
        do {   /* once when k is 0: the biases */
            const uint32_t depth = k - p < kc ? k - p : kc;
            NAME(panel)(m, j, n - j < width ? n - j : width, p, depth, a, lda, ka, b, ldb, bias_m, bias_n, c, ldc,
                        p + depth >= k ? act : NULL, &ahead);
            p += depth;
        } while (p < k);
    }
}

#undef NAME
#undef CAT
#undef CAT_
#undef SFX
#undef TGT
#undef V
#undef L
#undef VZERO
#undef VSET1
#undef VLOAD
#undef VFMA
#undef VSTORE
#undef VSTORE_PART
#undef VLOAD_PART
#undef VLOADB_PART
#undef B_UNPADDED
#undef MR
#undef KC
#undef KR
#undef GEMV_BYTES
#undef SMALLB_BYTES
#undef ROWS_KMAX
#undef VLOADC
#undef NV
#undef NV1
#undef TA
#undef TB
#undef TC
#undef TBIAS
#undef VACT
#undef CPREFETCH
