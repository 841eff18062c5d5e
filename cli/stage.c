/* stage.c: what every stage verb does around its library call: read the
 * input model, load data, record provenance, measure the accuracy of the
 * bytes it is about to write with libdcz itself, and write them atomically.
 *
 * The accuracy a stage reports is measured by the runtime on the very bytes
 * written (only the stage record, which the runtime skips, is added after;
 * under --strip there is none), so it always equals `dcz eval` on the output
 * file.
 *
 * Checked by tests/cli/pipeline.sh (recorded sizes and accuracies),
 * tests/cli/strip.sh (--strip on every verb that writes a .dcz) and
 * tests/cli/records.sh (records of any length, whole, on a network of many
 * layers).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

int stage_load_doc_bytes(verb_ctx *v, const char *path, dcz_doc **doc, uint8_t **bytes,
                         size_t *nbytes)
{
    uint8_t *buf;
    size_t len;
    int err;
    dcz_status s = cli_read_file(path, &buf, &len, &err);
    if (s != DCZ_OK) return cli_io_fail(v, path, s, err, 0);
    s = dcz_doc_read(buf, len, doc);
    if (s != DCZ_OK) {
        const int rc = cli_not_dcz(v, path, buf, len);
        free(buf);
        if (rc != -1) return rc;
        cli_error("%s: %s: %s", v->verb, path, dcz_status_str(s));
        return cli_exit_code(s, 1);
    }
    if (bytes) {
        *bytes = buf;
        *nbytes = len;
    } else {
        free(buf);
    }
    v->has_prep = (*doc)->has_prep;   /* the data the model is run on goes through it */
    v->prep = (*doc)->prep;
    return -1;
}

int stage_load_doc(verb_ctx *v, const char *path, dcz_doc **doc)
{
    return stage_load_doc_bytes(v, path, doc, NULL, NULL);
}

int stage_load_data(const verb_ctx *v, int split, dcz_dataset *d)
{
    char err[512] = "";
    memset(d, 0, sizeof *d);
    const uint64_t max = v->c.max_data_mb ? (uint64_t)(v->c.max_data_mb * 1048576.0) : DCZ_DATA_DEFAULT_MAX;
    dcz_status s = dcz_data_load_prep(v->c.data, split, max, v->has_prep ? &v->prep : NULL, d, err, sizeof err);
    if (s != DCZ_OK) {
        /* a misspelt built-in name is no folder either: say which was meant */
        static const char *const builtin[] = { "fashion-mnist" };
        struct stat st;
        const char *near = stat(v->c.data, &st) != 0 ? cli_closest(v->c.data, builtin, 1) : NULL;
        if (near)
            cli_error("%s: --data %s: no dataset directory of that name; did you mean --data %s, the built-in "
                      "name of Debian's dataset-fashion-mnist?", v->verb, v->c.data, near);
        else
            cli_error("%s: --data %s: %s%s", v->verb, v->c.data, err[0] ? err : dcz_status_str(s),
                      s == DCZ_ERR_LIMIT ? " (--max-data-mb raises it)" : "");
        return cli_exit_code(s, 1);
    }
    return -1;
}

int stage_load_splits(const verb_ctx *v, dcz_dataset *train, dcz_dataset *test)
{
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    int rc = stage_load_data(v, DCZ_SPLIT_TRAIN, train);
    if (rc == -1) rc = stage_load_data(v, DCZ_SPLIT_TEST, test);
    if (rc != -1) return rc;
    if (train->c != test->c || train->h != test->h || train->w != test->w) {
        cli_error("%s: --data %s: the train split holds %ux%ux%u samples (CxHxW) and the test split %ux%ux%u: "
                  "both must have one shape (convert the images to one size and colour type)", v->verb,
                  v->c.data, train->c, train->h, train->w, test->c, test->h, test->w);
        return EXIT_BAD_INPUT;
    }
    if (v->augment & DCZ_AUG_CROP && !train->files) {
        cli_usage_error(v, "--augment %s: random crops cut boxes out of the images of an image folder, and --data %s "
                        "holds IDX samples, in memory at one size (--augment flip mirrors them)",
                        cli_augment_name(v->augment), v->c.data);
        return EXIT_USAGE;
    }
    if (test->classes > train->classes) {
        cli_error("%s: --data %s: the test split has labels up to %u but the train split only %u classes",
                  v->verb, v->c.data, test->classes - 1, train->classes);
        return EXIT_BAD_INPUT;
    }
    return -1;
}

