/*
 * classes.c - class layouts remembered between passes.
 *
 * An INSTANCE_DUMP holds its own class's field values first, then its
 * superclass's, up to java.lang.Object; finding one field therefore needs
 * the CLASS_DUMP of every class in the chain, and those may come after the
 * instances.  We keep, per class, its superclass and its own instance fields
 * (name id and type: 9 or 13 bytes in a dump become 16 here), in one pooled
 * array so a dump with 100k classes costs a few MB.  A class costs 56 bytes
 * of class_info (a dump may hold millions: every field there is as narrow
 * as it can be, and what the resolution needs only for a while shares
 * space with its result).
 */
#include <inttypes.h>
#include <stdlib.h>

#include "validate.h"

/* The memory bound of docs/design.md counts on it (on 64-bit targets). */
_Static_assert(sizeof(void *) < 8 || sizeof(struct class_info) <= 56,
               "class_info grew: a class costs more than the documented bound");

/* ---- The index: class id -> position in info[] ---------------------------
 * Open addressing with linear probing, grown at half full, as struct idmap
 * (the same hash), but each slot packs 32 more bits of the id's hash above
 * the class's position + 1, 0 being a free slot: 8 bytes a slot where an
 * idmap's id and value take 16; info[] is looked at only when those bits
 * match, so a hit costs a cache miss in the slots and one in info[], which
 * the caller reads anyway (an idmap's costs one more, in its values), and
 * a miss costs the slots alone.  The index holds exactly the classes of
 * info[], so growing re-inserts them from there, in order. */

#define INDEX_SLOTS 1024

/* Class `at` (whose id hashes to `hash`) into the first free slot from its
 * home; the caller has made room. */
static void index_place(uint64_t *slots, size_t mask, uint64_t hash, uint32_t at)
{
    size_t s = class_home_slot(hash, mask);
    while (slots[s] != 0)
        s = (s + 1) & mask;
    slots[s] = (hash >> 32) << 32 | ((uint64_t)at + 1);
}

/* Twice the slots, or the old ones untouched when memory is short. */
static int index_grow(struct classes *c)
{
    size_t n = (c->index_mask + 1) * 2;
    uint64_t *slots = n <= SIZE_MAX / sizeof *slots ? calloc(n, sizeof *slots) : NULL;
    if (slots == NULL)
        return HPROF_ERR_NOMEM;
    for (size_t i = 0; i < c->n_info; i++)
        index_place(slots, n - 1, class_id_hash(c->info[i].id), (uint32_t)i);
    free(c->index);
    c->index = slots;
    c->index_mask = n - 1;
    return HPROF_OK;
}

/* ---- Layouts ---------------------------------------------------------------- */

int classes_init(struct classes *c, unsigned id_size)
{
    *c = (struct classes){ .id_size = id_size, .index_mask = INDEX_SLOTS - 1 };
    c->index = calloc(INDEX_SLOTS, sizeof *c->index);
    return c->index != NULL ? HPROF_OK : HPROF_ERR_NOMEM;
}

void classes_free(struct classes *c)
{
    free(c->index);
    free(c->info);
    free(c->fields);
    free(c->refs);
    free(c->path);
    *c = (struct classes){ 0 };
}

/* Layout resolution, per class (class_info.layout):
 *  PARTIAL  the layout is known from this class up to class `blocked`,
 *           whose superclass is not dumped (yet), or not looked up yet:
 *           `total_bytes` holds the own bytes of the classes from this one
 *           up to that one, `up_fields` the nearest of them (above this
 *           one) with fields, so that a later walk jumps straight there.
 *           A class starts so, known up to itself;
 *  BUSY     on the walk under way (met again: a cycle);
 *  DONE     total_bytes and up_fields are final;
 *  BROKEN   the chain runs into a cycle: superclasses never change, so it
 *           stays broken.
 * A walk pushes every class it passes, then sets all of them DONE (or
 * PARTIAL, or BROKEN) on its way back down: no class is walked over twice
 * except a PARTIAL one, which is jumped over, so that resolving N classes
 * in any order costs O(N) (amortised), without recursion. */
