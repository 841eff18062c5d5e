/* load.c: turning a .dcz buffer into an executable dcz_model, on the heap
 * (dcz_open_memory) or inside a caller's arena (dcz_plan, dcz_open_static).
 *
 * Every layer becomes an exec layer (model.h) that knows its input and
 * output shapes and, for convolutions and pools, its geometry; shapes chain
 * by the rules of docs/FORMAT.md (dcz_op_shape).
 *
 * Loading runs the same walk twice over the validated container: a sizing
 * pass that only measures, then a filling pass into one block of exactly
 * that size (the model, its layers, weights in execution form, the scratch
 * of im2col and of dcz_spmm's tile). Huffman and raw streams are decoded once, straight into the
 * execution form of model.h, through a decoding scratch placed after the
 * walk's bytes (which also holds, one layer at a time, the dense weights
 * of a convolution whose kernel reads only the form built from them, on a
 * model no GPU will take: loader.forms_only). Both loaders share the walk; they differ in where the block
 * comes from and in what it holds:
 *
 *   heap    [ walk ][ decoding scratch ]              one allocation (in huge
 *           pages from 2 MB: dcz_walked_alloc); activation buffers are
 *           grown by dcz_run (run.c) as batches require, the same way
 *   static  [ walk ][ activations | accumulators ]   inside the caller's arena,
 *                   [ decoding scratch ]             overlaid: the scratch is
 *           dead once loading ends, the buffers live only while running;
 *           dense fp32 tensors are not copied but used in place from the
 *           file buffer (little-endian IEEE hosts, 4-byte aligned payloads)
 *
 * This file holds the model-level load: the walk over the graph, the
 * activations' places and segments, the fused activations, the layout of
 * the block and the two loaders. A layer's weights and the extra forms its
 * kernel reads: load_layer.c; the arena both take from: arena.c; what the
 * two files share: load.h.
 *
 * Checked by tests/unit/test_format.c (round trips through the toolchain's
 * writer, corruptions, truncations), tests/unit/test_static.c (the arena
 * size is exact, nothing is allocated, results equal the heap model's bit
 * for bit, weights are used in place) and tests/fuzz/fuzz_dcz.c.
 */
#include <string.h>
#ifndef DCZ_NO_HEAP
#include <stdlib.h>
#endif
#ifdef DCZ_CUDA
#include <stdio.h>
#endif

#include "runtime/cpu/f32/bands.h"
#include "runtime/cpu/f32/conv.h"
#include "runtime/cpu/f32/gemm.h"
#include "runtime/cpu/f32/lanes.h"
#include "runtime/cpu/f32/shift.h"
#include "runtime/cpu/f32/sparse.h"
#include "runtime/cpu/f32/wino.h"
#include "runtime/cpu/q8/qconv.h"
#include "runtime/cpu/q8/qelem.h"
#include "runtime/cpu/q8/qlanes.h"
#include "runtime/cpu/q8/qshift.h"
#include "runtime/cpu/q8/qspmm.h"
#include "runtime/load.h"
#include "runtime/model.h"
#ifdef DCZ_CUDA
#include "runtime/cuda/gpu.h"
#endif

#define TRY(expr) do { dcz_status s_ = (expr); if (s_ != DCZ_OK) return s_; } while (0)

typedef dcz_arena arena;

#define arena_take dcz_arena_take

void dcz_options_init(dcz_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->device = DCZ_DEVICE_AUTO;
    opt->max_batch = 1;
    opt->max_work = DCZ_DEFAULT_MAX_WORK;
}

/* Nonzero when this host stores a float as the file does (IEEE binary32,
 * little-endian), so an F32 payload can be read as floats where it lies. */
static int host_reads_f32_in_place(void)
{
    const float one = 1.0f;
    uint8_t b[sizeof one];
    memcpy(b, &one, sizeof one);
    return sizeof one == 4 && b[0] == 0 && b[1] == 0 && b[2] == 0x80 && b[3] == 0x3f;
}

/* Whether an integer activation's table is a clamp: table[v] = min(max(v,
 * lo), hi) for every v (a CLIP whose input and output share a scale). */
static int table_clamp(const dcz_q *table, int32_t qmax, int32_t *lo, int32_t *hi)
{
    const int32_t a = table[0], b = table[2 * qmax];
    for (int32_t v = -qmax; v <= qmax; v++)
        if (table[v + qmax] != (v < a ? a : v > b ? b : v)) return 0;
    *lo = a;
    *hi = b;
    return a <= b;
}

/* A float convolution, a float ADD or a float fully connected layer whose
 * output only the next layer, a ReLU or CLIP run in place over it, reads
 * (a SiLU too, after a convolution or a fully connected layer: 20% of
 * dense EfficientNet-B0 ran as a pass of its own over each output)
 * takes that activation as it writes its output (dcz_conv2d_shift_act,
 * dcz_add, the lane kernel's and dcz_gemm_f32_act's stores; a pass over
 * the output, still in cache, after the other convolution and fully
 * connected kernels), and the
 * activation layer is skipped, in runs without taps (run.c): a pass over
 * the output and a layer's call less. On integers, an activation that is a clamp (ReLU:
 * 0 .. qmax; a table that is one, as calibration makes a CLIP's after a
 * weighted layer) is fused alike into a convolution or a fully connected
 * layer, as the bounds of its requantization (qlo, qhi: the integer shift
 * form's, or a clamp after the others'), or into an ADD, as the bounds of
 * its sum: the bits of the two layers run apart. (Only the shift form took
 * them once: on AVX2, whose convolutions run on the other forms, each
 * ReLU6 then ran by its table, 18% of MobileNetV2-style int8.) */
/* Whether a float activation op fuses into the layer before it: a ReLU or
 * a CLIP into a weighted layer or an ADD, a SiLU or a HardSwish into a
 * weighted layer alone (an ADD's kernels take clamps), and not in a build
 * for size (DCZ_SMALL: dcz_act_one takes neither) */
static int float_act_fuses(uint16_t op, int weighted)
{
#ifdef DCZ_SMALL
    const int curve = 0;
#else
    const int curve = (op == DCZ_OP_SILU || op == DCZ_OP_HARD_SWISH) && weighted;
#endif
    return op == DCZ_OP_RELU || op == DCZ_OP_CLIP || curve;
}

/* Whether a float convolution is the first of a pair that bands may run
 * (pair_bands; the loader reserves its ring by the same rule): pointwise,
 * on the dense product or the shift form. */
static int bands_first(uint16_t op, dcz_kernel k, const dcz_conv_geom *g)
{
    return op == DCZ_OP_CONV2D && (k == DCZ_K_CONV_GEMM || k == DCZ_K_CONV_EXPANDED || k == DCZ_K_CONV_SHIFT) &&
           dcz_conv_pointwise(g);
}

