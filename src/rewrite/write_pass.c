/*
 * write_pass.c - the write pass of hprof_shrink() on several threads.
 *
 * Every decision is made before the write pass, and the writer starts each
 * input heap segment afresh (readers take every segment to begin in the
 * default heap), so segments can be filtered and serialised independently,
 * the way pigz compresses blocks: the calling thread walks the top-level
 * records, hands runs of heap segments to workers as numbered jobs, and
 * writes finished jobs strictly in order through its one writer, with the
 * records between them.  The bytes are those one thread writes, and so are
 * the counts and the error reported (the first in file order).
 *
 * A worker has its own reader of the input, its own chain of filters over
 * the plan (which every worker only reads; what a chain moves is in its own
 * cursor) and its own writer into memory.  The walk over the top-level
 * records has a reader of its own too, so the reader the caller set up is
 * only read with one thread.  Jobs in flight are capped at twice the
 * workers, and so is their memory: a segment, or a job's output, over the
 * run's limits (struct write_pass_limits) is written by the calling
 * thread itself when its turn comes, streaming as with one thread.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chain.h"
#include "pool.h"
#include "reader_internal.h"
#include "segment_job.h"
#include "segment_runs.h"
#include "shrink_stats.h"
#include "write_pass.h"

/* A run of consecutive heap segments in the input. */
struct job {
    uint64_t start, end;        /* the first one's record; where the last one ends */
    size_t n;                   /* segments */
    /* results */
    int rc;
    struct segment_output out;  /* its buffer kept from job to job in this slot */
    struct hprof_shrink_stats stats;
    struct hprof_error err;
};

struct worker {
    struct write_pass *wp;
    struct hprof_shrink_stats stats;
    struct hprof_error err;
    struct segment_worker *segments;
    struct shrink_chain *chain; /* in front of the segment worker's writer */
};

struct write_pass {
    struct hprof_visitor base;  /* in front of the chain */
    const struct write_pass_config *cfg;
    struct hprof_reader *walk_reader;   /* the top-level records */
    struct hprof_reader *inline_reader; /* segments the caller writes itself */

    struct job *jobs;           /* the pool's slots */
    unsigned n_jobs;
    struct worker *workers;     /* the pool's workers' contexts */
    unsigned n_workers;
    struct ordered_pool *pool;
    int failed;                 /* a job or a segment written here failed */
    int copying;                /* the writer reads kept arrays from the input file */
};

/* ---- Workers ---------------------------------------------------------------- */

static uint32_t segment_limit(const struct write_pass_config *cfg)
{
    return cfg->segment_limit ? cfg->segment_limit : HPROF_SEGMENT_LIMIT;
}

static int worker_init(struct worker *w, struct write_pass *wp)
{
    const struct write_pass_config *cfg = wp->cfg;
    w->wp = wp;
    w->segments = segment_worker_new(cfg->reader, cfg->plan->ids, segment_limit(cfg),
                                     cfg->limits.output_max, &w->err);
    w->chain = w->segments ? shrink_chain_new(cfg->plan, &w->stats, &w->err) : NULL;
    if (w->chain == NULL)
        return HPROF_ERR_NOMEM;
    shrink_chain_set_next(w->chain, segment_worker_visitor(w->segments));
    return HPROF_OK;
}

static void worker_free(struct worker *w)
{
    shrink_chain_free(w->chain);
    segment_worker_free(w->segments);
}

static void run_job(void *worker, void *job)
{
    struct worker *w = worker;
    struct job *j = job;
    memset(&w->stats, 0, sizeof w->stats);
    memset(&w->err, 0, sizeof w->err);
    j->rc = segment_worker_run(w->segments, j->start, j->end, j->n, shrink_chain_head(w->chain),
                               &j->out);
    j->stats = w->stats;
    j->err = w->err;
}

/* ---- The calling thread ----------------------------------------------------- */

static void report_progress(struct write_pass *wp, uint64_t done)
{
    const struct write_pass_config *cfg = wp->cfg;
    if (cfg->progress != NULL)
        cfg->progress(cfg->progress_ctx, done, hprof_reader_size(cfg->reader));
}

/* Filter and write segments here, streaming, as one thread would.  With
 * `big` (a segment too big for a worker), a read-ahead thread runs with
 * it, unless the kernel copies what is kept of its arrays (what a big
 * segment mostly holds): the thread would fault in pages nothing reads.
 * The segments of a job whose output grew too big are small, and a
 * thread each would cost more than it saves. */
static int write_inline(struct write_pass *wp, uint64_t start, uint64_t end, int big)
{
    reader_set_readahead_thread(wp->inline_reader, big && !wp->copying);
    int rc = reader_run_segments(wp->inline_reader, start, end, wp->base.next);
    wp->failed |= rc != HPROF_OK;
    return rc;
}

