/*
 * ring.h - a bounded ring of bytes between two threads, one writing and
 * one reading it as a stream (hprof_read_fn, or in place).
 *
 * The ring is what lets code written to push bytes (a decompressor, a
 * pipe's pump, a dump writer's write() hook) feed a reader that pulls
 * them, with nothing written to disk: a writer blocks while the ring is
 * full (back-pressure), the reader while it is empty.  Either side can
 * stop the other: the writer ends the stream (cleanly, or with its error,
 * which the reader gets after the bytes before it), the reader closes it
 * (the writer's next write fails with the reader's error).
 */
#ifndef HPROF_RING_H
#define HPROF_RING_H

#include <stddef.h>
#include <stdint.h>

#include "hprof.h"

#define PUSH_RING_BYTES (4u << 20)

struct push_ring;

/* A ring of `cap` bytes.  NULL when out of memory (`err` set). */
struct push_ring *ring_new(size_t cap, struct hprof_error *err);
/* Both sides are done with it. */
void ring_free(struct push_ring *g);
/* The writer's: `len` bytes, waiting for room as long as needed.  @return
 * HPROF_OK, or, once the reader closed the ring, its code (`err` says the
 * reader stopped). */
int ring_write(struct push_ring *g, const void *buf, size_t len, struct hprof_error *err);
/* The writer's: what one read() of `fd` gives, read into the ring
 * (waiting for room first); *got 0 at the end of the file.  @return
 * HPROF_OK, the read's error, or the reader's code once it closed. */
int ring_write_from(struct push_ring *g, int fd, size_t *got, struct hprof_error *err);
/* The writer's: the stream ends here; with `why` (not NULL, code set) the
 * reader gets that error, after the bytes written before it. */
void ring_end(struct push_ring *g, const struct hprof_error *why);
/* The reader's, an hprof_read_fn over the ring `ctx`. */
int ring_read(void *ctx, void *buf, size_t len, size_t *got, struct hprof_error *err);
/* The reader's, without a copy: the bytes at its place, *len of them at
 * *at, once there are `want`, or all there are before the ring's end
 * (where they continue at its start), or the writer ended it (*ended,
 * only once none are left: the end, and no error).  They stay the reader's, the writer leaving
 * them alone, until ring_advance() gives them back.  @return HPROF_OK, or
 * the writer's error once nothing is left before it. */
int ring_peek(struct push_ring *g, size_t want, const uint8_t **at, size_t *len, int *ended,
              struct hprof_error *err);
/* The reader's: its first `n` bytes are read. */
void ring_advance(struct push_ring *g, size_t n);
/* The reader's: it reads no more; writes fail with `code` from now on. */
void ring_close(struct push_ring *g, int code);

#endif
