/* cmd_tools.c: the verbs that read models: eval (accuracy through libdcz),
 * info (per-layer table, stream statistics, bits per kept weight against the
 * floor of random positions, bytes by part of the file, size waterfall by
 * stage) and run (class scores for PNG and JPEG images, raw float32 samples
 * or dataset samples).
 *
 * Checked end to end by the scripts in tests/cli/ (info: tests/cli/info.sh).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/calibrate.h"
#include "cli/cli.h"
#include "huffman/huffman.h"
#include "runtime/tool.h"
#include "train/png.h"

/* ---- eval --------------------------------------------------------------------- */

int cmd_eval(verb_ctx *v)
{
    const char *isa = NULL, *plan = NULL;
    int fp32 = 0;
    double max_work = 0;
    const opt_spec specs[] = {
        { "fp32", 0, OPT_FLAG, &fp32, "run a calibrated model in floating point (ignore its table)" },
        MAX_WORK_SPEC(max_work),
        ISA_SPEC(isa),
        PLAN_SPEC(plan),
        { NULL, 0, OPT_FLAG, NULL, NULL }
    };
    v->usage = "dcz eval FILE --data DATA [--fp32] [--isa LEVEL] [--plan measure] [--json]";
    v->summary = "Top-1 accuracy of FILE on the test split of DATA, computed by libdcz\n"
                 "(the runtime that ships), whatever stage wrote FILE. A calibrated FILE runs\n"
                 "on integers, as it would on a device.";
    v->skip = CLI_NO_OUT | CLI_NO_SEED;
    int rc = cli_parse(v, specs, 1, 1);
    if (rc != -1) return rc;
    if (!v->c.data) { cli_usage_error(v, "eval needs --data"); return EXIT_USAGE; }
    dcz_options opt;
    if ((rc = cli_runtime_options(v, &opt)) != -1) return rc;
    if ((rc = cli_max_work(v, max_work, &opt)) != -1) return rc;
    if ((rc = cli_isa(v, isa, &opt)) != -1) return rc;
    if ((rc = cli_plan(v, plan, &opt)) != -1) return rc;
    if (fp32) opt.precision = DCZ_PRECISION_FP32;
    uint8_t *buf;
    size_t len;
    int err;
    dcz_status s = cli_read_file(v->pos[0], &buf, &len, &err);
    if (s != DCZ_OK) return cli_io_fail(v, v->pos[0], s, err, 0);
    dcz_dataset test;
    memset(&test, 0, sizeof test);
    double t0 = cli_now(), acc = 0;
    dcz_scheme scheme = DCZ_SCHEME_NONE;
    dcz_model *m;
    if ((s = dcz_open_memory(buf, len, &opt, &m)) != DCZ_OK) {
        rc = cli_not_dcz(v, v->pos[0], buf, len);
        free(buf);
        return rc != -1 ? rc : cli_model_fail(v, v->pos[0], s);
    }
    v->has_prep = dcz_model_preprocess(m, &v->prep);   /* the images as the network was trained */
    if ((rc = stage_load_data(v, DCZ_SPLIT_TEST, &test)) != -1) {
        dcz_close(m);
        free(buf);
        return rc;
    }
    scheme = dcz_model_scheme(m);
    const char *device = cli_device_of(v, m);
    uint32_t dims[DCZ_MAX_RANK];
    const int rank = dcz_input_shape(m, dims, DCZ_MAX_RANK);
    rc = stage_check_fit(v, &test, rank, dims, dcz_output_size(m), 0);
    free(buf);
    if (rc != -1) {
        dcz_close(m);
        dcz_dataset_free(&test);
        return rc;
    }
    static const char *const scheme_names[] = { "fp32", "int8", "fixed8", "fixed16" };
    s = stage_eval_model(m, &test, NULL, &acc);
    dcz_close(m);
    double secs = cli_now() - t0;
    if (s != DCZ_OK) {
        const char *why = dcz_dataset_error(&test);
        cli_error("eval: %s: %s", v->pos[0], s == DCZ_ERR_SHAPE ? "the model does not fit the data's samples"
                                             : why[0] ? why : dcz_status_str(s));
        dcz_dataset_free(&test);
        return cli_exit_code(s, 1);
    }
    if (v->c.json) {
        json_out j;
        json_begin(&j, cli_report(v));
        json_str(&j, "file", v->pos[0]);
        json_num(&j, "accuracy", acc);
        json_str(&j, "scheme", scheme_names[scheme]);
        json_str(&j, "device", device);
        json_int(&j, "samples", (long long)test.n);
        json_int(&j, "correct", (long long)llround(acc * (double)test.n));
        json_int(&j, "file_bytes", (long long)len);
        json_num(&j, "seconds", secs);
        json_end(&j);
    } else {
        printf("%s: accuracy %.2f%% (%zu of %zu test samples, %s, %s), %.2f s\n", v->pos[0], acc * 100,
               (size_t)llround(acc * (double)test.n), test.n, scheme_names[scheme], device, secs);
    }
    dcz_dataset_free(&test);
    return EXIT_OK;
}

/* ---- info --------------------------------------------------------------------- */

const char *cli_enc_name(uint32_t e)
{
    switch (e) {
    case DCZ_ENC_F32: return "f32";
    case DCZ_ENC_F16: return "f16";
    case DCZ_ENC_I8: return "int8";
    case DCZ_ENC_I16: return "int16";
    case DCZ_ENC_SPARSE_F32: return "sparse-f32";
    case DCZ_ENC_CODEBOOK: return "codebook";
    }
    return "?";
}

const char *cli_op_name(uint16_t op)
{
    const dcz_op_info *o = dcz_op_get(op);
    return o ? o->label : "?";
}

/* Layers with a weight and a bias (the table's weighted ops). */
static int has_weights(const dcz_doc_layer *l)
{
    const dcz_op_info *o = dcz_op_get(l->op);
    return o && o->weighted;
}

/* Tensor t's name as a layer's input: "input" or the layer that writes it. */
static const char *tensor_name(const dcz_doc *d, uint32_t t)
{
    return t == 0 ? "input" : d->layers[t - 1].name;
}

/* Multiply-adds per sample of a weighted layer: each weight meets one input
 * per output position (a dense layer has one position). */
static uint64_t layer_macs(const dcz_doc_layer *l, const dcz_shape *out, uint64_t weights)
{
    uint64_t plane = 1;
    for (uint32_t k = 1; l->op == DCZ_OP_CONV2D && k < out->rank; k++) plane *= out->dims[k];
    return weights * plane;
}

/* "AxBxC" of rank dims. */
static void dims_text(uint32_t rank, const uint32_t *dims, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (uint32_t k = 0; k < rank && n < len; k++)
        n += (size_t)snprintf(buf + n, len - n, k ? "x%u" : "%u", dims[k]);
}

void cli_shape_text(const dcz_doc_tensor *w, char *buf, size_t len)
{
    dims_text(w->rank, w->dims, buf, len);
}

static void shape_text(const dcz_shape *s, char *buf, size_t len)
{
    dims_text(s->rank, s->dims, buf, len);
}