/* Write the oldest job once it is done. */
static int write_oldest(struct write_pass *wp)
{
    struct job *j = pool_oldest(wp->pool);
    int rc;
    if (j->out.too_big) {
        rc = write_inline(wp, j->start, j->end, 0);
    } else if (j->rc != HPROF_OK) {
        rc = hprof_error_set(wp->cfg->err, j->rc, "%s", j->err.message);
        wp->failed = 1;
    } else {
        shrink_stats_add_counters(wp->cfg->stats, &j->stats);
        rc = segment_output_append(wp->cfg->writer, &j->out);
        wp->failed |= rc != HPROF_OK;
    }
    uint64_t end = j->end;
    j->n = 0;
    pool_release_oldest(wp->pool);
    if (rc == HPROF_OK)
        report_progress(wp, end);
    return rc;
}

static int write_all(struct write_pass *wp)
{
    int rc = HPROF_OK;
    while (rc == HPROF_OK && pool_pending(wp->pool) > 0)
        rc = write_oldest(wp);
    return rc;
}

/* Hand the job being filled to the workers. */
static void submit(struct write_pass *wp)
{
    pool_submit(wp->pool);
}

/* The job to add a segment to: the one being filled, or a new one once
 * the oldest is written if every slot is in flight. */
static int filling_job(struct write_pass *wp, struct job **out)
{
    int rc = HPROF_OK;
    while (rc == HPROF_OK && (*out = pool_filling(wp->pool)) == NULL)
        rc = write_oldest(wp);
    return rc;
}

static struct write_pass *self(struct hprof_visitor *v)
{
    return (struct write_pass *)v;
}

/* Every segment so far written, before a record that must follow them. */
static int settle(struct write_pass *wp)
{
    submit(wp);
    return write_all(wp);
}

/* A heap segment: into a job, skipped here; a run pass 1 found starting
 * there: a job of its own, all of it skipped here. */
static int on_heap_begin(struct hprof_visitor *v, const struct hprof_segment *s)
{
    struct write_pass *wp = self(v);
    const struct segment_run *run = NULL;
    uint64_t end = s->offset + 9 + s->length;
    if (wp->cfg->runs != NULL)
        run = segment_runs_at(wp->cfg->runs, s->offset);
    int rc = HPROF_OK;
    struct job *j;
    if (run == NULL && s->length > wp->cfg->limits.segment_max) {
        /* too big for a worker: everything before it first, then it, here */
        if ((rc = settle(wp)) == HPROF_OK)
            rc = write_inline(wp, s->offset, end, 1);
        return rc == HPROF_OK ? HPROF_SKIP : rc;
    }
    /* a job holds consecutive segments; a run is a job of its own */
    const struct job *filling = pool_is_filling(wp->pool) ? pool_filling(wp->pool) : NULL;
    if (filling != NULL && (run != NULL || filling->end != s->offset))
        submit(wp);
    if ((rc = filling_job(wp, &j)) != HPROF_OK)
        return rc;
    if (j->n == 0)
        j->start = s->offset;
    j->end = run != NULL ? run->end : end;
    j->n += run != NULL ? run->segments : 1;
    if (run != NULL) {
        reader_skip_to(wp->walk_reader, run->end);
        submit(wp);
    } else if (j->end - j->start >= WRITE_PASS_JOB_BYTES) {
        submit(wp);
    }
    return HPROF_SKIP;
}

static int on_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    int rc = settle(self(v));
    return rc == HPROF_OK ? hprof_visit_string(v->next, s) : rc;
}

static int on_load_class(struct hprof_visitor *v, const struct hprof_load_class *c)
{
    int rc = settle(self(v));
    return rc == HPROF_OK ? hprof_visit_load_class(v->next, c) : rc;
}

static int on_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    int rc = settle(self(v));
    return rc == HPROF_OK ? hprof_visit_record(v->next, r) : rc;
}

static int on_end(struct hprof_visitor *v)
{
    int rc = settle(self(v));
    return rc == HPROF_OK ? hprof_visit_end(v->next) : rc;
}

static const struct hprof_visitor_ops dispatch_ops = {
    .string = on_string,
    .load_class = on_load_class,
    .record = on_record,
    .heap_begin = on_heap_begin,
    .end = on_end,
};

/* ---- Set-up ------------------------------------------------------------------ */

static void write_pass_free(struct write_pass *wp)
{
    pool_free(wp->pool); /* the workers stop first */
    for (unsigned i = 0; wp->workers != NULL && i < wp->n_workers; i++)
        worker_free(&wp->workers[i]);
    for (unsigned i = 0; wp->jobs != NULL && i < wp->n_jobs; i++)
        segment_output_free(&wp->jobs[i].out);
    hprof_reader_free(wp->inline_reader);
    hprof_reader_free(wp->walk_reader);
    free(wp->workers);
    free(wp->jobs);
}

