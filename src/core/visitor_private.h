/*
 * visitor_private.h - visitor slots that skip what a pass does not want,
 * and an array record emptied of its contents, for the visitors of core
 * (deobfuscate.c) and of the rewrites.  The slots are defined in
 * visitor.c.
 */
#ifndef HPROF_VISITOR_PRIVATE_H
#define HPROF_VISITOR_PRIVATE_H

#include "hprof.h"

/* The first chunk of array `a` as a zero-length array of the same id and
 * element type (a NODATA record becomes a plain one). */
static inline struct hprof_primitive_array primitive_array_emptied(
    const struct hprof_primitive_array *a)
{
    struct hprof_primitive_array empty = *a;
    empty.tag = HPROF_PRIMITIVE_ARRAY_DUMP;
    empty.count = 0;
    empty.first = 0;
    empty.length = 0;
    empty.data = NULL;
    return empty;
}

/* Visitor slots for passes that want no array contents (HPROF_SKIP: the
 * reader seeks over them) or no instances (visitor.c). */
int visit_skip_object_array(struct hprof_visitor *v, const struct hprof_object_array *a);
int visit_skip_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a);
int visit_ignore_instance(struct hprof_visitor *v, const struct hprof_instance *o);

#endif
