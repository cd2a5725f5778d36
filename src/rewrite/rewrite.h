/*
 * rewrite.h - what the rewrite modules share while the shrink collects:
 * the run (input, error, report, options) and the dump model.  Each module
 * (strings.h, bitmaps.h, system_heaps.h, redact.h) keeps its own state,
 * learns from the collect passes through the calls collect.c makes, and
 * publishes its decisions into the plan (plan.h).
 */
#ifndef HPROF_REWRITE_H
#define HPROF_REWRITE_H

#include "plan.h"
#include "reader_internal.h"

struct rewrite_ctx {
    struct hprof_reader *reader;
    struct hprof_error *err;
    struct hprof_shrink_stats *stats;
    const struct hprof_shrink_options *opt;
    unsigned ids;
    int helper_threads;     /* work may go to threads on other cores */
    unsigned threads;       /* how many: the shrink's count (1: the caller alone) */
};

static inline int rewrite_nomem(const struct rewrite_ctx *ctx)
{
    return hprof_error_set(ctx->err, HPROF_ERR_NOMEM, "out of memory");
}

/* A visitor whose state is a module's: the collect passes a module runs
 * itself (bitmaps: expand, digest; redact: exempt) use one. */
struct module_visitor {
    struct hprof_visitor base;
    void *state;
};

/* What both shrinks check of their arguments: no reader or sink is a
 * usage error, and so is an unknown --arrays mode; no options are the
 * defaults (*options then points at them). */
static inline int rewrite_check_call(const struct hprof_reader *r, const struct hprof_sink *sink,
                                     const struct hprof_shrink_options **options,
                                     struct hprof_error *err)
{
    static const struct hprof_shrink_options defaults;
    if (r == NULL || sink == NULL)
        return hprof_error_set(err, HPROF_ERR_USAGE, "shrink: no %s", r ? "sink" : "reader");
    if (*options == NULL)
        *options = &defaults;
    if ((unsigned)(*options)->arrays > HPROF_ARRAYS_REMOVE)
        return hprof_error_set(err, HPROF_ERR_USAGE, "unknown arrays mode %d",
                               (int)(*options)->arrays);
    return HPROF_OK;
}

#endif
