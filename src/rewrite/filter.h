/*
 * filter.h - the write pass's side of a rewrite: a visitor in front of the
 * writer that reads the plan and changes or drops what it sees.  A chain
 * (chain.c) puts the filters a run needs in a fixed order; every filter of
 * one chain shares one plan_cursor and one report.
 */
#ifndef HPROF_REWRITE_FILTER_H
#define HPROF_REWRITE_FILTER_H

#include "plan.h"

struct rewrite_filter {
    struct hprof_visitor base;
    const struct shrink_plan *plan;
    struct plan_cursor *cursor;
    struct hprof_shrink_stats *st;
    struct hprof_error *err;
    void (*free)(struct rewrite_filter *f);
};

/* Arguments every filter is made with. */
struct filter_args {
    const struct shrink_plan *plan;
    struct plan_cursor *cursor;
    struct hprof_shrink_stats *st;
    struct hprof_error *err;
};

static inline void filter_init(struct rewrite_filter *f, const struct hprof_visitor_ops *ops,
                               const struct filter_args *a, void (*free_fn)(struct rewrite_filter *))
{
    f->base.ops = ops;
    f->base.next = NULL;
    f->plan = a->plan;
    f->cursor = a->cursor;
    f->st = a->st;
    f->err = a->err;
    f->free = free_fn;
}

static inline struct hprof_visitor *filter_next(const struct rewrite_filter *f)
{
    return f->base.next;
}

/* The next visitor's handler, called directly: the records of a dump go
 * through every filter of a chain, and the loop of hprof_visit_*() costs a
 * call each time (5% of the instructions of a shrink).  Equivalent to
 * hprof_visit_NAME(next, arg). */
#define FILTER_FORWARD(name, type)                                                     \
    static inline int forward_##name(const struct rewrite_filter *f, type arg)         \
    {                                                                                  \
        struct hprof_visitor *next = f->base.next;                                     \
        if (next != NULL && next->ops->name != NULL)                                   \
            return next->ops->name(next, arg);                                         \
        return hprof_visit_##name(next, arg);                                          \
    }
FILTER_FORWARD(string, const struct hprof_string *)
FILTER_FORWARD(root, const struct hprof_root *)
FILTER_FORWARD(class_dump, const struct hprof_class_dump *)
FILTER_FORWARD(instance, const struct hprof_instance *)
FILTER_FORWARD(object_array, const struct hprof_object_array *)
FILTER_FORWARD(primitive_array, const struct hprof_primitive_array *)

static inline void count_add(struct hprof_count *c, uint64_t bytes)
{
    c->count++;
    c->bytes += bytes;
}

/* A buffer grown to at least `n` bytes (*buf of *cap, realloc()ed).
 * @return it, never NULL for 0 bytes (an instance of a class with no
 * fields), or NULL with `err` set. */
uint8_t *filter_scratch(uint8_t **buf, size_t *cap, size_t n, struct hprof_error *err);

/* Each rewrite's filter (NULL when out of memory).  Strings have none:
 * what they keep is what the arrays filter does not touch. */
struct rewrite_filter *census_filter_new(const struct filter_args *a);
struct rewrite_filter *system_heaps_filter_new(const struct filter_args *a);
struct rewrite_filter *bitmaps_filter_new(const struct filter_args *a);
struct rewrite_filter *redact_filter_new(const struct filter_args *a);
struct rewrite_filter *arrays_filter_new(const struct filter_args *a);

#endif
