/* cmd_calibrate.c: the calibrate verb. From a float model and calibration
 * data, the table that makes the runtime run the model on integers (INT8,
 * or dynamic fixed point of 8 or 16 bits); or a table read from a text file.
 * Prints per layer what was chosen and how much it costs (SQNR against the
 * float outputs, the fraction of activations clipped), and the accuracy of
 * the written file measured by libdcz. --compare runs every method.
 *
 * Checked by tests/cli/calibrate.sh.
 */
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/calibrate.h"
#include "cli/cli.h"

/* ---- per-layer rules with word values ("fc*=minmax,*=entropy") --------------- */

#define MAX_WORD_RULES 16

typedef struct word_rules {
    int n;
    char pattern[MAX_WORD_RULES][64];
    char value[MAX_WORD_RULES][32];
} word_rules;

static int word_rules_parse(const char *text, word_rules *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    for (const char *p = text; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char item[128];
        if (n == 0 || n >= sizeof item) { snprintf(err, errlen, "empty or overlong rule in '%s'", text); return -1; }
        if (r->n == MAX_WORD_RULES) { snprintf(err, errlen, "more than %d rules", MAX_WORD_RULES); return -1; }
        memcpy(item, p, n);
        item[n] = 0;
        char *eq = strchr(item, '=');
        const char *pat = "*", *val = item;
        if (eq) { *eq = 0; pat = item; val = eq + 1; }
        if (!*pat || strlen(pat) >= sizeof r->pattern[0] || !*val || strlen(val) >= sizeof r->value[0]) {
            snprintf(err, errlen, "bad rule '%s'", item);
            return -1;
        }
        snprintf(r->pattern[r->n], sizeof r->pattern[0], "%s", pat);
        snprintf(r->value[r->n++], sizeof r->value[0], "%s", val);
        p = end ? end + 1 : p + n;
    }
    return 0;
}

static const char *word_rules_value(const word_rules *r, const char *name, const char *dflt)
{
    const char *v = dflt;
    for (int i = 0; i < r->n; i++)
        if (fnmatch(r->pattern[i], name, 0) == 0) v = r->value[i];
    return v;
}

/* "minmax", "mse", "entropy", "percentile" (99.99) or "percentile:P" */
static int method_parse(const char *s, dcz_cal_method *m, double *pct)
{
    *pct = 99.99;
    if (strcmp(s, "minmax") == 0) *m = DCZ_CAL_MINMAX;
    else if (strcmp(s, "mse") == 0) *m = DCZ_CAL_MSE;
    else if (strcmp(s, "entropy") == 0) *m = DCZ_CAL_ENTROPY;
    else if (strncmp(s, "percentile", 10) == 0) {
        *m = DCZ_CAL_PERCENTILE;
        if (s[10] == ':') {
            char *e;
            *pct = strtod(s + 11, &e);
            if (e == s + 11 || *e || !(*pct > 0 && *pct <= 100)) return -1;
        } else if (s[10]) {
            return -1;
        }
    } else {
        return -1;
    }
    return 0;
}

/* ---- the verb -------------------------------------------------------------------- */

typedef struct cal_opts {
    const char *scheme, *method, *granularity, *table, *save_table;
    int calib_batches, batch, calib_order, compare, force;
    int scheme_given;         /* --scheme on the command line */
} cal_opts;

typedef struct cal_run {
    dcz_doc *doc;             /* the calibrated document */
    dcz_cal_result *res;
    double acc;               /* test accuracy of the written bytes, or -1 */
    size_t bytes;
    char method[64];          /* as recorded */
} cal_run;

static void cal_run_free(cal_run *r)
{
    dcz_doc_free(r->doc);
    free(r->res);
    memset(r, 0, sizeof *r);
}

/* Per weighted layer configuration from the rules; a method or
 * granularity that does not parse, or a rule naming no weighted layer, is
 * a usage error. method_desc gets a summary ("entropy", or the rules). */
