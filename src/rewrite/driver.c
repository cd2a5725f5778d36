/*
 * driver.c - hprof_shrink(): the passes over the input, in order.  Each
 * rewrite (strings.c, bitmaps.c, system_heaps.c, redact.c, arrays.c) learns
 * what it needs in the collect passes, publishes its decisions into the
 * plan, and applies them with its filter in the write pass.
 *
 *   restore  (--mapping) what each obfuscated name restores to
 *            (deobfuscate.c); every later pass reads the dump through its
 *            filter, with the original names.
 *   collect  names, classes, system-heap objects, large arrays and
 *            references (collect.c), and the names in use (used_names.c);
 *            when the dump allows, the resolution runs as it goes and the
 *            resolve pass is not needed.
 *   resolve  every kept object against complete class layouts.
 *   graph    (system heaps dropped) which system objects link the roots to
 *            the application's.
 *   expand   (bitmaps, rarely) the elements of DumpData.buffers.
 *   exempt   (redaction, with keep rules) the value arrays of the Strings a
 *            rule names.
 *   digest   (bitmaps, only when candidates may have a twin and their
 *            contents were not all located, or what else refers to them is
 *            not known) MD5s of the unlocated and pins; then the merges,
 *            confirmed byte for byte.
 *   write    the plan applied (write_pass.c, chain.c).
 *
 * They are enum hprof_shrink_pass (hprof.h): each runs at most once, so the
 * stats hold the time of every pass made.
 *
 * The collect passes skip array contents (the reader seeks over them), so
 * they cost about one read of the metadata.  Memory grows with what must be
 * remembered - class layouts, system-heap ids, kept array ids, candidates -
 * never with the size of the input.
 */
#include <string.h>
#include <unistd.h>

#include "collect.h"
#include "pool.h"
#include "segment_runs.h"
#include "objcheck_pass.h"
#include "shrink_stats.h"
#include "validate.h"
#include "write_pass.h"

struct shrink_run {
    struct rewrite_ctx ctx;
    struct hprof_shrink_options opt;
    struct rewrites rw;
    struct collect collect;
    struct shrink_plan plan;
    struct deobf_filter restore; /* --mapping: in front of the collect passes */
    struct objcheck ids_seen;   /* no object id dumped twice (validate.h) */
    struct objcheck_visitor check; /* confirms ids_seen's suspects, when the resolve pass runs */
    struct segment_runs runs;   /* for the write pass's workers, noted in the collect pass */
    /* A file of several heap dumps: the names in use in any of them,
     * collected once, since each dump's run writes the names around it. */
    const struct names_plan *shared_names;
    unsigned threads;
    struct write_pass_limits limits;
    int pass, passes;
};


static void report(void *ctx, uint64_t done, uint64_t total)
{
    struct shrink_run *run = ctx;
    run->opt.progress(run->opt.progress_ctx, run->pass, run->passes, done, total);
}

/* A pass of `kind` begins: counted, and its start time returned.  Each
 * kind runs once at most, so the stats have room for every pass. */
static double pass_begin(struct shrink_run *run, enum hprof_shrink_pass kind)
{
    struct hprof_shrink_stats *st = run->ctx.stats;
    st->pass_kinds[run->pass] = kind;
    run->pass++;
    st->passes = run->pass;
    return hprof_now();
}

static void pass_end(struct shrink_run *run, double start)
{
    run->ctx.stats->pass_seconds[run->pass - 1] = hprof_now() - start;
}

/* A pass of `kind` through `v`, timed and counted. */
static int run_pass(struct shrink_run *run, enum hprof_shrink_pass kind, struct hprof_visitor *v)
{
    double start = pass_begin(run, kind);
    int rc = hprof_reader_run(run->ctx.reader, v);
    pass_end(run, start);
    return rc;
}

