/* cmd_steer.c: dcz sensitivity, how far each layer can be pruned or shared
 * alone (steer/steer.h), measured on a validation split held out of the
 * training data.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "steer/steer.h"


/* A comma-separated list of numbers into v (at most max): -1, or a usage
 * error naming opt. */
static int parse_levels(const verb_ctx *v, const char *opt, const char *text, double *out, int *n)
{
    *n = 0;
    for (const char *p = text; *p;) {
        char *end;
        errno = 0;
        const double x = strtod(p, &end);
        if (end == p || errno || !isfinite(x) || (*end && *end != ',') || *n == DCZ_SENS_MAX_LEVELS) {
            cli_usage_error(v, "--%s: '%s' is not a list of at most %d numbers separated by commas", opt, text,
                            DCZ_SENS_MAX_LEVELS);
            return EXIT_USAGE;
        }
        out[(*n)++] = x;
        p = *end ? end + 1 : end;
        if (*end && !*p) {   /* a trailing comma */
            cli_usage_error(v, "--%s: '%s' ends with a comma", opt, text);
            return EXIT_USAGE;
        }
    }
    return -1;
}

static void print_table(FILE *f, const dcz_sens_report *r, int nw, const char *title, const char *unit,
                        const double *levels, int n, int bits)
{
    if (n == 0) return;
    fprintf(f, "\n%s\n%-*s %10s", title, nw, "layer", "weights");
    for (int i = 0; i < n; i++) {
        if (bits) fprintf(f, " %5d%s", (int)levels[i], unit);
        else fprintf(f, " %6.0f%s", levels[i] * 100, unit);
    }
    fprintf(f, "\n");
    for (int l = 0; l < r->nlayers; l++) {
        const dcz_sens_layer *s = &r->layers[l];
        fprintf(f, "%-*s %10zu", nw, s->name, s->weights);
        for (int i = 0; i < n; i++) fprintf(f, bits ? " %6.2f" : " %7.2f", (bits ? s->share_acc[i] : s->prune_acc[i]) * 100);
        fprintf(f, "\n");
    }
}

static void print_json(const verb_ctx *v, const dcz_sens_report *r, const dcz_sens_plan *p)
{
    json_out j;
    json_begin(&j, cli_report(v));
    json_str(&j, "file", v->pos[0]);
    json_num(&j, "baseline", r->baseline);
    json_int(&j, "validation_samples", (long long)r->samples);
    json_key_arr(&j, "sparsity_levels");
    for (int i = 0; i < p->nsparsity; i++) json_arr_num(&j, p->sparsity[i]);
    json_close_arr(&j);
    json_key_arr(&j, "bits_levels");
    for (int i = 0; i < p->nbits; i++) json_arr_int(&j, p->bits[i]);
    json_close_arr(&j);
    json_int(&j, "block", p->block);
    json_key_arr(&j, "layers");
    for (int l = 0; l < r->nlayers; l++) {
        const dcz_sens_layer *s = &r->layers[l];
        json_obj(&j);
        json_str(&j, "name", s->name);
        json_int(&j, "weights", (long long)s->weights);
        json_num(&j, "density", s->density);
        json_key_arr(&j, "pruned_accuracy");
        for (int i = 0; i < p->nsparsity; i++) json_arr_num(&j, s->prune_acc[i]);
        json_close_arr(&j);
        json_key_arr(&j, "shared_accuracy");
        for (int i = 0; i < p->nbits; i++) json_arr_num(&j, s->share_acc[i]);
        json_close_arr(&j);
        json_close_obj(&j);
    }
    json_close_arr(&j);
    json_end(&j);
}

void scan_opts_init(scan_opts *o)
{
    dcz_sens_plan p;
    dcz_sens_plan_init(&p);
    memset(o, 0, sizeof *o);
    o->validation = NOT_GIVEN;
    o->iters = p.kmeans_iters;
    o->block = p.block;
}

int scan_plan(const verb_ctx *v, const scan_opts *o, dcz_sens_plan *plan)
{
    dcz_sens_plan_init(plan);
    double lv[DCZ_SENS_MAX_LEVELS];
    int n, rc;
    if (o->sparsity) {
        if ((rc = parse_levels(v, "sparsity-levels", o->sparsity, lv, &n)) != -1) return rc;
        memcpy(plan->sparsity, lv, (size_t)n * sizeof *lv);
        plan->nsparsity = n;
    }
    if (o->bits) {
        if ((rc = parse_levels(v, "bits-levels", o->bits, lv, &n)) != -1) return rc;
        for (int i = 0; i < n; i++) plan->bits[i] = lv[i] >= 1 && lv[i] <= 8 && lv[i] == floor(lv[i]) ? (int)lv[i] : 0;
        plan->nbits = n;
    }
    plan->kmeans_iters = o->iters;
    plan->seed = (uint64_t)v->c.seed;
    if ((rc = cli_check_block(v, o->block)) != -1) return rc;
    plan->block = o->block;
    if (dcz_sens_plan_check(plan) != DCZ_OK) {
        cli_usage_error(v, "the levels must ascend, sparsities in [0, 1) and bits whole numbers from 1 to 8, "
                           "at least one level in all, and --kmeans-iters at least 1");
        return EXIT_USAGE;
    }
    if (o->validation != NOT_GIVEN && o->validation < 1) {
        cli_usage_error(v, "--validation must be at least 1");
        return EXIT_USAGE;
    }
    if (!v->c.data) { cli_usage_error(v, "the sensitivity scan measures on data: give --data"); return EXIT_USAGE; }
    return stage_check_own_val(v, o->validation);
}