static int start_pool(struct write_pass *wp)
{
    const struct write_pass_config *cfg = wp->cfg;
    void **jobs = calloc(wp->n_jobs, sizeof *jobs);
    void **workers = calloc(wp->n_workers, sizeof *workers);
    int rc = HPROF_OK;
    if (jobs == NULL || workers == NULL) {
        rc = hprof_error_set(cfg->err, HPROF_ERR_NOMEM, "out of memory");
    } else {
        for (unsigned i = 0; i < wp->n_jobs; i++)
            jobs[i] = &wp->jobs[i];
        for (unsigned i = 0; i < wp->n_workers; i++)
            workers[i] = &wp->workers[i];
        wp->pool = pool_new_or_inline(wp->n_jobs, jobs, wp->n_workers, workers, run_job,
                                      cfg->err);
        if (wp->pool == NULL)
            rc = cfg->err->code;
    }
    free(jobs);
    free(workers);
    return rc;
}

static int write_pass_init(struct write_pass *wp, const struct write_pass_config *cfg,
                           struct hprof_visitor *chain, unsigned workers)
{
    memset(wp, 0, sizeof *wp);
    wp->base.ops = &dispatch_ops;
    wp->base.next = chain;
    wp->cfg = cfg;
    wp->n_workers = workers;
    wp->n_jobs = 2 * workers;
    /* the walk skips every segment: no progress, nothing to read ahead */
    int rc = reader_clone(cfg->reader, &wp->walk_reader, cfg->err);
    if (rc == HPROF_OK)
        rc = reader_clone(cfg->reader, &wp->inline_reader, cfg->err);
    if (rc != HPROF_OK)
        return rc;
    wp->jobs = calloc(wp->n_jobs, sizeof *wp->jobs);
    wp->workers = calloc(workers, sizeof *wp->workers);
    if (wp->jobs == NULL || wp->workers == NULL)
        return hprof_error_set(cfg->err, HPROF_ERR_NOMEM, "out of memory");
    for (unsigned i = 0; i < workers; i++)
        if (worker_init(&wp->workers[i], wp) != HPROF_OK)
            return hprof_error_set(cfg->err, HPROF_ERR_NOMEM, "write pass: %s",
                                   wp->workers[i].err.code ? wp->workers[i].err.message
                                                           : "out of memory");
    return start_pool(wp);
}

/* The whole pass on the calling thread, through the caller's reader. */
static int write_on_one_thread(const struct write_pass_config *cfg, struct hprof_visitor *chain)
{
    (void)writer_copy_from(cfg->writer, cfg->reader);
    int rc = hprof_reader_run(cfg->reader, chain);
    (void)writer_copy_from(cfg->writer, NULL);
    return rc;
}

static int write_on_threads(const struct write_pass_config *cfg, struct hprof_visitor *chain,
                            unsigned threads)
{
    struct write_pass wp;
    int rc = write_pass_init(&wp, cfg, chain, threads);
    if (rc == HPROF_OK) {
        report_progress(&wp, 0);
        wp.copying = writer_copy_from(cfg->writer, wp.inline_reader);
        /* the other cores are idle while this thread writes a big
         * segment's kept arrays: one of them reads what comes next */
        (void)writer_copy_ahead(cfg->writer, wp.copying);
        rc = hprof_reader_run(wp.walk_reader, &wp.base);
        if (rc != HPROF_OK && !wp.failed) {
            /* the reader stopped on a later record: an error in a segment
             * before it comes first, as with one thread */
            struct hprof_error reader_error = *cfg->err;
            memset(cfg->err, 0, sizeof *cfg->err);
            if (settle(&wp) == HPROF_OK)
                *cfg->err = reader_error;
            rc = cfg->err->code;
        }
    }
    (void)writer_copy_ahead(cfg->writer, 0);
    (void)writer_copy_from(cfg->writer, NULL);
    write_pass_free(&wp);
    return rc;
}

int write_pass_run(const struct write_pass_config *cfg)
{
    unsigned threads = pool_threads(POOL_WRITE_PASS, cfg->threads, 0);
    struct shrink_chain *chain = shrink_chain_new(cfg->plan, cfg->stats, cfg->err);
    if (chain == NULL)
        return cfg->err->code;
    shrink_chain_set_next(chain, hprof_writer_visitor(cfg->writer));
    int rc = threads < 2 ? write_on_one_thread(cfg, shrink_chain_head(chain))
                         : write_on_threads(cfg, shrink_chain_head(chain), threads);
    shrink_chain_free(chain);
    return rc;
}
