/*
 * push_shrink.c - hprof_shrink_push_*(): a dump shrunk as its writer
 * pushes it, through the push of core (push.h), whose consumer is the
 * one-pass shrink.
 */
#include <stdlib.h>
#include <string.h>

#include "hprof.h"
#include "push.h"

struct hprof_shrink_push {
    struct push *push;
    struct hprof_sink *sink;
    struct hprof_shrink_options opt;
    struct hprof_shrink_stats stats; /* the consumer's, read after it returned */
};

static int shrink_pushed(void *ctx, struct hprof_reader *r, struct hprof_error *err)
{
    struct hprof_shrink_push *p = ctx;
    return hprof_shrink_one_pass(r, p->sink, &p->opt, &p->stats, err);
}

int hprof_shrink_push_new(struct hprof_shrink_push **out, struct hprof_sink *sink,
                          const struct hprof_shrink_options *opt, struct hprof_error *err)
{
    *out = NULL;
    if (sink == NULL)
        return hprof_error_set(err, HPROF_ERR_USAGE, "shrink: no sink");
    struct hprof_shrink_push *p = calloc(1, sizeof *p);
    if (p == NULL)
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
    p->sink = sink;
    if (opt != NULL)
        p->opt = *opt;
    int rc = push_new(&p->push, shrink_pushed, p, err);
    if (rc != HPROF_OK) {
        free(p);
        return rc;
    }
    *out = p;
    return HPROF_OK;
}

int hprof_shrink_push_write(struct hprof_shrink_push *p, const void *buf, size_t len)
{
    return push_write(p->push, buf, len);
}

int hprof_shrink_push_finish(struct hprof_shrink_push *p, struct hprof_shrink_stats *stats)
{
    int rc = push_finish(p->push);
    if (stats != NULL)
        *stats = p->stats;
    return rc;
}

void hprof_shrink_push_free(struct hprof_shrink_push *p)
{
    if (p == NULL)
        return;
    push_free(p->push);
    free(p);
}
