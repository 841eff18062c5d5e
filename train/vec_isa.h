/* vec_isa.h: the vector loops of vec.c for one x86 ISA, included by vec.c
 * once per ISA with these defined:
 *   SFX        the name suffix (__avx512, __avx2)
 *   TGT        the functions' target attribute
 *   V, L       the vector type and its lanes (16 or 8: NACC = 16 / L
 *              vectors hold the 16 partial sums of a reduction)
 *   VZERO() VSET1(f) VLOAD(p) VSTORE(p, v) VADD(a, b) VSUB(a, b) VMUL(a, b)
 *   VLOAD_PART(p, c)   c floats from p (1..L; L: a whole vector), 0 past them
 *   VKEEP(v, c)    v's first c lanes, 0 in the others
 *   VTREE16(acc)   the sum of the NACC accumulators' 16 lanes, as
 *                  dcz_vec_tree16 adds them
 *   VMAX0(v)       v where v > 0, else +0 (NaN: +0), as the references'
 *                  v > 0.0f ? v : 0.0f
 *   VCLIP(v, lo, hi)  v clipped as the references' t = hi < v ? hi : v,
 *                  lo > t ? lo : t (vectors lo, hi)
 *   VPOS(y, g)     g where y > 0, else +0
 *   VBAND(x, lo, hi, g)  g where lo < x < hi (vectors), else +0
 * and undefined again at its end.
 * Element-wise loops take whole vectors, then leave the last n % L
 * elements to the reference's scalar steps; a reduction takes blocks of 16
 * elements (the last one partial, its lanes past n zero), element j in
 * lane j % 16, and folds the lanes in registers. Each element is computed
 * by the same operations in the same order as vec.c's references: their
 * bits, at any length and alignment. */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define NAME(n) CAT(n, SFX)
#define NACC (16 / L)

/* Lanes of accumulator k a block's last r elements (1..15) fill. */
static inline int NAME(part)(size_t r, int k)
{
    const size_t lo = (size_t)k * L;
    return r <= lo ? 0 : r - lo >= L ? L : (int)(r - lo);
}

/* c floats from p, whole vectors by plain loads; v's first c lanes */
#define LOADC(p, c) ((c) == L ? VLOAD(p) : VLOAD_PART(p, c))
#define KEEPC(v, c) ((c) == L ? (v) : VKEEP(v, c))

/* A reduction: ACC(k, p, c) adds to accumulator k the elements of pointer
 * offset p, c of them (L: whole), zero in the lanes past c (adding +0
 * leaves a partial sum as it is: none is -0, each starting at +0). */
#define REDUCE(ACC)                                                                                     \
    size_t j = 0;                                                                                       \
    for (; j + 16 <= n; j += 16)                                                                        \
        for (int k = 0; k < NACC; k++) ACC(k, j + (size_t)k * L, L);                                    \
    if (j < n)                                                                                          \
        for (int k = 0; k < NACC; k++) {                                                                \
            const int c_ = NAME(part)(n - j, k);                                                        \
            if (c_) ACC(k, j + (size_t)k * L, c_);                                                      \
        }

TGT static float NAME(sum)(const float *s, size_t n)
{
    V acc[NACC];
    for (int k = 0; k < NACC; k++) acc[k] = VZERO();
#define ACC_SUM(k, p, c) acc[k] = VADD(acc[k], LOADC(s + (p), c))
    REDUCE(ACC_SUM)
#undef ACC_SUM
    return VTREE16(acc);
}

TGT static float NAME(dot)(const float *a, const float *b, size_t n)
{
    V acc[NACC];
    for (int k = 0; k < NACC; k++) acc[k] = VZERO();
#define ACC_DOT(k, p, c) acc[k] = VADD(acc[k], VMUL(LOADC(a + (p), c), LOADC(b + (p), c)))
    REDUCE(ACC_DOT)
#undef ACC_DOT
    return VTREE16(acc);
}

TGT static float NAME(sumsq_dev)(const float *s, float m, size_t n)
{
    const V vm = VSET1(m);
    V acc[NACC];
    for (int k = 0; k < NACC; k++) acc[k] = VZERO();
#define ACC_SQ(k, p, c) do { \
        const V d_ = KEEPC(VSUB(LOADC(s + (p), c), vm), c); \
        acc[k] = VADD(acc[k], VMUL(d_, d_)); \
    } while (0)
    REDUCE(ACC_SQ)
#undef ACC_SQ
    return VTREE16(acc);
}

TGT static void NAME(sums_grad)(const float *g, const float *x, float m, size_t n, float *sg, float *sgx)
{
    const V vm = VSET1(m);
    V acc[NACC], bcc[NACC];
    for (int k = 0; k < NACC; k++) acc[k] = bcc[k] = VZERO();
#define ACC_GRAD(k, p, c) do { \
        const V g_ = LOADC(g + (p), c); \
        acc[k] = VADD(acc[k], g_); \
        bcc[k] = VADD(bcc[k], KEEPC(VMUL(g_, VSUB(LOADC(x + (p), c), vm)), c)); \
    } while (0)
    REDUCE(ACC_GRAD)
