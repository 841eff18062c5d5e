/* common.c: option parsing, per-layer rules, messages and exit codes (with
 * the name meant when a word is close to one: an option, a recipe key, a
 * layer), atomic file writes, progress bars and JSON output for the dcz
 * command.
 *
 * Checked end to end by the scripts in tests/cli/ (usage errors, exit codes, atomic
 * output, --json, quiet output when stderr is not a terminal; the
 * suggestions by tests/cli/messages.sh).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "train/dev.h"
#include "interop/interop.h"
#include "prune/prune.h"
#include "runtime/tool.h"
#include "train/png.h"

/* ---- messages and exit codes -------------------------------------------- */

/* this process's rank in an MPI job (cli_join): 0 alone */
static int job_rank, job_size = 1;

void cli_join(int rank, int size)
{
    job_rank = rank;
    job_size = size;
    if (rank > 0 && !freopen("/dev/null", "w", stdout)) fclose(stdout);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    if (job_rank > 0) fprintf(stderr, "dcz: rank %d: ", job_rank);
    else fputs("dcz: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

FILE *cli_notes(const verb_ctx *v)
{
    if (!v->c.out || v->dry_run) return stdout;
    return v->c.quiet ? NULL : stderr;
}

FILE *cli_report(const verb_ctx *v)
{
    return v->c.out && strcmp(v->c.out, "-") == 0 && !v->dry_run ? stderr : stdout;
}

void cli_note(const verb_ctx *v, const char *fmt, ...)
{
    if (v->c.quiet) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_exit_code(dcz_status s, int reading)
{
    switch (s) {
    case DCZ_OK: return EXIT_OK;
    case DCZ_ERR_ARG: return EXIT_USAGE;
    case DCZ_ERR_IO: return reading ? EXIT_BAD_INPUT : EXIT_IO;
    case DCZ_ERR_FORMAT:
    case DCZ_ERR_CRC:
    case DCZ_ERR_VERSION:
    case DCZ_ERR_UNSUPPORTED:
    case DCZ_ERR_SHAPE:
    case DCZ_ERR_DATA: return EXIT_BAD_INPUT;
    case DCZ_ERR_DEVICE: return EXIT_DEVICE;
    case DCZ_ERR_NOMEM:
    case DCZ_ERR_INTERNAL: return EXIT_INTERNAL;
    case DCZ_ERR_DIVERGED: return EXIT_USAGE;   /* the settings' fault */
    case DCZ_ERR_LIMIT: return EXIT_BAD_INPUT;
    }
    return EXIT_INTERNAL;
}

int cli_fail(const verb_ctx *v, dcz_status s, const char *what)
{
    if (s == DCZ_ERR_DIVERGED)
        cli_error("%s: %s: %s (lower the learning rate or the momentum; nothing was written)", v->verb, what,
                  dcz_status_str(s));
    else
        cli_error("%s: %s: %s", v->verb, what, dcz_status_str(s));
    return cli_exit_code(s, 0);
}

int cli_fail_data(const verb_ctx *v, dcz_status s, const char *what, const dcz_dataset *a, const dcz_dataset *b)
{
    if (s == DCZ_ERR_DEVICE && v->tdev && v->tdev->err[0]) {   /* the GPU's own reason */
        cli_error("%s: %s on the GPU: %s", v->verb, what, v->tdev->err);
        return cli_exit_code(s, 1);
    }
    const char *why = a ? dcz_dataset_error(a) : "";
    if (!why[0] && b) why = dcz_dataset_error(b);
    if (!why[0]) return cli_fail(v, s, what);
    cli_error("%s: %s: %s", v->verb, what, why);
    return cli_exit_code(s, 1);
}

void cli_usage_error(const verb_ctx *v, const char *fmt, ...)
{
    if (job_rank > 0) return;   /* every rank parses the same line: rank 0 says it */
    va_list ap;
    fprintf(stderr, "dcz %s: ", v->verb);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: %s\n(see dcz %s --help)\n", v->usage, v->verb);
}

/* ---- suggestions ------------------------------------------------------------ */

/* Edit distance (insertions, deletions, substitutions and swaps of two
 * neighbours) between a and b, stopping at 9: the distance of two close
 * words, not of long ones. */
static int edit_distance(const char *a, const char *b)
{
    enum { MAX = 64 };
    const size_t na = strlen(a), nb = strlen(b);
    if (na >= MAX || nb >= MAX) return 9;
    int d[MAX][MAX];
    for (size_t i = 0; i <= na; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= nb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[na][nb] < 9 ? d[na][nb] : 9;
}

const char *cli_closest(const char *word, const char *const *cands, int n)
{
    const char *best = NULL;
    int bd = 9, ties = 0;
    const size_t wl = strlen(word);
    for (int i = 0; i < n; i++) {
        if (!cands[i] || strcmp(cands[i], word) == 0) continue;
        int d = edit_distance(word, cands[i]);
        /* a word cut short ("prune-epoch") names the longer one */
        if (wl >= 3 && strncmp(cands[i], word, wl) == 0 && d > 1) d = 1;
        if (d < bd) { bd = d; best = cands[i]; ties = 0; }
        else if (best && d == bd && strcmp(cands[i], best) != 0) ties++;
    }
    /* a third of the word may be wrong, at most 3 letters; two candidates
     * as close ("fc4" among fc1 and fc2) are no suggestion */
    const int allowed = wl < 4 ? 1 : wl < 10 ? 2 : 3;
    return bd <= allowed && !ties ? best : NULL;
}

void cli_name_list(char *buf, size_t len, const char *const *names, int n, int most)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && i < most && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", names[i]);
    if (n > most && used < len) snprintf(buf + used, len - used, " and %d more", n - most);
}

void cli_no_such_layer(const verb_ctx *v, const char *opt, const char *pattern, const char *const *names, int n,
                       const char *path)
{
    char list[1024];
    cli_name_list(list, sizeof list, names, n, 24);
    const char *near = cli_closest(pattern, names, n);
    char hint[160] = "";
    if (near) snprintf(hint, sizeof hint, " (did you mean '%s'?)", near);
    if (n == 0)
        cli_usage_error(v, "--%s: '%s' matches no layer: the model has no layer with weights", opt, pattern);
    else
        cli_usage_error(v, "--%s: '%s' matches no layer with weights%s; the %d layer%s with weights%s%s: %s%s", opt,
                        pattern, hint, n, n == 1 ? "" : "s", path ? " of " : "", path ? path : "", list,
                        n > 24 ? " (dcz info lists them all)" : "");
}

/* ---- options -------------------------------------------------------------- */

static const opt_spec *find_spec(const opt_spec *specs, const opt_spec *common, const char *name,
                                 size_t nlen, char short_name)
{
    const opt_spec *lists[2] = { specs, common };
    for (int l = 0; l < 2; l++)
        for (const opt_spec *s = lists[l]; s && s->name; s++) {
            if (short_name ? s->short_name == short_name
                           : strlen(s->name) == nlen && strncmp(s->name, name, nlen) == 0)
                return s;
        }
    return NULL;
}

/* The option of specs or common closest to the unknown name (nlen bytes),
 * or NULL when none is close. */
static const char *closest_option(const opt_spec *specs, const opt_spec *common, const char *name, size_t nlen)
{
    const char *cands[256];
    int n = 0;
    const opt_spec *lists[2] = { specs, common };
    for (int l = 0; l < 2; l++)
        for (const opt_spec *s = lists[l]; s && s->name && n < 256; s++) cands[n++] = s->name;
    char word[64];
    snprintf(word, sizeof word, "%.*s", (int)(nlen < sizeof word ? nlen : sizeof word - 1), name);
    return cli_closest(word, cands, n);
}

static int set_opt(const verb_ctx *v, const opt_spec *s, const char *val)
{
    char *end;
    switch (s->kind) {
    case OPT_FLAG:
        *(int *)s->dst = 1;
        return 0;
    case OPT_STR:
        *(const char **)s->dst = val;
        return 0;
    case OPT_INT: {
        errno = 0;
        long x = strtol(val, &end, 10);
        if (errno || *end || end == val || x < -2147483647L || x > 2147483647L) {
            cli_usage_error(v, "--%s takes an integer, not '%s'", s->name, val);
            return 1;
        }
        *(int *)s->dst = (int)x;
        return 0;
    }
    case OPT_FLOAT: {
        errno = 0;
        double x = strtod(val, &end);
        if (errno || *end || end == val || !isfinite(x)) {
            cli_usage_error(v, "--%s takes a number, not '%s'", s->name, val);
            return 1;
        }
        *(double *)s->dst = x;
        return 0;
    }
    }
    return 1;
}

static void print_help(const verb_ctx *v, const opt_spec *specs, const opt_spec *common)
{
    printf("usage: %s\n\n%s\n\noptions:\n", v->usage, v->summary);
    const opt_spec *lists[2] = { specs, common };
    for (int l = 0; l < 2; l++)
        for (const opt_spec *s = lists[l]; s && s->name; s++) {
            char left[64];
            const char *arg = s->kind == OPT_FLAG ? "" : s->kind == OPT_STR ? " S"
                            : s->kind == OPT_INT ? " N" : " X";
            if (s->short_name) snprintf(left, sizeof left, "-%c, --%s%s", s->short_name, s->name, arg);
            else snprintf(left, sizeof left, "    --%s%s", s->name, arg);
            printf("  %-26s %s\n", left, s->help);
        }
}

/* Arguments from a recipe file: "key = value" lines become "--key value"
 * (a value "true" makes a flag); '#' starts a comment. */
typedef struct argvec {
    char **v;
    int n, cap;
} argvec;

static int argvec_push(argvec *a, const char *s)
{
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 16;
        char **nv = realloc(a->v, (size_t)cap * sizeof *nv);
        if (!nv) return -1;
        a->v = nv;
        a->cap = cap;
    }
    size_t n = strlen(s);
    char *copy = malloc(n + 1);
    if (!copy) return -1;
    memcpy(copy, s, n + 1);
    a->v[a->n++] = copy;
    return 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r')) *--e = 0;
    return s;
}

/* A recipe's lines before any "[verb]" line are for every verb that reads
 * it, and a key the verb does not take is an error there; the lines after
 * "[train]" (say) are for that verb alone, so one file can hold the
 * settings of several verbs. */
static int read_recipe(const verb_ctx *v, const char *path, const opt_spec *specs, const opt_spec *common,
                       argvec *out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        cli_error("%s: cannot read recipe %s: %s", v->verb, path, strerror(errno));
        return EXIT_BAD_INPUT;
    }
    /* a line of per-layer rules for a large net is long */
    const size_t cap = 1 << 16;
    char *line = malloc(cap);
    int lineno = 0, rc = line ? -1 : EXIT_INTERNAL, mine = 1;   /* mine: the lines are for this verb */
    while (rc == -1 && fgets(line, (int)cap, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            cli_error("%s: %s:%d: line longer than %zu bytes", v->verb, path, lineno, cap - 2);
            rc = EXIT_USAGE;
            break;
        }
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *s = trim(line);
        if (!*s) continue;
        const size_t n = strlen(s);
        if (s[0] == '[' && s[n - 1] == ']') {
            s[n - 1] = 0;
            mine = strcmp(trim(s + 1), v->verb) == 0;
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq) {
            cli_error("%s: %s:%d: expected 'key = value' or '[verb]'", v->verb, path, lineno);
            rc = EXIT_USAGE;
            break;
        }
        if (!mine) continue;
        *eq = 0;
        char *key = trim(s), *val = trim(eq + 1);
        if (!find_spec(specs, common, key, strlen(key), 0)) {
            const char *near = closest_option(specs, common, key, strlen(key));
            if (near)
                cli_error("%s: %s:%d: unknown key '%s' (did you mean '%s'? dcz %s --help lists the options; a "
                          "'[verb]' line starts settings for another verb)", v->verb, path, lineno, key, near, v->verb);
            else
                cli_error("%s: %s:%d: unknown key '%s' (dcz %s --help lists the options; a '[verb]' line "
                          "starts settings for another verb)", v->verb, path, lineno, key, v->verb);
            rc = EXIT_USAGE;
            break;
        }
        char flag[96];
        snprintf(flag, sizeof flag, "--%s", key);
        if (argvec_push(out, flag) != 0 || (strcmp(val, "true") != 0 && argvec_push(out, val) != 0))
            rc = EXIT_INTERNAL;
    }
    if (rc == -1 && ferror(f)) {   /* a folder: EISDIR */
        cli_error("%s: cannot read recipe %s: %s", v->verb, path, strerror(errno));
        rc = EXIT_BAD_INPUT;
    }
    free(line);
    fclose(f);
    return rc;
}

static int parse_list(verb_ctx *v, const opt_spec *specs, const opt_spec *common, int argc,
                      char **argv, int take_pos)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-") == 0 || a[0] != '-' || (a[1] >= '0' && a[1] <= '9')) {
            if (!take_pos) { cli_usage_error(v, "recipe lines must be options, not '%s'", a); return EXIT_USAGE; }
            if (v->npos == (int)(sizeof v->pos / sizeof *v->pos)) { cli_usage_error(v, "too many arguments"); return EXIT_USAGE; }
            v->pos[v->npos++] = a;
            continue;
        }
        const opt_spec *s;
        const char *val = NULL;
        if (a[1] == '-') {
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
            s = find_spec(specs, common, name, nlen, 0);
            if (!s) {
                const char *near = closest_option(specs, common, name, nlen);
                if (near) cli_usage_error(v, "unknown option '%.*s' (did you mean --%s?)", (int)nlen + 2, a, near);
                else cli_usage_error(v, "unknown option '%.*s'", (int)nlen + 2, a);
                return EXIT_USAGE;
            }
            if (eq) val = eq + 1;
        } else {
            s = a[2] == 0 ? find_spec(specs, common, NULL, 0, a[1]) : NULL;
            if (!s) { cli_usage_error(v, "unknown option '%s'", a); return EXIT_USAGE; }
        }
        if (s->kind == OPT_FLAG) {
            if (val) { cli_usage_error(v, "--%s takes no value", s->name); return EXIT_USAGE; }
        } else if (!val) {
            if (i + 1 >= argc) { cli_usage_error(v, "--%s needs a value", s->name); return EXIT_USAGE; }
            val = argv[++i];
        }
        if (set_opt(v, s, val) != 0) return EXIT_USAGE;
    }
    return -1;
}

