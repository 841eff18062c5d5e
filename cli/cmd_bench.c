/* cmd_bench.c: the bench verb. Times one .dcz the way a program linking
 * libdcz would run it: the load (container checks, Huffman decoding into
 * the execution form) apart from the runs, then dcz_run on random input
 * after a warm-up, reported as min / median / p90 / p99 / max over the
 * timed runs; with --per-layer, as many runs again with each layer timed
 * (dcz_run_layer_times), each layer's median and share. Timings are
 * measurements, never pass/fail.
 *
 * Checked by tests/cli/bench.sh (the fields and their order, not speed).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "runtime/tool.h"

/* The sparse kernels dcz_run dispatches to here (runtime/cpu/f32/kernels_spmv.c,
 * kernels_spmm.c, kernels_lanes.c). */
static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the q-quantile of sorted v (nearest rank) */
static double quantile(const double *v, size_t n, double q)
{
    size_t k = (size_t)ceil(q * (double)n);
    if (k < 1) k = 1;
    if (k > n) k = n;
    return v[k - 1];
}

int cmd_bench(verb_ctx *v)
{
    int batch = 1, runs = 200, warmup = 20, loads = 5, fp32 = 0, reference = 0, per_layer = 0;
    double max_work = 0;
    const char *isa = NULL, *plan = NULL;
    const opt_spec specs[] = {
        { "batch", 0, OPT_INT, &batch, "samples per dcz_run (default 1)" },
        { "runs", 0, OPT_INT, &runs, "timed runs (default 200)" },
        { "warmup", 0, OPT_INT, &warmup, "untimed runs first (default 20)" },
        { "loads", 0, OPT_INT, &loads, "timed loads; the median is reported (default 5)" },
        { "fp32", 0, OPT_FLAG, &fp32, "run a calibrated model in floating point" },
        { "reference", 0, OPT_FLAG, &reference, "force the scalar reference kernels" },
        { "per-layer", 0, OPT_FLAG, &per_layer, "then each layer timed over as many runs: median, share (on a GPU: device time, no graph)" },
        MAX_WORK_SPEC(max_work),
        ISA_SPEC(isa),
        PLAN_SPEC(plan),
        { NULL, 0, OPT_FLAG, NULL, NULL }
    };
    v->usage = "dcz bench FILE [--batch N] [--threads T] [--runs R] [--isa LEVEL] [--plan measure] [--per-layer] [--json]";
    v->summary = "Latency of FILE in libdcz: the load (checks and Huffman decoding) timed\n"
                 "apart, then dcz_run on random input after a warm-up; prints min, median,\n"
                 "p90, p99 and max over the timed runs, in microseconds.";
    v->skip = CLI_NO_OUT | CLI_NO_DATA;
    int rc = cli_parse(v, specs, 1, 1);
    if (rc != -1) return rc;
    if (batch < 1 || runs < 1 || warmup < 0 || loads < 1) {
        cli_usage_error(v, "--batch, --runs and --loads must be at least 1, --warmup at least 0");
        return EXIT_USAGE;
    }
    dcz_options opt;
    if ((rc = cli_runtime_options(v, &opt)) != -1) return rc;
    if ((rc = cli_max_work(v, max_work, &opt)) != -1) return rc;
    if ((rc = cli_isa(v, isa, &opt)) != -1) return rc;
    if ((rc = cli_plan(v, plan, &opt)) != -1) return rc;
    opt.max_batch = (size_t)batch;   /* the batch a measured plan is timed at */
    if (fp32) opt.precision = DCZ_PRECISION_FP32;
    opt.force_reference = reference;
    uint8_t *buf;
    size_t len;
    int err;
    dcz_status s = cli_read_file(v->pos[0], &buf, &len, &err);
    if (s != DCZ_OK) return cli_io_fail(v, v->pos[0], s, err, 0);
    double *load_us = malloc((size_t)loads * sizeof *load_us);
    double *run_us = malloc((size_t)runs * sizeof *run_us);
    dcz_model *m = NULL;
    float *x = NULL, *y = NULL;
    uint64_t *times = NULL;          /* --per-layer: times[r nl + i], layer i of run r */
    double *layer_us = NULL, *col = NULL, total_us = 0;
    uint32_t nl = 0;
    rc = -1;
    if (!load_us || !run_us) { rc = cli_fail(v, DCZ_ERR_NOMEM, "the timings of --loads and --runs"); goto done; }
    for (int i = 0; i < loads; i++) {
        dcz_close(m);
        m = NULL;
        const double t0 = cli_now();
        s = dcz_open_memory(buf, len, &opt, &m);
        load_us[i] = (cli_now() - t0) * 1e6;
        if (s != DCZ_OK) {
            rc = cli_not_dcz(v, v->pos[0], buf, len);
            if (rc == -1) rc = cli_model_fail(v, v->pos[0], s);
            goto done;
        }
    }
    const char *device = cli_device_of(v, m);
    const int on_gpu = dcz_model_device(m) == DCZ_DEVICE_GPU;   /* the kernels named are the GPU's */
    const size_t in = dcz_input_size(m), out = dcz_output_size(m);
    /* what a program would time on a GPU: buffers its copies read at full speed */
    x = dcz_host_alloc(m, (size_t)batch * in * sizeof *x);
    y = dcz_host_alloc(m, (size_t)batch * out * sizeof *y);
    if (!x || !y) {
        char what[96];
        snprintf(what, sizeof what, "a batch of %d samples (%zu bytes; lower --batch)", batch,
                 (size_t)batch * (in + out) * sizeof *x);
        rc = cli_fail(v, DCZ_ERR_NOMEM, what);
        goto done;
    }
    dcz_rng rng;
    dcz_rng_seed(&rng, (uint64_t)v->c.seed);
    for (size_t i = 0; i < (size_t)batch * in; i++) x[i] = dcz_rng_uniform(&rng);
    for (int i = 0; i < warmup + runs; i++) {
        const double t0 = cli_now();
        s = dcz_run(m, x, (size_t)batch, y);
        const double us = (cli_now() - t0) * 1e6;
        if (s != DCZ_OK) {
            cli_error("bench: %s: run: %s", v->pos[0], dcz_status_str(s));
            rc = cli_exit_code(s, 1);
            goto done;
        }
        if (i >= warmup) run_us[i - warmup] = us;
    }
    /* --per-layer: as many runs again, each layer timed (times[r][i]) */
    nl = per_layer ? dcz_model_layer_count(m) : 0;
    times = nl ? calloc((size_t)runs * nl, sizeof *times) : NULL;
    layer_us = nl ? malloc((size_t)nl * sizeof *layer_us) : NULL;
    col = nl ? malloc((size_t)runs * sizeof *col) : NULL;
    if (nl && (!times || !layer_us || !col)) { rc = cli_fail(v, DCZ_ERR_NOMEM, "the times of --per-layer"); goto done; }
    for (int r = 0; r < runs && nl; r++)
        if ((s = dcz_run_layer_times(m, x, (size_t)batch, y, times + (size_t)r * nl)) != DCZ_OK) {
            rc = cli_fail(v, s, "timing each layer");
            goto done;
        }
    for (uint32_t i = 0; i < nl; i++) {
        for (int r = 0; r < runs; r++) col[r] = (double)times[(size_t)r * nl + i] / 1e3;
        qsort(col, (size_t)runs, sizeof *col, cmp_double);
        total_us += layer_us[i] = quantile(col, (size_t)runs, 0.5);
    }
    qsort(load_us, (size_t)loads, sizeof *load_us, cmp_double);
    qsort(run_us, (size_t)runs, sizeof *run_us, cmp_double);
    double mean = 0;
    for (int i = 0; i < runs; i++) mean += run_us[i];
    mean /= runs;
    const double med = quantile(run_us, (size_t)runs, 0.5);
    static const char *const schemes[] = { "fp32", "int8", "fixed8", "fixed16" };
    const char *scheme = schemes[dcz_model_scheme(m)];
    if (v->c.json) {
        json_out j;
        json_begin(&j, cli_report(v));
        json_str(&j, "file", v->pos[0]);
        json_int(&j, "file_bytes", (long long)len);
        json_str(&j, "device", device);
        json_str(&j, "scheme", scheme);
        json_str(&j, "kernels", strcmp(device, "gpu") ? cli_kernels_name(reference, opt.isa) : "cuda");
        json_int(&j, "batch", batch);
        json_int(&j, "threads", dcz_model_threads(m));
        json_int(&j, "warmup", warmup);
        json_int(&j, "runs", runs);
        json_num(&j, "load_us", quantile(load_us, (size_t)loads, 0.5));
        json_num(&j, "min_us", run_us[0]);
        json_num(&j, "median_us", med);
        json_num(&j, "p90_us", quantile(run_us, (size_t)runs, 0.9));
        json_num(&j, "p99_us", quantile(run_us, (size_t)runs, 0.99));
        json_num(&j, "max_us", run_us[runs - 1]);
        json_num(&j, "mean_us", mean);
        json_num(&j, "samples_per_s", med > 0 ? batch * 1e6 / med : 0);
        if (nl) {
            json_key_arr(&j, "layers");
            for (uint32_t i = 0; i < nl; i++) {
                dcz_layer_desc d;
                if (dcz_describe_layer(m, i, &d) != DCZ_OK) continue;
                json_obj(&j);
                json_str(&j, "name", d.name);
                json_str(&j, "op", dcz_op_get(d.op)->label);
                json_str(&j, "kernel", on_gpu ? d.gpu_kernel : d.kernel);
                json_int(&j, "out", (long long)d.width);
                json_num(&j, "median_us", layer_us[i]);
                json_num(&j, "share", total_us > 0 ? layer_us[i] / total_us : 0);
                json_close_obj(&j);
            }
            json_close_arr(&j);
        }
        json_end(&j);
    } else {
        FILE *f = cli_report(v);
        fprintf(f, "%s: %zu bytes, %s, %s (%s kernels), batch %d, %d warm-up + %d timed runs\n",
                v->pos[0], len, scheme, device, strcmp(device, "gpu") ? cli_kernels_name(reference, opt.isa) : "CUDA",
                batch, warmup, runs);
        fprintf(f, "load    %10.1f us (median of %d, Huffman decoding included)\n",
                quantile(load_us, (size_t)loads, 0.5), loads);
        fprintf(f, "run     min %.1f  median %.1f  p90 %.1f  p99 %.1f  max %.1f us\n", run_us[0], med,
                quantile(run_us, (size_t)runs, 0.9), quantile(run_us, (size_t)runs, 0.99),
                run_us[runs - 1]);
        fprintf(f, "        %.0f samples/s at the median\n", med > 0 ? batch * 1e6 / med : 0);
        if (nl) {
            fprintf(f, "\nper layer, median of %d runs (us; a fused activation, a sum or a depthwise layer run by bands counts in the layer that runs it):\n",
                    runs);
            fprintf(f, "%-24s %-16s %-30s %10s %10s %6s\n", "layer", "op", "kernel", "out", "us", "share");
            for (uint32_t i = 0; i < nl; i++) {
                dcz_layer_desc d;
                if (dcz_describe_layer(m, i, &d) != DCZ_OK) continue;
                fprintf(f, "%-24s %-16s %-30s %10zu %10.1f %5.1f%%\n", d.name, dcz_op_get(d.op)->label,
                        on_gpu ? d.gpu_kernel : d.kernel,
                        d.width, layer_us[i], total_us > 0 ? layer_us[i] / total_us * 100 : 0);
            }
            fprintf(f, "%-24s %-16s %-30s %10s %10.1f\n", "total", "", "", "", total_us);
        }
    }
    rc = EXIT_OK;
done:
    dcz_host_free(m, x);
    dcz_host_free(m, y);
    dcz_close(m);
    free(times);
    free(layer_us);
    free(col);
    free(buf);
    free(load_us);
    free(run_us);
    return rc;
}