static int write_pass(struct shrink_run *run, struct hprof_writer *w)
{
    struct names_plan own_names = run->plan.names;
    if (run->shared_names != NULL)
        run->plan.names = *run->shared_names;
    struct write_pass_config cfg = {
        .plan = &run->plan,
        .reader = run->ctx.reader,
        .writer = w,
        .threads = run->threads,
        .segment_limit = run->opt.segment_limit,
        .stats = run->ctx.stats,
        .err = run->ctx.err,
        .progress = run->opt.progress ? report : NULL,
        .progress_ctx = run,
        .runs = run->runs.n > 0 ? &run->runs : NULL,
        .limits = run->limits,
    };
    double start = pass_begin(run, HPROF_PASS_WRITE);
    int rc = write_pass_run(&cfg);
    pass_end(run, start);
    run->plan.names = own_names;
    return rc;
}

/* The restore pass (--mapping): what each obfuscated name restores to. */
static int deobfuscate_pass(struct shrink_run *run)
{
    struct deobf_collect *c;
    struct shrink_plan *p = &run->plan;
    int rc = deobf_collect_new(&c, run->opt.mapping, &p->deobf, run->ctx.err);
    if (rc == HPROF_OK)
        rc = run_pass(run, HPROF_PASS_RESTORE, deobf_collect_visitor(c));
    if (rc == HPROF_OK)
        rc = deobf_collect_finish(c);
    deobf_collect_free(c);
    struct hprof_shrink_stats *st = run->ctx.stats;
    st->mapping_classes = p->deobf.classes;
    st->mapping_fields = p->deobf.fields;
    st->mapping_methods = p->deobf.methods;
    st->mapping_strings_added = p->deobf.n_strings;
    return rc;
}

/* `v` behind the filter that restores names, with a mapping: every
 * collect pass sees the dump as it will be written. */
static struct hprof_visitor *restored(struct shrink_run *run, struct hprof_visitor *v)
{
    if (!run->plan.deobfuscate)
        return v;
    deobf_filter_release(&run->restore);
    deobf_filter_init(&run->restore, &run->plan.deobf, run->ctx.ids);
    run->restore.base.next = v;
    return &run->restore.base;
}

/* After the collect passes: the bitmaps' expand pass, the redaction's
 * exempt pass and the bitmaps' digest pass, each when needed, then the
 * bitmap merges; none after an error `rc`, but the counts are taken. */
static int bitmap_and_exempt_passes(struct shrink_run *run, int rc)
{
    struct rewrites *rw = &run->rw;
    struct hprof_shrink_stats *st = run->ctx.stats;
    int expand = 0, digest = 0, merge = 0;
    bitmaps_settle(&rw->bitmaps);
    if (rc == HPROF_OK)
        rc = bitmaps_expand_remembered(&rw->bitmaps, &expand);
    run->passes = run->pass + 2 + expand; /* for progress; may overstate by the digest */
    if (rc == HPROF_OK && expand)
        rc = run_pass(run, HPROF_PASS_EXPAND, bitmaps_expand_visitor(&rw->bitmaps));
    st->strings_kept_by_rule = rw->redact.exempt_strings.count;
    if (rc == HPROF_OK && redact_needs_exempt_pass(&rw->redact))
        rc = run_pass(run, HPROF_PASS_EXEMPT, redact_exempt_visitor(&rw->redact));
    st->bitmap_candidates = rw->bitmaps.n_cand;
    if (rc == HPROF_OK && !run->opt.keep_duplicates)
        rc = bitmaps_digest_located(&rw->bitmaps, &digest, &merge);
    if (rc == HPROF_OK && digest) {
        rc = run_pass(run, HPROF_PASS_DIGEST, bitmaps_digest_visitor(&rw->bitmaps));
        if (rc == HPROF_OK)
            rc = bitmaps_digest_finish(&rw->bitmaps);
    }
    if (rc == HPROF_OK && merge)
        rc = bitmaps_merge(&rw->bitmaps);
    return rc;
}

