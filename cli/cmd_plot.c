/* cmd_plot.c: dcz plot, figures of a model and its compression (plot/).
 *
 * Kinds: weights (histogram of a layer's kept weights in one or more
 * files, shared values marked: the paper's Figures 4 and 5), sparsity (the
 * layer's kept positions as an image), waterfall (file size and accuracy
 * by recorded stage), sensitivity and sharing (the sensitivity scan's
 * curves by layer: the paper's Figure 6), calibration (a layer's input
 * histogram with each method's int8 threshold).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/calibrate.h"
#include "cli/cli.h"
#include "plot/figure.h"

#define BINS 80
#define MAX_FILES 8

/* The calibration figure's thresholds, as its legend gives them. */
typedef struct plot_thresholds {
    int n;
    const char *name[4];
    double value[4];
    char label[4][128];
} plot_thresholds;

typedef struct plot_ctx {
    verb_ctx *v;
    const char *layer;
    int width, height;
    scan_opts scan;
    plot_thresholds *thresholds;   /* filled by the calibration kind */
} plot_ctx;

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Layer `name` with weights in d, or NULL after a usage error. */
static const dcz_doc_layer *find_layer(const verb_ctx *v, const dcz_doc *d, const char *path, const char *name)
{
    const char *names[DCZ_MAX_LAYERS];
    int n = 0;
    for (uint32_t i = 0; i < d->nlayers; i++) {
        if (d->layers[i].ntensors != 2) continue;
        if (strcmp(d->layers[i].name, name) == 0) return &d->layers[i];
        if (n < DCZ_MAX_LAYERS) names[n++] = d->layers[i].name;
    }
    cli_no_such_layer(v, "layer", name, names, n, path);
    return NULL;
}

static int kept(const dcz_doc_tensor *w, size_t i) { return w->mask ? w->mask[i] != 0 : 1; }

/* A kept weight the histogram counts: a finite one. */
static int counted(const dcz_doc_tensor *w, size_t i) { return kept(w, i) && isfinite(w->values[i]); }

/* Histograms of the layer's kept weights in every file, over their common
 * range, each file's shared values marked. */
static int plot_weights(const plot_ctx *c, dcz_doc **docs, int n, dcz_fig **out)
{
    const dcz_doc_tensor *w[MAX_FILES];
    double lo = INFINITY, hi = -INFINITY;
    for (int k = 0; k < n; k++) {
        const dcz_doc_layer *l = find_layer(c->v, docs[k], c->v->pos[k], c->layer);
        if (!l) return EXIT_USAGE;
        w[k] = &l->t[0];
        for (size_t i = 0; i < w[k]->n; i++)
            if (counted(w[k], i)) {
                lo = fmin(lo, w[k]->values[i]);
                hi = fmax(hi, w[k]->values[i]);
            }
    }
    if (!(lo <= hi)) {
        cli_error("plot: %s has no finite kept weight in %s", c->layer, n > 1 ? "these files" : c->v->pos[0]);
        return EXIT_BAD_INPUT;
    }
    const double m = fmax(fabs(lo), fabs(hi));
    if (!(hi - lo > m * 1e-9)) {   /* one value: a range around it */
        lo -= m > 0 ? m * 0.1 : 1;
        hi += m > 0 ? m * 0.1 : 1;
    }
    double edges[BINS + 1], h[MAX_FILES][BINS], top = 1;
    for (int b = 0; b <= BINS; b++) edges[b] = lo + (hi - lo) * b / BINS;
    for (int k = 0; k < n; k++) {
        memset(h[k], 0, sizeof h[k]);
        for (size_t i = 0; i < w[k]->n; i++) {
            if (!counted(w[k], i)) continue;
            const double b = floor((w[k]->values[i] - lo) / (hi - lo) * BINS);
            h[k][b < 0 ? 0 : b >= BINS ? BINS - 1 : (int)b]++;
        }
        for (int b = 0; b < BINS; b++) top = fmax(top, h[k][b]);
    }
    char title[160];
    snprintf(title, sizeof title, "Weights of %s%s", c->layer, n > 1 ? ", stage by stage" : "");
    dcz_status s = dcz_fig_create(c->width, c->height, title, "weight value", "weights per bin", out);
    if (s != DCZ_OK) return cli_fail(c->v, s, "the figure");
    dcz_fig_axes(*out, lo, hi, 0, top * 1.08, 0);
    for (int k = 0; k < n; k++) {
        char label[128], stage[64] = "";
        if (docs[k]->nstages) stage_get(docs[k]->stages[docs[k]->nstages - 1], "stage", stage, sizeof stage);
        snprintf(label, sizeof label, "%s%s%s%s", base_name(c->v->pos[k]), *stage ? " (" : "", stage, *stage ? ")" : "");
        dcz_fig_bars(*out, edges, h[k], BINS, label);
        if (w[k]->enc == DCZ_ENC_CODEBOOK) {
            double cb[256];
            for (uint32_t e = 0; e < w[k]->k && e < 256; e++) cb[e] = w[k]->codebook[e];
            snprintf(label, sizeof label, "%s: shared values (%u)", base_name(c->v->pos[k]), w[k]->k);
            dcz_fig_vlines(*out, cb, (int)w[k]->k, label);
        }
    }
    return -1;
}

