/*
 * deobfuscate.h - the --mapping rewrite: an obfuscated dump read and
 * written with the names a ProGuard/R8 mapping restores.  It lives in
 * src/core because the shrink and hprof-info both read dumps through it
 * and it is a visitor (it calls the visitor chain's functions).
 *
 *   pass 0    (its own pass over the metadata, only with a mapping) the
 *             text of every STRING that may be an obfuscated name, each
 *             LOAD_CLASS, each class dump's field names and each
 *             STACK_FRAME's method: what each restores to.  At its end,
 *             one new STRING id per distinct restored name, above every
 *             id of the dump, so that a name used two ways (a field `a` in
 *             two classes) is never rewritten in place.
 *   filter    (in front of every later pass, and first in the write pass)
 *             LOAD_CLASS, CLASS_DUMP field names and STACK_FRAME methods
 *             name the new ids; the new STRING records come just before
 *             the first STRING of the dump.  Every later visitor - the
 *             rewrites' collect passes, the names in use, the writer -
 *             sees the restored names and nothing else changes, so String,
 *             Bitmap and the keep rules' classes are found by their
 *             original names.
 *
 * The plan is read-only after pass 0; a filter's state is its own (one per
 * chain).  Memory: the texts of the STRINGs that may be obfuscated names,
 * the restored names, 16 bytes per class and per renamed use.
 */
#ifndef HPROF_DEOBFUSCATE_H
#define HPROF_DEOBFUSCATE_H

#include "hprof_private.h"
#include "mapping.h"

struct deobf_rename {
    uint64_t old_id;        /* a field's name in the input */
    uint32_t k;             /* its new name: STRING id base + k */
};

/* Bits for a class's count of renamed fields: statics and instance fields
 * are two u2 counts, 2 x 65535 at most. */
#define RENAME_COUNT_BITS 17

struct deobf_plan {
    uint64_t base;                  /* new STRING ids are base + k */
    struct idmap class_names;       /* obfuscated class name's id -> k + 1 */
    struct idmap field_classes;     /* class id -> start << RENAME_COUNT_BITS | count
                                       in renames, that class's, sorted by old_id */
    struct deobf_rename *renames;
    size_t n_renames, cap_renames;
    struct idmap frames;            /* STACK_FRAME id -> k + 1 */
    uint32_t *string_at;            /* k -> offset of "u32 length, bytes" in text */
    size_t n_strings, cap_strings;
    char *text;
    size_t text_len, text_cap;
    uint64_t classes, fields, methods; /* uses restored */
};

int deobf_plan_init(struct deobf_plan *p);
/* The text of restored name `id` (a new STRING id), or NULL. */
const char *deobf_plan_text(const struct deobf_plan *p, uint64_t id, uint32_t *len);
void deobf_plan_free(struct deobf_plan *p);

/* Pass 0. */
struct deobf_collect;
int deobf_collect_new(struct deobf_collect **out, const struct hprof_mapping *m,
                      struct deobf_plan *plan, struct hprof_error *err);
struct hprof_visitor *deobf_collect_visitor(struct deobf_collect *c);
/* After pass 0: the new ids.  @return HPROF_OK, or a format error when
 * the dump's ids leave no room for them. */
int deobf_collect_finish(struct deobf_collect *c);
void deobf_collect_free(struct deobf_collect *c);

/* The filter, over a finished plan; `base.next` is set by the caller. */
struct deobf_filter {
    struct hprof_visitor base;
    const struct deobf_plan *plan;
    unsigned ids;
    int emitted;                    /* the new STRING records are out */
    struct hprof_field *fields;     /* scratch: a class dump's renamed names */
    struct hprof_static_field *statics;
    uint8_t frame[64];              /* scratch: a STACK_FRAME's body */
};

void deobf_filter_init(struct deobf_filter *f, const struct deobf_plan *plan, unsigned ids);
void deobf_filter_release(struct deobf_filter *f);

#endif