int stage_check_fit(const verb_ctx *v, const dcz_dataset *d, int rank, const uint32_t *dims, size_t outputs,
                    int exact)
{
    const size_t sample = (size_t)d->c * d->h * d->w;
    size_t inputs = 1;
    char shape[64] = "";
    for (int k = 0, n = 0; k < rank; k++) {
        inputs *= dims[k];
        n += snprintf(shape + n, sizeof shape - (size_t)n, k ? "x%u" : "%u", dims[k]);
    }
    /* a model of (C, H, W) input takes images of that shape; a flat one any
     * image of as many values */
    const int fits = rank == 3 ? d->c == dims[0] && d->h == dims[1] && d->w == dims[2] : sample == inputs;
    if (fits && (exact ? d->classes == outputs : d->classes <= outputs)) {
        if (d->classes < outputs)
            cli_note(v, "%s: note: --data %s has %u classes and the model %zu outputs; the extra outputs are "
                     "never right", v->verb, v->c.data, d->classes, outputs);
        return -1;
    }
    cli_error("%s: --data %s holds %ux%ux%u samples (%zu values) in %u classes; the model takes %s (%zu values) "
              "and has %zu outputs%s", v->verb, v->c.data, d->c, d->h, d->w, sample, d->classes, shape, inputs,
              outputs, fits ? (exact ? ": give the last layer one output per class" : "")
                            : ": the images must have the model's size and colour type");
    return EXIT_BAD_INPUT;
}

dcz_status stage_eval_bytes(const uint8_t *buf, size_t len, const dcz_options *opt,
                            const dcz_dataset *data, uint8_t *right, double *accuracy)
{
    dcz_model *m;
    dcz_status s = dcz_open_memory(buf, len, opt, &m);
    if (s != DCZ_OK) return s;
    s = stage_eval_model(m, data, right, accuracy);
    dcz_close(m);
    return s;
}

dcz_status stage_eval_model(dcz_model *m, const dcz_dataset *data, uint8_t *right, double *accuracy)
{
    const size_t in = dcz_input_size(m), out = dcz_output_size(m);
    const size_t sample = (size_t)data->c * data->h * data->w;
    if (in != sample || out < data->classes) return DCZ_ERR_SHAPE;
    const size_t B = 256;
    float *x = malloc(B * in * sizeof *x), *y = malloc(B * out * sizeof *y);   /* (B, in), (B, out) */
    dcz_status s = x && y ? DCZ_OK : DCZ_ERR_NOMEM;
    size_t correct = 0;
    for (size_t i = 0; i < data->n && s == DCZ_OK; i += B) {
        size_t b = data->n - i < B ? data->n - i : B;
        s = dcz_dataset_samples(data, NULL, i, b, x, NULL, 0);
        if (s == DCZ_OK) s = dcz_run(m, x, b, y);
        for (size_t j = 0; j < b && s == DCZ_OK; j++) {
            const float *yj = y + j * out;
            size_t best = 0;
            for (size_t c = 1; c < out; c++)
                if (yj[c] > yj[best]) best = c;
            correct += best == data->y[i + j];
            if (right) right[i + j] = best == data->y[i + j];
        }
    }
    free(x);
    free(y);
    if (s == DCZ_OK) *accuracy = data->n ? (double)correct / (double)data->n : 0.0;
    return s;
}

int stage_hold_out(const verb_ctx *v, dcz_dataset *train, int n, dcz_dataset *val)
{
    memset(val, 0, sizeof *val);
    if (n < 1 || (size_t)n >= train->n) {
        cli_usage_error(v, "--validation %d: the training split has %zu samples; hold out 1 to %zu", n, train->n,
                        train->n ? train->n - 1 : 0);
        return EXIT_USAGE;
    }
    dcz_dataset rest;
    dcz_status s = dcz_dataset_holdout(train, (size_t)n, DCZ_VALIDATION_SEED, val, &rest);
    if (s != DCZ_OK) return cli_fail(v, s, "holding out the validation samples");
    dcz_dataset_free(train);
    *train = rest;
    return -1;
}

