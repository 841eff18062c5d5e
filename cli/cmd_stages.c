/* cmd_stages.c: the verbs that write models: train, prune, quantize, encode
 * and compress (all three compression stages with Deep Compression
 * defaults). Each parses its options, calls its stage library, and hands
 * the result to stage_finish, which measures and writes it.
 *
 * Checked end to end by the scripts in tests/cli/ and by `make demo`.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "train/dev.h"
#include "prune/prune.h"
#include "quantize/quantize.h"
#include "steer/steer.h"
#include "train/train.h"

/* Defaults for fully connected layers. As in Deep Compression (Table 2 and
 * section 3) the first layer, fed by raw pixels, is pruned hardest and the
 * output layer least; measured on LeNet-300-100 with Fashion-MNIST, 93% /
 * 88% / 65% keeps the same share of weights as the paper's 92 / 91 / 74
 * (7.5% vs 8%) at a smaller accuracy cost. 5-bit codebooks and 5-bit
 * relative positions are the paper's. */
#define DEFAULT_SPARSITY_FIRST 0.93
#define DEFAULT_SPARSITY_HIDDEN 0.88
#define DEFAULT_SPARSITY_OUTPUT 0.65
#define DEFAULT_FC_BITS 5
#define DEFAULT_FC_GAP_BITS 5
/* Convolution layers are far more sensitive (Deep Compression, Figure 5):
 * the paper prunes AlexNet's first conv 16% and the others 62-65%, LeNet-5's
 * conv1 34%; it gives them 8-bit codebooks and 8-bit relative positions. */
#define DEFAULT_SPARSITY_CONV_FIRST 0.35
#define DEFAULT_SPARSITY_CONV 0.65
/* Depthwise and 1x1 convolutions are small and sensitive (Zhu and Gupta
 * 2017 prune MobileNet's 1x1 layers and leave the depthwise ones dense): a
 * depthwise filter has only K x K weights, all of one channel's path, and
 * pruning one of them to nothing cuts the channel; a 1x1 filter mixes
 * channels with one weight each. */
#define DEFAULT_SPARSITY_DEPTHWISE 0.0
#define DEFAULT_SPARSITY_POINTWISE 0.5
#define DEFAULT_CONV_BITS 8
#define DEFAULT_CONV_GAP_BITS 8

static int is_conv(const dcz_tlayer *l) { return l->op == DCZ_OP_CONV2D; }

/* The default sparsity of layer i (with weights): by its kind (the first
 * convolution, depthwise, 1x1, other convolutions) and, for fully
 * connected layers, its place among them. */
static double default_sparsity(const dcz_net *net, int i)
{
    int first = -1, last = -1, first_conv = -1;
    for (int l = 0; l < net->nlayers; l++) {
        const dcz_tlayer *t = &net->layers[l];
        if (is_conv(t) && first_conv < 0) first_conv = l;
        if (t->op != DCZ_OP_DENSE) continue;
        if (first < 0) first = l;
        last = l;
    }
    const dcz_tlayer *l = &net->layers[i];
    if (is_conv(l)) {
        if (i == first_conv) return DEFAULT_SPARSITY_CONV_FIRST;
        if (l->group > 1 && l->group == l->in_c) return DEFAULT_SPARSITY_DEPTHWISE;
        if (l->kh == 1 && l->kw == 1) return DEFAULT_SPARSITY_POINTWISE;
        return DEFAULT_SPARSITY_CONV;
    }
    if (i == last) return DEFAULT_SPARSITY_OUTPUT;
    return i == first ? DEFAULT_SPARSITY_FIRST : DEFAULT_SPARSITY_HIDDEN;
}

static double default_bits(const dcz_tlayer *l) { return is_conv(l) ? DEFAULT_CONV_BITS : DEFAULT_FC_BITS; }

static double default_gap_bits(const dcz_tlayer *l)
{
    return is_conv(l) ? DEFAULT_CONV_GAP_BITS : DEFAULT_FC_GAP_BITS;
}

static int parse_rules(const verb_ctx *v, const char *opt, const char *text, rule_set *r)
{
    char err[256];
    if (!text) { memset(r, 0, sizeof *r); return -1; }
    if (rules_parse(text, r, err, sizeof err) != 0) {
        cli_usage_error(v, "--%s: %s", opt, err);
        return EXIT_USAGE;
    }
    return -1;
}

/* Rule options are checked before any file is read, so that a typo is a
 * usage error whatever the inputs. */
static int check_rule_syntax(const verb_ctx *v, const char *const *names, const char *const *texts, int n)
{
    for (int i = 0; i < n; i++) {
        rule_set r;
        int rc = parse_rules(v, names[i], texts[i], &r);
        if (rc != -1) return rc;
    }
    return -1;
}

/* Layers a rule set names that the net does not have are a usage error:
 * a typo must not silently leave a layer alone. */
static int report_unmatched(const verb_ctx *v, const char *opt, const rule_set *r, const char *const *names,
                            int n)
{
    int bad = rules_unmatched(r, names, n);
    if (bad < 0) return -1;
    cli_no_such_layer(v, opt, r->pattern[bad], names, n, NULL);
    return EXIT_USAGE;
}

static int check_rule_names(const verb_ctx *v, const char *opt, const rule_set *r, const dcz_net *net)
{
    const char *names[DCZ_MAX_LAYERS];
    int n = 0;
    for (int l = 0; l < net->nlayers && n < DCZ_MAX_LAYERS; l++)
        if (dcz_tlayer_has_weights(&net->layers[l])) names[n++] = net->layers[l].name;
    return report_unmatched(v, opt, r, names, n);
}

static int check_rule_text_names(const verb_ctx *v, const char *opt, const char *text, const dcz_net *net)
{
    rule_set r;
    int rc = parse_rules(v, opt, text, &r);
    return rc != -1 ? rc : check_rule_names(v, opt, &r, net);
}

/* The learning rate the input was trained with, from its train stage. */
static double trained_lr(const dcz_doc *d, double dflt)
{
    char val[64], stage[32];
    for (uint32_t i = 0; i < d->nstages; i++)
        if (stage_get(d->stages[i], "stage", stage, sizeof stage) && strcmp(stage, "train") == 0 &&
            stage_get(d->stages[i], "lr", val, sizeof val))
            return atof(val);
    return dflt;
}

/* Encodings for writing a net: gap bits per layer from rules, Huffman on or off. */
static int make_encodings(const verb_ctx *v, const dcz_net *net, const char *gap_rules, int huffman,
                          int bias_f16, dcz_layer_encoding **out)
{
    rule_set gr;
    int rc = parse_rules(v, "gap-bits", gap_rules, &gr);
    if (rc != -1) return rc;
    if ((rc = check_rule_names(v, "gap-bits", &gr, net)) != -1) return rc;
    dcz_layer_encoding *e = calloc((size_t)net->nlayers, sizeof *e);
    if (!e) return cli_fail(v, DCZ_ERR_NOMEM, "the layer encodings");
    for (int i = 0; i < net->nlayers; i++) {
        double g = rules_value(&gr, net->layers[i].name, default_gap_bits(&net->layers[i]));
        if (g < 1 || g > 8 || g != floor(g)) {
            cli_usage_error(v, "--gap-bits: %g for %s is not a whole number from 1 to 8", g, net->layers[i].name);
            free(e);
            return EXIT_USAGE;
        }
        e[i].gap_bits = (uint8_t)g;
        e[i].huffman = (uint8_t)huffman;
        e[i].bias_f16 = (uint8_t)bias_f16;
    }
    *out = e;
    return -1;
}

/* Stores net into its document with the encodings of the rules. */
static int store_net(const verb_ctx *v, dcz_net *net, const char *gap_rules, int huffman, int bias_f16)
{
    dcz_layer_encoding *enc = NULL;
    int rc = make_encodings(v, net, gap_rules, huffman, bias_f16, &enc);
    if (rc != -1) return rc;
    dcz_status s = dcz_net_store(net, enc);
    free(enc);
    return s == DCZ_OK ? -1 : cli_fail(v, s, "storing the network");
}

/* Writes net as the output of a stage: its document, which keeps the
 * records of the stages before and gets this one's. */
static int finish_net(const verb_ctx *v, dcz_net *net, const char *stage, const char *gap_rules,
                      const dcz_dataset *train, const stage_extra *extra, const dcz_dataset *test,
                      const char *out_path, double *acc, size_t *bytes)
{
    int rc = store_net(v, net, gap_rules, 0, 0);
    return rc != -1 ? rc : stage_finish(v, net->doc, stage, train, extra, test, out_path, acc, bytes);
}

static int need_output(const verb_ctx *v)
{
    if (v->c.out || v->dry_run) return -1;
    cli_usage_error(v, "no output file: give -o OUT");
    return EXIT_USAGE;
}

/* What the options of prune or quantize make: the stage library's plan. */
/* ---- dry runs ---------------------------------------------------------------- */

#define DRY_RUN_SPEC(v) \
    { "dry-run", 0, OPT_FLAG, &(v)->dry_run, \
      "print the bytes the run would write, per layer, and write nothing" }

typedef struct stage_result {
    const char *name;
    size_t bytes;
    double acc;
} stage_result;

/* The report of a dry run: per layer with parameters the bytes of its
 * section in doc as last written, the total and the container overhead;
 * stages (n of them) when the run has several; exact or an estimate. */
static void dry_report(const verb_ctx *v, const dcz_doc *doc, int exact, const stage_result *st, int n)
{
    FILE *f = v->c.quiet || v->c.json ? NULL : cli_notes(v);
    const size_t params = dcz_doc_param_count(doc);
    int nw = 5;
    for (uint32_t i = 0; i < doc->nlayers; i++)
        if ((int)strlen(doc->layers[i].name) > nw) nw = (int)strlen(doc->layers[i].name);
    if (f) {
        fprintf(f, "%s --dry-run: nothing written; %s\n", v->verb,
                exact ? "the bytes are exact" : "the bytes are estimates: the stages ran without retraining");
        fprintf(f, "%-*s %-10s %10s %8s %10s\n", nw, "layer", "encoding", "weights", "kept", "bytes");
    }
    for (uint32_t i = 0; i < doc->nlayers && f; i++) {
        const dcz_doc_layer *l = &doc->layers[i];
        if (l->ntensors == 0) continue;
        const dcz_doc_tensor *w = &l->t[0];   /* its stats: as the writer last wrote it */
        fprintf(f, "%-*s %-10s %10zu %7.2f%% %10zu\n", nw, l->name, cli_enc_name(w->enc), w->n,
                w->n ? 100.0 * (double)w->st.nnz / (double)w->n : 0.0, l->section_bytes);
    }
    if (f) {
        fprintf(f, "%-*s %-10s %10s %8s %10zu\n", nw, "overhead", "", "", "", doc->overhead_bytes);
        fprintf(f, "%-*s %-10s %10zu %8s %10zu  (%.1fx smaller than dense fp32)\n", nw, "total", "", params, "",
                doc->file_bytes, doc->file_bytes ? (double)params * 4 / (double)doc->file_bytes : 0.0);
        for (int i = 0; i < n; i++) fprintf(f, "%-10s %12zu\n", st[i].name, st[i].bytes);
    }
    if (!v->c.json) return;
    json_out j;
    json_begin(&j, cli_report(v));
    json_str(&j, "verb", v->verb);
    json_bool(&j, "dry_run", 1);
    json_bool(&j, "exact", exact);
    json_int(&j, "file_bytes", (long long)doc->file_bytes);
    json_int(&j, "overhead_bytes", (long long)doc->overhead_bytes);
    json_int(&j, "dense_fp32_bytes", (long long)params * 4);
    json_key_arr(&j, "layers");
    for (uint32_t i = 0; i < doc->nlayers; i++) {
        if (doc->layers[i].ntensors == 0) continue;
        json_obj(&j);
        json_str(&j, "name", doc->layers[i].name);
        json_str(&j, "encoding", cli_enc_name(doc->layers[i].t[0].enc));
        json_int(&j, "bytes", (long long)doc->layers[i].section_bytes);
        json_close_obj(&j);
    }
    json_close_arr(&j);
    if (n) {
        json_key_arr(&j, "stages");
        for (int i = 0; i < n; i++) {
            json_obj(&j);
            json_str(&j, "stage", st[i].name);
            json_int(&j, "file_bytes", (long long)st[i].bytes);
            json_close_obj(&j);
        }
        json_close_arr(&j);
    }
    json_end(&j);
}

typedef struct stage_plan {
    dcz_prune_plan prune;
    dcz_quant_plan quant;
    const char *init;      /* quantize: the centroid initialization's name */
} stage_plan;

/* A stage run on a net in two steps: its options checked and planned
 * before any data is read (so that a bad value fails at once), then run. */
typedef struct stage_steps {
    const char *name;
    int (*plan)(const verb_ctx *v, const dcz_net *net, const dcz_doc *in, const void *opts, int retrain,
                stage_plan *p);
    int (*exec)(const verb_ctx *v, dcz_net *net, stage_plan *p, const dcz_dataset *train,
                const dcz_dataset *test, stage_extra *extra);
} stage_steps;

/* A learning rate (named by its option), momentum and weight decay in the
 * ranges SGD converges in at all: rate > 0, momentum in [0, 1), decay >= 0.
 * A rate too high for its network still diverges, and training says so. */
static int check_sgd_opts(const verb_ctx *v, const char *lr_opt, double lr, double momentum, double wd)
{
    if (!(lr > 0)) { cli_usage_error(v, "--%s must be > 0, not %g", lr_opt, lr); return EXIT_USAGE; }
    if (!(momentum >= 0 && momentum < 1)) {
        cli_usage_error(v, "--momentum must be in [0, 1), not %g", momentum);
        return EXIT_USAGE;
    }
    if (!(wd >= 0)) { cli_usage_error(v, "--weight-decay must be >= 0, not %g", wd); return EXIT_USAGE; }
    return -1;
}

/* ---- train ------------------------------------------------------------------ */

typedef struct train_opts {
    const char *arch, *schedule;
    int epochs, batch, validation, warmup;
    double lr, momentum, wd;
} train_opts;

static int open_model(verb_ctx *v, uint32_t head, dcz_doc **doc, dcz_net **net, uint8_t **bytes, size_t *nbytes);

