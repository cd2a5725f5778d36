/*
 * redact.c - the redaction rewrite (see redact.h).
 */
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "redact.h"

static int nomem(const struct redaction *r)
{
    return rewrite_nomem(r->ctx);
}

static const struct hprof_visitor_ops exempt_ops;

/* "CLASS.FIELD" -> a rule; LeakCanary's own come first. */
static int parse_rules(struct redaction *r)
{
    static const char *const builtin[REDACT_BUILTIN_RULES] = {
        "shark.KeyedWeakReference.key", "shark.KeyedWeakReference.description",
        "leakcanary.KeyedWeakReference.key", "leakcanary.KeyedWeakReference.description",
    };
    const struct hprof_shrink_options *opt = r->ctx->opt;
    if (opt->redact == HPROF_REDACT_NONE)
        return HPROF_OK;
    if (opt->n_redact_keep > HPROF_REDACT_MAX_RULES)
        return hprof_error_set(r->ctx->err, HPROF_ERR_USAGE, "at most %d redaction keep rules",
                               HPROF_REDACT_MAX_RULES);
    for (size_t i = 0; i < REDACT_BUILTIN_RULES + opt->n_redact_keep; i++) {
        const char *text = i < REDACT_BUILTIN_RULES ? builtin[i]
                                                    : opt->redact_keep[i - REDACT_BUILTIN_RULES];
        const char *dot = strrchr(text, '.');
        if (dot == NULL || dot == text || dot[1] == '\0')
            return hprof_error_set(r->ctx->err, HPROF_ERR_USAGE,
                                   "redaction keep rule '%s': expected CLASS.FIELD", text);
        r->rules[r->n_rules++] = (struct redact_rule){ text, dot + 1, (size_t)(dot - text),
                                                       strlen(dot + 1) };
    }
    return HPROF_OK;
}

int redact_init(struct redaction *r, const struct rewrite_ctx *ctx, struct dump_model *model)
{
    memset(r, 0, sizeof *r);
    r->ctx = ctx;
    r->model = model;
    r->exempt = (struct module_visitor){ { &exempt_ops, NULL }, r };
    if (idmap_init(&r->rule_names, 1) || idmap_init(&r->exempt_fields, 1) ||
        idmap_init(&r->rule_class, 1) ||
        idmap_init(&r->exempt_strings, 0) || idmap_init(&r->exempt_values, 0) ||
        idmap_init(&r->system_names, 0) || idmap_init(&r->app_classes, 0))
        return nomem(r);
    return parse_rules(r);
}

void redact_free(struct redaction *r)
{
    idmap_free(&r->rule_names);
    idmap_free(&r->exempt_fields);
    idmap_free(&r->rule_class);
    free(r->path);
    free(r->exempt_at);
    idmap_free(&r->exempt_strings);
    idmap_free(&r->exempt_values);
    idmap_free(&r->system_names);
    idmap_free(&r->app_classes);
}

/* ---- Pass 1 ------------------------------------------------------------------- */

/* Does `text` name `want`, where a '.' in `want` matches '.' or '/' (so a
 * rule written with Java names works on HotSpot's slash names)? */
static int same_name(const uint8_t *text, size_t len, const char *want, size_t want_len)
{
    if (len != want_len)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (text[i] != (uint8_t)want[i] && !(want[i] == '.' && text[i] == '/'))
            return 0;
    return 1;
}

/* Packages whose classes are not the application's (--redact-fields). */
static int system_name(const struct hprof_string *s)
{
    static const char *const prefixes[] = {
        "java.", "javax.", "jdk.", "sun.", "com.sun.", "android.", "androidx.", "dalvik.",
        "libcore.", "com.android.", "kotlin.", "kotlinx.", "org.apache.harmony.", "[",
    };
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t n = strlen(prefixes[i]);
        if (s->length >= n && same_name(s->utf8, n, prefixes[i], n))
            return 1;
    }
    return 0;
}