/* The collect passes, then every rewrite's decisions into the plan. */
static int collect_and_plan(struct shrink_run *run)
{
    struct rewrites *rw = &run->rw;
    struct hprof_shrink_stats *st = run->ctx.stats;
    int resolved = 0;
    struct names_collect names;
    struct hprof_visitor *pass_1 = collect_pass_1(&run->collect);
    if (run->plan.drop_names && run->shared_names == NULL) { /* names in use, as it goes */
        names_collect_init(&names, &run->plan.names, run->ctx.err);
        names.heap_infos_dropped = run->opt.jvm;
        names.base.next = pass_1;
        pass_1 = &names.base;
    }
    /* the write pass's workers take runs of small segments whole: noted
     * here, unless the input is salvaged (its cut record may be rebuilt)
     * or names are restored (records are added) */
    if (run->threads > 1 && !run->plan.deobfuscate && !reader_salvaging(run->ctx.reader))
        pass_1 = segment_runs_visitor(&run->runs, pass_1);
    /* every object id once: what hprof-verify checks, in bounded memory
     * (the collect pass adds them in collect.c) */
    objcheck_visitor_init(&run->check, &run->ids_seen, run->ctx.err, NULL);
    run->passes = 5 + run->plan.deobfuscate;
    int rc = run->plan.deobfuscate ? deobfuscate_pass(run) : HPROF_OK;
    if (rc == HPROF_OK)
        rc = run_pass(run, HPROF_PASS_COLLECT, restored(run, pass_1));
    segment_runs_finish(&run->runs);
    if (rc == HPROF_OK)
        rc = objcheck_seal(&run->ids_seen, run->ctx.err);
    if (rc == HPROF_OK)
        rc = collect_finish_pass_1(&run->collect, &resolved);
    st->resolved_in_pass_1 = resolved;
    run->check.mode = objcheck_pending(&run->ids_seen) > 0 ? OBJCHECK_CONFIRM : OBJCHECK_OFF;
    if (rc == HPROF_OK && !resolved && (rc = collect_prepare_resolve(&run->collect)) == HPROF_OK) {
        run->check.base.next = collect_resolve(&run->collect);
        rc = run_pass(run, HPROF_PASS_RESOLVE, restored(run, &run->check.base));
    } else if (rc == HPROF_OK && run->check.mode == OBJCHECK_CONFIRM) {
        /* ids the filter cannot vouch for, settled in a pass of headers */
        rc = objcheck_confirm_pass(&run->ids_seen, run->ctx.reader, run->ctx.err);
    }
    /* which system objects link the roots to the application's */
    if (rc == HPROF_OK && collect_wants_graph(&run->collect)) {
        run->passes++;
        rc = run_pass(run, HPROF_PASS_GRAPH, restored(run, collect_graph(&run->collect)));
        if (rc == HPROF_OK)
            rc = collect_finish_graph(&run->collect);
    }
    rc = bitmap_and_exempt_passes(run, rc);
    run->passes = run->pass + 1;
    if (rc != HPROF_OK)
        return rc;
    /* A dump that uses no name at all (STRING records alone, or a dump cut
     * to its names) keeps them: dropping every one could leave no record,
     * which is not a valid dump. */
    if (names_plan_count(run->shared_names ? run->shared_names : &run->plan.names) == 0)
        run->plan.drop_names = 0;
    run->plan.ids = run->ctx.ids;
    run->plan.arrays = run->opt.arrays;
    run->plan.jvm = run->opt.jvm;
    run->plan.model = &rw->model;
    system_heaps_publish(&rw->system, &run->plan.system);
    redact_publish(&rw->redact, &run->plan.redact);
    if (strings_publish(&rw->strings, &run->plan.strings) != HPROF_OK ||
        bitmaps_publish(&rw->bitmaps, &run->plan.bitmaps) != HPROF_OK)
        return rewrite_nomem(&run->ctx);
    return HPROF_OK;
}

static int init(struct shrink_run *run)
{
    struct rewrites *rw = &run->rw;
    const struct rewrite_ctx *ctx = &run->ctx;
    strings_init(&rw->strings);
    collect_init(&run->collect, ctx, rw, &run->ids_seen);
    segment_runs_init(&run->runs, run->limits.segment_max, WRITE_PASS_JOB_BYTES);
    if (plan_init(&run->plan) != HPROF_OK || model_init(&rw->model, ctx->ids) != HPROF_OK ||
        objcheck_init(&run->ids_seen, objcheck_filter_bytes(hprof_reader_size(ctx->reader))) !=
            HPROF_OK ||
        system_heaps_init(&rw->system, !run->opt.keep_system_heaps) != HPROF_OK ||
        bitmaps_init(&rw->bitmaps, ctx, &rw->model, &rw->system) != HPROF_OK)
        return rewrite_nomem(ctx);
    return redact_init(&rw->redact, ctx, &rw->model);
}

