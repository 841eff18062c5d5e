/* shift_tile.h: the vector kernel of the shift form (kernels_shift.c),
 * included once per instruction set after defining
 *   SFX     suffix of the functions (__avx512, __avx2, __neon)
 *   TGT     their target attribute (empty where the build has the set)
 *   V, L    the vector type and its lanes (L divides 16)
 *   VSET1(f), VLOAD(p), VFMA(a, b, c) = a b + c fused, VSTORE(p, v)
 *   VREG    the asm constraint of a vector register ("v", "w")
 *   TMAX1, TMAX2, TMAX4  vectors a tile holds in registers for blocks of
 *           1, 2 and 4 output channels (TMAX1 at most 12)
 * and, for another element type than float, ET (weights, input cells,
 * sums) and FORM (the form's type: dcz_shift when float, else one with the
 * same ob, ptr, off and w); where the variant stores
 * its sums straight into the output (the float AVX-512 one), OUT_T (the
 * type of the output map, void by default), OUT_FILL(om, v0, T) that maps
 * a tile's vectors v0 .. v0 + T - 1 to the output, OUT_LOCAL(d, om) that
 * declares d, the map's destination read once before a tile's stores, and
 * OUT_STORE(&d, om, oc, i, v, wide) that stores vector i of the tile of
 * channel oc through them (and OUT_STORE_RES, the same adding d.res first,
 * where d.res is set), wide 1 in blocks of more than one channel, whose sums fill the
 * registers (kernels_shift.c: out_act__avx512), and
 * where the variant has vectors of half the lanes, VHLOAD(p) and VHFMA(a,
 * b, c), the low half of a vector loaded and multiplied and added in them
 * (the upper lanes left undefined); for integers, VADD(a, b) and
 * SPLIT_TMAX, the largest tile that sums its taps in two chains; and
 * SPARE(om), where a call may leave the sums of a block without taps
 * unwritten (the integer kernels: om set). It defines
 * CAT(shift_planes, SFX), the vector form of the scalar reference: the
 * same fused multiply-add per lane in the same order, so the same bits
 * (integers: exact sums). */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#ifndef ET
#define ET float
#endif
#ifndef OUT_T
#define OUT_T void
#endif
#ifndef VHFMA
#define VHLOAD(p) VLOAD(p)
#define VHFMA(a, b, c) VFMA(a, b, c)
#define NO_HALF 1
#endif
#ifndef FORM
#define FORM dcz_shift
#endif
#define FORM_OB(f) ((f)->ob)

/* t (OB planes tstride apart, T L each) = b + the sum over the n taps of
 * w[e OB + o] xs[off[e] ..], the accumulators held in registers through
 * all the taps, each input vector loaded once for the block's OB channels:
 * OB and T are constants at every call and the loops over them unroll.
 * With an output map om (OUT_STORE), the sums of channels oc0 .. oc0 + OB
 * - 1 go through it rather than to t. HALF: the tile's last vector is a
 * half (the plane's last vector, with L / 2 cells or fewer to compute),
 * which takes half the loads and multiply-adds. */
