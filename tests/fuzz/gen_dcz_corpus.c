/* gen_dcz_corpus.c: writes the seed corpus of fuzz_dcz into the directory
 * given as argument: small valid files using every encoding and coding, and
 * small convolutional networks using every conv-related op (both sparse conv
 * kernels of the runtime, the dense one, every pool, strides, padding), and
 * calibrated ones (int8, fixed8, fixed16: a CALIB section, I8 and I16
 * weights), and a graph (a residual ADD, a per-channel MUL, a CONCAT, a
 * tensor read far below), and a net of wide and depthwise convolutions
 * (and its int8 twin), and ShuffleNet's channel shuffles and slices (and
 * their int8 twin), and a file with a PREPROCESS section, and files with
 * arithmetic-coded streams, an f16 codebook and 8-bit biases (format
 * 2.2), so the fuzzer starts from inputs that reach deep into the readers
 * and every form the loader builds. The seeds named v1-*
 * are files of format 1.2, written by the release before graphs (this
 * program writes the current format).
 *   cc -Iinclude -I. tests/fuzz/gen_dcz_corpus.c lib/libdcztool.a lib/libdcz.a -lm
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "calibrate/calibrate.h"
#include "model/doc.h"
#include "tests/unit/doc_build.h"

/* deterministic weights for a layer with parameters */
static void fill(dcz_doc_layer *l, unsigned seed)
{
    dcz_doc_tensor *w = &l->t[0];
    for (uint32_t i = 0; i < w->k; i++) w->codebook[i] = (float)i * 0.25f - 0.5f;
    for (size_t i = 0; i < w->n; i++) {
        unsigned h = (unsigned)(i * 2654435761u + seed);
        if (w->mask && (h >> 28) > 5) continue;
        if (w->mask) w->mask[i] = 1;
        if (w->assign) { w->assign[i] = (uint8_t)(h % w->k); w->values[i] = w->codebook[w->assign[i]]; }
        else w->values[i] = (float)(h % 100) / 50.0f - 1.0f;
    }
}

static void dense(dcz_doc_layer *l, const char *name, uint32_t in, uint32_t out, uint32_t enc,
                  unsigned gap_bits, unsigned index_bits, uint8_t coding, unsigned seed)
{
    doc_dense_layer(l, name, in, out, enc, gap_bits, index_bits, coding);
    fill(l, seed);
}

static void conv(dcz_doc_layer *l, const char *name, uint32_t in_c, uint32_t out_c, uint32_t k,
                 uint32_t stride, uint32_t pad, uint32_t enc, unsigned gap_bits, unsigned index_bits,
                 uint8_t coding, unsigned seed)
{
    doc_conv_layer(l, name, in_c, out_c, k, stride, pad, enc, gap_bits, index_bits, coding);
    fill(l, seed);
    for (size_t i = 0; i < l->t[1].n; i++) l->t[1].values[i] = (float)(i % 5) * 0.1f - 0.2f;
}

/* (2, 9, 10) -> conv 3x3 pad 1 (codebook, Huffman; direct kernel) -> relu
 * -> maxpool 2 -> conv 3x3 pad 1 (sparse f32; im2col kernel) -> avgpool 3
 * pad 1 -> conv 1x1 (dense f16) -> gap -> flatten -> dense -> softmax */
static dcz_doc *conv_net_a(void)
{
    dcz_doc *d;
    if (dcz_doc_alloc(10, &d) != DCZ_OK) return NULL;
    d->input_rank = 3;
    d->input_dims[0] = 2; d->input_dims[1] = 9; d->input_dims[2] = 10;
    dcz_doc_layer *l = d->layers;
    conv(&l[0], "conv1", 2, 3, 3, 1, 1, DCZ_ENC_CODEBOOK, 3, 4, DCZ_CODING_HUFFMAN, 5);
    doc_plain_layer(&l[1], DCZ_OP_RELU, "relu1");
    doc_pool_layer(&l[2], DCZ_OP_MAXPOOL, "pool1", 2, 2, 0, 0);
    conv(&l[3], "conv2", 3, 4, 3, 1, 1, DCZ_ENC_SPARSE_F32, 2, 0, DCZ_CODING_RAW, 6);
    doc_pool_layer(&l[4], DCZ_OP_AVGPOOL, "pool2", 3, 1, 1, 0);
    conv(&l[5], "conv3", 4, 3, 1, 1, 0, DCZ_ENC_F16, 0, 0, 0, 7);
    doc_plain_layer(&l[6], DCZ_OP_GLOBAL_AVGPOOL, "gap");
    doc_plain_layer(&l[7], DCZ_OP_FLATTEN, "flat");
    dense(&l[8], "fc", 3, 2, DCZ_ENC_F32, 0, 0, 0, 8);
    doc_plain_layer(&l[9], DCZ_OP_SOFTMAX, "prob");
    dcz_doc_add_stage(d, "stage = corpus\n");
    return d;
}

