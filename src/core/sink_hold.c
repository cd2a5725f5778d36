/*
 * sink_hold.c - a sink in front of another that can hold back what is
 * written to it, so that bytes not gone on yet can still be changed where
 * the sink behind cannot patch them (a pipe, gzip, zstd, memory).  The
 * one-pass shrink writes, under --redact, a filler for each name nothing
 * has used when an Android heap dump begins, and a name's own text over
 * its filler when a record uses it (ART dumps its classes among its
 * objects): only until those bytes are gone.
 *
 * Outside a hold every write goes straight on.  In a hold the bytes
 * gather in the sink's room, grown by doubling up to the hold's limit;
 * past the limit, or when released, they go on whole, and writes go
 * straight on again.
 */
#include <stdlib.h>
#include <string.h>

#include "sink_private.h"

#define HOLD_FIRST ((size_t)64 << 10)

struct hold_sink {
    struct hprof_sink base;     /* its room is `held` while holding */
    struct hprof_sink *next;
    uint8_t *held;
    size_t limit;
    uint64_t from;              /* the output offset of held[0] */
    int holding;
};

static struct hold_sink *self(struct hprof_sink *s)
{
    return (struct hold_sink *)s;
}

/* What is held goes on, and writes go straight on after it. */
static int let_go(struct hold_sink *h)
{
    size_t n = h->base.room_len;
    h->holding = 0;
    h->base.room = NULL;
    h->base.room_len = h->base.room_cap = 0;
    int rc = n > 0 ? hprof_sink_write(h->next, h->held, n) : HPROF_OK;
    free(h->held);
    h->held = NULL;
    return rc;
}

/* The room holds `need` bytes or more, within the limit.  @return 0 when
 * that would pass it, or memory for it is not to be had: holding is a
 * help, not a need (what could not wait keeps its filler, counted). */
static int room_for(struct hold_sink *h, size_t need)
{
    if (need > h->limit)
        return 0;
    size_t cap = h->base.room_cap ? h->base.room_cap : HOLD_FIRST;
    if (cap > h->limit)
        cap = h->limit;
    while (cap < need)
        cap = cap > h->limit / 2 ? h->limit : cap * 2;
    uint8_t *grown = realloc(h->held, cap);
    if (grown == NULL)
        return 0;
    h->held = h->base.room = grown;
    h->base.room_cap = cap;
    return 1;
}

/* `len` bytes that do not fit what is left of the room: held if the
 * hold has room for them, else on (the hold ended first). */
static int hold_write(struct hprof_sink *s, const void *buf, size_t len)
{
    struct hold_sink *h = self(s);
    if (h->holding && room_for(h, s->room_len + len)) {
        memcpy(h->held + s->room_len, buf, len);
        s->room_len += len;
        return HPROF_OK;
    }
    int rc = h->holding ? let_go(h) : HPROF_OK;
    return rc == HPROF_OK ? hprof_sink_write(h->next, buf, len) : rc;
}

static int hold_finish(struct hprof_sink *s)
{
    struct hold_sink *h = self(s);
    return h->holding ? let_go(h) : HPROF_OK;
}

static void hold_free(struct hprof_sink *s)
{
    struct hold_sink *h = self(s);
    free(h->held);
    free(h);
}

static const struct sink_ops hold_ops = { .write = hold_write, .finish = hold_finish,
                                          .free = hold_free };

struct hprof_sink *sink_hold_new(struct hprof_sink *next, struct hprof_error *err)
{
    struct hold_sink *h = calloc(1, sizeof *h);
    if (h == NULL) {
        hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    h->base.ops = &hold_ops;
    h->base.err = err;
    h->next = next;
    return &h->base;
}

int sink_hold_start(struct hprof_sink *s, size_t limit)
{
    struct hold_sink *h = self(s);
    if (s->failed || s->finished)
        return hprof_error_set(s->err, HPROF_ERR_USAGE, "hold on a failed or finished sink");
    if (h->holding)
        return HPROF_OK;
    h->holding = 1;
    h->limit = limit;
    h->from = s->bytes;
    if (!room_for(h, limit < HOLD_FIRST ? limit : HOLD_FIRST))
        h->holding = 0; /* nothing held: the fillers stay, counted */
    return HPROF_OK;
}

int sink_hold_patch(struct hprof_sink *s, uint64_t at, const void *buf, size_t len)
{
    struct hold_sink *h = self(s);
    if (!h->holding || s->failed || at < h->from || at - h->from > s->room_len ||
        len > s->room_len - (at - h->from))
        return 0;
    memcpy(h->held + (at - h->from), buf, len);
    return 1;
}

int sink_hold_release(struct hprof_sink *s)
{
    struct hold_sink *h = self(s);
    if (!h->holding || s->failed)
        return HPROF_OK;
    int rc = let_go(h);
    if (rc != HPROF_OK)
        s->failed = 1;
    return rc;
}

int sink_holding(const struct hprof_sink *s)
{
    return ((const struct hold_sink *)s)->holding;
}