int cmd_train(verb_ctx *v)
{
    /* L2 regularization before pruning leaves weights that prune with less
     * loss (Deep Compression, section 2) */
    train_opts t = { "lenet300", "cosine", 30, 64, NOT_GIVEN, NOT_GIVEN, 0.02, 0.9, 5e-4 };
    int resize = 0, head = 0;
    const char *crop = NULL, *normalize = NULL, *arch = NULL;
    const opt_spec specs[] = {
        { "arch", 0, OPT_STR, &arch, "lenet300, lenet5, resnet, mobilenetv2, mlp:784-500-10 or cnn:c32k3-p2-f10 (default lenet300)" },
        { "epochs", 0, OPT_INT, &t.epochs, "training epochs (default 30)" },
        { "lr", 0, OPT_FLOAT, &t.lr, "learning rate (default 0.02)" },
        { "schedule", 0, OPT_STR, &t.schedule, "lr schedule: const, step, cosine (default cosine)" },
        { "warmup-epochs", 0, OPT_INT, &t.warmup, "epochs over which the lr rises linearly, step by step, from 0\n"
          "                             (default 0; --arch lenet5: 1)" },
        { "momentum", 0, OPT_FLOAT, &t.momentum, "SGD momentum (default 0.9)" },
        { "weight-decay", 0, OPT_FLOAT, &t.wd, "L2 weight decay (default 5e-4)" },
        { "batch", 0, OPT_INT, &t.batch, "mini-batch size (default 64)" },
        { "validation", 0, OPT_INT, &t.validation,
          "train without the N validation samples sensitivity and --budget measure on\n"
          "                             (default: a sixth of the training split, at most 10000; 0: train on all)" },
        SHARDS_SPEC(v),
        AUGMENT_SPEC(v),
        PREP_SPECS(resize, crop, normalize),
        { "head", 0, OPT_INT, &head, "N: the last fully connected layer replaced by a fresh one of N outputs\n"
                                     "                             (seeded), one per class of --data" },
        STRIP_SPEC(v),
        { NULL, 0, OPT_FLAG, NULL, NULL }
    };
    v->usage = "dcz train [IN.dcz | --arch ARCH] --data DATA -o OUT [--head N] [options]";
    v->summary = "Trains a network from scratch (--arch) and writes it as a dense fp32 .dcz; or,\n"
                 "given IN.dcz (imported from ONNX, say), goes on training it (fine-tuning),\n"
                 "with --head N on a fresh last layer of one output per class of your data.\n"
                 "--resize, --crop and --normalize preprocess the images of an image folder (of\n"
                 "any size) as the network takes them and record it in the file, as dcz import\n"
                 "does; a model that records its preprocessing is trained through it.";
    int rc = cli_parse(v, specs, 0, 1);
    if (rc != -1) return rc;
    if ((rc = need_output(v)) != -1) return rc;
    if (!v->c.data) { cli_usage_error(v, "training needs --data"); return EXIT_USAGE; }
    dcz_options ro;
    if ((rc = cli_runtime_options(v, &ro)) != -1) return rc;
    if ((rc = cli_check_shards(v)) != -1) return rc;
    if ((rc = cli_check_augment(v)) != -1) return rc;
    if (t.epochs < 0 || t.batch < 1 || (t.validation < 0 && t.validation != NOT_GIVEN) ||
        (t.warmup < 0 && t.warmup != NOT_GIVEN)) {
        cli_usage_error(v, "--epochs, --warmup-epochs and --validation must be >= 0 and --batch >= 1");
        return EXIT_USAGE;
    }
    if ((rc = check_sgd_opts(v, "lr", t.lr, t.momentum, t.wd)) != -1) return rc;
    if ((rc = stage_check_own_val(v, t.validation)) != -1) return rc;
    if (strcmp(t.schedule, "const") && strcmp(t.schedule, "step") && strcmp(t.schedule, "cosine")) {
        cli_usage_error(v, "--schedule must be const, step or cosine");
        return EXIT_USAGE;
    }
    dcz_preprocess prep;
    int has_prep;
    if ((rc = cli_prep_parse(v, resize, crop, normalize, &prep, &has_prep)) != -1) return rc;
    if (arch && v->npos) { cli_usage_error(v, "give IN.dcz or --arch, not both"); return EXIT_USAGE; }
    if (head < 0 || head > 65536) { cli_usage_error(v, "--head must be 1 to 65536 outputs"); return EXIT_USAGE; }
    if (arch) t.arch = arch;
    else if (v->npos) t.arch = v->pos[0];   /* recorded as what was trained */
    if (t.warmup == NOT_GIVEN) t.warmup = dcz_arch_warmup_epochs(arch);   /* 0 for IN.dcz (arch NULL) */
    char err[256] = "";
    dcz_net *net = NULL;
    dcz_doc *doc = NULL;   /* IN, or the architecture given a new head: the net's, not owned by it */
    dcz_dataset train, test, val;
    memset(&train, 0, sizeof train);
    memset(&test, 0, sizeof test);
    memset(&val, 0, sizeof val);
    dcz_status s;
    if (v->npos) {
        uint8_t *bytes = NULL;
        size_t nbytes = 0;
        rc = open_model(v, (uint32_t)head, &doc, &net, &bytes, &nbytes);
        free(bytes);
        if (rc != -1) goto done;
    } else {
        s = dcz_net_create_arch(t.arch, (uint64_t)v->c.seed, &net, err, sizeof err);
        if (s != DCZ_OK) { cli_usage_error(v, "--arch %s: %s", t.arch, err); return EXIT_USAGE; }
        if (head) {   /* the architecture's document with its first weights, a fresh last layer */
            uint32_t was = 0;
            if ((s = dcz_net_store(net, NULL)) == DCZ_OK) {
                doc = net->doc;
                net->own_doc = 0;
                dcz_net_free(net);
                net = NULL;
                s = dcz_doc_new_head(doc, (uint32_t)head, (uint64_t)v->c.seed, &was, err, sizeof err);
                if (s == DCZ_OK) s = dcz_net_open(doc, &net);
            }
            if (s != DCZ_OK) {
                cli_error("train: --arch %s --head %d: %s", t.arch, head, err[0] ? err : dcz_status_str(s));
                rc = cli_exit_code(s, 1);
                goto done;
            }
        }
    }
    if (has_prep) {   /* recorded in the net's document, which becomes the file */
        if ((rc = cli_prep_fit(v, &prep, net->doc)) != -1) goto done;
        v->has_prep = 1;
        v->prep = net->doc->prep;
    }
    rc = cli_open_train_device(v, net);   /* before any data is read */
    if (rc == -1) rc = stage_load_splits(v, &train, &test);
    if (rc == -1) rc = stage_check_fit(v, &train, (int)net->in_rank, net->in_dims, (size_t)net->classes, 1);
    if (rc == -1 && t.validation == NOT_GIVEN && v->own_val) {
        t.validation = 0;   /* the folder's own val split is the validation samples */
        cli_note(v, "train: --data %s has a validation split of its own (val/): every training sample is trained "
                    "on", v->c.data);
    } else if (rc == -1 && t.validation == NOT_GIVEN) {
        t.validation = stage_validation_count(train.n);
        if (t.validation)
            cli_note(v, "train: %d of the %zu training samples held out as the validation samples that dcz "
                        "sensitivity and compress --budget measure on (--validation 0 trains on all)",
                     t.validation, train.n);
    }
    if (rc == -1 && t.validation) rc = stage_hold_out(v, &train, t.validation, &val);
    if (rc != -1) goto done;
    dcz_rng rng;
    dcz_rng_seed(&rng, (uint64_t)v->c.seed);
    double t0 = cli_now(), acc = 0, epoch_s = 0;   /* the epochs' own time, evaluation left out */
    for (int e = 0; e < t.epochs; e++) {
        dcz_sgd sgd = { .lr = dcz_lr_at(t.schedule, (float)t.lr, e, t.epochs), .momentum = (float)t.momentum,
                        .weight_decay = (float)t.wd, .batch = t.batch, .train_biases = 1, .train_weights = 1 };
        if (e < t.warmup) {
            sgd.ramp_from = (float)e / (float)t.warmup;
            sgd.ramp_to = (float)(e + 1) / (float)t.warmup;
        }
        cli_sgd_shared(v, &sgd);
        progress p;
        char label[32];
        snprintf(label, sizeof label, "epoch %d/%d", e + 1, t.epochs);
        progress_start(&p, v, label, 0);
        float loss = 0;
        const double te = cli_now();
        s = dcz_train_epoch(net, &train, &sgd, &rng, progress_cb, &p, &loss);
        epoch_s += cli_now() - te;
        progress_end(&p);
        if (s != DCZ_OK) { rc = cli_fail_data(v, s, "training", &train, NULL); goto done; }
        if (!v->c.quiet) {
            if ((s = dcz_net_evaluate(net, &test, &acc)) != DCZ_OK) {
                rc = cli_fail_data(v, s, "evaluating on the test samples", &test, NULL);
                goto done;
            }
            cli_note(v, "epoch %3d/%d  lr %.5f  loss %.4f  test accuracy %.2f%%", e + 1, t.epochs,
                     sgd.lr, loss, acc * 100);
        }
    }
    /* batch norm goes into the convolutions before anything is compressed:
     * the net's document then holds the trained model */
    s = dcz_net_fold_for_inference(net);
    if (s != DCZ_OK) { rc = cli_fail(v, s, "folding batch norm"); goto done; }
    stage_extra extra = { 0 };
    stage_extra_add(&extra, "arch = %s\nepochs = %d\nlr = %g\nschedule = %s\nwarmup_epochs = %d\nmomentum = %g\n"
                    "weight_decay = %g\nbatch = %d\n",
                    t.arch, t.epochs, t.lr, t.schedule, t.warmup, t.momentum, t.wd, t.batch);
    if (t.validation) stage_extra_add(&extra, "validation = %d\n", t.validation);
    if (v->augment) stage_extra_add(&extra, "augment = %s\n", cli_augment_name(v->augment));
    if (head) stage_extra_add(&extra, "head = %d\n", head);
    size_t bytes = 0;
    rc = stage_finish(v, net->doc, "train", &train, &extra, &test, v->c.out, &acc, &bytes);
    stage_extra_free(&extra);
    if (rc != -1) goto done;
    cli_note(v, "train: %s: test accuracy %.2f%%, %zu bytes, %.1f s", v->c.out, acc * 100, bytes,
             cli_now() - t0);
    if (v->c.json) {
        json_out j;
        json_begin(&j, cli_report(v));
        json_str(&j, "output", v->c.out);
        json_str(&j, "arch", t.arch);
        json_int(&j, "epochs", t.epochs);
        json_num(&j, "accuracy", acc);
        json_int(&j, "samples", (long long)test.n);
        json_int(&j, "file_bytes", (long long)bytes);
        json_num(&j, "seconds", cli_now() - t0);
        json_int(&j, "train_samples", (long long)train.n);
        json_num(&j, "epoch_seconds", t.epochs ? epoch_s / t.epochs : 0);
        json_str(&j, "device", v->tdev ? "gpu" : "cpu");
        cli_json_job(&j, v);
        json_end(&j);
    }
    rc = EXIT_OK;
done:
    dcz_net_free(net);
    dcz_doc_free(doc);
    dcz_dataset_free(&train);
    dcz_dataset_free(&test);
    dcz_dataset_free(&val);
    return rc;
}

/* A retraining stage's record of its teacher (--distill), when it had one. */
static void distill_record(const dcz_sgd *sgd, stage_extra *extra)
{
    if (sgd->teacher)
        stage_extra_add(extra, "distill = %g\ntemperature = %g\n", sgd->distill, sgd->temperature);
}

/* ---- prune ------------------------------------------------------------------ */

typedef struct prune_opts {
    const char *sparsity, *quality, *gap_bits, *vd_threshold;
    int rounds, epochs, final_epochs, batch, variational, block;
    double lr, momentum, wd, vd_kl;
} prune_opts;

static void prune_opts_init(prune_opts *p)
{
    memset(p, 0, sizeof *p);
    p->rounds = 4;
    p->epochs = 3;
    p->final_epochs = 12;
    p->batch = 64;
    p->block = 1;
    p->lr = NAN;   /* not given: a quarter of the training rate */
    p->vd_kl = NAN;   /* not given: 1, the variational bound itself */
    p->momentum = 0.9;
    p->wd = 1e-4;
}

#define PRUNE_SPECS(p) \
    { "sparsity", 0, OPT_STR, &(p).sparsity, "target sparsity per layer: 0.9 or 'fc1=0.93,fc3=0.65'" }, \
    { "quality", 0, OPT_STR, &(p).quality, "threshold = quality x std per layer, e.g. 'fc*=1.2'" }, \
    { "block", 0, OPT_INT, &(p).block, "prune whole blocks of N input channels of an output at a tap, the " \
      "smallest first (4: the quads 8-bit kernels multiply at once, then every one full; default 1: each weight " \
      "alone)" }, \
    { "rounds", 0, OPT_INT, &(p).rounds, "prune/retrain rounds, cubic schedule (default 4)" }, \
    { "prune-epochs", 0, OPT_INT, &(p).epochs, "retraining epochs per round (default 3)" }, \
    { "final-epochs", 0, OPT_INT, &(p).final_epochs, "retraining epochs after the last round (default 12)" }, \
    { "variational", 0, OPT_INT, &(p).variational, "epochs of sparse variational dropout before the rounds: the " \
      "targeted layers learn which weights to drop (default 0: magnitude alone)" }, \
    { "variational-threshold", 0, OPT_STR, &(p).vd_threshold, "log alpha from which the phase prunes a weight " \
      "(default 3), or off: the phase prunes nothing and the targets prune its weights by magnitude" }, \
    { "variational-kl", 0, OPT_FLOAT, &(p).vd_kl, "weight of the phase's KL penalty against the variational " \
      "bound's (default 1; less: a weaker pull toward dropping weights, which costs less accuracy)" }, \
    { "prune-lr", 0, OPT_FLOAT, &(p).lr, "retraining rate (default: training rate / 4)" }, \
    { "weight-decay", 0, OPT_FLOAT, &(p).wd, "retraining weight decay (default 1e-4)" }, \
    { "gap-bits", 0, OPT_STR, &(p).gap_bits, "relative position width per layer (default: fc 5, conv 8)" }