static void fuse_activations(dcz_model *m)
{
    for (uint32_t i = 0; i < m->nlayers; i++) {
        m->layers[i].qlo = -m->qmax;
        m->layers[i].qhi = m->qmax;
    }
    for (uint32_t i = 0; i + 1 < m->nlayers; i++) {
        dcz_exec_layer *c = &m->layers[i], *a = &m->layers[i + 1];
        if (a->tin[0] != i + 1 || m->tensors[i + 1].last != i + 1 ||
            m->tensors[i + 2].off != m->tensors[i + 1].off || m->tensors[i + 2].inner != m->tensors[i + 1].inner)
            continue;
        if (c->q && a->q && (c->op == DCZ_OP_CONV2D || c->op == DCZ_OP_DENSE || c->op == DCZ_OP_ADD) &&
            i != m->q_last) {
            int32_t lo = 0, hi = m->qmax;
            /* (an activation's table: a Concat's tables are its inputs') */
            const int act_table = a->table && dcz_op_get(a->op)->qscale == DCZ_QS_TABLE;
            if (a->op != DCZ_OP_RELU && !(act_table && table_clamp(a->table, m->qmax, &lo, &hi))) continue;
            c->qlo = lo;
            c->qhi = hi;
            a->fused = DCZ_FUSED_ACT;
            continue;
        }
        const int weighted = c->op == DCZ_OP_CONV2D || c->op == DCZ_OP_DENSE;
        const int takes = weighted || c->op == DCZ_OP_ADD;
        if (!takes || c->q || a->q || !float_act_fuses(a->op, weighted)) continue;
        c->act = (dcz_act){ a->op, a->param[0], a->param[1] };
        a->fused = DCZ_FUSED_ACT;
    }
    /* then a float ADD that reads a convolution's output, which nothing
     * else reads, on the shift form, into the convolution, which adds the
     * ADD's other input and applies its activation as it writes the ADD's
     * output (dcz_conv2d_shift_act, where its stores add it; a pass over an
     * output less, and the ADD's call: 2.4% of the ResNet-style preset at
     * batch 1). The convolution writes the ADD's place as it reads its own
     * input: the two places differ, or are one (its input is the ADD's
     * other) and a sample as wide in and out, each sample's input split off
     * before its output is written. Both layers lie in one segment, whose
     * chunks they share. */
    for (uint32_t i = 0; i + 1 < m->nlayers; i++) {
        dcz_exec_layer *c = &m->layers[i], *a = &m->layers[i + 1];
        const dcz_tensor *t = m->tensors;
        if (DCZ_REF_ONLY || c->q || a->q || c->op != DCZ_OP_CONV2D || !dcz_kernel_shifts((dcz_kernel)c->kernel) || a->op != DCZ_OP_ADD ||
            a->nin != 2 || t[i + 1].last != i + 1 || t[i + 1].seg_first != t[i + 2].seg_first ||
            !dcz_conv2d_shift_res_fuses(&c->geom, &c->shift))
            continue;
        const uint32_t k = a->tin[1] == i + 1, in = c->tin[0];   /* the convolution's: input k */
        /* (res 0 says none: an ADD of the model's input stays apart) */
        /* (nor an ADD a Concat hosts at batch 1, place_concats: its place is
         * held from the ADD's layer, not the convolution's) */
        if (a->tin[k] != i + 1 || a->tin[1 - k] == i + 1 || a->tin[1 - k] == 0 || t[i + 2].host ||
            (in && t[in].inner == t[i + 2].inner && t[in].off == t[i + 2].off && t[in].width != t[i + 2].width))
            continue;
        c->res = a->tin[1 - k];
        c->act = a->act;
        a->fused = DCZ_FUSED_ADD;
    }
    /* then an integer 2x2 max pool of stride 2 that alone reads such a
     * convolution's output (or that of its fused activation), whole windows
     * only, into the convolution, whose requantization takes the pooled
     * sums: a quarter of its work (dcz_qconv2d_shift_requant) */
    for (uint32_t i = 0; i + 1 < m->nlayers; i++) {
        dcz_exec_layer *c = &m->layers[i];
        const uint32_t j = i + 1 + (i + 2 < m->nlayers && m->layers[i + 1].fused == DCZ_FUSED_ACT);   /* the pool */
        if (DCZ_REF_ONLY || !c->q || c->op != DCZ_OP_CONV2D || !dcz_kernel_shifts((dcz_kernel)c->kernel) || i == m->q_last ||
            j >= m->nlayers)
            continue;
        dcz_exec_layer *p = &m->layers[j];
        const dcz_requant rq = { c->rq_mult, c->rq_shift, m->qmax, c->rq_pre };
        if (!p->q || p->op != DCZ_OP_MAXPOOL || p->tin[0] != j || m->tensors[j].last != j ||
            p->geom.kh != 2 || p->geom.kw != 2 || p->geom.sh != 2 || p->geom.sw != 2 || p->geom.ph || p->geom.pw ||
            p->geom.out_h != c->geom.out_h / 2 || p->geom.out_w != c->geom.out_w / 2 ||
            !dcz_qconv2d_shift_requant_runs(&c->geom, &c->qshift, &rq, 1))
            continue;
        c->qpool = 1;
        p->fused = DCZ_FUSED_POOL;
    }
}

/* The layers that read tensor t (an input read twice counted once) */
static uint32_t tensor_readers(const dcz_model *m, uint32_t t)
{
    uint32_t n = 0;
    for (uint32_t j = 0; j < m->nlayers; j++) {
        int reads = 0;
        for (uint32_t k = 0; k < m->layers[j].nin; k++) reads |= m->layers[j].tin[k] == t;
        n += (uint32_t)reads;
    }
    return n;
}

/* Whether integer layer l requantizes on the shift form when the run
 * fuses (dcz_qconv2d_shift_requant runs it) */
static int qshift_requantizes(const dcz_model *m, uint32_t i)
{
    const dcz_exec_layer *l = &m->layers[i];
    const dcz_requant rq = { l->rq_mult, l->rq_shift, m->qmax, l->rq_pre };
    return l->q && l->op == DCZ_OP_CONV2D && dcz_kernel_shifts((dcz_kernel)l->kernel) && i != m->q_last &&
           dcz_qconv2d_shift_requant_runs(&l->geom, &l->qshift, &rq, l->qpool);
}

/* An integer convolution on the shift form whose output (or its fused
 * activation's) only another such convolution reads, as its one input:
 * the channels of the first that hold no weight each hold one value
 * throughout (its requantized bias, clamped as the layer's outputs are:
 * dcz_qshift_none_value), which the first no longer writes (qskip) and
 * the second takes from its form (qin) where it would read their planes;
 * through an activation by table between them, the table's value of each.
 * Pruned networks leave many such channels: the expansions of
 * MobileNetV2 pruned to 90% by blocks of four input channels hold no
 * weight in most of theirs, whose constant planes the depthwise layer
 * after each read. Not where every channel holds none: the splits read
 * the rows of a channel that is read in the place of the others
 * (cpu/q8/kernels_qshift.c, quad_rows). After fuse_activations (the
 * clamps) and the plan (the tables' kernels); not in the loads of a
 * measured plan, which time each layer alone. */
static void pair_constants(dcz_model *m)
{
    for (uint32_t i = 0; i + 1 < m->nlayers; i++) {
        dcz_exec_layer *c = &m->layers[i];
        if (DCZ_REF_ONLY || !qshift_requantizes(m, i) || c->qpool) continue;
        /* the tensor the next layer reads: the output, or its fused activation's in its place */
        const uint32_t act = m->layers[i + 1].fused == DCZ_FUSED_ACT;
        uint32_t t = i + 1 + act;
        if (act && tensor_readers(m, i + 1) != 1) continue;
        if (m->tensors[t].last >= m->nlayers || m->tensors[t].host || tensor_readers(m, t) != 1) continue;
        uint32_t j = m->tensors[t].last;
        /* or an activation by table between them (SiLU, HardSwish), which
         * maps each constant to one and skips those planes (qin) */
        dcz_exec_layer *a = &m->layers[j];
        const dcz_q *table = NULL;
        if (a->q && a->kernel == DCZ_K_QTABLE && a->table && !a->fused && a->nin == 1 && a->tin[0] == t &&
            a->in_shape.rank == 3 && a->in_shape.dims[0] == c->geom.out_c && m->tensors[j + 1].last < m->nlayers &&
            !m->tensors[j + 1].host && tensor_readers(m, j + 1) == 1) {
            table = a->table;
            t = j + 1;
            j = m->tensors[t].last;
        }
        dcz_exec_layer *d = &m->layers[j];
        if (!qshift_requantizes(m, j) || d->nin != 1 || d->tin[0] != t || d->geom.in_c != c->geom.out_c) continue;
        uint32_t none = 0;
        for (uint32_t oc = 0; oc < c->geom.out_c; oc++) {
            if (!c->qshift.none[oc]) continue;
            const dcz_q v =
                dcz_qshift_none_value(c->qbias ? c->qbias[oc] : 0, c->rq_mult[oc], c->rq_shift[oc], c->qlo, c->qhi);
            c->qshift.none_value[oc] = table ? table[v + m->qmax] : v;
            none++;
        }
        /* (a layer whose every channel holds none leaves the next nothing to read) */
        if (!none || none == c->geom.out_c) continue;
        c->qskip = 1;
        d->qin = (dcz_qconst){ c->qshift.none, c->qshift.none_value };
        if (table) a->qin = (dcz_qconst){ c->qshift.none, NULL };
    }
}

