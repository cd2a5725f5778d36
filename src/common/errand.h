/*
 * errand.h - a thread that runs one task at a time for its owner, who asks
 * for a run and goes on until it needs the result: a file sink reads the
 * next bytes of a copy while its caller writes the last ones.
 *
 * The owner and the thread share the task's arguments and results; the
 * pool's lock (errand.c runs it as a pool of one) orders the hand-overs, so what the owner set before
 * errand_run() is what the task sees, and what the task set is what the
 * owner sees after errand_wait().
 */
#ifndef HPROF_ERRAND_H
#define HPROF_ERRAND_H

struct errand;

typedef void (*errand_fn)(void *arg);

/* A thread that will run `fn(arg)` when asked.  NULL when out of memory
 * or threads. */
struct errand *errand_new(errand_fn fn, void *arg);
/* Waits for a run under way, then stops the thread and frees. */
void errand_free(struct errand *e);

/* Start a run; the previous one must be done (errand_wait()). */
void errand_run(struct errand *e);
/* Until the run asked for is done (at once if none is). */
void errand_wait(struct errand *e);

#endif
