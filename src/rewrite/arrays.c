/*
 * arrays.c - the arrays rewrite, last in front of the writer: primitive
 * arrays that nothing keeps lose their contents as --arrays says: empty
 * (zero-length array, same id and type), zero (same length, zeros) or
 * remove (no record).  PRIMITIVE_ARRAY_NODATA becomes a plain
 * PRIMITIVE_ARRAY_DUMP, since most readers reject it.  Its filter also
 * counts what leaves, as the census filter, first in the chain, counts
 * what comes in.
 *
 * Every decision that drops the rest of an array is taken on its first
 * chunk (and answered with HPROF_SKIP), so later chunks of an array that
 * reach a filter are always forwarded.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "filter.h"
#include "visitor_private.h"

#define ZERO_CHUNK (1u << 20)
/* The most contents bytes a zeroed array may have: it goes out in a heap
 * segment of its own, whose u4 length also counts the array's sub-record
 * header and, in an Android dump, the HEAP_DUMP_INFO it repeats. */
#define ZEROED_MAX ((uint64_t)UINT32_MAX - 64)

uint8_t *filter_scratch(uint8_t **buf, size_t *cap, size_t n, struct hprof_error *err)
{
    if (n > *cap || *buf == NULL) {
        if (n == 0)
            n = 1;
        uint8_t *grown = realloc(*buf, n);
        if (grown == NULL) {
            hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
            return NULL;
        }
        *buf = grown;
        *cap = n;
    }
    return *buf;
}

static struct rewrite_filter *self(struct hprof_visitor *v)
{
    return (struct rewrite_filter *)v;
}

static inline uint64_t array_bytes(const struct rewrite_filter *f, const struct hprof_primitive_array *a)
{
    return (uint64_t)a->count * type_size(a->type, f->plan->ids);
}

/* ---- Census: what comes in ----------------------------------------------------- */

static int census_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    count_add(&self(v)->st->strings, s->length);
    return forward_string((struct rewrite_filter *)v, s);
}

static int census_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    self(v)->st->class_dumps.count++;
    return forward_class_dump((struct rewrite_filter *)v, c);
}

static int census_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    count_add(&self(v)->st->instances_in, o->length);
    return forward_instance((struct rewrite_filter *)v, o);
}

static int census_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct rewrite_filter *f = self(v);
    if (a->first == 0)
        count_add(&f->st->object_arrays_in, (uint64_t)a->count * f->plan->ids);
    return forward_object_array((struct rewrite_filter *)v, a);
}

static int census_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct rewrite_filter *f = self(v);
    if (a->first == 0)
        count_add(&f->st->primitive_arrays_in,
                  a->tag == HPROF_PRIMITIVE_ARRAY_NODATA ? 0 : array_bytes(f, a));
    return forward_primitive_array((struct rewrite_filter *)v, a);
}

static const struct hprof_visitor_ops census_ops = {
    .string = census_string,
    .class_dump = census_class_dump,
    .instance = census_instance,
    .object_array = census_object_array,
    .primitive_array = census_primitive_array,
};

static void free_filter(struct rewrite_filter *f)
{
    free(f);
}

struct rewrite_filter *census_filter_new(const struct filter_args *a)
{
    struct rewrite_filter *f = calloc(1, sizeof *f);
    if (f != NULL)
        filter_init(f, &census_ops, a, free_filter);
    return f;
}

/* ---- Arrays: what goes out ------------------------------------------------------- */

struct arrays_filter {
    struct rewrite_filter f;
    uint8_t *zeros;         /* ZERO_CHUNK zero bytes */
};

static int out_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    count_add(&self(v)->st->instances_out, o->length);
    return forward_instance((struct rewrite_filter *)v, o);
}

static int out_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct rewrite_filter *f = self(v);
    if (a->first == 0)
        count_add(&f->st->object_arrays_out, (uint64_t)a->count * f->plan->ids);
    return forward_object_array((struct rewrite_filter *)v, a);
}

/* The whole array as zeros, in chunks of whole elements. */
static int forward_zeros(struct arrays_filter *z, const struct hprof_primitive_array *a,
                         uint64_t bytes)
{
    struct hprof_primitive_array zeroed = *a;
    zeroed.tag = HPROF_PRIMITIVE_ARRAY_DUMP;
    zeroed.first = 0;
    do {
        zeroed.length = bytes - zeroed.first < ZERO_CHUNK ? (size_t)(bytes - zeroed.first)
                                                          : ZERO_CHUNK;
        zeroed.data = z->zeros;
        int rc = forward_primitive_array(&z->f, &zeroed);
        if (rc != HPROF_OK)
            return rc;
        zeroed.first += zeroed.length;
    } while (zeroed.first < bytes);
    return HPROF_OK;
}

