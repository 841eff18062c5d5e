/* test_store.c: a net stored into its document and opened over a document
 * (dcz_net_store, dcz_net_open in train/net.c).
 *
 * A net with a dense layer, a pruned layer and a pruned codebook layer is
 * stored into its document, written, read and opened again: weights,
 * masks, codebooks and assignments survive exactly, each weight gets the
 * encoding its state calls for, and the runtime computes what the net
 * computes. Storing is in place: the document keeps its stages and drops
 * a calibration table. A CNN with batch norm, pooling of both kinds and
 * pruned and shared conv weights does the same after batch norm is
 * folded; before, its document is in training form and cannot be written.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/model.h"
#include "tests/check.h"
#include "train/train.h"

static dcz_net *make_net(void)
{
    dcz_net *net = NULL;
    char err[128];
    if (dcz_net_create_arch("mlp:20-16-12-5", 3, &net, err, sizeof err) != DCZ_OK) return NULL;
    /* fc2: pruned; fc3: pruned with a 4-entry codebook */
    dcz_tlayer *p = &net->layers[2], *q = &net->layers[4];
    p->mask = calloc((size_t)p->in * p->out, 1);
    for (int i = 0; i < p->in * p->out; i++) {
        p->mask[i] = i % 3 == 0;
        if (!p->mask[i]) p->w[i] = 0;
    }
    q->mask = calloc((size_t)q->in * q->out, 1);
    q->k = 4;
    q->codebook = malloc(4 * sizeof(float));
    q->assign = calloc((size_t)q->in * q->out, 1);
    for (int c = 0; c < 4; c++) q->codebook[c] = 0.3f * (float)c - 0.45f;
    for (int i = 0; i < q->in * q->out; i++) {
        q->mask[i] = i % 2 == 1;
        q->assign[i] = q->mask[i] ? (uint8_t)(i % 4) : 0;
        q->w[i] = q->mask[i] ? q->codebook[q->assign[i]] : 0;
    }
    for (int l = 0; l < net->nlayers; l++)
        if (net->layers[l].op == DCZ_OP_DENSE)
            for (int o = 0; o < net->layers[l].out; o++) net->layers[l].b[o] = 0.01f * (float)o;
    return net;
}

