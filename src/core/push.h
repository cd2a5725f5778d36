/*
 * push.h - a bounded ring of bytes between two threads, one writing and
 * one reading it as a stream (hprof_read_fn), and on it the library's push
 * interface: a caller writes a dump in pieces of any size while a consumer
 * runs a stream reader over them on a pool worker.
 *
 * The ring is what lets code written to push bytes (a decompressor, a dump
 * writer's write() hook) feed a reader that pulls them, with nothing
 * written to disk: a writer blocks while the ring is full (back-pressure),
 * the reader while it is empty.  Either side can stop the other: the
 * writer ends the stream (cleanly, or with its error, which the reader
 * gets after the bytes before it), the reader closes it (the writer's
 * next write fails with the reader's error).
 */
#ifndef HPROF_PUSH_H
#define HPROF_PUSH_H

#include <stddef.h>

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

/* What a push runs on its worker: a reader of the bytes pushed, to read
 * in one run.  Errors go to `err`. */
typedef int (*push_consume_fn)(void *ctx, struct hprof_reader *r, struct hprof_error *err);

struct push;

/* A push whose consumer `consume(ctx, reader, ...)` starts at once on a
 * worker of its own.  Messages of failures go to `err`, which must
 * outlive the push.  @return HPROF_OK and *out, or an error. */
int push_new(struct push **out, push_consume_fn consume, void *ctx, struct hprof_error *err);
/* The next `len` bytes of the dump; waits while the ring is full.
 * @return HPROF_OK, or the consumer's error once it has failed. */
int push_write(struct push *p, const void *buf, size_t len);
/* The dump ends: waits for the consumer.  @return its result. */
int push_finish(struct push *p);
/* Stops the consumer if it still runs (its reader sees the dump end with
 * an error), waits for it and frees. */
void push_free(struct push *p);

#endif