/* The layer's kept positions as an image: rows of the weight matrix
 * (output channels) bottom to top, columns left to right; a pixel covers a
 * block when the matrix is larger than the plot, darker as more is kept. */
static int plot_sparsity(const plot_ctx *c, const dcz_doc *d, dcz_fig **out)
{
    const dcz_doc_layer *l = find_layer(c->v, d, c->v->pos[0], c->layer);
    if (!l) return EXIT_USAGE;
    const dcz_doc_tensor *w = &l->t[0];
    const size_t rows = w->dims[0], cols = w->n / rows;
    const size_t br = (rows + (size_t)c->height - 1) / (size_t)c->height;
    const size_t bc = (cols + (size_t)c->width - 1) / (size_t)c->width;
    const int ir = (int)((rows + br - 1) / br), ic = (int)((cols + bc - 1) / bc);
    uint8_t *g = malloc((size_t)ir * (size_t)ic);
    uint32_t *cnt = calloc((size_t)ir * (size_t)ic, sizeof *cnt);
    if (!g || !cnt) {
        free(g);
        free(cnt);
        return cli_fail(c->v, DCZ_ERR_NOMEM, "the figure");
    }
    size_t nk = 0;
    for (size_t i = 0; i < w->n; i++)
        if (kept(w, i) && w->values[i] != 0) {
            nk++;
            cnt[(i / cols / br) * (size_t)ic + (i % cols) / bc]++;
        }
    for (int r = 0; r < ir; r++)   /* image row 0 is the top: the last block row */
        for (int k = 0; k < ic; k++)
            g[(size_t)r * ic + k] =
                (uint8_t)(255 - 255.0 * cnt[(size_t)(ir - 1 - r) * ic + k] / (double)(br * bc) + 0.5);
    char title[200];
    snprintf(title, sizeof title, "Kept weights of %s: %.1f%% of %zu (black: kept)", c->layer,
             100.0 * (double)nk / (double)w->n, w->n);
    dcz_status s = dcz_fig_create(c->width, c->height, title, "input (column of the weight matrix)",
                                  "output (row of the weight matrix)", out);
    if (s == DCZ_OK) {
        dcz_fig_image(*out, g, ir, ic);
        dcz_fig_axes(*out, 0, (double)cols, 0, (double)rows, 0);
    }
    free(g);
    free(cnt);
    return s == DCZ_OK ? -1 : cli_fail(c->v, s, "the figure");
}

/* File size (bars, logarithmic) and accuracy (line, right axis) of every
 * recorded stage. */
