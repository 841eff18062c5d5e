/* test_shards.c: sharded training steps (train/sgd.c, dcz_sgd.shards and
 * dcz_sgd.comm).
 *
 * Ranks are threads here: each trains its own copy of the net, and the
 * communicator sums their integers through shared memory, as MPI would
 * across processes. A net with batch norm, dropout, a residual add and a
 * pruned, shared layer trained for two epochs with 4 shards ends with the
 * same parameters and running statistics, bit for bit, on 1, 2 and 4
 * ranks; every rank holds the same net; with 1 shard the old single-batch
 * step runs (other weights, equally trained); a rank count that does not
 * divide the shards is refused; a communicator that fails stops the epoch
 * with its error.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "prune/prune.h"
#include "quantize/quantize.h"
#include "tests/check.h"
#include "train/train.h"

enum { N = 300, C = 1, H = 8, W = 8, CLASSES = 3, EPOCHS = 2 };
#define ARCH "cnn:i1x8x8-c4k3-r4-d20-p2-f3"

/* Images whose class is the quadrant with the brightest blob. */
static void make_data(dcz_dataset *d)
{
    memset(d, 0, sizeof *d);
    d->n = N;
    d->c = C;
    d->h = H;
    d->w = W;
    d->classes = CLASSES;
    d->x = malloc((size_t)N * H * W * sizeof(float));
    d->y = malloc(N);
    dcz_rng r;
    dcz_rng_seed(&r, 17);
    for (int i = 0; i < N; i++) {
        float *x = d->x + (size_t)i * H * W;
        const int y = (int)dcz_rng_below(&r, CLASSES);
        for (int p = 0; p < H * W; p++) x[p] = 0.2f * dcz_rng_uniform(&r);
        for (int p = 0; p < 9; p++) x[(y * 2 + p / 3) * W + (y * 2 + p % 3)] += 1.0f;
        d->y[i] = (uint8_t)y;
    }
}

typedef struct shared {
    pthread_mutex_t mu;
    pthread_barrier_t bar;
    int64_t *sum;
    size_t n;
    int fail_after;      /* > 0: the sum fails from that call on */
    int calls;
} shared;

typedef struct rank {
    shared *s;
    dcz_comm comm;
    int shards;
    const dcz_dataset *data;
    dcz_net *net;
    dcz_status st;
} rank;

static dcz_status sum_i64(void *ctx, int64_t *v, size_t n)
{
    rank *r = ctx;
    shared *s = r->s;
    pthread_barrier_wait(&s->bar);
    pthread_mutex_lock(&s->mu);
    const int fail = s->fail_after > 0 && s->calls / r->comm.size >= s->fail_after;
    s->calls++;
    for (size_t j = 0; j < n && j < s->n; j++) s->sum[j] += v[j];
    pthread_mutex_unlock(&s->mu);
    pthread_barrier_wait(&s->bar);
    memcpy(v, s->sum, n * sizeof *v);
    pthread_barrier_wait(&s->bar);
    if (r->comm.rank == 0) memset(s->sum, 0, s->n * sizeof *s->sum);
    return fail ? DCZ_ERR_IO : DCZ_OK;
}

/* The net every rank starts from: fc1 pruned to half and shared among 8
 * centroids. */
static dcz_net *start_net(void)
{
    dcz_net *net = NULL;
    char err[128];
    if (dcz_net_create_arch(ARCH, 9, &net, err, sizeof err) != DCZ_OK) return NULL;
    int found = 0;
    for (int i = 0; i < net->nlayers; i++) {
        dcz_tlayer *l = &net->layers[i];
        if (strcmp(l->name, "fc1") != 0) continue;
        found = 1;
        if (dcz_prune_layer_to_sparsity(l, 0.5, NULL, NULL) != DCZ_OK ||
            dcz_quantize_layer(l, 3, DCZ_KM_LINEAR, 20, 1, NULL) != DCZ_OK) {
            dcz_net_free(net);
            return NULL;
        }
    }
    if (!found) {
        dcz_net_free(net);
        return NULL;
    }
    return net;
}

static void *train_rank(void *arg)
{
    rank *r = arg;
    dcz_rng rng;
    dcz_rng_seed(&rng, 5);
    for (int e = 0; e < EPOCHS && r->st == DCZ_OK; e++) {
        dcz_sgd opt = { .lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-4f, .batch = 32, .train_biases = 1,
                        .train_weights = 1, .shards = r->shards, .comm = r->comm.size ? &r->comm : NULL };
        r->st = dcz_train_epoch(r->net, r->data, &opt, &rng, NULL, NULL, NULL);
    }
    return NULL;
}

/* Trains copies of the start net on `ranks` threads with `shards` shards
 * (ranks 0: no communicator); every rank's net in nets. */