static void release(struct shrink_run *run)
{
    struct rewrites *rw = &run->rw;
    plan_free(&run->plan);
    segment_runs_free(&run->runs);
    objcheck_free(&run->ids_seen);
    collect_free(&run->collect);
    redact_free(&rw->redact);
    bitmaps_free(&rw->bitmaps);
    system_heaps_free(&rw->system);
    strings_free(&rw->strings);
    model_free(&rw->model);
}

/* A run over `r` with its own reader, as the caller's options say. */
static int run_begin(struct shrink_run *run, struct hprof_reader *r,
                     const struct hprof_shrink_options *options, struct write_pass_limits limits,
                     struct hprof_shrink_stats *stats, struct hprof_error *err)
{
    memset(run, 0, sizeof *run);
    run->opt = *options;
    run->limits = limits;
    run->ctx = (struct rewrite_ctx){ .err = err, .stats = stats,
                                     .opt = &run->opt, .ids = hprof_reader_header(r)->id_size };
    memset(stats, 0, sizeof *stats);
    /* A reader of our own, so that the caller's is left as it was set up. */
    int rc = reader_clone(r, &run->ctx.reader, err);
    if (rc != HPROF_OK)
        return rc;
    run->threads = pool_threads(POOL_SHRINK, run->opt.threads, hprof_reader_size(r));
    run->ctx.helper_threads = run->threads > 1 && pool_online_cores() > 1;
    run->ctx.threads = run->ctx.helper_threads ? run->threads : 1;
    hprof_reader_set_strict(run->ctx.reader, 1);
    /* every pass but a parallel write pass reads every record */
    reader_set_readahead_thread(run->ctx.reader, run->ctx.helper_threads);
    if (run->opt.progress)
        hprof_reader_set_progress(run->ctx.reader, report, run);
    if (run->opt.dump != 0)
        hprof_reader_set_dump(run->ctx.reader, run->opt.dump);
    rc = init(run);
    run->plan.drop_names = !run->opt.keep_names;
    run->plan.deobfuscate = run->opt.mapping != NULL;
    return rc;
}

static void run_end(struct shrink_run *run, struct hprof_reader *r)
{
    release(run);
    deobf_filter_release(&run->restore);
    if (run->ctx.reader != NULL) {
        reader_copy_salvage_report(r, run->ctx.reader);
        hprof_reader_free(run->ctx.reader);
    }
}

/* Which STRING records any heap dump of the file uses (`jvm`: none a
 * HEAP_DUMP_INFO names, which --jvm drops): one pass. */
static int collect_all_names(struct hprof_reader *r, struct names_plan *names, int jvm,
                             struct hprof_error *err)
{
    struct hprof_reader *all;
    struct names_collect c;
    int rc = reader_clone(r, &all, err);
    if (rc != HPROF_OK)
        return rc;
    hprof_reader_set_dump(all, 0);
    hprof_reader_set_strict(all, 1);
    names_collect_init(&c, names, err);
    c.heap_infos_dropped = jvm;
    c.base.next = NULL;
    rc = hprof_reader_run(all, &c.base);
    hprof_reader_free(all);
    return rc;
}

/* A file of several heap dumps, each its own space of object ids: each
 * dump is shrunk by a run of its own, whose collect passes read the
 * records outside the heap dumps and that dump's, and whose write pass
 * writes the records from the end of the dump before to the end of its
 * own (the last, to the end of the file) through the one writer. */
