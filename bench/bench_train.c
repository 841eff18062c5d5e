/* bench_train.c: training speed of the engine on Fashion-MNIST.
 *
 * Times epochs of LeNet-5 (the Caffe model of Deep Compression: two 5x5
 * convolutions, max pooling, 800-500-10) with SGD (lr 0.02, momentum 0.9,
 * weight decay 5e-4, batch 64), then a fraction of an epoch of a conv-heavy
 * network with batch norm, and prints seconds, samples per second and the
 * test accuracy after each run (evaluation is not timed). OpenBLAS runs with
 * the given thread count. With no dataset installed it prints SKIP.
 *
 *   bench_train [-t THREADS] [-e LENET5_EPOCHS] [-c CNN_EPOCHS] [-a ARCH] [-d cpu|gpu]
 *     -t  threads (default 2)
 *     -e  LeNet-5 epochs (default 1; 0 skips)
 *     -c  epochs of the CNN, fractional (default 0.1; 0 skips)
 *     -a  the CNN's architecture (default the cnn: example of train.h)
 *     -d  where the epochs run: the CPU (default) or the GPU (the trainer's
 *         device path, train/dev.c; SKIP with the reason without one)
 *     -D  the dataset (default fashion-mnist: Debian's; or an IDX folder)
 *
 * The PyTorch side of the comparison is measured by its own script; this
 * program reports the dcz side only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "train/tdev.h"
#include "train/train.h"

#define CNN_DEFAULT "cnn:c32k3-c32k3-p2-c64k3-c64k3-p2-c128k3-gap-f10"

/* Trains arch for epochs (the last one possibly partial, over a prefix of
 * the shuffled-anew data) and prints time and accuracy per epoch. */
static int run(const char *arch, double epochs, int threads, dcz_tdev *device, const dcz_dataset *train,
               const dcz_dataset *test)
{
    char err[256];
    dcz_net *net = NULL;
    if (dcz_net_create_arch(arch, 1, &net, err, sizeof err) != DCZ_OK) {
        fprintf(stderr, "bench_train: %s\n", err);
        return 1;
    }
    dcz_sgd opt = { .lr = 0.02f, .momentum = 0.9f, .weight_decay = 5e-4f, .batch = 64,
                    .train_biases = 1, .train_weights = 1, .device = device };
    dcz_rng rng;
    dcz_rng_seed(&rng, 7);
    if (device) printf("%s: %zu parameters, on the GPU, batch %d\n", arch, dcz_net_param_count(net), opt.batch);
    else printf("%s: %zu parameters, %d threads, batch %d\n", arch, dcz_net_param_count(net), threads, opt.batch);
    int rc = 0;
    for (int e = 0; epochs - e > 1e-9; e++) {
        double frac = epochs - e < 1.0 ? epochs - e : 1.0;
        dcz_dataset part = *train;
        part.n = (size_t)(frac * (double)train->n);
        if (part.n == 0) break;
        float loss = 0;
        double t0 = bench_now();
        dcz_status st = dcz_train_epoch(net, &part, &opt, &rng, NULL, NULL, &loss);
        double dt = bench_now() - t0;
        if (st != DCZ_OK) {
            fprintf(stderr, "bench_train: training failed: %s%s%s\n", dcz_status_str(st), device ? ": " : "",
                    device ? device->err : "");
            rc = 1;
            break;
        }
        double acc = 0;
        st = dcz_net_evaluate(net, test, &acc);
        if (st != DCZ_OK) {
            fprintf(stderr, "bench_train: evaluation failed: %s\n", dcz_status_str(st));
            rc = 1;
            break;
        }
        printf("  epoch %d: %zu samples in %.2f s, %.0f samples/s, loss %.4f, "
               "test accuracy %.4f\n", e + 1, part.n, dt, (double)part.n / dt, loss, acc);
        fflush(stdout);
    }
    dcz_net_free(net);
    return rc;
}

int main(int argc, char **argv)
{
    int threads = 2;
    double lenet_epochs = 1, cnn_epochs = 0.1;
    const char *cnn = CNN_DEFAULT, *where = "cpu", *data = "fashion-mnist";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 < argc && strcmp(a, "-t") == 0) threads = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(a, "-e") == 0) lenet_epochs = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(a, "-c") == 0) cnn_epochs = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(a, "-a") == 0) cnn = argv[++i];
        else if (i + 1 < argc && strcmp(a, "-d") == 0) where = argv[++i];
        else if (i + 1 < argc && strcmp(a, "-D") == 0) data = argv[++i];
        else {
            fprintf(stderr, "usage: bench_train [-t THREADS] [-e LENET5_EPOCHS] "
                    "[-c CNN_EPOCHS] [-a ARCH] [-d cpu|gpu] [-D DATA]\n");
            return 1;
        }
    }
    dcz_tdev *device = NULL;
    char why[256];
    if (strcmp(where, "gpu") == 0 && dcz_tdev_open_cuda(0, &device, why, sizeof why) != DCZ_OK) {
        printf("bench_train: SKIP the GPU (%s)\n", why);
        return 0;
    }
    if (threads < 1) threads = 1;
    char err[256];
    dcz_dataset train = { 0 }, test = { 0 };
    if (dcz_data_load(data, DCZ_SPLIT_TRAIN, &train, err, sizeof err) != DCZ_OK ||
        dcz_data_load(data, DCZ_SPLIT_TEST, &test, err, sizeof err) != DCZ_OK) {
        printf("bench_train: SKIP (%s)\n", err);
        dcz_dataset_free(&train);
        return 0;
    }
    dcz_train_set_threads(threads);
    printf("training speed on Fashion-MNIST (%zu training samples)\n", train.n);
    int rc = 0;
    if (lenet_epochs > 0) rc |= run("lenet5", lenet_epochs, threads, device, &train, &test);
    if (cnn_epochs > 0 && rc == 0) rc |= run(cnn, cnn_epochs, threads, device, &train, &test);
    dcz_tdev_close(device);
    dcz_dataset_free(&train);
    dcz_dataset_free(&test);
    return rc;
}
