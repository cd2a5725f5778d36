/*
 * redact.c - the redaction rewrite's collect side: keep rules, exempt fields
 * and Strings, the field table's classes (see redact.h).
 */
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "redact.h"
#include "redact_table.h"
#include "visitor_private.h"

static int nomem(const struct redaction *r)
{
    return rewrite_nomem(r->ctx);
}

static const struct hprof_visitor_ops exempt_ops;

/* "CLASS.FIELD" -> a rule; the built-in ones come first: LeakCanary's
 * (1.x, 2.x and Shark's) key and name, which Shark prints and matches
 * leaks by (not the description: free text that apps fill), enum constant
 * names (code, which Shark's inspectors read), and thread names, kept only
 * for the runtime's own threads. */
static int parse_rules(struct redaction *r)
{
    static const char *const builtin[REDACT_BUILTIN_RULES] = {
        "shark.KeyedWeakReference.key", "shark.KeyedWeakReference.name",
        "leakcanary.KeyedWeakReference.key", "leakcanary.KeyedWeakReference.name",
        "com.squareup.leakcanary.KeyedWeakReference.key",
        "com.squareup.leakcanary.KeyedWeakReference.name",
        "java.lang.Enum.name", "java.lang.Thread.name",
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
                                                       strlen(dot + 1),
                                                       i == REDACT_BUILTIN_RULES - 1 };
    }
    return HPROF_OK;
}

_Static_assert(MAX_RULES <= 64, "a rule is a bit of a uint64_t");

static void index_field_table(struct redaction *r);

int redact_init(struct redaction *r, const struct rewrite_ctx *ctx, struct dump_model *model)
{
    memset(r, 0, sizeof *r);
    r->ctx = ctx;
    r->model = model;
    r->exempt = (struct module_visitor){ { &exempt_ops, NULL }, r };
    if (idmap_init(&r->rule_classes, 1) || idmap_init(&r->rule_fields, 1) ||
        idmap_init(&r->exempt_fields, 1) || idmap_init(&r->rule_class, 1) ||
        idmap_init(&r->exempt_strings, 1) || idmap_init(&r->exempt_values, 1) ||
        idmap_init(&r->table_classes, 1) || idmap_init(&r->table_fields, 1) ||
        idmap_init(&r->field_classes, 1) || idmap_init(&r->clear_memo, 1) ||
        idmap_init(&r->clearing, 0) || idmap_init(&r->blind, 0))
        return nomem(r);
    index_field_table(r);
    return parse_rules(r);
}

void redact_free(struct redaction *r)
{
    idmap_free(&r->rule_classes);
    idmap_free(&r->rule_fields);
    idmap_free(&r->exempt_fields);
    idmap_free(&r->rule_class);
    free(r->path);
    free(r->exempt_at);
    idmap_free(&r->exempt_strings);
    idmap_free(&r->exempt_values);
    idmap_free(&r->table_classes);
    idmap_free(&r->table_fields);
    idmap_free(&r->field_classes);
    idmap_free(&r->clear_memo);
    idmap_free(&r->clearing);
    idmap_free(&r->blind);
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

/* Is the field table in force (some field is zeroed or kept by it)? */
static int uses_field_table(const struct redaction *r)
{
    return r->ctx->opt->redact != HPROF_REDACT_NONE || r->ctx->opt->redact_fields;
}

/* same_name() with `want` ending at its NUL: most texts differ in their
 * first bytes, so this stops sooner than measuring `want` would. */
static int same_name_z(const uint8_t *text, size_t len, const char *want)
{
    size_t i = 0;
    for (; i < len && want[i] != '\0'; i++)
        if (text[i] != (uint8_t)want[i] && !(want[i] == '.' && text[i] == '/'))
            return 0;
    return i == len && want[i] == '\0';
}

/* FNV-1a of a name, '/' taken for '.' (HotSpot's class names). */
static uint32_t name_hash(const uint8_t *text, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (text[i] == '/' ? '.' : text[i])) * 16777619u;
    return h;
}

