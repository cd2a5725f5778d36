/*
 * batch.h - batch mode's inputs, decided before any work starts
 * (batch_inputs.c), for the run that shrinks them (batch.c).
 */
#ifndef HPROF_BATCH_H
#define HPROF_BATCH_H

#include <stddef.h>
#include <sys/stat.h>

#include "shrink.h"

/* Every input the batch meets, decided before any work starts: to do,
 * skipped (with a reason) or failed (with a reason and an exit code). */
enum job_state { JOB_TODO, JOB_SKIPPED, JOB_FAILED };

struct job {
    char *in, *out;         /* out: NULL when there is none */
    int state;
    int code;               /* JOB_FAILED: its exit code */
    char *reason;
};

struct file_list {
    struct job *jobs;
    size_t n, cap;
};

void free_jobs(struct file_list *l);

/* Every input of o->inputs: files, and with -r the dumps in directories
 * (the output directory `out_dir` left out), in a stable order, those of
 * other shards left out, and those that would write one output failed.
 * @return 0 or an exit code (message printed); jobs decided before a
 * failure stay in `l`. */
int collect_inputs(const struct options *o, const struct stat *out_dir, struct file_list *l);

/* Whether the output `out` was made from `in` as it is now. */
int up_to_date(const char *in, const char *out);

#endif