int redact_note_string(struct redaction *r, const struct hprof_string *s)
{
    int system = r->ctx->opt->redact_fields && system_name(s);
    uint64_t bits = 0;
    for (size_t i = 0; i < r->n_rules; i++) {
        const struct redact_rule *rule = &r->rules[i];
        if (same_name(s->utf8, s->length, rule->cls, rule->cls_len))
            bits |= 1ull << (2 * i);
        if (same_name(s->utf8, s->length, rule->field, rule->field_len))
            bits |= 1ull << (2 * i + 1);
    }
    if ((bits != 0 && idmap_put(&r->rule_names, s->id, bits) != HPROF_OK) ||
        (system && idmap_put(&r->system_names, s->id, 0) != HPROF_OK))
        return nomem(r);
    return bits != 0 || system;
}

/* ---- Resolution ------------------------------------------------------------------ */

/* The keep rules whose class is `k` (bits 2i), or 0. */
static uint64_t rule_class_bits(const struct redaction *r, const struct class_info *k)
{
    uint64_t name, bits = 0;
    if (idmap_get(&r->model->class_names, k->id, &name))
        idmap_get(&r->rule_names, name, &bits);
    return bits & 0x5555555555555555ull;
}

/* The nearest class from `k` up (itself included) that a keep rule names,
 * or NULL.  Memoised for every class the walk passes, so that each class
 * is walked once whatever the depth of the hierarchy (a chain of a million
 * classes would otherwise be walked a million times). */
static struct class_info *rule_class_from(struct redaction *r, struct class_info *k)
{
    const struct classes *classes = &r->model->classes;
    size_t n = 0;
    uint64_t memo = 0;
    struct class_info *found = NULL;
    for (; k != NULL && !idmap_get(&r->rule_class, k->id, &memo); k = classes_up(classes, k)) {
        if (n == r->cap_path) {
            size_t cap = r->cap_path ? 2 * r->cap_path : 64;
            struct class_info **grown = realloc(r->path, cap * sizeof *grown);
            if (grown == NULL)
                return k; /* out of memory: walk without the memo */
            r->path = grown;
            r->cap_path = cap;
        }
        r->path[n++] = k;
    }
    if (k != NULL && memo != 0)
        found = classes_find(classes, memo);
    while (n-- > 0) { /* from the top down: each class's answer */
        if (rule_class_bits(r, r->path[n]) != 0)
            found = r->path[n];
        if (idmap_put(&r->rule_class, r->path[n]->id, found ? found->id : 0) != HPROF_OK)
            return r->path[n];
    }
    return found;
}

/* Where instances of `ci` (resolved) hold the fields of class `k` (up its
 * chain) that a keep rule names: into exempt_at.  k's fields start where
 * the bytes of k and the classes above it do, counted from the end; but
 * k's total_bytes is final only once its own layout is: resolving ci may
 * have jumped over k (a span learnt while the chain was incomplete), and
 * the bytes of the classes dumped since would then be missing from it. */
static int exempt_fields_of(struct redaction *r, const struct class_info *ci,
                            struct class_info *k)
{
    struct classes *classes = &r->model->classes;
    uint64_t class_bits = rule_class_bits(r, k);
    int rc = classes_finish_layout(classes, k, r->ctx->err);
    if (rc != HPROF_OK)
        return rc;
    uint64_t at = ci->total_bytes - k->total_bytes; /* k's own fields in ci's values */
    for (unsigned f = 0; f < k->n_fields; f++) {
        const struct class_field *fl = &classes->fields[k->first_field + f];
        uint64_t field_bits = 0;
        idmap_get(&r->rule_names, fl->name_id, &field_bits);
        /* rule i matches when bit 2i (class) and bit 2i+1 (field) are set */
        if (fl->type == HPROF_TYPE_OBJECT && (class_bits & (field_bits >> 1)) != 0) {
            int64_t *grown = realloc(r->exempt_at, (r->n_exempt_at + 1) * sizeof *grown);
            if (grown == NULL)
                return nomem(r);
            r->exempt_at = grown;
            r->exempt_at[r->n_exempt_at++] = (int64_t)at;
        }
        at += type_size(fl->type, r->ctx->ids);
    }
    return HPROF_OK;
}

