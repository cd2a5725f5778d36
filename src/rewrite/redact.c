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

/* The fields redaction treats apart from the rest, by declaring class (Java
 * names; a '.' matches HotSpot's '/' too), each class's entries together.
 * The man page lists the same table.
 *
 * REDACT_CLEAR, under --redact: caches of a hash of a String's text, from
 * which a short text comes back by trying every candidate of its length.
 * 0 is what the JDK and Android take for "not computed yet" (hashIsZero
 * false with it), and analyzers rebuild no hash table: they follow the
 * nodes' references.  ThreadLocal.threadLocalHashCode is left alone: a
 * counter's step, not derived from data.  REDACT_CLEAR_KEY_HASH clears
 * the same but for negative values: ConcurrentHashMap marks its
 * forwarding, tree-bin and reservation nodes so (structure), and a key's
 * hash there is never negative.
 *
 * REDACT_KEEP, under --redact-fields: the numbers that are structure, read
 * by Shark's finders and inspectors, ahat, MAT and VisualVM to size, walk
 * and judge objects: lengths and counts of Strings, builders and
 * collections (their contents are references, or gone), the fields Shark
 * needs to decide that a KeyedWeakReference is retained and that a View is
 * detached, native sizes that retained sizes add, the Bitmap dimensions
 * and native pointer that tie it to its pixels, the SDK level Shark's
 * known-leak rules match on, enum ordinals and thread states.  Every other
 * number goes, booleans (flags such as Activity.mDestroyed) stay. */
enum field_role { REDACT_NONE, REDACT_KEEP, REDACT_CLEAR, REDACT_CLEAR_KEY_HASH };

struct field_entry {
    const char *cls, *field;
    enum field_role role;
};