int cli_parse(verb_ctx *v, const opt_spec *specs, int min_pos, int max_pos)
{
    common_opts *c = &v->c;
    /* the common options, each with the CLI_NO_* bit of a verb that does
     * not take it (it is then neither listed nor accepted) */
    static const unsigned bit[] = { CLI_NO_OUT, CLI_NO_DATA, CLI_NO_DATA, 0, CLI_NO_SEED, 0, 0, 0, 0, 0 };
    const opt_spec all[] = {
        { "output", 'o', OPT_STR, &c->out, "output file ('-' for stdout)" },
        { "data", 0, OPT_STR, &c->data, "dataset: fashion-mnist, an IDX directory or PNG folders ROOT/{train,test}/CLASS/" },
        { "max-data-mb", 0, OPT_FLOAT, &c->max_data_mb, "memory a dataset split may take, MiB (default 2048)" },
        { "recipe", 0, OPT_STR, &c->recipe, "file of 'option = value' lines; flags win" },
        { "seed", 0, OPT_INT, &c->seed, "random seed (default 1)" },
        { "threads", 0, OPT_INT, &c->threads, "threads (default: all cores)" },
        { "device", 0, OPT_STR, &c->device, "auto, cpu or gpu (default auto)" },
        { "quiet", 'q', OPT_FLAG, &c->quiet, "no progress or notes on stderr" },
        { "json", 0, OPT_FLAG, &c->json, "print one JSON object summarizing the result" },
        { "help", 'h', OPT_FLAG, &c->help, "this help" },
    };
    opt_spec common[sizeof all / sizeof *all + 1];
    size_t nc = 0;
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (!(v->skip & bit[i])) common[nc++] = all[i];
    common[nc] = (opt_spec){ NULL, 0, OPT_FLAG, NULL, NULL };
    c->seed = 1;
    /* a first pass finds --recipe and --help; the recipe is applied, then
     * the flags again so that they win */
    verb_ctx probe = *v;
    int rc = parse_list(&probe, specs, common, v->argc - 1, v->argv + 1, 1);
    if (c->help) {
        print_help(v, specs, common);
        return EXIT_OK;
    }
    if (rc != -1) return rc;
    if (c->recipe) {
        argvec rv = { 0 };
        rc = read_recipe(v, c->recipe, specs, common, &rv);
        /* option values point into the recipe's strings: v owns them */
        v->recipe_args = rv.v;
        v->recipe_nargs = rv.n;
        if (rc == -1) rc = parse_list(v, specs, common, rv.n, rv.v, 0);
        if (rc != -1) return rc;
    }
    v->npos = 0;
    rc = parse_list(v, specs, common, v->argc - 1, v->argv + 1, 1);
    if (rc != -1) return rc;
    if (v->npos < min_pos) { cli_usage_error(v, "missing argument"); return EXIT_USAGE; }
    if (v->npos > max_pos) { cli_usage_error(v, "unexpected argument '%s'", v->pos[max_pos]); return EXIT_USAGE; }
    if (c->threads < 0) { cli_usage_error(v, "--threads must be >= 0"); return EXIT_USAGE; }
    if (c->max_data_mb != 0 && !(c->max_data_mb >= 1 && c->max_data_mb <= 1e12)) {
        cli_usage_error(v, "--max-data-mb must be from 1 to 1e12, not %g", c->max_data_mb);
        return EXIT_USAGE;
    }
    if (c->out && strcmp(c->out, "-") == 0 && isatty(1)) {
        cli_usage_error(v, "-o -: standard output is a terminal; redirect it (> FILE, | CMD) or give -o FILE");
        return EXIT_USAGE;
    }
    if (c->out) {
        /* before any long step: a run must not end on an output it cannot write */
        int e = cli_check_output(c->out);
        if (e) return cli_io_fail(v, c->out, DCZ_ERR_IO, e, 1);
    }
    v->own_val = c->data && dcz_data_has_val(c->data);
    v->progress = !c->quiet && isatty(2);
    if (job_rank > 0) {   /* rank 0 reports for the job */
        c->quiet = 1;
        v->progress = 0;
    }
    if (c->threads) dcz_train_set_threads(c->threads);
    return -1;
}

