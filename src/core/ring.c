/*
 * ring.c - the ring of bytes between a thread that writes and one that
 * reads them as a stream (see ring.h).  The ring is one buffer, `head` the
 * next byte to read and `count` the bytes held; one lock and two
 * conditions order the hand-overs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring.h"

struct push_ring {
    pthread_mutex_t lock;
    pthread_cond_t readable;    /* bytes arrived, or the end */
    pthread_cond_t writable;    /* room was made, or the reader closed */
    uint8_t *buf;
    size_t cap, head, count;
    int ended;                  /* the writer's end */
    struct hprof_error end_err; /* ... with this error, if its code is set */
    int closed;                 /* the reader's close */
    int close_code;
};

struct push_ring *ring_new(size_t cap, struct hprof_error *err)
{
    struct push_ring *g = calloc(1, sizeof *g);
    uint8_t *buf = malloc(cap);
    if (g == NULL || buf == NULL) {
        free(g);
        free(buf);
        hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory (%zu bytes)", cap);
        return NULL;
    }
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->readable, NULL);
    pthread_cond_init(&g->writable, NULL);
    g->buf = buf;
    g->cap = cap;
    return g;
}

void ring_free(struct push_ring *g)
{
    if (g == NULL)
        return;
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->readable);
    pthread_cond_destroy(&g->writable);
    free(g->buf);
    free(g);
}

/* Room for the writer, contiguous, waiting while there is none: *room
 * bytes at *at, 0 once the reader closed the ring.  One writer and one
 * reader: the bytes between the reader's head and the end of what was
 * written are the reader's, the rest the writer's, so each copies outside
 * the lock and only the counts change under it. */
static void room_to_write(struct push_ring *g, uint8_t **at, size_t *room)
{
    pthread_mutex_lock(&g->lock);
    while (g->count == g->cap && !g->closed)
        pthread_cond_wait(&g->writable, &g->lock);
    size_t tail = (g->head + g->count) % g->cap;
    size_t n = g->cap - g->count; /* room, in at most two pieces */
    if (n > g->cap - tail)
        n = g->cap - tail;
    *at = g->buf + tail;
    *room = g->closed ? 0 : n;
    pthread_mutex_unlock(&g->lock);
}

static void wrote(struct push_ring *g, size_t n)
{
    pthread_mutex_lock(&g->lock);
    g->count += n;
    pthread_cond_signal(&g->readable);
    pthread_mutex_unlock(&g->lock);
}

static int closed_by_reader(struct push_ring *g, struct hprof_error *err)
{
    pthread_mutex_lock(&g->lock);
    int code = g->close_code != HPROF_OK ? g->close_code : HPROF_ERR_USAGE;
    pthread_mutex_unlock(&g->lock);
    return hprof_error_set(err, code, "the reader of the stream stopped reading");
}

int ring_write(struct push_ring *g, const void *buf, size_t len, struct hprof_error *err)
{
    const uint8_t *p = buf;
    while (len > 0) {
        uint8_t *at;
        size_t n;
        room_to_write(g, &at, &n);
        if (n == 0)
            return closed_by_reader(g, err);
        if (n > len)
            n = len;
        memcpy(at, p, n);
        wrote(g, n);
        p += n;
        len -= n;
    }
    return HPROF_OK;
}

int ring_write_from(struct push_ring *g, int fd, size_t *got, struct hprof_error *err)
{
    uint8_t *at;
    size_t room;
    room_to_write(g, &at, &room);
    if (room == 0)
        return closed_by_reader(g, err);
    ssize_t n;
    do
        n = read(fd, at, room);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return hprof_error_set(err, HPROF_ERR_IO, "read: %s", strerror(errno));
    if (n > 0)
        wrote(g, (size_t)n);
    *got = (size_t)n;
    return HPROF_OK;
}

void ring_end(struct push_ring *g, const struct hprof_error *why)
{
    pthread_mutex_lock(&g->lock);
    g->ended = 1;
    if (why != NULL)
        g->end_err = *why;
    pthread_cond_signal(&g->readable);
    pthread_mutex_unlock(&g->lock);
}

int ring_read(void *ctx, void *buf, size_t len, size_t *got, struct hprof_error *err)
{
    struct push_ring *g = ctx;
    const uint8_t *at;
    size_t n;
    int ended;
    int rc = ring_peek(g, 1, &at, &n, &ended, err);
    if (n > len)
        n = len;
    memcpy(buf, at, n); /* the writer leaves these bytes alone until we move on */
    ring_advance(g, n);
    *got = n;
    return rc;
}

int ring_peek(struct push_ring *g, size_t want, const uint8_t **at, size_t *len, int *ended,
              struct hprof_error *err)
{
    int rc = HPROF_OK;
    pthread_mutex_lock(&g->lock);
    /* enough, or all there is before the ring wraps, or the end */
    while (g->count < want && g->count < g->cap - g->head && !g->ended)
        pthread_cond_wait(&g->readable, &g->lock);
    size_t n = g->count < g->cap - g->head ? g->count : g->cap - g->head;
    *at = g->buf + g->head;
    *len = n;
    /* the end once it is reached, as read() tells it, not while bytes
     * remain: the reader's message for a cut then does not depend on how
     * far the writer had got */
    *ended = g->ended && n == 0 && g->end_err.code == HPROF_OK;
    if (n == 0 && g->ended && g->end_err.code != HPROF_OK) {
        rc = g->end_err.code;
        *err = g->end_err;
    }
    pthread_mutex_unlock(&g->lock);
    return rc;
}

void ring_advance(struct push_ring *g, size_t n)
{
    if (n == 0)
        return;
    pthread_mutex_lock(&g->lock);
    g->head = (g->head + n) % g->cap;
    g->count -= n;
    pthread_cond_signal(&g->writable);
    pthread_mutex_unlock(&g->lock);
}

void ring_close(struct push_ring *g, int code)
{
    pthread_mutex_lock(&g->lock);
    g->closed = 1;
    g->close_code = code != HPROF_OK ? code : HPROF_ERR_USAGE;
    pthread_cond_signal(&g->writable);
    pthread_mutex_unlock(&g->lock);
}