/* (1, 12, 12) -> conv 5x5 stride 2 pad 2 (codebook raw, every position) ->
 * avgpool 2 stride 2 pad 1 counting the padding -> conv 3x3 (dense f32) ->
 * dense on (C, H, W) (codebook, Huffman) */
static dcz_doc *conv_net_b(void)
{
    dcz_doc *d;
    if (dcz_doc_alloc(4, &d) != DCZ_OK) return NULL;
    d->input_rank = 3;
    d->input_dims[0] = 1; d->input_dims[1] = 12; d->input_dims[2] = 12;
    dcz_doc_layer *l = d->layers;
    conv(&l[0], "conv1", 1, 2, 5, 2, 2, DCZ_ENC_CODEBOOK, 0, 3, DCZ_CODING_RAW, 9);
    doc_pool_layer(&l[1], DCZ_OP_AVGPOOL, "pool1", 2, 2, 1, 1);
    conv(&l[2], "conv2", 2, 2, 3, 1, 0, DCZ_ENC_F32, 0, 0, 0, 10);
    dense(&l[3], "fc", 2 * 2 * 2, 3, DCZ_ENC_CODEBOOK, 3, 2, DCZ_CODING_HUFFMAN, 11);
    return d;
}

/* (2, 6, 6): conv a 3x3 (codebook, Huffman) -> relu -> conv b 3x3 (sparse
 * f32) ADDed to a 1x1 projection of the input (dense f32); gap -> dense ->
 * MUL of the sum per channel; CONCAT with conv a's output; maxpool ->
 * flatten -> dense (codebook) -> softmax */
static dcz_doc *dag_net(void)
{
    dcz_doc *d;
    if (dcz_doc_alloc(13, &d) != DCZ_OK) return NULL;
    d->input_rank = 3;
    d->input_dims[0] = 2; d->input_dims[1] = 6; d->input_dims[2] = 6;
    dcz_doc_layer *l = d->layers;
    conv(&l[0], "conva", 2, 4, 3, 1, 1, DCZ_ENC_CODEBOOK, 3, 3, DCZ_CODING_HUFFMAN, 21);
    doc_plain_layer(&l[1], DCZ_OP_RELU, "relu");
    conv(&l[2], "convb", 4, 4, 3, 1, 1, DCZ_ENC_SPARSE_F32, 4, 0, DCZ_CODING_RAW, 22);
    conv(&l[3], "proj", 2, 4, 1, 1, 0, DCZ_ENC_F32, 0, 0, 0, 23);
    l[3].in[0] = 0;
    doc_plain_layer(&l[4], DCZ_OP_ADD, "add");
    l[4].nin = 2; l[4].in[0] = 3; l[4].in[1] = 4;
    doc_plain_layer(&l[5], DCZ_OP_GLOBAL_AVGPOOL, "squeeze");
    dense(&l[6], "excite", 4, 4, DCZ_ENC_F32, 0, 0, 0, 24);
    doc_plain_layer(&l[7], DCZ_OP_MUL, "scale");
    l[7].nin = 2; l[7].in[0] = 5; l[7].in[1] = 7;
    doc_plain_layer(&l[8], DCZ_OP_CONCAT, "cat");
    l[8].nin = 2; l[8].in[0] = 8; l[8].in[1] = 1;
    doc_pool_layer(&l[9], DCZ_OP_MAXPOOL, "pool", 2, 2, 0, 0);
    doc_plain_layer(&l[10], DCZ_OP_FLATTEN, "flatten");
    dense(&l[11], "fc", 72, 5, DCZ_ENC_CODEBOOK, 5, 4, DCZ_CODING_RAW, 25);
    doc_plain_layer(&l[12], DCZ_OP_SOFTMAX, "prob");
    dcz_doc_add_stage(d, "stage = corpus\n");
    return d;
}

/* (4, 4, 4): conv 1x1 to 8 (codebook, Huffman) -> relu -> CHANNEL_SHUFFLE
 * of 2 -> SLICE 0..2 and SLICE 3..7 -> conv 3x3 of the second (sparse f32)
 * -> CONCAT -> CHANNEL_SHUFFLE of 4 -> SLICE 2..7 -> gap -> flatten ->
 * dense -> softmax: ShuffleNet's moves */
