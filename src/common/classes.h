/*
 * classes.h - class layouts (classes.c): each class's superclass and
 * instance fields, and the walks over an instance's fields.
 */
#ifndef HPROF_CLASSES_H
#define HPROF_CLASSES_H

#include <stdint.h>
#include <stddef.h>

#include "hprof.h"

/* ---- Class layouts -------------------------------------------------------
 * What is needed to find a field in an instance: each class's superclass and
 * own instance fields.  Filled from CLASS_DUMPs in one pass, used in later
 * ones (class dumps may come after instances of the class). */

struct class_field {
    uint64_t name_id;
    uint8_t type;
};

/* One per class, so packed: 56 bytes on LP64 (a dump may hold millions). */
struct class_info {
    uint64_t id;
    uint64_t offset;            /* of its CLASS_DUMP, for messages */
    uint64_t super_id;
    /* Field bytes of an instance, all superclasses' included, once the
     * layout is resolved; until then classes.c's running sum over the
     * classes from this one up to `blocked` (see classes_resolve()). */
    uint64_t total_bytes;
    uint32_t first_field;       /* index into classes.fields */
    /* classes.c's memo of the chain above (see classes_resolve()): */
    uint32_t up_fields;         /* 1 + index of the nearest superclass with fields, or 0 */
    uint32_t blocked;           /* index of the class where the known chain stops */
    uint32_t first_ref, n_refs; /* its reference fields in classes.refs, once listed */
    uint16_t n_fields;
    uint8_t layout;             /* LAYOUT_PARTIAL, _BUSY, _DONE, _BROKEN */
    unsigned resolved : 1;      /* classes_resolve(this class) succeeded */
    unsigned refs_listed : 2;   /* REFS_UNLISTED, REFS_LISTED or REFS_WALKED */
};

/* class_info.refs_listed: whether its reference fields are listed in
 * classes.refs (once its layout is DONE), or cannot be (walk the chain). */
enum { REFS_UNLISTED, REFS_LISTED, REFS_WALKED };

/* A reference field of an instance, superclasses' included, by offset. */
struct class_ref {
    uint32_t offset;
    uint64_t name_id;
};

struct classes {
    /* class id -> position in `info`: open addressing, at most half full,
     * a slot holding 32 bits of the id's hash and the position + 1 (0: a
     * free slot), the id itself being in `info` (classes.c) */
    uint64_t *index;
    size_t index_mask;          /* slots - 1; slots is a power of two */
    struct class_info *info;
    size_t n_info, cap_info;
    struct class_field *fields;
    size_t n_fields, cap_fields;
    struct class_ref *refs;     /* per class with instances, listed once */
    size_t n_refs, cap_refs;
    uint32_t *path;             /* classes_resolve()'s walk, reused */
    size_t cap_path;
    unsigned id_size;
};

int classes_init(struct classes *c, unsigned id_size);
void classes_free(struct classes *c);
/* Record a class dump.  A second dump of the same id is an error. */
int classes_add(struct classes *c, const struct hprof_class_dump *cd, struct hprof_error *err);

/* The index's hash (idmap_get()'s) and the slot a probe starts from. */
static inline uint64_t class_id_hash(uint64_t id)
{
    return id * 0x9E3779B97F4A7C15ull;
}

static inline size_t class_home_slot(uint64_t hash, size_t mask)
{
    return (size_t)(hash >> 32 ^ hash) & mask;
}

/* The class of id `class_id`, or NULL.  Inline: it runs for nearly every
 * object of every pass. */
static inline struct class_info *classes_find(const struct classes *c, uint64_t class_id)
{
    if (c->n_info == 0) /* also after classes_free() */
        return NULL;
    uint64_t hash = class_id_hash(class_id);
    uint32_t bits = (uint32_t)(hash >> 32);
    for (size_t s = class_home_slot(hash, c->index_mask); c->index[s] != 0;
         s = (s + 1) & c->index_mask) {
        uint64_t slot = c->index[s];
        if ((uint32_t)(slot >> 32) == bits && c->info[(uint32_t)slot - 1].id == class_id)
            return &c->info[(uint32_t)slot - 1];
    }
    return NULL;
}
/* Total field bytes of an instance of `ci`, superclasses included; checks
 * that the chain ends and has no cycle.  Each class's chain is walked once
 * in all (what a walk learns is kept for every class it passes), so
 * resolving every class costs time linear in the classes, in any order.
 * A missing superclass may be dumped later: the walk is then taken up again
 * from where it stopped.  @return HPROF_OK or a format error (and the
 * class is `resolved` from its first success on). */
