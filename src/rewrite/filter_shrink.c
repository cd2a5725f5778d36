/*
 * filter_shrink.c - the write pass of hprof_shrink(): a visitor in front of
 * the writer that applies what the earlier passes decided.
 *
 *  - STRING, LOAD_CLASS, CLASS_DUMP and every other record pass unchanged.
 *  - java.lang.String contents, distinct bitmap buffers and DumpData.natives
 *    pass unchanged; duplicate bitmap buffers are dropped and the Bitmap
 *    fields and DumpData.buffers elements that named them are rewritten to
 *    the copy that is kept.
 *  - Other primitive arrays lose their contents as --arrays says: empty
 *    (zero-length array, same id and type), zero (same length, zeros) or
 *    remove (no record).  PRIMITIVE_ARRAY_NODATA becomes a plain
 *    PRIMITIVE_ARRAY_DUMP, since most readers reject it.
 *  - With --redact, kept String contents become a filler of the same length
 *    and element type ('*' as a char, a Latin-1 byte or a UTF-16 code unit),
 *    bitmap buffers a neutral grey, unless a keep rule exempts the String;
 *    with --redact-fields, primitive fields of application classes other
 *    than booleans become 0, in instances and statics.
 *  - Zygote and image objects are dropped, with the roots that named them,
 *    except those a kept object refers to: these stay as hollow stand-ins
 *    (same id and class; instance fields zeroed, arrays empty), so that no
 *    reference dangles and nothing more is pulled in through them.
 *
 * Because every decision that drops the rest of an array is taken on its
 * first chunk (and answered with HPROF_SKIP), later chunks of an array that
 * reach this filter are always forwarded.
 */
#include <stdlib.h>
#include <string.h>

#include "shrink_private.h"

#define ZERO_CHUNK (1u << 20)
#define ELEMENT_CHUNK 8192u

struct shrink_filter {
    struct hprof_visitor base;
    struct shrink *sh;
    struct hprof_shrink_stats *st;
    uint8_t *scratch;       /* a modified copy of instance values or elements */
    size_t scratch_cap;
    uint8_t *zeros;         /* ZERO_CHUNK zero bytes */
    uint8_t *fill;          /* ZERO_CHUNK bytes of the current filler */
    uint64_t fill_id;       /* the array being redacted, for its later chunks */
    const uint8_t *fill_pattern;
    size_t fill_ready;      /* bytes of `fill` holding `fill_pattern` */
    struct hprof_static_field *statics;
    size_t cap_statics;
};

/* Fillers, as they appear in the dump: hprof char[] is big-endian UTF-16,
 * HotSpot's UTF-16 byte[] is in the JVM's (little-endian) order, pixels are
 * opaque grey R, G, B, A. */
static const uint8_t FILL_LATIN1[] = { '*' };
static const uint8_t FILL_CHAR[] = { 0, '*' };
static const uint8_t FILL_UTF16[] = { '*', 0 };
static const uint8_t FILL_PIXELS[] = { 0x80, 0x80, 0x80, 0xFF };

/* Make `fill` hold the pattern for an array of `bytes` (plus the alignment
 * slack forward_filled() uses); refilled only when the pattern changes or
 * a longer array comes, since most redacted arrays are short strings. */
static void set_fill(struct shrink_filter *f, uint64_t id, const uint8_t *pattern, size_t len,
                     uint64_t bytes)
{
    size_t want = bytes + 4 < ZERO_CHUNK ? (size_t)bytes + 4 : ZERO_CHUNK;
    if (f->fill_pattern != pattern)
        f->fill_ready = 0;
    size_t i = f->fill_ready; /* always a whole number of patterns */
    for (; i < want; i += len)
        memcpy(f->fill + i, pattern, len);
    f->fill_ready = i;
    f->fill_pattern = pattern;
    f->fill_id = id;
}

static struct shrink_filter *self(struct hprof_visitor *v)
{
    return (struct shrink_filter *)v;
}

static struct hprof_visitor *next(struct shrink_filter *f)
{
    return f->base.next;
}

static uint8_t *scratch(struct shrink_filter *f, size_t n)
{
    if (n > f->scratch_cap) {
        uint8_t *grown = realloc(f->scratch, n);
        if (grown == NULL) {
            hprof_error_set(f->sh->err, HPROF_ERR_NOMEM, "out of memory");
            return NULL;
        }
        f->scratch = grown;
        f->scratch_cap = n;
    }
    return f->scratch;
}

static void add(struct hprof_count *c, uint64_t bytes)
{
    c->count++;
    c->bytes += bytes;
}