#undef ACC_GRAD
    *sg = VTREE16(acc);
    *sgx = VTREE16(bcc);
}
#undef REDUCE
#undef LOADC
#undef KEEPC

TGT static void NAME(affine)(float *restrict d, const float *restrict s, float a, float b, size_t n)
{
    const V va = VSET1(a), vb = VSET1(b);
    size_t j = 0;
    for (; j + L <= n; j += L) VSTORE(d + j, VADD(VMUL(VLOAD(s + j), va), vb));
    for (; j < n; j++) d[j] = s[j] * a + b;
}

TGT static void NAME(affine_relu)(float *restrict d, const float *restrict s, float a, float b, size_t n)
{
    const V va = VSET1(a), vb = VSET1(b);
    size_t j = 0;
    for (; j + L <= n; j += L) VSTORE(d + j, VMAX0(VADD(VMUL(VLOAD(s + j), va), vb)));
    for (; j < n; j++) {
        const float v = s[j] * a + b;
        d[j] = v > 0.0f ? v : 0.0f;
    }
}

TGT static void NAME(affine_clip)(float *restrict d, const float *restrict s, float a, float b, float lo, float hi,
                                  size_t n)
{
    const V va = VSET1(a), vb = VSET1(b), vlo = VSET1(lo), vhi = VSET1(hi);
    size_t j = 0;
    for (; j + L <= n; j += L) VSTORE(d + j, VCLIP(VADD(VMUL(VLOAD(s + j), va), vb), vlo, vhi));
    for (; j < n; j++) {
        const float v = s[j] * a + b, t = hi < v ? hi : v;
        d[j] = lo > t ? lo : t;
    }
}

TGT static void NAME(lincomb)(float *restrict d, const float *restrict g, const float *restrict x, float p,
                              float q, float r, size_t n)
{
    const V vp = VSET1(p), vq = VSET1(q), vr = VSET1(r);
    size_t j = 0;
    for (; j + L <= n; j += L)
        VSTORE(d + j, VADD(VADD(VMUL(VLOAD(g + j), vp), VMUL(VLOAD(x + j), vq)), vr));
    for (; j < n; j++) d[j] = g[j] * p + x[j] * q + r;
}

TGT static void NAME(relu)(float *restrict d, const float *restrict s, size_t n)
{
    size_t j = 0;
    for (; j + L <= n; j += L) VSTORE(d + j, VMAX0(VLOAD(s + j)));
    for (; j < n; j++) d[j] = s[j] > 0.0f ? s[j] : 0.0f;
}

TGT static void NAME(relu_grad)(float *restrict d, const float *restrict g, const float *restrict y, size_t n)
{
    size_t j = 0;
    for (; j + L <= n; j += L) VSTORE(d + j, VPOS(VLOAD(y + j), VLOAD(g + j)));
    for (; j < n; j++) d[j] = y[j] > 0.0f ? g[j] : 0.0f;
}

TGT static void NAME(clip_grad)(float *restrict d, const float *restrict g, const float *restrict x, float lo,
                                float hi, size_t n)
{
    const V vlo = VSET1(lo), vhi = VSET1(hi);
    size_t j = 0;
    for (; j + L <= n; j += L) VSTORE(d + j, VBAND(VLOAD(x + j), vlo, vhi, VLOAD(g + j)));
    for (; j < n; j++) {
        const float gj = g[j], v = x[j];
        d[j] = (v > lo) & (v < hi) ? gj : 0.0f;
    }
}

TGT static void NAME(add)(float *restrict d, const float *restrict s, size_t n)
{
    size_t j = 0;
    for (; j + L <= n; j += L) VSTORE(d + j, VADD(VLOAD(d + j), VLOAD(s + j)));
    for (; j < n; j++) d[j] += s[j];
}

TGT static void NAME(sum2)(float *restrict d, const float *a, const float *b, size_t n)
{
    size_t j = 0;
    for (; j + L <= n; j += L) VSTORE(d + j, VADD(VLOAD(a + j), VLOAD(b + j)));
    for (; j < n; j++) d[j] = a[j] + b[j];
}

TGT static void NAME(axpy)(float *restrict d, const float *restrict s, float a, size_t n)
{
    const V va = VSET1(a);
    size_t j = 0;
    for (; j + L <= n; j += L) VSTORE(d + j, VADD(VLOAD(d + j), VMUL(va, VLOAD(s + j))));
    for (; j < n; j++) d[j] += a * s[j];
}

static const dcz_vec_ops NAME(ops) = {
    NAME(sum), NAME(dot), NAME(sumsq_dev), NAME(sums_grad), NAME(affine), NAME(affine_relu), NAME(affine_clip),
    NAME(lincomb), NAME(relu), NAME(relu_grad), NAME(clip_grad), NAME(add), NAME(sum2), NAME(axpy),
};

#undef NACC
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
#undef VSTORE
#undef VADD
#undef VSUB
#undef VMUL
#undef VMAX0
#undef VCLIP
#undef VPOS
#undef VBAND
#undef VLOAD_PART
#undef VKEEP
#undef VTREE16