/* The prune plan for net from the options, every option and rule checked
 * (plan->targets malloc'd, by layer): -1, or the exit code after a message. */
static int plan_prune(const verb_ctx *v, const dcz_net *net, const dcz_doc *in, const void *opts, int retrain,
                      stage_plan *sp)
{
    const prune_opts *po = opts;
    dcz_prune_plan *plan = &sp->prune;
    rule_set sr, q;
    int rc = parse_rules(v, "sparsity", po->sparsity, &sr);
    if (rc == -1) rc = parse_rules(v, "quality", po->quality, &q);
    if (rc == -1) rc = check_rule_names(v, "sparsity", &sr, net);
    if (rc == -1) rc = check_rule_names(v, "quality", &q, net);
    if (rc != -1) return rc;
    if (po->rounds < 1 || po->epochs < 0 || po->final_epochs < 0 || po->batch < 1) {
        cli_usage_error(v, "--rounds must be >= 1 and epochs >= 0");
        return EXIT_USAGE;
    }
    if (po->variational < 0) {
        cli_usage_error(v, "--variational must be >= 0 (epochs of variational dropout; 0: none)");
        return EXIT_USAGE;
    }
    if ((rc = cli_check_block(v, po->block)) != -1) return rc;
    float vd_thr = 3.0f;
    if (po->vd_threshold && strcmp(po->vd_threshold, "off") == 0) {
        vd_thr = INFINITY;
    } else if (po->vd_threshold) {
        char *end;
        const double t = strtod(po->vd_threshold, &end);
        if (end == po->vd_threshold || *end || !(t > -10 && t < 10)) {
            cli_usage_error(v, "--variational-threshold must be a log alpha in (-10, 10) or off, not '%s'",
                            po->vd_threshold);
            return EXIT_USAGE;
        }
        vd_thr = (float)t;
    }
    if (po->vd_threshold && po->variational == 0) {
        cli_usage_error(v, "--variational-threshold applies to the variational phase: give --variational N too");
        return EXIT_USAGE;
    }
    if (!isnan(po->vd_kl) && !(po->vd_kl > 0 && po->vd_kl <= 10)) {
        cli_usage_error(v, "--variational-kl must be in (0, 10], not %g (1: the variational bound's own weight)",
                        po->vd_kl);
        return EXIT_USAGE;
    }
    if (!isnan(po->vd_kl) && po->variational == 0) {
        cli_usage_error(v, "--variational-kl applies to the variational phase: give --variational N too");
        return EXIT_USAGE;
    }
    if (po->variational > 0 && !retrain) {
        cli_usage_error(v, "--variational trains: give --data (the training split it learns the noise on)");
        return EXIT_USAGE;
    }
    if (po->variational > 0 && (v->shards > 1 || v->comm)) {
        cli_usage_error(v, "--variational runs in one process and one shard: drop --shards and mpirun");
        return EXIT_USAGE;
    }
    if (po->variational > 0 && v->tdev && retrain)
        cli_note(v, "prune: the variational phase trains on the CPU (its update is its own); the rounds retrain on "
                    "the GPU");
    /* The paper retrains at about a tenth of the original rate; our training
     * decays its rate by a cosine (mean: half the peak), and a quarter of the
     * peak measured best on LeNet-300-100 (+0.08 points vs -0.33 at a tenth). */
    const double lr = isnan(po->lr) ? trained_lr(in, 0.02) / 4 : po->lr;
    if ((rc = check_sgd_opts(v, "prune-lr", lr, po->momentum, po->wd)) != -1) return rc;
    dcz_prune_target *targets = calloc((size_t)net->nlayers, sizeof *targets);
    if (!targets) return cli_fail(v, DCZ_ERR_NOMEM, "the prune targets");
    const int defaults = !po->sparsity && !po->quality;
    for (int i = 0; i < net->nlayers; i++) {
        const char *name = net->layers[i].name;
        if (!dcz_tlayer_has_weights(&net->layers[i])) continue;
        if (rules_match(&q, name) && rules_match(&sr, name)) {
            cli_usage_error(v, "layer %s has both a --sparsity and a --quality rule: give it one", name);
            free(targets);
            return EXIT_USAGE;
        }
        if (rules_match(&q, name)) {
            targets[i].mode = DCZ_PRUNE_QUALITY;
            targets[i].value = rules_value(&q, name, 0);
        }
        if (rules_match(&sr, name) || defaults) {
            targets[i].mode = DCZ_PRUNE_SPARSITY;
            targets[i].value = rules_value(&sr, name, default_sparsity(net, i));
        }
        if (targets[i].mode == DCZ_PRUNE_SPARSITY && targets[i].value == 1) {
            /* every weight pruned: the layer's output is its bias alone,
             * whatever the input, and the network guesses */
            cli_usage_error(v, "layer %s: sparsity 1 prunes every weight of the layer, leaving its output the bias "
                            "alone for every input: give a sparsity below 1 (0.99 keeps one weight in 100)", name);
            free(targets);
            return EXIT_USAGE;
        }
        if ((targets[i].mode == DCZ_PRUNE_SPARSITY && (targets[i].value < 0 || targets[i].value > 1)) ||
            (targets[i].mode == DCZ_PRUNE_QUALITY && targets[i].value < 0)) {
            cli_usage_error(v, "layer %s: sparsity must be in [0, 1) and quality >= 0", name);
            free(targets);
            return EXIT_USAGE;
        }
    }
    dcz_prune_plan_init(plan);
    plan->targets = targets;
    /* without retraining, rounds would only reach the same masks in steps:
     * one shot */
    plan->rounds = retrain ? po->rounds : 1;
    plan->epochs = retrain ? po->epochs : 0;
    plan->final_epochs = retrain ? po->final_epochs : 0;
    plan->variational = retrain ? po->variational : 0;
    plan->variational_threshold = vd_thr;
    plan->variational_kl = isnan(po->vd_kl) ? 1.0 : po->vd_kl;
    plan->block = po->block;
    plan->sgd.lr = (float)lr;
    plan->sgd.momentum = (float)po->momentum;
    plan->sgd.weight_decay = (float)po->wd;
    plan->sgd.batch = po->batch;
    cli_sgd_shared(v, &plan->sgd);
    plan->seed = (uint64_t)v->c.seed;
    return -1;
}

typedef struct round_ctx { const verb_ctx *v; progress *p; int test; } round_ctx;

/* A prune round's line, printed as the round ends (a log followed with
 * tail -f shows it then, and a killed run keeps it). */
static void note_round(void *ctx, int r, int rounds, const dcz_prune_round *R)
{
    const round_ctx *c = ctx;
    progress_clear(c->p);
    if (c->test)
        cli_note(c->v, "prune round %d/%d: sparsity %.4f  accuracy %.2f%% -> %.2f%% after retraining", r, rounds,
                 R->target, R->acc_pruned * 100, R->acc_retrained * 100);
    else if (rounds == 1)
        cli_note(c->v, "prune: one shot to sparsity %.4f, no retraining (--data retrains, in rounds)", R->target);
    else
        cli_note(c->v, "prune round %d/%d: sparsity %.4f", r, rounds, R->target);
}

/* Prunes net per a plan (whose targets it frees); prints each round's line
 * as it ends, then the per-layer report. */
static int exec_prune(const verb_ctx *v, dcz_net *net, stage_plan *sp, const dcz_dataset *train,
                      const dcz_dataset *test, stage_extra *extra)
{
    dcz_prune_plan *plan = &sp->prune;
    dcz_prune_report rep;
    progress p;
    progress_start(&p, v, "prune", 0);
    round_ctx rc = { v, &p, test != NULL };
    plan->round_done = note_round;
    plan->round_ctx = &rc;
    dcz_status s = dcz_prune_run(net, plan, train, test, progress_cb, &p, &rep);
    progress_end(&p);
    free((void *)plan->targets);
    plan->targets = NULL;
    if (s != DCZ_OK) return cli_fail_data(v, s, "pruning", train, test);
    if (test && plan->variational && isinf(plan->variational_threshold))
        cli_note(v, "prune: %d epochs of variational dropout, nothing pruned by them (threshold off), accuracy %.2f%%",
                 plan->variational, rep.acc_variational * 100);
    else if (test && plan->variational)
        cli_note(v, "prune: %d epochs of variational dropout kept %zu of %zu weights, accuracy %.2f%%", plan->variational,
                 rep.variational_kept, rep.weights, rep.acc_variational * 100);
    if (test) cli_note(v, "prune: accuracy %.2f%% before, %.2f%% after the final retraining",
                       rep.acc_initial * 100, rep.acc_final * 100);
    cli_note(v, "%-10s %10s %10s %8s %10s", "layer", "weights", "kept", "density", "threshold");
    stage_extra_add(extra, "rounds = %d\nretrain_epochs = %d\nfinal_epochs = %d\nlr = %g\n", plan->rounds,
                    plan->epochs, plan->final_epochs, plan->sgd.lr);
    if (plan->block > 1) stage_extra_add(extra, "block = %d\n", plan->block);
    if (plan->variational) {
        stage_extra_add(extra, "variational_epochs = %d\nvariational_lr = %g\nvariational_kl = %g\n",
                        plan->variational, plan->variational_lr, plan->variational_kl);
        if (isinf(plan->variational_threshold)) stage_extra_add(extra, "variational_threshold = off\n");
        else stage_extra_add(extra, "variational_threshold = %g\n", plan->variational_threshold);
    }
    if (train && plan->sgd.augment && (plan->epochs || plan->final_epochs))
        stage_extra_add(extra, "augment = %s\n", cli_augment_name(plan->sgd.augment));
    if (train && (plan->epochs || plan->final_epochs || plan->variational)) distill_record(&plan->sgd, extra);
    for (int i = 0; i < rep.nlayers; i++) {
        const dcz_prune_layer_report *l = &rep.layers[i];
        char thr[32] = "-";   /* a layer left whole has no threshold */
        if (l->threshold >= 0) snprintf(thr, sizeof thr, "%.4f", l->threshold);
        cli_note(v, "%-10s %10zu %10zu %7.2f%% %10s", l->name, l->weights, l->kept, l->density * 100, thr);
        stage_extra_add(extra, "layer.%s = sparsity %.4f threshold %.6g\n", l->name, 1 - l->density,
                        l->threshold);
    }
    dcz_prune_report_free(&rep);
    return -1;
}

static const stage_steps prune_steps = { "prune", plan_prune, exec_prune };

/* ---- quantize ----------------------------------------------------------------- */

typedef struct quant_opts {
    const char *bits, *init, *gap_bits;
    int epochs, iters, batch;
    double lr;
} quant_opts;

static void quant_opts_init(quant_opts *q)
{
    memset(q, 0, sizeof *q);
    q->init = "linear";
    q->epochs = 4;
    q->iters = 100;
    q->batch = 64;
    q->lr = NAN;   /* not given: the quantize stage's default */
}

#define QUANT_SPECS(q) \
    { "bits", 0, OPT_STR, &(q).bits, "codebook bits per layer: 5 or 'fc*=5,conv*=8' (default: fc 5, conv 8)" }, \
    { "init", 0, OPT_STR, &(q).init, "centroid initialization: linear, density, random" }, \
    { "kmeans-iters", 0, OPT_INT, &(q).iters, "k-means iterations (default 100)" }, \
    { "quant-epochs", 0, OPT_INT, &(q).epochs, "centroid fine-tuning epochs (default 4)" }, \
    { "quant-lr", 0, OPT_FLOAT, &(q).lr, "centroid fine-tuning rate (default 1e-4)" }

/* The quantize plan for net from the options, every option and rule
 * checked (plan->bits malloc'd, by layer): -1, or the exit code after a
 * message. */
static int plan_quantize(const verb_ctx *v, const dcz_net *net, const dcz_doc *in, const void *opts, int retrain,
                         stage_plan *sp)
{
    const quant_opts *qo = opts;
    dcz_quant_plan *plan = &sp->quant;
    (void)in;
    sp->init = qo->init;
    rule_set br;
    int rc = parse_rules(v, "bits", qo->bits, &br);
    if (rc == -1) rc = check_rule_names(v, "bits", &br, net);
    if (rc != -1) return rc;
    dcz_km_init init;
    if (strcmp(qo->init, "linear") == 0) init = DCZ_KM_LINEAR;
    else if (strcmp(qo->init, "density") == 0) init = DCZ_KM_DENSITY;
    else if (strcmp(qo->init, "random") == 0) init = DCZ_KM_RANDOM;
    else { cli_usage_error(v, "--init must be linear, density or random, not '%s'", qo->init); return EXIT_USAGE; }
    if (qo->epochs < 0 || qo->iters < 0 || qo->batch < 1) {
        cli_usage_error(v, "--quant-epochs and --kmeans-iters must be >= 0");
        return EXIT_USAGE;
    }
    if (!isnan(qo->lr) && !(qo->lr > 0)) {
        cli_usage_error(v, "--quant-lr must be > 0, not %g", qo->lr);
        return EXIT_USAGE;
    }
    int *bits = calloc((size_t)net->nlayers, sizeof *bits);
    if (!bits) return cli_fail(v, DCZ_ERR_NOMEM, "the codebook sizes");
    for (int i = 0; i < net->nlayers; i++) {
        if (!dcz_tlayer_has_weights(&net->layers[i])) continue;
        double b = rules_value(&br, net->layers[i].name, default_bits(&net->layers[i]));
        if (b < 1 || b > 8 || b != floor(b)) {
            cli_usage_error(v, "--bits: %g for %s is not a whole number from 1 to 8", b, net->layers[i].name);
            free(bits);
            return EXIT_USAGE;
        }
        bits[i] = (int)b;
    }
    dcz_quant_plan_init(plan);
    plan->bits = bits;
    plan->init = init;
    plan->max_iter = qo->iters;
    plan->seed = (uint64_t)v->c.seed;
    plan->epochs = retrain ? qo->epochs : 0;
    if (!isnan(qo->lr)) plan->sgd.lr = (float)qo->lr;
    plan->sgd.batch = qo->batch;
    cli_sgd_shared(v, &plan->sgd);
    return -1;
}

