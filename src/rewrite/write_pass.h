/*
 * write_pass.h - the last pass of the shrink: the input through the
 * write-pass chain (chain.h) into the writer, on one thread or several.
 * It reads the plan and calls nothing back but the progress callback.
 */
#ifndef HPROF_REWRITE_WRITE_PASS_H
#define HPROF_REWRITE_WRITE_PASS_H

#include "plan.h"

struct segment_runs;

/* How much a worker takes: a segment of more than `segment_max` bytes
 * goes to the calling thread rather than a worker (pass 1 makes runs of
 * segments no bigger, segment_runs.h), and so does a job whose output
 * would pass `output_max` (zeroing PRIMITIVE_ARRAY_NODATA can do that):
 * what a job holds in memory is bounded by them. */
struct write_pass_limits {
    size_t segment_max, output_max;
};
#define WRITE_PASS_LIMITS_DEFAULT { .segment_max = (size_t)4 << 20, .output_max = (size_t)8 << 20 }

struct write_pass_config {
    const struct shrink_plan *plan;
    struct hprof_reader *reader;    /* read as it is set up (progress included) */
    struct hprof_writer *writer;
    unsigned threads;               /* 1: the calling thread only */
    uint32_t segment_limit;         /* 0: HPROF_SEGMENT_LIMIT */
    struct hprof_shrink_stats *stats; /* the filters' counts are added */
    struct hprof_error *err;
    /* With several threads, progress comes as jobs are written, not
     * through the reader (which only skips segments then). */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
    /* Runs of small segments pass 1 found (segment_runs.h), or NULL. */
    struct segment_runs *runs;
    struct write_pass_limits limits;
};

int write_pass_run(const struct write_pass_config *cfg);

/* Segments go to a worker in jobs of about this many input bytes (ART
 * writes segments of a few KiB: one job each would cost more in
 * hand-overs than in work). */
#define WRITE_PASS_JOB_BYTES (1u << 20)

/* hprof_shrink() with other limits than WRITE_PASS_LIMITS_DEFAULT: tests
 * send segments and jobs the calling thread's way with small ones. */
int shrink_with_limits(struct hprof_reader *r, struct hprof_sink *sink,
                       const struct hprof_shrink_options *options,
                       struct write_pass_limits limits, struct hprof_shrink_stats *stats,
                       struct hprof_error *err);

#endif