static int layer_configs(const verb_ctx *v, const dcz_doc *d, const dcz_cal_collect *c,
                         uint32_t scheme, const char *method_text, const char *gran_text,
                         dcz_cal_layer_cfg *cfg)
{
    word_rules mr, gr;
    char err[256];
    const int fixed = scheme != DCZ_SCHEME_INT8;
    if (word_rules_parse(method_text, &mr, err, sizeof err) ||
        word_rules_parse(gran_text, &gr, err, sizeof err)) {
        cli_usage_error(v, "%s", err);
        return EXIT_USAGE;
    }
    const word_rules *sets[2] = { &mr, &gr };
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < sets[s]->n; i++) {
            int hit = 0;
            for (uint32_t j = 0; j < c->count; j++)
                hit |= fnmatch(sets[s]->pattern[i], d->layers[c->layer[j]].name, 0) == 0;
            if (!hit) {
                const char *names[DCZ_MAX_LAYERS];
                int n = 0;
                for (uint32_t j = 0; j < c->count && n < DCZ_MAX_LAYERS; j++)
                    names[n++] = d->layers[c->layer[j]].name;
                cli_no_such_layer(v, s ? "granularity" : "method", sets[s]->pattern[i], names, n, NULL);
                return EXIT_USAGE;
            }
        }
    for (uint32_t j = 0; j < c->count; j++) {
        const char *name = d->layers[c->layer[j]].name;
        const char *m = word_rules_value(&mr, name, fixed ? "minmax" : "entropy");
        const char *g = word_rules_value(&gr, name, fixed ? "per-tensor" : "per-channel");
        if (method_parse(m, &cfg[j].method, &cfg[j].percentile) != 0) {
            cli_usage_error(v, "--method: '%s' is not minmax, percentile[:P], mse or entropy", m);
            return EXIT_USAGE;
        }
        if (strcmp(g, "per-channel") == 0) cfg[j].per_channel = 1;
        else if (strcmp(g, "per-tensor") == 0) cfg[j].per_channel = 0;
        else {
            cli_usage_error(v, "--granularity: '%s' is not per-channel or per-tensor", g);
            return EXIT_USAGE;
        }
    }
    return -1;
}

/* The calibration samples: the first batches * batch of the training split,
 * in an order shuffled by seed when seed is nonzero. */
static int calib_samples(const verb_ctx *v, const cal_opts *o, const dcz_dataset *train,
                         size_t **idx, size_t *n)
{
    size_t want = (size_t)o->calib_batches * (size_t)o->batch;
    if (want > train->n) {
        cli_note(v, "calibrate: the data has %zu training samples; using all of them", train->n);
        want = train->n;
    }
    *idx = malloc(want * sizeof **idx);
    if (!*idx) return cli_fail(v, DCZ_ERR_NOMEM, "calibration samples");
    for (size_t i = 0; i < want; i++) (*idx)[i] = i;
    if (o->calib_order) {
        dcz_rng rng;
        dcz_rng_seed(&rng, (uint64_t)o->calib_order);
        for (size_t i = want; i > 1; i--) {
            size_t j = dcz_rng_below(&rng, (uint32_t)i), t = (*idx)[i - 1];
            (*idx)[i - 1] = (*idx)[j];
            (*idx)[j] = t;
        }
    }
    *n = want;
    return -1;
}

