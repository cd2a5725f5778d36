/*
 * writer_private.h - the writer's side of jobs of heap segments written by
 * other writers (segment_job.c), and of array contents copied from the
 * input file (writer.c).  Whether a run of segments is open, and so where
 * HEAP_DUMP_END goes, is the writers' business alone: a job's writer says
 * where it left its run, and the writer its bytes are appended to takes
 * that up.
 */
#ifndef HPROF_WRITER_PRIVATE_H
#define HPROF_WRITER_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "hprof.h"

/* writer_copy_input() :
 * Array contents that `w` gets straight from the mapping of `fd` (map,
 * size bytes: what reader_mapped_file() says of the reader in front of it)
 * go to a file sink read from `fd` (pread into the sink's buffer) instead
 * of from the mapping: pages of kept pixel buffers are then never faulted
 * in, and mapped pages stay bounded.  Contents a filter changed are
 * elsewhere in memory and written as usual.  fd -1 stops it.
 * @return whether contents will be copied so (the sink is a file). */
int writer_copy_input(struct hprof_writer *w, const uint8_t *map, uint64_t size, int fd);

/* writer_copy_ahead() :
 * With `on`, a file sink reads the next part of such an array on a
 * thread of its own while the calling thread writes the last one
 * (sink_copy_ahead()); without, that thread stops.  For callers that run
 * on several threads.  @return whether the sink reads ahead. */
int writer_copy_ahead(struct hprof_writer *w, int on);

/* Where a writer's run of segments stands: what a writer of one job of
 * segments leaves for the writer its bytes go to. */
struct writer_run {
    int in_run;                 /* segments written, HEAP_DUMP_END not yet */
    int closed_by_us;           /* an END written that the input has yet to send */
};

/* writer_for_segments() :
 * Makes `w` a writer that will only see heap segments, into `sink`, with
 * `id_size`. */
void writer_for_segments(struct hprof_writer *w, unsigned id_size, struct hprof_sink *sink);

/* writer_begin_job() :
 * A job of segments starts with no run open, whatever the last job left:
 * its bytes then depend on its records alone, not on which worker ran it. */
void writer_begin_job(struct hprof_writer *w);

/* writer_array_data_at() :
 * Where in the output the data (elements) of array `id` begins, if it is
 * the last array written and its data went to the sink as it came (a sink
 * that can patch, or an array over the segment limit); else UINT64_MAX. */
uint64_t writer_array_data_at(const struct hprof_writer *w, uint64_t id);

/* writer_run_state() :
 * Where the job `w` wrote left its run of segments. */
struct writer_run writer_run_state(const struct hprof_writer *w);

/* writer_discard() :
 * Forgets what a failed job left half written (a sub-record, an array
 * still expecting contents): `w` is as a new writer for segments, with its
 * settings and buffers. */
void writer_discard(struct hprof_writer *w);

/* writer_put_segments() :
 * Append what a writer for segments made of `records` input heap records
 * (`bytes`, whole records), ending in state `after`, leaving `w` as if it
 * had written them itself. */
int writer_put_segments(struct hprof_writer *w, const uint8_t *bytes, size_t len,
                        struct writer_run after, size_t records);

#endif
