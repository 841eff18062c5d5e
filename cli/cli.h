/* cli.h: what the verbs of the dcz command share: option parsing, per-layer
 * rules, progress display, JSON output, file I/O with atomic writes, exit
 * codes, and the glue between stage libraries and files (stage.c).
 *
 * Only cli/ prints to the user and chooses exit codes (docs/CLI.md).
 * Checked end to end by the scripts in tests/cli/.
 */
#ifndef DCZ_CLI_H
#define DCZ_CLI_H

#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dcz.h"
#include "model/doc.h"
#include "steer/steer.h"
#include "train/dist.h"
#include "train/train.h"

/* exit codes (docs/CLI.md) */
enum {
    EXIT_OK = 0,
    EXIT_USAGE = 1,
    EXIT_BAD_INPUT = 2,
    EXIT_IO = 3,
    EXIT_DEVICE = 4,
    EXIT_INTERNAL = 5
};

/* ---- options ------------------------------------------------------------ */

typedef enum { OPT_FLAG, OPT_STR, OPT_INT, OPT_FLOAT } opt_kind;

typedef struct opt_spec {
    const char *name;      /* long name without "--" */
    char short_name;       /* 0 if none */
    opt_kind kind;
    void *dst;             /* int* for FLAG/INT, const char** for STR, double* for FLOAT */
    const char *help;
} opt_spec;

/* Options every verb takes. */
typedef struct common_opts {
    const char *out;       /* -o */
    const char *data;      /* --data */
    double max_data_mb;    /* --max-data-mb: 0 the default (DCZ_DATA_DEFAULT_MAX) */
    const char *recipe;    /* --recipe */
    const char *device;    /* --device */
    int seed;
    int threads;
    int quiet;
    int json;
    int help;
} common_opts;

typedef struct verb_ctx {
    const char *verb;
    const char *usage;     /* "dcz prune IN [options] -o OUT" */
    const char *summary;   /* one paragraph */
    int argc;              /* the verb's arguments, argv[0] = verb */
    char **argv;
    const char *cmdline;   /* the whole command line, for provenance */
    common_opts c;
    const char *pos[64];   /* positional arguments */
    int npos;
    int progress;          /* draw progress bars */
    char **recipe_args;    /* owned: the recipe's options, which values point into */
    int recipe_nargs;
    unsigned skip;         /* CLI_NO_*: common options the verb does not take, set
                              before cli_parse */
    int dry_run;           /* --dry-run (prune, quantize, encode, compress): report
                              the bytes the run would write, write nothing */
    int shards;            /* --shards (the verbs that train): 0 not given (the
                              MPI ranks once cli_check_shards has run in a job) */
    const dcz_comm *comm;  /* the ranks of an MPI run, NULL alone */
    dcz_dist *dist;        /* the MPI job (its sums' cost for --json; its sums move to
                              the GPUs when ranks train on them) */
    int has_prep;          /* image folders become samples through prep: the model's
                              record (stage_load_doc), or train's options */
    dcz_preprocess prep;
    const char *augment_text; /* --augment (the verbs that train), NULL not given */
    unsigned augment;      /* DCZ_AUG_* bits from it, once cli_check_augment has run */
    int strip;             /* --strip (the verbs that write a .dcz): written without
                              stage records (stage_finish) */
    int own_val;           /* --data is an image folder with a validation split of
                              its own (ROOT/val), asked once by cli_parse */
    struct dcz_tdev *tdev; /* owned: the GPU retraining runs on (--device gpu,
                              cli_open_train_device), NULL: the CPU */
    double distill;        /* --distill (prune, quantize, compress): 0 not given */
    double temperature;    /* --temperature: NAN not given (then 4) */
    dcz_doc *teacher_doc;  /* owned: the input model as read, which retraining */
    dcz_net *teacher;      /* distills from (cli_open_teacher); NULL without --distill */
} verb_ctx;

/* --shards, for the verbs that train. */
#define SHARDS_SPEC(v) \
    { "shards", 0, OPT_INT, &(v)->shards, \
      "cut each batch into N parts whose gradients sum exactly: the same N gives the\n" \
      "                             same file for every rank count dividing it (default: 1, or the MPI ranks)" }

/* Checks --shards against the ranks: -1, or the exit code of a usage
 * error. Without --shards, an MPI job of several ranks shards each step
 * into a part per rank (v->shards set to the rank count). */
