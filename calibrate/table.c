/* table.c: a calibration table as readable text, for export, review and
 * import (calibrate.h). Scales are written as C hexadecimal floats, so a
 * table read back is the table written, bit for bit.
 *
 *   # dcz calibration table
 *   format = dcz-calibration 1
 *   scheme = int8
 *   method = entropy
 *   model_hash = 1f2e3d4c5b6a7988
 *   data_hash = 0123456789abcdef
 *   samples = 1000
 *   tensor_scale = 0x1.02p-7 0x1.8p-5 ... 0x0p+0   # per tensor; 0 off the region
 *   [fc1]
 *   index = 0
 *   in_scale = 0x1.02p-7          # 0.00787354
 *   w_scale = 0x1.8p-9 0x1.9p-9 ...
 *
 * Checked by tests/unit/test_calibrate.c (round trip, every malformed line
 * refused) and tests/cli/calibrate.sh.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/calibrate.h"

typedef struct tbuf {
    char *p;
    size_t len, cap;
    int err;
} tbuf;

static void tb_printf(tbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tb_printf(tbuf *b, const char *fmt, ...)
{
    if (b->err) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) { b->err = 1; return; }
        if (b->p && b->len + (size_t)n < b->cap) { b->len += (size_t)n; return; }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) { b->err = 1; return; }
        b->p = p;
        b->cap = cap;
    }
}

dcz_status dcz_cal_table_format(const dcz_doc *d, const char *method, size_t samples,
                                char **text)
{
    *text = NULL;
    const dcz_doc_calib *c = d->calib;
    if (!c) return DCZ_ERR_ARG;
    tbuf b = { 0 };
    tb_printf(&b, "# dcz calibration table: scales as C hexadecimal floats (exact)\n");
    tb_printf(&b, "format = dcz-calibration 1\n");
    tb_printf(&b, "scheme = %s\n", dcz_cal_scheme_name(c->scheme));
    tb_printf(&b, "method = %s\n", method && *method ? method : "unknown");
    tb_printf(&b, "model_hash = %016" PRIx64 "\n", c->model_hash);
    tb_printf(&b, "data_hash = %016" PRIx64 "\n", c->data_hash);
    tb_printf(&b, "samples = %zu\n", samples);
    if (c->ntensors) {
        /* tensor t: 0 the input, j + 1 layer j's output; 0 off the integer region */
        tb_printf(&b, "tensor_scale =");
        for (uint32_t t = 0; t < c->ntensors; t++) tb_printf(&b, " %a", (double)c->t_scale[t]);
        tb_printf(&b, "\n");
    }
    for (uint32_t j = 0; j < c->count; j++) {
        const dcz_doc_calib_entry *e = &c->e[j];
        tb_printf(&b, "[%s]\n", d->layers[e->layer].name);
        tb_printf(&b, "index = %" PRIu32 "\n", e->layer);
        tb_printf(&b, "in_scale = %a    # %g\n", (double)e->in_scale, (double)e->in_scale);
        tb_printf(&b, "w_scale =");
        for (uint32_t i = 0; i < e->nw; i++) tb_printf(&b, " %a", (double)e->w_scale[i]);
        tb_printf(&b, "\n");
    }
    if (b.err) { free(b.p); return DCZ_ERR_NOMEM; }
    *text = b.p;
    return DCZ_OK;
}

/* ---- parsing ------------------------------------------------------------------ */

static dcz_status fail(char *err, size_t errlen, unsigned line, const char *what)
{
    snprintf(err, errlen, "line %u: %s", line, what);
    return DCZ_ERR_DATA;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = 0;
    return s;
}

static int parse_hex64(const char *s, uint64_t *v)
{
    char *end;
    if (!*s) return 0;
    for (const char *p = s; *p; p++)   /* hex digits only: no sign, no 0x */
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')))
            return 0;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 16);
    if (errno || *end || strlen(s) > 16) return 0;
    *v = x;
    return 1;
}

static int parse_scale(const char *s, char **end, float *v)
{
    errno = 0;
    double x = strtod(s, end);
    if (*end == s || errno) return 0;
    *v = (float)x;
    return (double)*v == x; /* exactly a float, as written */
}

/* A list of at least one scale separated by blanks, at most max, into a
 * new array *v of *n. DCZ_ERR_DATA when malformed. */
static dcz_status parse_scales(char *val, uint32_t max, float **v, uint32_t *n)
{
    size_t cap = 16;
    *n = 0;
    *v = malloc(cap * sizeof **v);
    if (!*v) return DCZ_ERR_NOMEM;
    char *p = val;
    while (*trim(p)) {
        p = trim(p);
        if (*n == cap) {
            if (cap >= max) return DCZ_ERR_DATA;
            float *w = realloc(*v, cap * 2 * sizeof *w);
            if (!w) return DCZ_ERR_NOMEM;
            *v = w;
            cap *= 2;
        }
        char *end;
        if (!parse_scale(p, &end, &(*v)[*n])) return DCZ_ERR_DATA;
        if (*end && *end != ' ' && *end != '\t') return DCZ_ERR_DATA;
        ++*n;
        p = end;
    }
    return *n ? DCZ_OK : DCZ_ERR_DATA;
}

