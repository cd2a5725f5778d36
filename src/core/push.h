/*
 * push.h - the library's push interface, on a ring (ring.h): a caller
 * writes a dump in pieces of any size while a consumer runs a stream
 * reader over them on a pool worker.
 */
#ifndef HPROF_PUSH_H
#define HPROF_PUSH_H

#include <stddef.h>

#include "hprof.h"
#include "ring.h"

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