/* An integer activation by table (HardSwish, SiLU) whose output only the
 * depthwise convolution after it reads, on the byte form by maps
 * (cpu/q8/qshift_form.c), as its one input: at batch 1, when the run
 * fuses, the activation writes that layer's byte planes into the scratch,
 * each value looked up as it is placed (dcz_qdw_planes_table), and the
 * convolution runs on them; the activation's output is never written
 * (run.c, qtable_planes). Both lie in one segment, so one chunk's scratch
 * holds the planes from one to the other. The constants the convolution
 * takes in the place of some planes (pair_constants, before) are the
 * table's already. Not in the loads of a measured plan, which time each
 * layer alone. One core of an AMD EPYC (Zen 5), int8 MobileNetV3-Small
 * (pruned by blocks of four input channels, batch 1): its five HardSwish
 * layers before 5 x 5 depthwise ones and those layers 43.2 -> 41.6 us (dcz
 * bench --per-layer least of three alternated rounds), the model 0.991 of
 * the time (medians of ten alternated rounds in both orders). */
static void pair_table_planes(dcz_model *m)
{
    const dcz_tensor *t = m->tensors;
    uint8_t tb[256];
    for (uint32_t i = 0; i + 1 < m->nlayers; i++) {
        dcz_exec_layer *a = &m->layers[i], *d = &m->layers[i + 1];
        if (DCZ_REF_ONLY || !a->q || a->kernel != DCZ_K_QTABLE || !a->table || a->fused || a->nin != 1 ||
            !qshift_requantizes(m, i + 1) || d->qpool || d->nin != 1 || d->tin[0] != i + 1 || t[i + 1].last != i + 1 ||
            t[i + 1].host || tensor_readers(m, i + 1) != 1 || t[i + 1].seg_first != t[i + 2].seg_first ||
            a->in != d->geom.in_c * d->geom.in_h * d->geom.in_w || !dcz_qdw_planes_table_takes(&d->qshift) ||
            !dcz_qtable_bytes(a->table, m->qmax, tb))
            continue;
        a->qplanes = 1;
    }
}

/* A float pointwise convolution on the dense product or the shift form
 * whose output (or its fused activation's) only a depthwise convolution
 * reads, which the AVX-512 rows kernel runs, over a tensor past the
 * second-level cache: the two run together by bands of output rows
 * (cpu/f32/bands.h), the first writing the second's output place, the
 * wide tensor between them never written. That place may not be the
 * first's input's, which it reads as it writes; both lie in one
 * segment. After fuse_activations; not in the loads of a measured plan,
 * which time each layer alone (open_measured pairs the model it keeps). */
static void pair_bands(dcz_model *m)
{
    for (uint32_t i = 0; i + 1 < m->nlayers; i++) {
        dcz_exec_layer *c = &m->layers[i];
        const uint32_t j = i + 1 + (m->layers[i + 1].fused == DCZ_FUSED_ACT);   /* the depthwise layer */
        const dcz_tensor *t = m->tensors;
        if (DCZ_REF_ONLY || c->q || c->res || j >= m->nlayers || !bands_first(c->op, (dcz_kernel)c->kernel, &c->geom))
            continue;
        dcz_exec_layer *d = &m->layers[j];
        const uint32_t in = c->tin[0];
        /* (nor a depthwise output a Concat hosts at batch 1, place_concats:
         * its place is held from the depthwise layer, the pair writes it
         * from the pointwise one) */
        if (d->q || d->op != DCZ_OP_CONV2D || d->kernel != DCZ_K_CONV_DEPTHWISE_ROWS || d->fused || d->res ||
            d->nin != 1 || d->tin[0] != j || t[j].last != j || t[i + 1].last != i + 1 || t[j + 1].host ||
            t[i + 1].seg_first != t[j + 1].seg_first || m->scratch_floats < dcz_conv2d_bands_floats(&d->geom))
            continue;
        if (in && t[in].inner == t[j + 1].inner && t[in].off < t[j + 1].off + t[j + 1].width &&
            t[j + 1].off < t[in].off + t[in].width)
            continue;
        if (!dcz_conv2d_bands_takes(&c->geom, c->kernel == DCZ_K_CONV_SHIFT ? &c->shift : NULL, &d->geom, &d->shift))
            continue;
        c->band = (uint16_t)j;
        d->fused = DCZ_FUSED_BANDS;
    }
}

/* Whether layer l takes the whole batch, as a fully connected layer does:
 * a 1 x 1 convolution by pixel rows whose weights pass
 * DCZ_BATCH_WEIGHT_BYTES, which reads each panel of them once for the
 * samples it takes (dcz_conv2d_pixels_pool), where a segment of chunks
 * of one sample read them all again for every sample. One core of an AMD
 * EPYC (Zen 5), dcz bench medians of six alternated rounds in both orders:
 * RegNetX-400MF at batch 8 0.91 of the time (its 400 -> 400 layers over
 * 7 x 7, 640 KB of weights each), at two threads 0.97; ResNet-50,
 * MobileNetV2 and DenseNet-121 within noise. At 256 KB DenseNet-121's
 * narrowing layers over 14 x 14 (up to 992 -> 128) joined them, and it
 * took 1.03 of the time. */
#define DCZ_BATCH_WEIGHT_BYTES (512u << 10)
static int batch_weights(const dcz_exec_layer *l)
{
    return l->kernel == DCZ_K_CONV_GEMM_PIXELS && dcz_conv_pointwise(&l->geom) &&
           (uint64_t)l->geom.in_c * dcz_gemm_ldb(l->geom.out_c) * sizeof(float) > DCZ_BATCH_WEIGHT_BYTES;
}

/* The segments of run.c: a maximal run of layers that each compute a
 * sample from that sample alone and gain nothing from a batch (t[i +
 * 1].chunk 1 on entry for such a layer i, 0 for one that takes the whole
 * batch) goes through the batch a chunk of samples at a time, so that the
 * chunk's activations stay in the cache from one layer to the next; every
 * other layer is a segment of its own. A chunk is as many samples as
 * DCZ_CHUNK_BYTES holds of the segment's outputs (at least one). The
 * tensors written and last read within a segment of chunks are inner; a
 * segment without any takes the whole batch after all. Returns the
 * largest chunk (0: none), the samples the chunk block must hold. */
static uint32_t plan_segments(dcz_tensor *t, uint32_t nlayers)
{
    uint32_t most = 0;
    for (uint32_t i = 0; i < nlayers;) {
        const uint32_t alone = t[i + 1].chunk;
        uint32_t j = i;
        while (alone && j + 1 < nlayers && t[j + 2].chunk) j++;
        uint64_t bytes = 0;   /* a sample's outputs, those run in place over their input aside */
        for (uint32_t k = i; k <= j; k++) {
            if (!t[k + 1].share) bytes += (uint64_t)t[k + 1].width * sizeof(float);
            t[k + 1].seg_first = i;
            t[k + 1].seg_last = j;
            t[k + 1].chunk = 0;
        }
        if (alone && bytes) {
            const uint64_t c = DCZ_CHUNK_BYTES / bytes;
            t[i + 1].chunk = c < 1 ? 1 : c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
            int inner = 0;
            /* and a layer that may run in place over its input shares
             * that input's block, both ways, so that it still runs in
             * place: over an input from outside, or one that is not inner,
             * its output is not either; an output that is not inner keeps
             * the input it runs over out of the chunk block too */
            for (uint32_t k = i; k <= j; k++) {
                const uint32_t u = t[k + 1].share;
                t[k + 1].inner = k + 1 < nlayers && t[k + 1].last <= j &&
                                 !(u && t[u].last == k && (u <= i || !t[u].inner));
            }
            for (uint32_t k = j + 1; k-- > i;) {
                const uint32_t u = t[k + 1].share;
                if (!t[k + 1].inner && u > i && t[u].last == k) t[u].inner = 0;
                inner |= t[k + 1].inner;
            }
            if (!inner) t[i + 1].chunk = 0;   /* nothing to keep in the cache */
            else if (t[i + 1].chunk > most) most = t[i + 1].chunk;
        }
        i = j + 1;
    }
    return most;
}

/* Whether the place whose tenant's last reader is layer busy (nlayers: the
 * model output) is free for the output of layer def. Inner tensors: that
 * reader ran before def (in every chunk, layer after layer); the others:
 * that reader's segment ended before def's began. */
static int place_free(const dcz_tensor *t, uint32_t nlayers, uint32_t busy, uint32_t def, int inner)
{
    if (inner) return busy < def;
    return busy < nlayers && t[busy + 1].seg_last < t[def + 1].seg_first;
}