static dcz_status train(int ranks, int shards, const dcz_dataset *d, dcz_net **nets, int fail_after)
{
    shared s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    pthread_barrier_init(&s.bar, NULL, ranks ? (unsigned)ranks : 1);
    s.fail_after = fail_after;
    rank r[4];
    pthread_t t[4];
    const int n = ranks ? ranks : 1;
    for (int i = 0; i < n; i++) {
        memset(&r[i], 0, sizeof r[i]);
        r[i].s = &s;
        r[i].shards = shards;
        r[i].data = d;
        r[i].net = nets[i] = start_net();
        if (ranks) r[i].comm = (dcz_comm){ i, ranks, &r[i], sum_i64 };
    }
    /* the sum's length: every rank's flat gradients and more, sized once */
    s.n = 1 << 20;
    s.sum = calloc(s.n, sizeof *s.sum);
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, train_rank, &r[i]);
    dcz_status st = DCZ_OK;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        if (r[i].st != DCZ_OK) st = r[i].st;
    }
    free(s.sum);
    pthread_barrier_destroy(&s.bar);
    pthread_mutex_destroy(&s.mu);
    return st;
}

/* The nets' parameters and batch-norm running statistics, bit for bit. */
static int same_net(const dcz_net *a, const dcz_net *b)
{
    if (a->param_count != b->param_count || memcmp(a->param, b->param, a->param_count * sizeof(float)))
        return 0;
    for (int i = 0; i < a->nlayers; i++) {
        const dcz_tlayer *la = &a->layers[i], *lb = &b->layers[i];
        if (la->op != DCZ_OP_BATCHNORM) continue;
        if (memcmp(la->run_mean, lb->run_mean, (size_t)la->in_c * sizeof(float)) ||
            memcmp(la->run_var, lb->run_var, (size_t)la->in_c * sizeof(float)))
            return 0;
    }
    return 1;
}

static void free_nets(dcz_net **nets, int n)
{
    for (int i = 0; i < n; i++) dcz_net_free(nets[i]);
}

static void test_rank_counts(void)
{
    dcz_dataset d;
    make_data(&d);
    dcz_net *one[4] = { 0 }, *two[4] = { 0 }, *four[4] = { 0 }, *plain[4] = { 0 }, *alone[4] = { 0 };
    REQUIRE(train(0, 4, &d, alone, 0) == DCZ_OK, "4 shards, no communicator");
    REQUIRE(train(1, 4, &d, one, 0) == DCZ_OK, "4 shards, 1 rank");
    REQUIRE(train(2, 4, &d, two, 0) == DCZ_OK, "4 shards, 2 ranks");
    REQUIRE(train(4, 4, &d, four, 0) == DCZ_OK, "4 shards, 4 ranks");
    REQUIRE(train(0, 1, &d, plain, 0) == DCZ_OK, "1 shard");
    CHECK(same_net(alone[0], one[0]), "no communicator and 1 rank differ");
    CHECK(same_net(one[0], two[0]) && same_net(two[0], two[1]), "1 and 2 ranks differ");
    CHECK(same_net(one[0], four[0]) && same_net(four[0], four[3]) && same_net(four[1], four[2]),
          "1 and 4 ranks differ");
    CHECK(!same_net(one[0], plain[0]), "4 shards and 1 gave the same net");
    double acc4, acc1;
    REQUIRE(dcz_net_evaluate(four[2], &d, &acc4) == DCZ_OK && dcz_net_evaluate(plain[0], &d, &acc1) == DCZ_OK,
            "evaluate");
    CHECK(acc4 > 0.8 && acc1 > 0.8, "trained: %.3f with 4 shards on 4 ranks, %.3f with 1 shard", acc4, acc1);
    free_nets(alone, 1);
    free_nets(one, 1);
    free_nets(two, 2);
    free_nets(four, 4);
    free_nets(plain, 1);
    dcz_dataset_free(&d);
}

static void test_refused(void)
{
    dcz_dataset d;
    make_data(&d);
    dcz_net *nets[4] = { 0 };
    /* 3 shards cannot be shared by 2 ranks */
    dcz_net *net = start_net();
    REQUIRE(net, "net");
    dcz_comm bad = { 0, 2, NULL, sum_i64 };
    dcz_rng rng;
    dcz_rng_seed(&rng, 1);
    dcz_sgd opt = { .lr = 0.05f, .batch = 32, .train_biases = 1, .train_weights = 1, .shards = 3, .comm = &bad };
    CHECK(dcz_train_epoch(net, &d, &opt, &rng, NULL, NULL, NULL) == DCZ_ERR_ARG, "3 shards on 2 ranks");
    bad.rank = 2;
    opt.shards = 2;
    CHECK(dcz_train_epoch(net, &d, &opt, &rng, NULL, NULL, NULL) == DCZ_ERR_ARG, "rank 2 of 2");
    dcz_net_free(net);
    /* a failing sum stops every rank with its error */
    CHECK(train(2, 2, &d, nets, 3) == DCZ_ERR_IO, "a failed sum");
    free_nets(nets, 2);
    dcz_dataset_free(&d);
}

int main(void)
{
    dcz_train_set_threads(1);
    RUN(test_rank_counts);
    RUN(test_refused);
    return check_summary();
}