static void test_round_trip(void)
{
    dcz_net *net = make_net(), *back = NULL;
    REQUIRE(net && dcz_net_validate(net) == DCZ_OK, "net");
    dcz_layer_encoding enc[6];
    memset(enc, 0, sizeof enc);
    for (int i = 0; i < 6; i++) { enc[i].gap_bits = 3; enc[i].huffman = (uint8_t)(i == 4); }
    dcz_doc *d = net->doc, *r = NULL;
    REQUIRE(d && net->own_doc, "a net made by name has its document");
    REQUIRE(dcz_doc_add_stage(d, "stage = train") == DCZ_OK, "a stage record");
    REQUIRE((d->calib = calloc(1, sizeof *d->calib)) != NULL, "a calibration table");
    REQUIRE(dcz_net_store(net, enc) == DCZ_OK, "store");
    CHECK(net->doc == d && d->nstages == 1 && strcmp(d->stages[0], "stage = train") == 0,
          "stored in place, stages kept");
    CHECK(d->calib == NULL, "the calibration table of other weights dropped");
    CHECK(d->layers[0].t[0].enc == DCZ_ENC_F32, "dense stays f32");
    CHECK(d->layers[2].t[0].enc == DCZ_ENC_SPARSE_F32, "pruned becomes sparse");
    CHECK(d->layers[4].t[0].enc == DCZ_ENC_CODEBOOK && d->layers[4].t[0].index_bits == 2, "codebook, 2 bits");
    CHECK(d->layers[5].op == DCZ_OP_SOFTMAX, "softmax kept");
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    REQUIRE(dcz_doc_read(buf, len, &r) == DCZ_OK, "read");
    REQUIRE(dcz_net_open(r, &back) == DCZ_OK, "open");
    REQUIRE(back->nlayers == net->nlayers && back->doc == r && !back->own_doc, "layers");
    for (int l = 0; l < net->nlayers; l++) {
        const dcz_tlayer *a = &net->layers[l], *b = &back->layers[l];
        CHECK(a->op == b->op && strcmp(a->name, b->name) == 0, "layer %d", l);
        if (a->op != DCZ_OP_DENSE) continue;
        size_t n = dcz_tlayer_nweights(a);
        CHECK(memcmp(a->w, b->w, n * sizeof(float)) == 0, "weights of %s", a->name);
        CHECK(memcmp(a->b, b->b, (size_t)a->out * sizeof(float)) == 0, "bias of %s", a->name);
        CHECK(!a->mask == !b->mask, "mask presence of %s", a->name);
        if (a->mask && b->mask) CHECK(memcmp(a->mask, b->mask, n) == 0, "mask of %s", a->name);
        CHECK(a->k == b->k, "k of %s", a->name);
        if (a->codebook && b->codebook) {
            CHECK(memcmp(a->codebook, b->codebook, (size_t)a->k * sizeof(float)) == 0, "codebook");
            size_t bad = 0;
            for (size_t i = 0; i < n; i++) bad += a->mask[i] && a->assign[i] != b->assign[i];
            CHECK(bad == 0, "%zu assignments differ", bad);
        }
    }
    /* the runtime computes what the net computes */
    dcz_model *m = NULL;
    REQUIRE(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "open");
    float x[3 * 20], y_net[3 * 5], y_rt[3 * 5];
    for (int i = 0; i < 60; i++) x[i] = sinf((float)i);
    REQUIRE(dcz_net_forward(net, x, 3, y_net) == DCZ_OK, "forward");
    REQUIRE(dcz_run(m, x, 3, y_rt) == DCZ_OK, "run");
    double worst = 0;
    for (int i = 0; i < 15; i++) worst = fmax(worst, fabs(y_net[i] - y_rt[i]));
    CHECK(worst < 1e-5, "net and runtime differ by %g", worst);
    dcz_close(m);
    free(buf);
    dcz_net_free(net);
    dcz_net_free(back);
    dcz_doc_free(r);
}

static void test_bad_gap_bits(void)
{
    dcz_net *net = make_net();
    REQUIRE(net != NULL, "net");
    dcz_layer_encoding enc[6];
    memset(enc, 0, sizeof enc); /* gap_bits 0 for a pruned layer is not allowed */
    CHECK(dcz_net_store(net, enc) == DCZ_ERR_ARG, "gap bits 0 refused");
    CHECK(net->doc->layers[0].ntensors == 0 && net->doc->layers[2].ntensors == 0,
          "a refused store changes nothing");
    /* without encodings, the position width that stores them smallest */
    REQUIRE(dcz_net_store(net, NULL) == DCZ_OK, "store plain");
    uint8_t best = 0;
    const dcz_doc_tensor *w = &net->doc->layers[2].t[0];
    REQUIRE(dcz_doc_tensor_best_gap_bits(w, &best) == DCZ_OK, "best width");
    CHECK(w->gap_bits == best && best >= 1 && w->gap_coding == DCZ_CODING_RAW, "width %u, best %u",
          w->gap_bits, best);
    /* a codebook layer that keeps every weight stores no positions */
    dcz_tlayer *q = &net->layers[4];
    for (int i = 0; i < q->in * q->out; i++) q->mask[i] = 1;
    dcz_net_apply_constraints(net);
    REQUIRE(dcz_net_store(net, NULL) == DCZ_OK, "store a codebook layer keeping every weight");
    const dcz_doc_tensor *c = &net->doc->layers[4].t[0];
    CHECK(c->enc == DCZ_ENC_CODEBOOK && c->mask == NULL && c->gap_bits == 0, "no positions stored");
    uint8_t *buf = NULL;
    size_t len = 0;
    CHECK(dcz_doc_write(net->doc, &buf, &len) == DCZ_OK, "and it is written");
    free(buf);
    /* a document changed under the net is refused */
    net->doc->layers[1].op = DCZ_OP_SIGMOID;
    CHECK(dcz_net_store(net, NULL) == DCZ_ERR_ARG, "a document of other layers");
    net->doc->layers[1].op = DCZ_OP_RELU;
    dcz_net_free(net);
}