typedef struct parse_state {
    dcz_doc_calib *c;
    dcz_doc_calib_entry *cur;    /* the open [layer] */
    const dcz_doc *d;
    int have_scheme, have_format, have_model, have_data;
    int have_index, have_in, have_w;
    char (*names)[DCZ_MAX_NAME + 1];   /* (c->count) the [name] of each entry */
    size_t samples;
} parse_state;

static dcz_status close_layer(parse_state *st, unsigned line, char *err, size_t errlen)
{
    if (!st->cur) return DCZ_OK;
    if (!st->have_index || !st->have_in || !st->have_w)
        return fail(err, errlen, line, "a layer needs index, in_scale and w_scale");
    st->cur = NULL;
    return DCZ_OK;
}

static dcz_status parse_layer_key(parse_state *st, const char *key, char *val, unsigned line,
                                  char *err, size_t errlen)
{
    dcz_doc_calib_entry *e = st->cur;
    if (strcmp(key, "index") == 0) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(val, &end, 10);
        if (*end || end == val || errno || st->have_index)
            return fail(err, errlen, line, "bad index");
        if (v >= st->d->nlayers)
            return fail(err, errlen, line, "index past the model's layers: the table is not the model's");
        e->layer = (uint32_t)v;
        st->have_index = 1;
        return DCZ_OK;
    }
    if (strcmp(key, "in_scale") == 0) {
        char *end;
        if (st->have_in || !parse_scale(val, &end, &e->in_scale) || *trim(end))
            return fail(err, errlen, line, "bad in_scale");
        st->have_in = 1;
        return DCZ_OK;
    }
    if (strcmp(key, "w_scale") == 0) {
        if (st->have_w) return fail(err, errlen, line, "w_scale given twice");
        dcz_status s = parse_scales(val, DCZ_MAX_DIM, &e->w_scale, &e->nw);
        if (s != DCZ_OK) return s == DCZ_ERR_NOMEM ? s : fail(err, errlen, line, "bad w_scale");
        st->have_w = 1;
        return DCZ_OK;
    }
    return fail(err, errlen, line, "unknown key in a layer");
}

static dcz_status parse_head_key(parse_state *st, const char *key, const char *val,
                                 char *method, size_t mlen, unsigned line, char *err,
                                 size_t errlen)
{
    if (strcmp(key, "format") == 0) {
        if (strcmp(val, "dcz-calibration 1") != 0)
            return fail(err, errlen, line, "not a dcz calibration table of a known version");
        st->have_format = 1;
    } else if (strcmp(key, "scheme") == 0) {
        if (!(st->c->scheme = dcz_cal_scheme_parse(val)))
            return fail(err, errlen, line, "scheme must be int8, fixed8 or fixed16");
        st->have_scheme = 1;
    } else if (strcmp(key, "method") == 0) {
        snprintf(method, mlen, "%s", val);
    } else if (strcmp(key, "model_hash") == 0) {
        if (!parse_hex64(val, &st->c->model_hash)) return fail(err, errlen, line, "bad model_hash");
        st->have_model = 1;
    } else if (strcmp(key, "data_hash") == 0) {
        if (!parse_hex64(val, &st->c->data_hash)) return fail(err, errlen, line, "bad data_hash");
        st->have_data = 1;
    } else if (strcmp(key, "tensor_scale") == 0) {
        if (st->c->t_scale) return fail(err, errlen, line, "tensor_scale given twice");
        char *copy = strdup(val);
        if (!copy) return DCZ_ERR_NOMEM;
        dcz_status s = parse_scales(copy, DCZ_MAX_LAYERS + 1, &st->c->t_scale, &st->c->ntensors);
        free(copy);
        if (s != DCZ_OK) return s == DCZ_ERR_NOMEM ? s : fail(err, errlen, line, "bad tensor_scale");
    } else if (strcmp(key, "samples") == 0) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(val, &end, 10);
        if (*end || end == val || errno || *val == '-') return fail(err, errlen, line, "bad samples");
        st->samples = (size_t)n;
    } else {
        return fail(err, errlen, line, "unknown key");
    }
    return DCZ_OK;
}