void cli_ctx_free(verb_ctx *v)
{
    for (int i = 0; i < v->recipe_nargs; i++) free(v->recipe_args[i]);
    free(v->recipe_args);
    v->recipe_args = NULL;
    v->recipe_nargs = 0;
    dcz_tdev_close(v->tdev);
    v->tdev = NULL;
    dcz_net_free(v->teacher);
    dcz_doc_free(v->teacher_doc);
    v->teacher = NULL;
    v->teacher_doc = NULL;
}

int cli_runtime_options(const verb_ctx *v, dcz_options *opt)
{
    dcz_options_init(opt);
    opt->threads = v->c.threads;
    const char *d = v->c.device ? v->c.device : "auto";
    if (strcmp(d, "auto") == 0) opt->device = DCZ_DEVICE_AUTO;
    else if (strcmp(d, "cpu") == 0) opt->device = DCZ_DEVICE_CPU;
    else if (strcmp(d, "gpu") == 0) {
        char why[192];
        opt->device = DCZ_DEVICE_GPU;
        if (dcz_device_probe(DCZ_DEVICE_GPU, why, sizeof why) != DCZ_OK) {
            cli_error("%s: --device gpu: %s; use --device cpu (or auto, which falls back to the CPU)", v->verb,
                      why);
            return EXIT_DEVICE;
        }
    } else {
        cli_usage_error(v, "--device must be auto, cpu or gpu, not '%s'", d);
        return EXIT_USAGE;
    }
    return -1;
}

