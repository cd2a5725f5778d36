/*
 * input_private.h - what the tests see of input.c beyond the public API:
 * the way a gzip file is inflated, chosen, and what the inflation did, so
 * that the parallel path can be compared with the streaming one and its
 * bounds checked.
 */
#ifndef HPROF_INPUT_PRIVATE_H
#define HPROF_INPUT_PRIVATE_H

#include "hprof_private.h"

/* How a gzip input that is a regular file is inflated. */
enum input_inflate {
    INPUT_INFLATE_PARALLEL,     /* members by workers, confirmed in order */
    INPUT_INFLATE_STREAM        /* zlib, member after member, as a pipe is */
};

/* What one hprof_input_open...() did.  A "job" is a member inflated from
 * a header found by scanning, before it is known to start a member. */
struct input_stats {
    unsigned workers;           /* threads started to inflate members */
    uint64_t members_parallel;  /* members taken from a job */
    uint64_t members_streamed;  /* members zlib inflated as they came */
    uint64_t jobs_discarded;    /* started inside a member: not a header */
    uint64_t jobs_failed;       /* at a member's start, not inflated whole
                                 * (too big, FHCRC, corrupt or cut) */
    uint64_t bytes_speculated;  /* inflated by jobs, used or not */
    uint64_t bytes_spooled;     /* written to the copy */
    uint64_t buffers_peak;      /* most bytes of job buffers held at once */
};

/* hprof_input_open_threads(), inflating a gzip file the way `how` says;
 * `stats` may be NULL. */
int input_open(const char *path, unsigned flags, unsigned threads, enum input_inflate how,
               int *fd, struct hprof_input_info *info, struct input_stats *stats,
               struct hprof_error *err);

#endif
