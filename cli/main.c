/* main.c: the dcz command: picks the verb and runs it. docs/CLI.md is the
 * manual; exit codes are listed in cli.h and there.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "runtime/tool.h"
#include "train/train.h"

typedef struct verb {
    const char *name;
    int (*fn)(verb_ctx *);
    const char *what;
} verb;

static const verb verbs[] = {
    { "train", cmd_train, "train a network from scratch (dense fp32)" },
    { "import", cmd_import, "read an ONNX model into a .dcz" },
    { "prune", cmd_prune, "magnitude pruning, iterative with retraining when --data is given" },
    { "quantize", cmd_quantize, "weight sharing: k-means codebooks, fine-tuned with --data" },
    { "encode", cmd_encode, "Huffman-code the index and position streams" },
    { "compress", cmd_compress, "prune, quantize and encode with Deep Compression defaults" },
    { "sensitivity", cmd_sensitivity, "accuracy with each layer alone pruned or shared, on held-out data" },
    { "plot", cmd_plot, "figures: weight histograms, kept weights, size waterfall, sensitivity" },
    { "eval", cmd_eval, "test accuracy of a .dcz, computed by libdcz" },
    { "info", cmd_info, "per-layer table, stream statistics and size waterfall" },
    { "calibrate", cmd_calibrate, "INT8 or fixed-point scales from calibration data (integer execution)" },
    { "run", cmd_run, "class scores for images or samples" },
    { "bench", cmd_bench, "latency of a .dcz in libdcz: load, then runs (min/median/p99)" },
    { "export", cmd_export, "write a .dcz of any stage as a dense fp32 ONNX model" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: dcz VERB [options] IN -o OUT\n\nverbs:\n");
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++) fprintf(f, "  %-12s %s\n", verbs[i].name, verbs[i].what);
    fprintf(f, "\n'dcz VERB --help' lists a verb's options; 'dcz --version' the version.\n"
               "Exit codes: 0 success, 1 usage, 2 bad input, 3 I/O failure, 4 device, 5 internal.\n");
}

int main(int argc, char **argv)
{
    dcz_train_blas_one_thread();
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        char mpi[256], gpu[320];
        dcz_backend_describe(gpu, sizeof gpu);
        printf("dcz %s (.dcz format %d.%d; CPU runtime, %s kernels on this machine)\n%s\n%s\n",
               DCZ_VERSION_STRING, DCZ_FMT_MAJOR, DCZ_FMT_MINOR, cli_kernels_name(0, DCZ_CAP_NATIVE), gpu,
               dcz_dist_describe(mpi, sizeof mpi));
        return EXIT_OK;
    }
    char help_flag[] = "--help";
    if (strcmp(argv[1], "help") == 0 && argc == 3) {   /* dcz help VERB: dcz VERB --help */
        argv[1] = argv[2];
        argv[2] = help_flag;
    } else if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    /* the command line, for provenance: argv[0] is left out so the record
     * does not depend on where dcz was installed, and --dry-run so that a
     * dry run records (and so measures) the command of the real run */
    size_t len = 4;
    for (int i = 1; i < argc; i++) len += strlen(argv[i]) + 1;
    char *cmdline = malloc(len);
    if (!cmdline) return EXIT_INTERNAL;
    strcpy(cmdline, "dcz");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dry-run") == 0) continue;
        strcat(cmdline, " ");
        strcat(cmdline, argv[i]);
    }
    for (char *p = cmdline; *p; p++)
        if (*p == '\n') *p = ' ';
    cli_install_signals();
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++) {
        if (strcmp(argv[1], verbs[i].name) != 0) continue;
        /* under mpirun or srun: every rank runs the verb, rank 0 reports
         * and writes (cli_join) */
        dcz_dist *dist = NULL;
        char why[512];
        if (dcz_dist_open(&argc, &argv, &dist, why, sizeof why) != DCZ_OK) {
            cli_error("cannot join the MPI job: %s (run dcz without mpirun, or check the launcher)", why);
            dcz_dist_close(dist, EXIT_IO);
            free(cmdline);
            return EXIT_IO;
        }
        cli_join(dcz_dist_rank(dist), dcz_dist_size(dist));
        verb_ctx v;
        memset(&v, 0, sizeof v);
        v.verb = verbs[i].name;
        v.argc = argc - 1;
        v.argv = argv + 1;
        v.cmdline = cmdline;
        v.comm = dcz_dist_comm(dist);
        v.dist = dist;
        v.temperature = NAN;   /* --temperature not given */
        const double t0 = cli_now();
        int rc = verbs[i].fn(&v);
        if (rc == EXIT_OK) cli_note_job(&v, cli_now() - t0);
        else if (dcz_dist_error(dist)[0]) cli_error("%s", dcz_dist_error(dist));   /* MPI's own reason */
        cli_ctx_free(&v);
        free(cmdline);
        dcz_dist_close(dist, rc);
        return rc;
    }
    free(cmdline);
    const char *names[sizeof verbs / sizeof *verbs];
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++) names[i] = verbs[i].name;
    const char *near = cli_closest(argv[1], names, (int)(sizeof verbs / sizeof *verbs));
    if (near) cli_error("unknown verb '%s' (did you mean '%s'?)", argv[1], near);
    else cli_error("unknown verb '%s'", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