static void print_layer_table(const verb_ctx *v, const dcz_doc *d, uint32_t scheme,
                              const dcz_cal_layer_cfg *cfg, const dcz_cal_result *res,
                              uint32_t count)
{
    FILE *f = cli_notes(v);
    if (!f) return;
    const int fixed = scheme != DCZ_SCHEME_INT8;
    const int bits = scheme == DCZ_SCHEME_FIXED16 ? 16 : 8;
    fprintf(f, "%-12s %-16s %-11s %12s %10s %-22s %9s\n", "layer", "method", "weights",
            "threshold", "clipped", fixed ? "input / weights Qm.n" : "input scale / weights",
            "SQNR dB");
    for (uint32_t j = 0; j < count; j++) {
        const dcz_cal_result *r = &res[j];
        char method[32], q[64];
        /* the method its input's scale came from (min-max on a residual path) */
        if (r->act.method == DCZ_CAL_PERCENTILE)
            snprintf(method, sizeof method, "percentile:%g", cfg[j].percentile);
        else if (r->act.entropy_threshold > 0)   /* the entropy guard took mse's */
            snprintf(method, sizeof method, "entropy>mse");
        else
            snprintf(method, sizeof method, "%s", dcz_cal_method_name(r->act.method));
        if (fixed) {
            /* Qm.n: m integer bits and n = fl fractional bits beside the sign */
            int m_in = bits - 1 - r->act.fl;
            if (r->w_fl_min == r->w_fl_max)
                snprintf(q, sizeof q, "Q%d.%d / Q%d.%d", m_in, r->act.fl, bits - 1 - r->w_fl_min, r->w_fl_min);
            else
                snprintf(q, sizeof q, "Q%d.%d / n %d..%d", m_in, r->act.fl, r->w_fl_min, r->w_fl_max);
        } else {
            snprintf(q, sizeof q, "%.3g / %.3g..%.3g", r->act.scale, r->w_scale_min, r->w_scale_max);
        }
        fprintf(f, "%-12s %-16s %-11s %12.5g %9.4f%% %-22s %9.2f\n", d->layers[r->layer].name,
                method, r->nw > 1 ? "per-channel" : "per-tensor", r->act.threshold,
                r->act.clipped * 100, q, r->sqnr_db);
    }
    /* one line for the methods the layers took, however many layers: the
     * table above has each layer's, --json each entropy_threshold */
    enum { KINDS = 8 };
    char kind[KINDS][32];
    uint32_t nkind[KINDS], nk = 0, guarded = 0;
    for (uint32_t j = 0; j < count; j++) {
        char m[32];
        if (res[j].act.method == DCZ_CAL_PERCENTILE) snprintf(m, sizeof m, "percentile:%g", cfg[j].percentile);
        else if (res[j].act.entropy_threshold > 0) snprintf(m, sizeof m, "entropy>mse");
        else snprintf(m, sizeof m, "%s", dcz_cal_method_name(res[j].act.method));
        guarded += res[j].act.entropy_threshold > 0;
        uint32_t k = 0;
        while (k < nk && strcmp(kind[k], m) != 0) k++;
        if (k == nk && nk < KINDS) { snprintf(kind[nk], sizeof kind[nk], "%s", m); nkind[nk++] = 0; }
        if (k < nk) nkind[k]++;
    }
    fprintf(f, "methods taken:");
    for (uint32_t k = 0; k < nk; k++)
        fprintf(f, "%s %s by %u layer%s", k ? "," : "", kind[k], nkind[k], nkind[k] == 1 ? "" : "s");
    fputc('\n', f);
    if (guarded)
        fprintf(f, "(entropy>mse: entropy's threshold clipped over %g%% of the nonzero values and erred over %g times "
                "as much as mse's, so mse's was taken; docs/CLI.md, \"Activation scales\"; --json gives each "
                "layer's entropy_threshold)\n", 100 * DCZ_CAL_ENTROPY_CLIP_LIMIT, DCZ_CAL_ENTROPY_MSE_LIMIT);
}

/* Calibrates a fresh copy of the input (in, len) with one configuration
 * and measures it: SQNR on the calibration samples, accuracy on test. */
static int calibrate_once(const verb_ctx *v, const uint8_t *in, size_t len, uint32_t scheme,
                          const dcz_cal_collect *c, const dcz_cal_layer_cfg *cfg,
                          const dcz_dataset *train, const size_t *idx, size_t n, size_t batch,
                          const dcz_dataset *test, cal_run *run)
{
    dcz_status s = dcz_doc_read(in, len, &run->doc);
    if (s != DCZ_OK) return cli_fail(v, s, "reading the input");
    run->res = calloc(c->count, sizeof *run->res);
    if (!run->res) return cli_fail(v, DCZ_ERR_NOMEM, "calibrating");
    if ((s = dcz_cal_apply(run->doc, scheme, c, cfg, run->res)) != DCZ_OK)
        return cli_fail(v, s, "calibrating");
    uint8_t *qbuf;
    size_t qlen;
    if ((s = dcz_doc_write(run->doc, &qbuf, &qlen)) != DCZ_OK) return cli_fail(v, s, "encoding");
    double *sqnr = calloc(c->count, sizeof *sqnr);
    if (!sqnr) { free(qbuf); return cli_fail(v, DCZ_ERR_NOMEM, "calibrating"); }
    s = dcz_cal_sqnr(in, len, qbuf, qlen, train, idx, n, batch, c->count, sqnr);
    for (uint32_t j = 0; j < c->count && s == DCZ_OK; j++) run->res[j].sqnr_db = sqnr[j];
    free(sqnr);
    if (s == DCZ_OK && test) {
        dcz_options o;
        dcz_options_init(&o);
        s = stage_eval_bytes(qbuf, qlen, &o, test, NULL, &run->acc);
    }
    free(qbuf);
    if (s != DCZ_OK) return cli_fail_data(v, s, "measuring the calibrated model", train, test);
    return -1;
}