static int is_standin(const struct shrink *sh, uint64_t id)
{
    return idmap_has(&sh->standins, id);
}

/* ---- Records outside the heap ----------------------------------------------- */

static int on_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct shrink_filter *f = self(v);
    add(&f->st->strings, s->length);
    return hprof_visit_string(next(f), s);
}

/* ---- Roots and classes ---------------------------------------------------- */

/* Does the object `id` (if in a dropped heap) survive in some form? */
static int survives(struct shrink *sh, uint64_t id)
{
    return !shrink_in_system(sh, id) || is_standin(sh, id) || shrink_keep_reason(sh, id) ||
           idmap_has(&sh->candidates, id);
}

static int on_root(struct hprof_visitor *v, const struct hprof_root *r)
{
    struct shrink_filter *f = self(v);
    if (!survives(f->sh, r->id)) {
        f->st->roots_dropped++;
        return HPROF_OK;
    }
    return hprof_visit_root(next(f), r);
}

/* --redact-fields: numbers and chars may be data; booleans are the flags
 * leak detectors read (Activity.mDestroyed) and references are structure. */
static int redacted_type(uint8_t type)
{
    return type != HPROF_TYPE_OBJECT && type != HPROF_TYPE_BOOLEAN;
}

static int on_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    struct shrink_filter *f = self(v);
    f->st->class_dumps.count++;
    if (!f->sh->opt.redact_fields || !idmap_has(&f->sh->app_classes, c->id) || c->n_statics == 0)
        return hprof_visit_class_dump(next(f), c);
    if (c->n_statics > f->cap_statics) {
        struct hprof_static_field *grown = realloc(f->statics, c->n_statics * sizeof *grown);
        if (grown == NULL)
            return hprof_error_set(f->sh->err, HPROF_ERR_NOMEM, "out of memory");
        f->statics = grown;
        f->cap_statics = c->n_statics;
    }
    struct hprof_class_dump zeroed = *c;
    for (unsigned i = 0; i < c->n_statics; i++) {
        f->statics[i] = c->statics[i];
        if (redacted_type(c->statics[i].type) && c->statics[i].value != 0) {
            f->statics[i].value = 0;
            f->st->fields_zeroed++;
        }
    }
    zeroed.statics = f->statics;
    return hprof_visit_class_dump(next(f), &zeroed);
}

/* Zero the application classes' primitive fields in `values` (a copy). */
static void zero_fields(struct shrink_filter *f, const struct hprof_instance *o, uint8_t *values)
{
    const struct classes *c = &f->sh->classes;
    struct class_info *k = classes_find(c, o->class_id);
    uint64_t at = 0;
    for (size_t steps = 0; k != NULL && steps <= c->n_info; steps++) {
        int app = idmap_has(&f->sh->app_classes, k->id);
        for (unsigned i = 0; i < k->n_fields; i++) {
            const struct class_field *fl = &c->fields[k->first_field + i];
            unsigned size = type_size(fl->type, f->sh->ids);
            if (at + size > o->length)
                return;
            if (app && redacted_type(fl->type)) {
                memset(values + at, 0, size);
                f->st->fields_zeroed++;
            }
            at += size;
        }
        k = k->super_id ? classes_find(c, k->super_id) : NULL;
    }
}

/* ---- Instances ------------------------------------------------------------------ */

static int forward_instance(struct shrink_filter *f, const struct hprof_instance *o)
{
    add(&f->st->instances_out, o->length);
    return hprof_visit_instance(next(f), o);
}

static int on_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct shrink_filter *f = self(v);
    struct shrink *sh = f->sh;
    const struct kind_layout *k;
    add(&f->st->instances_in, o->length);
    if (shrink_in_system(sh, o->id)) {
        if (!is_standin(sh, o->id)) {
            add(&f->st->system_dropped, o->length);
            return HPROF_OK;
        }
        struct hprof_instance hollow = *o;
        uint8_t *values = scratch(f, o->length);
        if (values == NULL)
            return HPROF_ERR_NOMEM;
        memset(values, 0, o->length);
        hollow.values = values;
        add(&f->st->system_standins, o->length);
        return forward_instance(f, &hollow);
    }
    uint64_t kept = 0;
    int merged = shrink_kind(sh, o->class_id, &k) == NAME_CLASS_BITMAP &&
                 idmap_get(&sh->remap, shrink_field_id(sh, o, k->field[0]), &kept);
    int zeroed = sh->opt.redact_fields && sh->app_classes.count > 0;
    if (!merged && !zeroed)
        return forward_instance(f, o);
    struct hprof_instance changed = *o;
    uint8_t *values = scratch(f, o->length);
    if (values == NULL)
        return HPROF_ERR_NOMEM;
    memcpy(values, o->values, o->length);
    if (merged)
        put_id(values + k->field[0], kept, sh->ids);
    if (zeroed)
        zero_fields(f, o, values);
    changed.values = values;
    return forward_instance(f, &changed);
}