static const struct field_entry FIELD_TABLE[] = {
    { "java.lang.String", "hash", REDACT_CLEAR },
    { "java.lang.String", "hashIsZero", REDACT_CLEAR },
    { "java.lang.String", "count", REDACT_KEEP },
    { "java.lang.String", "offset", REDACT_KEEP },
    { "java.lang.String", "coder", REDACT_KEEP },
    { "java.util.HashMap$Node", "hash", REDACT_CLEAR },
    { "java.util.HashMap$Entry", "hash", REDACT_CLEAR },
    { "java.util.HashMap$HashMapEntry", "hash", REDACT_CLEAR },
    { "java.util.Hashtable$Entry", "hash", REDACT_CLEAR },
    { "java.util.Hashtable$HashtableEntry", "hash", REDACT_CLEAR },
    { "java.util.WeakHashMap$Entry", "hash", REDACT_CLEAR },
    { "java.util.concurrent.ConcurrentHashMap$Node", "hash", REDACT_CLEAR_KEY_HASH },
    { "java.util.concurrent.ConcurrentHashMap$HashEntry", "hash", REDACT_CLEAR },
    { "java.lang.AbstractStringBuilder", "count", REDACT_KEEP },
    { "java.lang.AbstractStringBuilder", "coder", REDACT_KEEP },
    { "java.lang.Enum", "ordinal", REDACT_KEEP },
    { "java.util.ArrayList", "size", REDACT_KEEP },
    { "java.util.ArrayList$SubList", "offset", REDACT_KEEP },
    { "java.util.ArrayList$SubList", "size", REDACT_KEEP },
    { "java.util.LinkedList", "size", REDACT_KEEP },
    { "java.util.Vector", "elementCount", REDACT_KEEP },
    { "java.util.ArrayDeque", "head", REDACT_KEEP },
    { "java.util.ArrayDeque", "tail", REDACT_KEEP },
    { "java.util.PriorityQueue", "size", REDACT_KEEP },
    { "java.util.HashMap", "size", REDACT_KEEP },
    { "java.util.Hashtable", "count", REDACT_KEEP },
    { "java.util.WeakHashMap", "size", REDACT_KEEP },
    { "java.util.IdentityHashMap", "size", REDACT_KEEP },
    { "java.util.TreeMap", "size", REDACT_KEEP },
    { "java.util.concurrent.ConcurrentHashMap", "baseCount", REDACT_KEEP },
    { "java.util.concurrent.ConcurrentHashMap$Segment", "count", REDACT_KEEP },
    { "java.util.concurrent.ArrayBlockingQueue", "count", REDACT_KEEP },
    { "java.util.concurrent.ArrayBlockingQueue", "takeIndex", REDACT_KEEP },
    { "java.util.concurrent.ArrayBlockingQueue", "putIndex", REDACT_KEEP },
    { "android.util.ArrayMap", "mSize", REDACT_KEEP },
    { "android.util.ArraySet", "mSize", REDACT_KEEP },
    { "android.util.SparseArray", "mSize", REDACT_KEEP },
    { "android.util.SparseIntArray", "mSize", REDACT_KEEP },
    { "android.util.SparseLongArray", "mSize", REDACT_KEEP },
    { "android.util.SparseBooleanArray", "mSize", REDACT_KEEP },
    { "android.util.LongSparseArray", "mSize", REDACT_KEEP },
    { "java.lang.Thread", "priority", REDACT_KEEP },
    { "java.lang.Thread", "threadStatus", REDACT_KEEP },
    { "java.lang.Thread", "tid", REDACT_KEEP },
    { "java.lang.Thread$FieldHolder", "priority", REDACT_KEEP },
    { "java.lang.Thread$FieldHolder", "threadStatus", REDACT_KEEP },
    { "leakcanary.KeyedWeakReference", "watchUptimeMillis", REDACT_KEEP },
    { "leakcanary.KeyedWeakReference", "retainedUptimeMillis", REDACT_KEEP },
    { "leakcanary.KeyedWeakReference", "heapDumpUptimeMillis", REDACT_KEEP },
    { "shark.KeyedWeakReference", "watchUptimeMillis", REDACT_KEEP },
    { "shark.KeyedWeakReference", "retainedUptimeMillis", REDACT_KEEP },
    { "shark.KeyedWeakReference", "heapDumpUptimeMillis", REDACT_KEEP },
    { "libcore.util.NativeAllocationRegistry", "size", REDACT_KEEP },
    { "android.os.Build$VERSION", "SDK_INT", REDACT_KEEP },
    { "android.view.View", "mWindowAttachCount", REDACT_KEEP },
    { "android.view.View", "mID", REDACT_KEEP },
    { "android.view.WindowManager$LayoutParams", "type", REDACT_KEEP },
    { "android.graphics.Bitmap", "mWidth", REDACT_KEEP },
    { "android.graphics.Bitmap", "mHeight", REDACT_KEEP },
    { "android.graphics.Bitmap", "mNativePtr", REDACT_KEEP },
    { "android.graphics.Bitmap$DumpData", "count", REDACT_KEEP },
    { "android.graphics.Bitmap$DumpData", "format", REDACT_KEEP },
};
#define N_FIELD_TABLE (sizeof FIELD_TABLE / sizeof FIELD_TABLE[0])

/* The names of the threads of the runtimes and of LeakCanary, whose
 * locals Shark's matchers ignore by name: with --redact they keep their
 * text (and no other thread's name does).  The man page lists them too. */
static const char *const RUNTIME_THREADS[] = {
    "main", "Finalizer", "FinalizerDaemon", "FinalizerWatchdogDaemon",
    "ReferenceQueueDaemon", "HeapTaskDaemon", "Reference Handler", "Signal Catcher",
    "Signal Dispatcher", "Common-Cleaner", "Attach Listener", "Notification Thread",
    "Service Thread", "Monitor Deflation Thread", "Profile Saver", "Jit thread pool worker thread 0",
    "LeakCanary-Heap-Dump",
};
#define N_RUNTIME_THREADS (sizeof RUNTIME_THREADS / sizeof RUNTIME_THREADS[0])

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
        idmap_init(&r->clearing, 0))
        return nomem(r);
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

/* 1 + the first entry of the field table whose class (`field` 0) or
 * field (`field` 1) `s` names, or 0. */