static dcz_doc *shuffle_net(void)
{
    dcz_doc *d;
    if (dcz_doc_alloc(13, &d) != DCZ_OK) return NULL;
    d->input_rank = 3;
    d->input_dims[0] = 4; d->input_dims[1] = 4; d->input_dims[2] = 4;
    dcz_doc_layer *l = d->layers;
    conv(&l[0], "conv1", 4, 8, 1, 1, 0, DCZ_ENC_CODEBOOK, 3, 3, DCZ_CODING_HUFFMAN, 31);
    doc_plain_layer(&l[1], DCZ_OP_RELU, "relu");
    doc_gather_layer(&l[2], "shuffle1", 2, 0);
    doc_gather_layer(&l[3], "part1", 0, 3);
    doc_gather_layer(&l[4], "part2", 3, 5);
    l[4].in[0] = 3;
    conv(&l[5], "conv2", 5, 5, 3, 1, 1, DCZ_ENC_SPARSE_F32, 4, 0, DCZ_CODING_RAW, 32);
    doc_plain_layer(&l[6], DCZ_OP_CONCAT, "cat");
    l[6].nin = 2; l[6].in[0] = 4; l[6].in[1] = 6;
    doc_gather_layer(&l[7], "shuffle2", 4, 0);
    doc_gather_layer(&l[8], "part3", 2, 6);
    doc_plain_layer(&l[9], DCZ_OP_GLOBAL_AVGPOOL, "gap");
    doc_plain_layer(&l[10], DCZ_OP_FLATTEN, "flatten");
    dense(&l[11], "fc", 6, 5, DCZ_ENC_F32, 0, 0, 0, 33);
    doc_plain_layer(&l[12], DCZ_OP_SOFTMAX, "prob");
    dcz_doc_add_stage(d, "stage = corpus\n");
    return d;
}

/* (32, 5, 4) -> conv 3x3 pad 1, 32 -> 32 (dense f16; Winograd where the
 * plan gives it an odd plane: AMD's cores with AVX-512) -> relu -> depthwise 3x3 stride 2 pad 1 (codebook, Huffman)
 * -> relu -> conv 1x1 32 -> 16 (sparse f32) -> gap -> flatten -> dense
 * (codebook) -> softmax: the kernels of wide and of depthwise layers */
static dcz_doc *wide_net(void)
{
    dcz_doc *d;
    if (dcz_doc_alloc(9, &d) != DCZ_OK) return NULL;
    d->input_rank = 3;
    d->input_dims[0] = 32; d->input_dims[1] = 5; d->input_dims[2] = 4;
    dcz_doc_layer *l = d->layers;
    conv(&l[0], "wide", 32, 32, 3, 1, 1, DCZ_ENC_F16, 0, 0, 0, 31);
    doc_plain_layer(&l[1], DCZ_OP_RELU, "relu1");
    doc_conv_layer(&l[2], "dw", 32, 32, 3, 2, 1, DCZ_ENC_CODEBOOK, 3, 3, DCZ_CODING_HUFFMAN);
    doc_conv_groups(&l[2], 32);
    fill(&l[2], 32);
    doc_plain_layer(&l[3], DCZ_OP_RELU, "relu2");
    conv(&l[4], "pw", 32, 16, 1, 1, 0, DCZ_ENC_SPARSE_F32, 3, 0, DCZ_CODING_RAW, 33);
    doc_plain_layer(&l[5], DCZ_OP_GLOBAL_AVGPOOL, "gap");
    doc_plain_layer(&l[6], DCZ_OP_FLATTEN, "flat");
    dense(&l[7], "fc", 16, 3, DCZ_ENC_CODEBOOK, 2, 3, DCZ_CODING_HUFFMAN, 34);
    doc_plain_layer(&l[8], DCZ_OP_SOFTMAX, "prob");
    dcz_doc_add_stage(d, "stage = corpus\n");
    return d;
}

/* Installs a table of scheme on d: input and tensor scales fixed, weight
 * scales from each row's largest |w| (powers of two for fixed point). */