/* A float CONCAT's inputs at batch 1: where the CONCAT is the last
 * reader of each of its inputs, none of them read by it twice, and it is
 * not the model's output, a run of one sample that fuses keeps each input
 * in the CONCAT's place, at its channels, in the CONCAT's block (the chunk
 * block holds one sample then, and no chunk runs beside it; dcz_tensor.host,
 * host_at; run.c, place_of), and with it each
 * tensor the input was written in place over (the chain of in-place
 * layers that ends in it, each the last reader of the one before: no
 * tensor lies in two such chains, nor in an earlier CONCAT's), so
 * that the CONCAT has nothing to copy (DCZ_FUSED_CONCAT, layers given).
 * Its place is held from the first layer writing one of them (from), so
 * no other tensor takes it meanwhile; at other batches, and in runs with
 * taps, every tensor keeps its own place and the CONCAT copies, as before.
 * A calibrated model keeps its CONCATs (their integer inputs may take
 * other scales). SqueezeNet 1.1's Concats copied 82 us a sample of its 3.1
 * ms (one core of an AMD EPYC, Zen 5). */
static dcz_status place_concats(const dcz_container *c, dcz_tensor *t, uint32_t nlayers, dcz_exec_layer *layers)
{
    dcz_graph_walk w;
    TRY(dcz_graph_begin(c, &w));
    for (uint32_t i = 0; i < nlayers; i++) {
        dcz_graph_layer g;
        TRY(dcz_graph_next(&w, &g));
        const uint32_t v = i + 1;
        if (g.op != DCZ_OP_CONCAT || v == nlayers) continue;
        int ok = 1;
        for (uint32_t k = 0; k < g.nin; k++) {
            const uint32_t u = g.in[k];
            ok &= u > 0 && t[u].last == i;
            for (uint32_t j = 0; j < k; j++) ok &= g.in[j] != u;
        }
        if (!ok) continue;
        uint32_t from = i, at = 0;
        for (uint32_t k = 0; k < g.nin; k++) {
            for (uint32_t y = g.in[k];;) {
                t[y].host = v;
                t[y].host_at = at;
                if (t[y].from < from) from = t[y].from;
                const uint32_t s = t[y].share;
                if (!s || t[s].last != y - 1) break;
                y = s;
            }
            at += t[g.in[k]].width;
        }
        t[v].from = from;
        if (layers) layers[i].fused = DCZ_FUSED_CONCAT;
    }
    return dcz_graph_end(&w);
}

/* Places of the activations (dcz_tensor) of one block (the inner tensors,
 * or the others), from the tensors' lifetimes, in
 * layer order (a tensor's from): the output of layer i takes its input's
 * place when layer i is in place and the last to read that input, else a free place
 * (place_free), the smallest that holds it, else the largest free one,
 * grown, else a new one; places are laid out in the order they were
 * opened. Returns the floats a sample of the block. */
static uint64_t plan_places(dcz_tensor *t, uint32_t nlayers, int inner)
{
    /* in the order the places are taken (a CONCAT that hosts its inputs
     * from the first of them, place_concats) */
    for (uint32_t def = 0; def < nlayers; def++)
        for (uint32_t v = def + 1; v <= nlayers; v++) {
            if (t[v].inner != inner || t[v].from != def) continue;
            const uint32_t u = t[v].share, us = u ? t[u].slot : 0;
            if (u && t[u].inner == inner && t[u].last == def && t[us].busy == def && t[us].size >= t[v].width) {
                t[v].slot = us;   /* in place: the activation runs over its input */
                t[us].busy = t[v].last;
                continue;
            }
            uint32_t best = 0, grow = 0;
            for (uint32_t o = 1; o < v; o++) {
                if (t[o].inner != inner || t[o].slot != o || !place_free(t, nlayers, t[o].busy, def, inner)) continue;
                if (t[o].size >= t[v].width) {
                    if (!best || t[o].size < t[best].size) best = o;
                } else if (!grow || t[o].size > t[grow].size) {
                    grow = o;
                }
            }
            const uint32_t o = best ? best : grow ? grow : v;
            t[v].slot = o;
            if (o == v) t[v].size = t[v].width;
            else if (t[o].size < t[v].width) t[o].size = t[v].width;
            t[o].busy = t[v].last;
        }
    uint64_t end = 0;
    for (uint32_t o = 1; o <= nlayers; o++)
        if (t[o].inner == inner && t[o].slot == o) {
            t[o].off = end;
            end += t[o].size;
        }
    for (uint32_t v = 1; v <= nlayers; v++)
        if (t[v].inner == inner) t[v].off = t[t[v].slot].off;
    return end;
}

/* The CALIB section of c, when the options let the model run on integers:
 * *found 0 when there is none (or precision is FP32). At most one. */
static dcz_status find_calib(const dcz_container *c, const dcz_options *o, calib_walk *cw,
                             int *found)
{
    *found = 0;
    if (o->precision == DCZ_PRECISION_FP32) return DCZ_OK; /* the table is skipped */
    for (uint32_t i = 0; i < c->nsections; i++) {
        dcz_section s;
        dcz_container_section(c, i, &s);
        if (s.type != DCZ_SEC_CALIB) continue;
        if (*found) return DCZ_ERR_FORMAT;
        dcz_calib_head h;
        TRY(dcz_calib_begin(c->base + s.offset, (size_t)s.size, &cw->cur, &h));
        cw->scheme = h.scheme;
        cw->count = h.count;
        cw->read = 0;
        *found = 1;
    }
    return DCZ_OK;
}

/* One walk over the graph: sizes everything while ld->a.base is NULL, fills
 * the model when it is set. Shapes follow the graph from the input shape
 * (dcz_op_shape on each layer's inputs); ld->max_width, ld->act_width and
 * ld->quant tell the caller how large the activations must be and whether
 * accumulators are needed. While sizing, the tensors are kept in
 * ld->tscratch (graph_tensors of them). */
