/*
 * chain.c - the write pass's filters in order (see chain.h).
 */
#include <stdlib.h>

#include "chain.h"
#include "filter.h"
#include "jvm.h"

#define MAX_LINKS 8

/* A filter of the chain and how to free it: the rewrite filters share a
 * shape (filter.h); the names and --jvm filters are plain visitors. */
struct chain_link {
    struct hprof_visitor *v;
    void (*free)(struct hprof_visitor *v);
};

struct shrink_chain {
    struct plan_cursor cursor;
    struct chain_link links[MAX_LINKS];
    unsigned n;
};

static void free_rewrite_filter(struct hprof_visitor *v)
{
    struct rewrite_filter *f = (struct rewrite_filter *)v;
    f->free(f);
}

static void free_plain(struct hprof_visitor *v)
{
    free(v);
}

static int add_link(struct shrink_chain *c, struct hprof_visitor *v,
                    void (*free_fn)(struct hprof_visitor *v))
{
    if (v == NULL)
        return HPROF_ERR_NOMEM;
    if (c->n > 0)
        c->links[c->n - 1].v->next = v;
    c->links[c->n++] = (struct chain_link){ v, free_fn };
    return HPROF_OK;
}

static int add_filter(struct shrink_chain *c, struct rewrite_filter *f)
{
    return add_link(c, f ? &f->base : NULL, free_rewrite_filter);
}

static int add_names_filter(struct shrink_chain *c, const struct shrink_plan *p,
                            struct hprof_shrink_stats *stats)
{
    struct names_filter *f = malloc(sizeof *f);
    if (f != NULL) {
        names_filter_init(f, &p->names);
        f->id_size = p->ids;
        f->report = stats;
    }
    return add_link(c, f ? &f->base : NULL, free_plain);
}

static int add_jvm_filter(struct shrink_chain *c, struct hprof_shrink_stats *stats)
{
    struct jvm_filter *f = malloc(sizeof *f);
    if (f != NULL) {
        jvm_filter_init(f);
        f->report = stats;
    }
    return add_link(c, f ? &f->base : NULL, free_plain);
}

static void free_deobf_filter(struct hprof_visitor *v)
{
    deobf_filter_release((struct deobf_filter *)v);
    free(v);
}

static int add_deobf_filter(struct shrink_chain *c, const struct shrink_plan *p)
{
    struct deobf_filter *f = malloc(sizeof *f);
    if (f != NULL)
        deobf_filter_init(f, &p->deobf, p->ids);
    return add_link(c, f ? &f->base : NULL, free_deobf_filter);
}

/* deobfuscate -> names -> census -> system heaps -> bitmaps -> redact ->
 * arrays -> jvm */
static int build(struct shrink_chain *c, const struct shrink_plan *p,
                 struct hprof_shrink_stats *stats, struct hprof_error *err)
{
    struct filter_args args = { p, &c->cursor, stats, err };
    int rc = p->deobfuscate ? add_deobf_filter(c, p) : HPROF_OK;
    if (rc == HPROF_OK && p->drop_names)
        rc = add_names_filter(c, p, stats);
    if (rc == HPROF_OK)
        rc = add_filter(c, census_filter_new(&args));
    /* the one-pass shrink decides as it goes: a filter its options may
     * need is there from the start */
    if (rc == HPROF_OK && (p->system.objects.count > 0 || p->one_pass_system))
        rc = add_filter(c, system_heaps_filter_new(&args));
    if (rc == HPROF_OK && (p->bitmaps.remap.count > 0 || p->one_pass_merges))
        rc = add_filter(c, bitmaps_filter_new(&args));
    if (rc == HPROF_OK && (p->redact.mode != HPROF_REDACT_NONE || p->redact.fields))
        rc = add_filter(c, redact_filter_new(&args));
    if (rc == HPROF_OK)
        rc = add_filter(c, arrays_filter_new(&args));
    if (rc == HPROF_OK && p->jvm)
        rc = add_jvm_filter(c, stats);
    return rc;
}

struct shrink_chain *shrink_chain_new(const struct shrink_plan *plan,
                                      struct hprof_shrink_stats *stats, struct hprof_error *err)
{
    struct shrink_chain *c = calloc(1, sizeof *c);
    if (c == NULL || build(c, plan, stats, err) != HPROF_OK) {
        shrink_chain_free(c);
        hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    c->cursor.array_offset = UINT64_MAX; /* no verdict yet */
    return c;
}

struct hprof_visitor *shrink_chain_head(struct shrink_chain *c)
{
    return c->links[0].v;
}

struct plan_cursor *shrink_chain_cursor(struct shrink_chain *c)
{
    return &c->cursor;
}

void shrink_chain_set_next(struct shrink_chain *c, struct hprof_visitor *next)
{
    c->links[c->n - 1].v->next = next;
}

void shrink_chain_free(struct shrink_chain *c)
{
    if (c == NULL)
        return;
    for (unsigned i = 0; i < c->n; i++)
        c->links[i].free(c->links[i].v);
    free(c);
}
