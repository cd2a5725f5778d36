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

#endif