static dcz_status load_walk(const dcz_container *c, const dcz_options *o, loader *ld,
                            dcz_model **out)
{
    dcz_graph_walk w;
    TRY(dcz_graph_begin(c, &w));
    const uint32_t nlayers = w.nlayers;
    const uint64_t in_size = dcz_shape_count(&w.input);
    ld->reference = o->force_reference != 0;
    ld->stream = o->stream_weights != 0;

    calib_walk cw;
    int quant;
    TRY(find_calib(c, o, &cw, &quant));
    dcz_preprocess prep;
    int has_prep;
    TRY(dcz_prep_find(c, &w.input, &prep, &has_prep));

    arena *a = &ld->a;
    dcz_model *m = arena_take(a, sizeof *m);
    dcz_exec_layer *layers = arena_take(a, (uint64_t)nlayers * sizeof *layers);
    dcz_tensor *tensors = arena_take(a, ((uint64_t)nlayers + 1) * sizeof *tensors);
    if (!tensors) tensors = ld->tscratch;
    memset(tensors, 0, ((size_t)nlayers + 1) * sizeof *tensors);
    tensors[0].shape = w.input;
    tensors[0].width = (uint32_t)in_size;
    uint64_t max_width = in_size, scratch_floats = 0;
    if (m) {
        memset(m, 0, sizeof *m);
        memset(layers, 0, (size_t)nlayers * sizeof *layers);
        m->in_rank = w.input.rank;
        memcpy(m->in_dims, w.input.dims, sizeof m->in_dims);
        m->has_prep = has_prep;
        m->prep = prep;
        m->nlayers = nlayers;
        m->layers = layers;
        m->tensors = tensors;
    }
    uint64_t work = 0;
    uint32_t qfirst = UINT32_MAX, qin = 0;   /* a calibrated model's first weighted layer, its input */
    uint32_t pw_in = 0, pw_out = 0;          /* a pointwise convolution's input, and its output or its activation's (0: none) */
    for (uint32_t i = 0; i < nlayers; i++) {
        dcz_graph_layer g;
        TRY(dcz_graph_next(&w, &g));
        dcz_exec_layer tmp, *l = layers ? &layers[i] : &tmp;
        memset(l, 0, sizeof *l);
        memcpy(l->name, g.name, sizeof l->name);
        TRY(dcz_load_layer(c, &g, i, tensors, ld, quant ? &cw : NULL, l));
        const uint64_t lw = dcz_op_work(g.op, g.attr, g.nin, &l->out_shape);
        work = lw > UINT64_MAX - work ? UINT64_MAX : work + lw;
        if (work > o->max_work) return DCZ_ERR_LIMIT;
        for (uint32_t k = 0; k < g.nin; k++) tensors[g.in[k]].last = i;
        tensors[i + 1].shape = l->out_shape;
        tensors[i + 1].width = l->out;
        tensors[i + 1].share = dcz_op_get(g.op)->in_place ? g.in[0] : 0;
        tensors[i + 1].from = i;
        /* the layers but the fully connected ones work sample by sample
         * (plan_segments); but in a calibrated model, the first weighted
         * layer quantizes the integer region's input once for the whole
         * batch (run.c), and it and every later reader of that input take
         * the whole batch */
        if (quant && dcz_op_get(g.op)->weighted && qfirst == UINT32_MAX) {
            qfirst = i;
            qin = g.in[0];
        }
        int reads_qin = 0;
        for (uint32_t k = 0; k < g.nin; k++) reads_qin |= qfirst != UINT32_MAX && g.in[k] == qin;
        tensors[i + 1].chunk = g.op != DCZ_OP_DENSE && !reads_qin && !batch_weights(l);
        if (l->out > max_width) max_width = l->out;
        /* the scratch of the kernel the plan chose: patches (the float and
         * integer products of im2col), the shift form's, Winograd's, an
         * integer convolution's patches and channel copies (the product on
         * expanded weights), or its copies (depthwise) */
        const dcz_kernel k = (dcz_kernel)l->kernel;
        if (!DCZ_REF_ONLY && dcz_kernel_patches(k) && dcz_conv2d_im2col_floats(&l->geom) > scratch_floats)
            scratch_floats = dcz_conv2d_im2col_floats(&l->geom);
        const uint64_t shift_floats = DCZ_REF_ONLY || !dcz_kernel_shifts(k) ? 0 : quant ? dcz_qshift_scratch_floats(&l->geom)
                                                                       : dcz_shift_scratch_floats(&l->geom);
        if (shift_floats > scratch_floats) scratch_floats = shift_floats;
        /* a depthwise layer that may run with the pointwise one before it
         * by bands (pair_bands pairs them): its ring, and the pointwise
         * layer's input kept until it, which the pair reads as it writes
         * the depthwise layer's output. The same in both passes: the
         * geometry, the graph and the kernels as planned (the sizing pass
         * builds no shift form, whose build names its depthwise kernel) */
        if (!DCZ_REF_ONLY && !quant) {
            const uint64_t ring = g.op == DCZ_OP_CONV2D && dcz_kernel_shifts(k) && pw_out && g.nin == 1 &&
                                          g.in[0] == pw_out
                                      ? dcz_conv2d_bands_floats(&l->geom) : 0;
            if (ring > scratch_floats) scratch_floats = ring;
            if (ring && tensors[pw_in].last < i) tensors[pw_in].last = i;
            if (bands_first(g.op, k, &l->geom)) {
                pw_in = g.in[0];
                pw_out = i + 1;
            } else {
                pw_out = float_act_fuses(g.op, 1) && pw_out && g.in[0] == pw_out ? i + 1 : 0;
            }
        }
        if (!DCZ_REF_ONLY && k == DCZ_K_CONV_WINO) {
            dcz_wino p;
            dcz_wino_init_geom(&p, &l->geom);
            if (p.scratch > scratch_floats) scratch_floats = p.scratch;
        }
        if (quant && l->op == DCZ_OP_CONV2D && !dcz_kernel_shifts(k)) {
            const uint64_t q = !DCZ_REF_ONLY && k == DCZ_K_QCONV_GEMM ? dcz_qconv2d_gemm_scratch_floats(&l->geom)
                             : !DCZ_REF_ONLY && k == DCZ_K_QCONV_F32 ? dcz_qconv2d_f32_scratch_floats(&l->geom)
                                                     : (dcz_qconv2d_copy_bytes(&l->geom) + sizeof(float) - 1) / sizeof(float);
            if (q > scratch_floats) scratch_floats = q;
        }
        /* the float spmm's tile; a calibrated model runs these on integers
         * (kept for the references too: an arena planned for them takes the
         * model on these kernels; a build of the references alone has none) */
        if (!DCZ_REF_ONLY && !quant && l->sparse && dcz_plan_fc_layer(l->op, &l->geom) &&
            dcz_spmm_scratch_floats(l->out, l->in) > scratch_floats)
            scratch_floats = dcz_spmm_scratch_floats(l->out, l->in);
        /* the integer tile of the 8-bit schemes */
        if (!DCZ_REF_ONLY && quant && dcz_scheme_qmax(cw.scheme) == 127 && dcz_plan_fc_layer(l->op, &l->geom) &&
            dcz_qspmm8_scratch_floats(l->in) > scratch_floats)
            scratch_floats = dcz_qspmm8_scratch_floats(l->in);
    }
    TRY(dcz_graph_end(&w));
    tensors[nlayers].last = nlayers;   /* the model output outlives every layer */
    const uint32_t chunk_max = plan_segments(tensors, nlayers);
    if (!quant) TRY(place_concats(c, tensors, nlayers, layers));
    const uint64_t act_width = plan_places(tensors, nlayers, 0);
    const uint64_t chunk_width = plan_places(tensors, nlayers, 1);
    /* batch 1 on a lane form: the input's panels (run.c) */
    if (ld->lane_floats > scratch_floats) scratch_floats = ld->lane_floats;
    /* the stream form's readers (the counts of a keep mask) */
    if (ld->stream_floats > scratch_floats) scratch_floats = ld->stream_floats;
    /* after the entries, the scales of the tensors (absent in format 1.2) */
    uint32_t ntscales = 0;
    const uint8_t *tscales = NULL;
    if (quant && cw.read != cw.count) return DCZ_ERR_FORMAT;
    if (quant) TRY(dcz_calib_tensors(&cw.cur, cw.scheme, &ntscales, &tscales));
    float *t_scale = quant ? arena_take(a, ((uint64_t)nlayers + 1) * sizeof(float)) : NULL;
    /* whole cache lines: a tile column of the batch product is two of them
     * (at 16 bytes off, three: 1.2x the time of a layer, measured) */
    float *conv_scratch = dcz_arena_take_line(a, scratch_floats * ld->cblocks * sizeof(float));
    ld->max_width = max_width;
    ld->act_width = act_width;
    ld->chunk_width = chunk_width;
    ld->chunk_max = chunk_max;
    ld->quant = quant;
    if (m) {
        m->scratch = conv_scratch;
        m->scratch_floats = scratch_floats;
        m->threads = ld->cblocks;
        m->in_size = (uint32_t)in_size;
        m->out_size = tensors[nlayers].width;
        m->max_width = (uint32_t)max_width;
        m->act_width = act_width;
        m->chunk_width = chunk_width;
        m->chunk_max = chunk_max;
        if (quant) {
            m->scheme = (dcz_scheme)cw.scheme;
            m->qmax = dcz_scheme_qmax(cw.scheme);
            m->t_scale = t_scale;
            TRY(dcz_qload_finish(m, tscales, ntscales));
        }
        fuse_activations(m);
        if (!ld->ran) pair_bands(m);
        TRY(dcz_plan_finish(m));
        if (!ld->ran) pair_constants(m);
        if (!ld->ran) pair_table_planes(m);
        *out = m;
    }
    return DCZ_OK;
}

/* Where everything of a model lies, as offsets from its (aligned) block:
 * the walk's bytes from 0, then the decoding scratch, and for a static
 * model the run-time buffers, which overlay the scratch. */
typedef struct layout {
    size_t walk;                /* bytes the walk takes */
    size_t gaps, idx, dense;    /* decoding scratch */
    int forms_only;             /* loader.forms_only */
    size_t load;                /* walk and decoding scratch */
    size_t act, cact, qacc;     /* static: activation and chunk blocks, accumulators */
    size_t cact_batch;          /* static: samples the chunk block holds */
    size_t total;               /* the block */
    scratch sc;                 /* scratch capacities */
    uint64_t max_width, act_width;
    int quant;
    uint32_t threads;           /* column-form blocks and scratch parts */
    int forms;                  /* DCZ_FORM_ bits: extra forms built */
} layout;

/* Takes bytes from a sizing arena and returns their offset. */
static size_t take_at(arena *a, uint64_t bytes)
{
    (void)arena_take(a, bytes);
    return a->overflow ? 0 : a->used - (size_t)bytes;
}