int cli_check_shards(verb_ctx *v);
/* --augment, for the verbs that train. */
#define AUGMENT_SPEC(v) \
    { "augment", 0, OPT_STR, &(v)->augment_text, \
      "training samples varied at random as torchvision trains ImageNet networks: none,\n" \
      "                             flip (mirrored, p 0.5), crop (a random box of 8-100% of the image, ratio 3/4\n" \
      "                             to 4/3, resized to the input; image folders only) or crop+flip (default none)" }

/* Parses --augment into v->augment: -1, or the exit code of a usage error
 * (an unknown name; any but none without --data, which is what it
 * varies). */
int cli_check_augment(verb_ctx *v);
/* "none", "flip", "crop" or "crop+flip": the name of DCZ_AUG_* bits, as
 * --augment takes it and the stage records say it. */
const char *cli_augment_name(unsigned augment);
/* --distill and --temperature, for the verbs that retrain a model. */
#define DISTILL_SPECS(v) \
    { "distill", 0, OPT_FLOAT, &(v)->distill, \
      "W in (0, 1]: retraining learns from the input model's outputs as well as the labels,\n" \
      "                             a share W of its loss from the input's softened probabilities\n" \
      "                             (knowledge distillation); recovers more accuracy (default 0: labels alone)" }, \
    { "temperature", 0, OPT_FLOAT, &(v)->temperature, \
      "T > 0: how far --distill softens the probabilities, logits / T (default 4)" }

/* The temperature --distill softens by when --temperature is not given. */
#define DISTILL_TEMPERATURE 4.0

/* Checks --distill and --temperature: -1, or the exit code of a usage
 * error (out of range; --temperature without --distill; either without
 * --data, which retraining reads). */
int cli_check_distill(verb_ctx *v);
/* Checks a --block value (prune, compress, sensitivity, plot): -1, or the
 * exit code of a usage error (outside 1 .. DCZ_PRUNE_MAX_BLOCK). */
int cli_check_block(const verb_ctx *v, int block);
/* With --distill, the teacher: the input model of len bytes (as read,
 * before any change) opened as a net of its own (v->teacher, freed by
 * cli_ctx_free). -1, or the exit code after a message. Without it,
 * nothing. */
int cli_open_teacher(verb_ctx *v, const uint8_t *bytes, size_t len);

/* With --device gpu, the GPU the verb's training runs on (v->tdev, freed
 * by cli_ctx_free; under MPI the GPU of the rank's place on its node), a
 * note saying so, or where net's epochs stay on the CPU, why (a layer
 * under variational dropout; a variational phase runs on the CPU). -1, or
 * the exit code after a message (exit 4: the GPU cannot be set up).
 * Without it, nothing. */
int cli_open_train_device(verb_ctx *v, const dcz_net *net);
/* Sets what training steps share from the run: the sharding and ranks
 * (--shards, MPI), the augmentation (--augment), the device (--device
 * gpu) and the teacher (--distill). */
void cli_sgd_shared(const verb_ctx *v, dcz_sgd *sgd);

/* --strip, for the verbs that write a .dcz (stage_finish acts on it). */
#define STRIP_SPEC(v) \
    { "strip", 0, OPT_FLAG, &(v)->strip, \
      "write the file without stage records (its history: commands, accuracies, sizes),\n" \
      "                             the smallest file; the same model, which runs the same" }

/* Common options a verb may leave out (verb_ctx.skip). */
enum { CLI_NO_OUT = 1, CLI_NO_DATA = 2, CLI_NO_SEED = 4 };

/* Releases what parsing allocated (the recipe's strings). */
void cli_ctx_free(verb_ctx *v);

/* Parses the verb's arguments (recipe file first, flags after it win) into
 * the common options and specs. Returns -1 on success, or an exit code to
 * return (help printed: 0; usage error printed: 1). */
int cli_parse(verb_ctx *v, const opt_spec *specs, int min_pos, int max_pos);
void cli_usage_error(const verb_ctx *v, const char *fmt, ...);

/* Where a verb's human-readable report goes: stdout when the verb writes
 * no file (the report is its result: info, eval, calibrate --compare, a
 * dry run), else stderr beside the notes, or NULL under --quiet. */
FILE *cli_notes(const verb_ctx *v);
/* Where --json goes: stdout, or stderr when the output file is stdout
 * (-o -, and no dry run), so that data and report never mix. */
FILE *cli_report(const verb_ctx *v);

/* Messages on stderr: errors always, notes unless --quiet. */
void cli_error(const char *fmt, ...);
void cli_note(const verb_ctx *v, const char *fmt, ...);