static dcz_status parse_lines(char *text, parse_state *st, char *method, size_t mlen,
                              char *err, size_t errlen)
{
    unsigned line = 0;
    dcz_status s;
    for (char *next, *l = text; l; l = next) {
        line++;
        next = strchr(l, '\n');
        if (next) *next++ = 0;
        /* a comment starts a line or follows a blank: names may hold '#' */
        for (char *h = l; *h; h++)
            if (*h == '#' && (h == l || h[-1] == ' ' || h[-1] == '\t')) { *h = 0; break; }
        l = trim(l);
        if (!*l) continue;
        if (*l == '[') {
            size_t n = strlen(l);
            if (l[n - 1] != ']' || n < 3 || n - 2 > DCZ_MAX_NAME) return fail(err, errlen, line, "bad layer line");
            if ((s = close_layer(st, line, err, errlen)) != DCZ_OK) return s;
            if (!st->have_format || !st->have_scheme)
                return fail(err, errlen, line, "format and scheme must come before the layers");
            if (st->c->count == DCZ_MAX_LAYERS) return fail(err, errlen, line, "too many layers");
            dcz_doc_calib_entry *e = realloc(st->c->e, (st->c->count + 1) * sizeof *e);
            if (!e) return DCZ_ERR_NOMEM;
            st->c->e = e;
            st->cur = &e[st->c->count++];
            memset(st->cur, 0, sizeof *st->cur);
            l[n - 1] = 0;
            char (*names)[DCZ_MAX_NAME + 1] = realloc(st->names, st->c->count * sizeof *names);
            if (!names) return DCZ_ERR_NOMEM;
            st->names = names;
            snprintf(names[st->c->count - 1], sizeof names[0], "%s", l + 1);
            st->cur->layer = UINT32_MAX;
            st->have_index = st->have_in = st->have_w = 0;
            continue;
        }
        char *eq = strchr(l, '=');
        if (!eq) return fail(err, errlen, line, "expected key = value");
        *eq = 0;
        char *key = trim(l), *val = trim(eq + 1);
        s = st->cur ? parse_layer_key(st, key, val, line, err, errlen)
                    : parse_head_key(st, key, val, method, mlen, line, err, errlen);
        if (s != DCZ_OK) return s;
    }
    if ((s = close_layer(st, line, err, errlen)) != DCZ_OK) return s;
    if (!st->have_format || !st->have_scheme || !st->have_model || !st->have_data)
        return fail(err, errlen, line, "format, scheme, model_hash and data_hash are required");
    if (st->c->count == 0) return fail(err, errlen, line, "no layers");
    return DCZ_OK;
}

dcz_status dcz_cal_table_parse(const char *text, const dcz_doc *d, dcz_doc_calib **out,
                               char *method, size_t mlen, size_t *samples, char *err,
                               size_t errlen)
{
    *out = NULL;
    if (mlen) *method = 0;
    if (errlen) *err = 0;
    size_t n = strlen(text);
    char *copy = malloc(n + 1);
    parse_state st;
    memset(&st, 0, sizeof st);
    st.d = d;
    st.c = calloc(1, sizeof *st.c);
    dcz_status s = DCZ_ERR_NOMEM;
    if (!copy || !st.c) goto done;
    memcpy(copy, text, n + 1);
    if ((s = parse_lines(copy, &st, method, mlen, err, errlen)) != DCZ_OK) goto done;
    /* the entries must be d's weighted layers, in order, by index and name */
    uint32_t j = 0;
    for (uint32_t i = 0; i < d->nlayers; i++) {
        const dcz_doc_layer *l = &d->layers[i];
        if (l->op != DCZ_OP_DENSE && l->op != DCZ_OP_CONV2D) continue;
        if (j == st.c->count || st.c->e[j].layer != i || strcmp(st.names[j], l->name) != 0) {
            snprintf(err, errlen, "the table's layers are not the model's weighted layers "
                     "(expected [%s] with index %u)", l->name, i);
            s = DCZ_ERR_DATA;
            goto done;
        }
        const dcz_doc_calib_entry *e = &st.c->e[j++];
        if (e->nw != 1 && e->nw != l->t[0].dims[0]) {
            snprintf(err, errlen, "[%s]: %u weight scales for %u output channels", l->name,
                     e->nw, l->t[0].dims[0]);
            s = DCZ_ERR_DATA;
            goto done;
        }
        int ok = dcz_scale_ok(st.c->scheme, e->in_scale);
        for (uint32_t k = 0; k < e->nw; k++) ok = ok && dcz_scale_ok(st.c->scheme, e->w_scale[k]);
        if (!ok) {
            snprintf(err, errlen, "[%s]: a scale is out of range%s", l->name,
                     st.c->scheme == DCZ_SCHEME_INT8 ? "" : " or not a power of two");
            s = DCZ_ERR_DATA;
            goto done;
        }
    }
    if (j != st.c->count) {
        snprintf(err, errlen, "the table has more layers than the model");
        s = DCZ_ERR_DATA;
        goto done;
    }
    if (st.c->ntensors && st.c->ntensors != d->nlayers + 1) {
        snprintf(err, errlen, "tensor_scale has %u scales for the model's %u tensors",
                 st.c->ntensors, d->nlayers + 1);
        s = DCZ_ERR_DATA;
        goto done;
    }
    for (uint32_t k = 0; st.c->ntensors && k < st.c->count; k++) {
        const dcz_doc_calib_entry *e = &st.c->e[k];
        if (st.c->t_scale[d->layers[e->layer].in[0]] != e->in_scale) {
            snprintf(err, errlen, "[%s]: in_scale differs from the tensor_scale of the tensor "
                     "it reads (tensor %u); edit both", st.names[k], d->layers[e->layer].in[0]);
            s = DCZ_ERR_DATA;
            goto done;
        }
    }
    *out = st.c;
    st.c = NULL;
    if (samples) *samples = st.samples;
    s = DCZ_OK;
done:
    dcz_doc_calib_free(st.c);
    free(st.names);
    free(copy);
    return s;
}