enum { LAYOUT_PARTIAL, LAYOUT_BUSY, LAYOUT_DONE, LAYOUT_BROKEN };

static int reserve(void **array, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return HPROF_OK;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *grown = realloc(*array, n * size);
    if (grown == NULL)
        return HPROF_ERR_NOMEM;
    *array = grown;
    *cap = n;
    return HPROF_OK;
}

int classes_add(struct classes *c, const struct hprof_class_dump *cd, struct hprof_error *err)
{
    int rc = valid_object_id(cd->id, cd->offset, HPROF_CLASS_DUMP, err);
    if (rc != HPROF_OK)
        return rc;
    if (classes_find(c, cd->id) != NULL)
        return object_dumped_twice(cd->id, cd->offset, HPROF_CLASS_DUMP, err);
    if (c->n_info >= UINT32_MAX || c->n_fields + cd->n_fields > UINT32_MAX) /* 32-bit indexes */
        return hprof_error_set(err, HPROF_ERR_NOMEM,
                               "offset 0x%" PRIx64 ": CLASS_DUMP: too many classes or fields",
                               cd->offset);
    if (reserve((void **)&c->info, &c->cap_info, c->n_info + 1, sizeof *c->info) != HPROF_OK ||
        reserve((void **)&c->fields, &c->cap_fields, c->n_fields + cd->n_fields,
                sizeof *c->fields) != HPROF_OK ||
        ((c->n_info + 1) * 2 > c->index_mask + 1 && index_grow(c) != HPROF_OK))
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory for class layouts");
    /* its layout known from itself up to itself: its own fields */
    uint32_t at = (uint32_t)c->n_info++;
    struct class_info *ci = &c->info[at];
    index_place(c->index, c->index_mask, class_id_hash(cd->id), at);
    *ci = (struct class_info){
        .id = cd->id, .offset = cd->offset, .super_id = cd->super_id,
        .first_field = (uint32_t)c->n_fields, .n_fields = cd->n_fields,
        .blocked = at, .layout = LAYOUT_PARTIAL,
    };
    for (unsigned i = 0; i < cd->n_fields; i++) {
        c->fields[c->n_fields++] = (struct class_field){ cd->fields[i].name_id, cd->fields[i].type };
        ci->total_bytes += type_size(cd->fields[i].type, c->id_size);
    }
    return HPROF_OK;
}

static uint32_t index_of(const struct classes *c, const struct class_info *k)
{
    return (uint32_t)(k - c->info);
}

/* 1 + index of the nearest class with fields among `k` and its chain. */
static uint32_t fields_at_or_above(const struct classes *c, const struct class_info *k)
{
    return k == NULL ? 0 : k->n_fields ? index_of(c, k) + 1 : k->up_fields;
}

static int resolve_failed(struct classes *c, size_t n, const struct class_info *ci, int cycle,
                          uint32_t stop, struct hprof_error *err)
{
    for (size_t i = n; i-- > 0;) {
        struct class_info *x = &c->info[c->path[i]];
        if (cycle) {
            x->layout = LAYOUT_BROKEN;
            continue;
        }
        if (i + 1 < n) { /* x's span continues into the one above it */
            const struct class_info *above = &c->info[c->path[i + 1]];
            x->total_bytes += above->total_bytes;
            if (x->up_fields == 0)
                x->up_fields = fields_at_or_above(c, above);
        }
        x->blocked = stop;
        x->layout = LAYOUT_PARTIAL;
    }
    if (cycle)
        return hprof_error_set(err, HPROF_ERR_FORMAT,
                               "offset 0x%" PRIx64 ": CLASS_DUMP: superclass chain of "
                               "class 0x%" PRIx64 " has a cycle", ci->offset, ci->id);
    const struct class_info *k = &c->info[stop];
    return hprof_error_set(err, HPROF_ERR_FORMAT,
                           "offset 0x%" PRIx64 ": CLASS_DUMP: class 0x%" PRIx64
                           " has superclass 0x%" PRIx64 " which is not dumped", k->offset, k->id,
                           k->super_id);
}