/* Exit code for a library status, after printing "dcz VERB: WHAT: reason". */
int cli_fail(const verb_ctx *v, dcz_status s, const char *what);
/* cli_fail for the status of a call that read samples of a and b (either
 * may be NULL): the reason is the one a streaming set's read left
 * (dcz_dataset_error, naming the file) when there is one, a read input's
 * failure. */
int cli_fail_data(const verb_ctx *v, dcz_status s, const char *what, const dcz_dataset *a, const dcz_dataset *b);
int cli_exit_code(dcz_status s, int reading);

/* The candidate closest to word (a typo of it, or word cut short), or NULL
 * when none is close enough to suggest. */
const char *cli_closest(const char *word, const char *const *cands, int n);
/* "a, b, c" of the first `most` names, then " and N more". */
void cli_name_list(char *buf, size_t len, const char *const *names, int n, int most);
/* The usage error of a --OPT layer pattern that matches none of the n
 * layers with weights: names the closest one and lists them (of path,
 * when not NULL). */
void cli_no_such_layer(const verb_ctx *v, const char *opt, const char *pattern, const char *const *names, int n,
                       const char *path);

/* ---- per-layer rules ("fc*=5,conv1=8"; later rules win) ------------------ */

#define RULES_MAX 256   /* one per layer of a MobileNetV2 and more */

typedef struct rule_set {
    int n;
    char pattern[RULES_MAX][64];
    double value[RULES_MAX];
} rule_set;

/* Parses text into rules; a bare number means "*=number". 0 on success. */
int rules_parse(const char *text, rule_set *r, char *err, size_t errlen);
/* The value of the last rule matching name, or dflt when none does. */
double rules_value(const rule_set *r, const char *name, double dflt);
/* Nonzero when some rule matches name. */
int rules_match(const rule_set *r, const char *name);
/* The index of the first rule whose pattern matches none of the n names,
 * or -1 when every rule matches one. */
int rules_unmatched(const rule_set *r, const char *const *names, int n);

/* ---- files -------------------------------------------------------------- */

/* Reads a whole file ("-" = stdin) into a malloc'd buffer. On failure *err
 * gets the system's reason (errno; 0 when the status says it all). */
dcz_status cli_read_file(const char *path, uint8_t **buf, size_t *len, int *err);
/* Writes buf to path ("-": stdout), *err getting the system's reason on
 * failure (docs/CLI.md, "Output files"):
 * - a regular file, or a name not taken yet, through any symbolic links
 *   (which stay): a temporary file in the same folder renamed over it, so
 *   that an interrupted run leaves no partial file; a replaced file keeps
 *   its mode and, where permitted, its owner; other hard links to it keep
 *   the old contents;
 * - a device, FIFO, socket or open pipe (/dev/null, >(cmd)): written
 *   through, never replaced. */
dcz_status cli_write_file(const char *path, const void *buf, size_t len, int *err);
/* 0 when path can be written as cli_write_file would (its folder exists
 * and is writable, it is not a folder), else the errno that says why. */
int cli_check_output(const char *path);
/* Prints "dcz: VERB: cannot read|write PATH: reason (what to do)", the
 * system's reason when err is not 0, and returns the exit code. */
int cli_io_fail(const verb_ctx *v, const char *path, dcz_status s, int err, int writing);
/* Installs signal handlers that remove the temporary file on SIGINT/SIGTERM. */
void cli_install_signals(void);
/* This process is rank `rank` of an MPI job of `size` ranks: ranks other
 * than 0 print no report, note or progress (errors only, each naming its
 * rank) and write no file, rank 0 writing the job's output; a signal that
 * ends a rank of a job says why it may have come. */
void cli_join(int rank, int size);

/* --max-work of the verbs that run models in libdcz: the most work one
 * sample may take (dcz_options.max_work); 0, not given, keeps libdcz's
 * default. -1, or the exit code of a bad value. */
#define MAX_WORK_SPEC(w) { "max-work", 0, OPT_FLOAT, &(w), "most multiply-adds per sample a model may need (default 2^36)" }
int cli_max_work(const verb_ctx *v, double max_work, dcz_options *opt);
/* --isa: the most of the CPU's instruction sets the model's kernels may use
 * (dcz_options.isa), checked against this machine. Exit code or -1. */
#define ISA_SPEC(s) { "isa", 0, OPT_STR, &(s), "CPU kernels' instruction sets at most: native (default), scalar, " \
                                              "avx2, avx512, avx512-vnni, avx512-vbmi or neon" }
