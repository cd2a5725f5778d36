/*
 * objcheck_pass.c - objcheck (validate.c) as a visitor and as a pass of its
 * own (see objcheck_pass.h).
 */
#include "objcheck_pass.h"

/* ---- As a visitor ------------------------------------------------------------ */

/* Inline: it runs for every object of the first pass, and with four
 * callers GCC kept it out of line (a call and a switch more per object). */
static inline int check(struct objcheck_visitor *v, uint64_t id, uint64_t offset, uint8_t subtag)
{
    switch (v->mode) {
    case OBJCHECK_ADD: return objcheck_add_fast(v->oc, id, offset, subtag, v->err);
    case OBJCHECK_CONFIRM: return objcheck_confirm(v->oc, id, offset, subtag, v->err);
    default: return HPROF_OK;
    }
}

static int on_class_dump(struct hprof_visitor *base, const struct hprof_class_dump *c)
{
    struct objcheck_visitor *v = (struct objcheck_visitor *)base;
    int rc = check(v, c->id, c->offset, HPROF_CLASS_DUMP);
    return rc == HPROF_OK ? hprof_visit_class_dump(base->next, c) : rc;
}

static int on_instance(struct hprof_visitor *base, const struct hprof_instance *o)
{
    struct objcheck_visitor *v = (struct objcheck_visitor *)base;
    int rc = check(v, o->id, o->offset, HPROF_INSTANCE_DUMP);
    return rc == HPROF_OK ? hprof_visit_instance(base->next, o) : rc;
}

/* Arrays: their first chunk only.  With nothing behind, the contents are
 * skipped. */
static int on_object_array(struct hprof_visitor *base, const struct hprof_object_array *a)
{
    struct objcheck_visitor *v = (struct objcheck_visitor *)base;
    int rc = a->first == 0 ? check(v, a->id, a->offset, HPROF_OBJECT_ARRAY_DUMP) : HPROF_OK;
    if (rc != HPROF_OK)
        return rc;
    return base->next != NULL ? hprof_visit_object_array(base->next, a) : HPROF_SKIP;
}

static int on_primitive_array(struct hprof_visitor *base, const struct hprof_primitive_array *a)
{
    struct objcheck_visitor *v = (struct objcheck_visitor *)base;
    int rc = a->first == 0 ? check(v, a->id, a->offset, a->tag) : HPROF_OK;
    if (rc != HPROF_OK)
        return rc;
    return base->next != NULL ? hprof_visit_primitive_array(base->next, a) : HPROF_SKIP;
}

static const struct hprof_visitor_ops objcheck_ops = {
    .class_dump = on_class_dump,
    .instance = on_instance,
    .object_array = on_object_array,
    .primitive_array = on_primitive_array,
};

void objcheck_visitor_init(struct objcheck_visitor *v, struct objcheck *oc,
                           struct hprof_error *err, struct hprof_visitor *next)
{
    *v = (struct objcheck_visitor){ .base = { &objcheck_ops, next }, .oc = oc,
                                    .mode = OBJCHECK_ADD, .err = err };
}

int objcheck_confirm_pass(struct objcheck *oc, struct hprof_reader *r, struct hprof_error *err)
{
    if (objcheck_pending(oc) == 0)
        return HPROF_OK;
    struct objcheck_visitor v;
    objcheck_visitor_init(&v, oc, err, NULL);
    v.mode = OBJCHECK_CONFIRM;
    return hprof_reader_run(r, &v.base);
}