int redact_resolve_class(struct redaction *r, struct class_info *ci)
{
    const struct classes *classes = &r->model->classes;
    const struct idmap *class_names = &r->model->class_names;
    if (r->n_rules > 0) {
        size_t start = r->n_exempt_at;
        for (struct class_info *k = rule_class_from(r, ci); k != NULL;
             k = rule_class_from(r, classes_up(classes, k))) {
            int rc = exempt_fields_of(r, ci, k);
            if (rc != HPROF_OK)
                return rc;
        }
        size_t count = r->n_exempt_at - start;
        if (count > 0 && idmap_put(&r->exempt_fields, ci->id, start << 16 | count) != HPROF_OK)
            return nomem(r);
    }
    uint64_t name;
    if (r->ctx->opt->redact_fields && idmap_get(class_names, ci->id, &name) &&
        !idmap_has(&r->system_names, name) && idmap_put(&r->app_classes, ci->id, 0) != HPROF_OK)
        return nomem(r);
    return HPROF_OK;
}

int redact_resolve_classes(struct redaction *r)
{
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && i < r->model->classes.n_info; i++)
        rc = redact_resolve_class(r, &r->model->classes.info[i]);
    return rc;
}

int redact_resolve_instance(struct redaction *r, const struct hprof_instance *o)
{
    uint64_t exempt;
    if (r->exempt_fields.count == 0 || !idmap_get(&r->exempt_fields, o->class_id, &exempt))
        return HPROF_OK;
    for (uint64_t i = exempt >> 16; i < (exempt >> 16) + (exempt & 0xFFFF); i++) {
        uint64_t str = model_field_id(r->ctx->ids, o, r->exempt_at[i]);
        if (str != 0 && idmap_put(&r->exempt_strings, str, 0) != HPROF_OK)
            return nomem(r);
    }
    return HPROF_OK;
}

int redact_forget(struct redaction *r)
{
    r->n_exempt_at = 0;
    if (idmap_reset(&r->exempt_fields) || idmap_reset(&r->app_classes) ||
        idmap_reset(&r->rule_class) ||
        idmap_reset(&r->exempt_strings))
        return nomem(r);
    return HPROF_OK;
}

/* ---- The exempt pass: the value arrays of Strings a rule names ------------------ */

static int exempt_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct redaction *r = ((struct module_visitor *)v)->state;
    const struct kind_layout *k;
    if (!idmap_has(&r->exempt_strings, o->id) ||
        model_kind(r->model, o->class_id, &k) != NAME_CLASS_STRING)
        return HPROF_OK;
    uint64_t value = model_field_id(r->ctx->ids, o, k->field[0]);
    return value == 0 || idmap_put(&r->exempt_values, value, 0) == HPROF_OK ? HPROF_OK : nomem(r);
}

/* The device's own Strings (what android.os.Build's statics name: make,
 * model, fingerprint, version) describe the phone, not its user, and leak
 * analyzers match on them: their text is never redacted. */
int redact_keep_device_text(struct redaction *r, uint64_t value)
{
    if (r->ctx->opt->redact == HPROF_REDACT_NONE || value == 0)
        return HPROF_OK;
    return idmap_put(&r->exempt_values, value, 0) == HPROF_OK ? HPROF_OK : nomem(r);
}

static const struct hprof_visitor_ops exempt_ops = {
    .instance = exempt_instance,
    .object_array = visit_skip_object_array,
    .primitive_array = visit_skip_primitive_array,
};

struct hprof_visitor *redact_exempt_visitor(struct redaction *r)
{
    return &r->exempt.base;
}

void redact_publish(struct redaction *r, struct redact_plan *plan)
{
    plan->mode = (enum hprof_redact)r->ctx->opt->redact;
    plan->fields = r->ctx->opt->redact_fields;
    plan->exempt_values = r->exempt_values;
    plan->app_classes = r->app_classes;
    memset(&r->exempt_values, 0, sizeof r->exempt_values); /* the plan owns them now */
    memset(&r->app_classes, 0, sizeof r->app_classes);
}

/* ---- The write-pass filter ----------------------------------------------------------- */