int cli_isa(const verb_ctx *v, const char *isa, dcz_options *opt);
/* --plan: how the model's CPU kernels are chosen (dcz_options.plan): by the
 * rules, or timed at load. Exit code or -1. */
#define PLAN_SPEC(s) { "plan", 0, OPT_STR, &(s), "CPU kernels chosen by the rules (default) or measure: each " \
                                                "layer's candidates timed at load, the fastest kept" }
int cli_plan(const verb_ctx *v, const char *plan, dcz_options *opt);
/* --resize, --crop, --normalize: the preprocessing an image gets before the
 * model (docs/FORMAT.md, PREPROCESS), recorded in the file. */
#define PREP_SPECS(resize, crop, normalize) \
    { "resize", 0, OPT_INT, &(resize), "preprocessing recorded in the model: images' shorter side resized to N " \
                                       "pixels (antialiased bilinear, as PIL and torchvision)" }, \
    { "crop", 0, OPT_STR, &(crop), "preprocessing: the center N or HxW pixels kept (the model's input size)" }, \
    { "normalize", 0, OPT_STR, &(normalize), "preprocessing: (x - mean) / std per channel of x in [0, 1]: " \
                                             "imagenet, or MEAN/STD (0.5/0.25 gray, three values each RGB)" }
/* Parses the three options into *p (*has 0 when none is given). Exit code
 * or -1. */
int cli_prep_parse(const verb_ctx *v, int resize, const char *crop, const char *normalize, dcz_preprocess *p,
                   int *has);
/* Records p in d after checking it fits d's input ((C, H, W) of 1 or 3
 * channels, the crop its size, the normalization its channels). Exit code
 * or -1. */
int cli_prep_fit(const verb_ctx *v, dcz_preprocess *p, dcz_doc *d);
/* Prints why the model at path could not be loaded or run, and returns the
 * exit code. */
/* The device m runs on ("cpu" or "gpu"), after a note saying why when a
 * GPU was looked for and the CPU runs it. */
const char *cli_device_of(const verb_ctx *v, const dcz_model *m);

int cli_model_fail(const verb_ctx *v, const char *path, dcz_status s);
/* For a verb that could not read path (len bytes in buf) as a .dcz: when
 * the bytes are an ONNX model, says so and how to import it, and returns
 * the exit code; -1 otherwise. */
int cli_not_dcz(const verb_ctx *v, const char *path, const uint8_t *buf, size_t len);

/* The kernels libdcz runs on this machine: "avx512+avx2", "avx2", "neon",
 * or "reference" (also when reference is set: forced); under a cap
 * (--isa), the level's name. */
const char *cli_kernels_name(int reference, dcz_isa_cap isa);

/* ---- progress ------------------------------------------------------------ */

typedef struct progress {
    int enabled;
    const char *label;
    size_t total;
    double started, last_draw;
    int last_permille;
} progress;

void progress_start(progress *p, const verb_ctx *v, const char *label, size_t total);
void progress_cb(void *ctx, size_t done, size_t total); /* a dcz_progress_fn */
void progress_end(progress *p);
/* Clears the bar so that a note can take its line; the next call of
 * progress_cb draws it again. */
void progress_clear(progress *p);
double cli_now(void);

/* ---- JSON output ---------------------------------------------------------- */

typedef struct json_out {
    FILE *f;
    int depth;
    int first[16];
} json_out;

void json_begin(json_out *j, FILE *f);                 /* { */
void json_end(json_out *j);                            /* }\n */
void json_key_obj(json_out *j, const char *key);       /* "key": { */
void json_key_arr(json_out *j, const char *key);       /* "key": [ */
void json_obj(json_out *j);                            /* { inside an array */
void json_close_obj(json_out *j);
void json_close_arr(json_out *j);
void json_str(json_out *j, const char *key, const char *v);
void json_num(json_out *j, const char *key, double v);
void json_int(json_out *j, const char *key, long long v);
void json_bool(json_out *j, const char *key, int v);
void json_arr_int(json_out *j, long long v);
void json_arr_num(json_out *j, double v);
void json_arr_str(json_out *j, const char *v);
/* "mpi": the job's ranks, shards and gradient sums (count, bytes each,
 * seconds in them), in a verb's JSON; nothing outside a job. */
void cli_json_job(json_out *j, const verb_ctx *v);
/* The same as a note, with the share of the run's seconds. */
void cli_note_job(const verb_ctx *v, double seconds);

