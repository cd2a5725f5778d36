/*
 * redact_filter.c - the redaction rewrite's write-pass filter: fills the
 * texts and pixels the plan redacts and zeroes the fields it clears (see
 * redact.h).
 */
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "redact.h"
#include "redact_table.h"

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
    for (size_t i = first - 1; redact_table_in_class(first, i); i++)
        if (strcmp(redact_field_table[i].field, redact_field_table[named - 1].field) == 0)
            return redact_field_table[i].role;
    return REDACT_NONE;
}

/* Is a field of this type and role zeroed?  --redact clears hash caches;
 * --redact-fields zeroes numbers and chars, which may be data, but the
 * structural ones; booleans are the flags leak detectors read
 * (Activity.mDestroyed) and references are structure. */
static int zeroed(const struct redact_plan *p, uint8_t type, enum field_role role,
                  const uint8_t *value, int blind)
{
    if (role == REDACT_CLEAR_KEY_HASH &&
        (value == NULL || type != HPROF_TYPE_INT || (value[0] & 0x80) != 0))
        return 0; /* a node's marker (big-endian: the sign is in the first byte) */
    if ((role == REDACT_CLEAR || role == REDACT_CLEAR_KEY_HASH) && p->mode != HPROF_REDACT_NONE)
        return 1;
    return (p->fields || blind) && type != HPROF_TYPE_OBJECT && type != HPROF_TYPE_BOOLEAN &&
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
        if (sf->value != 0 && zeroed(p, sf->type, field_role(p, first, sf->name_id), NULL, 0)) {
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
    int blind = idmap_has(&p->redact.blind, o->class_id);
    uint64_t at = 0;
    for (size_t steps = 0; k != NULL && steps <= c->n_info; steps++) {
        uint64_t first = table_first(&p->redact, k->id);
        for (unsigned i = 0; i < k->n_fields; i++) {
            const struct class_field *fl = &c->fields[k->first_field + i];
            unsigned size = type_size(fl->type, p->ids);
            if (at + size > o->length)
                return;
            if (zeroed(&p->redact, fl->type, field_role(&p->redact, first, fl->name_id),
                       values + at, blind)) {
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
    if ((!p->redact.fields && !idmap_has(&p->redact.clearing, o->class_id) &&
         !idmap_has(&p->redact.blind, o->class_id)) ||
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
    for (size_t t = 0; t < redact_runtime_threads_len; t++) {
        const char *name = redact_runtime_threads[t];
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
    uint64_t entry;
    if (!idmap_get(&p->redact.exempt_values, a->id, &entry) || !exempt_covers(entry, a->count))
        return 0;
    return (entry & 1) == EXEMPT_ALWAYS || holds_runtime_name(a, keep, p->ids);
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