TGT static inline __attribute__((always_inline)) void CAT(shift_tile, SFX)(
    const uint32_t OB, const uint32_t T, const int HALF, const uint32_t *off, const ET *w, uint32_t n,
    const ET *b, const ET *xs, ET *t, size_t tstride, OUT_T *om, uint32_t oc0)
{
    V acc[4][TMAX1];
#pragma GCC unroll 4
    for (uint32_t o = 0; o < OB; o++)
#pragma GCC unroll 12
        for (uint32_t i = 0; i < T; i++) acc[o][i] = VSET1(b[o]);
    uint32_t e0 = 0;
#ifdef VADD
    /* Integer sums are exact in any order, so a small tile, which one chain
     * of multiply-adds per vector would hold to the instruction's latency,
     * takes its taps two at a time into two chains, added at the end. */
    if (OB == 1 && T <= SPLIT_TMAX) {
        V acc2[TMAX1];
#pragma GCC unroll 12
        for (uint32_t i = 0; i < T; i++) acc2[i] = VSET1(0);
        for (; e0 + 1 < n; e0 += 2) {
            const V w0 = VSET1(w[e0]), w1 = VSET1(w[e0 + 1]);
            const ET *p0 = xs + off[e0], *p1 = xs + off[e0 + 1];
#pragma GCC unroll 12
            for (uint32_t i = 0; i < T; i++) {
                if (HALF && i == T - 1) {
                    acc[0][i] = VHFMA(w0, VHLOAD(p0 + (size_t)i * L), acc[0][i]);
                    acc2[i] = VHFMA(w1, VHLOAD(p1 + (size_t)i * L), acc2[i]);
                } else {
                    acc[0][i] = VFMA(w0, VLOAD(p0 + (size_t)i * L), acc[0][i]);
                    acc2[i] = VFMA(w1, VLOAD(p1 + (size_t)i * L), acc2[i]);
                }
            }
        }
#pragma GCC unroll 12
        for (uint32_t i = 0; i < T; i++) acc[0][i] = VADD(acc[0][i], acc2[i]);
    }
#endif
    for (uint32_t e = e0; e < n; e++) {
        V wv[4];
#pragma GCC unroll 4
        for (uint32_t o = 0; o < OB; o++) wv[o] = VSET1(w[(size_t)e * OB + o]);
        const ET *p = xs + off[e];
#pragma GCC unroll 12
        for (uint32_t i = 0; i < T; i++) {
            const int half = HALF && i == T - 1;
            V x = half ? VHLOAD(p + (size_t)i * L) : VLOAD(p + (size_t)i * L);
            /* one load for the block: keep the compiler from folding it
             * into each multiply-add as a memory operand */
            if (OB > 1) __asm__("" : "+" VREG(x));
#pragma GCC unroll 4
            for (uint32_t o = 0; o < OB; o++)
                acc[o][i] = half ? VHFMA(wv[o], x, acc[o][i]) : VFMA(wv[o], x, acc[o][i]);
        }
    }
#ifdef OUT_STORE
    if (om) {
        OUT_LOCAL(dst, om);
#ifdef OUT_STORE_RES
        /* a loop of its own: a test of om->res at every store cost
         * MobileNetV2-style, which has none there, 1 to 2% */
        if (dst.res) {
#pragma GCC unroll 4
            for (uint32_t o = 0; o < OB; o++)
                if (OB == 1 || oc0 + o < om->out_c)
#pragma GCC unroll 12
                    for (uint32_t i = 0; i < T; i++) OUT_STORE_RES(&dst, om, oc0 + o, i, acc[o][i], OB > 1);
            return;
        }
#endif
#pragma GCC unroll 4
        for (uint32_t o = 0; o < OB; o++)
            if (OB == 1 || oc0 + o < om->out_c)
#pragma GCC unroll 12
                for (uint32_t i = 0; i < T; i++) OUT_STORE(&dst, om, oc0 + o, i, acc[o][i], OB > 1);
        return;
    }
#else
    (void)om;
    (void)oc0;
#endif
#pragma GCC unroll 4
    for (uint32_t o = 0; o < OB; o++)
#pragma GCC unroll 12
        for (uint32_t i = 0; i < T; i++) VSTORE(t + o * tstride + (size_t)i * L, acc[o][i]);
}