/* ---- rules ---------------------------------------------------------------- */

int rules_parse(const char *text, rule_set *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char item[128];
        if (n == 0 || n >= sizeof item) { snprintf(err, errlen, "empty or overlong rule in '%s'", text); return -1; }
        memcpy(item, p, n);
        item[n] = 0;
        if (r->n == RULES_MAX) { snprintf(err, errlen, "more than %d rules", RULES_MAX); return -1; }
        char *eq = strchr(item, '='), *val = item;
        const char *pat = "*";
        if (eq) { *eq = 0; pat = trim(item); val = eq + 1; }
        val = trim(val);
        char *e;
        double x = strtod(val, &e);
        if (e == val || *e || !isfinite(x)) { snprintf(err, errlen, "'%s' is not a number", val); return -1; }
        if (!*pat || strlen(pat) >= sizeof r->pattern[0]) { snprintf(err, errlen, "bad layer pattern in '%s'", text); return -1; }
        snprintf(r->pattern[r->n], sizeof r->pattern[0], "%s", pat);
        r->value[r->n++] = x;
        p = end ? end + 1 : p + n;
    }
    return 0;
}

double rules_value(const rule_set *r, const char *name, double dflt)
{
    double v = dflt;
    for (int i = 0; i < r->n; i++)
        if (fnmatch(r->pattern[i], name, 0) == 0) v = r->value[i];
    return v;
}

int rules_match(const rule_set *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (fnmatch(r->pattern[i], name, 0) == 0) return 1;
    return 0;
}

int rules_unmatched(const rule_set *r, const char *const *names, int n)
{
    for (int i = 0; i < r->n; i++) {
        int hit = 0;
        for (int k = 0; k < n && !hit; k++) hit = fnmatch(r->pattern[i], names[k], 0) == 0;
        if (!hit) return i;
    }
    return -1;
}

/* ---- files ---------------------------------------------------------------- */

/* What to do about a failed read or write, by the system's reason. */
static const char *io_hint(int err, int writing)
{
    switch (err) {
    case ENOENT: return writing ? "the folder must exist" : "check the path";
    case ENOTDIR: return "a part of the path is not a folder";
    case EISDIR: return writing ? "give a file name, not a folder" : "give a file, not a folder";
    case EACCES:
    case EPERM: return writing ? "check the permissions, or write elsewhere" : "check its permissions";
    case ENOSPC:
    case EDQUOT: return "free some space, or write elsewhere";
    case EROFS: return "write elsewhere";
    case ELOOP: return "the links loop";
    case ENAMETOOLONG: return "use a shorter path";
    default: return NULL;
    }
}

int cli_io_fail(const verb_ctx *v, const char *path, dcz_status s, int err, int writing)
{
    const char *what = writing ? "write" : "read";
    const char *hint = err ? io_hint(err, writing) : NULL;
    if (strcmp(path, "-") == 0) path = writing ? "standard output" : "standard input";
    if (err && hint) cli_error("%s: cannot %s %s: %s (%s)", v->verb, what, path, strerror(err), hint);
    else if (err) cli_error("%s: cannot %s %s: %s", v->verb, what, path, strerror(err));
    else cli_error("%s: cannot %s %s: %s", v->verb, what, path, dcz_status_str(s));
    return writing ? (s == DCZ_ERR_NOMEM ? EXIT_INTERNAL : EXIT_IO) : cli_exit_code(s, 1);
}

dcz_status cli_read_file(const char *path, uint8_t **buf, size_t *len, int *err)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    *buf = NULL;
    *len = 0;
    *err = 0;
    if (!f) {
        *err = errno;
        return DCZ_ERR_IO;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    dcz_status s = DCZ_OK;
    for (;;) {
        if (!b) { s = DCZ_ERR_NOMEM; break; }
        n += fread(b + n, 1, cap - n, f);
        if (n < cap) break;
        uint8_t *nb = realloc(b, cap * 2);
        if (!nb) { free(b); b = NULL; s = DCZ_ERR_NOMEM; break; }
        b = nb;
        cap *= 2;
    }
    if (s == DCZ_OK && ferror(f)) {
        s = DCZ_ERR_IO;
        *err = errno;   /* EISDIR for a folder */
    }
    if (f != stdin) fclose(f);
    if (s != DCZ_OK) { free(b); return s; }
    *buf = b;
    *len = n;
    return DCZ_OK;
}