/* Quantizes net per a plan (whose bits it frees); prints the per-layer
 * report. */
static int exec_quantize(const verb_ctx *v, dcz_net *net, stage_plan *sp, const dcz_dataset *train,
                         const dcz_dataset *test, stage_extra *extra)
{
    dcz_quant_plan *plan = &sp->quant;
    dcz_quant_report rep;
    progress p;
    progress_start(&p, v, "quantize", 0);
    dcz_status s = dcz_quantize_finetune(net, plan, train, test, progress_cb, &p, &rep);
    progress_end(&p);
    free((void *)plan->bits);
    plan->bits = NULL;
    if (s != DCZ_OK) return cli_fail_data(v, s, "quantizing", train, test);
    if (test) cli_note(v, "quantize: accuracy %.2f%% before, %.2f%% clustered, %.2f%% after fine-tuning",
                       rep.acc_initial * 100, rep.acc_clustered * 100, rep.acc_final * 100);
    /* both columns measure the shared values against the weights before
     * quantization: k-means minimizes that distance, fine-tuning the loss,
     * so the tuned one is larger by design, which the note says */
    const int tuned = train && plan->epochs > 0;
    cli_note(v, "%-10s %5s %5s %10s %6s %12s %12s", "layer", "bits", "k", "kept", "iters", "rms k-means", "rms tuned");
    stage_extra_add(extra, "init = %s\nfinetune_epochs = %d\nfinetune_lr = %g\n", sp->init, plan->epochs,
                    plan->sgd.lr);
    if (train && plan->sgd.augment && plan->epochs)
        stage_extra_add(extra, "augment = %s\n", cli_augment_name(plan->sgd.augment));
    if (train && plan->epochs) distill_record(&plan->sgd, extra);
    for (int i = 0; i < rep.nlayers; i++) {
        const dcz_quant_layer_report *l = &rep.layers[i];
        char after[32] = "-";
        if (tuned) snprintf(after, sizeof after, "%.3g", l->rms_final);
        cli_note(v, "%-10s %5d %5d %10zu %6d %12.3g %12s", l->name, l->bits, l->k, l->kept, l->iterations,
                 l->rms_error, after);
        stage_extra_add(extra, "layer.%s = bits %d rms %.4g\n", l->name, l->bits, l->rms_error);
    }
    cli_note(v, "(rms: how far the shared values lie from the weights before quantization, RMS over the kept "
             "weights; k-means makes it least%s)", tuned ? ", and fine-tuning then moves the values to lower the "
             "loss, not to stay near those weights: the tuned figure grows by design, and the accuracies above say what tuning gained" : "");
    dcz_quant_report_free(&rep);
    return -1;
}

static const stage_steps quantize_steps = { "quantize", plan_quantize, exec_quantize };

/* ---- the single-stage verbs ------------------------------------------------------ */

/* Loads IN and its net; its bytes too when bytes is not NULL (malloc'd). */
/* head > 0: the last fully connected layer replaced by a fresh one of head
 * outputs (seeded by --seed), and *bytes the document so changed. */
static int open_model(verb_ctx *v, uint32_t head, dcz_doc **doc, dcz_net **net, uint8_t **bytes, size_t *nbytes)
{
    uint8_t *own = NULL;   /* the bytes, for the teacher alone */
    size_t len = 0;
    if (!bytes && v->distill > 0) {
        bytes = &own;
        nbytes = &len;
    }
    int rc = stage_load_doc_bytes(v, v->pos[0], doc, bytes, nbytes);
    if (rc == -1 && v->distill > 0) rc = cli_open_teacher(v, *bytes, *nbytes);
    free(own);
    if (rc != -1) return rc;
    if (head) {
        char err[256] = "";
        uint32_t was = 0;
        dcz_status hs = dcz_doc_new_head(*doc, head, (uint64_t)v->c.seed, &was, err, sizeof err);
        if (hs != DCZ_OK) {
            cli_error("%s: %s: --head %u: %s", v->verb, v->pos[0], head, err[0] ? err : dcz_status_str(hs));
            return cli_exit_code(hs, 1);
        }
        free(*bytes);
        *bytes = NULL;
        hs = dcz_doc_write(*doc, bytes, nbytes);
        if (hs != DCZ_OK) return cli_fail(v, hs, "the model with its new head");
        cli_note(v, "%s: %s: its last layer's %u outputs replaced by %u fresh ones (--head), retrained with the "
                 "rest", v->verb, v->pos[0], was, head);
    }
    dcz_status s = dcz_net_open(*doc, net);
    if (s != DCZ_OK) {
        cli_error("%s: %s: %s", v->verb, v->pos[0], dcz_status_str(s));
        return cli_exit_code(s, 1);
    }
    if ((*doc)->calib)
        cli_note(v, "%s: %s is calibrated; its table does not fit changed weights and is not kept "
                 "(run dcz calibrate on the output)", v->verb, v->pos[0]);
    return -1;
}

/* With --data, both splits, checked against net; without, both zeroed. */
static int open_data(const verb_ctx *v, const dcz_net *net, dcz_dataset *train, dcz_dataset *test)
{
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    if (!v->c.data) return -1;
    int rc = stage_load_splits(v, train, test);
    if (rc == -1) rc = stage_check_fit(v, train, (int)net->in_rank, net->in_dims, (size_t)net->classes, 0);
    return rc;
}

static void print_stage_json(const verb_ctx *v, const char *stage, double acc, size_t bytes, size_t params)
{
    if (!v->c.json) return;
    json_out j;
    json_begin(&j, cli_report(v));
    json_str(&j, "stage", stage);
    json_str(&j, "output", v->c.out);
    json_int(&j, "file_bytes", (long long)bytes);
    json_int(&j, "dense_fp32_bytes", (long long)params * 4);
    json_num(&j, "ratio", bytes ? (double)params * 4 / (double)bytes : 0);
    if (acc >= 0) json_num(&j, "accuracy", acc);
    cli_json_job(&j, v);
    json_end(&j);
}

/* prune and quantize alone: load, plan, read the data, run the stage,
 * write, report. */
static int run_single_stage(verb_ctx *v, const stage_steps *st, const void *opts, const char *gap_bits)
{
    dcz_options ro;
    int rc = need_output(v);
    if (rc == -1) rc = cli_runtime_options(v, &ro);
    if (rc != -1) return rc;
    dcz_doc *doc = NULL;
    dcz_net *net = NULL;
    dcz_dataset train, test;
    memset(&train, 0, sizeof train);
    memset(&test, 0, sizeof test);
    stage_plan sp;
    memset(&sp, 0, sizeof sp);
    /* a dry run reads and checks the data it is given but runs without it */
    const int plan_data = v->c.data != NULL, have = plan_data && !v->dry_run;
    stage_extra extra = { 0 };
    double acc = -1;
    size_t bytes = 0;
    rc = open_model(v, 0, &doc, &net, NULL, NULL);
    if (rc == -1 && plan_data && !v->dry_run) rc = cli_open_train_device(v, net);
    if (rc == -1) rc = check_rule_text_names(v, "gap-bits", gap_bits, net);
    if (rc == -1) rc = st->plan(v, net, doc, opts, plan_data, &sp);
    if (rc == -1 && plan_data) rc = open_data(v, net, &train, &test);
    if (rc == -1) rc = st->exec(v, net, &sp, have ? &train : NULL, have ? &test : NULL, &extra);
    if (rc == -1) rc = finish_net(v, net, st->name, gap_bits, plan_data ? &train : NULL, &extra, have ? &test : NULL,
                                  v->dry_run ? NULL : v->c.out, &acc, &bytes);
    if (rc == -1 && v->dry_run) {
        dry_report(v, doc, 0, NULL, 0);
        rc = EXIT_OK;
    } else if (rc == -1) {
        if (acc >= 0) cli_note(v, "%s: %s: test accuracy %.2f%%, %zu bytes", st->name, v->c.out, acc * 100, bytes);
        else cli_note(v, "%s: %s: %zu bytes", st->name, v->c.out, bytes);
        print_stage_json(v, st->name, acc, bytes, dcz_doc_param_count(doc));
        rc = EXIT_OK;
    }
    free((void *)sp.prune.targets);
    free((void *)sp.quant.bits);
    stage_extra_free(&extra);
    dcz_net_free(net);
    dcz_doc_free(doc);
    dcz_dataset_free(&train);
    dcz_dataset_free(&test);
    return rc;
}

int cmd_prune(verb_ctx *v)
{
    prune_opts po;
    prune_opts_init(&po);
    const opt_spec specs[] = { PRUNE_SPECS(po), DRY_RUN_SPEC(v), SHARDS_SPEC(v), AUGMENT_SPEC(v),
                               DISTILL_SPECS(v), STRIP_SPEC(v), { NULL, 0, OPT_FLAG, NULL, NULL } };
    v->usage = "dcz prune IN [--sparsity S | --quality Q] [--data DATA] -o OUT";
    v->summary = "Magnitude pruning. With --data, iterative: prune on a cubic schedule over\n"
                 "--rounds rounds, retraining after each at a quarter of the training rate with\n"
                 "masks that keep pruned weights at zero. Without --data, one shot, no retraining.";
    int rc = cli_parse(v, specs, 1, 1);
    if (rc == -1) rc = cli_check_shards(v);
    if (rc == -1) rc = cli_check_augment(v);
    if (rc == -1) rc = cli_check_distill(v);
    if (rc != -1) return rc;
    const char *names[] = { "sparsity", "quality", "gap-bits" }, *texts[] = { po.sparsity, po.quality, po.gap_bits };
    if ((rc = check_rule_syntax(v, names, texts, 3)) != -1) return rc;
    return run_single_stage(v, &prune_steps, &po, po.gap_bits);
}

int cmd_quantize(verb_ctx *v)
{
    quant_opts qo;
    quant_opts_init(&qo);
    const char *gap_bits = NULL;
    const opt_spec specs[] = {
        QUANT_SPECS(qo),
        { "gap-bits", 0, OPT_STR, &gap_bits, "relative position width per layer (default: fc 5, conv 8)" },
        DRY_RUN_SPEC(v),
        SHARDS_SPEC(v),
        AUGMENT_SPEC(v),
        DISTILL_SPECS(v),
        STRIP_SPEC(v),
        { NULL, 0, OPT_FLAG, NULL, NULL }
    };
    v->usage = "dcz quantize IN [--bits B] [--data DATA] -o OUT";
    v->summary = "Weight sharing: per-layer k-means codebooks of 2^bits centroids (linear\n"
                 "initialization by default) over the kept weights. With --data, the centroids\n"
                 "are then fine-tuned (a centroid moves by the sum of its weights' gradients).";
    int rc = cli_parse(v, specs, 1, 1);
    if (rc == -1) rc = cli_check_shards(v);
    if (rc == -1) rc = cli_check_augment(v);
    if (rc == -1) rc = cli_check_distill(v);
    if (rc != -1) return rc;
    const char *names[] = { "bits", "gap-bits" }, *texts[] = { qo.bits, gap_bits };
    if ((rc = check_rule_syntax(v, names, texts, 2)) != -1) return rc;
    return run_single_stage(v, &quantize_steps, &qo, gap_bits);
}

/* The encode stage works on the document itself: only stream codings,
 * position widths, codebook packing and the bias format change; every
 * weight stays as is. A layer no gap-bits rule names gets the position
 * width that stores it in the fewest bytes; codebook entries no weight uses
 * are dropped and the index width fits what is left. With entropy coding
 * (huffman) each stream takes the smallest of raw, Huffman and (arith)
 * arithmetic coding; without, fixed widths. */
/* How biases and codebooks are stored (-1: as they are). */
enum { BIAS_F32 = 0, BIAS_F16 = 1, BIAS_I8 = 2 };
enum { CODEBOOK_F32 = 0, CODEBOOK_F16 = 1 };

/* The units (outputs, filters) that no layer reads go (dcz_doc_shrink;
 * the outputs stay the same), each layer's count noted. */
static int shrink_units(const verb_ctx *v, dcz_doc *doc, uint32_t *removed)
{
    uint32_t *before = malloc((doc->nlayers ? doc->nlayers : 1) * sizeof *before), gone = 0;
    if (!before) return cli_fail(v, DCZ_ERR_NOMEM, "the layers' widths");
    for (uint32_t i = 0; i < doc->nlayers; i++)
        before[i] = doc->layers[i].op == DCZ_OP_DENSE || doc->layers[i].op == DCZ_OP_CONV2D
                        ? (uint32_t)doc->layers[i].attr[1] : 0;   /* out, out_c */
    const dcz_status s = dcz_doc_shrink(doc, &gone);
    if (s != DCZ_OK) {
        free(before);
        return cli_fail(v, s, "removing the units no layer reads");
    }
    if (gone) {
        char text[1024];
        size_t n = 0;
        for (uint32_t i = 0; i < doc->nlayers && n < sizeof text; i++)
            if (before[i] && (uint32_t)doc->layers[i].attr[1] != before[i])
                n += (size_t)snprintf(text + n, sizeof text - n, "%s%s %u -> %d", n ? ", " : "", doc->layers[i].name,
                                      before[i], doc->layers[i].attr[1]);
        cli_note(v, "encode: %u units that no layer reads removed (the outputs stay the same): %s", gone, text);
    }
    free(before);
    *removed = gone;
    return -1;
}