/* The field table's class (`field` 0) and field names in a small hash
 * table: every STRING record of pass 1 is looked up (HotSpot writes tens
 * of thousands), and comparing each with every entry was a third of the
 * shrink's time on a HotSpot dump. */
static void index_field_table(struct redaction *r)
{
    for (size_t i = 0; i < redact_field_table_len; i++)
        for (int field = 0; field < 2; field++) {
            const char *name = field ? redact_field_table[i].field : redact_field_table[i].cls;
            size_t len = strlen(name);
            uint32_t s = name_hash((const uint8_t *)name, len) & (TABLE_SLOTS - 1);
            while (r->table_slots[field][s] != 0 &&
                   !same_name_z((const uint8_t *)name, len,
                                field ? redact_field_table[r->table_slots[field][s] - 1].field
                                      : redact_field_table[r->table_slots[field][s] - 1].cls))
                s = (s + 1) & (TABLE_SLOTS - 1);
            if (r->table_slots[field][s] == 0) /* the first entry of a name stays */
                r->table_slots[field][s] = (uint16_t)(i + 1);
            if (len > r->table_longest[field])
                r->table_longest[field] = len;
        }
}

/* 1 + the first entry of the field table whose class (`field` 0) or
 * field (`field` 1) `s` names, or 0. */
static uint64_t table_entry(const struct redaction *r, const struct hprof_string *s, int field)
{
    if (s->length > r->table_longest[field])
        return 0;
    uint32_t slot = name_hash(s->utf8, s->length) & (TABLE_SLOTS - 1);
    for (uint16_t at; (at = r->table_slots[field][slot]) != 0; slot = (slot + 1) & (TABLE_SLOTS - 1))
        if (same_name_z(s->utf8, s->length, field ? redact_field_table[at - 1].field
                                                  : redact_field_table[at - 1].cls))
            return at;
    return 0;
}

int redact_note_string(struct redaction *r, const struct hprof_string *s)
{
    uint64_t classes = 0, fields = 0, table_class = 0, table_field = 0;
    for (size_t i = 0; i < r->n_rules; i++) {
        const struct redact_rule *rule = &r->rules[i];
        if (same_name(s->utf8, s->length, rule->cls, rule->cls_len))
            classes |= 1ull << i;
        if (same_name(s->utf8, s->length, rule->field, rule->field_len))
            fields |= 1ull << i;
    }
    if (uses_field_table(r)) {
        table_class = table_entry(r, s, 0);
        table_field = table_entry(r, s, 1);
    }
    if ((classes != 0 && idmap_put(&r->rule_classes, s->id, classes) != HPROF_OK) ||
        (fields != 0 && idmap_put(&r->rule_fields, s->id, fields) != HPROF_OK) ||
        (table_class != 0 && idmap_put(&r->table_classes, s->id, table_class) != HPROF_OK) ||
        (table_field != 0 && idmap_put(&r->table_fields, s->id, table_field) != HPROF_OK))
        return nomem(r);
    return (classes | fields | table_class | table_field) != 0;
}

/* ---- Resolution ------------------------------------------------------------------ */

/* The keep rules whose class is `k` (bit i: rule i), or 0. */
static uint64_t rule_class_bits(const struct redaction *r, const struct class_info *k)
{
    uint64_t name, bits = 0;
    if (idmap_get(&r->model->class_names, k->id, &name))
        idmap_get(&r->rule_classes, name, &bits);
    return bits;
}

