/*
 * one_pass_spill.c - a second window, on disk: large arrays that wait for
 * a claim past the window, set aside in the output file's scratch area
 * (sink_scratch_write()).
 *
 * A collector may place a pixel buffer far from its Bitmap: a
 * bitmap-heavy HotSpot dump of 2 GB had 69-89 of them more than 64 MiB
 * before, and an Android one a buffer larger than the window.  Decided by
 * the rule, such a buffer loses its pixels.  Where the output goes to a
 * file that can be read again (compressed or not), an array of SPILL_MIN
 * bytes or more that the rule would decide goes to the scratch area
 * instead, and waits there:
 * claimed, it goes down the chain at once with its verdict, its contents
 * read back (a String's value that waits for keep rules, when its heap
 * dump ends); past the spill limit, the oldest unclaimed leave by the
 * rule, as in the window; when the heap dump ends, those still waiting
 * go as nobody's.  Only large arrays are set aside: those a claim comes
 * late for are buffers, while the millions of small arrays the rule
 * decides in an Android dump would double the writes for nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "one_pass_private.h"
#include "sink_private.h"

/* Arrays from this size may be set aside. */
#define SPILL_MIN ((uint64_t)64 << 10)
/* An array is set aside only where its file system keeps this much free
 * after it, for the output: on a small disk the rule decides instead. */
#define SPILL_RESERVE ((uint64_t)256 << 20)
#define SPILL_CHUNK ((size_t)1 << 20)

static int nomem(struct one_pass *op)
{
    return rewrite_nomem(&op->ctx);
}

int one_pass_spill_init(struct one_pass *op)
{
    struct one_pass_spill *s = &op->spill;
    uint64_t limit = op->opt.spill;
    memset(s, 0, sizeof *s);
    if (limit == HPROF_SPILL_OFF || !sink_has_scratch(op->sink))
        return HPROF_OK;
    s->limit = limit != 0 ? limit : 8 * op->window.limit;
    return HPROF_OK;
}

void one_pass_spill_free(struct one_pass *op)
{
    struct one_pass_spill *s = &op->spill;
    free(s->list);
    free(s->chunk);
    id_table_free(&s->index);
    memset(s, 0, sizeof *s);
}

int one_pass_spill_pending(const struct one_pass *op)
{
    return op->spill.waiting_bytes > 0;
}

/* Entry `e` goes down the chain with verdict `keep`: its contents from
 * `data`, or read back chunk by chunk (of the first `have` bytes, all
 * there are) until a filter has what it needs (HPROF_SKIP: the rest is
 * dropped or rewritten).  Its scratch bytes are then given back. */
static int send_from(struct one_pass *op, struct spilled *e, enum array_keep keep,
                     const uint8_t *data, uint64_t have)
{
    struct one_pass_spill *s = &op->spill;
    if (data == NULL && s->chunk == NULL && (s->chunk = malloc(SPILL_CHUNK)) == NULL)
        return nomem(op);
    uint64_t ignored;
    id_table_take(&s->index, e->array.id, &ignored);
    e->sent = 1;
    s->waiting_bytes -= e->array.length;
    int rc = one_pass_switch_heap(op, e->heap);
    struct hprof_primitive_array a = e->array;
    if (rc == HPROF_OK)
        rc = one_pass_give_verdict(op, &a, keep);
    do {
        size_t left = (size_t)(have - a.first);
        a.length = data != NULL || left < SPILL_CHUNK ? left : SPILL_CHUNK;
        a.data = data != NULL ? data + a.first : s->chunk;
        if (rc == HPROF_OK && data == NULL)
            rc = sink_scratch_read(op->sink, e->at + a.first, s->chunk, a.length);
        if (rc == HPROF_OK)
            rc = hprof_visit_primitive_array(op->head, &a);
        a.first += a.length;
    } while (rc == HPROF_OK && a.first < have);
    sink_scratch_release(op->sink, e->at, e->array.length);
    return rc;
}

int one_pass_spill_send(struct one_pass *op, struct spilled *e, enum array_keep keep,
                        const uint8_t *data)
{
    return one_pass_quiet_skip(send_from(op, e, keep, data, e->array.length));
}

/* The oldest array waiting unclaimed leaves by the rule (a claimed one,
 * a String's value that waits for keep rules, waits on).  *gone 0: there
 * is none. */
static int let_go_oldest(struct one_pass *op, int *gone)
{
    struct one_pass_spill *s = &op->spill;
    while (s->oldest < s->n && s->list[s->oldest].sent)
        s->oldest++;
    size_t i = s->oldest;
    while (i < s->n && (s->list[i].sent || s->list[i].keep != ARRAY_NOT_KEPT))
        i++;
    *gone = i < s->n;
    if (!*gone)
        return HPROF_OK;
    count_add(&op->st->window_by_rule, s->list[i].array.length);
    return one_pass_spill_send(op, &s->list[i], ARRAY_NOT_KEPT, NULL);
}

/* The file refused a write (its file system full, a limit on file size):
 * nothing more is set aside, and what waits unclaimed leaves by the rule
 * now, its blocks given back, so that the output has the room they took
 * (a small disk would otherwise fail a run whose output fits it). */
static int stop_setting_aside(struct one_pass *op)
{
    int rc = HPROF_OK, gone = 1;
    op->spill.limit = 0;
    while (rc == HPROF_OK && gone)
        rc = let_go_oldest(op, &gone);
    return rc;
}

/* Room for `bytes` more to wait, made by the rule; *room 0 where there is
 * none (larger than the limit, or what waits is claimed). */