int classes_finish_layout(struct classes *c, struct class_info *ci, struct hprof_error *err)
{
    if (ci->layout == LAYOUT_DONE)
        return HPROF_OK;
    size_t n = 0;
    const struct class_info *top = NULL; /* the resolved class above the path */
    for (struct class_info *k = ci;;) {
        if (k->layout == LAYOUT_DONE) {
            top = k;
            break;
        }
        if (k->layout == LAYOUT_BUSY || k->layout == LAYOUT_BROKEN)
            return resolve_failed(c, n, ci, 1, 0, err);
        if (reserve((void **)&c->path, &c->cap_path, n + 1, sizeof *c->path) != HPROF_OK) {
            for (size_t i = 0; i < n; i++) /* as they were: nothing else changed yet */
                c->info[c->path[i]].layout = LAYOUT_PARTIAL;
            return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory for class layouts");
        }
        /* PARTIAL: jump to the class where its known chain stops */
        k->layout = LAYOUT_BUSY;
        c->path[n++] = index_of(c, k);
        const struct class_info *end = &c->info[k->blocked];
        if (end->super_id == 0)
            break;
        struct class_info *up = classes_find(c, end->super_id);
        if (up == NULL)
            return resolve_failed(c, n, ci, 0, k->blocked, err);
        k = up;
    }
    for (size_t i = n; i-- > 0;) {
        struct class_info *x = &c->info[c->path[i]];
        const struct class_info *above = i + 1 < n ? &c->info[c->path[i + 1]] : top;
        x->total_bytes += above != NULL ? above->total_bytes : 0;
        if (x->up_fields == 0)
            x->up_fields = fields_at_or_above(c, above);
        x->layout = LAYOUT_DONE;
    }
    return HPROF_OK;
}

int classes_resolve(struct classes *c, struct class_info *ci, struct hprof_error *err)
{
    if (ci->resolved)
        return HPROF_OK;
    int rc = classes_finish_layout(c, ci, err);
    ci->resolved = rc == HPROF_OK;
    return rc;
}

/* The next class up from `k` that can hold fields: once k's layout is
 * known, the nearest superclass with fields (classes without any are
 * jumped over, so a walk costs no more than the fields it passes);
 * before, the superclass (or NULL when not dumped). */
static inline const struct class_info *next_up(const struct classes *c,
                                               const struct class_info *k)
{
    if (k->layout == LAYOUT_DONE)
        return k->up_fields ? &c->info[k->up_fields - 1] : NULL;
    return k->super_id ? classes_find(c, k->super_id) : NULL;
}

struct class_info *classes_up(const struct classes *c, const struct class_info *k)
{
    return (struct class_info *)next_up(c, k);
}

/* Reference fields listed for at most this many fields in all (12-16 bytes
 * each): a hostile file can chain classes so that the lists grow as the
 * square of its classes; past it, instances are walked field by field. */
#define MAX_LISTED_REFS (1u << 20)

/* @return 0, or -1 when the lists are full (or memory is short). */
static int list_ref(struct classes *c, uint32_t at, uint64_t name_id)
{
    if (c->n_refs >= MAX_LISTED_REFS ||
        reserve((void **)&c->refs, &c->cap_refs, c->n_refs + 1, sizeof *c->refs) != HPROF_OK)
        return -1;
    c->refs[c->n_refs++] = (struct class_ref){ at, name_id };
    return 0;
}

/* The walk up the chain that classes_each_ref() would do, calling fn for
 * each reference field, or (fn NULL) listing it in c->refs. */