/* ---- models on disk ------------------------------------------------------ */

/* Reads and decodes a .dcz (or exits with a message): returns an exit code
 * or -1 on success. */
int stage_load_doc(verb_ctx *v, const char *path, dcz_doc **doc);
/* The same, also handing back the file's bytes (*bytes, malloc'd) for a
 * verb that needs them too: the input is read once ("-" can be read once). */
int stage_load_doc_bytes(verb_ctx *v, const char *path, dcz_doc **doc, uint8_t **bytes,
                         size_t *nbytes);
/* Loads a dataset split, printing a message on failure: exit code or -1. */
int stage_load_data(const verb_ctx *v, int split, dcz_dataset *d);
/* Loads both splits of --data, which must agree: one sample shape, no
 * test label beyond the train split's classes. Exit code or -1. */
int stage_load_splits(const verb_ctx *v, dcz_dataset *train, dcz_dataset *test);
/* Checks data d against a model whose input has shape dims (rank of them)
 * and `outputs` classes: samples of that shape (C, H, W), or of as many
 * values for a flat input, and no more classes than outputs (exact: as
 * many, for training from scratch). Fewer classes than outputs is a note.
 * The message says what was found and what was expected. Exit code or -1. */
int stage_check_fit(const verb_ctx *v, const dcz_dataset *d, int rank, const uint32_t *dims, size_t outputs,
                    int exact);

/* Holds the validation split (n samples, DCZ_VALIDATION_SEED) out of
 * *train: *val gets them, *train keeps the rest. n must be below the
 * split's size (a usage error naming --validation otherwise). Exit code
 * or -1. */
int stage_hold_out(const verb_ctx *v, dcz_dataset *train, int n, dcz_dataset *val);

/* The validation samples of --data's own validation split (an image folder's
 * ROOT/val) into *val, checked against the training split's shape and
 * classes. Exit code or -1. Where --data has one, decisions measure on it
 * and nothing is held out of the training split. */
int stage_load_val(const verb_ctx *v, const dcz_dataset *train, dcz_dataset *val);
/* Where the validation samples a decision measures on come from, as the
 * reports say it: "of --data's val split" or "held out of the training
 * split". */
const char *stage_val_source(const verb_ctx *v);
/* A usage error (exit code) when --data has a validation split of its own
 * and --validation N (not 0) asks to hold samples out as well; else -1. */
int stage_check_own_val(const verb_ctx *v, int validation);

/* An option's value before its default is known. */
#define NOT_GIVEN INT_MIN

/* The validation samples d's train record says it trained without (0 when
 * it says none). */
int stage_trained_without(const dcz_doc *d);
/* The validation samples held out of a training split of n samples when
 * nothing says how many: a sixth of it, at most DEFAULT_VALIDATION (none
 * of a split under 10; Fashion-MNIST: 10,000 of 60,000). dcz train holds
 * them out by default, so that the decisions of sensitivity and compress
 * --budget are measured on samples the model never saw. */
int stage_validation_count(size_t n);
/* The validation samples a decision measures on when --validation is not
 * given: those the model's train record says it trained without, else
 * stage_validation_count of the training split's n samples. */
int stage_validation_default(const dcz_doc *d, size_t n);
/* A note when the model's train record does not say it trained without the
 * n validation samples a decision is about to measure on (its accuracy on
 * samples it saw is high, which makes every loss measured from there look
 * larger). */
void stage_note_seen(const verb_ctx *v, const dcz_doc *d, const char *path, int n);

/* Accuracy of the .dcz held in buf on data, measured by libdcz; right
 * (NULL, or data->n bytes) gets 1 for each sample classified right. */
dcz_status stage_eval_bytes(const uint8_t *buf, size_t len, const dcz_options *opt,
                            const dcz_dataset *data, uint8_t *right, double *accuracy);
/* The same on a model already open. */
dcz_status stage_eval_model(dcz_model *m, const dcz_dataset *data, uint8_t *right, double *accuracy);

/* The settings a verb adds to its stage record, as "key = value" lines (one
 * per layer for prune and quantize): text that grows as lines are added,
 * never cut, whatever the size of the network. Zeroed, it is empty. */
typedef struct stage_extra {
    char *text;    /* NUL-terminated; NULL while nothing was added */
    size_t len, cap;
    int nomem;     /* an addition found no memory: stage_finish fails with it */
} stage_extra;