/* A stream's coding by name, as info prints it and --json names it. */
static const char *coding_name(uint8_t coding)
{
    switch (coding) {
    case DCZ_CODING_RAW: return "raw";
    case DCZ_CODING_HUFFMAN: return "huffman";
    case DCZ_CODING_ARITH: return "arith";
    }
    return "?";
}

/* What one sparse stream costs: bits per weight as coded and raw, and the
 * empirical entropy of its symbols; and, whatever its coding, what its
 * block costs on disk against that entropy, per kept weight. */
typedef struct stream_stats {
    int present;
    double coded_bits, raw_bits, entropy;  /* per stored weight / per symbol */
    uint32_t symbols;
    size_t block_bytes;        /* the stream block as stored: its length field,
                                  a code table if its coding has one, the symbols */
    double stored_per_kept;    /* block_bytes * 8 per kept weight */
    double entropy_per_kept;   /* entropy * symbols per kept weight */
} stream_stats;

static void stream_measure(const uint8_t *sym, uint32_t count, unsigned bits, size_t block_bytes,
                           uint8_t coding, uint32_t nnz, stream_stats *st)
{
    uint64_t freq[DCZ_HUFF_MAX_SYMBOLS] = { 0 };
    for (uint32_t i = 0; i < count; i++) freq[sym[i]]++;
    st->present = 1;
    st->symbols = count;
    st->entropy = dcz_huff_entropy(freq, 1u << bits);
    size_t table = coding == DCZ_CODING_HUFFMAN ? dcz_huff_table_bytes(1u << bits) : 0;
    double data_bits = block_bytes >= 4 + table ? (double)(block_bytes - 4 - table) * 8 : 0;
    st->coded_bits = nnz ? data_bits / nnz : 0;
    st->raw_bits = nnz ? (double)count * bits / nnz : 0;
    st->block_bytes = block_bytes;
    st->stored_per_kept = nnz ? (double)block_bytes * 8 / nnz : 0;
    st->entropy_per_kept = nnz ? st->entropy * count / nnz : 0;
}

/* A keep mask coded in block_bytes: its n flags, nnz of them kept; the
 * entropy is that of one flag taken alone. */
static void mask_measure(size_t n, uint32_t nnz, size_t block_bytes, stream_stats *st)
{
    const uint64_t freq[2] = { n - nnz, nnz };
    st->present = 1;
    st->symbols = (uint32_t)n;
    st->entropy = dcz_huff_entropy(freq, 2);
    st->coded_bits = nnz && block_bytes >= 4 ? (double)(block_bytes - 4) * 8 / nnz : 0;
    st->raw_bits = nnz ? (double)n / nnz : 0;
    st->block_bytes = block_bytes;
    st->stored_per_kept = nnz ? (double)block_bytes * 8 / nnz : 0;
    st->entropy_per_kept = nnz ? st->entropy * (double)n / nnz : 0;
}

typedef struct layer_info {
    const dcz_doc_layer *l;
    double density;
    size_t weights, kept, bytes, raw_bytes;
    stream_stats idx, gap;
    double floor;                /* H(p) / p bits per kept weight (dcz_huff_gap_floor),
                                    for a layer with a position stream and kept weights */
    const char *kernel, *why, *gpu_kernel;
    char why_buf[512], gpu_why[160];
    uint32_t seg_first, chunk;   /* dcz_layer_desc's */
    uint32_t timed, timed_pick;  /* and the kernels timed at load (--plan measure), */
    uint32_t timed_threads;      /* on the model's threads (--threads) */
    const char *timed_kernel[DCZ_DESC_TIMED];
    double timed_us[DCZ_DESC_TIMED];
} layer_info;

static void measure_layer(const dcz_doc_layer *l, layer_info *li)
{
    memset(li, 0, sizeof *li);
    li->l = l;
    const dcz_doc_tensor *w = &l->t[0];
    li->weights = w->n;
    li->kept = w->st.nnz;
    li->density = w->n ? (double)w->st.nnz / (double)w->n : 0;
    li->bytes = l->section_bytes;
    li->raw_bytes = l->section_bytes;
    if (w->enc != DCZ_ENC_SPARSE_F32 && w->enc != DCZ_ENC_CODEBOOK) return;
    uint8_t *idx = NULL, *gaps = NULL;
    uint32_t nnz, gap_count;
    int cb = w->enc == DCZ_ENC_CODEBOOK;
    if (dcz_doc_tensor_streams(w, cb ? &idx : NULL, &nnz, w->gap_bits ? &gaps : NULL, &gap_count) != DCZ_OK)
        return;
    size_t raw_streams = 0;
    if (cb) {
        stream_measure(idx, nnz, w->index_bits, w->st.index_bytes, w->index_coding, nnz, &li->idx);
        raw_streams += 4 + ((size_t)nnz * w->index_bits + 7) / 8;
    }
    if (w->gap_bits && w->gap_coding == DCZ_CODING_ARITH) {
        mask_measure(w->n, nnz, w->st.gap_bytes, &li->gap);
        raw_streams += 4 + (w->n + 7) / 8;
    } else if (w->gap_bits) {
        stream_measure(gaps, gap_count, w->gap_bits, w->st.gap_bytes, w->gap_coding, nnz, &li->gap);
        raw_streams += 4 + ((size_t)gap_count * w->gap_bits + 7) / 8;
    }
    if (w->gap_bits && nnz) li->floor = dcz_huff_gap_floor(li->density);
    li->raw_bytes = l->section_bytes - w->st.index_bytes - w->st.gap_bytes + raw_streams;
    free(idx);
    free(gaps);
}

/* The kernel libdcz runs each weighted layer with, and why, as it loads
 * the file here. */
static void describe_kernels(const uint8_t *buf, size_t len, const dcz_options *cap, const dcz_doc *d,
                             layer_info *li)
{
    dcz_options opt = *cap;
    opt.device = DCZ_DEVICE_CPU;
    dcz_model *m = NULL;
    const dcz_status s = dcz_open_memory(buf, len, &opt, &m);
    for (uint32_t i = 0; i < d->nlayers; i++) {
        dcz_layer_desc ld;
        if (s == DCZ_OK && dcz_describe_layer(m, i, &ld) == DCZ_OK) {
            li[i].kernel = ld.kernel;
            snprintf(li[i].why_buf, sizeof li[i].why_buf, "%s", ld.why);
            li[i].gpu_kernel = ld.gpu_kernel;
            snprintf(li[i].gpu_why, sizeof li[i].gpu_why, "%s", ld.gpu_why);
            li[i].seg_first = ld.seg_first;
            li[i].chunk = ld.chunk;
            li[i].timed = ld.timed;
            li[i].timed_pick = ld.timed_pick;
            li[i].timed_threads = dcz_model_threads(m);
            for (uint32_t k = 0; k < ld.timed; k++) {
                li[i].timed_kernel[k] = ld.timed_kernel[k];
                li[i].timed_us[k] = ld.timed_us[k];
            }
        } else {
            li[i].kernel = li[i].gpu_kernel = "none";
            snprintf(li[i].why_buf, sizeof li[i].why_buf, "libdcz does not load this file: %s",
                     dcz_status_str(s));
        }
        li[i].why = li[i].why_buf;
    }
    dcz_close(m);
}