/* A CNN with batch norm trained a little (so the folded statistics are not
 * the identity). */
static dcz_net *make_cnn(void)
{
    dcz_net *net = NULL;
    char err[128];
    if (dcz_net_create_arch("cnn:i2x9x11-c4k3-p2-c6k3s2p1-a2-f7", 5, &net, err, sizeof err) != DCZ_OK) return NULL;
    float x[8 * 2 * 9 * 11];
    uint8_t y[8];
    for (int i = 0; i < 8 * 2 * 9 * 11; i++) x[i] = 0.5f + 0.5f * sinf(0.37f * (float)i);
    for (int i = 0; i < 8; i++) y[i] = (uint8_t)(i % 7);
    dcz_sgd sgd = { .lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.0f, .batch = 8, .train_biases = 1, .train_weights = 1 };
    for (int it = 0; it < 5; it++)
        if (dcz_net_grad(net, x, y, 8, NULL) != DCZ_OK || dcz_net_step(net, &sgd) != DCZ_OK) return net;
    return net;
}

/* Prunes conv2 of net (every fifth weight) and shares the rest among 8
 * centroids. */
static int share_conv2(dcz_net *net)
{
    for (int l = 0; l < net->nlayers; l++) {
        dcz_tlayer *c = &net->layers[l];
        if (c->op != DCZ_OP_CONV2D || strcmp(c->name, "conv2") != 0) continue;
        size_t n = dcz_tlayer_nweights(c);
        c->mask = calloc(n, 1);
        c->assign = calloc(n, 1);
        c->codebook = malloc(8 * sizeof(float));
        c->k = 8;
        if (!c->mask || !c->assign || !c->codebook) return 0;
        for (int k = 0; k < 8; k++) c->codebook[k] = 0.1f * (float)k - 0.35f;
        for (size_t i = 0; i < n; i++) {
            c->mask[i] = i % 5 != 1;
            c->assign[i] = (uint8_t)(c->mask[i] ? i % 8 : 0);
        }
        dcz_net_apply_constraints(net);
    }
    return 1;
}