/* Room in the scratch path for one more class.  @return 0 out of memory. */
static int grow_path(struct redaction *r, size_t n)
{
    if (n < r->cap_path)
        return 1;
    size_t cap = r->cap_path ? 2 * r->cap_path : 64;
    struct class_info **grown = realloc(r->path, cap * sizeof *grown);
    if (grown == NULL)
        return 0;
    r->path = grown;
    r->cap_path = cap;
    return 1;
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
        if (!grow_path(r, n))
            return k; /* out of memory: walk without the memo */
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

/* Do the rules `matched` (bits) keep a text only when it names one of
 * the runtime's threads (a user's rule on the same field keeps any)? */
static int only_runtime_names(const struct redaction *r, uint64_t matched)
{
    for (size_t i = 0; i < r->n_rules; i++)
        if ((matched >> i & 1) && !r->rules[i].runtime_names)
            return 0;
    return 1;
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
        idmap_get(&r->rule_fields, fl->name_id, &field_bits);
        uint64_t matched = class_bits & field_bits;
        if (fl->type == HPROF_TYPE_OBJECT && matched != 0) {
            if (r->n_exempt_at == r->cap_exempt_at) {
                size_t cap = r->cap_exempt_at ? 2 * r->cap_exempt_at : 16;
                struct exempt_field *grown = realloc(r->exempt_at, cap * sizeof *grown);
                if (grown == NULL)
                    return nomem(r);
                r->exempt_at = grown;
                r->cap_exempt_at = cap;
            }
            r->exempt_at[r->n_exempt_at++] = (struct exempt_field){
                (int64_t)at, only_runtime_names(r, matched) };
        }
        at += type_size(fl->type, r->ctx->ids);
    }
    return HPROF_OK;
}

/* Does --redact clear a field of the instances of `ci`: does a class up
 * its chain declare one (the table's REDACT_CLEAR)?  Memoised as
 * rule_class_from() is, so each class is walked once. */
static int declares_cleared_field(const struct redaction *r, const struct class_info *k)
{
    uint64_t first;
    if (!idmap_get(&r->field_classes, k->id, &first))
        return 0;
    for (size_t i = first - 1; redact_table_in_class(first, i); i++)
        if (redact_field_table[i].role == REDACT_CLEAR || redact_field_table[i].role == REDACT_CLEAR_KEY_HASH)
            return 1;
    return 0;
}

static int chain_clears(struct redaction *r, struct class_info *k, int *clears)
{
    const struct classes *classes = &r->model->classes;
    size_t n = 0;
    uint64_t memo = 0;
    for (; k != NULL && !idmap_get(&r->clear_memo, k->id, &memo); k = classes_up(classes, k)) {
        if (!grow_path(r, n))
            return nomem(r);
        r->path[n++] = k;
    }
    *clears = k != NULL && memo == 2;
    while (n-- > 0) {
        *clears = *clears || declares_cleared_field(r, r->path[n]);
        if (idmap_put(&r->clear_memo, r->path[n]->id, 1 + (uint64_t)*clears) != HPROF_OK)
            return nomem(r);
    }
    return HPROF_OK;
}

/* The field table's entries for `ci`'s own name: into field_classes. */
static int note_table_class(struct redaction *r, const struct class_info *ci)
{
    uint64_t name, first;
    if (!idmap_get(&r->model->class_names, ci->id, &name) ||
        !idmap_get(&r->table_classes, name, &first))
        return HPROF_OK;
    return idmap_put(&r->field_classes, ci->id, first) == HPROF_OK ? HPROF_OK : nomem(r);
}

/* The field table's classes up `ci`'s chain, each classes_up() away. */
static int note_table_chain(struct redaction *r, struct class_info *ci)
{
    int rc = HPROF_OK;
    for (struct class_info *k = ci; rc == HPROF_OK && k != NULL &&
         !idmap_has(&r->clear_memo, k->id); k = classes_up(&r->model->classes, k))
        rc = note_table_class(r, k);
    return rc;
}

int redact_resolve_class(struct redaction *r, struct class_info *ci)
{
    const struct classes *classes = &r->model->classes;
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
    if (!uses_field_table(r) || r->table_classes.count == 0)
        return HPROF_OK;
    int clears = 0;
    int rc = note_table_chain(r, ci);
    if (rc == HPROF_OK)
        rc = chain_clears(r, ci, &clears);
    if (rc == HPROF_OK && clears && idmap_put(&r->clearing, ci->id, 0) != HPROF_OK)
        rc = nomem(r);
    return rc;
}

int redact_resolve_classes(struct redaction *r)
{
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && i < r->model->classes.n_info; i++)
        rc = redact_resolve_class(r, &r->model->classes.info[i]);
    return rc;
}