TGT static void CAT(shift_planes, SFX)(const FORM *f, const ET *bias, uint32_t out_c, size_t plane16,
                                       size_t cells, const ET *xs, ET *t, OUT_T *om)
{
    const uint32_t ob = FORM_OB(f), blocks = (out_c + ob - 1) / ob;
    const size_t tmax = ob == 1 ? TMAX1 : ob == 2 ? TMAX2 : TMAX4;
    /* the plane's vectors in tiles of at most tmax, as even as can be; a
     * tile runs every block of output channels while its input stays in
     * cache */
    const size_t nv = plane16 / L, tiles = (nv + tmax - 1) / tmax;
    /* the last vector a half where it holds L / 2 of the cells that
     * matter or fewer (its upper lanes, undefined, are never read) */
    int last_half = 0;
#ifndef NO_HALF
    last_half = cells + L / 2 <= plane16;
#endif
    (void)cells;
    size_t v0 = 0;
    for (size_t ti = 0; ti < tiles; ti++) {
        const size_t left = nv - v0, T = (left + (tiles - ti) - 1) / (tiles - ti);
        const int half = last_half && ti == tiles - 1;
#ifdef OUT_STORE
        if (om) OUT_FILL(om, v0, T);
#endif
        for (uint32_t k = 0; k < blocks; k++) {
            const uint32_t e0 = f->ptr[k], n = f->ptr[k + 1] - e0;
#ifdef SPARE
            if (n == 0 && SPARE(om)) continue;
#endif
            ET b[4] = { 0, 0, 0, 0 };
            for (uint32_t o = 0; o < ob && k * ob + o < out_c; o++) b[o] = bias ? bias[k * ob + o] : (ET)0;
            const ET *x0 = xs + v0 * L, *w0 = f->w + (size_t)e0 * ob;
            ET *t0 = t + (size_t)k * ob * plane16 + v0 * L;
            const uint32_t oc0 = k * ob;
            switch ((ob * 2 + half) * 16 + T) {
#ifdef NO_HALF
#define SHIFT_CASE(OB, k)                                                                                        \
    case OB * 32 + k: CAT(shift_tile, SFX)(OB, k, 0, f->off + e0, w0, n, b, x0, t0, plane16, om, oc0); break;
#else
#define SHIFT_CASE(OB, k)                                                                                        \
    case OB * 32 + k: CAT(shift_tile, SFX)(OB, k, 0, f->off + e0, w0, n, b, x0, t0, plane16, om, oc0); break; \
    case OB * 32 + 16 + k: CAT(shift_tile, SFX)(OB, k, 1, f->off + e0, w0, n, b, x0, t0, plane16, om, oc0); break;
#endif
            SHIFT_CASE(1, 1) SHIFT_CASE(1, 2) SHIFT_CASE(1, 3) SHIFT_CASE(1, 4) SHIFT_CASE(1, 5) SHIFT_CASE(1, 6)
            SHIFT_CASE(1, 7) SHIFT_CASE(1, 8) SHIFT_CASE(1, 9) SHIFT_CASE(1, 10) SHIFT_CASE(1, 11) SHIFT_CASE(1, 12)
#if TMAX2 > 0
            SHIFT_CASE(2, 1) SHIFT_CASE(2, 2) SHIFT_CASE(2, 3) SHIFT_CASE(2, 4) SHIFT_CASE(2, 5) SHIFT_CASE(2, 6)
#endif
#if TMAX2 > 6
            SHIFT_CASE(2, 7) SHIFT_CASE(2, 8) SHIFT_CASE(2, 9) SHIFT_CASE(2, 10) SHIFT_CASE(2, 11) SHIFT_CASE(2, 12)
#endif
#if TMAX4 > 0
            SHIFT_CASE(4, 1) SHIFT_CASE(4, 2) SHIFT_CASE(4, 3)
#endif
#if TMAX4 > 3
            SHIFT_CASE(4, 4) SHIFT_CASE(4, 5) SHIFT_CASE(4, 6)
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
#undef VREG
#undef TMAX1
#undef TMAX2
#undef TMAX4
#undef ET
#undef FORM
#undef FORM_OB
#undef OUT_T
#undef OUT_FILL
#undef OUT_STORE
#undef OUT_STORE_RES
#undef OUT_LOCAL
#undef VHLOAD
#undef VHFMA
#undef NO_HALF
#undef VADD
#undef SPLIT_TMAX
#undef SPARE