static int plot_waterfall(const plot_ctx *c, const dcz_doc *d, dcz_fig **out)
{
    enum { MAXS = 64 };
    const char *names[MAXS];
    char name[MAXS][32];
    double x[MAXS], kb[MAXS], acc[MAXS], edges[2 * MAXS + 1], h[2 * MAXS];
    int n = 0, have_acc = 0;
    double lo = INFINITY, hi = 0;
    for (uint32_t i = 0; i < d->nstages && n < MAXS; i++) {
        char b[64] = "", a[64] = "";
        if (!stage_get(d->stages[i], "file_bytes", b, sizeof b) || atof(b) <= 0) continue;
        stage_get(d->stages[i], "stage", name[n], sizeof name[n]);
        names[n] = name[n];
        kb[n] = atof(b) / 1000;
        acc[n] = stage_get(d->stages[i], "accuracy", a, sizeof a) ? atof(a) : NAN;
        acc[n] = acc[n] >= 0 && acc[n] <= 1 ? acc[n] * 100 : NAN;   /* a record's accuracy is a fraction */
        have_acc |= isfinite(acc[n]);
        x[n] = n;
        lo = fmin(lo, kb[n]);
        hi = fmax(hi, kb[n]);
        n++;
    }
    if (n == 0 && d->nstages == 0) {
        cli_error("plot: %s holds no stage records (a file written with --strip keeps none): no waterfall to "
                  "draw; plot a file of the same run written without --strip", c->v->pos[0]);
        return EXIT_BAD_INPUT;
    }
    if (n == 0) {
        cli_error("plot: %s records no stage with its size (files written by dcz train, prune, quantize, "
                  "encode or compress do)", c->v->pos[0]);
        return EXIT_BAD_INPUT;
    }
    for (int i = 0; i < n; i++) {
        edges[2 * i] = i - 0.35;
        edges[2 * i + 1] = i + 0.35;
        h[2 * i] = kb[i];
        h[2 * i + 1] = 0;
    }
    edges[2 * n] = n + 0.65;
    dcz_status s = dcz_fig_create(c->width, c->height, "File size and accuracy by stage", "stage",
                                  "file size (KB, logarithmic)", out);
    if (s != DCZ_OK) return cli_fail(c->v, s, "the figure");
    dcz_fig_axes_named(*out, names, n, pow(10, floor(log10(lo / 2))), pow(10, ceil(log10(hi * 1.5))), 1);
    dcz_fig_bars(*out, edges, h, 2 * n - 1, "file size (KB)");
    if (have_acc) {
        double alo = INFINITY, ahi = -INFINITY;
        for (int i = 0; i < n; i++)
            if (isfinite(acc[i])) { alo = fmin(alo, acc[i]); ahi = fmax(ahi, acc[i]); }
        const double pad = fmax(0.5, (ahi - alo) * 0.3);
        dcz_fig_axis_right(*out, "test accuracy (%)", alo - pad, ahi + pad);
        dcz_fig_line(*out, x, acc, n, "test accuracy (%)");
    }
    return -1;
}

/* The histogram of |x| over the input of a layer on the calibration
 * samples (the first 1,000 training samples, as dcz calibrate takes by
 * default), and the int8 threshold each method chooses. */
