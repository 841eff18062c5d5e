/* cmd_interop.c: the verbs that move models between dcz and ONNX:
 * import (an ONNX model into a .dcz) and export (a .dcz of any stage into a
 * dense fp32 ONNX model). The conversions are interop/; this file reads,
 * reports and writes.
 *
 * Checked end to end by tests/cli/interop.sh.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "interop/interop.h"

static size_t kept(const dcz_doc_tensor *t)
{
    if (!t->mask) return t->n;
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++) k += t->mask[i] != 0;
    return k;
}

/* The folder of a model's path, in which ONNX resolves the locations of
 * its external data (as onnx.load does: the path's text, links not
 * followed) into dir (len bytes); NULL for standard input, which has none.
 * 0, or -1 for a folder's name longer than dir holds. */
static int model_dir(const char *path, char *dir, size_t len, const char **out)
{
    *out = NULL;
    if (strcmp(path, "-") == 0) return 0;
    const char *slash = strrchr(path, '/');
    const size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    if (n >= len) return -1;
    if (!slash) memcpy(dir, ".", 2);
    else if (slash == path) memcpy(dir, "/", 2);
    else {
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    *out = dir;
    return 0;
}

int cmd_import(verb_ctx *v)
{
    int keep_dense = 0, resize = 0;
    const char *crop = NULL, *normalize = NULL;
    const opt_spec specs[] = {
        { "keep-dense", 0, OPT_FLAG, &keep_dense, "store every weight dense, even when a layer is mostly exact zeros" },
        PREP_SPECS(resize, crop, normalize),
        STRIP_SPEC(v),
        { NULL, 0, OPT_FLAG, NULL, NULL }
    };
    v->usage = "dcz import MODEL.onnx -o OUT.dcz [--data DATA] [--keep-dense]\n"
               "                  [--resize N] [--crop N|HxW] [--normalize imagenet|MEAN/STD]";
    v->summary = "Reads an ONNX model (opsets 11 to 22, a dynamic or fixed batch dimension) into a\n"
                 "dense fp32 .dcz. The graph, branches and residual connections included, may\n"
                 "hold Conv (grouped and depthwise too), Gemm, MatMul, Add, Mul, Concat, MaxPool,\n"
                 "AveragePool, GlobalAveragePool, ReduceMean (over H and W), Relu, LeakyRelu,\n"
                 "Sigmoid, Tanh, HardSigmoid, HardSwish, Clip, Flatten, Reshape, Split and Slice\n"
                 "(channels), Transpose (a channel shuffle), BatchNormalization (folded, else a\n"
                 "per-channel affine), Softmax (last), Pad (zeros), Dropout, Identity and Constant\n"
                 "nodes, weights in float32, float16, bfloat16 or float64 (docs/CLI.md lists the\n"
                 "attributes each takes). Shapes the graph computes (Shape, Gather, Unsqueeze,\n"
                 "Cast, Div, Concat ...) are evaluated at import for the model's input shape.\n"
                 "Weights kept as external data (as torch.onnx.export writes them since PyTorch\n"
                 "2.9: MODEL.onnx.data) are read from the files their locations name in the\n"
                 "model's folder, never outside it; a model read from standard input cannot have\n"
                 "them. Batch normalization and constant Adds are folded into the Conv or Gemm\n"
                 "computing their input where they can; a Sigmoid read only by a\n"
                 "Mul of its input and output (SiLU) makes one SILU layer with that Mul, and a\n"
                 "HardSigmoid of alpha 1/6 and beta 1/2 so read (HardSwish) one HARD_SWISH;\n"
                 "Dropout and Identity are removed; a layer of which at least 10% of the weights\n"
                 "are exact zeros is taken as pruned elsewhere: stored sparse, its zeros kept at\n"
                 "zero by retraining (--keep-dense: never). Layers are named conv1, fc1, relu1,\n"
                 "pool1, ... as dcz train names them, so per-layer rules apply alike; the table\n"
                 "printed says which ONNX nodes each comes from. A model dcz cannot represent is\n"
                 "refused (exit 2): every unsupported operator is named once, with how many nodes\n"
                 "use it and the first of them. With --data, the accuracy on the test split is\n"
                 "measured and recorded. --resize, --crop and --normalize record the\n"
                 "preprocessing the network was trained with (torchvision's: --resize 256 --crop\n"
                 "224 --normalize imagenet), which dcz run applies to images and every later\n"
                 "stage keeps.";
    v->skip = CLI_NO_SEED;
    int rc = cli_parse(v, specs, 1, 1);
    if (rc != -1) return rc;
    if (!v->c.out) { cli_usage_error(v, "import needs -o OUT.dcz"); return EXIT_USAGE; }
    dcz_preprocess prep;
    int has_prep;
    if ((rc = cli_prep_parse(v, resize, crop, normalize, &prep, &has_prep)) != -1) return rc;
    dcz_options ropt;
    if ((rc = cli_runtime_options(v, &ropt)) != -1) return rc;
    uint8_t *buf;
    size_t len;
    int why;
    dcz_status s = cli_read_file(v->pos[0], &buf, &len, &why);
    if (s != DCZ_OK) return cli_io_fail(v, v->pos[0], s, why, 0);
    if (dcz_onnx_is_dcz(buf, len)) {
        free(buf);
        cli_error("import: %s is already a .dcz model, not ONNX: it needs no import; give it to the other verbs "
                  "as it is (dcz info %s), or write it as ONNX with 'dcz export %s -o MODEL.onnx'", v->pos[0],
                  v->pos[0], v->pos[0]);
        return EXIT_BAD_INPUT;
    }
    char dir[4096];
    dcz_onnx_import_opts io = { keep_dense, NULL };
    if (model_dir(v->pos[0], dir, sizeof dir, &io.dir) != 0) {
        cli_error("import: %s: the folder's name is longer than %zu bytes, the most dcz resolves external data "
                  "in; move the model (and its .onnx.data) to a shorter path", v->pos[0], sizeof dir - 1);
        return EXIT_BAD_INPUT;
    }
    dcz_onnx_info info;
    dcz_doc *doc = NULL;
    char err[2048];
    s = dcz_onnx_import(buf, len, &io, &doc, &info, err, sizeof err);
    free(buf);
    if (s != DCZ_OK) {
        cli_error("import: %s: %s", v->pos[0], err[0] ? err : dcz_status_str(s));
        return cli_exit_code(s, 1);
    }
    dcz_dataset test;
    memset(&test, 0, sizeof test);
    if (has_prep && (rc = cli_prep_fit(v, &prep, doc)) != -1) goto done;
    v->has_prep = doc->has_prep;   /* --data's images as the model takes them */
    v->prep = doc->prep;
    if (v->c.data && (rc = stage_load_data(v, DCZ_SPLIT_TEST, &test)) != -1) goto done;
    stage_extra extra = { 0 };
    stage_extra_add(&extra, "source = ");
    const size_t at = extra.len;
    stage_extra_add(&extra, "%s", v->pos[0]);
    for (size_t i = at; i < extra.len; i++)   /* one value per line, whatever the path holds */
        if ((unsigned char)extra.text[i] < 0x20) extra.text[i] = '?';
    stage_extra_add(&extra, "\nonnx_opset = %lld\nonnx_ir_version = %lld\nonnx_producer = %s\n",
                    (long long)info.opset, (long long)info.ir_version, info.producer[0] ? info.producer : "-");
    double acc = -1;
    size_t bytes = 0;
    rc = stage_finish(v, doc, "import", NULL, &extra, v->c.data ? &test : NULL, v->c.out, &acc, &bytes);
    stage_extra_free(&extra);
    if (rc != -1) goto done;
    const size_t params = dcz_doc_param_count(doc);
    if (v->c.json) {
        json_out j;
        json_begin(&j, cli_report(v));
        json_str(&j, "file", v->c.out);
        json_str(&j, "source", v->pos[0]);
        json_int(&j, "opset", info.opset);
        json_str(&j, "producer", info.producer);
        json_int(&j, "nodes", info.nodes);
        json_int(&j, "nodes_removed", info.dropped);
        json_int(&j, "nodes_folded", info.folded);
        json_int(&j, "params", (long long)params);
        json_int(&j, "file_bytes", (long long)bytes);
        if (acc >= 0) json_num(&j, "accuracy", acc);
        json_key_arr(&j, "layers");
        for (uint32_t i = 0; i < doc->nlayers; i++) {
            const dcz_doc_layer *l = &doc->layers[i];
            json_obj(&j);
            json_str(&j, "name", l->name);
            json_str(&j, "op", cli_op_name(l->op));
            json_str(&j, "from", info.source[i]);
            if (l->ntensors) {
                json_num(&j, "density", l->t[0].n ? (double)kept(&l->t[0]) / (double)l->t[0].n : 0);
                json_str(&j, "encoding", l->t[0].mask ? "sparse-f32" : "f32");
            }
            json_close_obj(&j);
        }
        json_close_arr(&j);
        json_end(&j);
    } else if (cli_notes(v)) {
        FILE *f = cli_notes(v);
        fprintf(f, "%s: ONNX opset %lld, IR version %lld, from %s; %u nodes -> %u layers "
                "(%u folded into a layer, %u removed)\n", v->pos[0], (long long)info.opset,
                (long long)info.ir_version, info.producer[0] ? info.producer : "an unnamed producer", info.nodes,
                doc->nlayers, info.folded, info.dropped);
        fprintf(f, "%-10s %-15s %-12s %8s  %s\n", "layer", "op", "weight", "density", "ONNX nodes");
        for (uint32_t i = 0; i < doc->nlayers; i++) {
            const dcz_doc_layer *l = &doc->layers[i];
            char shape[48] = "-", dens[16] = "-";
            if (l->ntensors) cli_shape_text(&l->t[0], shape, sizeof shape);
            if (l->ntensors && l->t[0].n)
                snprintf(dens, sizeof dens, "%.1f%%", 100.0 * (double)kept(&l->t[0]) / (double)l->t[0].n);
            fprintf(f, "%-10s %-15s %-12s %8s  %s\n", l->name, cli_op_name(l->op), shape, dens, info.source[i]);
        }
        fprintf(f, "wrote %s: %zu parameters, %zu bytes", v->c.out, params, bytes);
        if (acc >= 0) fprintf(f, ", accuracy %.2f%% on %zu test samples", acc * 100, test.n);
        fprintf(f, "\n");
    }
    rc = EXIT_OK;
done:
    dcz_dataset_free(&test);
    dcz_onnx_info_free(&info);
    dcz_doc_free(doc);
    return rc;
}

int cmd_export(verb_ctx *v)
{
    int opset = 0;
    const opt_spec specs[] = {
        { "opset", 0, OPT_INT, &opset, "ONNX opset to write, 11 to 22 (default 13, or 14 for a model with "
          "HardSwish)" },
        { NULL, 0, OPT_FLAG, NULL, NULL }
    };
    v->usage = "dcz export MODEL.dcz -o OUT.onnx [--opset N]";
    v->summary = "Writes MODEL.dcz, whatever stage wrote it (dense, pruned, quantized or Huffman-\n"
                 "coded), as a standard ONNX model with dense fp32 weights (codebooks and sparse\n"
                 "positions decoded), so other tools can run and check it: input 'input' and\n"
                 "output 'output' with a symbolic batch dimension; the model's graph as nodes\n"
                 "named after the layers (Gemm, Conv, pools, Add, Mul, Concat, the activations,\n"
                 "Softmax), initializers LAYER.weight and LAYER.bias.";
    v->skip = CLI_NO_DATA | CLI_NO_SEED;
    int rc = cli_parse(v, specs, 1, 1);
    if (rc != -1) return rc;
    if (!v->c.out) { cli_usage_error(v, "export needs -o OUT.onnx"); return EXIT_USAGE; }
    if (opset != 0 && (opset < DCZ_ONNX_OPSET_MIN || opset > DCZ_ONNX_OPSET_MAX)) {
        cli_usage_error(v, "--opset must be %d to %d", DCZ_ONNX_OPSET_MIN, DCZ_ONNX_OPSET_MAX);
        return EXIT_USAGE;
    }
    dcz_doc *d;
    if ((rc = stage_load_doc(v, v->pos[0], &d)) != -1) return rc;
    /* the stages the model went through, for the ONNX doc_string */
    char doc_string[512], stages[256] = "";
    size_t n = 0;
    for (uint32_t i = 0; i < d->nstages && n < sizeof stages; i++) {
        char name[64];
        if (stage_get(d->stages[i], "stage", name, sizeof name))
            n += (size_t)snprintf(stages + n, sizeof stages - n, "%s%s", n ? ", " : "", name);
    }
    snprintf(doc_string, sizeof doc_string, "exported by dcz %s as dense fp32%s%s%s", DCZ_VERSION_STRING,
             n ? " (stages: " : "", stages, n ? ")" : "");
    dcz_onnx_export_opts eo = { opset, doc_string };
    opset = dcz_onnx_export_opset(d, opset);
    uint8_t *buf = NULL;
    size_t len = 0;
    char err[512];
    dcz_status s = dcz_onnx_export(d, &eo, &buf, &len, err, sizeof err);
    if (s != DCZ_OK) {
        cli_error("export: %s: %s", v->pos[0], err[0] ? err : dcz_status_str(s));
        dcz_doc_free(d);
        return cli_exit_code(s, 1);
    }
    int why;
    s = cli_write_file(v->c.out, buf, len, &why);
    free(buf);
    if (s != DCZ_OK) {
        dcz_doc_free(d);
        return cli_io_fail(v, v->c.out, s, why, 1);
    }
    const size_t params = dcz_doc_param_count(d);
    if (v->c.json) {
        json_out j;
        json_begin(&j, cli_report(v));
        json_str(&j, "file", v->c.out);
        json_str(&j, "source", v->pos[0]);
        json_int(&j, "opset", opset);
        json_int(&j, "layers", d->nlayers);
        json_int(&j, "params", (long long)params);
        json_int(&j, "onnx_bytes", (long long)len);
        json_int(&j, "dcz_bytes", (long long)d->file_bytes);
        json_end(&j);
    } else if (cli_notes(v)) {
        fprintf(cli_notes(v), "wrote %s: ONNX opset %d, %u layers, %zu parameters as dense fp32, %zu bytes "
                "(the .dcz: %zu bytes)\n", v->c.out, opset, d->nlayers, params, len, d->file_bytes);
    }
    dcz_doc_free(d);
    return EXIT_OK;
}