int classes_resolve(struct classes *c, struct class_info *ci, struct hprof_error *err);
/* classes_resolve() without the `resolved` mark: makes ci's layout final
 * (total_bytes, and classes_up() jumping over classes without fields).
 * A class up the chain of a resolved one may still hold a running sum,
 * since a walk jumps over the middle of the spans learnt while the chain
 * was incomplete: who reads such a class's total_bytes finishes its layout
 * first, and leaves `resolved` to the eager pass 1, which marks with it
 * the classes whose kind and exempt fields it has worked out. */
int classes_finish_layout(struct classes *c, struct class_info *ci, struct hprof_error *err);

/* The next class up from `k` whose fields an instance holds: once k's
 * layout is resolved, the nearest superclass with fields (those without
 * any are jumped over, so that a walk over an instance's fields costs what
 * its fields cost, however deep the chain); before, the superclass, or
 * NULL when it is not dumped.  Walk with `k = classes_up(c, k)` where
 * `k = classes_find(c, k->super_id)` would walk every class of the chain. */
struct class_info *classes_up(const struct classes *c, const struct class_info *k);

/* Resolve every class: rejects superclass cycles and missing superclasses,
 * after which walks up any chain are bounded by its length. */
int classes_resolve_all(struct classes *c, struct hprof_error *err);

/* The class of instance `o`, checked: dumped, and `o` holds exactly the
 * field bytes its layout needs.  @return HPROF_OK and *out, or an error
 * naming the instance's offset. */
int classes_check_instance(struct classes *c, const struct hprof_instance *o,
                           struct class_info **out, struct hprof_error *err);

/* Calls fn(ctx, slot_offset, ref) for every object-typed field of an
 * instance of class `ci` (whose values are `values`, `length` bytes, already
 * checked against the layout), walking up the superclass chain.  A non-zero
 * return from fn stops the walk and is returned. */
typedef int (*field_ref_fn)(void *ctx, uint32_t slot_offset, uint64_t name_id, uint64_t ref);
int classes_each_ref(struct classes *c, struct class_info *ci,
                     const uint8_t *values, uint32_t length, field_ref_fn fn, void *ctx);

/* List ci's reference fields if they are not yet and can be.  @return 1
 * when they are listed. */
int classes_list_refs(struct classes *c, struct class_info *ci);

/* The reference fields of instances of `ci` (superclasses' included), for a
 * caller that walks many instances without a call per field: listed once
 * ci's layout is done.  @return 1 with *refs (NULL when *n is 0) and *n,
 * or 0 when they are not listed, and walks go through classes_each_ref().
 * Inline: it runs for every instance walked. */
static inline int classes_listed_refs(struct classes *c, struct class_info *ci,
                                      const struct class_ref **refs, uint32_t *n)
{
    if (ci->refs_listed != REFS_LISTED && !classes_list_refs(c, ci))
        return 0;
    *n = ci->n_refs;
    *refs = ci->n_refs > 0 ? c->refs + ci->first_ref : NULL; /* c->refs may still be NULL */
    return 1;
}

/* Byte offset in instances of `ci` of the first field of type `type` whose
 * name id satisfies match(ctx, name_id), searching the class, then its
 * superclasses.  (A name is matched by predicate because a dump may hold
 * several STRING records with the same text.)  @return the offset, or -1. */
typedef int (*field_match_fn)(void *ctx, uint64_t name_id);
int64_t classes_field_offset(const struct classes *c, const struct class_info *ci,
                             field_match_fn match, void *ctx, uint8_t type);

#endif
