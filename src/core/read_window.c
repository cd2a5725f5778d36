/*
 * read_window.c - the bytes a reader parses: one window (`cur`..`lim`)
 * over a buffer refilled with large pread()s, or over the whole input when
 * it is in memory or mapped (hprof_reader_map()).
 *
 * A mapping costs no copy, and the contents of arrays a pass skips are
 * never touched.  Pages behind the reading position are then released
 * every RELEASE_STEP bytes, between records and between chunks of an array,
 * so that resident memory stays bounded by that step, not by the file.  A
 * run can also have another thread touch the pages a little ahead of the
 * reading position (hprof_reader_set_threads()): the page faults, and
 * reading any page not yet cached, then happen on another core.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"
#include "ring.h"
#include "reader_private.h"

#define RELEASE_STEP (8u << 20)
/* The read-ahead thread touches a page every PAGE_STEP bytes up to
 * READ_AHEAD bytes past the last reading position published (every
 * CHECK_STEP), and waits (pool_idle_wait()) when it is there. */
#define READ_AHEAD (4u << 20)
#define PAGE_STEP 4096u

void window_seek(struct read_window *w, uint64_t offset)
{
    w->skipped_segment = 0;
    if (w->mem != NULL) {
        w->cur = w->mem + offset;
        w->lim = w->mem + w->size;
    } else {
        w->cur = w->lim = w->buf;
    }
    w->pos = offset;
}