#define FILL_CHUNK (1u << 20)

/* Fillers, as they appear in the dump: hprof char[] is big-endian UTF-16,
 * HotSpot's UTF-16 byte[] is in the JVM's (little-endian) order, pixels are
 * opaque grey R, G, B, A. */
static const uint8_t FILL_LATIN1[] = { '*' };
static const uint8_t FILL_CHAR[] = { 0, '*' };
static const uint8_t FILL_UTF16[] = { '*', 0 };
static const uint8_t FILL_PIXELS[] = { 0x80, 0x80, 0x80, 0xFF };

struct redact_filter {
    struct rewrite_filter f;
    uint8_t *scratch;       /* a modified copy of instance values */
    size_t scratch_cap;
    uint8_t *fill;          /* FILL_CHUNK bytes of the current filler */
    uint64_t fill_id;       /* the array being redacted, for its later chunks */
    const uint8_t *fill_pattern;
    size_t fill_ready;      /* bytes of `fill` holding `fill_pattern` */
    struct hprof_static_field *statics;
    size_t cap_statics;
};

/* Make `fill` hold the pattern for an array of `bytes` (plus the alignment
 * slack forward_filled() uses); refilled only when the pattern changes or
 * a longer array comes, since most redacted arrays are short strings. */
static void set_fill(struct redact_filter *rf, uint64_t id, const uint8_t *pattern, size_t len,
                     uint64_t bytes)
{
    size_t want = bytes + 4 < FILL_CHUNK ? (size_t)bytes + 4 : FILL_CHUNK;
    if (rf->fill_pattern != pattern)
        rf->fill_ready = 0;
    size_t i = rf->fill_ready; /* always a whole number of patterns */
    for (; i < want; i += len)
        memcpy(rf->fill + i, pattern, len);
    rf->fill_ready = i;
    rf->fill_pattern = pattern;
    rf->fill_id = id;
}

/* --redact-fields: numbers and chars may be data; booleans are the flags
 * leak detectors read (Activity.mDestroyed) and references are structure. */
static int redacted_type(uint8_t type)
{
    return type != HPROF_TYPE_OBJECT && type != HPROF_TYPE_BOOLEAN;
}

static int filter_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    struct redact_filter *rf = (struct redact_filter *)v;
    const struct redact_plan *p = &rf->f.plan->redact;
    if (!p->fields || !idmap_has(&p->app_classes, c->id) || c->n_statics == 0)
        return forward_class_dump(&rf->f, c);
    if (c->n_statics > rf->cap_statics) {
        struct hprof_static_field *grown = realloc(rf->statics, c->n_statics * sizeof *grown);
        if (grown == NULL)
            return hprof_error_set(rf->f.err, HPROF_ERR_NOMEM, "out of memory");
        rf->statics = grown;
        rf->cap_statics = c->n_statics;
    }
    struct hprof_class_dump zeroed = *c;
    for (unsigned i = 0; i < c->n_statics; i++) {
        rf->statics[i] = c->statics[i];
        if (redacted_type(c->statics[i].type) && c->statics[i].value != 0) {
            rf->statics[i].value = 0;
            rf->f.st->fields_zeroed++;
        }
    }
    zeroed.statics = rf->statics;
    return forward_class_dump(&rf->f, &zeroed);
}

/* Zero the application classes' primitive fields in `values` (a copy). */
static void zero_fields(struct redact_filter *rf, const struct hprof_instance *o, uint8_t *values)
{
    const struct shrink_plan *p = rf->f.plan;
    const struct classes *c = &p->model->classes;
    struct class_info *k = classes_find(c, o->class_id);
    uint64_t at = 0;
    for (size_t steps = 0; k != NULL && steps <= c->n_info; steps++) {
        int app = idmap_has(&p->redact.app_classes, k->id);
        for (unsigned i = 0; i < k->n_fields; i++) {
            const struct class_field *fl = &c->fields[k->first_field + i];
            unsigned size = type_size(fl->type, p->ids);
            if (at + size > o->length)
                return;
            if (app && redacted_type(fl->type)) {
                memset(values + at, 0, size);
                rf->f.st->fields_zeroed++;
            }
            at += size;
        }
        k = classes_up(c, k);
    }
}

