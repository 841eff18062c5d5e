/* shift_tile.h: the vector kernel of the shift form (kernels_shift.c),
 * included once per instruction set after defining
 *   SFX     suffix of the functions (__avx512, __avx2, __neon)
 *   TGT     their target attribute (empty where the build has the set)
 *   V, L    the vector type and its float lanes (L divides 16)
 *   VSET1(f), VLOAD(p), VFMA(a, b, c) = a b + c fused, VSTORE(p, v)
 *   TMAX    vectors a tile holds in registers (at most 24)
 * and, for another element type than float, ET (weights, input cells,
 * sums) and FORM (the form's type: dcz_shift when float, else one with the
 * same ptr, off and w). It defines CAT(shift_planes, SFX), the vector form
 * of the scalar reference: the same fused multiply-add per lane in the same
 * order, so the same bits (integers: exact sums). */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#ifndef ET
#define ET float
#endif
#ifndef FORM
#define FORM dcz_shift
#endif

/* t (T L) = b + the sum over the n weights of w[e] xs[off[e] ..], the
 * accumulators held in registers through all the weights: T is a constant
 * at every call and the loops over it unroll. */
TGT static inline __attribute__((always_inline)) void CAT(shift_tile, SFX)(
    const uint32_t T, const uint32_t *off, const ET *w, uint32_t n, ET b, const ET *xs, ET *t)
{
    V acc[TMAX];
#pragma GCC unroll 24
    for (uint32_t i = 0; i < T; i++) acc[i] = VSET1(b);
    for (uint32_t e = 0; e < n; e++) {
        const V wv = VSET1(w[e]);
        const ET *p = xs + off[e];
#pragma GCC unroll 24
        for (uint32_t i = 0; i < T; i++) acc[i] = VFMA(wv, VLOAD(p + (size_t)i * L), acc[i]);
    }
#pragma GCC unroll 24
    for (uint32_t i = 0; i < T; i++) VSTORE(t + (size_t)i * L, acc[i]);
}

TGT static void CAT(shift_planes, SFX)(const FORM *f, const ET *bias, uint32_t out_c, size_t plane16,
                                       const ET *xs, ET *t)
{
    /* the plane's vectors in tiles of at most TMAX, as even as can be; a
     * tile runs every output channel while its input stays in cache */
    const size_t nv = plane16 / L, tiles = (nv + TMAX - 1) / TMAX;
    size_t v0 = 0;
    for (size_t ti = 0; ti < tiles; ti++) {
        const size_t left = nv - v0, T = (left + (tiles - ti) - 1) / (tiles - ti);
        for (uint32_t oc = 0; oc < out_c; oc++) {
            const uint32_t e0 = f->ptr[oc], n = f->ptr[oc + 1] - e0;
            const ET b = bias ? bias[oc] : (ET)0;
            const ET *x0 = xs + v0 * L;
            ET *t0 = t + (size_t)oc * plane16 + v0 * L;
            switch (T) {
#define SHIFT_CASE(k) case k: CAT(shift_tile, SFX)(k, f->off + e0, f->w + e0, n, b, x0, t0); break;
            SHIFT_CASE(1) SHIFT_CASE(2) SHIFT_CASE(3) SHIFT_CASE(4) SHIFT_CASE(5) SHIFT_CASE(6)
            SHIFT_CASE(7) SHIFT_CASE(8) SHIFT_CASE(9) SHIFT_CASE(10) SHIFT_CASE(11) SHIFT_CASE(12)
#if TMAX > 12
            SHIFT_CASE(13) SHIFT_CASE(14) SHIFT_CASE(15) SHIFT_CASE(16) SHIFT_CASE(17) SHIFT_CASE(18)
            SHIFT_CASE(19) SHIFT_CASE(20) SHIFT_CASE(21) SHIFT_CASE(22) SHIFT_CASE(23) SHIFT_CASE(24)
#endif
#undef SHIFT_CASE
            default: break;
            }
        }
        v0 += T;
    }
}

#undef SFX
#undef TGT
#undef V
#undef L
#undef VSET1
#undef VLOAD
#undef VFMA
#undef VSTORE
#undef TMAX
#undef ET
#undef FORM