/* Options checked and defaulted into *o. */
static dcz_status check_options(const dcz_options *opt, dcz_options *o)
{
    if (opt) *o = *opt; else dcz_options_init(o);
    /* a cap is of the CPU's kernels, and a plan measured runs on the CPU */
    if ((unsigned)o->isa >= DCZ_CAP_COUNT || (o->isa && o->device == DCZ_DEVICE_GPU)) return DCZ_ERR_ARG;
    if ((unsigned)o->plan > DCZ_PLAN_MEASURE || (o->plan && o->device == DCZ_DEVICE_GPU)) return DCZ_ERR_ARG;
    if (o->stream_weights && o->device == DCZ_DEVICE_GPU) return DCZ_ERR_ARG;   /* static CPU models only */
    if (o->device != DCZ_DEVICE_AUTO && o->device != DCZ_DEVICE_CPU && o->device != DCZ_DEVICE_GPU)
        return DCZ_ERR_ARG;
#ifndef DCZ_CUDA
    if (o->device == DCZ_DEVICE_GPU) return DCZ_ERR_DEVICE; /* no GPU backend in this build */
#endif
    if (o->max_batch == 0) o->max_batch = 1;
    if (o->max_work == 0) o->max_work = DCZ_DEFAULT_MAX_WORK;
    if (DCZ_REF_ONLY) o->force_reference = 1;   /* the references are all there is (cpu/isa.h) */
    return DCZ_OK;
}

/* Bytes of the tensors the sizing pass keeps aside (load_walk's
 * ld->tscratch). */
static dcz_status graph_tensor_bytes(const dcz_container *c, size_t *bytes)
{
    dcz_graph_walk w;
    TRY(dcz_graph_begin(c, &w));
    *bytes = ((size_t)w.nlayers + 1) * sizeof(dcz_tensor);
    return DCZ_OK;
}

/* The sizing pass and the layout it gives, keeping the tensors in tscratch
 * (graph_tensor_bytes). max_batch 0: no run-time buffers (the heap model
 * grows its own). DCZ_ERR_NOMEM when the sizes do not fit a size_t. */
static dcz_status plan_layout(const dcz_container *c, const dcz_options *o, int in_place, int forms_only,
                              size_t max_batch, uint32_t threads, int forms, const uint8_t *choice,
                              dcz_tensor *tscratch, layout *L)
{
    loader ld;
    memset(&ld, 0, sizeof ld);
    ld.choice = choice;
    ld.tscratch = tscratch;
    ld.in_place = in_place;
    ld.forms_only = forms_only;
    ld.cblocks = threads;
    ld.forms = forms;
    TRY(load_walk(c, o, &ld, NULL));
    memset(L, 0, sizeof *L);
    L->walk = ld.a.used;
    L->sc = ld.sc;
    L->max_width = ld.max_width;
    L->act_width = ld.act_width;
    L->quant = ld.quant;
    L->threads = threads;
    L->forms = forms;
    L->forms_only = forms_only;

    arena s = { NULL, L->walk, 0 };
    L->gaps = take_at(&s, ld.sc.gaps_cap);
    L->idx = take_at(&s, ld.sc.idx_cap);
    L->dense = take_at(&s, ld.sc.dense_cap);
    L->load = s.used;

    arena r = { NULL, L->walk, 0 };
    if (max_batch) {
        /* the activation block of (max_batch, act_width) floats; on
         * integers the accumulators, then the quantized model input (run.c) */
        const uint64_t w = ld.max_width, aw = ld.act_width;
        if ((w && max_batch > UINT64_MAX / 16 / w) || (aw && max_batch > UINT64_MAX / 16 / aw) ||
            (ld.chunk_width && max_batch > UINT64_MAX / 16 / ld.chunk_width))
            return DCZ_ERR_NOMEM;
        const uint64_t cells = (uint64_t)max_batch * w;
        L->act = take_at(&r, (uint64_t)max_batch * aw * sizeof(float));
        L->cact_batch = ld.chunk_width ? (max_batch < ld.chunk_max ? max_batch : ld.chunk_max) : 0;
        L->cact = take_at(&r, (uint64_t)L->cact_batch * ld.chunk_width * sizeof(float));
        if (ld.quant) L->qacc = take_at(&r, cells * (sizeof(int64_t) + sizeof(dcz_q)));
    }
    if (ld.a.overflow || s.overflow || r.overflow) return DCZ_ERR_NOMEM;
    L->total = L->load > r.used ? L->load : r.used;
    return DCZ_OK;
}

/* The filling pass into block (L->total bytes at a DCZ_ARENA_ALIGN
 * boundary): the model, with its decoding scratch placed by L. */
static dcz_status fill(const dcz_container *c, const dcz_options *o, int in_place, const layout *L,
                       const uint8_t *choice, dcz_measured *ran, uint8_t *block, dcz_model **out)
{
    loader ld;
    memset(&ld, 0, sizeof ld);
    ld.choice = choice;
    ld.ran = ran;
    ld.in_place = in_place;
    ld.forms_only = L->forms_only;
    ld.cblocks = L->threads;
    ld.forms = L->forms;
    ld.sc = L->sc;
    ld.sc.gaps = block + L->gaps;
    ld.sc.idx = block + L->idx;
    ld.sc.dense = block + L->dense;
    ld.a.base = block;
    dcz_model *m = NULL;
    TRY(load_walk(c, o, &ld, &m));
    /* sparse tensors take their bound while sizing, their entries here */
    if (ld.a.used > L->walk) return DCZ_ERR_INTERNAL;
    m->opt = *o;
    m->cpu = *dcz_cpu_features();   /* the view the load took (with_view) */
    *out = m;
    return DCZ_OK;
}

/* The extra forms models get: each where this CPU runs its kernel, none
 * when only the references are to run. */
static int want_forms(const dcz_options *o)
{
    if (DCZ_REF_ONLY || o->force_reference) return 0;
    const uint32_t lr = dcz_lanes_rows();
    const int lanes = lr == DCZ_LANE_ROWS ? DCZ_FORM_LANES : lr == DCZ_LANE8_ROWS ? DCZ_FORM_LANES8 : 0;
    return lanes | (dcz_gemm_f32_variant() ? DCZ_FORM_DENSE : 0) |
           (dcz_conv2d_shift_variant() ? DCZ_FORM_SHIFT : 0) |
           (dcz_wino_vector() && dcz_gemm_f32_variant() ? DCZ_FORM_WINO : 0) |
           (dcz_qshift_variant() ? DCZ_FORM_QSHIFT : 0) | (dcz_qlanes_runs() ? DCZ_FORM_QLANES : 0) |
           (dcz_qgemm_variant() ? DCZ_FORM_QDENSE : 0) |
           (dcz_qshift_variant() && dcz_cpu_features()->amx && dcz_amx_ready() ? DCZ_FORM_AMX : 0);
}

#if DCZ_HEAP /* the heap loaders: without it (HEAP=0), the arena API alone */
/* The CPU's alone: asked for, or under AUTO the reference kernels, capped
 * ones and a measured plan. */
static int cpu_only(const dcz_options *o)
{
    return o->device == DCZ_DEVICE_CPU || (o->device == DCZ_DEVICE_AUTO && (o->force_reference || o->isa || o->plan));
}

/* Whether place may put a heap model of o on a GPU: then its layers keep
 * the dense weights the upload reads (loader.forms_only). */
static int may_take_gpu(const dcz_options *o)
{
    if (cpu_only(o)) return 0;
#ifdef DCZ_CUDA
    return o->device == DCZ_DEVICE_GPU || dcz_gpu_probe(NULL, 0) == DCZ_OK;
#else
    return 0;
#endif
}

/* The threads of a heap model: as asked, or every online processor, at
 * most DCZ_MAX_THREADS. */
static uint32_t heap_threads(const dcz_options *o)
{
    if (o->threads <= 0) return dcz_threads_online();
    return o->threads > DCZ_MAX_THREADS ? DCZ_MAX_THREADS : (uint32_t)o->threads;
}

/* plan_layout with the tensors of the sizing pass on the heap. */
static dcz_status plan_heap(const dcz_container *c, const dcz_options *o, int in_place, int forms_only,
                            size_t max_batch, uint32_t threads, const uint8_t *choice, layout *L)
{
    size_t tbytes;
    TRY(graph_tensor_bytes(c, &tbytes));
    dcz_tensor *t = malloc(tbytes);
    if (!t) return DCZ_ERR_NOMEM;
    dcz_status s = plan_layout(c, o, in_place, forms_only, max_batch, threads, want_forms(o), choice, t, L);
    free(t);
    return s;
}

/* Whether some layer is split over the threads (run.c), so the model needs
 * its workers. */
