/*
 * one_pass_names.c - the names (STRING records) in a one-pass shrink.
 *
 * Only the names something refers to are written, as the multi-pass
 * shrink writes them; but analyzers that read a dump once (perflib,
 * ahat) look a name up when they meet the record that uses it, so each
 * name is written just before its first user.  A STRING is held from
 * when it is read until a record refers to it (then written, before that
 * record) or the input ends (then dropped).  A name referred to before it
 * is read is written as it comes.  A user inside a heap dump (a class
 * dump's field names, a HEAP_DUMP_INFO's) puts its names between
 * segments, as the JDK's hprof agent writes them; inside a HEAP_DUMP
 * record (JAVA PROFILE 1.0.1), which must stay one, right after it.
 *
 * The rule for names: past `limit` bytes held, every name is kept.
 */
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "one_pass_private.h"

#define NAME_HEAD 16u               /* time u4, id u8, length u4 */

static int nomem(struct one_pass *op)
{
    return rewrite_nomem(&op->ctx);
}

static struct hprof_string name_at(const struct held_names *n, uint64_t at)
{
    const uint8_t *p = n->bytes + at;
    return (struct hprof_string){ .time = get_u4(p), .id = get_u8(p + 4),
                                  .length = get_u4(p + 12), .utf8 = p + NAME_HEAD };
}

static int hold(struct one_pass *op, const struct hprof_string *s)
{
    struct held_names *n = &op->names;
    size_t need = n->n_bytes + NAME_HEAD + s->length;
    if (need > n->cap_bytes) {
        size_t cap = n->cap_bytes ? n->cap_bytes : 64u << 10;
        while (cap < need)
            cap *= 2;
        uint8_t *grown = realloc(n->bytes, cap);
        if (grown == NULL)
            return nomem(op);
        n->bytes = grown;
        n->cap_bytes = cap;
    }
    uint8_t *p = n->bytes + n->n_bytes;
    p = put_u4(p, s->time);
    p = put_u8(p, s->id);
    p = put_u4(p, s->length);
    memcpy(p, s->utf8, s->length);
    if (id_table_put(&n->index, s->id, n->n_bytes + 1) != HPROF_OK)
        return nomem(op);
    n->n_bytes = need;
    count_add(&op->st->window_names, s->length);
    return HPROF_OK;
}

/* Calls fn(op, name) for each name still held, in the order read. */
static int each_held(struct one_pass *op, int (*fn)(struct one_pass *, const struct hprof_string *))
{
    struct held_names *n = &op->names;
    int rc = HPROF_OK;
    for (size_t at = 0; rc == HPROF_OK && at < n->n_bytes;) {
        struct hprof_string s = name_at(n, at);
        uint64_t *held = id_table_find(&n->index, s.id);
        if (held != NULL && *held == at + 1)
            rc = fn(op, &s);
        at += NAME_HEAD + s.length;
    }
    return rc;
}

static int write_name(struct one_pass *op, const struct hprof_string *s)
{
    return hprof_visit_string(op->head, s);
}

static int count_dropped(struct one_pass *op, const struct hprof_string *s)
{
    count_add(&op->st->names_dropped, s->length);
    return HPROF_OK;
}

/* Every name held goes out, and those read from now on as they come. */
static int keep_all(struct one_pass *op)
{
    count_add(&op->st->window_by_rule, op->names.n_bytes);
    op->hold_names = 0;
    int rc = each_held(op, write_name);
    one_pass_names_free(op);
    return rc;
}

int one_pass_names_string(struct one_pass *op, const struct hprof_string *s)
{
    if (!op->hold_names || idmap_has(&op->names.used, s->id))
        return hprof_visit_string(op->head, s);
    int rc = hold(op, s);
    if (rc == HPROF_OK && op->names.n_bytes > op->names.limit)
        rc = keep_all(op);
    return rc;
}

int one_pass_names_use(struct one_pass *op, uint64_t id)
{
    struct held_names *n = &op->names;
    uint64_t at;
    if (!op->hold_names || id == 0 || idmap_has(&n->used, id))
        return HPROF_OK;
    if (idmap_put(&n->used, id, 0) != HPROF_OK)
        return nomem(op);
    if (!id_table_take(&n->index, id, &at))
        return HPROF_OK; /* not read yet: written as it comes */
    if (op->in_segment && op->seg.tag == HPROF_TAG_HEAP_DUMP) {
        /* a name between two parts of a HEAP_DUMP would make it two heap
         * dumps: it follows the record */
        uint64_t *after = grow_array(n->after, &n->cap_after, n->n_after + 1, sizeof *after);
        if (after == NULL)
            return nomem(op);
        n->after = after;
        n->after[n->n_after++] = at - 1;
        return HPROF_OK;
    }
    struct hprof_string s = name_at(n, at - 1);
    return hprof_visit_string(op->head, &s);
}