int cmd_info(verb_ctx *v)
{
    const char *isa = NULL, *plan = NULL;
    const opt_spec specs[] = {
        ISA_SPEC(isa),
        PLAN_SPEC(plan),
        { NULL, 0, OPT_FLAG, NULL, NULL }
    };
    v->usage = "dcz info FILE [--isa LEVEL] [--plan measure] [--json]";
    v->summary = "Per-layer table (shape, density, encoding, bytes, bits per weight for the\n"
                 "codebook-index and relative-position streams before and after Huffman coding\n"
                 "with their entropy; per kept weight, each stream as stored against its\n"
                 "entropy and the positions against the floor H(p)/p of random ones; and the\n"
                 "kernel the runtime uses), the file's bytes by part (header, graph, layers,\n"
                 "stage records, calibration, preprocessing, padding), then the size and\n"
                 "accuracy of every stage recorded in FILE (none in a file written with --strip).";
    v->skip = CLI_NO_OUT | CLI_NO_DATA | CLI_NO_SEED;
    int rc = cli_parse(v, specs, 1, 1);
    if (rc != -1) return rc;
    dcz_options kopt;   /* the kernels described: the CPU's, as capped, on --threads */
    dcz_options_init(&kopt);
    kopt.threads = v->c.threads;
    if ((rc = cli_isa(v, isa, &kopt)) != -1) return rc;
    if ((rc = cli_plan(v, plan, &kopt)) != -1) return rc;
    dcz_doc *d;
    uint8_t *file;
    size_t file_len;
    if ((rc = stage_load_doc_bytes(v, v->pos[0], &d, &file, &file_len)) != -1) return rc;
    const size_t params = dcz_doc_param_count(d);
    layer_info *li = calloc(d->nlayers, sizeof *li);
    if (!li) { dcz_doc_free(d); free(file); return cli_fail(v, DCZ_ERR_NOMEM, "the layer table"); }
    dcz_shape *shapes = malloc(((size_t)d->nlayers + 1) * sizeof *shapes);
    if (!shapes || dcz_doc_shapes(d, shapes) != DCZ_OK) {   /* the reader checked them */
        free(shapes); free(li); dcz_doc_free(d); free(file);
        return cli_fail(v, shapes ? DCZ_ERR_INTERNAL : DCZ_ERR_NOMEM, "the tensor shapes");
    }
    for (uint32_t i = 0; i < d->nlayers; i++)
        if (has_weights(&d->layers[i])) measure_layer(&d->layers[i], &li[i]);
    describe_kernels(file, file_len, &kopt, d, li);
    free(file);
    int nw = 8;   /* the name column */
    for (uint32_t i = 0; i < d->nlayers; i++)
        if ((int)strlen(d->layers[i].name) > nw) nw = (int)strlen(d->layers[i].name);
    uint64_t macs = 0, macs_kept = 0;
    for (uint32_t i = 0; i < d->nlayers; i++)
        if (has_weights(&d->layers[i])) {
            macs += layer_macs(&d->layers[i], &shapes[i + 1], li[i].weights);
            macs_kept += layer_macs(&d->layers[i], &shapes[i + 1], li[i].kept);
        }
    /* what two files of one model share, whatever their records say */
    uint64_t hash = 0;
    char hash_text[24] = "";
    if (dcz_cal_model_hash(d, &hash) == DCZ_OK) snprintf(hash_text, sizeof hash_text, "%016llx", (unsigned long long)hash);
    char scheme[32] = "fp32", method[64] = "";
    if (d->calib) snprintf(scheme, sizeof scheme, "%s", d->calib->scheme == DCZ_SCHEME_INT8 ? "int8"
                           : d->calib->scheme == DCZ_SCHEME_FIXED8 ? "fixed8" : "fixed16");
    for (uint32_t i = 0; d->calib && i < d->nstages; i++) {
        char st[32];
        if (stage_get(d->stages[i], "stage", st, sizeof st) && strcmp(st, "calibrate") == 0)
            stage_get(d->stages[i], "method", method, sizeof method);
    }

    if (v->c.json) {
        json_out j;
        json_begin(&j, cli_report(v));
        json_str(&j, "file", v->pos[0]);
        json_int(&j, "file_bytes", (long long)d->file_bytes);
        json_int(&j, "dense_fp32_bytes", (long long)params * 4);
        json_int(&j, "params", (long long)params);
        json_num(&j, "ratio", (double)params * 4 / (double)d->file_bytes);
        json_int(&j, "overhead_bytes", (long long)d->overhead_bytes);
        json_str(&j, "model_hash", hash_text);
        json_str(&j, "scheme", scheme);
        if (*method) json_str(&j, "calibration_method", method);
        if (d->has_prep) {
            const dcz_preprocess *pp = &d->prep;
            json_key_obj(&j, "preprocess");
            json_int(&j, "resize", pp->resize);
            json_int(&j, "crop_height", pp->crop_h);
            json_int(&j, "crop_width", pp->crop_w);
            json_key_arr(&j, "mean");
            for (uint32_t k = 0; k < pp->channels; k++) json_arr_num(&j, pp->mean[k]);
            json_close_arr(&j);
            json_key_arr(&j, "std");
            for (uint32_t k = 0; k < pp->channels; k++) json_arr_num(&j, pp->std[k]);
            json_close_arr(&j);
            json_close_obj(&j);
        }
        json_int(&j, "macs_per_sample", (long long)macs);
        json_int(&j, "macs_per_sample_kept", (long long)macs_kept);
        const dcz_doc_parts *pt = &d->parts;
        json_key_obj(&j, "bytes_by_part");
        json_int(&j, "header", (long long)pt->header);
        json_int(&j, "graph", (long long)pt->graph);
        json_int(&j, "layers", (long long)pt->layers);
        json_int(&j, "layer_sections", pt->nlayer_sections);
        json_int(&j, "stages", (long long)pt->stages);
        json_int(&j, "calibration", (long long)pt->calib);
        json_int(&j, "preprocess", (long long)pt->prep);
        json_int(&j, "other", (long long)pt->other);
        json_int(&j, "padding", (long long)pt->padding);
        json_close_obj(&j);
        json_int(&j, "stage_records", d->nstages);
        json_key_arr(&j, "stages");
        for (uint32_t i = 0; i < d->nstages; i++) {
            char val[256];
            if (stage_get(d->stages[i], "stage", val, sizeof val)) json_arr_str(&j, val);
        }
        json_close_arr(&j);
        json_key_arr(&j, "stage_details");
        for (uint32_t i = 0; i < d->nstages; i++) {
            char val[1024];
            json_obj(&j);
            const char *keys[] = { "stage", "command", "seed", "shards", "augment", "distill", "temperature",
                                   "block", "data_hash", "validation", "accuracy", "file_bytes" };
            for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
                if (stage_get(d->stages[i], keys[k], val, sizeof val)) {
                    if (strcmp(keys[k], "accuracy") == 0 || strcmp(keys[k], "file_bytes") == 0)
                        json_num(&j, keys[k], atof(val));
                    else json_str(&j, keys[k], val);
                }
            json_close_obj(&j);
        }
        json_close_arr(&j);
        json_key_arr(&j, "layers");
        for (uint32_t i = 0; i < d->nlayers; i++) {
            const dcz_doc_layer *l = &d->layers[i];
            json_obj(&j);
            json_str(&j, "name", l->name);
            json_str(&j, "op", cli_op_name(l->op));
            if (has_weights(l)) {
                const dcz_doc_tensor *w = &l->t[0];
                json_key_arr(&j, "shape");
                for (uint32_t k = 0; k < w->rank; k++) json_arr_int(&j, w->dims[k]);
                json_close_arr(&j);
                json_num(&j, "density", li[i].density);
                json_int(&j, "weights", (long long)li[i].weights);
                json_int(&j, "kept", (long long)li[i].kept);
                json_str(&j, "encoding", cli_enc_name(w->enc));
                json_str(&j, "bias_encoding", cli_enc_name(l->t[1].enc));
                json_int(&j, "bytes", (long long)li[i].bytes);
                json_int(&j, "bytes_without_huffman", (long long)li[i].raw_bytes);
                if (w->enc == DCZ_ENC_CODEBOOK) {
                    json_int(&j, "codebook_entries", w->k);
                    json_str(&j, "codebook_format", w->codebook_f16 ? "f16" : "f32");
                    json_int(&j, "index_bits", w->index_bits);
                    json_str(&j, "index_coding", coding_name(w->index_coding));
                    json_num(&j, "index_bits_per_weight", li[i].idx.coded_bits);
                    json_num(&j, "index_entropy", li[i].idx.entropy);
                }
                if (li[i].idx.present) {
                    json_int(&j, "index_block_bytes", (long long)li[i].idx.block_bytes);
                    json_num(&j, "index_stored_bits_per_kept", li[i].idx.stored_per_kept);
                    json_num(&j, "index_entropy_per_kept", li[i].idx.entropy_per_kept);
                }
                if (li[i].gap.present) {
                    json_int(&j, "gap_bits", w->gap_bits);
                    json_str(&j, "gap_coding", coding_name(w->gap_coding));
                    json_int(&j, "gap_symbols", li[i].gap.symbols);
                    json_num(&j, "gap_bits_per_weight", li[i].gap.coded_bits);
                    json_num(&j, "gap_entropy_per_symbol", li[i].gap.entropy);
                    json_int(&j, "gap_block_bytes", (long long)li[i].gap.block_bytes);
                    json_num(&j, "gap_stored_bits_per_kept", li[i].gap.stored_per_kept);
                    json_num(&j, "gap_entropy_per_kept", li[i].gap.entropy_per_kept);
                    if (li[i].kept) json_num(&j, "gap_floor_per_kept", li[i].floor);
                }
                json_str(&j, "kernel", li[i].kernel);
                json_str(&j, "kernel_reason", li[i].why);
                json_str(&j, "gpu_kernel", li[i].gpu_kernel);
                json_str(&j, "gpu_kernel_reason", li[i].gpu_why);
                json_int(&j, "batch_chunk", li[i].chunk);
                if (li[i].timed) {   /* --plan measure: the candidates, the rules' first */
                    json_key_arr(&j, "kernel_timed");
                    for (uint32_t k = 0; k < li[i].timed; k++) {
                        json_obj(&j);
                        json_str(&j, "kernel", li[i].timed_kernel[k]);
                        json_num(&j, "us", li[i].timed_us[k]);
                        json_close_obj(&j);
                    }
                    json_close_arr(&j);
                    json_str(&j, "kernel_rules", li[i].timed_kernel[0]);
                    json_int(&j, "kernel_timed_threads", li[i].timed_threads);
                }
                json_int(&j, "macs_per_sample", (long long)layer_macs(l, &shapes[i + 1], li[i].weights));
                json_int(&j, "macs_per_sample_kept", (long long)layer_macs(l, &shapes[i + 1], li[i].kept));
            }
            json_key_arr(&j, "inputs");
            for (uint32_t k = 0; k < l->nin; k++) json_arr_str(&j, tensor_name(d, l->in[k]));
            json_close_arr(&j);
            json_key_arr(&j, "output_shape");
            for (uint32_t k = 0; k < shapes[i + 1].rank; k++) json_arr_int(&j, shapes[i + 1].dims[k]);
            json_close_arr(&j);
            json_close_obj(&j);
        }
        json_close_arr(&j);
        json_end(&j);
    } else {
        printf("%s: %zu bytes, %zu parameters (%zu bytes as dense fp32): %.1fx; container overhead %zu bytes\n"
               "model hash %s (the graph and weights: the file without its records and calibration)\n\n",
               v->pos[0], d->file_bytes, params, params * 4, (double)params * 4 / (double)d->file_bytes,
               d->overhead_bytes, hash_text);
        if (d->calib)
            printf("runs on integers: %s (calibration table of %u layers%s%s); --fp32 runs it in float\n\n",
                   scheme, d->calib->count, *method ? ", method " : "", method);
        if (d->has_prep) {   /* what dcz run does to an image first */
            const dcz_preprocess *pp = &d->prep;
            char r[32] = "kept", c[48] = "none", ms[96] = "";
            if (pp->resize) snprintf(r, sizeof r, "shorter side to %u", pp->resize);
            if (pp->crop_h) snprintf(c, sizeof c, "center %ux%u (width x height)", pp->crop_w, pp->crop_h);
            for (uint32_t k = 0, n = 0; k < pp->channels; k++)
                n += (uint32_t)snprintf(ms + n, sizeof ms - n, "%s%g/%g", k ? ", " : "", pp->mean[k], pp->std[k]);
            printf("images: size %s, crop %s, then (x - mean) / std per channel: %s\n\n", r, c, ms);
        }
        /* the graph: what each layer reads and computes */
        char inshape[48];
        shape_text(&shapes[0], inshape, sizeof inshape);
        printf("%-*s %-14s %-24s %-12s %12s %12s\n", nw, "layer", "op", "inputs", "output", "MACs",
               "MACs kept");
        printf("%-*s %-14s %-24s %-12s %12s %12s\n", nw, "input", "", "", inshape, "", "");
        for (uint32_t i = 0; i < d->nlayers; i++) {
            const dcz_doc_layer *l = &d->layers[i];
            char ins[256] = "", out[48], m1[24] = "", m2[24] = "";
            size_t n = 0;
            for (uint32_t k = 0; k < l->nin && n < sizeof ins; k++)
                n += (size_t)snprintf(ins + n, sizeof ins - n, "%s%s", k ? "," : "", tensor_name(d, l->in[k]));
            shape_text(&shapes[i + 1], out, sizeof out);
            if (has_weights(l)) {
                snprintf(m1, sizeof m1, "%llu", (unsigned long long)layer_macs(l, &shapes[i + 1], li[i].weights));
                snprintf(m2, sizeof m2, "%llu", (unsigned long long)layer_macs(l, &shapes[i + 1], li[i].kept));
            }
            printf("%-*s %-14s %-24s %-12s %12s %12s\n", nw, l->name, cli_op_name(l->op), ins, out, m1, m2);
        }
        printf("%-*s %-14s %-24s %-12s %12llu %12llu\n(MACs: multiply-adds per sample of the weighted "
               "layers, all weights and the kept ones)\n\n", nw, "total", "", "", "", (unsigned long long)macs,
               (unsigned long long)macs_kept);

        /* the layout of Deep Compression's Tables 2 and 3 (P: pruning, Q:
         * quantization, H: Huffman) */
        printf("%-*s %-10s %9s %7s %-10s %10s %10s %10s %10s %9s %9s %8s %8s\n", nw, "layer", "shape", "weights",
               "kept", "encoding", "wbits P+Q", "wbits +H", "ibits P+Q", "ibits +H", "bytes", "no-H bytes",
               "rate P+Q", "rate +H");
        size_t tw = 0, tk = 0, tb = 0, traw = 0;
        for (uint32_t i = 0; i < d->nlayers; i++) {
            const dcz_doc_layer *l = &d->layers[i];
            if (!has_weights(l)) continue;
            const dcz_doc_tensor *w = &l->t[0];
            char dims[48], wq[16] = "-", wh[16] = "-", iq[16] = "-", ih[16] = "-";
            cli_shape_text(w, dims, sizeof dims);
            if (w->enc == DCZ_ENC_CODEBOOK) {
                snprintf(wq, sizeof wq, "%u", w->index_bits);
                snprintf(wh, sizeof wh, "%.2f", li[i].idx.coded_bits);
            } else {
                snprintf(wq, sizeof wq, "%d", w->enc == DCZ_ENC_I8 ? 8 : w->enc == DCZ_ENC_F16 || w->enc == DCZ_ENC_I16 ? 16 : 32);
                snprintf(wh, sizeof wh, "%s", wq);
            }
            if (li[i].gap.present) {
                snprintf(iq, sizeof iq, "%.2f", li[i].gap.raw_bits);
                snprintf(ih, sizeof ih, "%.2f", li[i].gap.coded_bits);
            }
            const double dense = (double)(w->n + l->t[1].n) * 4;
            printf("%-*s %-10s %9zu %6.2f%% %-10s %10s %10s %10s %10s %9zu %9zu %7.1fx %7.1fx\n", nw, l->name, dims,
                   li[i].weights, li[i].density * 100, cli_enc_name(w->enc), wq, wh, iq, ih, li[i].bytes,
                   li[i].raw_bytes, dense / (double)li[i].raw_bytes, dense / (double)li[i].bytes);
            tw += li[i].weights;
            tk += li[i].kept;
            tb += li[i].bytes;
            traw += li[i].raw_bytes;
        }
        printf("%-*s %-10s %9zu %6.2f%% %-10s %10s %10s %10s %10s %9zu %9zu %7.1fx %7.1fx\n", nw, "total", "", tw,
               tw ? 100.0 * (double)tk / (double)tw : 0, "", "", "", "", "", tb, traw,
               (double)params * 4 / (double)(traw + d->overhead_bytes), (double)params * 4 / (double)d->file_bytes);
        printf("(wbits: codebook-index bits per weight; ibits: relative-position bits per weight,\n"
               " fillers included; rates count each layer's weights and biases)\n");

        int any = 0;
        for (uint32_t i = 0; i < d->nlayers; i++) {
            if (!li[i].idx.present && !li[i].gap.present) continue;
            if (!any++) printf("\n%-*s %-8s %9s %7s %12s %12s %9s %s\n", nw, "layer", "stream", "symbols", "raw",
                               "coded b/s", "entropy b/s", "to bound", "coding");
            const stream_stats *ss[2] = { &li[i].idx, &li[i].gap };
            const char *nm[2] = { "index", "position" };
            const unsigned bits[2] = { d->layers[i].t[0].index_bits, d->layers[i].t[0].gap_bits };
            const uint8_t coding[2] = { d->layers[i].t[0].index_coding, d->layers[i].t[0].gap_coding };
            for (int k = 0; k < 2; k++) {
                if (!ss[k]->present) continue;
                double per_sym = ss[k]->symbols ? ss[k]->coded_bits * (double)li[i].kept / ss[k]->symbols : 0;
                printf("%-*s %-8s %9u %7u %12.3f %12.3f %8.1f%% %s\n", nw, d->layers[i].name, nm[k], ss[k]->symbols,
                       bits[k], per_sym, ss[k]->entropy,
                       ss[k]->entropy > 0 ? (per_sym / ss[k]->entropy - 1) * 100 : 0, coding_name(coding[k]));
            }
        }
        /* what each stream costs per kept weight, whatever its coding, against
         * its entropy and, for positions, against the floor of random ones */
        any = 0;
        for (uint32_t i = 0; i < d->nlayers; i++) {
            const layer_info *L = &li[i];
            if ((!L->idx.present && !L->gap.present) || !L->kept) continue;
            if (!any++) printf("\n%-*s %7s %9s %9s %9s %9s %9s %9s %9s\n", nw, "layer", "kept", "pos b/w",
                               "pos H b/w", "floor b/w", "to floor", "idx b/w", "idx H b/w", "to bound");
            char c[7][16];
            for (int k = 0; k < 7; k++) snprintf(c[k], sizeof c[k], "-");
            if (L->gap.present) {
                snprintf(c[0], sizeof c[0], "%.3f", L->gap.stored_per_kept);
                snprintf(c[1], sizeof c[1], "%.3f", L->gap.entropy_per_kept);
                snprintf(c[2], sizeof c[2], "%.3f", L->floor);
                if (L->floor > 0) snprintf(c[3], sizeof c[3], "%+.1f%%", (L->gap.stored_per_kept / L->floor - 1) * 100);
            }
            if (L->idx.present) {
                snprintf(c[4], sizeof c[4], "%.3f", L->idx.stored_per_kept);
                snprintf(c[5], sizeof c[5], "%.3f", L->idx.entropy_per_kept);
                if (L->idx.entropy_per_kept > 0)
                    snprintf(c[6], sizeof c[6], "%+.1f%%",
                             (L->idx.stored_per_kept / L->idx.entropy_per_kept - 1) * 100);
            }
            printf("%-*s %6.2f%% %9s %9s %9s %9s %9s %9s %9s\n", nw, d->layers[i].name, L->density * 100, c[0], c[1],
                   c[2], c[3], c[4], c[5], c[6]);
        }
        if (any)
            printf("(bits per kept weight: b/w the stream's whole block as stored (length, code table,\n"
                   " codes; positions' fillers included) x 8 / kept weights; H b/w its empirical entropy\n"
                   " per symbol x symbols / kept weights; floor H(p)/p, p the fraction kept, H the binary\n"
                   " entropy: no coder stores positions kept at random in fewer bits, and a stream below it\n"
                   " has structure, rows or columns pruned together; to floor, to bound: pos b/w over the\n"
                   " floor, idx b/w over its entropy)\n");

        /* where the file's bytes go, from its section table */
        {
            const dcz_doc_parts *pt = &d->parts;
            char lname[48];
            snprintf(lname, sizeof lname, "layers (%u sections)", pt->nlayer_sections);
            const char *names[] = { "header and table", "graph", lname, "stage records", "calibration",
                                    "preprocessing", "other sections", "padding" };
            const size_t bytes[] = { pt->header, pt->graph, pt->layers, pt->stages, pt->calib, pt->prep,
                                     pt->other, pt->padding };
            const double total = (double)d->file_bytes;
            printf("\n%-22s %12s %8s\n", "part", "bytes", "share");
            for (size_t k = 0; k < sizeof bytes / sizeof *bytes; k++)
                if (bytes[k] || k != 6)   /* sections of unknown types only where there are some */
                    printf("%-22s %12zu %7.2f%%\n", names[k], bytes[k],
                           total > 0 ? 100.0 * (double)bytes[k] / total : 0);
            printf("%-22s %12zu %7.2f%%\n(the file's bytes by part, from its section table; padding: the zeros that\n"
                   " start each section on a 64-byte boundary; --strip drops the stage records)\n", "total",
                   dcz_doc_parts_total(pt), 100.0);
        }

        /* one short line per layer; why each kernel, once, below */
        int kw = (int)strlen("runtime kernel");
        for (uint32_t i = 0; i < d->nlayers; i++)
            if (has_weights(&d->layers[i]) && (int)strlen(li[i].kernel) > kw) kw = (int)strlen(li[i].kernel);
        printf("\n%-*s %-*s %s\n", nw, "layer", kw, "runtime kernel", "on a GPU (CUDA backend)");
        for (uint32_t i = 0; i < d->nlayers; i++)
            if (has_weights(&d->layers[i]))
                printf("%-*s %-*s %s: %s\n", nw, d->layers[i].name, kw, li[i].kernel, li[i].gpu_kernel,
                       li[i].gpu_why);
        for (uint32_t i = 0; i < d->nlayers; i++) {
            if (!has_weights(&d->layers[i])) continue;
            uint32_t first = 0;
            while (!has_weights(&d->layers[first]) || strcmp(li[first].kernel, li[i].kernel) != 0 ||
                   strcmp(li[first].why, li[i].why) != 0)
                first++;
            if (first == i) printf("  %s: %s\n", li[i].kernel, li[i].why);
        }
        /* --plan measure: each layer's candidates as timed, the rules' first */
        for (uint32_t i = 0, said = 0; i < d->nlayers; i++) {
            if (!li[i].timed) continue;
            if (!said++)
                printf("  kernels timed on %u thread%s (--threads):\n", li[i].timed_threads,
                       li[i].timed_threads == 1 ? "" : "s");
            printf("  timed at load: %s:", d->layers[i].name);
            for (uint32_t k = 0; k < li[i].timed; k++)
                printf("%s %s %.1f us%s%s", k ? "," : "", li[i].timed_kernel[k], li[i].timed_us[k],
                       k == 0 ? " (the rules')" : "", k == li[i].timed_pick ? " (kept)" : "");
            printf("\n");
        }
        /* the runs of per-sample layers a batch goes through by chunks */
        for (uint32_t i = 0; i < d->nlayers; i++) {
            if (!li[i].chunk || li[i].seg_first != i) continue;
            uint32_t last = i;
            while (last + 1 < d->nlayers && li[last + 1].seg_first == i) last++;
            printf("  batches: %s .. %s by chunks of %u sample%s, their activations kept in the cache\n",
                   d->layers[i].name, d->layers[last].name, li[i].chunk, li[i].chunk == 1 ? "" : "s");
        }

        if (!d->nstages)
            printf("\nno stage records: the file keeps no history (commands, accuracies, the size of each\n"
                   "stage's file), as one written with --strip; no size waterfall to show\n");
        if (d->nstages) {
            printf("\n%-10s %12s %9s %10s\n", "stage", "bytes", "ratio", "accuracy");
            for (uint32_t i = 0; i < d->nstages; i++) {
                char name[64] = "?", bytes[64] = "", acc[64] = "";
                stage_get(d->stages[i], "stage", name, sizeof name);
                stage_get(d->stages[i], "file_bytes", bytes, sizeof bytes);
                int has_acc = stage_get(d->stages[i], "accuracy", acc, sizeof acc);
                double b = atof(bytes);
                char accs[32] = "-";
                if (has_acc) snprintf(accs, sizeof accs, "%.2f%%", atof(acc) * 100);
                printf("%-10s %12.0f %8.1fx %10s\n", name, b, b > 0 ? (double)params * 4 / b : 0, accs);
            }
        }
    }
    free(li);
    free(shapes);
    dcz_doc_free(d);
    return EXIT_OK;
}