static int worth_threads(const dcz_model *m)
{
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const dcz_exec_layer *l = &m->layers[i];
        if (!l->q && l->op == DCZ_OP_DENSE && l->sparse &&
            dcz_sparse_split(&l->sp))
            return 1;
        /* a large convolution on the shift form splits its channel blocks
         * (a depthwise one on its kernels, its channels) */
        if (!l->q && dcz_kernel_shifts(l->kernel) && dcz_conv2d_shift_splits(&l->geom, &l->shift)) return 1;
        /* an integer one on the integer shift form, its chunks of channels */
        if (l->q && dcz_kernel_shifts(l->kernel) && dcz_qconv2d_shift_requant_splits(&l->geom, &l->qshift)) return 1;
        /* a segment by chunks of samples, whose chunks of a batch run at
         * once over the threads (run.c, run_batch) */
        if (m->tensors[i + 1].chunk) return 1;
    }
    return 0;
}

#endif

dcz_status dcz_device_probe(dcz_device device, char *why, size_t why_len)
{
    if (why && why_len) why[0] = '\0';
    if (device == DCZ_DEVICE_CPU) return DCZ_OK;
    if (device != DCZ_DEVICE_GPU && device != DCZ_DEVICE_AUTO) return DCZ_ERR_ARG;
#ifdef DCZ_CUDA
    return dcz_gpu_probe(why, why_len);
#else
    static const char no_cuda[] = "this build of libdcz has no CUDA backend (built without nvcc)";
    if (why && why_len) {
        const size_t n = why_len - 1 < sizeof no_cuda - 1 ? why_len - 1 : sizeof no_cuda - 1;
        memcpy(why, no_cuda, n);
        why[n] = '\0';
    }
    return DCZ_ERR_DEVICE;
#endif
}

#if DCZ_HEAP
/* A heap model onto the device its options ask for: a GPU when asked for
 * (its errors), or when AUTO finds one and the backend runs the model;
 * else the CPU, m->device_note saying why when a GPU was looked for. */
static dcz_status place(dcz_model *m, const dcz_options *o)
{
#ifdef DCZ_CUDA
    if (cpu_only(o)) return DCZ_OK;
    char why[160];
    dcz_status s = dcz_gpu_probe(why, sizeof why);
    if (s == DCZ_OK) {
        s = dcz_gpu_open(m);
        if (s == DCZ_ERR_UNSUPPORTED)
            snprintf(why, sizeof why, "the CUDA backend runs calibrated models of the 8-bit schemes (int8, fixed8); "
                                      "this one is 16-bit fixed point, whose sums need 64 bits");
        else if (s != DCZ_OK)
            snprintf(why, sizeof why, "the upload to the GPU failed: %s", dcz_status_str(s));
    }
    if (s == DCZ_OK || o->device == DCZ_DEVICE_GPU) return s;
    snprintf(m->device_note, sizeof m->device_note, "running on the CPU: %s", why);
#else
    (void)m;
    (void)o;
#endif
    return DCZ_OK;
}

/* A heap model of c by o, each layer taking the candidate choice names
 * (NULL: the rules'), with its candidates in ran (NULL: not kept). */
static dcz_status open_heap(const dcz_container *c, const dcz_options *o, const uint8_t *choice,
                            dcz_measured *ran, dcz_model **out)
{
    layout L;
    TRY(plan_heap(c, o, 0, !may_take_gpu(o), 0, heap_threads(o), choice, &L));
    uint8_t *block = dcz_walked_alloc(L.load);
    if (!block) return DCZ_ERR_NOMEM;
    dcz_model *m = NULL;
    dcz_status s = fill(c, o, 0, &L, choice, ran, block, &m);
    if (s != DCZ_OK) {
        free(block);
        return s;
    }
    m->block = block; /* m itself lives inside block */
    if (m->threads > 1 && worth_threads(m)) s = dcz_pool_start(m->threads, &m->pool);
    if (s != DCZ_OK) {
        dcz_close(m);
        return s;
    }
    *out = m;
    return DCZ_OK;
}

/* DCZ_PLAN_MEASURE: the model loaded once per rank of candidate (load r:
 * every layer its candidate r, the rules' where it has fewer) and its
 * layers timed (measure.c); then loaded with each layer's fastest, which
 * *out keeps with the times of all (m->measured). A model whose layers
 * have one candidate each keeps its first load. */
static dcz_status open_measured(const dcz_container *c, const dcz_options *o, dcz_model **out)
{
    dcz_graph_walk w;
    TRY(dcz_graph_begin(c, &w));
    const uint32_t n = w.nlayers;
    uint8_t *choice = calloc(n ? n : 1, 1);
    dcz_measured *ran = calloc(n ? n : 1, sizeof *ran), *timed = calloc(n ? n : 1, sizeof *timed);
    uint64_t *ns = malloc((n ? n : 1) * sizeof *ns);
    dcz_status s = choice && ran && timed && ns ? DCZ_OK : DCZ_ERR_NOMEM;
    dcz_model *m = NULL;
    uint32_t ranks = 1;
    for (uint32_t r = 0; s == DCZ_OK && r < ranks; r++) {
        memset(choice, r, n);
        memset(ran, 0, n * sizeof *ran);
        s = open_heap(c, o, choice, ran, &m);
        if (s == DCZ_OK) s = dcz_measure_layers(m, o->max_batch, ns);
        for (uint32_t i = 0; s == DCZ_OK && i < n; i++) {
            if (ran[i].n > ranks) ranks = ran[i].n;
            if (ran[i].n < 2 || r >= ran[i].n) continue;
            timed[i].n = ran[i].n;
            timed[i].kernel[r] = m->layers[i].kernel;   /* as it ran: a shift form refines it */
            timed[i].ns[r] = ns[i];
        }
        if (s == DCZ_OK && ranks == 1) {   /* nothing to choose: this load is the model */
            pair_bands(m);
            break;
        }
        dcz_close(m);
        m = NULL;
    }
    if (s == DCZ_OK && !m) {
        /* each layer's fastest (the rules' on a tie) */
        for (uint32_t i = 0; i < n; i++) {
            uint8_t best = 0;
            for (uint8_t k = 1; k < timed[i].n; k++)
                if (timed[i].ns[k] < timed[i].ns[best]) best = k;
            timed[i].pick = choice[i] = best;
        }
        s = open_heap(c, o, choice, NULL, &m);
        if (s == DCZ_OK) {
            m->measured = timed;
            timed = NULL;
        }
    }
    free(choice);
    free(ran);
    free(timed);
    free(ns);
    if (s == DCZ_OK) *out = m;
    return s;
}

static dcz_status open_memory_viewed(const void *buf, size_t len, const dcz_options *opt, dcz_model **out)
{
    dcz_container c;
    dcz_options o;
    if (!out) return DCZ_ERR_ARG;
    *out = NULL;
    TRY(check_options(opt, &o));
    /* a heap model keeps nothing of the buffer, which the stream form reads */
    if (o.stream_weights) return DCZ_ERR_ARG;
    TRY(dcz_container_open(buf, len, &c));
    dcz_model *m = NULL;
    TRY(o.plan == DCZ_PLAN_MEASURE && !o.force_reference ? open_measured(&c, &o, &m)
                                                          : open_heap(&c, &o, NULL, NULL, &m));
    const dcz_status s = place(m, &o);
    if (s != DCZ_OK) {
        dcz_close(m);
        return s;
    }
    *out = m;
    return DCZ_OK;
}

static dcz_status plan_viewed(const void *buf, size_t len, const dcz_options *opt, size_t *arena_bytes)
{
    dcz_container c;
    dcz_options o;
    layout L;
    if (!arena_bytes) return DCZ_ERR_ARG;
    *arena_bytes = 0;
    TRY(check_options(opt, &o));
    if (o.device == DCZ_DEVICE_GPU) return DCZ_ERR_DEVICE; /* arena models run on the CPU */
    if (o.plan) return DCZ_ERR_ARG;   /* and by the rules: measuring takes the heap */
    TRY(dcz_container_open(buf, len, &c));
    const int in_place = host_reads_f32_in_place();
    TRY(plan_heap(&c, &o, in_place, 1, o.max_batch, 1, NULL, &L));
    if (L.total > SIZE_MAX - (DCZ_ARENA_ALIGN - 1)) return DCZ_ERR_NOMEM;
    /* what only the filling pass finds (stream contents, integer ranges)
     * is found by filling a temporary block once */
    uint8_t *block = malloc(L.load ? L.load : 1);
    if (!block) return DCZ_ERR_NOMEM;
    dcz_model *m = NULL;
    dcz_status s = fill(&c, &o, in_place, &L, NULL, NULL, block, &m);
    free(block);
    if (s != DCZ_OK) return s;
    *arena_bytes = L.total + (DCZ_ARENA_ALIGN - 1);
    return DCZ_OK;
}