/* the temporary file being written, removed if a signal ends the run */
static char pending_tmp[4096 + 16];

static void on_signal(int sig)
{
    if (pending_tmp[0]) unlink(pending_tmp);
    if (job_size > 1 && job_rank == 0) {
        static const char why[] = "dcz: the MPI job was stopped: a rank failed or was killed (the launcher's "
                                  "message names it), or the job was interrupted; no output was written\n";
        if (write(2, why, sizeof why - 1) < 0) { /* nothing more to say */ }
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

void cli_install_signals(void)
{
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
}

/* Follows path through symbolic links to the file they name, which may not
 * exist yet (a dangling link names the file to create): out gets that
 * path. 0, or the errno that stops it (ELOOP after 40 links). */
static int follow_links(const char *path, char *out, size_t n)
{
    if (snprintf(out, n, "%s", path) >= (int)n) return ENAMETOOLONG;
    for (int hop = 0; hop < 40; hop++) {
        struct stat ls;
        if (lstat(out, &ls) != 0 || !S_ISLNK(ls.st_mode)) return 0;
        char to[4096];
        ssize_t k = readlink(out, to, sizeof to - 1);
        if (k < 0) return errno;
        to[k] = '\0';
        char *slash = strrchr(out, '/');
        if (to[0] == '/' || !slash) {
            if (snprintf(out, n, "%s", to) >= (int)n) return ENAMETOOLONG;
        } else {
            slash[1] = '\0';   /* relative to the link's folder */
            size_t used = strlen(out);
            if (snprintf(out + used, n - used, "%s", to) >= (int)(n - used)) return ENAMETOOLONG;
        }
    }
    return ELOOP;
}

/* Writes all of buf to fd; 0 or the errno. */
static int write_all(int fd, const uint8_t *p, size_t left)
{
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return errno;
        if (w == 0) return EIO;
        p += w;
        left -= (size_t)w;
    }
    return 0;
}

/* The mode a new file gets: 0666 less the umask. */
static mode_t new_file_mode(void)
{
    mode_t m = umask(0);
    umask(m);
    return 0666 & ~m;
}

/* path names something that is not a regular file (and not a folder): a
 * device, FIFO, socket or an open pipe (/dev/fd/N), written as it is. */
static int is_special(const char *path, struct stat *st)
{
    return stat(path, st) == 0 && !S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode);
}

int cli_check_output(const char *path)
{
    if (strcmp(path, "-") == 0) return 0;
    struct stat st;
    if (is_special(path, &st)) return 0;
    char target[4096];
    int e = follow_links(path, target, sizeof target);
    if (e) return e;
    if (stat(target, &st) == 0 && S_ISDIR(st.st_mode)) return EISDIR;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", target);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    if (stat(dir, &st) != 0) return errno;
    if (!S_ISDIR(st.st_mode)) return ENOTDIR;
    return access(dir, W_OK | X_OK) == 0 ? 0 : errno;
}

dcz_status cli_write_file(const char *path, const void *buf, size_t len, int *err)
{
    *err = 0;
    if (job_rank > 0) return DCZ_OK;   /* rank 0 writes the job's output */
    if (strcmp(path, "-") == 0) {
        if (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0) {
            *err = errno;
            return DCZ_ERR_IO;
        }
        return DCZ_OK;
    }
    struct stat st;
    if (is_special(path, &st)) {
        /* no temporary file: a device or a pipe cannot be renamed over,
         * and replacing one would destroy it */
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            *err = errno;
            return DCZ_ERR_IO;
        }
        *err = write_all(fd, buf, len);
        if (close(fd) != 0 && !*err) *err = errno;
        return *err ? DCZ_ERR_IO : DCZ_OK;
    }
    /* a regular file (or none yet), through any links: replaced whole by a
     * temporary file in its folder renamed over it, keeping its mode and,
     * where permitted, its owner; the links stay */
    char target[4096], tmp[4096 + 16];
    if ((*err = follow_links(path, target, sizeof target)) != 0) return DCZ_ERR_IO;
    const int exists = stat(target, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
        *err = EISDIR;
        return DCZ_ERR_IO;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", target);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        *err = errno;
        return DCZ_ERR_IO;
    }
    snprintf(pending_tmp, sizeof pending_tmp, "%s", tmp);
    *err = write_all(fd, buf, len);
    if (!*err && fchmod(fd, exists ? st.st_mode & 07777 : new_file_mode()) != 0) *err = errno;
    if (!*err && exists && (st.st_uid != geteuid() || st.st_gid != getegid()))
        (void)!fchown(fd, st.st_uid, st.st_gid);   /* only root may give a file away */
    if (!*err && fsync(fd) != 0) *err = errno;
    if (close(fd) != 0 && !*err) *err = errno;
    if (!*err && rename(tmp, target) != 0) *err = errno;
    if (*err) unlink(tmp);
    pending_tmp[0] = 0;
    return *err ? DCZ_ERR_IO : DCZ_OK;
}

int cli_max_work(const verb_ctx *v, double max_work, dcz_options *opt)
{
    if (max_work == 0) return -1;   /* not given: libdcz's default */
    if (!(max_work >= 1)) {
        cli_usage_error(v, "--max-work must be >= 1, not %g", max_work);
        return EXIT_USAGE;
    }
    opt->max_work = max_work >= 1.8e19 ? UINT64_MAX : (uint64_t)max_work;
    return -1;
}