static int make_room(struct one_pass *op, uint64_t bytes, int *room)
{
    struct one_pass_spill *s = &op->spill;
    int rc = HPROF_OK;
    *room = bytes >= SPILL_MIN && bytes <= s->limit;
    while (*room && rc == HPROF_OK && s->waiting_bytes > s->limit - bytes)
        rc = let_go_oldest(op, room);
    return rc;
}

/* A new entry for array `a` (its first `have` bytes at `data`), whose data
 * goes to the scratch area.  *added 0: it could not (the file refused). */
static int add(struct one_pass *op, const struct hprof_primitive_array *a, uint64_t bytes,
               uint32_t heap, const uint8_t *data, size_t have, int *added)
{
    struct one_pass_spill *s = &op->spill;
    *added = 0;
    if (s->end + bytes > NAMES_SCRATCH_AT) {
        s->limit = 0; /* the area is used up: the rule, from here */
        return HPROF_OK;
    }
    uint64_t room = sink_scratch_room(op->sink);
    if (room < SPILL_RESERVE || room - SPILL_RESERVE < bytes)
        return stop_setting_aside(op);
    if (sink_scratch_write(op->sink, s->end, data, have) != HPROF_OK) {
        sink_scratch_release(op->sink, s->end, have); /* what a short write wrote */
        return stop_setting_aside(op);
    }
    struct spilled *grown = grow_array(s->list, &s->cap, s->n + 1, sizeof *grown);
    if (grown == NULL || id_table_put(&s->index, a->id, s->n + 1) != HPROF_OK) {
        s->list = grown != NULL ? grown : s->list;
        return nomem(op);
    }
    s->list = grown;
    struct spilled *e = &s->list[s->n++];
    memset(e, 0, sizeof *e);
    e->array = *a;
    e->array.first = 0;
    e->array.data = NULL;
    e->array.length = (size_t)bytes;
    e->at = s->end;
    e->heap = heap;
    e->keep = ARRAY_NOT_KEPT;
    s->end += bytes;
    s->waiting_bytes += bytes;
    count_add(&op->st->window_spilled, bytes);
    *added = 1;
    return HPROF_OK;
}

int one_pass_spill_held(struct one_pass *op, const struct held *h, int *spilled)
{
    const struct hprof_primitive_array *a = &h->rec.array;
    int room;
    *spilled = 0;
    int rc = op->spill.limit > 0 ? make_room(op, a->length, &room) : HPROF_OK;
    if (rc != HPROF_OK || op->spill.limit == 0 || !room)
        return rc;
    return add(op, a, a->length, h->heap, a->data, a->length, spilled);
}

int one_pass_spill_begin(struct one_pass *op, const struct hprof_primitive_array *a,
                         uint64_t bytes, int *spilled)
{
    struct one_pass_spill *s = &op->spill;
    int room;
    *spilled = 0;
    int rc = s->limit > 0 ? make_room(op, bytes, &room) : HPROF_OK;
    if (rc != HPROF_OK || s->limit == 0 || !room)
        return rc;
    rc = add(op, a, bytes, op->in_heap, a->data, a->length, spilled);
    if (rc == HPROF_OK && *spilled && a->length < bytes) {
        s->open = s->n;
        s->open_have = a->length;
    }
    return rc;
}

/* The next chunk of the array being set aside.  Where the file refuses
 * it, the array goes by the rule from the chunks it has (a filter takes
 * its decision on the first), and the reader skips the rest. */
int one_pass_spill_chunk(struct one_pass *op, const struct hprof_primitive_array *a)
{
    struct one_pass_spill *s = &op->spill;
    struct spilled *e = &s->list[s->open - 1];
    if (a->id != e->array.id || a->first != s->open_have ||
        a->length > e->array.length - s->open_have)
        return hprof_error_set(op->ctx.err, HPROF_ERR_FORMAT, "offset 0x%llx: "
                               "PRIMITIVE_ARRAY_DUMP: chunks out of order",
                               (unsigned long long)a->offset);
    if (sink_scratch_write(op->sink, e->at + s->open_have, a->data, a->length) != HPROF_OK) {
        s->open = 0;
        count_add(&op->st->window_by_rule, e->array.length);
        int rc = send_from(op, e, ARRAY_NOT_KEPT, NULL, s->open_have);
        if (rc == HPROF_OK || rc == HPROF_SKIP)
            rc = stop_setting_aside(op);
        return rc == HPROF_OK ? HPROF_SKIP : rc;
    }
    s->open_have += a->length;
    if (s->open_have == e->array.length)
        s->open = 0;
    return HPROF_OK;
}

struct spilled *one_pass_spill_find(struct one_pass *op, uint64_t id)
{
    struct one_pass_spill *s = &op->spill;
    uint64_t *at = s->waiting_bytes > 0 ? id_table_find(&s->index, id) : NULL;
    return at != NULL ? &s->list[*at - 1] : NULL;
}

int one_pass_spill_read(struct one_pass *op, const struct spilled *e, uint8_t *buf)
{
    return sink_scratch_read(op->sink, e->at, buf, e->array.length);
}

int one_pass_spill_flush(struct one_pass *op)
{
    struct one_pass_spill *s = &op->spill;
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && i < s->n; i++)
        if (!s->list[i].sent)
            rc = one_pass_spill_send(op, &s->list[i], (enum array_keep)s->list[i].keep, NULL);
    return rc;
}

void one_pass_spill_reset(struct one_pass *op)
{
    struct one_pass_spill *s = &op->spill;
    s->n = s->oldest = 0;
    s->end = s->waiting_bytes = 0;
    s->open = 0;
    id_table_free(&s->index);
}