static int apply_encoding(const verb_ctx *v, dcz_doc *doc, const char *gap_rules, int huffman, int arith,
                          int bias, int codebook, uint32_t *units_removed)
{
    rule_set gr;
    int rc = parse_rules(v, "gap-bits", gap_rules, &gr);
    if (rc != -1) return rc;
    const char *names[DCZ_MAX_LAYERS];
    int n = 0;
    for (uint32_t i = 0; i < doc->nlayers && n < DCZ_MAX_LAYERS; i++)
        if (doc->layers[i].ntensors > 0) names[n++] = doc->layers[i].name;
    if ((rc = report_unmatched(v, "gap-bits", &gr, names, n)) != -1) return rc;
    if ((rc = shrink_units(v, doc, units_removed)) != -1) return rc;
    for (uint32_t i = 0; i < doc->nlayers; i++) {
        dcz_doc_layer *l = &doc->layers[i];
        if (l->ntensors != 2) continue;   /* DENSE and CONV2D: weight, bias */
        dcz_doc_tensor *w = &l->t[0];
        if (w->enc == DCZ_ENC_SPARSE_F32 || w->enc == DCZ_ENC_CODEBOOK) {
            w->gap_coding = w->index_coding = huffman ? DCZ_CODING_HUFFMAN : DCZ_CODING_RAW;
            const double g = rules_value(&gr, l->name, 0);   /* 0: the smallest */
            if (g < 0 || g > 8 || g != floor(g)) {
                cli_usage_error(v, "--gap-bits: %g for %s is not a whole number from 1 to 8", g, l->name);
                return EXIT_USAGE;
            }
            dcz_status s = dcz_doc_tensor_pack(w, (unsigned)g);
            if (s == DCZ_OK && huffman) s = dcz_doc_tensor_choose_codings(w, (unsigned)g, arith);
            if (s != DCZ_OK) {
                char what[DCZ_MAX_NAME + 32];
                snprintf(what, sizeof what, "packing the weights of %s", l->name);
                return cli_fail(v, s, what);
            }
        }
        if (w->enc == DCZ_ENC_CODEBOOK && codebook == CODEBOOK_F16 && !dcz_doc_tensor_codebook_f16(w))
            cli_note(v, "%s: note: %s's codebook holds a value past f16's range: kept as f32", v->verb, l->name);
        else if (w->enc == DCZ_ENC_CODEBOOK && codebook == CODEBOOK_F32)
            w->codebook_f16 = 0;   /* f16 values are exact in f32 */
        if (bias == BIAS_I8) {
            dcz_status s = dcz_doc_tensor_to_i8(&l->t[1]);
            if (s != DCZ_OK) return cli_fail(v, s, "the biases in 8 bits");
        } else if (bias >= 0) {
            l->t[1].enc = bias == BIAS_F16 ? DCZ_ENC_F16 : DCZ_ENC_F32;
            for (size_t k = 0; k < l->t[1].n && bias == BIAS_F16; k++)
                l->t[1].values[k] = dcz_f16_to_f32(dcz_f32_to_f16(l->t[1].values[k]));
        }
    }
    return -1;
}

static int bias_mode(const verb_ctx *v, const char *bias)
{
    if (!bias) return -1;
    if (strcmp(bias, "f16") == 0) return BIAS_F16;
    if (strcmp(bias, "f32") == 0) return BIAS_F32;
    if (strcmp(bias, "i8") == 0) return BIAS_I8;
    cli_usage_error(v, "--bias must be f32, f16 or i8");
    return -2;
}

static int codebook_mode(const verb_ctx *v, const char *codebook)
{
    if (!codebook) return -1;
    if (strcmp(codebook, "f16") == 0) return CODEBOOK_F16;
    if (strcmp(codebook, "f32") == 0) return CODEBOOK_F32;
    cli_usage_error(v, "--codebook must be f32 or f16");
    return -2;
}

/* The names of the modes, for the stage records and recipes. */
static const char *const bias_names[] = { [BIAS_F32] = "f32", [BIAS_F16] = "f16", [BIAS_I8] = "i8" };
static const char *const codebook_names[] = { [CODEBOOK_F32] = "f32", [CODEBOOK_F16] = "f16" };

int cmd_encode(verb_ctx *v)
{
    const char *gap_bits = NULL, *bias = NULL, *codebook = NULL;
    int no_huffman = 0, no_arith = 0;
    const opt_spec specs[] = {
        { "gap-bits", 0, OPT_STR, &gap_bits, "relative position width per layer (default: the smallest)" },
        { "no-huffman", 0, OPT_FLAG, &no_huffman, "store the streams with fixed widths" },
        { "no-arith", 0, OPT_FLAG, &no_arith, "no arithmetic coding: raw or Huffman streams (format 2.1 readers)" },
        { "bias", 0, OPT_STR, &bias, "bias format: f32, f16 or i8 (default: as in IN)" },
        { "codebook", 0, OPT_STR, &codebook, "codebook format: f32 or f16 (default: as in IN)" },
        DRY_RUN_SPEC(v),
        STRIP_SPEC(v),
        { NULL, 0, OPT_FLAG, NULL, NULL }
    };
    v->usage = "dcz encode IN [--data DATA] -o OUT";
    v->summary = "Entropy coding: the codebook-index stream and the position stream of each\n"
                 "sparse layer, each stored raw, Huffman-coded or arithmetic-coded (positions\n"
                 "then as a keep mask), whichever is smallest.\n"
                 "Codebook entries no weight uses are dropped and each layer's positions take\n"
                 "the width that stores them smallest, unless --gap-bits names the layer.\n"
                 "With --data the accuracy of the result is measured and recorded.";
    v->skip = CLI_NO_SEED;
    int rc = cli_parse(v, specs, 1, 1);
    if (rc != -1) return rc;
    if ((rc = need_output(v)) != -1) return rc;
    const int bm = bias_mode(v, bias), cm = codebook_mode(v, codebook);
    if (bm == -2 || cm == -2) return EXIT_USAGE;
    dcz_doc *doc = NULL;
    dcz_dataset train, test;
    memset(&train, 0, sizeof train);
    memset(&test, 0, sizeof test);
    double acc = -1;
    size_t bytes = 0;
    rc = stage_load_doc(v, v->pos[0], &doc);
    if (rc == -1 && v->c.data) rc = stage_load_data(v, DCZ_SPLIT_TEST, &test);
    const size_t params = rc == -1 ? dcz_doc_param_count(doc) : 0;   /* the input's: units may go */
    uint32_t gone = 0;
    if (rc == -1) rc = apply_encoding(v, doc, gap_bits, !no_huffman, !no_arith, bm, cm, &gone);
    stage_extra extra = { 0 };
    stage_extra_add(&extra, "huffman = %s\narith = %s\n", no_huffman ? "no" : "yes",
                    no_huffman || no_arith ? "no" : "yes");
    if (gone) stage_extra_add(&extra, "units_removed = %u\n", gone);
    if (bm >= 0) stage_extra_add(&extra, "bias = %s\n", bias_names[bm]);
    if (cm >= 0) stage_extra_add(&extra, "codebook = %s\n", codebook_names[cm]);
    /* a dry run is the whole run, the output left unwritten: its bytes are exact */
    if (rc == -1)
        rc = stage_finish(v, doc, "encode", NULL, &extra, v->c.data ? &test : NULL, v->dry_run ? NULL : v->c.out,
                          &acc, &bytes);
    stage_extra_free(&extra);
    if (rc == -1 && v->dry_run) {
        dry_report(v, doc, 1, NULL, 0);
        rc = EXIT_OK;
    } else if (rc == -1) {
        cli_note(v, "encode: %s: %zu bytes", v->c.out, bytes);
        print_stage_json(v, "encode", acc, bytes, params);
        rc = EXIT_OK;
    }
    dcz_doc_free(doc);
    dcz_dataset_free(&test);
    return rc;
}

/* ---- compress: prune, quantize, encode ------------------------------------------- */

static int write_stage_file(const verb_ctx *v, const char *dir, const char *name, char *path, size_t plen)
{
    if (!dir) return 0;
    snprintf(path, plen, "%s/%s.dcz", dir, name);
    return 1;
}

/* What every compress run shares: the encoding options and the data
 * (train without the validation samples; val empty without them). */
typedef struct compress_job {
    const char *gap_bits, *stages_dir;
    int bias, codebook, validation;   /* bias: BIAS_*; codebook: CODEBOOK_* */
    int light_bias, light_codebook;   /* a budget's run also measures its file with these (the
                                         formats not given: i8, f16) and keeps the lighter when it
                                         stays within or loses nothing (budget_lighter); equal to
                                         bias and codebook: not tried */
    dcz_dataset train, test, val;
} compress_job;

/* The encode stage of compress: doc (a quantized model stored with f32
 * biases: net's document, or one read back from its bytes) entropy-coded
 * with biases and codebooks in the formats given, recorded, measured on te
 * and written to out when set, into *res. Exit code or -1. */
static int encode_stage(const verb_ctx *v, const compress_job *job, dcz_doc *doc, int bias, int codebook,
                        const dcz_dataset *te, const char *out, stage_result *res)
{
    uint32_t gone = 0;
    int rc = apply_encoding(v, doc, job->gap_bits, 1, 1, bias, codebook, &gone);
    if (rc != -1) return rc;
    stage_extra extra = { 0 };
    stage_extra_add(&extra, "huffman = yes\narith = yes\nbias = %s\ncodebook = %s\n", bias_names[bias],
                    codebook_names[codebook]);
    if (gone) stage_extra_add(&extra, "units_removed = %u\n", gone);
    res->name = "encode";
    rc = stage_finish(v, doc, "encode", NULL, &extra, te, out, &res->acc, &res->bytes);
    stage_extra_free(&extra);
    return rc;
}

/* The runs of compress: prune, quantize and encode net (over doc, planned
 * in sp) into res[1..3] (res[0] is the input's), the stages written to
 * job->stages_dir when set and the result to out when set; doc then holds
 * the encoded model. A dry run (no data) runs the stages without
 * retraining. When val_floor >= 0 the run stops after pruning if the
 * validation accuracy is already below it (*stopped set). When pre is
 * set, *pre gets the quantized model's bytes before encoding (malloc'd),
 * which encode_stage can code again in other formats. Exit code or -1. */
static int compress_stages(const verb_ctx *v, const compress_job *job, dcz_net *net, stage_plan *sp,
                           const char *out, double val_floor, int *stopped, stage_result *res, int *nres,
                           uint8_t **pre, size_t *pre_len)
{
    const int dry = v->dry_run;
    const dcz_dataset *tr = dry ? NULL : &job->train, *te = dry ? NULL : &job->test;
    char path[4096];
    stage_extra extra = { 0 };
    if (job->validation) stage_extra_add(&extra, "validation = %d\n", job->validation);
    /* prune */
    int rc = exec_prune(v, net, sp, tr, te, &extra);
    if (rc == -1 && val_floor >= 0) {
        double acc;
        dcz_status s = dcz_net_evaluate(net, &job->val, &acc);
        if (s != DCZ_OK) {
            rc = cli_fail_data(v, s, "evaluating on the validation samples", &job->val, NULL);
        } else if ((*stopped = acc < val_floor)) {
            cli_note(v, "compress: validation accuracy %.2f%% after pruning, below %.2f%%: stopped", acc * 100,
                     val_floor * 100);
            stage_extra_free(&extra);
            return -1;
        }
    }
    if (rc == -1) {
        int keep = write_stage_file(v, job->stages_dir, "prune", path, sizeof path);
        rc = finish_net(v, net, "prune", job->gap_bits, &job->train, &extra, te, keep ? path : NULL,
                        &res[*nres].acc, &res[*nres].bytes);
        res[(*nres)++].name = "prune";
    }
    /* quantize */
    stage_extra_clear(&extra);   /* the validation samples are the prune record's */
    if (rc == -1) rc = exec_quantize(v, net, sp, tr, te, &extra);
    if (rc == -1) {
        int keep = write_stage_file(v, job->stages_dir, "quantize", path, sizeof path);
        rc = finish_net(v, net, "quantize", job->gap_bits, &job->train, &extra, te, keep ? path : NULL,
                        &res[*nres].acc, &res[*nres].bytes);
        res[(*nres)++].name = "quantize";
    }
    stage_extra_free(&extra);
    /* encode: the quantized net with entropy-coded streams, its biases in
     * f32 until encode_stage sets their format */
    if (rc == -1) rc = store_net(v, net, NULL, 1, 0);
    if (rc == -1 && pre) {
        dcz_status s = dcz_doc_write(net->doc, pre, pre_len);
        if (s != DCZ_OK) rc = cli_fail(v, s, "encoding the quantized model");
    }
    if (rc == -1) rc = encode_stage(v, job, net->doc, job->bias, job->codebook, te, out, &res[*nres]);
    if (rc == -1) (*nres)++;
    return rc;
}

/* ---- compress --budget: the smallest file within an accuracy budget ------------- */

/* The scan's levels for a budget: finer where compression happens. */
static const double budget_sparsity[] = { 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.92, 0.94, 0.95, 0.96, 0.97,
                                          0.975, 0.98, 0.985, 0.99 };
/* The codebooks get the fewest bytes whose scan losses (no fine-tuning),
 * summed over the layers, stay within this share of the budget:
 * fine-tuning recovers part of it, and the rest is left to pruning. */
#define BUDGET_BITS_SHARE 0.25
/* A run stops after pruning when its validation accuracy is this many
 * points below the floor: the quantize stage's fine-tuning has been
 * measured to win back up to 0.3 points (LeNet-300-100, 89.02% -> 89.31%).
 * --budget-confidence does not raise it: the standard error of a run's
 * change needs per-sample results that the pruning stage's measurement
 * does not keep, so a run that cannot be within at Z > 0 may go on to the
 * end; it is measured, and refused, there. */
#define BUDGET_STOP_MARGIN 0.5
/* Gradual pruning, a round per epoch (Zhu and Gupta): measured on
 * LeNet-300-100 at 97.5 / 94 / 80% with 4-bit codebooks, 12 rounds of one
 * epoch and 12 final epochs reach 89.26% where 4 rounds of 3 epochs and the
 * same final epochs reach 88.99%, for the same bytes. */
#define BUDGET_ROUNDS 12
/* Candidates past the scan's most accurate one after a variational phase,
 * each every layer a level less sparse: at most this many, and at most an
 * eighth of all (budget_cands) */
#define BUDGET_VARIATIONAL_STEPS 4
#define BUDGET_ROUND_EPOCHS 1

/* The candidates of a budget of R runs: 2^R - 1, whose bisection the R
 * runs complete (one run takes three, so that it measures the middle one:
 * of two, it would spend itself on the smallest, every layer at the scan's
 * sparsest). After a variational phase, whose weights prune almost free in
 * the scan up to about 97% where the retrained runs still lose, some of
 * them go past the scan's most accurate one, less sparse, and the sweep
 * spreads the others: appended to a full sweep they made 35 for 5 runs,
 * and the bisection stopped a candidate short (the README's LeNet-5 on an
 * AMD EPYC: 108.1x out, 94.3x within, the one between never run). */