static int plot_calibration(const plot_ctx *c, dcz_doc *d, dcz_fig **out)
{
    const dcz_doc_layer *l = find_layer(c->v, d, c->v->pos[0], c->layer);
    if (!l) return EXIT_USAGE;
    dcz_dataset train;
    int rc = stage_load_data(c->v, DCZ_SPLIT_TRAIN, &train);
    if (rc != -1) return rc;
    enum { SAMPLES = 1000, SHOWN = 128 };
    const size_t n = train.n < SAMPLES ? train.n : SAMPLES;
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    dcz_cal_collect col;
    memset(&col, 0, sizeof col);
    dcz_status s = idx ? DCZ_OK : DCZ_ERR_NOMEM;
    for (size_t i = 0; i < n && idx; i++) idx[i] = i;
    if (s == DCZ_OK) {
        progress p;
        progress_start(&p, c->v, "statistics", 2 * n);
        s = dcz_cal_collect_stats(d, &train, idx, n, 100, progress_cb, &p, &col);
        progress_end(&p);
    }
    free(idx);
    const int rc_data = s != DCZ_OK ? cli_fail_data(c->v, s, "the activation statistics", &train, NULL) : -1;
    dcz_dataset_free(&train);
    if (rc_data != -1) return rc_data;
    const dcz_cal_stats *st = &col.stats[l->in[0]];
    double h[SHOWN];
    for (int b = 0; b < SHOWN; b++) {
        h[b] = 0;
        for (int k = 0; k < DCZ_CAL_BINS / SHOWN; k++) h[b] += (double)st->bins[b * (DCZ_CAL_BINS / SHOWN) + k];
    }
    static const dcz_cal_method methods[] = { DCZ_CAL_MINMAX, DCZ_CAL_PERCENTILE, DCZ_CAL_MSE, DCZ_CAL_ENTROPY };
    static const char *const names[] = { "minmax", "percentile 99.99", "mse", "entropy" };
    dcz_cal_choice ch[4];
    double thr[4];
    int nthr = 0, which[4];
    for (int m = 0; m < 4; m++)
        if (dcz_cal_choose(st, methods[m], 99.99, 127, 0, &ch[nthr]) == DCZ_OK) {
            thr[nthr] = ch[nthr].threshold;
            which[nthr++] = m;
        }
    /* thresholds printed with the digits that tell them apart: "1" and
     * "0.9961", never two "1" of which one clips */
    const int digits = dcz_fig_distinct_digits(thr, nthr);
    char label[4][128];
    const char *labels[4];
    for (int i = 0; i < nthr; i++) {
        if (ch[i].entropy_threshold > 0)   /* the guard took mse's */
            snprintf(label[i], sizeof label[i], "%s: %.*g (mse's: its own %.*g errs more), %.2f%% clipped",
                     names[which[i]], digits, ch[i].threshold, digits, ch[i].entropy_threshold, ch[i].clipped * 100);
        else
            snprintf(label[i], sizeof label[i], "%s: %.*g, %.2f%% clipped", names[which[i]], digits, ch[i].threshold,
                     ch[i].clipped * 100);
        labels[i] = label[i];
    }
    char title[160];
    snprintf(title, sizeof title, "Input of %s on %zu calibration samples: int8 thresholds", c->layer, n);
    s = dcz_fig_create(c->width, c->height, title, "|activation| (input value of the layer)",
                       "values per bin (logarithmic)", out);
    if (s == DCZ_OK)
        dcz_fig_abs_histogram(*out, h, SHOWN, st->amax, thr, labels, nthr, "|x|, all calibration values");
    if (s == DCZ_OK && c->thresholds) {   /* for --json: what the legend says */
        c->thresholds->n = nthr;
        for (int i = 0; i < nthr; i++) {
            c->thresholds->name[i] = names[which[i]];
            c->thresholds->value[i] = thr[i];
            snprintf(c->thresholds->label[i], sizeof c->thresholds->label[i], "%s", label[i]);
        }
    }
    dcz_cal_collect_free(&col);
    return s == DCZ_OK ? -1 : cli_fail(c->v, s, "the figure");
}

/* The scan's curves, by layer: accuracy against sparsity (bits 0) or
 * codebook bits. */
