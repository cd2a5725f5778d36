/*
 * segment_runs.h - runs of small heap segments, found in pass 1, so that
 * the write pass hands each to a worker without reading their headers.
 *
 * The write pass's calling thread walks the top-level records and gives
 * runs of consecutive small segments to its workers.  ART ends a segment
 * once it passes 4 KiB, so on an Android dump that walk reads tens of
 * thousands of segment headers, a pread() each, on the thread that writes
 * the output.
 * Pass 1 reads every header anyway; in front of its visitors this one
 * notes where runs of consecutive segments, each small enough for a
 * worker, start and end, cut at about a job's worth of bytes.  The walk
 * then steps over a run in one go and a worker walks it instead, in its
 * own reader, where it reads the segments' contents anyway.
 *
 * Memory: 24 bytes a run of about a job's bytes, and at most MAX_RUNS
 * runs (the walk reads the headers of the rest itself).
 */
#ifndef HPROF_REWRITE_SEGMENT_RUNS_H
#define HPROF_REWRITE_SEGMENT_RUNS_H

#include "hprof_private.h"

struct segment_run {
    uint64_t start, end;        /* the first segment's record; where the last ends */
    size_t segments;
};

struct segment_runs {
    struct hprof_visitor base;  /* in front of pass 1's visitors */
    uint64_t segment_max;       /* a larger segment is no worker's */
    uint64_t run_bytes;         /* a run is cut once it holds this much */
    struct segment_run open;    /* the run being extended (no segments: none) */
    struct segment_run *runs;   /* complete runs of two segments or more, in order */
    size_t n, cap;
    size_t next;                /* segment_runs_at(): where the last lookup ended */
};

void segment_runs_init(struct segment_runs *sr, uint64_t segment_max, uint64_t run_bytes);
void segment_runs_free(struct segment_runs *sr);

/* The visitor for pass 1, in front of `next`. */
struct hprof_visitor *segment_runs_visitor(struct segment_runs *sr, struct hprof_visitor *next);

/* After pass 1: the run in progress is complete. */
void segment_runs_finish(struct segment_runs *sr);

/* The run whose first segment is at `offset`, or NULL; offsets are asked
 * in increasing order (the write pass's walk). */
const struct segment_run *segment_runs_at(struct segment_runs *sr, uint64_t offset);

#endif