static double fp32_accuracy(const uint8_t *in, size_t len, const dcz_dataset *test)
{
    dcz_options o;
    dcz_options_init(&o);
    o.precision = DCZ_PRECISION_FP32;
    double acc = -1;
    return stage_eval_bytes(in, len, &o, test, NULL, &acc) == DCZ_OK ? acc : -1;
}

/* The whole-model summary of one method, for --compare. */
static const char *compare_methods[] = { "minmax", "percentile:99.99", "percentile:99.9", "mse", "entropy" };
#define NCOMPARE (sizeof compare_methods / sizeof compare_methods[0])

static int write_table(const verb_ctx *v, const cal_run *run, const char *path, size_t samples)
{
    char *text;
    dcz_status s = dcz_cal_table_format(run->doc, run->method, samples, &text);
    if (s != DCZ_OK) return cli_fail(v, s, "formatting the table");
    int err;
    s = cli_write_file(path, text, strlen(text), &err);
    free(text);
    if (s != DCZ_OK) return cli_io_fail(v, path, s, err, 1);
    cli_note(v, "calibrate: table written to %s", path);
    return -1;
}

/* --table FILE: install a table made earlier; it must be keyed to this
 * model (and to this data and method when they are given) unless --force. */
static int import_table(const verb_ctx *v, const cal_opts *o, dcz_doc *doc,
                        const dcz_dataset *train, int have_train, char *method, size_t mlen,
                        size_t *samples)
{
    uint8_t *text;
    size_t len;
    int ioerr;
    dcz_status s = cli_read_file(o->table, &text, &len, &ioerr);
    if (s != DCZ_OK) return cli_io_fail(v, o->table, s, ioerr, 0);
    char *z = realloc(text, len + 1);
    if (!z) { free(text); return cli_fail(v, DCZ_ERR_NOMEM, "reading the table"); }
    z[len] = 0;
    if (memchr(z, 0, len)) { free(z); cli_error("calibrate: %s: not a text file", o->table); return EXIT_BAD_INPUT; }
    char err[256];
    dcz_doc_calib *t;
    s = dcz_cal_table_parse(z, doc, &t, method, mlen, samples, err, sizeof err);
    free(z);
    if (s != DCZ_OK) {
        cli_error("calibrate: %s: %s", o->table, s == DCZ_ERR_DATA ? err : dcz_status_str(s));
        return cli_exit_code(s, 1);
    }
    uint64_t mh;
    if ((s = dcz_cal_model_hash(doc, &mh)) != DCZ_OK) { dcz_doc_calib_free(t); return cli_fail(v, s, "hashing the model"); }
    const char *why = NULL;
    if (t->model_hash != mh) why = "it was made for another model (model_hash differs)";
    if (!why && have_train) {
        size_t *idx, n;
        int rc = calib_samples(v, o, train, &idx, &n);
        if (rc != -1) { dcz_doc_calib_free(t); return rc; }
        uint64_t dh = 0;
        s = dcz_cal_data_hash(train, idx, n, &dh);
        free(idx);
        if (s != DCZ_OK) { dcz_doc_calib_free(t); return cli_fail_data(v, s, "hashing the calibration samples", train, NULL); }
        if (t->data_hash != dh) why = "it was made on other calibration data (data_hash differs)";
    }
    if (!why && o->method && strcmp(o->method, method) != 0) why = "it was made by another method";
    if (!why && o->scheme_given && dcz_cal_scheme_parse(o->scheme) != t->scheme) why = "it is for another scheme";
    if (why && !o->force) {
        cli_error("calibrate: %s: refused: %s; --force installs it anyway", o->table, why);
        dcz_doc_calib_free(t);
        return EXIT_BAD_INPUT;
    }
    if (why) cli_note(v, "calibrate: %s: installed although %s (--force)", o->table, why);
    t->model_hash = mh;
    if ((s = dcz_cal_install(doc, t)) != DCZ_OK) return cli_fail(v, s, "installing the table");
    return -1;
}

/* A table can fit the graph and still ask for sums beyond the integer
 * accumulators' range (docs/FORMAT.md, "Integer execution"): load the
 * result once, as libdcz will, before writing anything. */
