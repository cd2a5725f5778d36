/*
 * one_pass_run.c - hprof_shrink_one_pass(): setting up the run (names in
 * use in front, the chain and writer behind) and tearing it down.
 */
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "digest.h"
#include "pool.h"
#include "one_pass_private.h"
#include "sink_private.h"

#define NAMES_LIMIT_MIN ((uint64_t)64 << 20)

/* ---- Setting up ---------------------------------------------------------------------- */

static int init_plan(struct one_pass *op)
{
    struct shrink_plan *p = &op->plan;
    if (plan_init(p) != HPROF_OK || idmap_init(&p->bitmaps.candidates, 0) != HPROF_OK ||
        idmap_init(&p->bitmaps.remap, 1) != HPROF_OK ||
        idmap_init(&p->bitmaps.dropped, 0) != HPROF_OK ||
        idmap_init(&p->bitmaps.dump_buffers, 0) != HPROF_OK ||
        idmap_init(&op->merge_index, 1) != HPROF_OK || idmap_init(&op->device, 0) != HPROF_OK ||
        idmap_init(&op->names_unread, 1) != HPROF_OK ||
        idmap_init(&op->buffer_sizes, 0) != HPROF_OK ||
        idmap_init(&op->names.used, 0) != HPROF_OK ||
        (op->names.note_read && idmap_init(&op->names.read_ids, 0) != HPROF_OK))
        return HPROF_ERR_NOMEM;
    p->ids = op->ctx.ids;
    p->arrays = op->opt.arrays;
    p->jvm = op->opt.jvm;
    p->model = &op->model;
    p->drop_names = 0; /* one_pass_names.c writes only the names in use */
    p->one_pass_merges = !op->opt.keep_duplicates;
    p->one_pass_system = !op->opt.keep_system_heaps;
    p->redact.mode = op->opt.redact;
    p->redact.fields = op->opt.redact_fields;
    return HPROF_OK;
}

static void progress(void *ctx, uint64_t done, uint64_t total)
{
    struct one_pass *op = ctx;
    op->opt.progress(op->opt.progress_ctx, 1, 1, done, total);
}

static int setup(struct one_pass *op, struct hprof_reader *r, struct hprof_writer *w)
{
    struct hprof_error *err = op->ctx.err;
    uint64_t window = op->opt.window ? op->opt.window : HPROF_WINDOW_DEFAULT;
    wait_window_init(&op->window, window < HPROF_WINDOW_MIN ? HPROF_WINDOW_MIN : window);
    wait_window_init(&op->long_wait, op->window.limit / 8);
    op->names.limit = window > NAMES_LIMIT_MIN ? window : NAMES_LIMIT_MIN;
    op->hold_names = !op->opt.keep_names;
    op->names.note_read = !op->hold_names && op->opt.redact != HPROF_REDACT_NONE;
    if (model_init(&op->model, op->ctx.ids) != HPROF_OK || init_plan(op) != HPROF_OK ||
        one_pass_checks_init(op) != HPROF_OK ||
        (op->sha = sha256_new()) == NULL)
        return rewrite_nomem(&op->ctx);
    int rc = redact_init(&op->redact, &op->ctx, &op->model);
    one_pass_sync_redact_plan(op);
    op->hold_values = op->opt.redact != HPROF_REDACT_NONE && op->redact.n_rules > 0;
    if (rc == HPROF_OK)
        rc = one_pass_value_owners_init(op);
    if (rc == HPROF_OK)
        rc = one_pass_system_init(op);
    if (rc == HPROF_OK)
        rc = one_pass_spill_init(op);
    op->names.to_disk = sink_has_scratch(op->sink) && op->opt.spill != HPROF_SPILL_OFF;
    if (rc != HPROF_OK)
        return rc;
    if ((op->chain = shrink_chain_new(&op->plan, op->st, err)) == NULL)
        return err->code;
    shrink_chain_set_next(op->chain, hprof_writer_visitor(w));
    op->head = shrink_chain_head(op->chain);
    op->cursor = shrink_chain_cursor(op->chain);
    op->base.ops = &one_pass_ops;
    op->prelude = 1;
    op->prelude_tail = &op->prelude_first;
    hprof_reader_set_strict(r, 1);
    if (op->opt.progress)
        hprof_reader_set_progress(r, progress, op);
    if (op->opt.dump != 0)
        hprof_reader_set_dump(r, op->opt.dump);
    return HPROF_OK;
}

