/*
 * one_pass_prelude.c - a heap dump before its first object, in a one-pass
 * shrink (see one_pass_names.c for why): its roots and class dumps are
 * copied and held, its segments merged into one not begun yet, until the
 * first object (the decision point) or the end of the dump.  Then the
 * names it needs go out, the segment begins, and the held records follow.
 * HotSpot writes every class dump there; ART, its roots and its first few
 * class dumps.  Memory: those records, a few MB for a HotSpot dump of
 * 30,000 classes.
 */
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "one_pass_private.h"

static int nomem(struct one_pass *op)
{
    return rewrite_nomem(&op->ctx);
}

static void append(struct one_pass *op, struct held_sub *h, size_t bytes)
{
    h->next = NULL;
    h->heap = op->in_heap;
    *op->prelude_tail = h;
    op->prelude_tail = &h->next;
    op->prelude_bytes += bytes;
    count_add(&op->st->window_waited, bytes);
}

int one_pass_prelude_segment(struct one_pass *op, const struct hprof_segment *s)
{
    if (!op->prelude_seg) {
        op->seg = *s;
        op->prelude_seg = 1;
    }
    return HPROF_OK;
}

int one_pass_prelude_root(struct one_pass *op, const struct hprof_root *r)
{
    struct held_sub *h = malloc(sizeof *h);
    if (h == NULL)
        return nomem(op);
    h->is_root = 1;
    h->root = *r;
    append(op, h, sizeof *h);
    return HPROF_OK;
}

/* `bytes` of a class dump's table at *p, which moves past them (an empty
 * table may be NULL). */
static void *copy_table(uint8_t **p, const void *table, size_t bytes)
{
    void *at = *p;
    if (bytes > 0)
        memcpy(at, table, bytes);
    *p += bytes;
    return at;
}

int one_pass_prelude_class_dump(struct one_pass *op, const struct hprof_class_dump *cd)
{
    size_t tables = cd->n_constants * sizeof *cd->constants +
                    cd->n_statics * sizeof *cd->statics + cd->n_fields * sizeof *cd->fields;
    struct held_sub *h = malloc(sizeof *h + tables);
    if (h == NULL)
        return nomem(op);
    h->is_root = 0;
    h->cd = *cd;
    uint8_t *p = (uint8_t *)(h + 1);
    h->cd.constants = copy_table(&p, cd->constants, cd->n_constants * sizeof *cd->constants);
    h->cd.statics = copy_table(&p, cd->statics, cd->n_statics * sizeof *cd->statics);
    h->cd.fields = copy_table(&p, cd->fields, cd->n_fields * sizeof *cd->fields);
    append(op, h, sizeof *h + tables);
    return HPROF_OK;
}

static int send_held(struct one_pass *op)
{
    int rc = HPROF_OK;
    for (struct held_sub *h = op->prelude_first, *next; h != NULL; h = next) {
        next = h->next;
        if (rc == HPROF_OK && h->is_root)
            rc = hprof_visit_root(op->head, &h->root);
        else if (rc == HPROF_OK && (rc = one_pass_switch_heap(op, h->heap)) == HPROF_OK)
            rc = hprof_visit_class_dump(op->head, &h->cd);
        if (rc == HPROF_SKIP)
            rc = HPROF_OK;
        free(h);
    }
    op->prelude_first = NULL;
    op->prelude_tail = &op->prelude_first;
    return rc;
}

int one_pass_prelude_end(struct one_pass *op)
{
    if (!op->prelude)
        return HPROF_OK;
    op->prelude = 0;
    op->heap_open = 1;
    if (op->prelude_bytes > op->window.peak)
        op->window.peak = op->prelude_bytes;
    op->prelude_bytes = 0;
    int rc = one_pass_names_decide(op);
    if (rc == HPROF_OK && op->prelude_seg) {
        /* the segment begins in the default heap, whatever the input said */
        uint32_t heap = op->in_heap;
        rc = hprof_visit_heap_begin(op->head, &op->seg);
        op->in_segment = 1;
        op->out_heap = HPROF_HEAP_DEFAULT;
        if (rc == HPROF_OK)
            rc = send_held(op);
        op->in_heap = heap;
    }
    op->prelude_seg = 0;
    return rc;
}

void one_pass_prelude_free(struct one_pass *op)
{
    for (struct held_sub *h = op->prelude_first, *next; h != NULL; h = next) {
        next = h->next;
        free(h);
    }
    op->prelude_first = NULL;
    op->prelude_tail = &op->prelude_first;
}