static int shrink_each_dump(struct hprof_reader *r, struct hprof_writer *w,
                            const struct hprof_shrink_options *options,
                            struct write_pass_limits limits, struct hprof_shrink_stats *stats,
                            struct hprof_error *err)
{
    if (options->mapping != NULL)
        return hprof_error_set(err, HPROF_ERR_USAGE,
                               "a mapping cannot restore the names of a file of several heap "
                               "dumps: choose one (--dump=N)");
    struct names_plan names;
    if (names_plan_init(&names) != HPROF_OK)
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
    int rc = options->keep_names ? HPROF_OK : collect_all_names(r, &names, options->jvm, err);
    uint64_t start = 0;
    unsigned dumps = 2;
    for (unsigned n = 1; rc == HPROF_OK && n <= dumps; n++) {
        struct hprof_shrink_stats dump_stats;
        struct shrink_run run;
        rc = run_begin(&run, r, options, limits, &dump_stats, err);
        if (rc != HPROF_OK) { /* no reader of its own: nothing to run */
            run_end(&run, r);
            break;
        }
        run.shared_names = &names;
        hprof_reader_set_dump(run.ctx.reader, n);
        rc = collect_and_plan(&run);
        dumps = hprof_reader_dumps(run.ctx.reader);
        if (rc == HPROF_OK && dumps > HPROF_MAX_DUMPS)
            rc = hprof_error_set(err, HPROF_ERR_FORMAT,
                                 "%u heap dumps in one file: at most %u are shrunk each on its "
                                 "own; choose one (--dump=N)", dumps, HPROF_MAX_DUMPS);
        uint64_t end = n < dumps ? reader_dump_end(run.ctx.reader) : 0;
        hprof_reader_set_dump(run.ctx.reader, 0);
        reader_set_range(run.ctx.reader, start, end);
        if (rc == HPROF_OK)
            rc = write_pass(&run, w);
        start = end;
        shrink_stats_add_dump(stats, &dump_stats);
        run_end(&run, r);
    }
    stats->dumps = dumps;
    names_plan_free(&names);
    return rc;
}

int hprof_shrink(struct hprof_reader *r, struct hprof_sink *sink,
                 const struct hprof_shrink_options *options, struct hprof_shrink_stats *stats,
                 struct hprof_error *err)
{
    const struct write_pass_limits limits = WRITE_PASS_LIMITS_DEFAULT;
    return shrink_with_limits(r, sink, options, limits, stats, err);
}

int shrink_with_limits(struct hprof_reader *r, struct hprof_sink *sink,
                       const struct hprof_shrink_options *options,
                       struct write_pass_limits limits, struct hprof_shrink_stats *stats,
                       struct hprof_error *err)
{
    struct hprof_shrink_stats scratch_stats;
    struct shrink_run run;
    if (stats == NULL)
        stats = &scratch_stats;
    memset(stats, 0, sizeof *stats);
    int checked = rewrite_check_call(r, sink, &options, err);
    if (checked != HPROF_OK)
        return checked;
    struct hprof_writer *w = hprof_writer_new(sink, err);
    if (w == NULL)
        return err->code;
    int rc = options->segment_limit ? hprof_writer_set_segment_limit(w, options->segment_limit)
                                    : HPROF_OK;
    if (rc == HPROF_OK)
        rc = run_begin(&run, r, options, limits, stats, err);
    else
        memset(&run, 0, sizeof run);
    /* object ids are unique within one heap dump only: a second one stops
     * the first pass, before anything is written */
    if (run.ctx.reader != NULL)
        reader_set_one_dump(run.ctx.reader, 1);
    if (rc == HPROF_OK)
        rc = collect_and_plan(&run);
    int several = rc != HPROF_OK && run.ctx.reader != NULL &&
                  reader_stopped_at_second_dump(run.ctx.reader);
    if (rc == HPROF_OK)
        rc = write_pass(&run, w);
    stats->dumps = 1;
    run_end(&run, r);
    if (several) {
        /* The run stopped at the second heap dump, before its write pass:
         * what its collect passes counted (Bitmaps found, Strings a keep
         * rule names) the run of each dump counts again.  The time it
         * took was spent, and stays. */
        shrink_stats_clear_counters(stats);
        memset(err, 0, sizeof *err);
        rc = shrink_each_dump(r, w, options, limits, stats, err);
    }
    if (rc == HPROF_OK) {
        stats->bytes_in = hprof_reader_size(r);
        stats->bytes_out = hprof_sink_bytes(sink);
    }
    hprof_writer_free(w);
    return rc;
}
