/*
 * pool.c - the ordered worker pool (see pool.h).
 */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"

/* For each kind of work: the input size from which a count left to the
 * library means one thread per core, and the most threads it uses.  The
 * passes of a shrink under 32 MiB take a few milliseconds, about what
 * starting helpers costs; so does inflating a gzip input under 1 MiB.  The write pass's jobs in flight, and so its memory,
 * grow with its workers; past a few workers inflating a gzip input, the
 * calling thread (scanning, reading, writing the copy) is the bottleneck,
 * and more would only hold more members in flight.  libzstd's workers each
 * hold a few jobs of several MiB (32 MiB at level 19): 32 of them already
 * outrun any shrink that feeds them. */
static const struct work_policy {
    uint64_t threaded_from;
    unsigned cap;
} policy[] = {
    [POOL_SHRINK] = { 32u << 20, UINT_MAX },
    [POOL_WRITE_PASS] = { 0, 64 },
    [POOL_INFLATE] = { 1u << 20, 16 },
    [POOL_DEFLATE] = { 0, 256 },
    [POOL_ZSTD] = { 0, 32 },
};

unsigned pool_online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 1 ? (unsigned)n : 1;
}

unsigned pool_threads(enum pool_work work, unsigned asked, uint64_t input_bytes)
{
    const struct work_policy *p = &policy[work];
    unsigned n = asked;
    if (n == 0)
        n = input_bytes >= p->threaded_from ? pool_online_cores() : 1;
    return n < p->cap ? n : p->cap;
}

enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_QUEUED, SLOT_BUSY, SLOT_DONE };

struct pool_slot {
    enum slot_state state;      /* read by waiting workers: under the lock */
    uint64_t seq;
    void *job;
};

struct pool_worker {
    struct ordered_pool *pool;
    void *ctx;
    pthread_t thread;
};

struct ordered_pool {
    pool_run_fn run;
    struct pool_slot *slots;    /* a ring indexed by seq % n_slots */
    unsigned n_slots;
    uint64_t next_fill;         /* the job being filled, or the next one */
    int filling;                /* whether it is being filled (the caller's alone) */
    uint64_t next_oldest;       /* the next job to take back */
    uint64_t next_take;         /* the next job a worker takes */
    void *caller_ctx;           /* no threads: jobs run with this */
    struct pool_worker *workers;
    unsigned n_workers, started;
    pthread_mutex_t lock;
    pthread_cond_t work;        /* a job was queued, or stop */
    pthread_cond_t done;        /* a job was run */
    int stop;
};

static struct pool_slot *slot(const struct ordered_pool *p, uint64_t seq)
{
    return &p->slots[seq % p->n_slots];
}

static void *worker_main(void *arg)
{
    struct pool_worker *w = arg;
    struct ordered_pool *p = w->pool;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        struct pool_slot *s = slot(p, p->next_take);
        while (!p->stop && !(s->state == SLOT_QUEUED && s->seq == p->next_take)) {
            pthread_cond_wait(&p->work, &p->lock);
            s = slot(p, p->next_take);
        }
        if (p->stop)
            break;
        s->state = SLOT_BUSY;
        p->next_take++;
        pthread_cond_broadcast(&p->work); /* the next job may be queued too */
        pthread_mutex_unlock(&p->lock);
        p->run(w->ctx, s->job);
        pthread_mutex_lock(&p->lock);
        s->state = SLOT_DONE;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void stop_workers(struct ordered_pool *p)
{
    if (p->started == 0)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < p->started; i++)
        pthread_join(p->workers[i].thread, NULL);
    p->started = 0;
}

void pool_free(struct ordered_pool *p)
{
    if (p == NULL)
        return;
    stop_workers(p);
    if (p->n_workers > 0) {
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->work);
        pthread_cond_destroy(&p->done);
    }
    free(p->workers);
    free(p->slots);
    free(p);
}

