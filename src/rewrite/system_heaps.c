/*
 * system_heaps.c - the system-heap rewrite (see system_heaps.h): which
 * objects go and which stay hollow, then the filter that drops or hollows
 * them in the write pass.
 */
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "system_heaps.h"
#include "visitor_private.h"

/* A node's flags in the graph of system objects. */
enum {
    GRAPH_REFERS_TO_APP = 1,    /* refers to an object outside the system heaps */
    GRAPH_ROOT_SIDE = 2,        /* reached from a root through system objects alone */
    GRAPH_KEEP = 4,             /* a stand-in */
};

int system_heaps_init(struct system_heaps *s, int drop)
{
    memset(s, 0, sizeof *s);
    s->drop = drop;
    idlist_init(&s->class_refs);
    idlist_init(&s->graph.seeds);
    if (idmap_init(&s->objects, 0) || idmap_init(&s->standins, 0) ||
        idmap_init(&s->device, 0) || idmap_init(&s->graph.number, 1))
        return HPROF_ERR_NOMEM;
    return HPROF_OK;
}

static void graph_free(struct system_graph *g)
{
    idmap_free(&g->number);
    free(g->ids);
    free(g->flags);
    free(g->first);
    free(g->edges);
    idlist_free(&g->seeds);
}

void system_heaps_free(struct system_heaps *s)
{
    idmap_free(&s->objects);
    idmap_free(&s->standins);
    idmap_free(&s->device);
    idlist_free(&s->class_refs);
    graph_free(&s->graph);
}

int system_heaps_note_class_dump(struct system_heaps *s, const struct hprof_class_dump *c,
                                 int code, const struct idmap *names)
{
    if (code != NAME_CLASS_DEVICE)
        return HPROF_OK;
    for (unsigned i = 0; i < c->n_statics; i++) {
        const struct hprof_static_field *f = &c->statics[i];
        uint64_t name;
        if (f->type != HPROF_TYPE_OBJECT || f->value == 0 ||
            !idmap_get(names, f->name_id, &name) || name != NAME_FIELD_DEVICE_TEXT)
            continue;
        if (idmap_put(&s->device, f->value, 0) != HPROF_OK)
            return HPROF_ERR_NOMEM;
    }
    return HPROF_OK;
}

/* ---- The graph of system objects ------------------------------------------------
 *
 * Dropping a system object cuts every path from the roots that went through
 * it.  An application object reached only that way would then be held by
 * the application objects that also refer to it (a leak, say), which would
 * seem to retain it: its dominators and every retained size above it would
 * change.  So the stand-ins are chosen for the application's dominators to
 * stay as they were:
 *
 * - A system object reached from a root through system objects alone
 *   ("root side") is dominated by no application object.  One that refers
 *   to an application object, or that a kept object refers to, stays with
 *   one shortest path of such objects from a root (breadth first), so the
 *   application objects it refers to are still reached from the roots
 *   without passing any application object.
 * - Every other system object that a kept object refers to, and what such
 *   objects reach through system objects that are not root side, stays
 *   whole in size: it may be dominated by an application object, and count
 *   in its retained size.
 *
 * Any path of the dump from a root then has a counterpart in the output
 * that passes no application object it did not pass (cut it at its last
 * root-side object), and the output adds no path: an application object
 * dominates in the output exactly what it dominated in the input, and the
 * root-side system objects the output drops were dominated by none. */

int system_heaps_graph_seed(struct system_heaps *s, uint64_t id)
{
    return system_heaps_has(s, id) ? idlist_add(&s->graph.seeds, id) : HPROF_OK;
}

int system_heaps_graph_node(struct system_heaps *s, uint64_t id)
{
    struct system_graph *g = &s->graph;
    if (g->n >= UINT32_MAX - 1)
        return HPROF_ERR_NOMEM; /* node numbers are 32 bits in settle() */
    if (g->n + 2 > g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 1024;
        uint64_t *ids = realloc(g->ids, cap * sizeof *ids);
        if (ids == NULL)
            return HPROF_ERR_NOMEM;
        g->ids = ids;
        uint8_t *flags = realloc(g->flags, cap * sizeof *flags);
        if (flags == NULL)
            return HPROF_ERR_NOMEM;
        g->flags = flags;
        size_t *first = realloc(g->first, cap * sizeof *first);
        if (first == NULL)
            return HPROF_ERR_NOMEM;
        g->first = first;
        g->cap = cap;
    }
    if (idmap_put(&g->number, id, g->n) != HPROF_OK)
        return HPROF_ERR_NOMEM;
    g->ids[g->n] = id;
    g->flags[g->n] = 0;
    g->first[g->n] = g->n_edges;
    g->n++;
    g->first[g->n] = g->n_edges;
    return HPROF_OK;
}

