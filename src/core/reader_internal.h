/*
 * reader_internal.h - what the library's own passes ask of a reader
 * (reader.c) beyond the public API: clones of it, runs over part of the
 * input, and where its mapping is.
 */
#ifndef HPROF_READER_INTERNAL_H
#define HPROF_READER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "hprof.h"

struct push_ring;

/* hprof_reader_open_stream() handing `ctx` over: hprof_reader_free() calls
 * close(ctx) (also when opening fails), so an input's state lives as long
 * as the reader that reads it.  `close` may be NULL. */
int reader_open_stream(struct hprof_reader **out, hprof_read_fn read, void *ctx,
                       void (*close)(void *ctx), struct hprof_error *err);
/* The stream `r` reads is what its read function reads of `ring`: the
 * reader may then read the ring's bytes in place.  Before its run. */
void reader_stream_from_ring(struct hprof_reader *r, struct push_ring *ring);
/* A second reader of the same input (file or memory), as strict as `r`. */
int reader_clone(const struct hprof_reader *r, struct hprof_reader **out, struct hprof_error *err);
/* What the runs of `from` (a clone) found of a cut input (the salvage
 * report, hprof_reader_ends_before_heap()), as `to`'s own: a caller asks
 * its reader, not the clones a shrink reads through. */
void reader_copy_salvage_report(struct hprof_reader *to, const struct hprof_reader *from);
/* Read the top-level records (HEAP_DUMPs or segments) from `start`, one at
 * least, until one ends at or past `end`. */
int reader_run_segments(struct hprof_reader *r, uint64_t start, uint64_t end,
                        struct hprof_visitor *v);
/* A second heap dump fails the run (hprof_reader_dumps() then says 2):
 * what a pass that gathers object ids across the whole run needs. */
void reader_set_one_dump(struct hprof_reader *r, int on);
/* Did the last run stop so?  (The file holds several heap dumps.) */
int reader_stopped_at_second_dump(const struct hprof_reader *r);
/* Where the last record of the dump hprof_reader_set_dump() selected
 * ended, in the last run. */
uint64_t reader_dump_end(const struct hprof_reader *r);
/* Runs read the records from `start` (a record boundary; 0: the first)
 * until `end` (0: the end of the file). */
void reader_set_range(struct hprof_reader *r, uint64_t start, uint64_t end);
/* Called by a visitor's heap_begin that returns HPROF_SKIP: the run goes on
 * at `offset` (a record boundary past that segment) instead of right after
 * it.  The records in between are neither read nor counted. */
void reader_skip_to(struct hprof_reader *r, uint64_t offset);
/* Is `r` set to salvage a cut input (hprof_reader_set_salvage())? */
int reader_salvaging(const struct hprof_reader *r);
/* Copy `len` input bytes at `offset` into `buf` without mapping them:
 * pread() on the file even when `r` maps it, so that nothing stays
 * resident in this process (the page cache keeps the file), or memcpy()
 * from memory input.  Safe on several threads at once; errors go to `err`. */
int reader_pread_unmapped(const struct hprof_reader *r, uint64_t offset, void *buf, size_t len,
                          struct hprof_error *err);
/* Whether each run of a mapped reader has a thread read ahead of it (what
 * hprof_reader_set_threads() decides from its count); the shrink sets it
 * on the readers it clones for itself. */
void reader_set_readahead_thread(struct hprof_reader *r, int on);

/* The file a mapped reader maps, and where: *map and *size, and its fd
 * as the result; -1 when `r` does not map a file. */
int reader_mapped_file(const struct hprof_reader *r, const uint8_t **map, uint64_t *size);

#endif