int scan(verb_ctx *v, const char *path, const scan_opts *o, const dcz_sens_plan *plan,
                dcz_sens_report *rep)
{
    dcz_doc *doc = NULL;
    dcz_net *net = NULL;
    dcz_dataset train, val;
    memset(&train, 0, sizeof train);
    memset(&val, 0, sizeof val);
    memset(rep, 0, sizeof *rep);
    int rc = stage_load_doc(v, path, &doc);
    if (rc == -1) {
        dcz_status s = dcz_net_open(doc, &net);
        if (s != DCZ_OK) {
            cli_error("%s: %s: %s", v->verb, path, dcz_status_str(s));
            rc = cli_exit_code(s, 1);
        }
    }
    if (rc == -1) rc = stage_load_data(v, DCZ_SPLIT_TRAIN, &train);
    if (rc == -1) rc = stage_check_fit(v, &train, (int)net->in_rank, net->in_dims, (size_t)net->classes, 0);
    if (rc == -1 && v->own_val) {
        rc = stage_load_val(v, &train, &val);   /* the folder's own validation split */
    } else {
        const int nval = o->validation == NOT_GIVEN ? stage_validation_default(doc, train.n) : o->validation;
        if (rc == -1) rc = stage_hold_out(v, &train, nval, &val);
        if (rc == -1) stage_note_seen(v, doc, path, nval);
    }
    if (rc == -1) {
        progress p;
        progress_start(&p, v, "sensitivity", 0);
        dcz_status s = dcz_sensitivity(net, &val, plan, progress_cb, &p, rep);
        progress_end(&p);
        if (s != DCZ_OK) rc = cli_fail_data(v, s, "the sensitivity scan", &val, NULL);
    }
    dcz_net_free(net);
    dcz_doc_free(doc);
    dcz_dataset_free(&train);
    dcz_dataset_free(&val);
    return rc;
}

int cmd_sensitivity(verb_ctx *v)
{
    scan_opts o;
    scan_opts_init(&o);
    const opt_spec specs[] = { SCAN_SPECS(o), { NULL, 0, OPT_FLAG, NULL, NULL } };
    v->usage = "dcz sensitivity IN --data DATA [--sparsity-levels L] [--bits-levels L] [--json]";
    v->summary = "How sensitive each layer is, alone, to pruning and to weight sharing (Deep\n"
                 "Compression, Figure 6): the accuracy with that layer pruned to each sparsity\n"
                 "(no retraining) and with its kept weights shared among 2^bits centroids (no\n"
                 "fine-tuning), the other layers as they are. Measured on a validation split\n"
                 "held out of the training data (the same samples for every seed and verb;\n"
                 "dcz train holds them out unless given --validation 0), never the test set.";
    v->skip = CLI_NO_OUT;
    int rc = cli_parse(v, specs, 1, 1);
    if (rc != -1) return rc;
    dcz_sens_plan plan;
    dcz_sens_report rep;
    if ((rc = scan_plan(v, &o, &plan)) != -1) return rc;
    if ((rc = scan(v, v->pos[0], &o, &plan, &rep)) != -1) return rc;
    FILE *f = v->c.quiet || v->c.json ? NULL : cli_notes(v);
    if (f) {
        int nw = 5;
        for (int l = 0; l < rep.nlayers; l++)
            if ((int)strlen(rep.layers[l].name) > nw) nw = (int)strlen(rep.layers[l].name);
        fprintf(f, "%s: accuracy %.2f%% on %zu validation samples %s\n", v->pos[0], rep.baseline * 100,
                rep.samples, stage_val_source(v));
        print_table(f, &rep, nw, "accuracy (%) with one layer pruned to a sparsity, no retraining", "%",
                    plan.sparsity, plan.nsparsity, 0);
        double b[DCZ_SENS_MAX_LEVELS];
        for (int i = 0; i < plan.nbits; i++) b[i] = plan.bits[i];
        print_table(f, &rep, nw, "accuracy (%) with one layer's kept weights shared, no fine-tuning", "b",
                    b, plan.nbits, 1);
    }
    if (v->c.json) print_json(v, &rep, &plan);
    dcz_sens_report_free(&rep);
    return EXIT_OK;
}