static int plot_scan(const plot_ctx *c, int bits, dcz_fig **out)
{
    dcz_sens_plan plan;
    dcz_sens_report rep;
    int rc = scan_plan(c->v, &c->scan, &plan);
    if (rc == -1 && (bits ? plan.nbits : plan.nsparsity) == 0) {
        cli_usage_error(c->v, "no %s levels to plot", bits ? "bits" : "sparsity");
        rc = EXIT_USAGE;
    }
    if (rc == -1) rc = scan(c->v, c->v->pos[0], &c->scan, &plan, &rep);
    if (rc != -1) return rc;
    const int n = bits ? plan.nbits : plan.nsparsity;
    double x[DCZ_SENS_MAX_LEVELS], y[DCZ_SENS_MAX_LEVELS], lo = rep.baseline * 100, hi = lo;
    for (int l = 0; l < rep.nlayers; l++)
        for (int i = 0; i < n; i++) {
            const double a = (bits ? rep.layers[l].share_acc[i] : rep.layers[l].prune_acc[i]) * 100;
            lo = fmin(lo, a);
            hi = fmax(hi, a);
        }
    char title[160];
    snprintf(title, sizeof title, "Sensitivity to %s, one layer at a time (%s)", bits ? "weight sharing" : "pruning",
             bits ? "no fine-tuning" : "no retraining");
    dcz_status s = dcz_fig_create(c->width, c->height, title,
                                  bits ? "codebook bits of the layer" : "sparsity of the layer (%)",
                                  "validation accuracy (%)", out);
    if (s == DCZ_OK) {
        if (!bits) dcz_fig_legend_lower_left(*out);   /* the curves fall to the right */
        for (int i = 0; i < n; i++) x[i] = bits ? plan.bits[i] : plan.sparsity[i] * 100;
        dcz_fig_axes(*out, x[0] - (bits ? 0.5 : 2), x[n - 1] + (bits ? 0.5 : 2), fmax(0, lo - 2), fmin(100, hi + 2), 0);
        for (int l = 0; l < rep.nlayers; l++) {
            for (int i = 0; i < n; i++) y[i] = (bits ? rep.layers[l].share_acc[i] : rep.layers[l].prune_acc[i]) * 100;
            dcz_fig_line(*out, x, y, n, rep.layers[l].name);
        }
    }
    dcz_sens_report_free(&rep);
    return s == DCZ_OK ? -1 : cli_fail(c->v, s, "the figure");
}

