/*
 * visitor.c - delivery along the visitor chain.  A record goes to the first
 * visitor whose slot is set; visitors that do not care about a record kind
 * cost one pointer test each.
 */
#include "hprof_private.h"
#include "visitor_private.h"

#define DEFINE_VISIT(name, type)                                         \
    int hprof_visit_##name(struct hprof_visitor *v, type arg)            \
    {                                                                    \
        for (; v != NULL; v = v->next)                                   \
            if (v->ops->name != NULL)                                    \
                return v->ops->name(v, arg);                             \
        return HPROF_OK;                                                 \
    }

DEFINE_VISIT(header, const struct hprof_header *)
DEFINE_VISIT(string, const struct hprof_string *)
DEFINE_VISIT(load_class, const struct hprof_load_class *)
DEFINE_VISIT(record, const struct hprof_record *)
DEFINE_VISIT(heap_begin, const struct hprof_segment *)
DEFINE_VISIT(root, const struct hprof_root *)
DEFINE_VISIT(heap_info, const struct hprof_heap_info *)
DEFINE_VISIT(class_dump, const struct hprof_class_dump *)
DEFINE_VISIT(instance, const struct hprof_instance *)
DEFINE_VISIT(object_array, const struct hprof_object_array *)
DEFINE_VISIT(primitive_array, const struct hprof_primitive_array *)
DEFINE_VISIT(heap_end, const struct hprof_segment *)

int hprof_visit_end(struct hprof_visitor *v)
{
    for (; v != NULL; v = v->next)
        if (v->ops->end != NULL)
            return v->ops->end(v);
    return HPROF_OK;
}

int visit_skip_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    (void)v;
    (void)a;
    return HPROF_SKIP;
}

int visit_skip_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    (void)v;
    (void)a;
    return HPROF_SKIP;
}

int visit_ignore_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    (void)v;
    (void)o;
    return HPROF_OK;
}
