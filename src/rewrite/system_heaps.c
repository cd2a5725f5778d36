/*
 * system_heaps.c - the system-heap rewrite (see system_heaps.h): which
 * objects go and which stay hollow, then the filter that drops or hollows
 * them in the write pass.
 */
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "system_heaps.h"

int system_heaps_init(struct system_heaps *s, int drop)
{
    s->drop = drop;
    idlist_init(&s->class_refs);
    if (idmap_init(&s->objects, 0) || idmap_init(&s->standins, 0))
        return HPROF_ERR_NOMEM;
    return HPROF_OK;
}

void system_heaps_free(struct system_heaps *s)
{
    idmap_free(&s->objects);
    idmap_free(&s->standins);
    idlist_free(&s->class_refs);
}

int system_heaps_add(struct system_heaps *s, uint64_t id)
{
    return idmap_put(&s->objects, id, 0);
}

int system_heaps_refer(struct system_heaps *s, uint64_t ref)
{
    if (!system_heaps_has(s, ref) || idmap_has(&s->standins, ref))
        return HPROF_OK;
    return idmap_put(&s->standins, ref, 0);
}

/* Calls fn(s, ref) for every reference of class dump `c`. */
static int each_class_ref(struct system_heaps *s, const struct hprof_class_dump *c,
                          int (*fn)(struct system_heaps *, uint64_t))
{
    int rc = fn(s, c->loader_id);
    for (unsigned i = 0; rc == HPROF_OK && i < c->n_statics; i++)
        if (c->statics[i].type == HPROF_TYPE_OBJECT)
            rc = fn(s, c->statics[i].value);
    for (unsigned i = 0; rc == HPROF_OK && i < c->n_constants; i++)
        if (c->constants[i].type == HPROF_TYPE_OBJECT)
            rc = fn(s, c->constants[i].value);
    return rc;
}

static int defer_ref(struct system_heaps *s, uint64_t ref)
{
    return idlist_add(&s->class_refs, ref);
}

int system_heaps_refer_class_dump(struct system_heaps *s, const struct hprof_class_dump *c)
{
    return each_class_ref(s, c, system_heaps_refer);
}

int system_heaps_defer_class_dump(struct system_heaps *s, const struct hprof_class_dump *c)
{
    return each_class_ref(s, c, defer_ref);
}

int system_heaps_refer_deferred(struct system_heaps *s)
{
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && i < s->class_refs.n; i++)
        rc = system_heaps_refer(s, s->class_refs.ids[i]);
    return rc;
}

int system_heaps_forget(struct system_heaps *s)
{
    return idmap_reset(&s->standins);
}

void system_heaps_publish(struct system_heaps *s, struct system_plan *plan)
{
    plan->objects = s->objects;
    plan->standins = s->standins;
    memset(&s->objects, 0, sizeof s->objects); /* the plan owns them now */
    memset(&s->standins, 0, sizeof s->standins);
}

/* ---- The write-pass filter ---------------------------------------------------- */

struct system_filter {
    struct rewrite_filter f;
    uint8_t *hollow;        /* zeroed instance values */
    size_t hollow_cap;
};

/* Does object `id` (in a dropped heap) survive in some form? */
static int survives(const struct shrink_plan *p, struct plan_cursor *c, uint64_t id)
{
    return !plan_in_system(p, id) || plan_is_standin(p, id) ||
           plan_kept_by_reason(p, c, id) != ARRAY_NOT_KEPT ||
           idmap_has(&p->bitmaps.candidates, id);
}

static int on_root(struct hprof_visitor *v, const struct hprof_root *r)
{
    struct rewrite_filter *f = (struct rewrite_filter *)v;
    if (!survives(f->plan, f->cursor, r->id)) {
        f->st->roots_dropped++;
        return HPROF_OK;
    }
    return forward_root(f, r);
}

static int on_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct system_filter *s = (struct system_filter *)v;
    struct rewrite_filter *f = &s->f;
    if (!plan_in_system(f->plan, o->id))
        return forward_instance(f, o);
    if (!plan_is_standin(f->plan, o->id)) {
        count_add(&f->st->system_dropped, o->length);
        return HPROF_OK;
    }
    struct hprof_instance hollow = *o;
    uint8_t *values = filter_scratch(&s->hollow, &s->hollow_cap, o->length, f->err);
    if (values == NULL)
        return HPROF_ERR_NOMEM;
    memset(values, 0, o->length);
    hollow.values = values;
    count_add(&f->st->system_standins, o->length);
    return forward_instance(f, &hollow);
}

static int on_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct rewrite_filter *f = (struct rewrite_filter *)v;
    if (a->first != 0 || !plan_in_system(f->plan, a->id))
        return forward_object_array(f, a);
    uint64_t bytes = (uint64_t)a->count * f->plan->ids;
    if (!plan_is_standin(f->plan, a->id)) {
        count_add(&f->st->system_dropped, bytes);
        return HPROF_SKIP;
    }
    struct hprof_object_array hollow = *a;
    hollow.count = hollow.n = 0;
    count_add(&f->st->system_standins, bytes);
    int rc = forward_object_array(f, &hollow);
    return rc == HPROF_OK ? HPROF_SKIP : rc;
}

static int on_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct rewrite_filter *f = (struct rewrite_filter *)v;
    if (a->first != 0 || !plan_in_system(f->plan, a->id) ||
        plan_array_keep(f->plan, f->cursor, a) != ARRAY_NOT_KEPT)
        return forward_primitive_array(f, a);
    uint64_t bytes = (uint64_t)a->count * type_size(a->type, f->plan->ids);
    if (!plan_is_standin(f->plan, a->id)) {
        count_add(&f->st->system_dropped, bytes);
        return HPROF_SKIP;
    }
    struct hprof_primitive_array empty = primitive_array_emptied(a);
    count_add(&f->st->system_standins, bytes);
    int rc = forward_primitive_array(f, &empty);
    return rc == HPROF_OK ? HPROF_SKIP : rc;
}

static const struct hprof_visitor_ops system_filter_ops = {
    .root = on_root,
    .instance = on_instance,
    .object_array = on_object_array,
    .primitive_array = on_primitive_array,
};

static void system_filter_free(struct rewrite_filter *f)
{
    free(((struct system_filter *)f)->hollow);
    free(f);
}

struct rewrite_filter *system_heaps_filter_new(const struct filter_args *a)
{
    struct system_filter *s = calloc(1, sizeof *s);
    if (s != NULL)
        filter_init(&s->f, &system_filter_ops, a, system_filter_free);
    return s ? &s->f : NULL;
}