/* Appends printf-formatted text to e: "key = value" lines, each ending in
 * '\n' (the record ends a last one that does not). */
void stage_extra_add(stage_extra *e, const char *fmt, ...);
/* Empties e, keeping its memory. */
void stage_extra_clear(stage_extra *e);
void stage_extra_free(stage_extra *e);

/* Encodes doc with a record of this stage (extra: its settings, may be
 * NULL); when test is set, measures its accuracy with libdcz and adds it to
 * the stage record, then writes the file. *accuracy_out (may be NULL) gets
 * the accuracy or -1, *bytes_out the file's size. Under --strip (v->strip)
 * doc's records are dropped, those before and this stage's, and the file is
 * written without them (doc then holds what was written). Returns an exit
 * code or -1 on success. */
int stage_finish(const verb_ctx *v, dcz_doc *doc, const char *stage, const dcz_dataset *data,
                 const stage_extra *extra, const dcz_dataset *test, const char *out_path,
                 double *accuracy_out, size_t *bytes_out);

/* Reads "key = value" from a stage text into val (vlen bytes); 0 if absent. */
int stage_get(const char *text, const char *key, char *val, size_t vlen);

/* The name of a layer operator ("conv2d"), of a tensor encoding
 * ("codebook"), and a tensor's shape as text ("300x784", "50x20x5x5"). */
const char *cli_op_name(uint16_t op);
const char *cli_enc_name(uint32_t enc);
void cli_shape_text(const dcz_doc_tensor *w, char *buf, size_t len);

/* Runtime options from --device / --threads. Exit code or -1. */
int cli_runtime_options(const verb_ctx *v, dcz_options *opt);

/* The verbs. */
int cmd_train(verb_ctx *v);
int cmd_prune(verb_ctx *v);
int cmd_quantize(verb_ctx *v);
int cmd_encode(verb_ctx *v);
int cmd_compress(verb_ctx *v);
int cmd_eval(verb_ctx *v);
int cmd_sensitivity(verb_ctx *v);
int cmd_plot(verb_ctx *v);

/* ---- the sensitivity scan (cmd_steer.c), for sensitivity and plot ---------- */

/* The most samples held out for validation when nothing says how many
 * (stage_validation_count): on 10,000 the standard error of an accuracy
 * change is about 0.2 points, where on 5,000 it was 0.3 and the README's
 * LeNet-300-100, trained on an AMD EPYC (Zen 5), scored 0.75 points more
 * on them than on its test split, a floor its budget could not reach at
 * 100x (docs/CLI.md, compress --budget). */
#define DEFAULT_VALIDATION 10000

/* The scan's options. */
typedef struct scan_opts {
    const char *sparsity, *bits;
    int validation, iters, block;
} scan_opts;

#define SCAN_SPECS(o) \
    { "sparsity-levels", 0, OPT_STR, &(o).sparsity, \
      "sparsities each layer is pruned to, alone (default 0.3,0.5,0.7,0.8,0.85,0.9,0.93,0.95,0.97,0.98)" }, \
    { "bits-levels", 0, OPT_STR, &(o).bits, "codebook bits each layer is shared with, alone (default 2,3,4,5,6,7,8)" }, \
    { "validation", 0, OPT_INT, &(o).validation, \
      "samples held out of the training split (default: those the input trained without, else a\n" \
      "                             sixth of the training split, at most 10000)" }, \
    { "kmeans-iters", 0, OPT_INT, &(o).iters, "k-means iterations (default 30)" }, \
    { "block", 0, OPT_INT, &(o).block, "prune by whole blocks of N input channels, as prune --block (default 1)" }

void scan_opts_init(scan_opts *o);
/* The plan of o, every option checked: -1, or the exit code of a usage
 * error. */
int scan_plan(const verb_ctx *v, const scan_opts *o, dcz_sens_plan *plan);
/* Runs the scan of plan over the model in path on a validation split of
 * o->validation samples of --data (stage_validation_default when not
 * given): -1 with *rep filled, or an exit code
 * after a message. */
int scan(verb_ctx *v, const char *path, const scan_opts *o, const dcz_sens_plan *plan, dcz_sens_report *rep);
int cmd_info(verb_ctx *v);
int cmd_run(verb_ctx *v);
int cmd_calibrate(verb_ctx *v);
int cmd_bench(verb_ctx *v);
int cmd_import(verb_ctx *v);
int cmd_export(verb_ctx *v);

#endif /* DCZ_CLI_H */