int stage_load_val(const verb_ctx *v, const dcz_dataset *train, dcz_dataset *val)
{
    int rc = stage_load_data(v, DCZ_SPLIT_VAL, val);
    if (rc != -1) return rc;
    if (val->c != train->c || val->h != train->h || val->w != train->w || val->classes > train->classes) {
        cli_error("%s: --data %s: the val split holds %ux%ux%u samples (CxHxW) in %u classes and the train split "
                  "%ux%ux%u in %u: the validation samples must have the training samples' shape and classes",
                  v->verb, v->c.data, val->c, val->h, val->w, val->classes, train->c, train->h, train->w,
                  train->classes);
        dcz_dataset_free(val);
        return EXIT_BAD_INPUT;
    }
    return -1;
}

const char *stage_val_source(const verb_ctx *v)
{
    return v->own_val ? "of --data's val split" : "held out of the training split";
}

int stage_check_own_val(const verb_ctx *v, int validation)
{
    if (validation == NOT_GIVEN || validation == 0 || !v->own_val) return -1;
    cli_usage_error(v, "--data %s has a validation split of its own (%s/val), on which decisions are measured: "
                       "--validation %d would hold more samples out of the training split; leave it out",
                    v->c.data, v->c.data, validation);
    return EXIT_USAGE;
}

int stage_trained_without(const dcz_doc *d)
{
    char val[64], stage[32];
    for (uint32_t i = 0; i < d->nstages; i++)
        if (stage_get(d->stages[i], "stage", stage, sizeof stage) && strcmp(stage, "train") == 0)
            return stage_get(d->stages[i], "validation", val, sizeof val) ? atoi(val) : 0;
    return 0;
}

int stage_validation_count(size_t n)
{
    return n < 10 ? 0 : n / 6 < DEFAULT_VALIDATION ? (int)(n / 6) : DEFAULT_VALIDATION;
}

int stage_validation_default(const dcz_doc *d, size_t n)
{
    const int held = stage_trained_without(d);
    return held > 0 ? held : stage_validation_count(n);
}

void stage_note_seen(const verb_ctx *v, const dcz_doc *d, const char *path, int n)
{
    if (d->nstages == 0) {
        cli_note(v, "%s: note: %s holds no stage records (a file written with --strip keeps none), so whether it "
                    "trained on these %d validation samples cannot be told; if it saw them, its accuracy on them is "
                    "high and every loss is measured from there (use the file from before stripping)", v->verb,
                 path, n);
        return;
    }
    if (stage_trained_without(d) == n) return;
    cli_note(v, "%s: note: %s's train record does not say it trained without these %d validation samples "
                "(dcz train holds them out unless given --validation 0); if it saw them, its accuracy on them is "
                "high and every loss is measured from there", v->verb, path, n);
}

void stage_extra_add(stage_extra *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = e->nomem ? -1 : vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) { e->nomem = 1; return; }
    const size_t need = e->len + (size_t)n + 1;
    if (need > e->cap) {
        const size_t cap = need > 2 * e->cap ? need + 256 : 2 * e->cap;
        char *t = realloc(e->text, cap);
        if (!t) { e->nomem = 1; return; }
        e->text = t;
        e->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(e->text + e->len, e->cap - e->len, fmt, ap);
    va_end(ap);
    e->len += (size_t)n;
}

void stage_extra_clear(stage_extra *e)
{
    e->len = 0;
    e->nomem = 0;
    if (e->text) e->text[0] = 0;
}

void stage_extra_free(stage_extra *e)
{
    free(e->text);
    memset(e, 0, sizeof *e);
}

/* Appends the stage record to doc: "stage = NAME", the tool's version, the
 * command line, seed, data hash, the extra lines, the accuracy when >= 0,
 * and last "file_bytes = N" on a line of its own. The writer takes that
 * line out of the record's text (doc_write.c, put_stages), so that the
 * file's size does not depend on the number it states: it must start a
 * line, whatever extra ends with. */
