/*
 * chain.c - the write pass's filters in order (see chain.h).
 */
#include <stdlib.h>

#include "chain.h"
#include "filter.h"

#define MAX_FILTERS 5

struct shrink_chain {
    struct plan_cursor cursor;
    struct rewrite_filter *filters[MAX_FILTERS];
    unsigned n;
};

static int needs_system_heaps(const struct shrink_plan *p)
{
    return p->system.objects.count > 0;
}

static int needs_bitmaps(const struct shrink_plan *p)
{
    return p->bitmaps.remap.count > 0;
}

static int needs_redact(const struct shrink_plan *p)
{
    return p->redact.mode != HPROF_REDACT_NONE || p->redact.fields;
}

struct shrink_chain *shrink_chain_new(const struct shrink_plan *plan,
                                      struct hprof_shrink_stats *stats, struct hprof_error *err)
{
    static const struct {
        struct rewrite_filter *(*make)(const struct filter_args *a);
        int (*needed)(const struct shrink_plan *p);
    } order[MAX_FILTERS] = {
        { census_filter_new, NULL },
        { system_heaps_filter_new, needs_system_heaps },
        { bitmaps_filter_new, needs_bitmaps },
        { redact_filter_new, needs_redact },
        { arrays_filter_new, NULL },
    };
    struct shrink_chain *c = calloc(1, sizeof *c);
    if (c == NULL) {
        hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    c->cursor.array_offset = UINT64_MAX; /* no verdict yet */
    struct filter_args args = { plan, &c->cursor, stats, err };
    for (unsigned i = 0; i < MAX_FILTERS; i++) {
        if (order[i].needed != NULL && !order[i].needed(plan))
            continue;
        struct rewrite_filter *f = order[i].make(&args);
        if (f == NULL) {
            shrink_chain_free(c);
            hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
            return NULL;
        }
        if (c->n > 0)
            c->filters[c->n - 1]->base.next = &f->base;
        c->filters[c->n++] = f;
    }
    return c;
}

struct hprof_visitor *shrink_chain_head(struct shrink_chain *c)
{
    return &c->filters[0]->base;
}

void shrink_chain_set_next(struct shrink_chain *c, struct hprof_visitor *next)
{
    c->filters[c->n - 1]->base.next = next;
}

void shrink_chain_free(struct shrink_chain *c)
{
    if (c == NULL)
        return;
    for (unsigned i = 0; i < c->n; i++)
        c->filters[i]->free(c->filters[i]);
    free(c);
}