static dcz_status budget_cands(const dcz_sens_report *scan, const dcz_sens_plan *plan, double budget, int runs,
                               int variational, dcz_budget_cands *cands)
{
    const int total = runs > 1 ? (1 << runs) - 1 : 3;
    int past = 0;
    if (variational) {
        past = (total + 1) / 8;
        past = past < 1 ? 1 : past > BUDGET_VARIATIONAL_STEPS ? BUDGET_VARIATIONAL_STEPS : past;
    }
    dcz_status s = dcz_budget_candidates(scan, plan, budget * BUDGET_BITS_SHARE, total - past, cands);
    if (s == DCZ_OK && past) s = dcz_budget_extend(scan, plan, past, cands);
    return s;
}

typedef struct budget_run {
    stage_result res[4];
    int nres, stopped;
    int bias, codebook;        /* the formats of its file (BIAS_*, CODEBOOK_*) */
    double val_acc, margin;    /* margin: the standard error of its change */
    uint8_t *file;             /* the encoded output, owned */
    size_t len;
} budget_run;

typedef struct budget_ctx {
    verb_ctx *v;
    compress_job *job;
    prune_opts po;             /* sparsity and bits: each candidate's rules */
    quant_opts qo;
    int variational;           /* epochs of the variational phase run first (0: none) */
    double variational_kl;     /* with variational: its --variational-kl (NAN: not given) */
    double dense_bytes;        /* the input's parameters as dense fp32 (a run's file may have
                                  fewer units) */
    const uint8_t *in;         /* the input's bytes */
    size_t in_len;
    stage_result input;
    const dcz_budget_cands *cands;
    double floor;
    double z;                  /* --budget-confidence: standard errors a run keeps above the floor */
    uint8_t *base_right, *right; /* per validation sample: the input's, a run's */
    dcz_options ro;
    budget_run *runs;          /* (runs + 1), in the order run */
    int nruns, rc;             /* rc: the exit code of a failed run */
} budget_ctx;

/* Candidate c's rules: "name=value,..." for the sparsity (bits 0) or the
 * codebook widths. malloc'd, NULL when out of memory. */
static char *candidate_rules(const dcz_net *net, const dcz_budget_cand *c, int nlayers, int bits)
{
    size_t cap = 1;
    for (int l = 0; l < nlayers; l++) cap += strlen(net->layers[c->layers[l].layer].name) + 32;
    char *t = malloc(cap), *p = t;
    if (!t) return NULL;
    *p = 0;
    for (int l = 0; l < nlayers; l++) {
        const dcz_budget_layer *L = &c->layers[l];
        const char *name = net->layers[L->layer].name, *sep = l ? "," : "";
        if (bits) {
            p += sprintf(p, "%s%s=%d", sep, name, L->bits);
            continue;
        }
        /* a plan level reads as written; a layer's own sparsity (kept as
         * it is) needs every digit to prune nothing more */
        char num[32];
        snprintf(num, sizeof num, "%.4g", L->sparsity);
        if (strtod(num, NULL) != L->sparsity) snprintf(num, sizeof num, "%.17g", L->sparsity);
        p += sprintf(p, "%s%s=%s", sep, name, num);
    }
    return t;
}

/* Run r's quantized model (pre, its bytes before encoding) coded again
 * with the job's lighter formats: 8-bit biases and f16 codebooks for the
 * formats not given. Their file replaces r's when it is within the floor
 * (dcz_budget_within), or loses nothing against r (at Z > 0: its accuracy
 * less Z standard errors is no lower than r's). Exit code or -1. */
static int budget_lighter(budget_ctx *b, budget_run *r, const uint8_t *pre, size_t pre_len)
{
    const verb_ctx *v = b->v;
    const compress_job *job = b->job;
    verb_ctx quiet = *v;   /* encode's notes (units removed) came with the first coding */
    quiet.c.quiet = 1;
    dcz_doc *doc = NULL;
    uint8_t *file = NULL;
    size_t len = 0;
    stage_result res;
    double acc = 0, margin = 0;
    dcz_status s = dcz_doc_read(pre, pre_len, &doc);
    int rc = s == DCZ_OK ? -1 : cli_fail(v, s, "reading the quantized model again");
    if (rc == -1) rc = encode_stage(&quiet, job, doc, job->light_bias, job->light_codebook, &job->test, NULL, &res);
    if (rc == -1) {
        s = dcz_doc_write(doc, &file, &len);
        if (s == DCZ_OK && len != res.bytes) s = DCZ_ERR_INTERNAL;
        if (s == DCZ_OK) s = stage_eval_bytes(file, len, &b->ro, &job->val, b->right, &acc);
        if (s != DCZ_OK) rc = cli_fail_data(v, s, "measuring the run on the validation samples", &job->val, NULL);
        else margin = dcz_paired_se(b->base_right, b->right, job->val.n);
    }
    dcz_doc_free(doc);
    /* loses nothing: its accuracy less Z errors no lower than the first's */
    const int take = rc == -1 && (dcz_budget_within(acc, margin, b->floor, b->z) ||
                                  acc - b->z * margin >= r->val_acc - b->z * r->margin);
    if (rc == -1)
        cli_note(v, "compress --budget: run %d with %s biases and %s codebooks: %zu bytes (%.1fx), validation "
                 "accuracy %.2f%%: %s", b->nruns + 1, bias_names[job->light_bias],
                 codebook_names[job->light_codebook], len, b->dense_bytes / (double)len, acc * 100,
                 take ? "taken" : "not taken");
    if (take) {
        free(r->file);
        r->file = file;
        file = NULL;
        r->len = len;
        r->val_acc = acc;
        r->margin = margin;
        r->res[r->nres - 1] = res;
        r->bias = job->light_bias;
        r->codebook = job->light_codebook;
    }
    free(file);
    return rc;
}

/* A candidate's run (a dcz_budget_try_fn): the whole compress of the input
 * with its rules, measured on the validation samples by libdcz. */
static dcz_status budget_try(void *ctx, int cand, double *acc, double *margin, size_t *bytes)
{
    budget_ctx *b = ctx;
    const verb_ctx *v = b->v;
    budget_run *r = &b->runs[b->nruns];
    memset(r, 0, sizeof *r);
    dcz_doc *doc = NULL;
    dcz_net *net = NULL;
    char *sp_rules = NULL, *bit_rules = NULL;
    stage_plan sp;
    memset(&sp, 0, sizeof sp);
    dcz_status s = dcz_doc_read(b->in, b->in_len, &doc);
    if (s == DCZ_OK) s = dcz_net_open(doc, &net);
    int rc = s == DCZ_OK ? -1 : cli_fail(v, s, "reading the input again");
    const dcz_budget_cand *c = &b->cands->c[cand];
    if (rc == -1) {
        sp_rules = candidate_rules(net, c, b->cands->nlayers, 0);
        bit_rules = candidate_rules(net, c, b->cands->nlayers, 1);
        if (!sp_rules || !bit_rules) rc = cli_fail(v, DCZ_ERR_NOMEM, "the candidate's rules");
    }
    if (rc == -1) {
        cli_note(v, "\ncompress --budget: run %d, candidate %d of %d (estimated %.0f bytes of weights)\n"
                 "  sparsity %s\n  bits %s", b->nruns + 1, cand + 1, b->cands->n, c->est_bytes, sp_rules,
                 bit_rules);
        b->po.sparsity = sp_rules;
        b->qo.bits = bit_rules;
        rc = plan_prune(v, net, doc, &b->po, 1, &sp);
    }
    if (rc == -1) rc = plan_quantize(v, net, doc, &b->qo, 1, &sp);
    r->res[r->nres++] = b->input;
    /* the most accurate candidate runs to the end: it is the answer when
     * none is within */
    const double floor = cand == b->cands->n - 1 ? -1 : b->floor - BUDGET_STOP_MARGIN / 100;
    const compress_job *job = b->job;
    const int lighter = job->light_bias != job->bias || job->light_codebook != job->codebook;
    uint8_t *pre = NULL;
    size_t pre_len = 0;
    r->bias = job->bias;
    r->codebook = job->codebook;
    if (rc == -1)
        rc = compress_stages(v, job, net, &sp, NULL, floor, &r->stopped, r->res, &r->nres, lighter ? &pre : NULL,
                             &pre_len);
    if (rc == -1 && !r->stopped) {
        s = dcz_doc_write(net->doc, &r->file, &r->len);
        if (s == DCZ_OK && r->len != r->res[r->nres - 1].bytes) s = DCZ_ERR_INTERNAL;
        if (s == DCZ_OK) s = stage_eval_bytes(r->file, r->len, &b->ro, &b->job->val, b->right, &r->val_acc);
        if (s != DCZ_OK) rc = cli_fail_data(v, s, "measuring the run on the validation samples", &b->job->val, NULL);
        else {
            r->margin = dcz_paired_se(b->base_right, b->right, b->job->val.n);
            cli_note(v, "compress --budget: run %d: %zu bytes (%.1fx), validation accuracy %.2f%% +- %.2f "
                     "(floor %.2f%%)", b->nruns + 1, r->len, b->dense_bytes / (double)r->len, r->val_acc * 100,
                     r->margin * 100, b->floor * 100);
        }
    }
    if (rc == -1 && !r->stopped && pre) rc = budget_lighter(b, r, pre, pre_len);
    free(pre);
    free((void *)sp.prune.targets);
    free((void *)sp.quant.bits);
    free(sp_rules);
    free(bit_rules);
    b->po.sparsity = b->qo.bits = NULL;
    dcz_net_free(net);
    dcz_doc_free(doc);
    b->nruns++;
    if (rc != -1) {
        b->rc = rc;
        return DCZ_ERR_INTERNAL;   /* stops the search; b->rc says how it failed */
    }
    *acc = r->stopped ? -1 : r->val_acc;
    *margin = r->stopped ? 0 : r->margin;
    *bytes = r->stopped ? 0 : r->len;
    return DCZ_OK;
}

/* The recipe that reproduces run best: every option of the run, the
 * chosen rules included. malloc'd text, NULL when out of memory. */
static char *budget_recipe(const budget_ctx *b, const dcz_net *net, const dcz_budget_cand *c,
                           const budget_run *r, double budget)
{
    char *sp_rules = candidate_rules(net, c, b->cands->nlayers, 0);
    char *bit_rules = candidate_rules(net, c, b->cands->nlayers, 1);
    const size_t cap = (sp_rules ? strlen(sp_rules) : 0) + (bit_rules ? strlen(bit_rules) : 0) +
                       (b->po.gap_bits ? strlen(b->po.gap_bits) : 0) + strlen(b->v->pos[0]) + 2048;
    char *t = sp_rules && bit_rules ? malloc(cap) : NULL;
    if (t) {
        const prune_opts *po = &b->po;
        const quant_opts *qo = &b->qo;
        char conf[128] = "";
        if (b->z > 0)
            snprintf(conf, sizeof conf, ",\n# by %g standard errors of its change or more (--budget-confidence %g)",
                     b->z, b->z);
        size_t n = (size_t)snprintf(t, cap,
            "# The choice of dcz compress --budget %g for %s: the smallest file of the\n"
            "# runs measured whose accuracy on the %zu validation samples %s\n"
            "# stayed within %g points of the input's%s. This recipe\n"
            "# reproduces it with the same seed and threads:\n"
            "#   dcz compress %s --data DATA --recipe THIS -o OUT\n"
            "seed = %d\n",
            budget, b->v->pos[0], b->job->val.n, stage_val_source(b->v), budget, conf, b->v->pos[0],
            b->v->c.seed);
        if (b->v->c.threads) n += (size_t)snprintf(t + n, cap - n, "threads = %d\n", b->v->c.threads);
        n += (size_t)snprintf(t + n, cap - n,
            "[compress]\nvalidation = %d\nrounds = %d\nprune-epochs = %d\nfinal-epochs = %d\n"
            "weight-decay = %.17g\n", b->job->validation, po->rounds, po->epochs, po->final_epochs, po->wd);
        if (b->v->shards > 1) n += (size_t)snprintf(t + n, cap - n, "shards = %d\n", b->v->shards);
        if (b->v->augment) n += (size_t)snprintf(t + n, cap - n, "augment = %s\n", cli_augment_name(b->v->augment));
        if (b->v->distill > 0) n += (size_t)snprintf(t + n, cap - n, "distill = %.17g\n", b->v->distill);
        if (!isnan(b->v->temperature))
            n += (size_t)snprintf(t + n, cap - n, "temperature = %.17g\n", b->v->temperature);
        if (b->v->strip) n += (size_t)snprintf(t + n, cap - n, "strip = true\n");
        if (!isnan(po->lr)) n += (size_t)snprintf(t + n, cap - n, "prune-lr = %.17g\n", po->lr);
        if (po->gap_bits) n += (size_t)snprintf(t + n, cap - n, "gap-bits = %s\n", po->gap_bits);
        if (po->block > 1) n += (size_t)snprintf(t + n, cap - n, "block = %d\n", po->block);
        if (b->variational)
            n += (size_t)snprintf(t + n, cap - n, "variational = %d\nvariational-threshold = off\n", b->variational);
        if (b->variational && !isnan(b->variational_kl))
            n += (size_t)snprintf(t + n, cap - n, "variational-kl = %.17g\n", b->variational_kl);
        n += (size_t)snprintf(t + n, cap - n, "bias = %s\ncodebook = %s\ninit = %s\nkmeans-iters = %d\n"
                              "quant-epochs = %d\n", bias_names[r->bias], codebook_names[r->codebook],
                              qo->init, qo->iters, qo->epochs);
        if (!isnan(qo->lr)) n += (size_t)snprintf(t + n, cap - n, "quant-lr = %.17g\n", qo->lr);
        snprintf(t + n, cap - n, "sparsity = %s\nbits = %s\n", sp_rules, bit_rules);
    }
    free(sp_rules);
    free(bit_rules);
    return t;
}

