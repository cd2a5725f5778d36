/*
 * push.c - the push interface on a ring (see push.h).  The consumer of a
 * push runs as an errand (a pool of one worker, so that threads start in
 * pool.c alone).
 */
#include <stdlib.h>
#include <string.h>

#include "errand.h"
#include "push.h"
#include "reader_internal.h"

/* ---- The push ---------------------------------------------------------------- */

struct push {
    struct push_ring *ring;
    struct errand *worker;
    push_consume_fn consume;
    void *ctx;
    struct hprof_error *err;    /* the caller's */
    struct hprof_error own;     /* the consumer's, until handed to `err` */
    int rc;                     /* the consumer's result, once it returned */
    int ended;                  /* the writing side has ended the ring */
};

/* On the worker: a stream reader over the ring, to the consumer.  Its
 * result is set before the ring is closed, so that a writer who finds it
 * closed finds the result too (the ring's lock orders them). */
static void consume_ring(void *arg)
{
    struct push *p = arg;
    struct hprof_reader *r;
    int rc = reader_open_stream(&r, ring_read, p->ring, NULL, &p->own);
    if (rc == HPROF_OK) {
        reader_stream_from_ring(r, p->ring);
        rc = p->consume(p->ctx, r, &p->own);
        hprof_reader_free(r);
    }
    p->rc = rc;
    ring_close(p->ring, rc);
}

int push_new(struct push **out, push_consume_fn consume, void *ctx, struct hprof_error *err)
{
    *out = NULL;
    struct push *p = calloc(1, sizeof *p);
    if (p == NULL)
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
    p->consume = consume;
    p->ctx = ctx;
    p->err = err;
    if ((p->ring = ring_new(PUSH_RING_BYTES, err)) == NULL) {
        free(p);
        return err->code;
    }
    if ((p->worker = errand_new(consume_ring, p)) == NULL) {
        ring_free(p->ring);
        free(p);
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory or threads");
    }
    errand_run(p->worker);
    *out = p;
    return HPROF_OK;
}

/* The consumer has returned: its result, and its message in the caller's. */
static int consumer_result(struct push *p)
{
    if (p->rc != HPROF_OK)
        *p->err = p->own;
    return p->rc;
}

int push_write(struct push *p, const void *buf, size_t len)
{
    if (p->ended)
        return hprof_error_set(p->err, HPROF_ERR_USAGE, "write after the end of the dump");
    struct hprof_error ignored = { 0 };
    if (ring_write(p->ring, buf, len, &ignored) == HPROF_OK)
        return HPROF_OK;
    errand_wait(p->worker); /* it closed the ring as it returned */
    return consumer_result(p);
}

int push_finish(struct push *p)
{
    if (!p->ended) {
        p->ended = 1;
        ring_end(p->ring, NULL);
    }
    errand_wait(p->worker);
    return consumer_result(p);
}

void push_free(struct push *p)
{
    if (p == NULL)
        return;
    if (!p->ended) {
        struct hprof_error why = { 0 };
        hprof_error_set(&why, HPROF_ERR_USAGE, "the push was freed before the end of the dump");
        p->ended = 1;
        ring_end(p->ring, &why);
    }
    errand_free(p->worker);
    ring_free(p->ring);
    free(p);
}
