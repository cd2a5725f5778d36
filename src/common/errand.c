/*
 * errand.c - a thread that runs one task at a time (see errand.h).
 */
#include <pthread.h>
#include <stdlib.h>

#include "errand.h"

struct errand {
    errand_fn fn;
    void *arg;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t asked;       /* a run was asked for, or stop */
    pthread_cond_t done;        /* the run is done */
    int busy, stop;
};

static void *errand_main(void *p)
{
    struct errand *e = p;
    pthread_mutex_lock(&e->lock);
    for (;;) {
        while (!e->busy && !e->stop)
            pthread_cond_wait(&e->asked, &e->lock);
        if (!e->busy) /* stop, with nothing left to run */
            break;
        pthread_mutex_unlock(&e->lock);
        e->fn(e->arg);
        pthread_mutex_lock(&e->lock);
        e->busy = 0;
        pthread_cond_signal(&e->done);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

static void errand_destroy(struct errand *e)
{
    pthread_cond_destroy(&e->done);
    pthread_cond_destroy(&e->asked);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

struct errand *errand_new(errand_fn fn, void *arg)
{
    struct errand *e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    e->fn = fn;
    e->arg = arg;
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->asked, NULL);
    pthread_cond_init(&e->done, NULL);
    if (pthread_create(&e->thread, NULL, errand_main, e) != 0) {
        errand_destroy(e);
        return NULL;
    }
    return e;
}

void errand_free(struct errand *e)
{
    if (e == NULL)
        return;
    pthread_mutex_lock(&e->lock);
    e->stop = 1;
    pthread_cond_signal(&e->asked);
    pthread_mutex_unlock(&e->lock);
    pthread_join(e->thread, NULL);
    errand_destroy(e);
}

void errand_run(struct errand *e)
{
    pthread_mutex_lock(&e->lock);
    e->busy = 1;
    pthread_cond_signal(&e->asked);
    pthread_mutex_unlock(&e->lock);
}

void errand_wait(struct errand *e)
{
    pthread_mutex_lock(&e->lock);
    while (e->busy)
        pthread_cond_wait(&e->done, &e->lock);
    pthread_mutex_unlock(&e->lock);
}