static uint64_t table_entry(const struct hprof_string *s, int field)
{
    for (size_t i = 0; i < N_FIELD_TABLE; i++) {
        const char *name = field ? FIELD_TABLE[i].field : FIELD_TABLE[i].cls;
        if (same_name(s->utf8, s->length, name, strlen(name)))
            return i + 1;
    }
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
        table_class = table_entry(s, 0);
        table_field = table_entry(s, 1);
    }
    if ((classes != 0 && idmap_put(&r->rule_classes, s->id, classes) != HPROF_OK) ||
        (fields != 0 && idmap_put(&r->rule_fields, s->id, fields) != HPROF_OK) ||
        (table_class != 0 && idmap_put(&r->table_classes, s->id, table_class) != HPROF_OK) ||
        (table_field != 0 && idmap_put(&r->table_fields, s->id, table_field) != HPROF_OK))
        return nomem(r);
    return (classes | fields | table_class | table_field) != 0;
}

/* Is entry `i` of the field table one of the class whose entries start
 * at `first` - 1? */
static int in_class(uint64_t first, size_t i)
{
    return i < N_FIELD_TABLE && strcmp(FIELD_TABLE[i].cls, FIELD_TABLE[first - 1].cls) == 0;
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
    for (size_t i = first - 1; in_class(first, i); i++)
        if (FIELD_TABLE[i].role == REDACT_CLEAR || FIELD_TABLE[i].role == REDACT_CLEAR_KEY_HASH)
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
    if (id == 0 || (idmap_get(&r->exempt_strings, id, &was) && was <= how))
        return HPROF_OK;
    return idmap_put(&r->exempt_strings, id, how) == HPROF_OK ? HPROF_OK : nomem(r);
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
        idmap_reset(&r->clear_memo) || idmap_reset(&r->clearing))
        return nomem(r);
    return HPROF_OK;
}

/* ---- The exempt pass: the value arrays of Strings a rule names ------------------ */

static int exempt_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct redaction *r = ((struct module_visitor *)v)->state;
    const struct kind_layout *k;
    uint64_t how, was;
    if (!idmap_get(&r->exempt_strings, o->id, &how) ||
        model_kind(r->model, o->class_id, &k) != NAME_CLASS_STRING)
        return HPROF_OK;
    uint64_t value = model_field_id(r->ctx->ids, o, k->field[0]);
    if (value == 0 || (idmap_get(&r->exempt_values, value, &was) && was <= how))
        return HPROF_OK; /* a value shared with a String exempt always stays so */
    return idmap_put(&r->exempt_values, value, how) == HPROF_OK ? HPROF_OK : nomem(r);
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
    memset(&r->exempt_values, 0, sizeof r->exempt_values);
    memset(&r->field_classes, 0, sizeof r->field_classes);
    memset(&r->table_fields, 0, sizeof r->table_fields);
    memset(&r->clearing, 0, sizeof r->clearing);
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

/* The role the field table gives the field named `name_id` of the class
 * whose entries start at `first` - 1 (0: not in the table). */
static enum field_role field_role(const struct redact_plan *p, uint64_t first, uint64_t name_id)
{
    uint64_t named;
    if (first == 0 || !idmap_get(&p->field_names, name_id, &named))
        return REDACT_NONE;
    for (size_t i = first - 1; in_class(first, i); i++)
        if (strcmp(FIELD_TABLE[i].field, FIELD_TABLE[named - 1].field) == 0)
            return FIELD_TABLE[i].role;
    return REDACT_NONE;
}

/* Is a field of this type and role zeroed?  --redact clears hash caches;
 * --redact-fields zeroes numbers and chars, which may be data, but the
 * structural ones; booleans are the flags leak detectors read
 * (Activity.mDestroyed) and references are structure. */
static int zeroed(const struct redact_plan *p, uint8_t type, enum field_role role,
                  const uint8_t *value)
{
    if (role == REDACT_CLEAR_KEY_HASH &&
        (value == NULL || type != HPROF_TYPE_INT || (value[0] & 0x80) != 0))
        return 0; /* a node's marker (big-endian: the sign is in the first byte) */
    if ((role == REDACT_CLEAR || role == REDACT_CLEAR_KEY_HASH) && p->mode != HPROF_REDACT_NONE)
        return 1;
    return p->fields && type != HPROF_TYPE_OBJECT && type != HPROF_TYPE_BOOLEAN &&
           role != REDACT_KEEP;
}