int cmd_plot(verb_ctx *v)
{
    plot_ctx c;
    plot_thresholds thresholds;
    memset(&c, 0, sizeof c);
    memset(&thresholds, 0, sizeof thresholds);
    c.v = v;
    c.thresholds = &thresholds;
    c.width = 900;
    c.height = 600;
    scan_opts_init(&c.scan);
    const char *kind = NULL;
    const opt_spec specs[] = {
        { "kind", 0, OPT_STR, &kind, "weights, sparsity, waterfall, sensitivity, sharing or calibration" },
        { "layer", 0, OPT_STR, &c.layer, "the layer of weights, sparsity and calibration" },
        { "width", 0, OPT_INT, &c.width, "figure width, pixels (default 900)" },
        { "height", 0, OPT_INT, &c.height, "figure height, pixels (default 600)" },
        SCAN_SPECS(c.scan),
        { NULL, 0, OPT_FLAG, NULL, NULL }
    };
    v->usage = "dcz plot IN [IN ...] --kind KIND [--layer NAME] [--data DATA] -o FIG.png";
    v->summary = "Figures as PNG. weights: histogram of a layer's kept weights in each IN (up\n"
                 "to 8: the stages of one model), shared values marked (Deep Compression,\n"
                 "Figures 4 and 5). sparsity: which weights of a layer are kept. waterfall: file\n"
                 "size and accuracy of every stage IN records. sensitivity, sharing: the\n"
                 "sensitivity scan's accuracy by layer against sparsity or codebook bits\n"
                 "(Figure 6; needs --data, options as dcz sensitivity). calibration: the\n"
                 "histogram of a layer's input on calibration samples of --data, with the\n"
                 "int8 threshold of each method.";
    int rc = cli_parse(v, specs, 1, MAX_FILES);
    if (rc != -1) return rc;
    static const char *const kinds[] = { "weights", "sparsity", "waterfall", "sensitivity", "sharing", "calibration" };
    enum { WEIGHTS, SPARSITY, WATERFALL, SENSITIVITY, SHARING, CALIBRATION };
    int k = -1;
    for (int i = 0; i < 6 && kind; i++)
        if (strcmp(kind, kinds[i]) == 0) k = i;
    if (k < 0) {
        cli_usage_error(v, kind ? "--kind %s: not one of weights, sparsity, waterfall, sensitivity, sharing, calibration"
                                : "give --kind: weights, sparsity, waterfall, sensitivity, sharing or calibration", kind);
        return EXIT_USAGE;
    }
    if (!v->c.out) { cli_usage_error(v, "no output file: give -o FIG.png"); return EXIT_USAGE; }
    if (c.width < DCZ_FIG_MIN || c.width > DCZ_FIG_MAX || c.height < DCZ_FIG_MIN || c.height > DCZ_FIG_MAX) {
        cli_usage_error(v, "--width and --height must be from %d to %d pixels", DCZ_FIG_MIN, DCZ_FIG_MAX);
        return EXIT_USAGE;
    }
    const int layered = k == WEIGHTS || k == SPARSITY || k == CALIBRATION, reads_data = k >= SENSITIVITY;
    if (layered && !c.layer) { cli_usage_error(v, "--kind %s needs --layer NAME", kinds[k]); return EXIT_USAGE; }
    if (k != WEIGHTS && v->npos > 1) { cli_usage_error(v, "--kind %s takes one file", kinds[k]); return EXIT_USAGE; }
    if (!reads_data && v->c.data) {
        cli_usage_error(v, "--kind %s reads no data: leave out --data", kinds[k]);
        return EXIT_USAGE;
    }
    if (k == CALIBRATION && !v->c.data) { cli_usage_error(v, "--kind calibration needs --data"); return EXIT_USAGE; }
    scan_opts dflt;
    scan_opts_init(&dflt);
    if (k != SENSITIVITY && k != SHARING && (c.scan.sparsity || c.scan.bits || c.scan.validation != dflt.validation ||
                                             c.scan.iters != dflt.iters || c.scan.block != dflt.block)) {
        cli_usage_error(v, "--kind %s draws no scan: --sparsity-levels, --bits-levels, --validation, "
                           "--kmeans-iters and --block go with --kind sensitivity or sharing", kinds[k]);
        return EXIT_USAGE;
    }
    dcz_doc *docs[MAX_FILES] = { NULL };
    dcz_fig *fig = NULL;
    for (int i = 0; i < v->npos && rc == -1 && (k <= WATERFALL || k == CALIBRATION); i++)
        rc = stage_load_doc(v, v->pos[i], &docs[i]);
    if (rc == -1) {
        if (k == WEIGHTS) rc = plot_weights(&c, docs, v->npos, &fig);
        else if (k == SPARSITY) rc = plot_sparsity(&c, docs[0], &fig);
        else if (k == WATERFALL) rc = plot_waterfall(&c, docs[0], &fig);
        else if (k == CALIBRATION) rc = plot_calibration(&c, docs[0], &fig);
        else rc = plot_scan(&c, k == SHARING, &fig);
    }
    if (rc == -1) {
        uint8_t *png = NULL;
        size_t len = 0;
        int err = 0;
        dcz_status s = dcz_fig_png(fig, &png, &len);
        if (s != DCZ_OK) rc = cli_fail(v, s, "encoding the figure");
        else if ((s = cli_write_file(v->c.out, png, len, &err)) != DCZ_OK) rc = cli_io_fail(v, v->c.out, s, err, 1);
        free(png);
        if (rc == -1) {
            cli_note(v, "plot: %s: %s, %dx%d pixels, %zu bytes", v->c.out, kinds[k], c.width, c.height, len);
            if (v->c.json) {
                json_out j;
                json_begin(&j, cli_report(v));
                json_str(&j, "output", v->c.out);
                json_str(&j, "kind", kinds[k]);
                json_int(&j, "width", c.width);
                json_int(&j, "height", c.height);
                json_int(&j, "file_bytes", (long long)len);
                if (k == CALIBRATION) {
                    json_key_arr(&j, "thresholds");
                    for (int i = 0; i < thresholds.n; i++) {
                        json_obj(&j);
                        json_str(&j, "method", thresholds.name[i]);
                        json_num(&j, "threshold", thresholds.value[i]);
                        json_str(&j, "label", thresholds.label[i]);
                        json_close_obj(&j);
                    }
                    json_close_arr(&j);
                }
                json_end(&j);
            }
            rc = EXIT_OK;
        }
    }
    dcz_fig_free(fig);
    for (int i = 0; i < MAX_FILES; i++) dcz_doc_free(docs[i]);
    return rc;
}