/* What the budget chose and why, and the runs it measured. */
static void budget_report(const budget_ctx *b, const dcz_net *net, const dcz_sens_report *scan,
                          const dcz_budget_trial *trials, int ntrials, int best, double base, double budget,
                          const char *recipe)
{
    const verb_ctx *v = b->v;
    const size_t dense = dcz_doc_param_count(net->doc) * 4;
    const dcz_budget_trial *bt = &trials[best];
    const dcz_budget_cand *c = &b->cands->c[bt->cand];
    FILE *f = v->c.quiet || v->c.json ? NULL : cli_notes(v);
    if (f) {
        fprintf(f, "\ncompress --budget %g: validation accuracy of the input %.2f%% on %zu samples %s; floor "
                   "%.2f%%\n", budget, base * 100, b->job->val.n,
                   stage_val_source(v), b->floor * 100);
        fprintf(f, "%-4s %9s %12s %10s %8s %11s %6s  %s\n", "run", "candidate", "estimate", "bytes", "ratio",
                "validation", "+-", "");
        for (int k = 0; k < ntrials; k++) {
            const dcz_budget_trial *t = &trials[k];
            if (t->accuracy < 0)
                fprintf(f, "%-4d %6d/%-2d %12.0f %10s %8s %11s %6s  out of the budget after pruning\n", k + 1,
                        t->cand + 1, b->cands->n, b->cands->c[t->cand].est_bytes, "-", "-", "-", "-");
            else
                fprintf(f, "%-4d %6d/%-2d %12.0f %10zu %7.1fx %10.2f%% %6.2f  %s\n", k + 1, t->cand + 1,
                        b->cands->n, b->cands->c[t->cand].est_bytes, t->bytes, (double)dense / (double)t->bytes,
                        t->accuracy * 100, t->margin * 100, t->within ? "within" : "out of the budget");
        }
        fprintf(f, "(+-: the standard error of the run's change in validation accuracy, from the samples on\n"
                   "which it and the input disagree: the noise of the measurement; a run is within when its\n"
                   "accuracy is at least the floor");
        if (b->z > 0) fprintf(f, "\nplus %g times that (--budget-confidence %g)", b->z, b->z);
        fprintf(f, ")\n");
        fprintf(f, "\nchosen: run %d, %s. The codebooks have the fewest bytes whose\n"
                   "scan losses (each layer shared alone, not fine-tuned) sum to at most %.2f points; each\n"
                   "sparsity, the fewest estimated bytes plus %.3g bytes per point its scan (pruned alone, not\n"
                   "retrained) lost:\n",
                best + 1, bt->within ? "the smallest file within the budget" : "NONE was within the budget: the most accurate",
                budget * BUDGET_BITS_SHARE, c->lambda);
        int nw = 5;
        for (int l = 0; l < scan->nlayers; l++)
            if ((int)strlen(scan->layers[l].name) > nw) nw = (int)strlen(scan->layers[l].name);
        fprintf(f, "%-*s %10s %9s %5s %12s %11s\n", nw, "layer", "weights", "sparsity", "bits", "estimate",
                "scan loss");
        for (int l = 0; l < scan->nlayers; l++) {
            const dcz_budget_layer *L = &c->layers[l];
            fprintf(f, "%-*s %10zu %8.1f%% %5d %12.0f %9.2f pt\n", nw, scan->layers[l].name,
                    scan->layers[l].weights, L->sparsity * 100, L->bits, L->est_bytes, L->drop);
        }
        fprintf(f, "biases %s, codebooks %s\nrecipe: %s\n", bias_names[b->runs[best].bias],
                codebook_names[b->runs[best].codebook], recipe);
    }
    if (!v->c.json) return;
    json_out j;
    json_begin(&j, cli_report(v));
    json_str(&j, "output", v->c.out);
    json_str(&j, "recipe", recipe);
    json_num(&j, "budget", budget);
    json_int(&j, "validation_samples", (long long)b->job->val.n);
    json_num(&j, "validation_accuracy_input", base);
    json_num(&j, "validation_floor", b->floor);
    json_num(&j, "budget_confidence", b->z);
    json_bool(&j, "within_budget", bt->within);
    cli_json_job(&j, v);
    const budget_run *r = &b->runs[best];
    json_int(&j, "file_bytes", (long long)r->len);
    json_int(&j, "dense_fp32_bytes", (long long)dense);
    json_num(&j, "ratio", (double)dense / (double)r->len);
    json_num(&j, "validation_accuracy", r->val_acc);
    json_num(&j, "validation_margin", r->margin);
    json_num(&j, "accuracy", r->res[r->nres - 1].acc);
    json_num(&j, "accuracy_input", r->res[0].acc);
    json_num(&j, "lambda", c->lambda);
    json_str(&j, "bias", bias_names[r->bias]);
    json_str(&j, "codebook", codebook_names[r->codebook]);
    json_key_arr(&j, "layers");
    for (int l = 0; l < scan->nlayers; l++) {
        json_obj(&j);
        json_str(&j, "name", scan->layers[l].name);
        json_num(&j, "sparsity", c->layers[l].sparsity);
        json_int(&j, "bits", c->layers[l].bits);
        json_num(&j, "scan_loss_points", c->layers[l].drop);
        json_num(&j, "estimated_bytes", c->layers[l].est_bytes);
        json_close_obj(&j);
    }
    json_close_arr(&j);
    json_key_arr(&j, "runs");
    for (int k = 0; k < ntrials; k++) {
        json_obj(&j);
        json_int(&j, "candidate", trials[k].cand + 1);
        json_num(&j, "estimated_bytes", b->cands->c[trials[k].cand].est_bytes);
        json_bool(&j, "stopped_after_pruning", trials[k].accuracy < 0);
        if (trials[k].accuracy >= 0) {
            json_int(&j, "file_bytes", (long long)trials[k].bytes);
            json_num(&j, "validation_accuracy", trials[k].accuracy);
            json_num(&j, "validation_margin", trials[k].margin);
            json_num(&j, "accuracy", b->runs[k].res[b->runs[k].nres - 1].acc);
            json_str(&j, "bias", bias_names[b->runs[k].bias]);
            json_str(&j, "codebook", codebook_names[b->runs[k].codebook]);
        }
        json_bool(&j, "within", trials[k].within);
        json_close_obj(&j);
    }
    json_close_arr(&j);
    json_end(&j);
}

/* compress --budget --variational N: the variational phase, once, on the
 * input (net), before the scan, pruning nothing itself (threshold off):
 * the scan and every run start from its weights, which it has made
 * prunable (the bytes *out, malloc'd, with its record), and each
 * candidate prunes them by magnitude to its own sparsities. The phase
 * draws from generators of its own (prune.h), so the recipe, which runs
 * it inside the prune stage, gives the same model. */
static int budget_variational(verb_ctx *v, compress_job *job, const prune_opts *po, dcz_net *net,
                              uint8_t **out, size_t *out_len)
{
    prune_opts vo = *po;
    vo.vd_threshold = "off";   /* the candidates prune its weights */
    vo.sparsity = "0";
    vo.quality = NULL;
    vo.rounds = 1;
    vo.epochs = vo.final_epochs = 0;
    stage_plan sp;
    memset(&sp, 0, sizeof sp);
    stage_extra extra = { 0 };
    if (job->validation) stage_extra_add(&extra, "validation = %d\n", job->validation);
    int rc = plan_prune(v, net, net->doc, &vo, 1, &sp);
    if (rc == -1) rc = exec_prune(v, net, &sp, &job->train, &job->val, &extra);
    free((void *)sp.prune.targets);
    if (rc == -1) rc = finish_net(v, net, "prune", po->gap_bits, &job->train, &extra, &job->test, NULL, NULL, NULL);
    if (rc == -1) {
        dcz_status s = dcz_doc_write(net->doc, out, out_len);
        if (s != DCZ_OK) rc = cli_fail(v, s, "encoding the variational phase's model");
    }
    stage_extra_clear(&extra);
    return rc;
}

/* compress --budget: scan, candidates, measured runs, the chosen file and
 * its recipe. The job's data and the input (doc, net, its bytes) are
 * loaded and checked. */
static int compress_budget(verb_ctx *v, compress_job *job, const prune_opts *po, const quant_opts *qo,
                           dcz_net *net, const uint8_t *in, size_t in_len, double budget, double z, int runs,
                           const char *recipe)
{
    budget_ctx b;
    memset(&b, 0, sizeof b);
    b.v = v;
    b.job = job;
    b.po = *po;
    b.qo = *qo;
    b.in = in;
    b.in_len = in_len;
    b.dense_bytes = (double)dcz_doc_param_count(net->doc) * 4;
    b.z = z;
    int rc = cli_runtime_options(v, &b.ro);
    if (rc != -1) return rc;
    dcz_sens_report scan;
    dcz_budget_cands cands;
    dcz_budget_trial *trials = calloc((size_t)runs + 1, sizeof *trials);
    b.runs = calloc((size_t)runs + 1, sizeof *b.runs);
    b.base_right = malloc(job->val.n + 1);
    b.right = malloc(job->val.n + 1);
    memset(&scan, 0, sizeof scan);
    memset(&cands, 0, sizeof cands);
    if (!trials || !b.runs || !b.base_right || !b.right) rc = cli_fail(v, DCZ_ERR_NOMEM, "the budget's runs");
    /* the input, measured by libdcz on its bytes: on the test samples for
     * the records, on the validation samples for the budget */
    double base = 0;
    dcz_status s = DCZ_OK;
    if (rc == -1) {
        b.input = (stage_result){ "input", in_len, -1 };
        s = stage_eval_bytes(in, in_len, &b.ro, &job->test, NULL, &b.input.acc);
        if (s == DCZ_OK) s = stage_eval_bytes(in, in_len, &b.ro, &job->val, b.base_right, &base);
        if (s != DCZ_OK) rc = cli_fail_data(v, s, "evaluating the input", &job->test, &job->val);
    }
    if (rc == -1 && job->validation) stage_note_seen(v, net->doc, v->pos[0], job->validation);
    b.floor = base - budget / 100;
    uint8_t *varied = NULL;   /* the input after the variational phase */
    if (rc == -1 && po->variational > 0) {
        size_t vlen = 0;
        rc = budget_variational(v, job, po, net, &varied, &vlen);
        b.in = varied;
        b.in_len = vlen;
        b.variational = po->variational;
        b.variational_kl = po->vd_kl;
        b.po.variational = 0;   /* done, once */
        b.po.vd_kl = NAN;
    }
    dcz_sens_plan plan;
    dcz_sens_plan_init(&plan);
    plan.nsparsity = (int)(sizeof budget_sparsity / sizeof *budget_sparsity);
    memcpy(plan.sparsity, budget_sparsity, sizeof budget_sparsity);
    plan.seed = (uint64_t)v->c.seed;
    plan.block = po->block;
    if (rc == -1) {
        progress p;
        progress_start(&p, v, "sensitivity", 0);
        s = dcz_sensitivity(net, &job->val, &plan, progress_cb, &p, &scan);
        progress_end(&p);
        if (s != DCZ_OK) rc = cli_fail_data(v, s, "the sensitivity scan", &job->val, NULL);
    }
    if (rc == -1 && (s = budget_cands(&scan, &plan, budget, runs, b.variational > 0, &cands)) != DCZ_OK)
        rc = cli_fail(v, s, "choosing the candidates");
    if (rc == -1)
        cli_note(v, "compress --budget %g: %d candidates from %.0f to %.0f estimated bytes of weights; "
                 "at most %d runs", budget, cands.n, cands.c[0].est_bytes, cands.c[cands.n - 1].est_bytes, runs);
    b.cands = &cands;
    int ntrials = 0, best = -1;
    if (rc == -1) {
        s = dcz_budget_search(cands.n, runs, b.floor, b.z, budget_try, &b, trials, &ntrials, &best);
        if (s != DCZ_OK) rc = b.rc ? b.rc : cli_fail(v, s, "the budget search");
    }
    char *text = NULL;
    if (rc == -1 && !(text = budget_recipe(&b, net, &cands.c[trials[best].cand], &b.runs[best], budget)))
        rc = cli_fail(v, DCZ_ERR_NOMEM, "the recipe");
    if (rc == -1) {
        int err;
        const budget_run *r = &b.runs[best];
        s = cli_write_file(v->c.out, r->file, r->len, &err);
        if (s != DCZ_OK) rc = cli_io_fail(v, v->c.out, s, err, 1);
        if (rc == -1 && (s = cli_write_file(recipe, text, strlen(text), &err)) != DCZ_OK)
            rc = cli_io_fail(v, recipe, s, err, 1);
    }
    if (rc == -1) {
        budget_report(&b, net, &scan, trials, ntrials, best, base, budget, recipe);
        const budget_run *r = &b.runs[best];
        const double dense = (double)dcz_doc_param_count(net->doc) * 4;
        cli_note(v, "compress: %s: %.1fx smaller than dense fp32 (%zu bytes), validation accuracy %.2f%% "
                 "(input %.2f%%), test accuracy %.2f%% (input %.2f%%)", v->c.out, dense / (double)r->len, r->len,
                 r->val_acc * 100, base * 100, r->res[r->nres - 1].acc * 100, r->res[0].acc * 100);
        if (!trials[best].within)
            cli_error("compress: warning: no run kept the validation accuracy within %g points%s; %s is the most "
                      "accurate run (give more --budget-runs, or a larger budget)", budget,
                      z > 0 ? " by the standard errors --budget-confidence asks" : "", v->c.out);
        rc = EXIT_OK;
    }
    for (int k = 0; b.runs && k < b.nruns; k++) free(b.runs[k].file);
    free(varied);
    free(b.runs);
    free(b.base_right);
    free(b.right);
    free(trials);
    free(text);
    dcz_budget_cands_free(&cands);
    dcz_sens_report_free(&scan);
    return rc;
}

/* The recipe path of a budget run: --budget-recipe, or OUT with .recipe in
 * place of .dcz. malloc'd. */
static char *recipe_path(const char *given, const char *out)
{
    if (given) return strdup(given);
    const size_t n = strlen(out);
    char *p = malloc(n + 8);
    if (!p) return NULL;
    const size_t keep = n > 4 && strcmp(out + n - 4, ".dcz") == 0 ? n - 4 : n;
    memcpy(p, out, keep);
    strcpy(p + keep, ".recipe");
    return p;
}

