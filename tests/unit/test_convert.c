/* test_convert.c: networks to documents and back (train/convert.c).
 *
 * A net with a dense layer, a pruned layer and a pruned codebook layer goes
 * to a document, through the file format, and back: weights, masks,
 * codebooks and assignments survive exactly, each weight gets the encoding
 * its state calls for, and the runtime computes what the net computes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/model.h"
#include "tests/check.h"
#include "train/convert.h"

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
        if (net->layers[l].kind == DCZ_TL_DENSE)
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
    dcz_doc *d = NULL, *r = NULL;
    REQUIRE(dcz_net_to_doc(net, enc, &d) == DCZ_OK, "to doc");
    CHECK(d->layers[0].t[0].enc == DCZ_ENC_F32, "dense stays f32");
    CHECK(d->layers[2].t[0].enc == DCZ_ENC_SPARSE_F32, "pruned becomes sparse");
    CHECK(d->layers[4].t[0].enc == DCZ_ENC_CODEBOOK && d->layers[4].t[0].index_bits == 2, "codebook, 2 bits");
    CHECK(d->layers[5].op == DCZ_OP_SOFTMAX, "softmax kept");
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(dcz_doc_write(d, &buf, &len) == DCZ_OK, "write");
    REQUIRE(dcz_doc_read(buf, len, &r) == DCZ_OK, "read");
    REQUIRE(dcz_net_from_doc(r, &back) == DCZ_OK, "from doc");
    REQUIRE(back->nlayers == net->nlayers, "layers");
    for (int l = 0; l < net->nlayers; l++) {
        const dcz_tlayer *a = &net->layers[l], *b = &back->layers[l];
        CHECK(a->kind == b->kind && strcmp(a->name, b->name) == 0, "layer %d", l);
        if (a->kind != DCZ_TL_DENSE) continue;
        size_t n = (size_t)a->in * a->out;
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
    dcz_doc_free(d);
    dcz_doc_free(r);
    dcz_net_free(net);
    dcz_net_free(back);
}

static void test_bad_gap_bits(void)
{
    dcz_net *net = make_net();
    REQUIRE(net != NULL, "net");
    dcz_layer_encoding enc[6];
    memset(enc, 0, sizeof enc); /* gap_bits 0 for a pruned layer is not allowed */
    dcz_doc *d = NULL;
    CHECK(dcz_net_to_doc(net, enc, &d) == DCZ_ERR_ARG && d == NULL, "gap bits 0 refused");
    dcz_net_free(net);
}

int main(void)
{
    RUN(test_round_trip);
    RUN(test_bad_gap_bits);
    return check_summary();
}