static int check_runs(const verb_ctx *v, dcz_doc *d)
{
    uint8_t *buf;
    size_t len;
    dcz_status s = dcz_doc_write(d, &buf, &len);
    if (s != DCZ_OK) return cli_fail(v, s, "encoding");
    dcz_model *m = NULL;
    s = dcz_open_memory(buf, len, NULL, &m);
    dcz_close(m);
    free(buf);
    if (s == DCZ_OK) return -1;
    cli_error("calibrate: libdcz would refuse to run the result on integers (%s): its scales make "
              "sums leave the accumulators' range (docs/FORMAT.md, \"Integer execution\")",
              dcz_status_str(s));
    return EXIT_BAD_INPUT;
}

static void print_json(const verb_ctx *v, uint32_t scheme, double fp32, const cal_run *runs,
                       int nruns, int best, const dcz_cal_layer_cfg *cfg, uint32_t count)
{
    json_out j;
    json_begin(&j, cli_report(v));
    json_str(&j, "stage", "calibrate");
    json_str(&j, "scheme", dcz_cal_scheme_name(scheme));
    if (v->c.out) json_str(&j, "output", v->c.out);
    if (fp32 >= 0) json_num(&j, "fp32_accuracy", fp32);
    const cal_run *r = &runs[best];
    json_str(&j, "method", r->method);
    if (r->acc >= 0) json_num(&j, "accuracy", r->acc);
    json_int(&j, "file_bytes", (long long)r->bytes);
    json_key_arr(&j, "layers");
    for (uint32_t k = 0; r->res && k < count; k++) {
        const dcz_cal_result *x = &r->res[k];
        json_obj(&j);
        json_str(&j, "name", r->doc->layers[x->layer].name);
        json_num(&j, "threshold", x->act.threshold);
        json_num(&j, "input_scale", x->act.scale);
        if (scheme != DCZ_SCHEME_INT8) json_int(&j, "input_fl", x->act.fl);
        json_num(&j, "clipped", x->act.clipped);
        if (x->act.entropy_threshold > 0) json_num(&j, "entropy_threshold", x->act.entropy_threshold);
        json_int(&j, "weight_scales", x->nw);
        if (isfinite(x->sqnr_db)) json_num(&j, "sqnr_db", x->sqnr_db);
        json_close_obj(&j);
    }
    json_close_arr(&j);
    if (nruns > 1) {
        json_key_arr(&j, "compare");
        for (int i = 0; i < nruns; i++) {
            json_obj(&j);
            json_str(&j, "method", runs[i].method);
            json_num(&j, "accuracy", runs[i].acc);
            json_close_obj(&j);
        }
        json_close_arr(&j);
    }
    (void)cfg;
    json_end(&j);
}