int window_pread(const struct read_window *w, uint64_t offset, void *dst, size_t len,
                 struct hprof_error *err)
{
    for (uint8_t *to = dst; len > 0;) {
        ssize_t n = pread(w->fd, to, len, (off_t)offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return hprof_error_set(err, HPROF_ERR_IO, "offset 0x%" PRIx64 ": read: %s",
                                   offset, strerror(errno));
        if (n == 0)
            return hprof_error_set(err, HPROF_ERR_IO,
                                   "offset 0x%" PRIx64 ": read: input shrank while reading",
                                   offset);
        to += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    return HPROF_OK;
}

int window_read_at(const struct read_window *w, uint64_t offset, void *dst, size_t len,
                   struct hprof_error *err)
{
    if (w->fd >= 0)
        return window_pread(w, offset, dst, len, err);
    memcpy(dst, w->mem + offset, len);
    return HPROF_OK;
}

/* The buffer, grown to hold `n` bytes, with the `have` bytes at `cur`
 * moved to its start. */
static int make_room(struct read_window *w, size_t n, size_t have, struct hprof_error *err)
{
    if (n <= w->cap) {
        memmove(w->buf, w->cur, have);
        return HPROF_OK;
    }
    size_t cap = w->cap;
    while (cap < n)
        cap *= 2;
    uint8_t *grown = malloc(cap);
    if (grown == NULL)
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory (%zu bytes)", cap);
    memcpy(grown, w->cur, have);
    free(w->buf);
    w->buf = grown;
    w->cap = cap;
    return HPROF_OK;
}

/* ---- A stream ---------------------------------------------------------------- */

/* The stream has ended: its size is what it gave. */
static void stream_ended(struct read_window *w)
{
    w->stream->ended = 1;
    w->size = w->stream->got;
}

/* Read what the stream gives into the buffer after `lim`, once; at its
 * end, its size becomes known. */
static int stream_read(struct read_window *w, struct hprof_error *err)
{
    struct read_stream *s = w->stream;
    size_t got = 0;
    uint8_t *end = w->buf + w->cap;
    int rc = s->read(s->ctx, (uint8_t *)w->lim, (size_t)(end - w->lim), &got, err);
    if (rc != HPROF_OK && err->code == HPROF_OK) /* a read function that said nothing */
        return hprof_error_set(err, rc < 0 ? rc : HPROF_ERR_IO,
                               "offset 0x%" PRIx64 ": the read function failed (%d)", s->got, rc);
    if (rc != HPROF_OK)
        return rc;
    if (got == 0)
        stream_ended(w);
    s->got += got;
    w->lim += got;
    return HPROF_OK;
}

/* The window's `have` bytes at `cur` moved to the front of its buffer,
 * grown to hold `n`; where it cannot grow, the window stays as it was. */
static int into_buffer(struct read_window *w, size_t n, size_t have, struct hprof_error *err)
{
    int rc = make_room(w, n, have, err);
    if (rc == HPROF_OK) {
        w->cur = w->buf;
        w->lim = w->buf + have;
    }
    return rc;
}

/* The stream read into the buffer after `lim` until the window holds `n`
 * bytes or the stream has ended. */
static int read_until(struct read_window *w, size_t n, struct hprof_error *err)
{
    int rc = HPROF_OK;
    while (rc == HPROF_OK && window_avail(w) < n && !w->stream->ended)
        rc = stream_read(w, err);
    return rc;
}

/* The window holds `n` bytes, copied into its buffer, or the stream has
 * ended. */
static int stream_copy(struct read_window *w, size_t n, struct hprof_error *err)
{
    int rc = into_buffer(w, n, window_avail(w), err);
    return rc == HPROF_OK ? read_until(w, n, err) : rc;
}

/* ---- A stream from a ring, read in place ------------------------------------- */

/* The window lies over the ring's own bytes (`ring_at` the first not yet
 * given back) wherever what it needs does not cross the ring's end, and
 * is copied into its buffer only where it does: a pipe's bytes are then
 * copied once, by the thread that fills the ring.  What the reader passed
 * is given back to the ring at the next fill, since the record it parses
 * may point into it until then. */
static void ring_give_back(struct read_window *w)
{
    if (w->ring_at != NULL)
        ring_advance(w->stream->ring, (size_t)(w->cur - w->ring_at));
    w->ring_at = NULL;
}

static int ring_fill(struct read_window *w, size_t n, struct hprof_error *err)
{
    struct read_stream *s = w->stream;
    size_t have = window_avail(w), len;
    const uint8_t *at;
    int ended;
    if (w->ring_at == NULL && have > 0) /* bytes in the buffer: the rest after them */
        return stream_copy(w, n, err);
    ring_give_back(w); /* the `have` bytes, if any, stay the ring's first */
    int rc = ring_peek(s->ring, n, &at, &len, &ended, err);
    if (rc != HPROF_OK)
        return rc;
    s->got += len - have;
    w->cur = at;
    w->lim = at + len;
    if (ended)
        stream_ended(w);
    w->ring_at = at;
    if (len >= n || ended)
        return HPROF_OK;
    /* across the ring's end (or larger than the ring): into the buffer */
    if ((rc = into_buffer(w, n, len, err)) != HPROF_OK)
        return rc; /* the window stays over the ring's bytes */
    w->ring_at = NULL;
    ring_advance(s->ring, len);
    return read_until(w, n, err);
}

static int ring_skip(struct read_window *w, uint64_t n, struct hprof_error *err)
{
    struct read_stream *s = w->stream;
    size_t have = window_avail(w);
    window_consume(w, have);
    n -= have;
    ring_give_back(w);
    w->cur = w->lim = w->buf;
    while (n > 0 && !s->ended) {
        const uint8_t *at;
        size_t len;
        int ended;
        ring_give_back(w); /* what the last round passed over */
        int rc = ring_peek(s->ring, 1, &at, &len, &ended, err);
        if (rc != HPROF_OK)
            return rc;
        s->got += len;
        size_t used = len < n ? len : (size_t)n;
        w->ring_at = w->cur = at; /* the window over the rest */
        w->lim = at + len;
        window_consume(w, used);
        n -= used;
        if (ended)
            stream_ended(w);
    }
    return HPROF_OK;
}

static int stream_fill(struct read_window *w, size_t n, struct hprof_error *err)
{
    return w->stream->ring != NULL ? ring_fill(w, n, err) : stream_copy(w, n, err);
}

int window_stream_skip(struct read_window *w, uint64_t n, struct hprof_error *err)
{
    if (w->stream->ring != NULL)
        return ring_skip(w, n, err);
    n -= window_avail(w);
    w->pos += window_avail(w);
    w->cur = w->lim = w->buf;
    while (n > 0 && !w->stream->ended) {
        int rc = stream_read(w, err);
        if (rc != HPROF_OK)
            return rc;
        size_t used = window_avail(w) < n ? window_avail(w) : (size_t)n;
        window_consume(w, used);
        n -= used;
        if (w->cur == w->lim)
            w->cur = w->lim = w->buf;
    }
    return HPROF_OK;
}

/* n <= HPROF_MAX_RECORD, and the caller has checked that the input holds
 * them (a stream's size being unknown, it may end first). */
int window_fill(struct read_window *w, size_t n, struct hprof_error *err)
{
    if (w->mem != NULL)
        return HPROF_OK; /* unreachable: memory windows span the whole input */
    if (w->stream != NULL)
        return stream_fill(w, n, err);
    size_t have = window_avail(w);
    int rc = make_room(w, n, have, err);
    if (rc != HPROF_OK)
        return rc;
    w->cur = w->buf;
    w->lim = w->buf + have;
    uint64_t left = w->size - w->pos - have;
    size_t want = w->cap - have;
    if (want > left)
        want = (size_t)left;
    rc = window_pread(w, w->pos + have, w->buf + have, want, err);
    if (rc != HPROF_OK)
        return rc;
    w->lim += want;
    return HPROF_OK;
}

/* ---- The mapping ------------------------------------------------------------ */

int reader_mapped_file(const struct hprof_reader *r, const uint8_t **map, uint64_t *size)
{
    *map = r->in.map;
    *size = r->in.map != NULL ? r->in.size : 0;
    return r->in.map != NULL ? r->in.fd : -1;
}

int hprof_reader_map(struct hprof_reader *r)
{
    struct read_window *w = &r->in;
    if (w->map != NULL)
        return HPROF_OK;
    if (w->stream != NULL)
        return hprof_error_set(r->err, HPROF_ERR_USAGE,
                               "map: the reader reads a stream, which has no file to map");
    if (w->fd < 0)
        return hprof_error_set(r->err, HPROF_ERR_USAGE, "map: the reader does not read a file");
    if (w->size > SIZE_MAX)
        return hprof_error_set(r->err, HPROF_ERR_IO, "map: the file is too large to map");
    void *map = mmap(NULL, (size_t)w->size, PROT_READ, MAP_PRIVATE, w->fd, 0);
    if (map == MAP_FAILED)
        return hprof_error_set(r->err, HPROF_ERR_IO, "map: %s", strerror(errno));
    w->map = map;
    w->mem = map;
    w->released = 0;
    return HPROF_OK;
}

void window_free(struct read_window *w)
{
    if (w->stream != NULL && w->stream->close != NULL)
        w->stream->close(w->stream->ctx);
    free(w->stream);
    if (w->map != NULL)
        munmap(w->map, (size_t)w->size);
    free(w->buf);
}

/* Give back the pages of `map` from *released to `pos` once RELEASE_STEP
 * of them have gathered (the file stays in the page cache; only our
 * mapping of it goes). */
static void give_back(void *map, uint64_t *released, uint64_t pos)
{
    uint64_t upto = pos & ~(uint64_t)(sysconf(_SC_PAGESIZE) - 1);
    if (upto <= *released || upto - *released < RELEASE_STEP)
        return;
    madvise((uint8_t *)map + *released, (size_t)(upto - *released), MADV_DONTNEED);
    *released = upto;
}

void window_release_behind(struct read_window *w)
{
    if (w->map != NULL)
        give_back(w->map, &w->released, w->pos);
}

void window_release_all(struct read_window *w)
{
    if (w->map != NULL) {
        madvise(w->map, (size_t)w->size, MADV_DONTNEED);
        w->released = 0;
    }
}

void window_reread_from(struct read_window *w, uint64_t offset)
{
    window_seek(w, offset);
    if (w->map != NULL && w->released > offset) /* read again: give it back again */
        w->released = offset & ~(uint64_t)(sysconf(_SC_PAGESIZE) - 1);
}

/* ---- Reading at an offset ----------------------------------------------------- */

static int no_pread_of_stream(struct hprof_error *err)
{
    return hprof_error_set(err, HPROF_ERR_USAGE,
                           "pread: the reader reads a stream, once, front to back");
}

int hprof_reader_pread(struct hprof_reader *r, uint64_t offset, void *buf, size_t len)
{
    if (r->in.stream != NULL)
        return no_pread_of_stream(r->err);
    if (offset > r->in.size || len > r->in.size - offset)
        return hprof_error_set(r->err, HPROF_ERR_USAGE,
                               "pread of %zu bytes at 0x%" PRIx64 " is outside the input", len,
                               offset);
    if (r->in.mem != NULL) {
        memcpy(buf, r->in.mem + offset, len);
        return HPROF_OK;
    }
    return window_pread(&r->in, offset, buf, len, r->err);
}

int reader_pread_unmapped(const struct hprof_reader *r, uint64_t offset, void *buf, size_t len,
                          struct hprof_error *err)
{
    if (r->in.stream != NULL)
        return no_pread_of_stream(err);
    if (offset > r->in.size || len > r->in.size - offset)
        return hprof_error_set(err, HPROF_ERR_USAGE,
                               "pread of %zu bytes at 0x%" PRIx64 " is outside the input", len,
                               offset);
    return window_read_at(&r->in, offset, buf, len, err);
}

/* ---- The read-ahead thread ------------------------------------------------ */

/* Touches one byte of every page from the reading position to READ_AHEAD
 * past it: what the reader then finds mapped (and cached) costs it no
 * fault.  It reads only, like the reader; it never waits for it either.
 * On a file not yet cached it waits for the disk while the reader, which
 * skips arrays, gets ahead: what it maps may then be behind pages the
 * reader has given back, so it gives back what it mapped behind the
 * reader too.  It looks for the reader after every TOUCH_BATCH bytes, to
 * skip to it rather than map what the reader has passed. */
#define TOUCH_BATCH (64u << 10)

static void read_ahead_job(void *worker, void *job)
{
    struct read_ahead *a = job;
    uint64_t touched = 0;
    unsigned idle = 0;
    (void)worker;
    while (!atomic_load_explicit(&a->stop, memory_order_relaxed)) {
        uint64_t at = atomic_load_explicit(&a->reader_pos, memory_order_relaxed);
        give_back(a->map, &a->released, touched < at ? touched : at);
        uint64_t until = a->size - at > READ_AHEAD ? at + READ_AHEAD : a->size;
        if (touched < at)
            touched = at - at % PAGE_STEP;
        if (touched >= until) {
            if (until == a->size)
                break;
            pool_idle_wait(&idle);
            continue;
        }
        idle = 0;
        uint64_t batch_end = until - touched > TOUCH_BATCH ? touched + TOUCH_BATCH : until;
        for (; touched < batch_end; touched += PAGE_STEP)
            (void)a->mem[touched];
    }
}

void hprof_reader_set_threads(struct hprof_reader *r, unsigned threads)
{
    r->in.want_read_ahead = threads > 1;
}

void reader_set_readahead_thread(struct hprof_reader *r, int on)
{
    r->in.want_read_ahead = on;
}

/* The touching runs as the one job of a pool of one worker, for the
 * whole run; failing to start it only means the reader takes its own
 * faults. */
void window_start_read_ahead(struct read_window *w, struct read_ahead *a, uint64_t from)
{
    if (!w->want_read_ahead || w->map == NULL)
        return;
    a->mem = w->mem;
    a->map = w->map;
    a->size = w->size;
    a->released = from - from % PAGE_STEP;
    atomic_init(&a->reader_pos, from);
    atomic_init(&a->stop, 0);
    struct hprof_error ignored = { 0 };
    void *job = a;
    a->pool = pool_new(1, &job, 1, &job, read_ahead_job, &ignored);
    if (a->pool == NULL)
        return;
    pool_filling(a->pool);
    pool_submit(a->pool);
    w->ahead = a;
}

void window_publish_pos(struct read_window *w)
{
    if (w->ahead != NULL)
        atomic_store_explicit(&w->ahead->reader_pos, w->pos, memory_order_relaxed);
}

/* The job stops at its next look; freeing the pool waits for it. */
void window_stop_read_ahead(struct read_window *w)
{
    if (w->ahead == NULL)
        return;
    atomic_store_explicit(&w->ahead->stop, 1, memory_order_relaxed);
    pool_free(w->ahead->pool);
    w->ahead = NULL;
}