/* String `id` is exempt as `how` says; EXEMPT_ALWAYS wins. */
static int exempt_string(struct redaction *r, uint64_t id, uint64_t how)
{
    uint64_t was;
    int named_before = id != 0 && idmap_get(&r->exempt_strings, id, &was);
    if (id == 0 || (named_before && was <= how))
        return HPROF_OK;
    if (idmap_put(&r->exempt_strings, id, how) != HPROF_OK)
        return nomem(r);
    if (!named_before && r->on_exempt != NULL)
        r->on_exempt(r->on_exempt_ctx, id);
    return HPROF_OK;
}

int redact_exempt_string(struct redaction *r, uint64_t id)
{
    return exempt_string(r, id, EXEMPT_ALWAYS);
}

int redact_resolve_instance(struct redaction *r, const struct hprof_instance *o)
{
    uint64_t exempt;
    if (r->exempt_fields.count == 0 || !idmap_get(&r->exempt_fields, o->class_id, &exempt))
        return HPROF_OK;
    for (uint64_t i = exempt >> 16; i < (exempt >> 16) + (exempt & 0xFFFF); i++) {
        const struct exempt_field *f = &r->exempt_at[i];
        int rc = exempt_string(r, model_field_id(r->ctx->ids, o, f->at),
                               f->runtime_names ? EXEMPT_IF_RUNTIME_NAME : EXEMPT_ALWAYS);
        if (rc != HPROF_OK)
            return rc;
    }
    return HPROF_OK;
}

int redact_forget(struct redaction *r)
{
    r->n_exempt_at = 0;
    if (idmap_reset(&r->exempt_fields) || idmap_reset(&r->rule_class) ||
        idmap_reset(&r->exempt_strings) || idmap_reset(&r->field_classes) ||
        idmap_reset(&r->clear_memo) || idmap_reset(&r->clearing) || idmap_reset(&r->blind))
        return nomem(r);
    return HPROF_OK;
}

/* ---- The exempt pass: the value arrays of Strings a rule names ------------------ */

int redact_exempt_value(struct redaction *r, uint64_t value, uint64_t entry)
{
    uint64_t was;
    if (idmap_get(&r->exempt_values, value, &was))
        entry = exempt_merge(was, entry);
    return idmap_put(&r->exempt_values, value, entry) == HPROF_OK ? HPROF_OK : nomem(r);
}

static int exempt_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct redaction *r = ((struct module_visitor *)v)->state;
    const struct kind_layout *k;
    uint64_t how;
    if (!idmap_get(&r->exempt_strings, o->id, &how) ||
        model_kind(r->model, o->class_id, &k) != NAME_CLASS_STRING)
        return HPROF_OK;
    uint64_t value = model_field_id(r->ctx->ids, o, k->field[0]);
    if (value == 0)
        return HPROF_OK;
    return redact_exempt_value(r, value, exempt_entry(how, model_string_covers(k, o)));
}

/* The device's own Strings (what android.os.Build's statics name: make,
 * model, fingerprint, version) describe the phone, not its user, and leak
 * analyzers match on them: their text is never redacted. */
int redact_keep_device_text(struct redaction *r, uint64_t value)
{
    if (r->ctx->opt->redact == HPROF_REDACT_NONE || value == 0)
        return HPROF_OK;
    return redact_exempt_value(r, value, exempt_entry(EXEMPT_ALWAYS, EXEMPT_COVERS_ALL));
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
    /* the plan owns them now */
    plan->exempt_values = r->exempt_values;
    plan->field_classes = r->field_classes;
    plan->field_names = r->table_fields;
    plan->clearing = r->clearing;
    plan->blind = r->blind;
    memset(&r->exempt_values, 0, sizeof r->exempt_values);
    memset(&r->field_classes, 0, sizeof r->field_classes);
    memset(&r->table_fields, 0, sizeof r->table_fields);
    memset(&r->clearing, 0, sizeof r->clearing);
    memset(&r->blind, 0, sizeof r->blind);
}