static int forward_empty(struct rewrite_filter *f, const struct hprof_primitive_array *a)
{
    struct hprof_primitive_array empty = primitive_array_emptied(a);
    return forward_primitive_array(f, &empty);
}

/* An array nothing keeps, as --arrays says.  A merged Bitmap buffer that
 * stays (another object names it: its Bitmaps took the twin) is one of
 * bitmap_duplicates already: not counted again, so that the fates of the
 * arrays add up to the arrays read. */
static int apply_mode(struct arrays_filter *z, const struct hprof_primitive_array *a,
                      uint64_t bytes)
{
    struct rewrite_filter *f = &z->f;
    const struct idmap *merged = &f->plan->bitmaps.remap;
    enum hprof_arrays_mode mode = f->plan->arrays;
    /* An array read from a segment fits one; a NODATA record has no
     * contents, and its count may give more zeros than any segment holds:
     * the input's fault, said with its place (not the writer's, later) */
    if (mode == HPROF_ARRAYS_ZERO && bytes > ZEROED_MAX)
        return hprof_error_set(f->err, HPROF_ERR_FORMAT,
                               "offset 0x%" PRIx64 ": %s: %" PRIu32 " %s elements (%" PRIu64
                               " bytes) do not fit a heap segment once zeroed; --arrays=empty "
                               "writes the array empty",
                               a->offset, hprof_subtag_name(a->tag), a->count,
                               hprof_type_name(a->type), bytes);
    if (merged->count == 0 || !idmap_has(merged, a->id))
        count_add(mode == HPROF_ARRAYS_ZERO     ? &f->st->arrays_zeroed
                  : mode == HPROF_ARRAYS_REMOVE ? &f->st->arrays_removed
                                                : &f->st->arrays_emptied,
                  bytes);
    int rc = HPROF_OK;
    if (mode == HPROF_ARRAYS_ZERO)
        rc = forward_zeros(z, a, bytes);
    else if (mode != HPROF_ARRAYS_REMOVE)
        rc = forward_empty(f, a);
    return rc == HPROF_OK ? HPROF_SKIP : rc;
}

static int out_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct arrays_filter *z = (struct arrays_filter *)v;
    struct rewrite_filter *f = &z->f;
    if (a->first > 0)
        return forward_primitive_array((struct rewrite_filter *)v, a);
    uint64_t bytes = array_bytes(f, a);
    switch (plan_array_keep(f->plan, f->cursor, a)) {
    case ARRAY_DUPLICATE: /* the bitmaps filter drops these */
        return HPROF_SKIP;
    case ARRAY_STRING_VALUE:
    case ARRAY_STRING_UTF16:
        count_add(&f->st->string_values_kept, bytes);
        break;
    case ARRAY_NATIVES:
        count_add(&f->st->other_kept, bytes);
        break;
    case ARRAY_BITMAP:
        count_add(&f->st->bitmap_buffers_kept, bytes);
        break;
    case ARRAY_NOT_KEPT:
        if (plan_in_system(f->plan, a->id) && f->plan->arrays != HPROF_ARRAYS_ZERO)
            break; /* a stand-in, emptied by the system-heap filter */
        return apply_mode(z, a, bytes);
    }
    return forward_primitive_array((struct rewrite_filter *)v, a);
}

static const struct hprof_visitor_ops arrays_ops = {
    .instance = out_instance,
    .object_array = out_object_array,
    .primitive_array = out_primitive_array,
};

static void arrays_filter_free(struct rewrite_filter *f)
{
    free(((struct arrays_filter *)f)->zeros);
    free(f);
}

struct rewrite_filter *arrays_filter_new(const struct filter_args *a)
{
    struct arrays_filter *z = calloc(1, sizeof *z);
    if (z == NULL)
        return NULL;
    filter_init(&z->f, &arrays_ops, a, arrays_filter_free);
    /* only zero mode writes zeros */
    if (a->plan->arrays == HPROF_ARRAYS_ZERO && (z->zeros = calloc(1, ZERO_CHUNK)) == NULL) {
        free(z);
        return NULL;
    }
    return &z->f;
}
