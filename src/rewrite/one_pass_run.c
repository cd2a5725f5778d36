/*
 * one_pass_run.c - hprof_shrink_one_pass(): setting up the run (names in
 * use in front, the chain and writer behind), the parts of the plan that
 * grow as the input is read, and the end of each heap dump.
 */
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "digest.h"
#include "one_pass_private.h"

#define PINS_BYTES (8u << 20)      /* the pins' filter: as the multi-pass's largest */
#define NAMES_LIMIT_MIN ((uint64_t)64 << 20)
#define KEPT_OUT_BYTES (2u << 20)

/* ---- Redaction as the input is read ------------------------------------------ */

/* The plan reads redaction's tables where the module grows them: a copy
 * of each map's header, taken again whenever the module may have grown
 * one, so that the filters always see the storage in use.  The module
 * keeps owning them. */
static void sync_redact_plan(struct one_pass *op)
{
    struct redact_plan *p = &op->plan.redact;
    p->exempt_values = op->redact.exempt_values;
    p->field_classes = op->redact.field_classes;
    p->field_names = op->redact.table_fields;
    p->clearing = op->redact.clearing;
}

static int redacting(const struct one_pass *op)
{
    return op->opt.redact != HPROF_REDACT_NONE || op->opt.redact_fields;
}

int one_pass_redact_string(struct one_pass *op, const struct hprof_string *s)
{
    if (!redact_notes_strings(&op->redact))
        return HPROF_OK;
    int rc = redact_note_string(&op->redact, s);
    sync_redact_plan(op);
    return rc < 0 ? rc : HPROF_OK;
}

int one_pass_redact_class(struct one_pass *op, struct class_info *ci)
{
    if (!redacting(op))
        return HPROF_OK;
    int rc = redact_resolve_class(&op->redact, ci);
    sync_redact_plan(op);
    return rc;
}

int one_pass_redact_instance(struct one_pass *op, const struct hprof_instance *o)
{
    return redacting(op) ? redact_resolve_instance(&op->redact, o) : HPROF_OK;
}

/* String `string_id` holds `value`: exempt from redaction if a keep rule
 * named the String (before now: a rule's holder that comes after the
 * String is too late for its text). */
int one_pass_exempt_value(struct one_pass *op, uint64_t string_id, uint64_t value)
{
    struct redaction *r = &op->redact;
    uint64_t how, was;
    if (value == 0 || r->exempt_strings.count == 0 ||
        !idmap_get(&r->exempt_strings, string_id, &how))
        return HPROF_OK;
    if (idmap_get(&r->exempt_values, value, &was) && was <= how)
        return HPROF_OK; /* a value shared with a String exempt always stays so */
    int rc = idmap_put(&r->exempt_values, value, how);
    sync_redact_plan(op);
    return rc == HPROF_OK ? HPROF_OK : rewrite_nomem(&op->ctx);
}

/* ---- The end of a heap dump ----------------------------------------------------- */

/* Object ids are unique within a heap dump only: what was learnt of the
 * last one's objects and classes is forgotten. */
int one_pass_reset_dump(struct one_pass *op)
{
    struct shrink_plan *p = &op->plan;
    classes_free(&op->model.classes);
    int rc = classes_init(&op->model.classes, op->ctx.ids);
    if (rc == HPROF_OK)
        rc = model_forget_kinds(&op->model, op->ctx.err);
    if (rc == HPROF_OK && redacting(op)) {
        rc = redact_forget(&op->redact);
        if (rc == HPROF_OK && idmap_reset(&op->redact.exempt_values) != HPROF_OK)
            rc = HPROF_ERR_NOMEM;
        sync_redact_plan(op);
    }
    id_table_free(&op->claims);
    op->n_blocked = 0;
    op->n_merges = 0;
    if (rc == HPROF_OK &&
        (idmap_reset(&p->bitmaps.candidates) != HPROF_OK ||
         idmap_reset(&p->bitmaps.remap) != HPROF_OK ||
         idmap_reset(&p->bitmaps.dropped) != HPROF_OK ||
         idmap_reset(&p->bitmaps.dump_buffers) != HPROF_OK ||
         idmap_reset(&op->merge_index) != HPROF_OK))
        rc = HPROF_ERR_NOMEM;
    idfilter_free(&op->kept_out);
    if (rc == HPROF_OK)
        rc = idfilter_init(&op->kept_out, KEPT_OUT_BYTES);
    if (rc == HPROF_OK && op->tracking_pins) {
        idfilter_free(&op->pins);
        rc = idfilter_init(&op->pins, PINS_BYTES);
        op->tracking_pins = rc == HPROF_OK;
    }
    if (rc == HPROF_OK)
        rc = one_pass_system_reset(op);
    return rc == HPROF_ERR_NOMEM ? rewrite_nomem(&op->ctx) : rc;
}