#endif

/* The layout of a static model of c by o inside mem (bytes at any
 * address), the sizing pass keeping its tensors there (it takes more room
 * than they do), and where the model's block starts (*block). An arena
 * planned where the extra forms are built (another CPU) still takes the
 * model, without them, where fallback allows. DCZ_ERR_NOMEM when it does
 * not fit: *L then holds the layout that did not (L->total 0 when not even
 * the tensors fit). */
static dcz_status static_layout(const dcz_container *c, const dcz_options *o, void *mem, size_t bytes,
                                int fallback, layout *L, uint8_t **block)
{
    memset(L, 0, sizeof *L);
    const int in_place = host_reads_f32_in_place();
    const size_t pad = (size_t)(-(uintptr_t)mem & (DCZ_ARENA_ALIGN - 1));
    const size_t room = bytes < pad ? 0 : bytes - pad;
    size_t tbytes;
    TRY(graph_tensor_bytes(c, &tbytes));
    if (room < tbytes) return DCZ_ERR_NOMEM;
    dcz_tensor *tscratch = (dcz_tensor *)(void *)((uint8_t *)mem + pad);
    TRY(plan_layout(c, o, in_place, 1, o->max_batch, 1, want_forms(o), NULL, tscratch, L));
    if (fallback && L->forms && room < L->total)
        TRY(plan_layout(c, o, in_place, 1, o->max_batch, 1, 0, NULL, tscratch, L));
    if (room < L->total) return DCZ_ERR_NOMEM;
    *block = (uint8_t *)mem + pad;
    return DCZ_OK;
}

static dcz_status plan_static_viewed(const void *buf, size_t len, void *work, size_t work_bytes,
                                     const dcz_options *opt, size_t *arena_bytes)
{
    dcz_container c;
    dcz_options o;
    layout L;
    uint8_t *block;
    if (!arena_bytes || !work) return DCZ_ERR_ARG;
    TRY(check_options(opt, &o));
    if (o.device == DCZ_DEVICE_GPU) return DCZ_ERR_DEVICE; /* arena models run on the CPU */
    if (o.plan) return DCZ_ERR_ARG;   /* and by the rules: measuring takes the heap */
    TRY(dcz_container_open(buf, len, &c));
    dcz_status s = static_layout(&c, &o, work, work_bytes, 0, &L, &block);
    if (L.total > SIZE_MAX - (DCZ_ARENA_ALIGN - 1)) return DCZ_ERR_NOMEM;
    if (L.total) *arena_bytes = L.total + (DCZ_ARENA_ALIGN - 1);
    if (s != DCZ_OK) return s;
    /* what only the filling pass finds (stream contents, integer ranges),
     * as dcz_plan finds it */
    dcz_model *m = NULL;
    s = fill(&c, &o, host_reads_f32_in_place(), &L, NULL, NULL, block, &m);
    if (s != DCZ_OK) *arena_bytes = 0;
    return s;
}

static dcz_status open_static_viewed(const void *buf, size_t len, void *arena_mem, size_t arena_bytes,
                                     const dcz_options *opt, dcz_model **out)
{
    dcz_container c;
    dcz_options o;
    layout L;
    uint8_t *block;
    if (!out) return DCZ_ERR_ARG;
    *out = NULL;
    if (!arena_mem) return DCZ_ERR_ARG;
    TRY(check_options(opt, &o));
    if (o.device == DCZ_DEVICE_GPU) return DCZ_ERR_DEVICE; /* arena models run on the CPU */
    if (o.plan) return DCZ_ERR_ARG;   /* and by the rules: measuring takes the heap */
    TRY(dcz_container_open(buf, len, &c));
    TRY(static_layout(&c, &o, arena_mem, arena_bytes, 1, &L, &block));
    dcz_model *m = NULL;
    TRY(fill(&c, &o, host_reads_f32_in_place(), &L, NULL, NULL, block, &m));
    m->fixed = 1;
    m->act = (float *)(void *)(block + L.act);
    m->cact = (float *)(void *)(block + L.cact);
    m->cact_batch = L.cact_batch;
    m->qacc = L.quant ? (int64_t *)(void *)(block + L.qacc) : NULL;
    m->act_batch = o.max_batch;
    *out = m;
    return DCZ_OK;
}

/* The public loaders run under the view of the CPU their options cap
 * (cpu/isa.h): the plan chooses among the kernels the model may run, and
 * the model keeps that view for its runs (fill). */
static dcz_status enter_view(const dcz_options *opt, dcz_cpu *cpu, const dcz_cpu **was)
{
    TRY(dcz_cpu_capped(opt ? opt->isa : DCZ_CAP_NATIVE, cpu, NULL, 0));
    *was = dcz_cpu_enter(cpu);
    return DCZ_OK;
}

#if DCZ_HEAP
dcz_status dcz_open_memory(const void *buf, size_t len, const dcz_options *opt, dcz_model **out)
{
    dcz_cpu cpu;
    const dcz_cpu *was;
    if (out) *out = NULL;
    TRY(enter_view(opt, &cpu, &was));
    const dcz_status s = open_memory_viewed(buf, len, opt, out);
    dcz_cpu_leave(was);
    return s;
}

dcz_status dcz_plan(const void *buf, size_t len, const dcz_options *opt, size_t *arena_bytes)
{
    dcz_cpu cpu;
    const dcz_cpu *was;
    if (arena_bytes) *arena_bytes = 0;
    TRY(enter_view(opt, &cpu, &was));
    const dcz_status s = plan_viewed(buf, len, opt, arena_bytes);
    dcz_cpu_leave(was);
    return s;
}

#endif

dcz_status dcz_plan_static(const void *buf, size_t len, void *work, size_t work_bytes,
                           const dcz_options *opt, size_t *arena_bytes)
{
    dcz_cpu cpu;
    const dcz_cpu *was;
    if (arena_bytes) *arena_bytes = 0;
    TRY(enter_view(opt, &cpu, &was));
    const dcz_status s = plan_static_viewed(buf, len, work, work_bytes, opt, arena_bytes);
    dcz_cpu_leave(was);
    return s;
}

dcz_status dcz_open_static(const void *buf, size_t len, void *arena_mem, size_t arena_bytes,
                           const dcz_options *opt, dcz_model **out)
{
    dcz_cpu cpu;
    const dcz_cpu *was;
    if (out) *out = NULL;
    TRY(enter_view(opt, &cpu, &was));
    const dcz_status s = open_static_viewed(buf, len, arena_mem, arena_bytes, opt, out);
    dcz_cpu_leave(was);
    return s;
}

void dcz_close(dcz_model *m)
{
    if (!m || m->fixed) return; /* a static model lives in its caller's arena */
#ifdef DCZ_CUDA
    dcz_gpu_close(m);
#endif
#if DCZ_HEAP
    dcz_pool_stop(m->pool);
    free(m->act);
    free(m->cact);
    free(m->qacc);
    free(m->measured);
    free(m->block); /* m itself lives inside block */
#endif
}

size_t dcz_input_size(const dcz_model *m) { return m ? m->in_size : 0; }
size_t dcz_output_size(const dcz_model *m) { return m ? m->out_size : 0; }

int dcz_input_shape(const dcz_model *m, uint32_t *dims, int max_rank)
{
    if (!m) return 0;
    for (int i = 0; i < (int)m->in_rank && i < max_rank; i++) dims[i] = m->in_dims[i];
    return (int)m->in_rank;
}

dcz_scheme dcz_model_scheme(const dcz_model *m) { return m ? m->scheme : DCZ_SCHEME_NONE; }

int dcz_model_preprocess(const dcz_model *m, dcz_preprocess *out)
{
    if (!m || !m->has_prep || !out) return 0;
    *out = m->prep;
    return 1;
}

dcz_device dcz_model_device(const dcz_model *m) { return m && m->gpu ? DCZ_DEVICE_GPU : DCZ_DEVICE_CPU; }

const char *dcz_model_device_note(const dcz_model *m) { return m ? m->device_note : ""; }