int one_pass_names_after_record(struct one_pass *op)
{
    struct held_names *n = &op->names;
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && i < n->n_after; i++) {
        struct hprof_string s = name_at(n, n->after[i]);
        rc = hprof_visit_string(op->head, &s);
    }
    n->n_after = 0;
    return rc;
}

int one_pass_names_record(struct one_pass *op, const struct hprof_record *r)
{
    uint64_t ids[3];
    unsigned n;
    int rc = names_of_record(r, op->ctx.ids, ids, &n, op->ctx.err);
    for (unsigned i = 0; rc == HPROF_OK && i < n; i++)
        rc = one_pass_names_use(op, ids[i]);
    return rc;
}

/* Name `id`, which a class dump inside a segment refers to: written at
 * the segment's end, with the class dump after it (*wait), unless it is
 * written already.  A name between the records of one segment would cost
 * a segment header, and a HEAP_DUMP_INFO repeated, each time. */
static int use_at_segment_end(struct one_pass *op, uint64_t id, int *wait)
{
    struct held_names *n = &op->names;
    uint64_t at;
    if (id == 0 || !op->hold_names)
        return HPROF_OK;
    if (idmap_has(&n->waiting, id)) {
        *wait = 1;
        return HPROF_OK;
    }
    if (idmap_has(&n->used, id))
        return HPROF_OK;
    if (idmap_put(&n->used, id, 0) != HPROF_OK)
        return nomem(op);
    if (!id_table_take(&n->index, id, &at))
        return HPROF_OK; /* not read yet: written as it comes */
    uint64_t *next = grow_array(n->next, &n->cap_next, n->n_next + 1, sizeof *next);
    if (next == NULL || idmap_put(&n->waiting, id, 0) != HPROF_OK)
        return nomem(op);
    n->next = next;
    n->next[n->n_next++] = at - 1;
    *wait = 1;
    return HPROF_OK;
}

int one_pass_names_class_dump(struct one_pass *op, const struct hprof_class_dump *cd, int *wait)
{
    int rc = HPROF_OK;
    int in_segment = op->in_segment && op->seg.tag == HPROF_TAG_HEAP_DUMP_SEGMENT;
    *wait = 0;
    for (unsigned i = 0; rc == HPROF_OK && i < cd->n_statics + cd->n_fields; i++) {
        uint64_t id = i < cd->n_statics ? cd->statics[i].name_id
                                         : cd->fields[i - cd->n_statics].name_id;
        rc = in_segment ? use_at_segment_end(op, id, wait) : one_pass_names_use(op, id);
    }
    return rc;
}

int one_pass_names_between_segments(struct one_pass *op)
{
    struct held_names *n = &op->names;
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && i < n->n_next; i++) {
        struct hprof_string s = name_at(n, n->next[i]);
        rc = hprof_visit_string(op->head, &s);
    }
    n->n_next = 0;
    if (n->waiting.count > 0 && idmap_reset(&n->waiting) != HPROF_OK)
        rc = nomem(op);
    return rc;
}

/* The input ended: what nothing referred to is dropped.  A dump that uses
 * no name at all keeps them, as the multi-pass shrink does: dropping every
 * one could leave no record, which is not a valid dump. */
int one_pass_names_end(struct one_pass *op)
{
    struct held_names *n = &op->names;
    if (op->hold_names && n->used.count == 0 && n->index.count > 0) {
        int rc = keep_all(op);
        op->st->window_by_rule = (struct hprof_count){ 0, 0 }; /* not the rule: the dump's shape */
        return rc;
    }
    each_held(op, count_dropped);
    one_pass_names_free(op);
    return HPROF_OK;
}

void one_pass_names_free(struct one_pass *op)
{
    struct held_names *n = &op->names;
    free(n->bytes);
    free(n->after);
    free(n->next);
    n->next = NULL;
    n->n_next = n->cap_next = 0;
    id_table_free(&n->index);
    n->bytes = NULL;
    n->after = NULL;
    n->n_bytes = n->cap_bytes = n->n_after = n->cap_after = 0;
}
