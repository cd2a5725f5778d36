/*
 * used_names.h - the "names in use" rewrite: drop the STRING records nothing
 * in the dump refers to.
 *
 * HotSpot writes its whole symbol table as STRING records (the program's
 * string literals too: SQL, URLs, keys); on its dumps about nine names in
 * ten are referenced by nothing.  A STRING is in use when one of these
 * refers to its id:
 *   LOAD_CLASS        class name
 *   CLASS_DUMP        static and instance field names
 *   STACK_FRAME       method name, signature, source file
 *   START_THREAD      thread name, group name, parent group name
 *   HEAP_DUMP_INFO    heap name
 * Id 0 is never a name.  STRING records come before the records that use
 * them, so the set is collected in a pass of its own, before the write
 * pass; the write pass only reads it.
 *
 * Use, in the module shape of the other rewrites (docs/design.md):
 *
 *   struct names_plan plan;          (in the run's plan)
 *   struct names_collect col;        (collect pass)
 *   names_plan_init(&plan);
 *   names_collect_init(&col, &plan, err);
 *   col.base.next = <the rest of the collect chain, or NULL>;
 *   hprof_reader_run(r, &col.base);   (heap segments must be read: CLASS_DUMP
 *                                      and HEAP_DUMP_INFO are inside them)
 *   ... every collect pass done: the plan is now read-only ...
 *   struct names_filter f;           (write pass, in front of the writer)
 *   names_filter_init(&f, &plan);
 *   f.base.next = <next filter or the writer>;
 *   ... write pass ...  f.dropped says what went
 *   names_plan_free(&plan);
 *
 * The filter handles only STRING, a top-level record: in the parallel write
 * pass only the thread that walks the top-level records sees it, so one
 * filter (and its counters) serves the pass; the workers' chains need none.
 */
#ifndef HPROF_USED_NAMES_H
#define HPROF_USED_NAMES_H

#include "hprof_private.h"

/* The decision: the STRING ids in use.  Read-only once collected. */
struct names_plan {
    struct idmap used;
    uint64_t references;        /* references seen (one name may have many) */
};

/* Collect-pass visitor.  Forwards every record to `base.next`. */
struct names_collect {
    struct hprof_visitor base;  /* first: the visitor */
    struct names_plan *plan;
    struct hprof_error *err;
    unsigned id_size;
    int heap_infos_dropped;     /* --jvm: a heap's name is no name in use */
};

/* Write-pass filter: drops STRING records whose id is not in use. */
struct names_filter {
    struct hprof_visitor base;  /* first: the visitor */
    const struct names_plan *plan;
    unsigned id_size;
    struct hprof_count dropped; /* STRING records dropped, bytes of text */
    uint64_t dropped_record_bytes;  /* what they took in the file, headers
                                       and ids included */
    struct hprof_count kept;
    struct hprof_shrink_stats *report; /* or NULL: also counted there */
};

/* An empty plan.  @return HPROF_OK or HPROF_ERR_NOMEM. */
int names_plan_init(struct names_plan *p);
/* Whether STRING `id` is in use (the plan must be collected). */
static inline int names_plan_in_use(const struct names_plan *p, uint64_t id)
{
    return idmap_has(&p->used, id);
}
/* Distinct names in use. */
static inline size_t names_plan_count(const struct names_plan *p)
{
    return p->used.count;
}
void names_plan_free(struct names_plan *p);

/* names_collect_init() :
 * A collect visitor adding to `plan` (which it does not own).  Errors
 * (out of memory, a STACK_FRAME or START_THREAD of the wrong length) go to
 * `err` with the record's offset.  Nothing to free. */
/* The STRING ids a STACK_FRAME or START_THREAD record names (*n: 3), or
 * none for other records (*n: 0).  @return HPROF_OK, or a format error for
 * a record of the wrong length. */
int names_of_record(const struct hprof_record *r, unsigned ids, uint64_t out[3], unsigned *n,
                    struct hprof_error *err);
void names_collect_init(struct names_collect *c, struct names_plan *plan, struct hprof_error *err);

/* names_filter_init() :
 * A write-pass filter over a collected `plan`, which it only reads and
 * which must outlive it.  Nothing to free. */
void names_filter_init(struct names_filter *f, const struct names_plan *plan);

#endif /* HPROF_USED_NAMES_H */