int cli_isa(const verb_ctx *v, const char *isa, dcz_options *opt)
{
    if (!isa) return -1;   /* not given: all there are */
    if (dcz_isa_cap_parse(isa, &opt->isa) != DCZ_OK) {
        cli_usage_error(v, "--isa must be native, scalar, avx2, avx512, avx512-vnni, avx512-vbmi or neon, not '%s'",
                        isa);
        return EXIT_USAGE;
    }
    char why[256];
    if (dcz_isa_probe(opt->isa, why, sizeof why) != DCZ_OK) {
        cli_error("%s: --isa %s; run 'dcz %s --isa native' (the default) or a level named there", v->verb, why,
                  v->verb);
        return EXIT_DEVICE;
    }
    if (opt->isa != DCZ_CAP_NATIVE && opt->device == DCZ_DEVICE_GPU) {
        cli_usage_error(v, "--isa caps the CPU's kernels; it goes with --device cpu or auto, not gpu");
        return EXIT_USAGE;
    }
    return -1;
}

int cli_plan(const verb_ctx *v, const char *plan, dcz_options *opt)
{
    if (!plan || strcmp(plan, "rules") == 0) return -1;   /* the default */
    if (strcmp(plan, "measure") != 0) {
        cli_usage_error(v, "--plan must be rules or measure, not '%s'", plan);
        return EXIT_USAGE;
    }
    if (opt->device == DCZ_DEVICE_GPU) {
        cli_usage_error(v, "--plan measure times the CPU's kernels; it goes with --device cpu or auto, not gpu");
        return EXIT_USAGE;
    }
    opt->plan = DCZ_PLAN_MEASURE;
    return -1;
}

int cli_not_dcz(const verb_ctx *v, const char *path, const uint8_t *buf, size_t len)
{
    if (!dcz_onnx_sniff(buf, len)) return -1;
    cli_error("%s: %s is an ONNX model, not a .dcz: convert it first with 'dcz import %s -o MODEL.dcz', then "
              "give MODEL.dcz to dcz %s", v->verb, path, path, v->verb);
    return EXIT_BAD_INPUT;
}

int cli_model_fail(const verb_ctx *v, const char *path, dcz_status s)
{
    const int gpu = v->c.device && strcmp(v->c.device, "gpu") == 0;
    if (s == DCZ_ERR_LIMIT)
        cli_error("%s: %s: %s (%.3g; --max-work raises it)", v->verb, path, dcz_status_str(s),
                  (double)DCZ_DEFAULT_MAX_WORK);
    else if (gpu && s == DCZ_ERR_UNSUPPORTED)
        cli_error("%s: %s: --device gpu: the CUDA backend runs calibrated models of the 8-bit schemes only; this "
                  "one is 16-bit fixed point (64-bit sums): use --device cpu, or --fp32 to run it in floating point "
                  "on the GPU", v->verb, path);
    else if (gpu && (s == DCZ_ERR_DEVICE || s == DCZ_ERR_NOMEM))
        cli_error("%s: %s: --device gpu: loading onto the GPU failed: %s", v->verb, path, dcz_status_str(s));
    else
        cli_error("%s: %s: %s", v->verb, path, dcz_status_str(s));
    return cli_exit_code(s, 1);
}

const char *cli_device_of(const verb_ctx *v, const dcz_model *m)
{
    const char *note = dcz_model_device_note(m);
    if (note && *note) cli_note(v, "%s: %s", v->verb, note);
    return dcz_model_device(m) == DCZ_DEVICE_GPU ? "gpu" : "cpu";
}

const char *cli_kernels_name(int reference, dcz_isa_cap isa)
{
    if (reference) return "reference";
    if (isa != DCZ_CAP_NATIVE) return dcz_isa_cap_name(isa);
    if (dcz_isa_supported(DCZ_ISA_AVX512)) return "avx512+avx2";
    if (dcz_isa_supported(DCZ_ISA_AVX2)) return "avx2";
    if (dcz_isa_supported(DCZ_ISA_NEON)) return "neon";
    return "reference";
}

/* ---- progress --------------------------------------------------------------- */

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void progress_start(progress *p, const verb_ctx *v, const char *label, size_t total)
{
    p->enabled = v->progress;
    p->label = label;
    p->total = total;
    p->started = cli_now();
    p->last_draw = 0;
    p->last_permille = -1;
}

void progress_cb(void *ctx, size_t done, size_t total)
{
    progress *p = (progress *)ctx;
    if (!p->enabled || total == 0) return;
    int permille = (int)(done * 1000 / total);
    double t = cli_now();
    /* at most ten redraws a second, and always the last one */
    if (permille == p->last_permille || (t - p->last_draw < 0.1 && done < total)) return;
    p->last_permille = permille;
    p->last_draw = t;
    const int width = 30;
    int fill = permille * width / 1000;
    double el = t - p->started;
    double eta = done ? el * (double)(total - done) / (double)done : 0;
    fprintf(stderr, "\r%-12s [", p->label);
    for (int i = 0; i < width; i++) fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %5.1f%%  %5.0fs left ", permille / 10.0, eta);
    fflush(stderr);
}

void progress_end(progress *p)
{
    if (p->enabled && p->last_permille >= 0) fprintf(stderr, "\r\033[K");
}

void progress_clear(progress *p)
{
    progress_end(p);
    p->last_permille = -1;   /* drawn anew at the next call */
}

/* ---- JSON ------------------------------------------------------------------- */

static void json_sep(json_out *j)
{
    if (!j->first[j->depth]) fputc(',', j->f);
    j->first[j->depth] = 0;
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p == '\n') fputs("\\n", f);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

static void json_open(json_out *j, const char *key, char ch)
{
    json_sep(j);
    if (key) { json_string(j->f, key); fputc(':', j->f); }
    fputc(ch, j->f);
    if (j->depth < 15) j->depth++;
    j->first[j->depth] = 1;
}

void json_begin(json_out *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    j->first[0] = 1;
    json_open(j, NULL, '{');
}
void json_end(json_out *j) { fputs("}\n", j->f); j->depth = 0; fflush(j->f); }
void json_key_obj(json_out *j, const char *key) { json_open(j, key, '{'); }
void json_key_arr(json_out *j, const char *key) { json_open(j, key, '['); }
void json_obj(json_out *j) { json_open(j, NULL, '{'); }
void json_close_obj(json_out *j) { fputc('}', j->f); j->depth--; }
void json_close_arr(json_out *j) { fputc(']', j->f); j->depth--; }