int cmd_calibrate(verb_ctx *v)
{
    cal_opts o = { NULL, NULL, NULL, NULL, NULL, 10, 100, 0, 0, 0, 0 };
    const opt_spec specs[] = {
        { "scheme", 0, OPT_STR, &o.scheme, "int8 (default), fixed8 or fixed16" },
        { "method", 0, OPT_STR, &o.method,
          "minmax, percentile[:P], mse or entropy; rules by layer name" },
        { "granularity", 0, OPT_STR, &o.granularity,
          "weight scales per-channel or per-tensor; rules by layer name" },
        { "calib-batches", 0, OPT_INT, &o.calib_batches, "batches of calibration data (default 10)" },
        { "batch", 0, OPT_INT, &o.batch, "samples per calibration batch (default 100)" },
        { "calib-order", 0, OPT_INT, &o.calib_order,
          "shuffle the calibration samples with this seed (0: in order)" },
        { "compare", 0, OPT_FLAG, &o.compare,
          "calibrate with every method, print each accuracy, write the best" },
        { "save-table", 0, OPT_STR, &o.save_table, "also write the calibration table as text to FILE" },
        { "table", 0, OPT_STR, &o.table, "install the table in FILE instead of calibrating" },
        { "force", 0, OPT_FLAG, &o.force, "install a --table made for another model, data or method" },
        STRIP_SPEC(v),
        { NULL, 0, OPT_FLAG, NULL, NULL }
    };
    v->usage = "dcz calibrate IN --data DATA [--scheme S] [--method M] -o OUT";
    v->summary = "Calibration for integer execution: statistics of each weighted layer's input\n"
                 "over calibration samples (the first calib-batches x batch training samples),\n"
                 "two passes, so scales depend only on which samples are used. Activation\n"
                 "scales by min-max, percentile, MSE or entropy (TensorRT's KL method); weight\n"
                 "scales symmetric per output channel or per tensor; fixed point uses\n"
                 "power-of-two scales (Ristretto's dynamic fixed point). The table goes into\n"
                 "OUT, dense weights are stored as integers, and libdcz then runs the model on\n"
                 "integers. Prints per layer the choice, the clipped fraction and the SQNR of\n"
                 "its output against float, and the test accuracy of OUT.\n"
                 "Defaults: entropy and per-channel for int8; minmax and per-tensor for fixed\n"
                 "point. Rules by layer name, later ones winning: --method 'fc3=minmax,*=mse'.\n"
                 "Scales do not depend on the order or batch size of the calibration samples.";
    int rc = cli_parse(v, specs, 1, 1);
    if (rc != -1) return rc;
    o.scheme_given = o.scheme != NULL;
    if (!o.scheme) o.scheme = "int8";
    uint32_t scheme = dcz_cal_scheme_parse(o.scheme);
    if (!scheme) { cli_usage_error(v, "--scheme must be int8, fixed8 or fixed16, not '%s'", o.scheme); return EXIT_USAGE; }
    if (o.calib_batches < 1 || o.batch < 1) { cli_usage_error(v, "--calib-batches and --batch must be at least 1"); return EXIT_USAGE; }
    if (!o.table && !v->c.data) { cli_usage_error(v, "calibrate needs --data (or --table FILE)"); return EXIT_USAGE; }
    if (o.table && o.compare) { cli_usage_error(v, "--table and --compare exclude each other"); return EXIT_USAGE; }
    if (!v->c.out && !o.compare && !o.save_table) { cli_usage_error(v, "no output: give -o OUT"); return EXIT_USAGE; }
    if (v->strip && !v->c.out) { cli_usage_error(v, "--strip is how OUT is written: give -o OUT"); return EXIT_USAGE; }
    {
        word_rules tmp;
        char err[256];
        if ((o.method && word_rules_parse(o.method, &tmp, err, sizeof err)) ||
            (o.granularity && word_rules_parse(o.granularity, &tmp, err, sizeof err))) {
            cli_usage_error(v, "%s", err);
            return EXIT_USAGE;
        }
    }

    uint8_t *in = NULL;
    size_t len = 0, *idx = NULL, n = 0;
    dcz_doc *doc = NULL;
    dcz_dataset train, test;
    memset(&train, 0, sizeof train);
    memset(&test, 0, sizeof test);
    dcz_cal_collect col;
    memset(&col, 0, sizeof col);
    cal_run runs[NCOMPARE];
    memset(runs, 0, sizeof runs);
    int nruns = 0, best = 0;
    dcz_cal_layer_cfg *cfg = NULL;
    double fp32 = -1;

    dcz_status s;
    rc = stage_load_doc_bytes(v, v->pos[0], &doc, &in, &len);
    if (rc == -1 && v->c.data) rc = stage_load_splits(v, &train, &test);
    if (rc != -1) goto done;
    if (v->c.data) fp32 = fp32_accuracy(in, len, &test);

    if (o.table) {
        cal_run *r = &runs[nruns++];
        rc = import_table(v, &o, doc, &train, v->c.data != NULL, r->method, sizeof r->method, &n);
        if (rc != -1) goto done;
        r->doc = doc;
        doc = NULL;
        scheme = r->doc->calib->scheme; /* the table's */
    } else {
        if ((rc = calib_samples(v, &o, &train, &idx, &n)) != -1) goto done;
        progress p;
        progress_start(&p, v, "calibrate", 2 * n);
        s = dcz_cal_collect_stats(doc, &train, idx, n, (size_t)o.batch, progress_cb, &p, &col);
        progress_end(&p);
        if (s != DCZ_OK) {
            if (s == DCZ_ERR_UNSUPPORTED)
                cli_error("calibrate: %s: needs a layer with weights and no softmax between two of them", v->pos[0]);
            else if (s == DCZ_ERR_SHAPE)
                cli_error("calibrate: %s: the model does not fit the data's samples", v->pos[0]);
            else
                cli_error("calibrate: %s", dcz_dataset_error(&train)[0] ? dcz_dataset_error(&train) : dcz_status_str(s));
            rc = cli_exit_code(s, 1);
            goto done;
        }
        cfg = calloc(col.count, sizeof *cfg);
        if (!cfg) { rc = cli_fail(v, DCZ_ERR_NOMEM, "calibrating"); goto done; }
        const int count = o.compare ? (int)NCOMPARE : 1;
        for (int i = 0; i < count; i++) {
            const char *mt = o.compare ? compare_methods[i] : o.method ? o.method
                           : scheme == DCZ_SCHEME_INT8 ? "entropy" : "minmax";
            const char *gt = o.granularity ? o.granularity : scheme == DCZ_SCHEME_INT8 ? "per-channel" : "per-tensor";
            if ((rc = layer_configs(v, doc, &col, scheme, mt, gt, cfg)) != -1) goto done;
            cal_run *r = &runs[nruns++];
            snprintf(r->method, sizeof r->method, "%s", mt);
            rc = calibrate_once(v, in, len, scheme, &col, cfg, &train, idx, n, (size_t)o.batch, &test, r);
            if (rc != -1) goto done;
            if (r->acc > runs[best].acc) best = nruns - 1;
        }
        /* the printed table is the written one's */
        if ((rc = layer_configs(v, doc, &col, scheme, runs[best].method,
                                o.granularity ? o.granularity : scheme == DCZ_SCHEME_INT8 ? "per-channel" : "per-tensor",
                                cfg)) != -1)
            goto done;
    }
    cal_run *r = &runs[best];
    if ((rc = check_runs(v, r->doc)) != -1) goto done;
    if (o.save_table && (rc = write_table(v, r, o.save_table, n)) != -1) goto done;
    if (v->c.out) {
        stage_extra extra = { 0 };
        stage_extra_add(&extra, "scheme = %s\nmethod = %s\ncalib_samples = %zu\n"
                        "model_hash = %016llx\ncalib_data_hash = %016llx\n",
                        dcz_cal_scheme_name(r->doc->calib->scheme), r->method, n,
                        (unsigned long long)r->doc->calib->model_hash,
                        (unsigned long long)r->doc->calib->data_hash);
        rc = stage_finish(v, r->doc, "calibrate", v->c.data ? &train : NULL, &extra,
                          v->c.data ? &test : NULL, v->c.out, &r->acc, &r->bytes);
        stage_extra_free(&extra);
        if (rc != -1) goto done;
    }
    FILE *f = cli_notes(v);
    if (!v->c.json && f) {
        if (r->res) print_layer_table(v, r->doc, scheme, cfg, r->res, col.count);
        if (nruns > 1) {
            fprintf(f, "\n%-18s %10s %10s\n", "method", "accuracy", "vs fp32");
            for (int i = 0; i < nruns; i++)
                fprintf(f, "%-18s %9.2f%% %+10.2f%s\n", runs[i].method, runs[i].acc * 100,
                        (runs[i].acc - fp32) * 100, i != best ? "" : v->c.out ? "  <- written" : "  <- best");
        }
        char size[48] = "";   /* nothing was written without -o */
        if (v->c.out) snprintf(size, sizeof size, ", %zu bytes", r->bytes);
        char method[300];   /* the method asked for, and how many layers its guard overruled */
        uint32_t guarded = 0;
        for (uint32_t j = 0; r->res && j < col.count; j++) guarded += r->res[j].act.entropy_threshold > 0;
        if (guarded)
            snprintf(method, sizeof method, "%s (mse's threshold in %u of %u layers)", r->method, guarded, col.count);
        else
            snprintf(method, sizeof method, "%s", r->method);
        if (fp32 >= 0 && r->acc >= 0)
            fprintf(f, "%s: %s, %s: accuracy %.2f%% (fp32 %.2f%%, %+.2f points)%s\n",
                    v->c.out ? v->c.out : v->pos[0], dcz_cal_scheme_name(scheme), method,
                    r->acc * 100, fp32 * 100, (r->acc - fp32) * 100, size);
        else
            fprintf(f, "%s: %s, %s%s\n", v->c.out ? v->c.out : v->pos[0], dcz_cal_scheme_name(scheme), method,
                    size);
    } else if (v->c.json) {
        print_json(v, scheme, fp32, runs, nruns, best, cfg, col.count);
    }
    rc = EXIT_OK;
done:
    for (int i = 0; i < nruns; i++) cal_run_free(&runs[i]);
    dcz_cal_collect_free(&col);
    free(cfg);
    free(idx);
    free(in);
    dcz_doc_free(doc);
    dcz_dataset_free(&train);
    dcz_dataset_free(&test);
    return rc;
}
