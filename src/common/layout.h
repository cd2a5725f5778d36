/*
 * layout.h - the byte layout of heap sub-records, described once for the
 * reader, the writer and the passes that read a record back by offset.
 * Each sub-record starts with its tag (one byte); the "head" is what
 * follows the tag up to the variable part.
 */
#ifndef HPROF_LAYOUT_H
#define HPROF_LAYOUT_H

#include "hprof_private.h"

/* INSTANCE_DUMP: id, stack serial (u4), class id, field bytes (u4), then
 * the field values. */
static inline size_t instance_head_size(unsigned ids)
{
    return 2 * (size_t)ids + 8;
}

/* Everything but `values` and `offset`. */
static inline void instance_head_get(const uint8_t *p, unsigned ids, struct hprof_instance *o)
{
    o->id = get_id(p, ids);
    o->stack_serial = get_u4(p + ids);
    o->class_id = get_id(p + ids + 4, ids);
    o->length = get_u4(p + 2 * ids + 4);
}

static inline uint8_t *instance_head_put(uint8_t *p, const struct hprof_instance *o, unsigned ids)
{
    p = put_id(p, o->id, ids);
    p = put_u4(p, o->stack_serial);
    p = put_id(p, o->class_id, ids);
    return put_u4(p, o->length);
}

/* CLASS_DUMP: id, stack serial (u4), super, loader, signers, protection
 * domain, two reserved ids, instance size (u4), then the constant pool
 * (u2 count; u2 index, u1 type, value), the statics (u2 count; name id, u1
 * type, value) and the instance fields (u2 count; name id, u1 type).  The
 * head is up to and including the constant pool's count. */
static inline size_t class_dump_head_size(unsigned ids)
{
    return 7 * (size_t)ids + 4 + 4 + 2;
}

static inline void class_dump_head_get(const uint8_t *p, unsigned ids, struct hprof_class_dump *c)
{
    c->id = get_id(p, ids);
    c->stack_serial = get_u4(p + ids);
    p += ids + 4;
    c->super_id = get_id(p, ids);
    c->loader_id = get_id(p + ids, ids);
    c->signers_id = get_id(p + 2 * ids, ids);
    c->protection_domain_id = get_id(p + 3 * ids, ids);
    c->reserved1 = get_id(p + 4 * ids, ids);
    c->reserved2 = get_id(p + 5 * ids, ids);
    p += 6 * ids;
    c->instance_size = get_u4(p);
    c->n_constants = get_u2(p + 4);
}

static inline uint8_t *class_dump_head_put(uint8_t *p, const struct hprof_class_dump *c,
                                           unsigned ids)
{
    p = put_id(p, c->id, ids);
    p = put_u4(p, c->stack_serial);
    p = put_id(p, c->super_id, ids);
    p = put_id(p, c->loader_id, ids);
    p = put_id(p, c->signers_id, ids);
    p = put_id(p, c->protection_domain_id, ids);
    p = put_id(p, c->reserved1, ids);
    p = put_id(p, c->reserved2, ids);
    p = put_u4(p, c->instance_size);
    return put_u2(p, c->n_constants);
}

/* The whole CLASS_DUMP sub-record, tag included. */
static inline size_t class_dump_size(const struct hprof_class_dump *c, unsigned ids)
{
    size_t n = 1 + class_dump_head_size(ids) + 2 + 2;
    for (unsigned i = 0; i < c->n_constants; i++)
        n += 3 + type_size(c->constants[i].type, ids);
    for (unsigned i = 0; i < c->n_statics; i++)
        n += ids + 1 + type_size(c->statics[i].type, ids);
    return n + (size_t)c->n_fields * (ids + 1);
}

/* OBJECT_ARRAY_DUMP: id, stack serial (u4), count (u4), array class id,
 * then `count` ids. */
static inline size_t object_array_head_size(unsigned ids)
{
    return 2 * (size_t)ids + 8;
}

static inline void object_array_head_get(const uint8_t *p, unsigned ids,
                                         struct hprof_object_array *a)
{
    a->id = get_id(p, ids);
    a->stack_serial = get_u4(p + ids);
    a->count = get_u4(p + ids + 4);
    a->class_id = get_id(p + ids + 8, ids);
}

static inline uint8_t *object_array_head_put(uint8_t *p, const struct hprof_object_array *a,
                                             unsigned ids)
{
    p = put_id(p, a->id, ids);
    p = put_u4(p, a->stack_serial);
    p = put_u4(p, a->count);
    return put_id(p, a->class_id, ids);
}

/* PRIMITIVE_ARRAY_DUMP and ..._NODATA: id, stack serial (u4), count (u4),
 * element type (u1), then the elements (none for NODATA). */
static inline size_t primitive_array_head_size(unsigned ids)
{
    return (size_t)ids + 9;
}

static inline void primitive_array_head_get(const uint8_t *p, unsigned ids,
                                            struct hprof_primitive_array *a)
{
    a->id = get_id(p, ids);
    a->stack_serial = get_u4(p + ids);
    a->count = get_u4(p + ids + 4);
    a->type = p[ids + 8];
}

static inline uint8_t *primitive_array_head_put(uint8_t *p, const struct hprof_primitive_array *a,
                                                unsigned ids)
{
    p = put_id(p, a->id, ids);
    p = put_u4(p, a->stack_serial);
    p = put_u4(p, a->count);
    return put_u1(p, a->type);
}

/* GC roots: the object's id, then by kind nothing, a JNI global ref's id,
 * a thread serial (native stack, thread block), or a thread serial and a
 * frame number (JNI local, Java frame, JNI monitor, thread object). */
static inline size_t root_extra_size(uint8_t tag, unsigned ids)
{
    switch (tag) {
    case HPROF_ROOT_JNI_GLOBAL: return ids;
    case HPROF_ROOT_JNI_LOCAL: case HPROF_ROOT_JAVA_FRAME: case HPROF_ROOT_JNI_MONITOR:
    case HPROF_ROOT_THREAD_OBJECT: return 8;
    case HPROF_ROOT_NATIVE_STACK: case HPROF_ROOT_THREAD_BLOCK: return 4;
    default: return 0;
    }
}

static inline size_t root_body_size(uint8_t tag, unsigned ids)
{
    return ids + root_extra_size(tag, ids);
}

/* Everything but `offset`, from the body (after the tag) of root `tag`. */
static inline void root_get(const uint8_t *p, uint8_t tag, unsigned ids, struct hprof_root *root)
{
    size_t extra = root_extra_size(tag, ids);
    root->tag = tag;
    root->id = get_id(p, ids);
    p += ids;
    if (tag == HPROF_ROOT_JNI_GLOBAL) {
        root->jni_ref = get_id(p, ids);
    } else if (extra >= 4) {
        root->thread_serial = get_u4(p);
        if (extra == 8)
            root->frame = get_u4(p + 4);
    }
}

static inline uint8_t *root_put(uint8_t *p, const struct hprof_root *root, unsigned ids)
{
    size_t extra = root_extra_size(root->tag, ids);
    p = put_id(p, root->id, ids);
    if (root->tag == HPROF_ROOT_JNI_GLOBAL) {
        p = put_id(p, root->jni_ref, ids);
    } else if (extra >= 4) {
        p = put_u4(p, root->thread_serial);
        if (extra == 8)
            p = put_u4(p, root->frame);
    }
    return p;
}

#endif