static dcz_doc *calibrated(dcz_doc *d, uint32_t scheme, int per_channel)
{
    if (!d) return NULL;
    const int32_t qmax = dcz_scheme_qmax(scheme);
    dcz_doc_calib *t = calloc(1, sizeof *t);
    t->scheme = scheme;
    t->e = calloc(d->nlayers, sizeof *t->e);
    for (uint32_t i = 0; i < d->nlayers; i++) {
        if (d->layers[i].op != DCZ_OP_DENSE && d->layers[i].op != DCZ_OP_CONV2D) continue;
        const dcz_doc_tensor *w = &d->layers[i].t[0];
        dcz_doc_calib_entry *e = &t->e[t->count++];
        e->layer = i;
        e->in_scale = scheme == DCZ_SCHEME_INT8 ? 0.013f : 0.015625f;
        e->nw = per_channel ? w->dims[0] : 1;
        e->w_scale = malloc(e->nw * sizeof *e->w_scale);
        for (uint32_t r = 0; r < e->nw; r++) {
            double m = 1e-3;
            for (size_t k = r * (w->n / e->nw); k < (r + 1) * (w->n / e->nw); k++)
                if (fabs(w->values[k]) > m) m = fabs(w->values[k]);
            e->w_scale[r] = scheme == DCZ_SCHEME_INT8 ? (float)(m / qmax)
                : (float)ldexp(1.0, (int)ceil(log2(m)) + 1 - (qmax == 127 ? 8 : 16));
        }
    }
    /* a graph needs the scale of every tensor: one for all of the region */
    t->ntensors = d->nlayers + 1;
    t->t_scale = calloc(t->ntensors, sizeof *t->t_scale);
    for (uint32_t i = 0; i <= t->e[t->count - 1].layer; i++) t->t_scale[i] = t->e[0].in_scale;
    if (dcz_cal_install(d, t) != DCZ_OK) { dcz_doc_free(d); return NULL; }
    return d;
}

/* (3, 4, 4) with a PREPROCESS section (resize 5, crop 4x4, ImageNet's
 * statistics) -> conv 1x1 to 4 -> gap -> flatten -> dense 3 */
static dcz_doc *prep_net(void)
{
    dcz_doc *d;
    if (dcz_doc_alloc(4, &d) != DCZ_OK) return NULL;
    d->input_rank = 3;
    d->input_dims[0] = 3; d->input_dims[1] = 4; d->input_dims[2] = 4;
    dcz_doc_layer *l = d->layers;
    conv(&l[0], "conv1", 3, 4, 1, 1, 0, DCZ_ENC_F32, 0, 0, 0, 41);
    doc_plain_layer(&l[1], DCZ_OP_GLOBAL_AVGPOOL, "gap");
    doc_plain_layer(&l[2], DCZ_OP_FLATTEN, "flatten");
    dense(&l[3], "fc", 4, 3, DCZ_ENC_F32, 0, 0, 0, 42);
    d->has_prep = 1;
    d->prep = (dcz_preprocess){ 5, 4, 4, 3, { 0.485f, 0.456f, 0.406f }, { 0.229f, 0.224f, 0.225f } };
    dcz_doc_add_stage(d, "stage = corpus\n");
    return d;
}

