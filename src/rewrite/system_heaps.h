/*
 * system_heaps.h - the system-heap rewrite: objects of Android's zygote and
 * image heaps (shared by every app, not the app's own) are dropped, with
 * the roots that name them, unless --keep-system-heaps.  A dropped object
 * that a kept object refers to stays as a hollow stand-in (same id and
 * class; instance fields zeroed, arrays empty), so that no reference
 * dangles and nothing more is pulled in through it.
 */
#ifndef HPROF_REWRITE_SYSTEM_HEAPS_H
#define HPROF_REWRITE_SYSTEM_HEAPS_H

#include "rewrite.h"

struct system_heaps {
    int drop;                   /* 0 with --keep-system-heaps */
    struct idmap objects;       /* zygote and image objects (not classes) */
    struct idmap standins;      /* those a kept object refers to */
    struct idlist class_refs;   /* what kept class dumps refer to, for later */
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

/* Forget the stand-ins, to resolve again. */
int system_heaps_forget(struct system_heaps *s);
/* Hand the sets to the plan. */
void system_heaps_publish(struct system_heaps *s, struct system_plan *plan);

#endif
