/*
 * model.h - what every rewrite needs to know of a dump before it decides
 * anything: the names the shrink looks for (STRING), the class of each
 * name (LOAD_CLASS), every class layout (CLASS_DUMP), and which classes
 * are String, Bitmap, Bitmap$DumpData or byte[][] with where their fields
 * sit.  Built in the first pass; read-only from the write pass on.
 */
#ifndef HPROF_REWRITE_MODEL_H
#define HPROF_REWRITE_MODEL_H

#include "hprof_private.h"
#include "names.h"

/* Where a class keeps the fields the rewrites read (-1: none). */
struct kind_layout {
    uint64_t class_id;
    int kind;               /* NAME_CLASS_* */
    /* String: value, coder, offset, count; Bitmap: mBuffer; DumpData:
     * buffers, natives.  -1: none. */
    int64_t field[4];
};

struct dump_model {
    unsigned ids;
    struct idmap names;         /* STRING id -> enum known_name (the shrink's) */
    unsigned names_seen;        /* bits 1 << NAME_* */
    struct idmap class_names;   /* class id -> STRING id (LOAD_CLASS) */
    struct classes classes;
    struct idmap kinds;         /* class id -> index into `layouts` */
    struct kind_layout *layouts;
    size_t n_layouts;
};

int model_init(struct dump_model *m, unsigned ids);
void model_free(struct dump_model *m);

/* A STRING record: remembered when it names something the shrink looks
 * for.  @return its code (NAME_NONE for most), or -1 out of memory.
 * Inline: every STRING record of pass 1 comes here, and most are no name
 * of ours at known_name()'s first test. */
static inline int model_note_string(struct dump_model *m, const struct hprof_string *s)
{
    int code = known_name(s->utf8, s->length);
    if (code > NAME_CLASS_DEVICE)
        code = NAME_NONE; /* hprof-info's names, not the shrink's */
    m->names_seen |= 1u << code;
    if (code != NAME_NONE && idmap_put(&m->names, s->id, (uint64_t)code) != HPROF_OK)
        return -1;
    return code;
}
int model_note_load_class(struct dump_model *m, const struct hprof_load_class *c);
/* The code (NAME_*) of the name of class `class_id`: NAME_NONE for most. */
static inline int model_class_name_code(const struct dump_model *m, uint64_t class_id)
{
    uint64_t name, code;
    if (!idmap_get(&m->class_names, class_id, &name) || !idmap_get(&m->names, name, &code))
        return NAME_NONE;
    return (int)code;
}

/* The kind of class `ci`, whose layout is resolved, and its field offsets. */
int model_resolve_kind(struct dump_model *m, const struct class_info *ci, struct hprof_error *err);
/* The same for every class (after pass 1). */
int model_resolve_kinds(struct dump_model *m, struct hprof_error *err);
/* Forget every kind, to resolve them again. */
int model_forget_kinds(struct dump_model *m, struct hprof_error *err);

/* The kind of class `class_id` (NAME_CLASS_*), its layout in *out. */
static inline int model_kind(const struct dump_model *m, uint64_t class_id,
                             const struct kind_layout **out)
{
    uint64_t at;
    if (!idmap_get(&m->kinds, class_id, &at))
        return NAME_NONE;
    *out = &m->layouts[at];
    return m->layouts[at].kind;
}

/* How many elements of its value String `o` (of layout `k`) holds from
 * the first: all (UINT64_MAX) without offset and count fields, as in
 * every String since JDK 7u6 and in ART's; a Java 6 or Dalvik substring
 * may hold part of a shared array, and none of its first elements (0)
 * when its offset is past them. */
static inline uint64_t model_string_covers(const struct kind_layout *k,
                                           const struct hprof_instance *o)
{
    int64_t offset = k->field[2], count = k->field[3];
    if (offset >= 0 && (uint64_t)offset + 4 <= o->length && get_u4(o->values + offset) != 0)
        return 0;
    if (count < 0 || (uint64_t)count + 4 > o->length)
        return UINT64_MAX;
    return get_u4(o->values + count);
}

/* The ID at byte `at` of an instance's values, or 0 past its end. */
static inline uint64_t model_field_id(unsigned ids, const struct hprof_instance *o, int64_t at)
{
    if (at < 0 || (uint64_t)at + ids > o->length)
        return 0;
    return get_id(o->values + at, ids);
}

#endif