int system_heaps_graph_edge(struct system_heaps *s, uint64_t ref)
{
    struct system_graph *g = &s->graph;
    if (g->n == 0)
        return HPROF_OK;
    if (!system_heaps_has(s, ref)) {
        g->flags[g->n - 1] |= GRAPH_REFERS_TO_APP;
        return HPROF_OK;
    }
    uint64_t *edges = grow_array(g->edges, &g->cap_edges, g->n_edges + 1, sizeof *edges);
    if (edges == NULL)
        return HPROF_ERR_NOMEM;
    g->edges = edges;
    g->edges[g->n_edges++] = ref;
    g->first[g->n] = g->n_edges;
    return HPROF_OK;
}

/* The node of system object `id`, or -1 if it was not dumped. */
static int64_t node_of(const struct system_graph *g, uint64_t id)
{
    uint64_t n;
    return idmap_get(&g->number, id, &n) ? (int64_t)n : -1;
}

/* Breadth first from the nodes queue[0..tail) over nodes without `stop`,
 * each reached one getting `mark` (and, with `parent`, the node it was
 * reached from).  @return the queue's new tail. */
static size_t graph_walk(struct system_graph *g, uint32_t *queue, size_t tail, uint8_t stop,
                         uint8_t mark, uint32_t *parent)
{
    for (size_t head = 0; head < tail; head++) {
        uint32_t u = queue[head];
        for (size_t e = g->first[u]; e < g->first[u + 1]; e++) {
            int64_t v = node_of(g, g->edges[e]);
            if (v < 0 || (g->flags[v] & (stop | mark)))
                continue;
            g->flags[v] |= mark;
            if (parent)
                parent[v] = u;
            queue[tail++] = (uint32_t)v;
        }
    }
    return tail;
}

int system_heaps_settle(struct system_heaps *s)
{
    struct system_graph *g = &s->graph;
    uint32_t *queue = malloc((g->n + 1) * sizeof *queue);
    uint32_t *parent = malloc((g->n + 1) * sizeof *parent);
    int rc = queue && parent ? HPROF_OK : HPROF_ERR_NOMEM;
    size_t tail = 0;
    /* root side: breadth first from what roots and class dumps name */
    for (size_t i = 0; rc == HPROF_OK && i < g->seeds.n; i++) {
        int64_t v = node_of(g, g->seeds.ids[i]);
        if (v < 0 || (g->flags[v] & GRAPH_ROOT_SIDE))
            continue;
        g->flags[v] |= GRAPH_ROOT_SIDE;
        parent[v] = (uint32_t)v;
        queue[tail++] = (uint32_t)v;
    }
    if (rc == HPROF_OK)
        graph_walk(g, queue, tail, 0, GRAPH_ROOT_SIDE, parent);
    /* root-side links to the application, with their path from a root */
    for (size_t u = 0; rc == HPROF_OK && u < g->n; u++) {
        if (!(g->flags[u] & GRAPH_ROOT_SIDE) ||
            !((g->flags[u] & GRAPH_REFERS_TO_APP) || idmap_has(&s->standins, g->ids[u])))
            continue;
        for (uint32_t v = (uint32_t)u; !(g->flags[v] & GRAPH_KEEP); v = parent[v])
            g->flags[v] |= GRAPH_KEEP;
    }
    /* behind the application: what kept objects reach through system
     * objects that are not root side */
    tail = 0;
    for (size_t i = 0; rc == HPROF_OK && i <= s->standins.mask && s->standins.count > 0; i++) {
        int64_t v = node_of(g, s->standins.keys[i]);
        if (v < 0 || (g->flags[v] & (GRAPH_ROOT_SIDE | GRAPH_KEEP)))
            continue;
        g->flags[v] |= GRAPH_KEEP;
        queue[tail++] = (uint32_t)v;
    }
    if (rc == HPROF_OK)
        graph_walk(g, queue, tail, GRAPH_ROOT_SIDE, GRAPH_KEEP, NULL);
    for (size_t u = 0; rc == HPROF_OK && u < g->n; u++)
        if ((g->flags[u] & GRAPH_KEEP) && idmap_put(&s->standins, g->ids[u], 0) != HPROF_OK)
            rc = HPROF_ERR_NOMEM;
    free(queue);
    free(parent);
    graph_free(g); /* what it decided is in the stand-ins now */
    memset(g, 0, sizeof *g);
    return rc;
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
    plan->device = s->device;
    memset(&s->objects, 0, sizeof s->objects); /* the plan owns them now */
    memset(&s->standins, 0, sizeof s->standins);
    memset(&s->device, 0, sizeof s->device);
}

