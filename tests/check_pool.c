/*
 * check_pool.c - the ordered worker pool (src/common/pool.c) that the gzip
 * sink and the parallel write pass share: results come back in the order
 * jobs were submitted whatever order workers finish them in, a slot is not
 * handed out again before it is taken back, and without threads a job runs
 * on the caller's thread when submitted.
 */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "errand.h"
#include "pool.h"
#include "testlib.h"

#define SLOTS 6

struct square_job {
    uint64_t in, out;
    pthread_t ran_on;
};

struct square_worker {
    unsigned runs;
};

/* out = in * in, after a pause that makes later jobs finish first. */
static void square(void *worker, void *job)
{
    struct square_worker *w = worker;
    struct square_job *j = job;
    struct timespec pause = { 0, (long)((7 - j->in % 7) * 20000) };
    nanosleep(&pause, NULL);
    j->out = j->in * j->in;
    j->ran_on = pthread_self();
    w->runs++;
}

struct fixture {
    struct square_job jobs[SLOTS];
    struct square_worker workers[4];
    void *job_ptrs[SLOTS], *worker_ptrs[4];
};

static struct ordered_pool *new_pool(struct fixture *f, unsigned threads)
{
    struct hprof_error err = { 0 };
    memset(f, 0, sizeof *f);
    for (unsigned i = 0; i < SLOTS; i++)
        f->job_ptrs[i] = &f->jobs[i];
    for (unsigned i = 0; i < 4; i++)
        f->worker_ptrs[i] = &f->workers[i];
    struct ordered_pool *p = pool_new(SLOTS, f->job_ptrs, threads, f->worker_ptrs, square, &err);
    ck_assert_msg(p != NULL, "%s", err.message);
    return p;
}

/* Submit 1..n, taking results back as slots run out; check each in order. */
static uint64_t run_squares(struct ordered_pool *p, uint64_t n)
{
    uint64_t next_result = 1, checked = 0;
    for (uint64_t i = 1; i <= n; i++) {
        struct square_job *j;
        while ((j = pool_filling(p)) == NULL) {
            struct square_job *done = pool_oldest(p);
            ck_assert_uint_eq(done->out, next_result * next_result);
            next_result++;
            checked++;
            pool_release_oldest(p);
        }
        j->in = i;
        pool_submit(p);
    }
    for (struct square_job *done; (done = pool_oldest(p)) != NULL; checked++) {
        ck_assert_uint_eq(done->out, next_result * next_result);
        next_result++;
        pool_release_oldest(p);
    }
    return checked;
}

START_TEST(pool_returns_results_in_submission_order)
{
    struct fixture f;
    unsigned threads = (unsigned)_i + 1;
    struct ordered_pool *p = new_pool(&f, threads);
    ck_assert_uint_eq(run_squares(p, 200), 200);
    ck_assert_uint_eq(pool_pending(p), 0);
    pool_free(p);
    unsigned runs = 0;
    for (unsigned i = 0; i < threads; i++)
        runs += f.workers[i].runs;
    ck_assert_uint_eq(runs, 200);
}
END_TEST

START_TEST(pool_hands_out_no_slot_still_in_flight)
{
    struct fixture f;
    struct ordered_pool *p = new_pool(&f, 2);
    for (unsigned i = 0; i < SLOTS; i++) {
        struct square_job *j = pool_filling(p);
        ck_assert_ptr_nonnull(j);
        ck_assert_ptr_eq(pool_filling(p), j); /* the same job until submitted */
        j->in = i + 1;
        pool_submit(p);
    }
    ck_assert_uint_eq(pool_pending(p), SLOTS);
    ck_assert_ptr_null(pool_filling(p));
    struct square_job *oldest = pool_oldest(p);
    ck_assert_uint_eq(oldest->out, 1);
    pool_release_oldest(p);
    ck_assert_ptr_eq(pool_filling(p), oldest); /* its slot comes round again */
    pool_free(p); /* with jobs in flight and one being filled */
}
END_TEST