static int emit(const char *dir, const char *name, dcz_doc *d)
{
    uint8_t *buf;
    size_t len;
    char path[4096];
    if (dcz_doc_write(d, &buf, &len) != DCZ_OK) return 1;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, len, f) != len) return 1;
    fclose(f);
    free(buf);
    dcz_doc_free(d);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: gen_dcz_corpus DIR\n"); return 1; }
    const uint32_t encs[] = { DCZ_ENC_F32, DCZ_ENC_F16, DCZ_ENC_SPARSE_F32, DCZ_ENC_CODEBOOK };
    int rc = 0;
    for (int e = 0; e < 4; e++)
        for (uint8_t coding = 0; coding <= DCZ_CODING_ARITH; coding++) {
            if (e < 2 && coding) continue;
            dcz_doc *d;
            if (dcz_doc_alloc(3, &d) != DCZ_OK) return 1;
            d->input_rank = 1;
            d->input_dims[0] = 20;
            /* coding 2 stores the positions as a keep mask: gap_bits 1 */
            unsigned gap = encs[e] < DCZ_ENC_SPARSE_F32 ? 0 : coding == DCZ_CODING_ARITH ? 1 : 3;
            dense(&d->layers[0], "fc1", 20, 6, encs[e], gap, 2, coding, 7u + (unsigned)e);
            d->layers[1].op = DCZ_OP_RELU;
            snprintf(d->layers[1].name, sizeof d->layers[1].name, "relu1");
            dense(&d->layers[2], "fc2", 6, 3, DCZ_ENC_F32, 0, 0, 0, 3);
            dcz_doc_add_stage(d, "stage = corpus\n");
            char name[64];
            snprintf(name, sizeof name, "enc%u_coding%u.dcz", encs[e], coding);
            rc |= emit(argv[1], name, d);
        }
    /* a dense codebook (every position stored, no gap stream) and a softmax */
    dcz_doc *d;
    if (dcz_doc_alloc(2, &d) != DCZ_OK) return 1;
    d->input_rank = 1;
    d->input_dims[0] = 9;
    dense(&d->layers[0], "fc", 9, 4, DCZ_ENC_CODEBOOK, 0, 3, 1, 11);
    d->layers[1].op = DCZ_OP_SOFTMAX;
    snprintf(d->layers[1].name, sizeof d->layers[1].name, "prob");
    rc |= emit(argv[1], "dense_codebook.dcz", d);
    dcz_doc *a = conv_net_a(), *b = conv_net_b();
    if (!a || !b) return 1;
    rc |= emit(argv[1], "conv_net_a.dcz", a);
    rc |= emit(argv[1], "conv_net_b.dcz", b);
    /* conv_net_a with its sparse convolutions arithmetic-coded (format 2.2) */
    dcz_doc *aa = conv_net_a();
    if (!aa) return 1;
    for (int li = 0; li <= 3; li += 3) {
        dcz_doc_tensor *w = &aa->layers[li].t[0];
        w->gap_bits = 1;
        w->gap_coding = w->index_coding = DCZ_CODING_ARITH;
    }
    rc |= emit(argv[1], "conv_net_a_arith.dcz", aa);
    /* conv_net_a with an f16 codebook and 8-bit biases (format 2.2) */
    dcz_doc *ac = conv_net_a();
    if (!ac || !dcz_doc_tensor_codebook_f16(&ac->layers[0].t[0])) return 1;
    for (int li = 0; li <= 8; li += 3)
        if (ac->layers[li].ntensors == 2 && dcz_doc_tensor_to_i8(&ac->layers[li].t[1]) != DCZ_OK) return 1;
    rc |= emit(argv[1], "conv_net_a_compact.dcz", ac);
    dcz_doc *qa = calibrated(conv_net_a(), DCZ_SCHEME_FIXED8, 0);
    dcz_doc *qb = calibrated(conv_net_b(), DCZ_SCHEME_INT8, 1);
    if (!qa || !qb) return 1;
    rc |= emit(argv[1], "calib_fixed8_conv.dcz", qa);
    rc |= emit(argv[1], "calib_int8_conv.dcz", qb);
    if (dcz_doc_alloc(3, &d) != DCZ_OK) return 1;
    d->input_rank = 1;
    d->input_dims[0] = 12;
    dense(&d->layers[0], "fc1", 12, 5, DCZ_ENC_F32, 0, 0, 0, 12);
    doc_plain_layer(&d->layers[1], DCZ_OP_RELU, "relu");
    dense(&d->layers[2], "fc2", 5, 3, DCZ_ENC_CODEBOOK, 2, 2, DCZ_CODING_HUFFMAN, 13);
    if (!(d = calibrated(d, DCZ_SCHEME_FIXED16, 1))) return 1;
    rc |= emit(argv[1], "calib_fixed16_mlp.dcz", d);
    if (!(d = dag_net())) return 1;
    rc |= emit(argv[1], "dag_net.dcz", d);
    if (!(d = calibrated(dag_net(), DCZ_SCHEME_INT8, 1))) return 1;
    rc |= emit(argv[1], "calib_int8_dag.dcz", d);
    if (!(d = calibrated(dag_net(), DCZ_SCHEME_FIXED16, 0))) return 1;
    rc |= emit(argv[1], "calib_fixed16_dag.dcz", d);
    if (!(d = wide_net())) return 1;
    rc |= emit(argv[1], "wide_net.dcz", d);
    if (!(d = calibrated(wide_net(), DCZ_SCHEME_INT8, 1))) return 1;
    rc |= emit(argv[1], "calib_int8_wide.dcz", d);
    if (!(d = shuffle_net())) return 1;
    rc |= emit(argv[1], "shuffle_net.dcz", d);
    if (!(d = calibrated(shuffle_net(), DCZ_SCHEME_INT8, 1))) return 1;
    rc |= emit(argv[1], "calib_int8_shuffle.dcz", d);
    if (!(d = prep_net())) return 1;
    rc |= emit(argv[1], "prep_net.dcz", d);
    return rc;
}