static int filter_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct redact_filter *rf = (struct redact_filter *)v;
    const struct shrink_plan *p = rf->f.plan;
    /* a stand-in is hollow already */
    if (!p->redact.fields || p->redact.app_classes.count == 0 || plan_in_system(p, o->id))
        return forward_instance(&rf->f, o);
    struct hprof_instance changed = *o;
    uint8_t *values = filter_scratch(&rf->scratch, &rf->scratch_cap, o->length, rf->f.err);
    if (values == NULL)
        return HPROF_ERR_NOMEM;
    memcpy(values, o->values, o->length);
    zero_fields(rf, o, values);
    changed.values = values;
    return forward_instance(&rf->f, &changed);
}

/* This chunk with the filler's bytes instead of its own, in pieces.  Chunk
 * offsets are whole elements, and the filler repeats every element (or
 * pixel: 4 bytes, a multiple of FILL_CHUNK's divisors), so it lines up. */
static int forward_filled(struct redact_filter *rf, const struct hprof_primitive_array *a)
{
    struct hprof_primitive_array piece = *a;
    size_t done = 0;
    do {
        size_t n = a->length - done < FILL_CHUNK / 2 ? a->length - done : FILL_CHUNK / 2;
        piece.first = a->first + done;
        piece.length = n;
        piece.data = rf->fill + (piece.first % 4);
        int rc = forward_primitive_array(&rf->f, &piece);
        if (rc != HPROF_OK)
            return rc;
        done += n;
    } while (done < a->length);
    return HPROF_OK;
}

static int filter_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct redact_filter *rf = (struct redact_filter *)v;
    struct rewrite_filter *f = &rf->f;
    const struct redact_plan *p = &f->plan->redact;
    if (a->first > 0)
        return a->id == rf->fill_id ? forward_filled(rf, a)
                                    : forward_primitive_array(f, a);
    uint64_t bytes = (uint64_t)a->count * type_size(a->type, f->plan->ids);
    enum array_keep keep = plan_array_keep(f->plan, f->cursor, a);
    if ((keep == ARRAY_STRING_VALUE || keep == ARRAY_STRING_UTF16) &&
        p->mode != HPROF_REDACT_NONE && !idmap_has(&p->exempt_values, a->id)) {
        count_add(&f->st->strings_redacted, bytes);
        if (keep == ARRAY_STRING_UTF16)
            set_fill(rf, a->id, FILL_UTF16, sizeof FILL_UTF16, bytes);
        else if (a->type == HPROF_TYPE_CHAR)
            set_fill(rf, a->id, FILL_CHAR, sizeof FILL_CHAR, bytes);
        else
            set_fill(rf, a->id, FILL_LATIN1, sizeof FILL_LATIN1, bytes);
        return forward_filled(rf, a);
    }
    if (keep == ARRAY_BITMAP && p->mode == HPROF_REDACT_ALL) {
        count_add(&f->st->buffers_redacted, bytes);
        set_fill(rf, a->id, FILL_PIXELS, sizeof FILL_PIXELS, bytes);
        return forward_filled(rf, a);
    }
    return forward_primitive_array(f, a);
}

static const struct hprof_visitor_ops redact_filter_ops = {
    .class_dump = filter_class_dump,
    .instance = filter_instance,
    .primitive_array = filter_primitive_array,
};

static void redact_filter_free(struct rewrite_filter *f)
{
    struct redact_filter *rf = (struct redact_filter *)f;
    free(rf->scratch);
    free(rf->fill);
    free(rf->statics);
    free(rf);
}

struct rewrite_filter *redact_filter_new(const struct filter_args *a)
{
    struct redact_filter *rf = calloc(1, sizeof *rf);
    if (rf == NULL || (rf->fill = malloc(FILL_CHUNK + 8)) == NULL) {
        free(rf);
        return NULL;
    }
    filter_init(&rf->f, &redact_filter_ops, a, redact_filter_free);
    return &rf->f;
}