void json_str(json_out *j, const char *key, const char *v)
{
    json_sep(j);
    json_string(j->f, key);
    fputc(':', j->f);
    json_string(j->f, v);
}

void json_num(json_out *j, const char *key, double v)
{
    json_sep(j);
    json_string(j->f, key);
    if (isfinite(v)) fprintf(j->f, ":%.10g", v);
    else fputs(":null", j->f);
}

void json_int(json_out *j, const char *key, long long v)
{
    json_sep(j);
    json_string(j->f, key);
    fprintf(j->f, ":%lld", v);
}

void json_bool(json_out *j, const char *key, int v)
{
    json_sep(j);
    json_string(j->f, key);
    fputs(v ? ":true" : ":false", j->f);
}

void json_arr_int(json_out *j, long long v)
{
    json_sep(j);
    fprintf(j->f, "%lld", v);
}

void json_arr_num(json_out *j, double v)
{
    json_sep(j);
    if (isfinite(v)) fprintf(j->f, "%.10g", v);
    else fputs("null", j->f);
}

void json_arr_str(json_out *j, const char *v)
{
    json_sep(j);
    json_string(j->f, v);
}

int cli_check_shards(verb_ctx *v)
{
    const int ranks = v->comm ? v->comm->size : 1;
    if (v->shards < 0 || v->shards > 1024) {
        cli_usage_error(v, "--shards must be from 1 to 1024, not %d", v->shards);
        return EXIT_USAGE;
    }
    if (v->shards && v->shards % ranks) {
        cli_usage_error(v, "--shards %d: each of the %d ranks takes as many parts; give a multiple of %d", v->shards,
                        ranks, ranks);
        return EXIT_USAGE;
    }
    if (!v->shards && v->comm) v->shards = ranks;   /* a part per rank */
    return -1;
}

static const char *const augment_names[] = { "none", "flip", "crop", "crop+flip" };   /* by DCZ_AUG_* bits */

int cli_check_augment(verb_ctx *v)
{
    v->augment = 0;
    if (!v->augment_text) return -1;
    unsigned a = 0;
    while (a <= DCZ_AUG_ALL && strcmp(v->augment_text, augment_names[a]) != 0) a++;
    if (a > DCZ_AUG_ALL && strcmp(v->augment_text, "flip+crop") == 0) a = DCZ_AUG_ALL;
    if (a > DCZ_AUG_ALL) {
        cli_usage_error(v, "--augment must be none, flip, crop or crop+flip, not '%s'", v->augment_text);
        return EXIT_USAGE;
    }
    if (a && !v->c.data) {
        cli_usage_error(v, "--augment %s varies the samples training reads: it needs --data", v->augment_text);
        return EXIT_USAGE;
    }
    v->augment = a;
    return -1;
}

const char *cli_augment_name(unsigned augment)
{
    return augment_names[augment & DCZ_AUG_ALL];
}

void cli_sgd_shared(const verb_ctx *v, dcz_sgd *sgd)
{
    sgd->shards = v->shards;
    sgd->comm = v->comm;
    sgd->augment = v->augment;
    sgd->device = v->tdev;
    sgd->teacher = v->teacher;
    sgd->distill = (float)v->distill;
    sgd->temperature = (float)(isnan(v->temperature) ? DISTILL_TEMPERATURE : v->temperature);
}

int cli_check_block(const verb_ctx *v, int block)
{
    if (block >= 1 && block <= DCZ_PRUNE_MAX_BLOCK) return -1;
    cli_usage_error(v, "--block must be 1 to %d input channels (4: the 8-bit kernels' quads; 1: each weight alone), "
                    "not %d", DCZ_PRUNE_MAX_BLOCK, block);
    return EXIT_USAGE;
}

int cli_check_distill(verb_ctx *v)
{
    /* checked as the trainer takes them, in float: a value that rounds to 0
     * there would pass here and be refused after long work */
    if (!(v->distill == 0 || ((float)v->distill > 0 && v->distill <= 1))) {
        cli_usage_error(v, "--distill is the share of the loss learned from the input model, in (0, 1] (0: the "
                           "labels alone), not %g", v->distill);
        return EXIT_USAGE;
    }
    if (!isnan(v->temperature) && !((float)v->temperature > 0 && v->temperature <= 100)) {
        cli_usage_error(v, "--temperature must be in (0, 100], not %g (1: the probabilities as they are)",
                        v->temperature);
        return EXIT_USAGE;
    }
    if (!isnan(v->temperature) && v->distill == 0) {
        cli_usage_error(v, "--temperature softens what --distill learns from: give --distill W too");
        return EXIT_USAGE;
    }
    if (v->distill > 0 && !v->c.data) {
        cli_usage_error(v, "--distill acts on retraining: give --data");
        return EXIT_USAGE;
    }
    return -1;
}

int cli_open_teacher(verb_ctx *v, const uint8_t *bytes, size_t len)
{
    if (v->distill == 0 || v->teacher) return -1;
    dcz_status s = dcz_doc_read(bytes, len, &v->teacher_doc);
    if (s == DCZ_OK) s = dcz_net_open(v->teacher_doc, &v->teacher);
    if (s != DCZ_OK) return cli_fail(v, s, "opening the input as the teacher of --distill");
    return -1;
}

