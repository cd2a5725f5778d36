/*
 * errand.c - a thread that runs one task at a time (see errand.h): a pool
 * of one worker and one slot, so that threads start in pool.c alone.
 */
#include <stdlib.h>

#include "errand.h"
#include "pool.h"

struct errand {
    struct ordered_pool *pool;
    errand_fn fn;
    void *arg;
};

static void errand_task(void *worker, void *job)
{
    struct errand *e = job;
    (void)worker;
    e->fn(e->arg);
}

struct errand *errand_new(errand_fn fn, void *arg)
{
    struct errand *e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    e->fn = fn;
    e->arg = arg;
    void *jobs[1] = { e }, *workers[1] = { NULL };
    struct hprof_error err = { 0 };
    e->pool = pool_new(1, jobs, 1, workers, errand_task, &err);
    if (e->pool == NULL) {
        free(e);
        return NULL;
    }
    return e;
}

void errand_free(struct errand *e)
{
    if (e == NULL)
        return;
    errand_wait(e);
    pool_free(e->pool);
    free(e);
}

void errand_run(struct errand *e)
{
    (void)pool_filling(e->pool); /* the one slot: free once the last run is waited for */
    pool_submit(e->pool);
}

void errand_wait(struct errand *e)
{
    if (pool_pending(e->pool) == 0)
        return;
    (void)pool_oldest(e->pool);
    pool_release_oldest(e->pool);
}
