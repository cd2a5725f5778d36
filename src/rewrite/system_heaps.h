/*
 * system_heaps.h - the system-heap rewrite: objects of Android's zygote and
 * image heaps (shared by every app, not the app's own) are dropped, with
 * the roots that name them, unless --keep-system-heaps.  Some stay as
 * stand-ins (same id, class and size; primitive fields and elements zeroed,
 * primitive arrays as --arrays says for the application's): those a kept
 * object refers to, so that no reference dangles, and those through which
 * the roots reach the application's objects, so that its dominators and
 * retained sizes stay as they were.  A stand-in keeps its references to
 * what is kept.  The Strings that android.os.Build and Build$VERSION
 * statics name (the device's make, model and version, which leak
 * analyzers read) stay whole, with their text.
 */
#ifndef HPROF_REWRITE_SYSTEM_HEAPS_H
#define HPROF_REWRITE_SYSTEM_HEAPS_H

#include "rewrite.h"

/* The references between system objects, and which system objects refer
 * to the application's: what system_heaps_settle() needs to find the
 * stand-ins that link roots to the application.  8 bytes per reference
 * from one system object to another, and about 40 per system object. */
struct system_graph {
    struct idmap number;        /* system object id -> its node */
    uint64_t *ids;              /* node -> id */
    uint8_t *flags;             /* node -> GRAPH_* */
    size_t *first;              /* node -> its first edge; first[n] = n_edges */
    size_t n, cap;
    uint64_t *edges;            /* system ids each node refers to, node after node */
    size_t n_edges, cap_edges;
    struct idlist seeds;        /* system objects a root or a class dump names */
};

struct system_heaps {
    int drop;                   /* 0 with --keep-system-heaps */
    struct idmap objects;       /* zygote and image objects (not classes) */
    struct idmap standins;      /* those a kept object refers to, then those settle() adds */
    struct idlist class_refs;   /* what kept class dumps refer to, for later */
    struct idmap device;        /* what android.os.Build(.VERSION) statics name */
    struct system_graph graph;
};

int system_heaps_init(struct system_heaps *s, int drop);
void system_heaps_free(struct system_heaps *s);

/* Are the objects of heap `heap` dropped? */
static inline int system_heaps_drops(const struct system_heaps *s, uint32_t heap)
{
    return s->drop && (heap == HPROF_HEAP_ZYGOTE || heap == HPROF_HEAP_IMAGE);
}

/* Object `id` is in a dropped heap. */
int system_heaps_add(struct system_heaps *s, uint64_t id);

static inline int system_heaps_has(const struct system_heaps *s, uint64_t id)
{
    return s->objects.count > 0 && idmap_has(&s->objects, id);
}

/* A kept object refers to `ref`: a system object there becomes a stand-in. */
int system_heaps_refer(struct system_heaps *s, uint64_t ref);
/* The same for what a kept class dump refers to (loader, statics,
 * constants), now or - with every system object not known yet - when
 * system_heaps_refer_deferred() is called. */
int system_heaps_refer_class_dump(struct system_heaps *s, const struct hprof_class_dump *c);
int system_heaps_defer_class_dump(struct system_heaps *s, const struct hprof_class_dump *c);
int system_heaps_refer_deferred(struct system_heaps *s);

/* Class dump `c`, whose name is `code` (NAME_*): what android.os.Build's
 * and Build$VERSION's statics that describe the device refer to is
 * remembered (their names' codes in `names`: STRING id -> NAME_*). */
int system_heaps_note_class_dump(struct system_heaps *s, const struct hprof_class_dump *c,
                                 int code, const struct idmap *names);
/* Does a static of android.os.Build or Build$VERSION name object `id`? */
static inline int system_heaps_is_device(const struct system_heaps *s, uint64_t id)
{
    return s->device.count > 0 && idmap_has(&s->device, id);
}

/* Is the graph of system objects needed (system objects are dropped)? */
static inline int system_heaps_wants_graph(const struct system_heaps *s)
{
    return s->drop && s->objects.count > 0;
}
/* The graph pass: a root or class dump names `id`; system object `id`
 * begins, and refers to `ref` (calls in file order, each object's
 * references after it).  `ref` is neither a class nor null. */
int system_heaps_graph_seed(struct system_heaps *s, uint64_t id);
int system_heaps_graph_node(struct system_heaps *s, uint64_t id);
int system_heaps_graph_edge(struct system_heaps *s, uint64_t ref);
/* After the graph pass: the stand-ins that keep the application's objects
 * reachable as they were (see system_heaps.c). */
int system_heaps_settle(struct system_heaps *s);

/* Forget the stand-ins, to resolve again. */
int system_heaps_forget(struct system_heaps *s);
/* Hand the sets to the plan. */
void system_heaps_publish(struct system_heaps *s, struct system_plan *plan);

#endif