int cli_open_train_device(verb_ctx *v, const dcz_net *net)
{
    if (!v->c.device || strcmp(v->c.device, "gpu") != 0 || v->tdev) return -1;
    char why[256];
    const dcz_sgd probe = { .batch = 1, .shards = v->shards, .comm = v->comm, .teacher = v->teacher };
    if (!dcz_dev_runs(net, &probe, why, sizeof why)) {
        cli_note(v, "%s: retraining on the CPU (the model's measurements run on the GPU): %s", v->verb, why);
        return -1;
    }
    /* one GPU a rank: its rank among those on its node (Open MPI says it) */
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (dcz_tdev_open_cuda(v->comm && local ? atoi(local) : 0, &v->tdev, why, sizeof why) != DCZ_OK) {
        cli_error("%s: --device gpu: %s", v->verb, why);
        return EXIT_DEVICE;
    }
    if (v->comm) {   /* the ranks sum on their GPUs, through NCCL where this dcz has it */
        const dcz_status s = dcz_dist_use_gpus(v->dist, why, sizeof why);
        if (s == DCZ_ERR_UNSUPPORTED) {
            cli_note(v, "%s: the ranks' sums go through MPI: %s", v->verb, why);
        } else if (s != DCZ_OK) {
            cli_error("%s: --device gpu: %s", v->verb, why);
            return EXIT_DEVICE;
        }
    }
    cli_note(v, "%s: retraining on the GPU", v->verb);
    return -1;
}

void cli_json_job(json_out *j, const verb_ctx *v)
{
    if (!v->comm) return;
    dcz_dist_stats st;
    dcz_dist_get_stats(v->dist, &st);
    json_key_obj(j, "mpi");
    json_int(j, "ranks", v->comm->size);
    json_int(j, "shards", v->shards);
    json_int(j, "sums", (long long)st.sums);
    json_num(j, "bytes_per_sum", st.sums ? (double)st.bytes / (double)st.sums : 0);
    json_num(j, "sum_seconds", st.seconds);
    json_close_obj(j);
}

void cli_note_job(const verb_ctx *v, double seconds)
{
    if (!v->comm) return;
    dcz_dist_stats st;
    dcz_dist_get_stats(v->dist, &st);
    if (!st.sums) return;
    cli_note(v, "mpi: %d ranks, %d shards: %llu gradient sums of %.0f bytes each, %.2f s in them (%.1f%% of %.1f s)",
             v->comm->size, v->shards, (unsigned long long)st.sums, (double)st.bytes / (double)st.sums, st.seconds,
             seconds > 0 ? 100 * st.seconds / seconds : 0, seconds);
}

/* "M[,M,M]" into up to 3 floats; their count, or 0 when the text is not that */
static uint32_t float_list(const char *s, const char *end, float *v)
{
    uint32_t n = 0;
    while (s < end && n < 3) {
        char *e;
        const double x = strtod(s, &e);
        if (e == s || e > end || !isfinite(x)) return 0;
        v[n++] = (float)x;
        s = e;
        if (s < end && (*s++ != ',' || s == end)) return 0;   /* a comma, then a value */
    }
    return s == end ? n : 0;
}

int cli_prep_parse(const verb_ctx *v, int resize, const char *crop, const char *normalize, dcz_preprocess *p,
                   int *has)
{
    memset(p, 0, sizeof *p);
    *has = resize || crop || normalize;
    if (!*has) return -1;
    if (resize < 0 || resize > 65535) {
        cli_usage_error(v, "--resize must be 1 to 65535 pixels (the shorter side), not %d", resize);
        return EXIT_USAGE;
    }
    p->resize = (uint32_t)resize;
    if (crop) {
        char *e;
        const unsigned long h = strtoul(crop, &e, 10);
        const unsigned long w = *e != 'x' ? h : isdigit((unsigned char)e[1]) ? strtoul(e + 1, &e, 10) : 0;
        if (*e || h < 1 || w < 1 || h > 65535 || w > 65535 || !isdigit((unsigned char)crop[0])) {
            cli_usage_error(v, "--crop must be N or HxW pixels (1 to 65535), not '%s'", crop);
            return EXIT_USAGE;
        }
        p->crop_h = (uint32_t)h;
        p->crop_w = (uint32_t)w;
    }
    for (int k = 0; k < 3; k++) p->std[k] = 1.0f;
    if (normalize && strcmp(normalize, "imagenet") == 0) {
        const float mean[3] = DCZ_IMAGENET_MEAN, std[3] = DCZ_IMAGENET_STD;
        memcpy(p->mean, mean, sizeof mean);
        memcpy(p->std, std, sizeof std);
        p->channels = 3;
    } else if (normalize) {
        const char *slash = strchr(normalize, '/');
        const uint32_t nm = slash ? float_list(normalize, slash, p->mean) : 0;
        const uint32_t ns = slash ? float_list(slash + 1, slash + strlen(slash), p->std) : 0;
        int ok = nm && nm == ns && (nm == 1 || nm == 3);
        for (uint32_t k = 0; ok && k < ns; k++) ok = p->std[k] > 0.0f;
        if (!ok) {
            cli_usage_error(v, "--normalize must be imagenet, or MEAN/STD with one value each for gray or three for "
                            "RGB, each std > 0 (0.485,0.456,0.406/0.229,0.224,0.225), not '%s'", normalize);
            return EXIT_USAGE;
        }
        p->channels = nm;
    }
    return -1;
}

int cli_prep_fit(const verb_ctx *v, dcz_preprocess *p, dcz_doc *d)
{
    const uint32_t *in = d->input_dims;
    if (d->input_rank != 3 || (in[0] != 1 && in[0] != 3)) {
        cli_error("%s: --resize, --crop and --normalize describe images, and the model's input is not (C, H, W) "
                  "of 1 or 3 channels", v->verb);
        return EXIT_BAD_INPUT;
    }
    if (p->channels && p->channels != in[0]) {
        cli_error("%s: --normalize gives %u channel%s, the model takes %u", v->verb, p->channels,
                  p->channels == 1 ? "" : "s", in[0]);
        return EXIT_BAD_INPUT;
    }
    if (p->crop_h && (p->crop_h != in[1] || p->crop_w != in[2])) {
        cli_error("%s: --crop %ux%u (height x width) does not give the model's %ux%u input", v->verb, p->crop_h,
                  p->crop_w, in[1], in[2]);
        return EXIT_BAD_INPUT;
    }
    if (!p->channels) {   /* no normalization: [0, 1] */
        for (int k = 0; k < 3; k++) {
            p->mean[k] = 0.0f;
            p->std[k] = 1.0f;
        }
    }
    p->channels = in[0];
    d->prep = *p;
    d->has_prep = 1;
    return -1;
}