/* ---- Object arrays ---------------------------------------------------------- */

/* DumpData.buffers: elements that name a merged buffer now name the kept one. */
static int rewrite_elements(struct shrink_filter *f, const struct hprof_object_array *a)
{
    struct shrink *sh = f->sh;
    struct hprof_object_array part = *a;
    for (uint32_t done = 0; done < a->n;) {
        uint32_t n = a->n - done < ELEMENT_CHUNK ? a->n - done : ELEMENT_CHUNK;
        uint8_t *el = scratch(f, (size_t)n * sh->ids);
        if (el == NULL)
            return HPROF_ERR_NOMEM;
        memcpy(el, a->elements + (size_t)done * sh->ids, (size_t)n * sh->ids);
        for (uint32_t i = 0; i < n; i++) {
            uint64_t kept;
            if (idmap_get(&sh->remap, get_id(el + (size_t)i * sh->ids, sh->ids), &kept))
                put_id(el + (size_t)i * sh->ids, kept, sh->ids);
        }
        part.first = a->first + done;
        part.n = n;
        part.elements = el;
        int rc = hprof_visit_object_array(next(f), &part);
        if (rc != HPROF_OK)
            return rc;
        done += n;
    }
    return HPROF_OK;
}

static int on_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct shrink_filter *f = self(v);
    struct shrink *sh = f->sh;
    if (a->first == 0) {
        uint64_t bytes = (uint64_t)a->count * sh->ids;
        add(&f->st->object_arrays_in, bytes);
        if (shrink_in_system(sh, a->id)) {
            if (!is_standin(sh, a->id)) {
                add(&f->st->system_dropped, bytes);
                return HPROF_SKIP;
            }
            struct hprof_object_array hollow = *a;
            hollow.count = hollow.n = 0;
            add(&f->st->system_standins, bytes);
            add(&f->st->object_arrays_out, 0);
            int rc = hprof_visit_object_array(next(f), &hollow);
            return rc == HPROF_OK ? HPROF_SKIP : rc;
        }
        add(&f->st->object_arrays_out, bytes);
    }
    if (sh->remap.count > 0 && idmap_has(&sh->dump_buffers, a->id))
        return rewrite_elements(f, a);
    return hprof_visit_object_array(next(f), a);
}

/* ---- Primitive arrays ----------------------------------------------------- */

enum array_action { FORWARD, DROP, EMPTY, ZERO, FILL };

static enum array_action decide(struct shrink_filter *f, const struct hprof_primitive_array *a,
                                uint64_t bytes)
{
    struct shrink *sh = f->sh;
    struct hprof_shrink_stats *st = f->st;
    int why;
    if (idmap_has(&sh->dropped, a->id))
        return DROP; /* a merged bitmap copy: counted as bitmap_duplicates */
    int nodata = a->tag == HPROF_PRIMITIVE_ARRAY_NODATA;
    if (!nodata && (why = shrink_keep_reason(sh, a->id)) != 0) {
        if (why == KEEP_NATIVES) {
            add(&st->other_kept, bytes);
            return FORWARD;
        }
        add(&st->string_values_kept, bytes);
        if (sh->opt.redact == HPROF_REDACT_NONE || idmap_has(&sh->exempt_values, a->id))
            return FORWARD;
        add(&st->strings_redacted, bytes);
        if (why == KEEP_STRING_UTF16)
            set_fill(f, a->id, FILL_UTF16, sizeof FILL_UTF16, bytes);
        else if (a->type == HPROF_TYPE_CHAR)
            set_fill(f, a->id, FILL_CHAR, sizeof FILL_CHAR, bytes);
        else
            set_fill(f, a->id, FILL_LATIN1, sizeof FILL_LATIN1, bytes);
        return FILL;
    }
    if (!nodata && idmap_has(&sh->candidates, a->id) && !idmap_has(&sh->remap, a->id)) {
        add(&st->bitmap_buffers_kept, bytes);
        if (sh->opt.redact != HPROF_REDACT_ALL)
            return FORWARD;
        add(&st->buffers_redacted, bytes);
        set_fill(f, a->id, FILL_PIXELS, sizeof FILL_PIXELS, bytes);
        return FILL;
    }
    if (shrink_in_system(sh, a->id)) {
        if (!is_standin(sh, a->id)) {
            add(&st->system_dropped, bytes);
            return DROP;
        }
        add(&st->system_standins, bytes);
        return EMPTY;
    }
    switch (sh->opt.arrays) {
    case HPROF_ARRAYS_ZERO:
        add(&st->arrays_zeroed, bytes);
        return ZERO;
    case HPROF_ARRAYS_REMOVE:
        add(&st->arrays_removed, bytes);
        return DROP;
    default:
        add(&st->arrays_emptied, bytes);
        return EMPTY;
    }
}

