/*
 * md5_lanes.h - MD5 of many buffers at once.
 *
 * MD5 is one chain of dependent steps per buffer, so a core hashes one
 * buffer at OpenSSL's speed however many are waiting, and on a
 * bitmap-heavy dump hashing is much of the shrink's CPU time.  Independent
 * buffers need not wait for each other: with AVX-512 sixteen of them go
 * through the steps together, one per 32-bit lane, several times as fast.
 * A queue hands buffers to lanes as lanes come free; without AVX-512, or
 * when too few buffers are left to fill the lanes, each is hashed on its
 * own by the portable code below.  Both are checked against OpenSSL's MD5
 * in tests/check_md5.c.
 */
#ifndef HPROF_MD5_LANES_H
#define HPROF_MD5_LANES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hprof_private.h"

struct md5_job {
    uint64_t offset;    /* where the buffer starts in the source */
    uint64_t bytes;
    size_t tag;         /* the caller's: which buffer this is */
    uint8_t md5[16];    /* the result */
};

/* A job is viewed in order, MD5_VIEW_MAX bytes at a time (the last view
 * shorter). */
#define MD5_VIEW_MAX (128u << 10)

/* Points *p at len bytes at offset of the source, the next of `job`'s:
 * into a mapping of it, or into buf (room for len bytes) after reading
 * them there.  A view may also look at other bytes for the job's sake
 * (compare them with these, say): job->tag says which buffer it is, and
 * `thread` is what the thread running the queue gave md5_queue_run()
 * (room of its own to read into, say). */
typedef int (*md5_view_fn)(void *arg, void *thread, const struct md5_job *job, uint64_t offset,
                           size_t len, uint8_t *buf, const uint8_t **p, struct hprof_error *err);

enum md5_kernel {
    MD5_KERNEL_BEST,     /* AVX-512 lanes where the CPU has them */
    MD5_KERNEL_PORTABLE, /* one buffer after another, in C */
    MD5_KERNEL_AVX512
};

/* The jobs, shared by the threads that hash them; largest first is best,
 * since the lanes then finish close together. */
struct md5_queue {
    struct md5_job *jobs;
    size_t n_jobs;
    atomic_size_t next;     /* the next job to take */
    md5_view_fn view;
    void *source;           /* its first argument */
    enum md5_kernel kernel;
};

/* Can this machine run `kernel`? */
int md5_kernel_available(enum md5_kernel kernel);

/* How many jobs a thread running q hashes at once. */
unsigned md5_queue_width(const struct md5_queue *q);

/* Takes jobs from q and hashes them until none is left, passing `thread`
 * to the views; any number of threads may run one queue.  Memory: 16 buffers of 128 KiB, touched only
 * by views that read into them.
 * @return HPROF_OK, or the error of a view (the queue is then emptied, so
 * that the other threads stop at their next job) or of memory. */
int md5_queue_run(struct md5_queue *q, void *thread, struct hprof_error *err);

#endif
