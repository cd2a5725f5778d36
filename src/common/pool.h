/*
 * pool.h - an ordered worker pool, the way pigz compresses blocks: the
 * caller fills numbered jobs, workers run them in any order, and the caller
 * takes the results back strictly in number order.  At most `slots` jobs
 * are in flight, so memory is bounded by what a slot holds.  Every thread
 * of the library starts here: the gzip sink's members, the write pass,
 * bitmap hashing and merging, and the one-worker helpers (the reader's
 * read-ahead, the sink's copy-ahead, the reference filter's adds).
 *
 * A job belongs to the caller while it is being filled and once it is taken
 * back, to a worker in between; the pool's lock orders the hand-overs.
 * With no worker threads, a job runs on the caller's thread when submitted.
 *
 * How many threads each kind of work gets is decided here too, by
 * pool_threads(), so that the rule and its thresholds are in one place.
 */
#ifndef HPROF_POOL_H
#define HPROF_POOL_H

#include <stdint.h>

#include "hprof.h"

struct ordered_pool;

/* The kinds of work that may run on several threads. */
enum pool_work {
    POOL_SHRINK,        /* hprof_shrink(): its passes' helpers and workers */
    POOL_WRITE_PASS,    /* the shrink's write pass: its workers */
    POOL_INFLATE,       /* a gzip input's members */
    POOL_DEFLATE,       /* a gzip sink's members */
    POOL_ZSTD,          /* a zstd sink's jobs (libzstd's own workers) */
};

/* Threads online, at least 1. */
unsigned pool_online_cores(void);

/* How many threads `work` on `input_bytes` of input gets: the caller's
 * count `asked`, or with 0 one per online core, but one alone for inputs
 * too small to gain from more (starting threads costs more than it saves
 * there); never more than the work's cap. */
unsigned pool_threads(enum pool_work work, unsigned asked, uint64_t input_bytes);

/* Runs `job` with the context of the worker (or, with no threads, of the
 * caller) that took it. */
typedef void (*pool_run_fn)(void *worker, void *job);

/* `slots` jobs (jobs[i], the caller's memory), `threads` workers with
 * contexts worker[0..threads-1], or with threads == 0 the caller alone
 * with context worker[0].  Where the system starts fewer threads (a limit
 * on them), those share the jobs and the other contexts stay unused.
 * @return NULL when out of memory or no thread starts (with `err` set). */
struct ordered_pool *pool_new(unsigned slots, void *const *jobs, unsigned threads,
                              void *const *worker, pool_run_fn run, struct hprof_error *err);
/* The same, but where no thread starts the caller runs the jobs (with
 * worker[0]), as with threads == 0: for work whose result is the same
 * whoever runs it.  @return NULL only when out of memory. */
struct ordered_pool *pool_new_or_inline(unsigned slots, void *const *jobs, unsigned threads,
                                        void *const *worker, pool_run_fn run,
                                        struct hprof_error *err);
/* The workers it has (0: the caller runs the jobs). */
unsigned pool_workers(const struct ordered_pool *p);
/* Stops the workers (a job being run is finished first) and frees. */
void pool_free(struct ordered_pool *p);

/* The job being filled, the next number; a new one when none is.  NULL
 * when every slot is in flight: take the oldest back first. */
void *pool_filling(struct ordered_pool *p);
/* Is a job being filled? */
int pool_is_filling(const struct ordered_pool *p);
/* Hand the job being filled to the workers (or run it, without threads). */
void pool_submit(struct ordered_pool *p);
/* Submitted and not yet taken back. */
unsigned pool_pending(const struct ordered_pool *p);
/* The oldest job submitted, once run (waiting for it), or NULL if none. */
void *pool_oldest(struct ordered_pool *p);
/* The oldest job is done with: its slot can be filled again. */
void pool_release_oldest(struct ordered_pool *p);

/* A polling thread's wait while it has nothing to do: 20 us at first, so
 * that work after a short gap is taken at once; after about a millisecond
 * of nothing, longer and longer sleeps up to 1 ms, so that a run whose
 * input stalls (a slow pipe, a JVM at its safepoint) costs no core while
 * it waits.  `rounds` counts the waits since the last work; set it to 0
 * when there is work. */
void pool_idle_wait(unsigned *rounds);

#endif