struct ordered_pool *pool_new(unsigned slots, void *const *jobs, unsigned threads,
                              void *const *worker, pool_run_fn run, struct hprof_error *err)
{
    struct ordered_pool *p = calloc(1, sizeof *p);
    if (p == NULL || (p->slots = calloc(slots, sizeof *p->slots)) == NULL ||
        (threads > 0 && (p->workers = calloc(threads, sizeof *p->workers)) == NULL)) {
        if (p != NULL)
            free(p->slots);
        free(p);
        hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    p->run = run;
    p->n_slots = slots;
    for (unsigned i = 0; i < slots; i++)
        p->slots[i].job = jobs[i];
    if (threads == 0) {
        p->caller_ctx = worker[0];
        return p;
    }
    p->n_workers = threads;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    /* Workers take no asynchronous signal: a program's handlers run in its
     * own threads, where it can hold them off while it changes what they
     * read.  A fault (SIGBUS from a mapping cut short) still reaches the
     * thread that made it. */
    sigset_t async, before;
    sigfillset(&async);
    static const int faults[] = { SIGBUS, SIGSEGV, SIGFPE, SIGILL, SIGTRAP, SIGSYS };
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
        sigdelset(&async, faults[i]);
    pthread_sigmask(SIG_BLOCK, &async, &before);
    for (; p->started < threads; p->started++) {
        struct pool_worker *w = &p->workers[p->started];
        *w = (struct pool_worker){ .pool = p, .ctx = worker[p->started] };
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
            break;
    }
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    if (p->started == 0) {
        pool_free(p);
        hprof_error_set(err, HPROF_ERR_NOMEM, "cannot start a thread");
        return NULL;
    }
    p->n_workers = p->started; /* a limit on threads: fewer share the jobs */
    return p;
}

struct ordered_pool *pool_new_or_inline(unsigned slots, void *const *jobs, unsigned threads,
                                        void *const *worker, pool_run_fn run,
                                        struct hprof_error *err)
{
    struct hprof_error first = { 0 };
    struct ordered_pool *p = pool_new(slots, jobs, threads, worker, run, &first);
    if (p == NULL && threads > 0)
        return pool_new(slots, jobs, 0, worker, run, err); /* no thread to be had */
    if (p == NULL)
        hprof_error_set(err, first.code, "%s", first.message);
    return p;
}

unsigned pool_workers(const struct ordered_pool *p)
{
    return p->n_workers;
}

/* Workers look at every slot's state and number while they wait: they
 * change under the lock (the rest of a job is the filling thread's until it
 * is queued, the worker's until it is done). */
static void set_state(struct ordered_pool *p, struct pool_slot *s, enum slot_state state)
{
    if (p->n_workers == 0) {
        s->state = state;
        return;
    }
    pthread_mutex_lock(&p->lock);
    s->state = state;
    if (state == SLOT_QUEUED)
        pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
}

void *pool_filling(struct ordered_pool *p)
{
    struct pool_slot *s = slot(p, p->next_fill);
    if (p->filling)
        return s->job;
    /* Not s->state: the slot may still hold an older job that a worker is
     * finishing, and that state is read only under the lock. */
    if (p->next_fill - p->next_oldest >= p->n_slots)
        return NULL;
    if (p->n_workers > 0)
        pthread_mutex_lock(&p->lock);
    s->seq = p->next_fill;
    s->state = SLOT_FILLING;
    if (p->n_workers > 0)
        pthread_mutex_unlock(&p->lock);
    p->filling = 1;
    return s->job;
}

int pool_is_filling(const struct ordered_pool *p)
{
    return p->filling;
}

void pool_submit(struct ordered_pool *p)
{
    struct pool_slot *s = slot(p, p->next_fill);
    if (!p->filling)
        return;
    if (p->n_workers == 0) {
        p->run(p->caller_ctx, s->job);
        s->state = SLOT_DONE;
    } else {
        set_state(p, s, SLOT_QUEUED);
    }
    p->filling = 0;
    p->next_fill++;
}

unsigned pool_pending(const struct ordered_pool *p)
{
    return (unsigned)(p->next_fill - p->next_oldest);
}

void *pool_oldest(struct ordered_pool *p)
{
    if (p->next_oldest == p->next_fill)
        return NULL;
    struct pool_slot *s = slot(p, p->next_oldest);
    if (p->n_workers > 0) {
        pthread_mutex_lock(&p->lock);
        while (s->state != SLOT_DONE)
            pthread_cond_wait(&p->done, &p->lock);
        pthread_mutex_unlock(&p->lock);
    }
    return s->job;
}

void pool_release_oldest(struct ordered_pool *p)
{
    set_state(p, slot(p, p->next_oldest), SLOT_FREE);
    p->next_oldest++;
}

#define IDLE_FIRST_NS 20000L
#define IDLE_MAX_NS 1000000L
#define IDLE_QUICK_ROUNDS 64

void pool_idle_wait(unsigned *rounds)
{
    long ns = IDLE_FIRST_NS;
    if (*rounds >= IDLE_QUICK_ROUNDS) {
        unsigned shift = (*rounds - IDLE_QUICK_ROUNDS) / 8 + 1;
        ns = shift >= 6 ? IDLE_MAX_NS : IDLE_FIRST_NS << shift;
        if (ns > IDLE_MAX_NS)
            ns = IDLE_MAX_NS;
    }
    if (*rounds < UINT_MAX)
        (*rounds)++;
    struct timespec idle = { 0, ns };
    nanosleep(&idle, NULL);
}