int cmd_compress(verb_ctx *v)
{
    prune_opts po;
    quant_opts qo;
    prune_opts_init(&po);
    quant_opts_init(&qo);
    po.rounds = po.epochs = NOT_GIVEN;   /* defaults below: a budget prunes gradually */
    const char *bias = NULL, *codebook = NULL, *recipe_given = NULL;   /* NULL: f16, f32 */
    double budget = NAN, confidence = NAN;   /* NAN: not given (0) */
    int runs = 5, head = 0;
    compress_job job;
    memset(&job, 0, sizeof job);
    job.validation = NOT_GIVEN;
    const opt_spec specs[] = {
        PRUNE_SPECS(po),
        QUANT_SPECS(qo),
        { "bias", 0, OPT_STR, &bias, "bias format of the result: f32, f16 or i8 (default f16; with --budget,\n"
          "                             i8 where the run stays within or loses nothing)" },
        { "codebook", 0, OPT_STR, &codebook, "codebook format of the result: f32 or f16 (default f32; with\n"
          "                             --budget, f16 where the run stays within or loses nothing)" },
        { "keep-stages", 0, OPT_STR, &job.stages_dir, "also write DIR/prune.dcz and DIR/quantize.dcz" },
        { "head", 0, OPT_INT, &head, "N: replace the last fully connected layer by a fresh one of N outputs\n"
          "                             (seeded), one per class of --data, trained with the rest: a network\n"
          "                             pretrained on other classes, compressed for yours" },
        { "validation", 0, OPT_INT, &job.validation,
          "hold N training samples out of retraining (default 0; with --budget, those the input trained\n"
          "                             without, else a sixth of the training split, at most 10000)" },
        { "budget", 0, OPT_FLOAT, &budget,
          "P: the smallest file within P points of the input's validation accuracy; chooses\n"
          "                             --sparsity and --bits per layer from a sensitivity scan and measured runs" },
        { "budget-runs", 0, OPT_INT, &runs, "at most N measured runs for --budget (default 5)" },
        { "budget-confidence", 0, OPT_FLOAT, &confidence,
          "Z: a --budget run is within only when its validation accuracy less Z standard\n"
          "                             errors of its change stays at the floor (default 0)" },
        { "budget-recipe", 0, OPT_STR, &recipe_given, "where --budget writes its recipe (default: OUT.recipe)" },
        DRY_RUN_SPEC(v),
        SHARDS_SPEC(v),
        AUGMENT_SPEC(v),
        DISTILL_SPECS(v),
        STRIP_SPEC(v),
        { NULL, 0, OPT_FLAG, NULL, NULL }
    };
    v->usage = "dcz compress IN --data DATA -o OUT [--head N] [options]";
    v->summary = "The whole Deep Compression pipeline with the paper's defaults: iterative\n"
                 "pruning with retraining, trained quantization (5-bit codebooks for fully\n"
                 "connected layers, 8-bit for convolutions), and entropy coding: each stream\n"
                 "raw, Huffman- or arithmetic-coded, whichever is smallest, positions as wide\n"
                 "as stores each layer smallest (--gap-bits rules fix it) and only the\n"
                 "codebook entries in use.\n"
                 "With --budget P it chooses each layer's sparsity and codebook width itself:\n"
                 "the smallest file it measures within P points of the input's accuracy on\n"
                 "validation samples held out of retraining, and writes the choice as a recipe.\n"
                 "Every stage's accuracy is measured by libdcz on the bytes it produced.";
    int rc = cli_parse(v, specs, 1, 1);
    if (rc != -1) return rc;
    if ((rc = cli_check_shards(v)) != -1) return rc;
    if ((rc = cli_check_augment(v)) != -1) return rc;
    if ((rc = cli_check_distill(v)) != -1) return rc;
    const int budgeted = !isnan(budget);
    if (po.rounds == NOT_GIVEN) po.rounds = budgeted ? BUDGET_ROUNDS : 4;
    if (po.epochs == NOT_GIVEN) po.epochs = budgeted ? BUDGET_ROUND_EPOCHS : 3;
    if (job.validation == NOT_GIVEN && !budgeted) job.validation = 0;
    const char *names[] = { "sparsity", "quality", "gap-bits", "bits" };
    const char *texts[] = { po.sparsity, po.quality, po.gap_bits, qo.bits };
    if ((rc = check_rule_syntax(v, names, texts, 4)) != -1) return rc;
    if ((rc = need_output(v)) != -1) return rc;
    if (!v->c.data) { cli_usage_error(v, "compress retrains and needs --data"); return EXIT_USAGE; }
    if (head < 0 || head > 65535) { cli_usage_error(v, "--head must be from 1 to 65535 outputs"); return EXIT_USAGE; }
    if (head && v->distill > 0) {
        cli_usage_error(v, "--distill learns from the input's outputs, which --head replaces: drop one of them");
        return EXIT_USAGE;
    }
    if (job.validation != NOT_GIVEN && job.validation < 0) {
        cli_usage_error(v, "--validation must be >= 0");
        return EXIT_USAGE;
    }
    if ((rc = stage_check_own_val(v, job.validation)) != -1) return rc;
    if (budgeted) {
        const char *clash = po.sparsity ? "--sparsity" : po.quality ? "--quality" : qo.bits ? "--bits"
                          : job.stages_dir ? "--keep-stages" : v->dry_run ? "--dry-run" : NULL;
        if (clash) {
            cli_usage_error(v, "--budget chooses the sparsity and bits of every layer from measured runs: %s does "
                               "not go with it (run the recipe it writes with %s)", clash, clash);
            return EXIT_USAGE;
        }
        if (!(budget > 0 && budget <= 100)) {
            cli_usage_error(v, "--budget is points of accuracy, in (0, 100], not %g", budget);
            return EXIT_USAGE;
        }
        if (runs < 1 || runs > 10) { cli_usage_error(v, "--budget-runs must be from 1 to 10"); return EXIT_USAGE; }
        if (isnan(confidence)) confidence = 0;
        else if (!(confidence >= 0 && confidence <= 10)) {
            cli_usage_error(v, "--budget-confidence is standard errors, from 0 to 10, not %g", confidence);
            return EXIT_USAGE;
        }
        if (po.vd_threshold) {
            cli_usage_error(v, "--budget's variational phase prunes nothing itself, its candidates prune its weights "
                               "by magnitude: --variational-threshold does not go with it");
            return EXIT_USAGE;
        }
        if (job.validation == 0 && !v->own_val) {
            cli_usage_error(v, "--budget measures on --validation samples: give 1 or more");
            return EXIT_USAGE;
        }
    } else if (recipe_given || !isnan(confidence)) {
        cli_usage_error(v, "%s goes with --budget", recipe_given ? "--budget-recipe" : "--budget-confidence");
        return EXIT_USAGE;
    }
    const int bm = bias_mode(v, bias ? bias : "f16"), cm = codebook_mode(v, codebook ? codebook : "f32");
    if (bm == -2 || cm == -2) return EXIT_USAGE;
    job.bias = bm;
    job.codebook = cm;
    /* the fewest bits that keep accuracy: a budget measures each run's file
     * also with the lighter formats of those not given */
    job.light_bias = budgeted && !bias ? BIAS_I8 : bm;
    job.light_codebook = budgeted && !codebook ? CODEBOOK_F16 : cm;
    job.gap_bits = po.gap_bits;
    dcz_options ro;
    if ((rc = cli_runtime_options(v, &ro)) != -1) return rc;
    dcz_doc *doc = NULL;
    dcz_net *net = NULL;
    uint8_t *in = NULL;
    size_t in_len = 0;
    char path[4096], *recipe = NULL;
    stage_result res[4];
    int nres = 0;
    double t0 = cli_now();
    rc = open_model(v, (uint32_t)head, &doc, &net, &in, &in_len);
    if (rc == -1 && !v->dry_run) rc = cli_open_train_device(v, net);
    size_t params = doc ? dcz_doc_param_count(doc) : 0;
    /* every option of every stage, and where the stages go, is checked
     * before hours of retraining */
    stage_plan sp;
    memset(&sp, 0, sizeof sp);
    if (rc == -1) rc = plan_prune(v, net, doc, &po, 1, &sp);
    if (rc == -1) rc = plan_quantize(v, net, doc, &qo, 1, &sp);
    if (rc == -1) {
        dcz_layer_encoding *enc = NULL;   /* the gap-bits rules' values */
        rc = make_encodings(v, net, po.gap_bits, 1, 0, &enc);
        free(enc);
    }
    for (int k = 0; k < 2 && rc == -1 && job.stages_dir; k++) {
        write_stage_file(v, job.stages_dir, k ? "quantize" : "prune", path, sizeof path);
        const int e = cli_check_output(path);
        if (e) rc = cli_io_fail(v, path, DCZ_ERR_IO, e, 1);
    }
    if (rc == -1 && budgeted) {
        recipe = recipe_path(recipe_given, v->c.out);
        const int e = recipe ? cli_check_output(recipe) : ENOMEM;
        if (e) rc = cli_io_fail(v, recipe ? recipe : "the recipe", DCZ_ERR_IO, e, 1);
    }
    /* a dry run checks all that and the data too, then runs the stages
     * without retraining and writes nothing */
    const int dry = v->dry_run;
    if (dry) job.stages_dir = NULL;
    if (rc == -1) rc = stage_load_splits(v, &job.train, &job.test);
    /* retraining on fewer classes than outputs trains the others toward
     * nothing: a new head, or the data the model was made for */
    if (rc == -1 && job.train.classes < (uint32_t)net->classes) {
        if (head)
            cli_error("compress: --head %d: --data %s has %u classes; give --head %u", head, v->c.data,
                      job.train.classes, job.train.classes);
        else
            cli_error("compress: --data %s has %u classes and %s %u outputs: retraining would push the other "
                      "outputs toward no class; give --head %u to replace its last layer by one of %u outputs "
                      "(a network pretrained on other classes), or data of its %u classes", v->c.data,
                      job.train.classes, v->pos[0], (unsigned)net->classes, job.train.classes, job.train.classes,
                      (unsigned)net->classes);
        rc = EXIT_BAD_INPUT;
    }
    if (rc == -1)
        rc = stage_check_fit(v, &job.train, (int)net->in_rank, net->in_dims, (size_t)net->classes, 0);
    if (rc == -1 && v->own_val) {   /* measured on the folder's val split; nothing held out */
        job.validation = 0;
        if (budgeted) rc = stage_load_val(v, &job.train, &job.val);
    }
    if (rc == -1 && job.validation == NOT_GIVEN) job.validation = stage_validation_default(doc, job.train.n);
    if (rc == -1 && budgeted && !v->own_val && job.validation == 0) {
        cli_error("compress: --budget measures on validation samples held out of the training split, and --data "
                  "%s has %zu training samples: too few to hold out any (give data of 10 or more)", v->c.data,
                  job.train.n);
        rc = EXIT_BAD_INPUT;
    }
    if (rc == -1 && job.validation) rc = stage_hold_out(v, &job.train, job.validation, &job.val);
    if (rc == -1 && budgeted) {
        rc = compress_budget(v, &job, &po, &qo, net, in, in_len, budget, confidence, runs, recipe);
        goto done;
    }
    if (rc == -1 && dry) {
        res[nres++] = (stage_result){ "input", doc->file_bytes, -1 };
    } else if (rc == -1) {
        /* the input's accuracy, from its bytes as read (it may be stdin) */
        res[nres] = (stage_result){ "input", doc->file_bytes, -1 };
        dcz_status s = stage_eval_bytes(in, in_len, &ro, &job.test, NULL, &res[nres].acc);
        if (s != DCZ_OK) rc = cli_fail_data(v, s, "evaluating the input", &job.test, NULL);
        nres++;
    }
    if (rc == -1) rc = compress_stages(v, &job, net, &sp, dry ? NULL : v->c.out, -1, NULL, res, &nres, NULL, NULL);
    if (rc == -1 && dry) {
        dry_report(v, net->doc, 0, res, nres);
        rc = EXIT_OK;
    } else if (rc == -1) {
        cli_note(v, "\n%-10s %12s %9s %10s", "stage", "bytes", "ratio", "accuracy");
        for (int i = 0; i < nres; i++)
            cli_note(v, "%-10s %12zu %8.1fx %9.2f%%", res[i].name, res[i].bytes,
                     (double)params * 4 / (double)res[i].bytes, res[i].acc * 100);
        const double change = (res[nres - 1].acc - res[0].acc) * 100;
        cli_note(v, "compress: %s: %.1fx smaller than dense fp32 (%zu bytes), accuracy %.2f%% (%s %.2f points), %.0f s",
                 v->c.out, (double)params * 4 / (double)res[nres - 1].bytes, params * 4, res[nres - 1].acc * 100,
                 change < 0 ? "lost" : "gained", fabs(change), cli_now() - t0);
        if (v->c.json) {
            json_out j;
            json_begin(&j, cli_report(v));
            json_str(&j, "output", v->c.out);
            json_int(&j, "file_bytes", (long long)res[nres - 1].bytes);
            json_int(&j, "dense_fp32_bytes", (long long)params * 4);
            json_num(&j, "ratio", (double)params * 4 / (double)res[nres - 1].bytes);
            json_num(&j, "accuracy", res[nres - 1].acc);
            json_num(&j, "accuracy_input", res[0].acc);
            cli_json_job(&j, v);
            json_key_arr(&j, "stages");
            for (int i = 0; i < nres; i++) {
                json_obj(&j);
                json_str(&j, "stage", res[i].name);
                json_int(&j, "file_bytes", (long long)res[i].bytes);
                json_num(&j, "accuracy", res[i].acc);
                json_close_obj(&j);
            }
            json_close_arr(&j);
            json_num(&j, "seconds", cli_now() - t0);
            json_end(&j);
        }
        rc = EXIT_OK;
    }
done:
    free((void *)sp.prune.targets);
    free((void *)sp.quant.bits);
    free(recipe);
    free(in);
    dcz_net_free(net);
    dcz_doc_free(doc);
    dcz_dataset_free(&job.train);
    dcz_dataset_free(&job.test);
    dcz_dataset_free(&job.val);
    return rc;
}