/* This chunk with the filler's bytes instead of its own, in pieces.  Chunk
 * offsets are whole elements, and the filler repeats every element (or
 * pixel: 4 bytes, a multiple of ZERO_CHUNK's divisors), so it lines up. */
static int forward_filled(struct shrink_filter *f, const struct hprof_primitive_array *a)
{
    struct hprof_primitive_array piece = *a;
    size_t done = 0;
    do {
        size_t n = a->length - done < ZERO_CHUNK / 2 ? a->length - done : ZERO_CHUNK / 2;
        piece.first = a->first + done;
        piece.length = n;
        piece.data = f->fill + (piece.first % 4);
        int rc = hprof_visit_primitive_array(next(f), &piece);
        if (rc != HPROF_OK)
            return rc;
        done += n;
    } while (done < a->length);
    return HPROF_OK;
}

/* The whole array as zeros, in chunks of whole elements. */
static int forward_zeros(struct shrink_filter *f, const struct hprof_primitive_array *a,
                         uint64_t bytes)
{
    struct hprof_primitive_array z = *a;
    z.tag = HPROF_PRIMITIVE_ARRAY_DUMP;
    z.first = 0;
    do {
        z.length = bytes - z.first < ZERO_CHUNK ? (size_t)(bytes - z.first) : ZERO_CHUNK;
        z.data = f->zeros;
        int rc = hprof_visit_primitive_array(next(f), &z);
        if (rc != HPROF_OK)
            return rc;
        z.first += z.length;
    } while (z.first < bytes);
    return HPROF_OK;
}

static int on_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct shrink_filter *f = self(v);
    if (a->first > 0)
        return a->id == f->fill_id ? forward_filled(f, a) : hprof_visit_primitive_array(next(f), a);
    uint64_t bytes = (uint64_t)a->count * type_size(a->type, f->sh->ids);
    add(&f->st->primitive_arrays_in, a->tag == HPROF_PRIMITIVE_ARRAY_NODATA ? 0 : bytes);
    int rc;
    switch (decide(f, a, bytes)) {
    case FORWARD:
        return hprof_visit_primitive_array(next(f), a);
    case FILL:
        return forward_filled(f, a);
    case EMPTY: {
        struct hprof_primitive_array empty = *a;
        empty.tag = HPROF_PRIMITIVE_ARRAY_DUMP;
        empty.count = 0;
        empty.length = 0;
        empty.data = NULL;
        rc = hprof_visit_primitive_array(next(f), &empty);
        break;
    }
    case ZERO:
        rc = forward_zeros(f, a, bytes);
        break;
    default:
        rc = HPROF_OK;
        break;
    }
    return rc == HPROF_OK ? HPROF_SKIP : rc;
}

static const struct hprof_visitor_ops filter_ops = {
    .string = on_string,
    .root = on_root,
    .class_dump = on_class_dump,
    .instance = on_instance,
    .object_array = on_object_array,
    .primitive_array = on_primitive_array,
};

struct shrink_filter *shrink_filter_new(struct shrink *sh, struct hprof_visitor *to)
{
    struct shrink_filter *f = calloc(1, sizeof *f);
    if (f == NULL || (f->zeros = calloc(1, ZERO_CHUNK)) == NULL ||
        (f->fill = malloc(ZERO_CHUNK + 8)) == NULL) {
        if (f != NULL)
            free(f->zeros);
        free(f);
        return NULL;
    }
    f->base.ops = &filter_ops;
    f->base.next = to;
    f->sh = sh;
    f->st = sh->stats;
    return f;
}

struct hprof_visitor *shrink_filter_visitor(struct shrink_filter *f)
{
    return &f->base;
}

void shrink_filter_free(struct shrink_filter *f)
{
    if (f == NULL)
        return;
    free(f->scratch);
    free(f->zeros);
    free(f->fill);
    free(f->statics);
    free(f);
}