/* ---- The write-pass filter ---------------------------------------------------- */

struct system_filter {
    struct rewrite_filter f;
    uint8_t *hollow;        /* a stand-in's values or elements */
    size_t hollow_cap;
    int array_kept;         /* the object array in hand is a stand-in */
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

/* A stand-in's reference: kept when what it names is in the output. */
static uint64_t standin_ref(struct rewrite_filter *f, uint64_t ref)
{
    return ref != 0 && survives(f->plan, f->cursor, ref) ? ref : 0;
}

struct hollowing {
    struct rewrite_filter *f;
    const uint8_t *from;
    uint8_t *to;
};

static int keep_field_ref(void *ctx, uint32_t at, uint64_t name_id, uint64_t ref)
{
    struct hollowing *h = ctx;
    (void)name_id;
    uint64_t kept = standin_ref(h->f, ref);
    if (kept != 0) {
        put_id(h->to + at, kept, h->f->plan->ids);
        h->f->st->system_standin_refs++;
    }
    return 0;
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
    count_add(&f->st->system_standins, o->length);
    if (idmap_has(&f->plan->system.device, o->id))
        return forward_instance(f, o); /* a String of the device's: whole */
    struct hprof_instance hollow = *o;
    uint8_t *values = filter_scratch(&s->hollow, &s->hollow_cap, o->length, f->err);
    if (values == NULL)
        return HPROF_ERR_NOMEM;
    memset(values, 0, o->length);
    /* The classes' reference fields were listed in the graph pass, which
     * saw every system object: the walk reads the lists and changes
     * nothing, so workers may share it. */
    struct classes *classes = (struct classes *)&f->plan->model->classes;
    struct class_info *ci = classes_find(classes, o->class_id);
    struct hollowing h = { f, o->values, values };
    if (ci != NULL)
        classes_each_ref(classes, ci, o->values, o->length, keep_field_ref, &h);
    hollow.values = values;
    return forward_instance(f, &hollow);
}

static int on_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct system_filter *s = (struct system_filter *)v;
    struct rewrite_filter *f = &s->f;
    if (!plan_in_system(f->plan, a->id))
        return forward_object_array(f, a);
    const unsigned ids = f->plan->ids;
    if (a->first == 0) {
        uint64_t bytes = (uint64_t)a->count * ids;
        s->array_kept = plan_is_standin(f->plan, a->id);
        count_add(s->array_kept ? &f->st->system_standins : &f->st->system_dropped, bytes);
    }
    if (!s->array_kept)
        return HPROF_SKIP;
    /* the elements that name what is kept stay; the others become null */
    struct hprof_object_array part = *a;
    uint8_t *elements = filter_scratch(&s->hollow, &s->hollow_cap, (size_t)a->n * ids, f->err);
    if (elements == NULL && a->n > 0)
        return HPROF_ERR_NOMEM;
    for (uint32_t i = 0; i < a->n; i++) {
        uint64_t kept = standin_ref(f, get_id(a->elements + (size_t)i * ids, ids));
        f->st->system_standin_refs += kept != 0;
        put_id(elements + (size_t)i * ids, kept, ids);
    }
    part.elements = elements;
    return forward_object_array(f, &part);
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
    count_add(&f->st->system_standins, bytes);
    /* --arrays=zero keeps every size, a stand-in's too (a retained size
     * may count it); the other modes empty it, as --arrays=remove would
     * leave its holders dangling */
    if (f->plan->arrays == HPROF_ARRAYS_ZERO)
        return forward_primitive_array(f, a);
    struct hprof_primitive_array empty = primitive_array_emptied(a);
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