/* The field table's first entry for class `id`, plus 1, or 0. */
static uint64_t table_first(const struct redact_plan *p, uint64_t id)
{
    uint64_t first = 0;
    idmap_get(&p->field_classes, id, &first);
    return first;
}

static int filter_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    struct redact_filter *rf = (struct redact_filter *)v;
    const struct redact_plan *p = &rf->f.plan->redact;
    if (!p->fields || c->n_statics == 0)
        return forward_class_dump(&rf->f, c);
    if (c->n_statics > rf->cap_statics) {
        struct hprof_static_field *grown = realloc(rf->statics, c->n_statics * sizeof *grown);
        if (grown == NULL)
            return hprof_error_set(rf->f.err, HPROF_ERR_NOMEM, "out of memory");
        rf->statics = grown;
        rf->cap_statics = c->n_statics;
    }
    uint64_t first = table_first(p, c->id);
    struct hprof_class_dump zeroed_dump = *c;
    for (unsigned i = 0; i < c->n_statics; i++) {
        const struct hprof_static_field *sf = &c->statics[i];
        rf->statics[i] = *sf;
        if (sf->value != 0 && zeroed(p, sf->type, field_role(p, first, sf->name_id), NULL)) {
            rf->statics[i].value = 0;
            rf->f.st->fields_zeroed++;
        }
    }
    zeroed_dump.statics = rf->statics;
    return forward_class_dump(&rf->f, &zeroed_dump);
}

/* Zero in `values` (a copy) the fields redaction takes away. */
static void zero_fields(struct redact_filter *rf, const struct hprof_instance *o, uint8_t *values)
{
    const struct shrink_plan *p = rf->f.plan;
    const struct classes *c = &p->model->classes;
    struct class_info *k = classes_find(c, o->class_id);
    uint64_t at = 0;
    for (size_t steps = 0; k != NULL && steps <= c->n_info; steps++) {
        uint64_t first = table_first(&p->redact, k->id);
        for (unsigned i = 0; i < k->n_fields; i++) {
            const struct class_field *fl = &c->fields[k->first_field + i];
            unsigned size = type_size(fl->type, p->ids);
            if (at + size > o->length)
                return;
            if (zeroed(&p->redact, fl->type, field_role(&p->redact, first, fl->name_id),
                       values + at)) {
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
    if ((!p->redact.fields && !idmap_has(&p->redact.clearing, o->class_id)) ||
        plan_in_system(p, o->id))
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

/* Does array `a`, a String's value, hold the name of one of the runtime's
 * threads?  Such names are short: a chunk that is not the whole array
 * holds none.  `keep` says how its text is encoded. */
static int holds_runtime_name(const struct hprof_primitive_array *a, enum array_keep keep,
                              unsigned ids)
{
    uint64_t bytes = (uint64_t)a->count * type_size(a->type, ids);
    unsigned unit = keep == ARRAY_STRING_UTF16 || a->type == HPROF_TYPE_CHAR ? 2 : 1;
    if (a->first != 0 || a->length != bytes || a->length % unit != 0)
        return 0;
    size_t n = a->length / unit;
    for (size_t t = 0; t < N_RUNTIME_THREADS; t++) {
        const char *name = RUNTIME_THREADS[t];
        size_t i = 0;
        if (strlen(name) != n)
            continue;
        for (; i < n; i++) {
            const uint8_t *u = a->data + i * unit;
            uint8_t c = unit == 1 ? u[0] : keep == ARRAY_STRING_UTF16 ? u[0] : u[1];
            uint8_t high = unit == 1 ? 0 : keep == ARRAY_STRING_UTF16 ? u[1] : u[0];
            if (high != 0 || c != (uint8_t)name[i])
                break;
        }
        if (i == n)
            return 1;
    }
    return 0;
}

/* Does the String value `a` keep its text under a keep rule? */
static int exempt_value(const struct shrink_plan *p, const struct hprof_primitive_array *a,
                        enum array_keep keep)
{
    uint64_t how;
    if (!idmap_get(&p->redact.exempt_values, a->id, &how))
        return 0;
    return how == EXEMPT_ALWAYS || holds_runtime_name(a, keep, p->ids);
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
        p->mode != HPROF_REDACT_NONE && !exempt_value(f->plan, a, keep)) {
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