START_TEST(pool_without_threads_runs_each_job_when_submitted)
{
    struct fixture f;
    struct ordered_pool *p = new_pool(&f, 0);
    struct square_job *j = pool_filling(p);
    j->in = 9;
    pool_submit(p);
    ck_assert_uint_eq(j->out, 81); /* before anything is taken back */
    ck_assert(pthread_equal(j->ran_on, pthread_self()));
    ck_assert_uint_eq(f.workers[0].runs, 1);
    pool_release_oldest(p);
    ck_assert_uint_eq(run_squares(p, 50), 50);
    pool_free(p);
}
END_TEST

/* A count left to the library: one thread for an input too small to
 * gain from more, one per core from the work's threshold on. */
START_TEST(pool_threads_gives_small_inputs_one_thread_and_large_ones_a_core_each)
{
    unsigned cores = pool_online_cores();
    ck_assert_uint_ge(cores, 1);
    ck_assert_uint_eq(pool_threads(POOL_SHRINK, 0, (32u << 20) - 1), 1);
    ck_assert_uint_eq(pool_threads(POOL_SHRINK, 0, 32u << 20), cores);
    ck_assert_uint_eq(pool_threads(POOL_INFLATE, 0, (1u << 20) - 1), 1);
    ck_assert_uint_eq(pool_threads(POOL_INFLATE, 0, 1u << 20), cores < 16 ? cores : 16);
    ck_assert_uint_eq(pool_threads(POOL_DEFLATE, 0, 0), cores < 256 ? cores : 256);
}
END_TEST

/* A count the caller asks for is kept, up to the cap of its kind of work. */
START_TEST(pool_threads_keeps_the_count_asked_for_within_the_cap)
{
    ck_assert_uint_eq(pool_threads(POOL_SHRINK, 3, 1), 3);
    ck_assert_uint_eq(pool_threads(POOL_SHRINK, 1000, 1), 1000);
    ck_assert_uint_eq(pool_threads(POOL_WRITE_PASS, 64, 0), 64);
    ck_assert_uint_eq(pool_threads(POOL_WRITE_PASS, 65, 0), 64);
    ck_assert_uint_eq(pool_threads(POOL_INFLATE, 17, 0), 16);
    ck_assert_uint_eq(pool_threads(POOL_DEFLATE, 300, 0), 256);
}
END_TEST

struct errand_task {
    unsigned runs;
    pthread_t ran_on;
};

static void count_run(void *arg)
{
    struct errand_task *t = arg;
    t->runs++;
    t->ran_on = pthread_self();
}

/* An errand runs its task on a thread of its own, once per run asked
 * for, and what the task wrote is the owner's after the wait. */
START_TEST(errand_runs_each_task_on_its_own_thread_once)
{
    struct errand_task t = { 0 };
    struct errand *e = errand_new(count_run, &t);
    ck_assert_ptr_nonnull(e);
    errand_wait(e); /* nothing asked for: at once */
    for (unsigned i = 1; i <= 100; i++) {
        errand_run(e);
        errand_wait(e);
        ck_assert_uint_eq(t.runs, i);
        ck_assert(!pthread_equal(t.ran_on, pthread_self()));
    }
    errand_run(e); /* freed with a run under way: it is finished first */
    errand_free(e);
    ck_assert_uint_eq(t.runs, 101);
}
END_TEST

static Suite *pool_suite(void)
{
    Suite *s = suite_create("pool");
    TCase *t = tcase_create("pool");
    tcase_add_loop_test(t, pool_returns_results_in_submission_order, 0, 4);
    tcase_add_test(t, pool_hands_out_no_slot_still_in_flight);
    tcase_add_test(t, pool_without_threads_runs_each_job_when_submitted);
    tcase_add_test(t, pool_threads_gives_small_inputs_one_thread_and_large_ones_a_core_each);
    tcase_add_test(t, pool_threads_keeps_the_count_asked_for_within_the_cap);
    tcase_add_test(t, errand_runs_each_task_on_its_own_thread_once);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(pool_suite());
}