/* ---- run ---------------------------------------------------------------------- */

/* Parses "N,C,H,W" or "N,D" (2 to 5 positive numbers); the count, or -1. */
static int parse_shape(const char *s, uint64_t *dims, int max)
{
    int n = 0;
    while (*s) {
        char *end;
        if (n == max || *s < '0' || *s > '9') return -1;
        unsigned long long x = strtoull(s, &end, 10);
        if (end == s || x == 0 || x > DCZ_MAX_ACT) return -1;
        dims[n++] = x;
        s = end;
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return n >= 2 ? n : -1;
}

static float *floats_from_le(const uint8_t *buf, size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    for (size_t i = 0; x && i < n; i++) x[i] = dcz_f32_from_bits(dcz_le32(buf + 4 * i));
    return x;
}

/* Raw little-endian float32 samples from path; with a shape, the file must
 * hold exactly its values and one sample of it as many values as the
 * model's (the model's own shape, or any view of the same values: images
 * N,1,28,28 into a perceptron of 784 inputs, as PNG input is taken).
 * Exit code or -1. */
static int run_load_raw(const verb_ctx *v, const char *path, const char *shape, const dcz_model *m, float **x,
                        size_t *n)
{
    const size_t in = dcz_input_size(m);
    uint64_t sd[1 + DCZ_MAX_RANK];
    int sr = 0;
    if (shape && (sr = parse_shape(shape, sd, 1 + DCZ_MAX_RANK)) < 0) {
        cli_usage_error(v, "--shape takes 2 to 5 positive numbers separated by commas (N,C,H,W or N,D), not '%s'",
                        shape);
        return EXIT_USAGE;
    }
    if (shape) {   /* one sample of the shape must hold the values of one of the model's */
        uint32_t md[DCZ_MAX_RANK];
        const int mr = dcz_input_shape(m, md, DCZ_MAX_RANK);
        uint64_t per = 1;
        int same = sr - 1 == mr;
        for (int k = 1; k < sr; k++) {
            per *= sd[k];
            if (per > DCZ_MAX_ACT) per = DCZ_MAX_ACT + 1ull;
            same &= k - 1 < mr && sd[k] == md[k - 1];
        }
        if (!same && per != in) {
            char want[64];
            size_t w = 0;
            for (int k = 0; k < mr && w < sizeof want; k++)
                w += (size_t)snprintf(want + w, sizeof want - w, k ? "x%u" : "%u", md[k]);
            cli_error("run: --shape %s does not fit the model, which takes samples of %s (%zu values)", shape,
                      want, in);
            return EXIT_BAD_INPUT;
        }
    }
    uint8_t *buf;
    size_t len;
    int err;
    dcz_status s = cli_read_file(path, &buf, &len, &err);
    if (s != DCZ_OK) return cli_io_fail(v, path, s, err, 0);
    const uint64_t want = shape ? sd[0] * (uint64_t)in * 4 : 0;
    if (len == 0 || len % (in * 4) != 0 || (shape && (uint64_t)len != want)) {
        if (shape)
            cli_error("run: %s holds %zu bytes; --shape %s needs %llu (float32)", path, len, shape,
                      (unsigned long long)want);
        else
            cli_error("run: %s holds %zu bytes, not a whole number of samples of %zu float32 values", path, len, in);
        free(buf);
        return EXIT_BAD_INPUT;
    }
    *n = len / (in * 4);
    *x = floats_from_le(buf, len / 4);
    free(buf);
    return *x ? -1 : cli_fail(v, DCZ_ERR_NOMEM, "the samples");
}

/* The PNG and JPEG images v->pos[1..] as samples of the model's input. */
static int run_load_images(const verb_ctx *v, int resize, const dcz_model *m, float **x, size_t *n)
{
    const size_t in = dcz_input_size(m), count = (size_t)v->npos - 1;
    uint32_t md[DCZ_MAX_RANK];
    const int mr = dcz_input_shape(m, md, DCZ_MAX_RANK);
    *x = malloc(count * in * sizeof **x);
    if (!*x) return cli_fail(v, DCZ_ERR_NOMEM, "the images");
    for (size_t i = 0; i < count; i++) {
        const char *path = v->pos[1 + i];
        uint8_t *buf;
        size_t len;
        int ioerr;
        dcz_status s = cli_read_file(path, &buf, &len, &ioerr);
        if (s != DCZ_OK) return cli_io_fail(v, path, s, ioerr, 0);
        if (!dcz_png_sniff(buf, len) && !dcz_jpeg_sniff(buf, len)) {
            cli_error("run: %s is neither a PNG nor a JPEG image (raw float32 samples go with --raw FILE)", path);
            free(buf);
            return EXIT_BAD_INPUT;
        }
        dcz_image img;
        char err[256];
        uint32_t c, h, w;
        dcz_preprocess prep;
        s = dcz_image_decode(buf, len, &img, err, sizeof err);
        free(buf);
        if (s == DCZ_OK && dcz_model_preprocess(m, &prep)) {   /* as the network was trained */
            s = dcz_prep_apply(&prep, &img, md[1], md[2], *x + i * in, err, sizeof err);
            dcz_image_free(&img);
            if (s != DCZ_OK) {
                cli_error("run: %s: %s (the model's recorded preprocessing: dcz info shows it)", path,
                          err[0] ? err : dcz_status_str(s));
                return cli_exit_code(s, 1);
            }
            continue;
        }
        if (s == DCZ_OK) s = dcz_image_input_shape(&img, (uint32_t)mr, md, resize, &c, &h, &w, err, sizeof err);
        if (s == DCZ_OK && (size_t)c * h * w != in) {
            snprintf(err, sizeof err, "does not fill the model's %zu inputs", in);
            s = DCZ_ERR_SHAPE;
        }
        if (s == DCZ_OK) s = dcz_image_to_sample(&img, c, h, w, resize, *x + i * in, err, sizeof err);
        dcz_image_free(&img);
        if (s != DCZ_OK) {
            cli_error("run: %s: %s", path, err[0] ? err : dcz_status_str(s));
            return cli_exit_code(s, 1);
        }
    }
    *n = count;
    return -1;
}

/* The indices of the k largest of y[0..n), best first. */
static void top_k(const float *y, size_t n, int k, int *best)
{
    for (int t = 0; t < k; t++) {
        int b = -1;
        for (size_t c = 0; c < n; c++) {
            int used = 0;
            for (int u = 0; u < t; u++) used |= best[u] == (int)c;
            if (!used && (b < 0 || y[c] > y[b])) b = (int)c;
        }
        best[t] = b;
    }
}

int cmd_run(verb_ctx *v)
{
    const char *input = NULL, *raw = NULL, *shape = NULL, *isa = NULL, *plan = NULL;
    int index = 0, count = 1, top = 3, resize = 0;
    double max_work = 0;
    const opt_spec specs[] = {
        { "raw", 0, OPT_STR, &raw, "raw little-endian float32 samples ('-' for stdin)" },
        { "input", 'i', OPT_STR, &input, "the same as --raw" },
        { "shape", 0, OPT_STR, &shape, "with --raw: the samples' shape, N,C,H,W or N,D; checked against the file "
                                       "size and the model" },
        { "resize", 0, OPT_FLAG, &resize, "scale images to the model's input size (else another size is an error)" },
        { "index", 0, OPT_INT, &index, "with --data: first test sample to run (default 0)" },
        { "count", 0, OPT_INT, &count, "with --data: number of samples (default 1)" },
        { "top", 0, OPT_INT, &top, "classes shown per sample (default 3)" },
        MAX_WORK_SPEC(max_work),
        ISA_SPEC(isa),
        PLAN_SPEC(plan),
        { NULL, 0, OPT_FLAG, NULL, NULL }
    };
    v->usage = "dcz run FILE (IMAGE... [--resize] | --raw SAMPLES.f32 [--shape N,C,H,W] |\n"
               "               --data DATA [--index I] [--count N]) [--top K] [--isa LEVEL] [--plan measure] [-o OUT.f32]";
    v->summary = "Runs FILE on samples and prints the top K classes of each with their scores.\n"
                 "Samples are one of:\n"
                 "  PNG images (gray or RGB, 8 or 16 bit, palette, alpha or transparency,\n"
                 "    composited over black) and JPEG images (gray or colour, 8 bit, baseline or\n"
                 "    progressive); RGB becomes gray by luma (299 R + 587 G + 114 B)\n"
                 "    / 1000, gray becomes RGB by repetition; values / 255 (or / 65535) as the\n"
                 "    IDX loader scales Fashion-MNIST. An image of another size than the model's\n"
                 "    input is an error (exit 2) unless --resize (bilinear, averaging when\n"
                 "    shrinking). A flat input of D values takes a gray image of D pixels or an\n"
                 "    RGB image of D / 3. A model that records its preprocessing (dcz import\n"
                 "    --resize/--crop/--normalize) applies it instead: the shorter side resized\n"
                 "    as PIL does, the center crop, (v / 255 - mean) / std per channel, the\n"
                 "    transform torchvision's networks were trained with.\n"
                 "  raw little-endian float32 samples (--raw FILE): a whole number of samples;\n"
                 "    --shape N,C,H,W (or N,D) states their shape, checked against the file size\n"
                 "    and the model's input (exit 2 when either disagrees).\n"
                 "  test samples of a dataset (--data).\n"
                 "With -o, also writes the raw float32 outputs (N x outputs, little-endian),\n"
                 "atomically.";
    v->skip = CLI_NO_SEED;
    int rc = cli_parse(v, specs, 1, (int)(sizeof v->pos / sizeof *v->pos));
    if (rc != -1) return rc;
    if (raw && input) { cli_usage_error(v, "give --raw or --input, not both"); return EXIT_USAGE; }
    if (input) raw = input;
    const int images = v->npos > 1;
    if (images + !!raw + !!v->c.data != 1) {
        cli_usage_error(v, "give exactly one of: images (PNG or JPEG), --raw, --data");
        return EXIT_USAGE;
    }
    if (shape && !raw) { cli_usage_error(v, "--shape goes with --raw"); return EXIT_USAGE; }
    if (top < 1 || count < 1) { cli_usage_error(v, "--top and --count must be >= 1"); return EXIT_USAGE; }
    if (index < 0) { cli_usage_error(v, "--index must be >= 0, not %d", index); return EXIT_USAGE; }
    dcz_options opt;
    if ((rc = cli_runtime_options(v, &opt)) != -1) return rc;
    if ((rc = cli_max_work(v, max_work, &opt)) != -1) return rc;
    if ((rc = cli_isa(v, isa, &opt)) != -1) return rc;
    if ((rc = cli_plan(v, plan, &opt)) != -1) return rc;
    for (int i = 1; i < v->npos; i++)
        if (strcmp(v->pos[i], "-") == 0 && strcmp(v->pos[0], "-") == 0) {
            cli_usage_error(v, "the model and the samples cannot both come from stdin");
            return EXIT_USAGE;
        }
    if (raw && strcmp(raw, "-") == 0 && strcmp(v->pos[0], "-") == 0) {
        cli_usage_error(v, "the model and the samples cannot both come from stdin");
        return EXIT_USAGE;
    }
    dcz_model *m = NULL;
    uint8_t *model_bytes = NULL;
    size_t model_len = 0;
    int err;
    dcz_status s = cli_read_file(v->pos[0], &model_bytes, &model_len, &err);
    if (s != DCZ_OK) return cli_io_fail(v, v->pos[0], s, err, 0);
    s = dcz_open_memory(model_bytes, model_len, &opt, &m);
    if (s != DCZ_OK) {
        rc = cli_not_dcz(v, v->pos[0], model_bytes, model_len);
        free(model_bytes);
        return rc != -1 ? rc : cli_model_fail(v, v->pos[0], s);
    }
    free(model_bytes);
    (void)cli_device_of(v, m);
    FILE *rep = cli_report(v);
    const size_t in = dcz_input_size(m), out = dcz_output_size(m);
    float *x = NULL, *y = NULL;
    uint8_t *labels = NULL;
    size_t n = 0;
    dcz_dataset test;
    memset(&test, 0, sizeof test);
    if (raw) {
        if ((rc = run_load_raw(v, raw, shape, m, &x, &n)) != -1) goto done;
    } else if (images) {
        if ((rc = run_load_images(v, resize, m, &x, &n)) != -1) goto done;
    } else {
        v->has_prep = dcz_model_preprocess(m, &v->prep);
        if ((rc = stage_load_data(v, DCZ_SPLIT_TEST, &test)) != -1) goto done;
        if ((size_t)test.c * test.h * test.w != in) {
            cli_error("run: %s samples do not fit the model's %zu inputs", v->c.data, in);
            rc = EXIT_BAD_INPUT;
            goto done;
        }
        if ((size_t)index >= test.n) { cli_usage_error(v, "--index beyond the %zu test samples", test.n); rc = EXIT_USAGE; goto done; }
        n = (size_t)count;
        if (n > test.n - (size_t)index) n = test.n - (size_t)index;
        x = malloc(n * in * sizeof *x);
        if (x && (s = dcz_dataset_samples(&test, NULL, (size_t)index, n, x, NULL, 0)) != DCZ_OK) {
            rc = cli_fail_data(v, s, "reading the test samples", &test, NULL);
            goto done;
        }
        labels = test.y + index;
    }
    y = malloc(n * out * sizeof *y);
    if (!x || !y) { rc = cli_fail(v, DCZ_ERR_NOMEM, "the samples and their outputs"); goto done; }
    if ((s = dcz_run(m, x, n, y)) != DCZ_OK) { rc = cli_fail(v, s, "running"); goto done; }
    if (v->c.out) {
        uint8_t *le = malloc(n * out * 4);
        if (!le) { rc = cli_fail(v, DCZ_ERR_NOMEM, "the outputs"); goto done; }
        for (size_t i = 0; i < n * out; i++) dcz_put32(le + 4 * i, dcz_f32_bits(y[i]));
        s = cli_write_file(v->c.out, le, n * out * 4, &err);
        free(le);
        if (s != DCZ_OK) { rc = cli_io_fail(v, v->c.out, s, err, 1); goto done; }
    }
    const int k = top < (int)out ? top : (int)out;
    int *best = malloc((size_t)k * sizeof *best);
    if (!best) { rc = cli_fail(v, DCZ_ERR_NOMEM, "the top classes"); goto done; }
    json_out j;
    if (v->c.json) { json_begin(&j, rep); json_key_arr(&j, "samples"); }
    for (size_t i = 0; i < n; i++) {
        const float *yi = y + i * out;
        top_k(yi, out, k, best);
        if (v->c.json) {
            json_obj(&j);
            if (images) json_str(&j, "image", v->pos[1 + i]);
            else json_int(&j, "sample", (long long)(raw ? i : (size_t)index + i));
            if (labels) json_int(&j, "label", labels[i]);
            json_key_arr(&j, "top");
            for (int t = 0; t < k; t++) {
                json_obj(&j);
                json_int(&j, "class", best[t]);
                json_num(&j, "score", yi[best[t]]);
                json_close_obj(&j);
            }
            json_close_arr(&j);
            json_close_obj(&j);
        } else {
            if (images) fprintf(rep, "%s", v->pos[1 + i]);
            else fprintf(rep, "sample %zu", raw ? i : (size_t)index + i);
            if (labels) fprintf(rep, " (label %u)", labels[i]);
            fprintf(rep, ":");
            for (int t = 0; t < k; t++) fprintf(rep, " %d (%.4f)", best[t], yi[best[t]]);
            fprintf(rep, "\n");
        }
    }
    if (v->c.json) { json_close_arr(&j); json_end(&j); }
    free(best);
    rc = EXIT_OK;
done:
    free(x);
    free(y);
    dcz_close(m);
    dcz_dataset_free(&test);
    return rc;
}