static void release(struct one_pass *op)
{
    /* redaction owns the maps the plan reads */
    memset(&op->plan.redact, 0, sizeof op->plan.redact);
    one_pass_system_free(op);
    one_pass_spill_free(op);
    plan_free(&op->plan);
    shrink_chain_free(op->chain);
    redact_free(&op->redact);
    model_free(&op->model);
    wait_window_free(&op->window);
    wait_window_free(&op->long_wait);
    one_pass_names_free(op);
    one_pass_checks_free(op);
    one_pass_prelude_free(op);
    id_table_free(&op->claims);
    id_table_free(&op->value_buffers);
    one_pass_slots_free(op);
    one_pass_twins_free(op);
    one_pass_value_owners_free(op);
    free(op->gather);
    free(op->gather_objects);
    free(op->blocked);
    if (op->tracking_pins)
        idfilter_free(&op->pins);
    idlog_free(&op->contents_out);
    idlog_free(&op->buffers_out);
    sha256_free(op->sha);
    free(op->compare_buf);
    free(op->merges);
    idmap_free(&op->merge_index);
    idmap_free(&op->buffer_sizes);
    idmap_free(&op->device);
    idmap_free(&op->names_unread);
    free(op->walk);
}

static void fill_stats(struct one_pass *op, struct hprof_reader *r, struct hprof_sink *sink,
                       double start)
{
    struct hprof_shrink_stats *st = op->st;
    st->passes = 1;
    st->pass_kinds[0] = HPROF_PASS_STREAM;
    st->pass_seconds[0] = hprof_now() - start;
    st->window_waited.count = op->window.waited;
    st->window_waited.bytes = op->window.waited_bytes;
    st->window_peak_bytes = op->window.peak;
    /* --jvm's filter also drops the heap switches made for records written
     * after their neighbours: the report counts the input's records, as the
     * multi-pass shrink's does */
    if (op->opt.jvm)
        st->jvm_heap_infos_dropped = op->heap_infos_in;
    if (st->dumps == 0)
        st->dumps = 1;
    st->bytes_in = hprof_reader_size(r);
    st->bytes_out = hprof_sink_bytes(sink);
}

int hprof_shrink_one_pass(struct hprof_reader *r, struct hprof_sink *sink,
                          const struct hprof_shrink_options *options,
                          struct hprof_shrink_stats *stats, struct hprof_error *err)
{
    struct hprof_shrink_stats scratch;
    stats = stats != NULL ? stats : &scratch;
    memset(stats, 0, sizeof *stats);
    int checked = rewrite_check_call(r, sink, &options, err);
    if (checked != HPROF_OK)
        return checked;
    if (options->mapping != NULL)
        return hprof_error_set(err, HPROF_ERR_USAGE, "a mapping restores names in a pass of "
                               "its own: it needs the multi-pass shrink");
    struct one_pass *op = calloc(1, sizeof *op);
    if (op == NULL)
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
    /* Under --redact an Android dump's names that nothing has used when a
     * heap dump begins go out as fillers, and take their texts back when
     * used (one_pass_names.c): where the sink cannot patch, over the bytes
     * a hold in front of it keeps back. */
    op->out = sink;
    if (options->redact != HPROF_REDACT_NONE && !options->keep_names && !sink_can_patch(sink))
        op->out = op->hold = sink_hold_new(sink, err);
    struct hprof_writer *w = op->out != NULL ? hprof_writer_new(op->out, err) : NULL;
    if (w == NULL) {
        hprof_sink_free(op->hold);
        free(op);
        return err->code;
    }
    op->opt = *options;
    op->st = stats;
    op->writer = w;
    op->sink = sink;
    /* redacted pixels are not the bytes a twin would be compared with */
    op->confirm_by_reading = sink_can_read_back(sink) && options->redact != HPROF_REDACT_ALL;
    op->ctx = (struct rewrite_ctx){ .reader = r, .err = err, .stats = stats, .opt = &op->opt,
                                    .ids = hprof_reader_header(r)->id_size };
    /* a stream's size is unknown: as large as the helpers' threshold */
    op->ctx.threads = pool_threads(POOL_SHRINK, options->threads, UINT64_MAX);
    op->ctx.helper_threads = op->ctx.threads > 1 && pool_online_cores() > 1;
    if (!op->ctx.helper_threads)
        op->ctx.threads = 1;
    double start = hprof_now();
    int rc = options->segment_limit ? hprof_writer_set_segment_limit(w, options->segment_limit)
                                    : HPROF_OK;
    if (rc == HPROF_OK)
        rc = setup(op, r, w);
    if (rc == HPROF_OK)
        rc = hprof_reader_run(r, &op->base);
    if (rc == HPROF_OK && op->hold != NULL)
        rc = sink_hold_release(op->hold);
    fill_stats(op, r, sink, start);
    release(op);
    hprof_writer_free(w);
    hprof_sink_free(op->hold);
    free(op);
    return rc;
}