static dcz_status stage_record(dcz_doc *doc, const verb_ctx *v, const char *stage, const dcz_dataset *data,
                               const stage_extra *extra, double accuracy, size_t file_bytes)
{
    stage_extra t = { 0 };
    stage_extra_add(&t, "stage = %s\ntool = dcz %s\ncommand = %s\nseed = %d\n", stage, DCZ_VERSION_STRING,
                    v->cmdline, v->c.seed);
    if (data) stage_extra_add(&t, "data = %s\ndata_hash = %08x\n", v->c.data, data->hash);
    if (v->shards > 1) stage_extra_add(&t, "shards = %d\n", v->shards);
    if (extra && extra->len)
        stage_extra_add(&t, "%s%s", extra->text, extra->text[extra->len - 1] == '\n' ? "" : "\n");
    if (accuracy >= 0) stage_extra_add(&t, "accuracy = %.4f\n", accuracy);
    stage_extra_add(&t, "file_bytes = %zu\n", file_bytes);
    dcz_status s = t.nomem ? DCZ_ERR_NOMEM : dcz_doc_add_stage(doc, t.text);
    stage_extra_free(&t);
    return s;
}

/* Adds the stage record, stating file_bytes, and encodes the document. */
static dcz_status write_recorded(const verb_ctx *v, dcz_doc *doc, const char *stage, const dcz_dataset *data,
                                 const stage_extra *extra, double acc, size_t file_bytes, uint8_t **buf,
                                 size_t *len)
{
    dcz_status s = stage_record(doc, v, stage, data, extra, acc, file_bytes);
    return s == DCZ_OK ? dcz_doc_write(doc, buf, len) : s;
}

int stage_finish(const verb_ctx *v, dcz_doc *doc, const char *stage, const dcz_dataset *data,
                 const stage_extra *extra, const dcz_dataset *test, const char *out_path,
                 double *accuracy_out, size_t *bytes_out)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    double acc = -1;
    dcz_status s;
    dcz_options opt;
    int rc = cli_runtime_options(v, &opt);
    if (rc != -1) return rc;
    if (extra && extra->nomem) return cli_fail(v, DCZ_ERR_NOMEM, "the stage record");
    /* --strip: the file keeps no history, neither the input's nor this
     * stage's; what is measured is then the whole file */
    if (v->strip) dcz_doc_clear_stages(doc);
    if (test || v->strip) {
        /* measure the exact weights that will be written */
        if ((s = dcz_doc_write(doc, &buf, &len)) != DCZ_OK) return cli_fail(v, s, "encoding");
        s = test ? stage_eval_bytes(buf, len, &opt, test, NULL, &acc) : DCZ_OK;
        if (s != DCZ_OK) { free(buf); return cli_fail_data(v, s, "evaluating the output", test, NULL); }
    }
    if (!v->strip) {
        free(buf);
        buf = NULL;
        /* A dry run that does not evaluate records a stand-in accuracy of the
         * same width, so that its bytes are those of the real run's record. */
        const double recorded = !test && v->dry_run && v->c.data ? 0.5 : acc;
        /* The record states the size of the file it is in. That number is
         * stored with a fixed width (FORMAT.md, STAGES), so writing once to
         * measure and once with the measured size gives a file of the stated
         * size. */
        size_t stated = 0;
        if ((s = write_recorded(v, doc, stage, data, extra, recorded, 0, &buf, &stated)) != DCZ_OK)
            return cli_fail(v, s, "encoding");
        free(buf);
        free(doc->stages[--doc->nstages]);
        if ((s = write_recorded(v, doc, stage, data, extra, recorded, stated, &buf, &len)) != DCZ_OK)
            return cli_fail(v, s, "encoding");
        if (len != stated) { free(buf); return cli_fail(v, DCZ_ERR_INTERNAL, "recording the file size"); }
    }
    if (out_path) {
        int err;
        s = cli_write_file(out_path, buf, len, &err);
        if (s != DCZ_OK) {
            free(buf);
            return cli_io_fail(v, out_path, s, err, 1);
        }
    }
    free(buf);
    if (accuracy_out) *accuracy_out = acc;
    if (bytes_out) *bytes_out = len;
    return -1;
}

int stage_get(const char *text, const char *key, char *val, size_t vlen)
{
    size_t kl = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, kl) != 0) continue;
        const char *q = p + kl;
        while (*q == ' ') q++;
        if (*q != '=') continue;
        q++;
        while (*q == ' ') q++;
        const char *e = strchr(q, '\n');
        size_t n = e ? (size_t)(e - q) : strlen(q);
        if (n >= vlen) n = vlen - 1;
        memcpy(val, q, n);
        val[n] = 0;
        return 1;
    }
    return 0;
}