static int walk_chain(struct classes *c, const struct class_info *ci, const uint8_t *values,
                      uint32_t length, field_ref_fn fn, void *ctx)
{
    uint32_t at = 0;
    size_t steps = 0;
    for (const struct class_info *k = ci; k != NULL && steps <= c->n_info; steps++) {
        /* `fields` is NULL until some class has a field */
        const struct class_field *f = k->n_fields ? c->fields + k->first_field : NULL;
        for (unsigned i = 0; i < k->n_fields; i++) {
            unsigned size = type_size(f[i].type, c->id_size);
            if (at + size > length)
                return 0;
            if (f[i].type == HPROF_TYPE_OBJECT) {
                int rc = fn != NULL ? fn(ctx, at, f[i].name_id, get_id(values + at, c->id_size))
                                    : list_ref(c, at, f[i].name_id);
                if (rc != 0)
                    return rc;
            }
            at += size;
        }
        k = next_up(c, k);
    }
    return 0;
}

/* List ci's reference fields once (its layout is resolved, so its chain
 * ends); on failure nothing is listed and walks stay field by field. */
static void list_refs(struct classes *c, struct class_info *ci)
{
    size_t first = c->n_refs;
    ci->refs_listed = REFS_WALKED;
    if (ci->total_bytes > UINT32_MAX ||
        walk_chain(c, ci, NULL, (uint32_t)ci->total_bytes, NULL, NULL) != 0) {
        c->n_refs = first;
        return;
    }
    ci->first_ref = (uint32_t)first;
    ci->n_refs = (uint32_t)(c->n_refs - first);
    ci->refs_listed = REFS_LISTED;
}

int classes_list_refs(struct classes *c, struct class_info *ci)
{
    if (ci->refs_listed == REFS_UNLISTED && ci->layout == LAYOUT_DONE)
        list_refs(c, ci);
    return ci->refs_listed == REFS_LISTED;
}

int classes_each_ref(struct classes *c, struct class_info *ci, const uint8_t *values,
                     uint32_t length, field_ref_fn fn, void *ctx)
{
    const struct class_ref *ref;
    uint32_t n;
    if (!classes_listed_refs(c, ci, &ref, &n))
        return walk_chain(c, ci, values, length, fn, ctx);
    for (uint32_t i = 0; i < n; i++) {
        if (ref[i].offset + c->id_size > length)
            return 0;
        int rc = fn(ctx, ref[i].offset, ref[i].name_id, get_id(values + ref[i].offset, c->id_size));
        if (rc != 0)
            return rc;
    }
    return 0;
}

int64_t classes_field_offset(const struct classes *c, const struct class_info *ci,
                             field_match_fn match, void *ctx, uint8_t type)
{
    uint64_t at = 0;
    size_t steps = 0;
    for (const struct class_info *k = ci; k != NULL && steps <= c->n_info; steps++) {
        const struct class_field *f = k->n_fields ? c->fields + k->first_field : NULL;
        for (unsigned i = 0; i < k->n_fields; i++) {
            if (f[i].type == type && match(ctx, f[i].name_id))
                return (int64_t)at;
            at += type_size(f[i].type, c->id_size);
        }
        k = next_up(c, k);
    }
    return -1;
}

int classes_check_instance(struct classes *c, const struct hprof_instance *o,
                           struct class_info **out, struct hprof_error *err)
{
    struct class_info *ci = classes_find(c, o->class_id);
    if (ci == NULL)
        return hprof_error_set(err, HPROF_ERR_FORMAT,
                               "offset 0x%" PRIx64 ": INSTANCE_DUMP: object 0x%" PRIx64
                               " has class 0x%" PRIx64 " which is not dumped", o->offset, o->id,
                               o->class_id);
    int rc = classes_resolve(c, ci, err);
    if (rc != HPROF_OK)
        return rc;
    if (ci->total_bytes != o->length)
        return hprof_error_set(err, HPROF_ERR_FORMAT,
                               "offset 0x%" PRIx64 ": INSTANCE_DUMP: object 0x%" PRIx64
                               " has %" PRIu32 " field bytes, its class layout needs %" PRIu64,
                               o->offset, o->id, o->length, ci->total_bytes);
    *out = ci;
    return HPROF_OK;
}

int classes_resolve_all(struct classes *c, struct hprof_error *err)
{
    for (size_t i = 0; i < c->n_info; i++) {
        int rc = classes_resolve(c, &c->info[i], err);
        if (rc != HPROF_OK)
            return rc;
    }
    return HPROF_OK;
}