static void test_conv_round_trip(void)
{
    dcz_net *net = make_cnn(), *back = NULL;
    REQUIRE(net != NULL, "cnn");
    dcz_layer_encoding enc[32];
    memset(enc, 0, sizeof enc);
    for (int i = 0; i < 32; i++) { enc[i].gap_bits = 4; enc[i].huffman = 1; }
    dcz_doc *d = net->doc, *r = NULL;
    REQUIRE(dcz_net_store(net, enc) == DCZ_OK, "store in training form");
    int bns = 0;
    for (uint32_t l = 0; l < d->nlayers; l++)
        if (d->layers[l].op == DCZ_OP_BATCHNORM) {
            const dcz_doc_layer *bn = &d->layers[l];
            bns++;
            CHECK(bn->ntensors == 4 && bn->nattr == 2 && bn->t[3].n == bn->t[0].n &&
                  dcz_attr_f32(bn->attr[0]) == DCZ_BN_EPS, "batch norm %s: 4 tensors, eps", bn->name);
        }
    CHECK(bns == 2, "%d batch norms in the document", bns);
    uint8_t *tbuf = NULL;
    size_t tlen = 0;
    CHECK(dcz_doc_write(d, &tbuf, &tlen) != DCZ_OK && tbuf == NULL, "a document in training form is not written");
    enum { B = 3, IN = 2 * 9 * 11, OUT = 7 };
    float x[B * IN], y_net[B * OUT], y_fold[B * OUT], y_rt[B * OUT];
    for (int i = 0; i < B * IN; i++) x[i] = cosf(0.11f * (float)i);
    REQUIRE(dcz_net_forward(net, x, B, y_net) == DCZ_OK, "forward");
    REQUIRE(dcz_net_fold_for_inference(net) == DCZ_OK, "fold");
    CHECK(net->doc == d && d->nlayers == (uint32_t)net->nlayers, "folded in its document, %u layers",
          d->nlayers);
    REQUIRE(dcz_net_forward(net, x, B, y_fold) == DCZ_OK, "forward folded");
    double worst = 0;
    for (int i = 0; i < B * OUT; i++) worst = fmax(worst, fabs(y_net[i] - y_fold[i]));
    CHECK(worst < 1e-4, "folding changed the outputs by %g", worst);
    REQUIRE(share_conv2(net), "prune and share conv2");
    REQUIRE(dcz_net_forward(net, x, B, y_fold) == DCZ_OK, "forward compressed");
    REQUIRE(dcz_net_store(net, enc) == DCZ_OK, "store");
    CHECK(d->input_rank == 3 && d->input_dims[0] == 2 && d->input_dims[1] == 9 && d->input_dims[2] == 11,
          "input shape");
    int convs = 0, pools = 0;
    for (uint32_t l = 0; l < d->nlayers; l++) {
        const dcz_doc_layer *dl = &d->layers[l];
        if (dl->op == DCZ_OP_CONV2D) {
            convs++;
            CHECK(dl->t[0].rank == 4 && dl->nattr == 9 && dl->attr[8] == 1, "conv weight rank 4, 9 attributes, group 1");
        }
        pools += dl->op == DCZ_OP_MAXPOOL || dl->op == DCZ_OP_AVGPOOL;
    }
    CHECK(convs == 2 && pools == 2, "%d convs, %d pools", convs, pools);
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    REQUIRE(dcz_doc_read(buf, len, &r) == DCZ_OK, "read");
    REQUIRE(dcz_net_open(r, &back) == DCZ_OK, "open");
    REQUIRE(back->nlayers == net->nlayers, "layers");
    for (int l = 0; l < net->nlayers; l++) {
        const dcz_tlayer *a = &net->layers[l], *b = &back->layers[l];
        CHECK(a->op == b->op && a->in == b->in && a->out == b->out, "layer %d", l);
        if (!dcz_tlayer_has_weights(a)) continue;
        size_t n = dcz_tlayer_nweights(a);
        CHECK(n == dcz_tlayer_nweights(b) && memcmp(a->w, b->w, n * sizeof(float)) == 0, "weights of %s", a->name);
        CHECK(!a->mask == !b->mask && a->k == b->k, "compression state of %s", a->name);
    }
    float y_back[B * OUT];
    REQUIRE(dcz_net_forward(back, x, B, y_back) == DCZ_OK, "forward back");
    CHECK(memcmp(y_back, y_fold, sizeof y_back) == 0, "the net read back computes the same");
    dcz_model *m = NULL;
    REQUIRE(dcz_open_memory(buf, len, NULL, &m) == DCZ_OK, "open");
    for (int batch = 1; batch <= B; batch += B - 1) {
        REQUIRE(dcz_run(m, x, (size_t)batch, y_rt) == DCZ_OK, "run");
        worst = 0;
        for (int i = 0; i < batch * OUT; i++) worst = fmax(worst, fabs(y_fold[i] - y_rt[i]));
        CHECK(worst < 1e-5, "batch %d: net and runtime differ by %g", batch, worst);
    }
    dcz_close(m);
    free(buf);
    dcz_net_free(net);
    dcz_net_free(back);
    dcz_doc_free(r);
}

int main(void)
{
    RUN(test_round_trip);
    RUN(test_bad_gap_bits);
    RUN(test_conv_round_trip);
    return check_summary();
}
