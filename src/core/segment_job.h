/*
 * segment_job.h - runs of heap segments read, filtered and written on a
 * worker's thread into memory, then appended in input order to the writer
 * of the whole output: what the parallel write pass needs of the core.
 *
 * A worker has its own reader of the input, its own memory sink (capped,
 * so that a job's memory is bounded) and its own writer; the caller's
 * filters go between the reader and that writer.  Jobs are independent of
 * each other and of the worker that runs them: the writer starts each one
 * with no run of segments open, and the writer the output is appended to
 * takes the run up where the job left it (HEAP_DUMP_END stays the
 * writers' business, writer.c).
 */
#ifndef HPROF_SEGMENT_JOB_H
#define HPROF_SEGMENT_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "hprof.h"
#include "writer_private.h"

struct segment_worker;

/* What a job wrote; the buffer goes round from job to job. */
struct segment_output {
    uint8_t *bytes;
    size_t len, cap;
    size_t records;             /* the input heap records they were made of */
    int too_big;                /* passed the cap: the caller writes them itself */
    struct writer_run run;      /* for segment_output_append() */
};

/* A worker reading `input` (cloned), writing records of `id_size`-byte
 * ids in segments of up to `segment_limit` bytes, jobs of up to
 * `output_max` bytes.  `err` gets the errors of the worker's runs.
 * @return NULL with `err` set when out of memory. */
struct segment_worker *segment_worker_new(const struct hprof_reader *input, unsigned id_size,
                                          uint32_t segment_limit, size_t output_max,
                                          struct hprof_error *err);
void segment_worker_free(struct segment_worker *sw);

/* Where the filters in front of the worker's writer send their records;
 * the same for the worker's life. */
struct hprof_visitor *segment_worker_visitor(struct segment_worker *sw);

/* Read the top-level records from `start` until one ends at or past `end`
 * (`records` heap records) through `front` (filters ending in
 * segment_worker_visitor()), into `out`.  A job whose output passes the
 * cap succeeds with out->too_big.  @return HPROF_OK or the job's error
 * (in the worker's `err`); the worker is then ready for the next job. */
int segment_worker_run(struct segment_worker *sw, uint64_t start, uint64_t end, size_t records,
                       struct hprof_visitor *front, struct segment_output *out);

/* Append a job's output to `w`, as if `w` had written its records. */
int segment_output_append(struct hprof_writer *w, const struct segment_output *out);
void segment_output_free(struct segment_output *out);

/* Kept array contents that `r` maps go to `w`'s file sink from r's file
 * (writer_copy_input()); NULL stops it, before that reader goes.
 * @return whether they do. */
int writer_copy_from(struct hprof_writer *w, const struct hprof_reader *r);

#endif