/* ---- Setting up ---------------------------------------------------------------------- */

/* Whether Bitmaps are looked at, decided at each heap record: every name
 * comes before the heap in the dumps of every runtime. */
void one_pass_start_heap(struct one_pass *op)
{
    if (!op->tracking_bitmaps && (op->model.names_seen & (1u << NAME_CLASS_BITMAP))) {
        op->tracking_bitmaps = 1;
        if (!op->opt.keep_duplicates && idfilter_init(&op->pins, PINS_BYTES) == HPROF_OK)
            op->tracking_pins = 1;
    }
}

static int init_plan(struct one_pass *op)
{
    struct shrink_plan *p = &op->plan;
    if (plan_init(p) != HPROF_OK || idmap_init(&p->bitmaps.candidates, 0) != HPROF_OK ||
        idmap_init(&p->bitmaps.remap, 1) != HPROF_OK ||
        idmap_init(&p->bitmaps.dropped, 0) != HPROF_OK ||
        idmap_init(&p->bitmaps.dump_buffers, 0) != HPROF_OK ||
        idmap_init(&op->merge_index, 1) != HPROF_OK)
        return HPROF_ERR_NOMEM;
    p->ids = op->ctx.ids;
    p->arrays = op->opt.arrays;
    p->jvm = op->opt.jvm;
    p->model = &op->model;
    p->drop_names = !op->opt.keep_names;
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
    op->names.limit = window > NAMES_LIMIT_MIN ? window : NAMES_LIMIT_MIN;
    op->hold_names = !op->opt.keep_names;
    if (model_init(&op->model, op->ctx.ids) != HPROF_OK || init_plan(op) != HPROF_OK ||
        (op->sha = sha256_new()) == NULL || idfilter_init(&op->kept_out, KEPT_OUT_BYTES) != HPROF_OK)
        return rewrite_nomem(&op->ctx);
    int rc = redact_init(&op->redact, &op->ctx, &op->model);
    sync_redact_plan(op);
    if (rc == HPROF_OK)
        rc = one_pass_system_init(op);
    if (rc != HPROF_OK)
        return rc;
    if ((op->chain = shrink_chain_new(&op->plan, op->st, err)) == NULL)
        return err->code;
    shrink_chain_set_next(op->chain, hprof_writer_visitor(w));
    op->head = shrink_chain_head(op->chain);
    op->names_kept = shrink_chain_after_names(op->chain);
    op->cursor = shrink_chain_cursor(op->chain);
    op->base.ops = &one_pass_ops;
    names_collect_init(&op->names_in_use, &op->plan.names, err);
    op->names_in_use.base.next = &op->base;
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
    plan_free(&op->plan);
    shrink_chain_free(op->chain);
    redact_free(&op->redact);
    model_free(&op->model);
    wait_window_free(&op->window);
    held_names_clear(&op->names);
    id_table_free(&op->claims);
    free(op->gather);
    free(op->gather_objects);
    free(op->blocked);
    if (op->tracking_pins)
        idfilter_free(&op->pins);
    if (op->kept_out.words != NULL)
        idfilter_free(&op->kept_out);
    sha256_free(op->sha);
    free(op->merges);
    idmap_free(&op->merge_index);
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
    if ((unsigned)options->arrays > HPROF_ARRAYS_REMOVE)
        return hprof_error_set(err, HPROF_ERR_USAGE, "unknown arrays mode %d",
                               (int)options->arrays);
    if (options->mapping != NULL)
        return hprof_error_set(err, HPROF_ERR_USAGE, "a mapping restores names in a pass of "
                               "its own: it needs the multi-pass shrink");
    struct one_pass *op = calloc(1, sizeof *op);
    struct hprof_writer *w = op != NULL ? hprof_writer_new(sink, err) : NULL;
    if (op == NULL || w == NULL) {
        free(op);
        return op == NULL ? hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory") : err->code;
    }
    op->opt = *options;
    op->st = stats;
    op->ctx = (struct rewrite_ctx){ .reader = r, .err = err, .stats = stats, .opt = &op->opt,
                                    .ids = hprof_reader_header(r)->id_size, .threads = 1 };
    double start = hprof_now();
    int rc = options->segment_limit ? hprof_writer_set_segment_limit(w, options->segment_limit)
                                    : HPROF_OK;
    if (rc == HPROF_OK)
        rc = setup(op, r, w);
    /* the names collector in front learns the names in use and hands every
     * record on */
    if (rc == HPROF_OK)
        rc = hprof_reader_run(r, op->plan.drop_names ? &op->names_in_use.base : &op->base);
    fill_stats(op, r, sink, start);
    release(op);
    free(op);
    hprof_writer_free(w);
    return rc;
}
