/*
 * one_pass_out.c - what goes down the chain in a one-pass shrink, and the
 * parts of the plan the chain reads that grow as the input is read: the
 * heap a record is written in, the verdict on each array, the classes
 * ready and what redaction learns of them.
 */
#include <string.h>

#include "one_pass_private.h"

/* ---- Sending records down the chain ---------------------------------------- */

/* The writer's segment is in heap `heap` from here. */
int one_pass_switch_heap(struct one_pass *op, uint32_t heap)
{
    if (op->out_heap == heap)
        return HPROF_OK;
    const struct heap_name *known = NULL;
    for (unsigned i = 0; i < op->n_heap_names; i++)
        if (op->heap_names[i].heap == heap)
            known = &op->heap_names[i];
    if (known == NULL || heap == HPROF_HEAP_DEFAULT) {
        /* a new segment starts in the default heap, and no record names it */
        struct hprof_segment seg = op->seg;
        int rc = hprof_visit_heap_end(op->head, &seg);
        if (rc == HPROF_OK)
            rc = hprof_visit_heap_begin(op->head, &seg);
        op->out_heap = HPROF_HEAP_DEFAULT;
        if (rc != HPROF_OK || known == NULL)
            return rc;
    }
    struct hprof_heap_info info = { .offset = 0, .heap_id = heap, .name_id = known->name };
    op->out_heap = heap;
    return hprof_visit_heap_info(op->head, &info);
}

static int quiet_skip(int rc)
{
    return rc == HPROF_SKIP ? HPROF_OK : rc;
}

int one_pass_send_instance(struct one_pass *op, const struct hprof_instance *o, uint32_t heap)
{
    int rc = one_pass_switch_heap(op, heap);
    return rc == HPROF_OK ? quiet_skip(hprof_visit_instance(op->head, o)) : rc;
}

/* What went out, for the claims that come after it (late_claims()). */
int one_pass_note_out(struct one_pass *op, uint64_t id, enum array_keep keep, int nodata)
{
    /* a buffer whose bytes a String turns out to hold went out as pixels,
     * not redacted as a String's text: under --redact, no answer */
    int whole = keep == ARRAY_STRING_VALUE || keep == ARRAY_STRING_UTF16 ||
                keep == ARRAY_NATIVES ||
                (keep == ARRAY_BITMAP && op->opt.redact == HPROF_REDACT_NONE);
    int buffer = keep == ARRAY_BITMAP || keep == ARRAY_DUPLICATE;
    if (((whole || nodata) && idlog_add(&op->contents_out, id) != HPROF_OK) ||
        ((buffer || nodata) && idlog_add(&op->buffers_out, id) != HPROF_OK))
        return rewrite_nomem(&op->ctx);
    return HPROF_OK;
}

/* The chain's verdict on array `a`, given before it goes in. */
int one_pass_give_verdict(struct one_pass *op, const struct hprof_primitive_array *a,
                          enum array_keep keep)
{
    if (keep != ARRAY_NOT_KEPT && one_pass_note_out(op, a->id, keep, 0) != HPROF_OK)
        return HPROF_ERR_NOMEM;
    op->cursor->array_id = a->id;
    op->cursor->array_offset = a->data_offset;
    op->cursor->array_keep = keep;
    return HPROF_OK;
}

int one_pass_send_array(struct one_pass *op, const struct hprof_primitive_array *a,
                        uint32_t heap, enum array_keep keep)
{
    int rc = one_pass_switch_heap(op, heap);
    if (rc == HPROF_OK)
        rc = one_pass_give_verdict(op, a, keep);
    return rc == HPROF_OK ? quiet_skip(hprof_visit_primitive_array(op->head, a)) : rc;
}

/* ---- Redaction as the input is read ------------------------------------------ */

/* The plan reads redaction's tables where the module grows them: a copy
 * of each map's header, taken again whenever the module may have grown
 * one, so that the filters always see the storage in use.  The module
 * keeps owning them. */
void one_pass_sync_redact_plan(struct one_pass *op)
{
    struct redact_plan *p = &op->plan.redact;
    p->exempt_values = op->redact.exempt_values;
    p->field_classes = op->redact.field_classes;
    p->field_names = op->redact.table_fields;
    p->clearing = op->redact.clearing;
    p->blind = op->redact.blind;
}

int one_pass_redacting(const struct one_pass *op)
{
    return op->opt.redact != HPROF_REDACT_NONE || op->opt.redact_fields;
}

int one_pass_redact_string(struct one_pass *op, const struct hprof_string *s)
{
    if (!redact_notes_strings(&op->redact))
        return HPROF_OK;
    int rc = redact_note_string(&op->redact, s);
    one_pass_sync_redact_plan(op);
    return rc < 0 ? rc : HPROF_OK;
}

/* Has class `k`, or a field it declares, a name not read yet? */
static int own_names_unread(const struct one_pass *op, const struct class_info *k)
{
    const struct classes *c = &op->model.classes;
    uint64_t name;
    if (idmap_get(&op->model.class_names, k->id, &name) && one_pass_name_unread(op, name))
        return 1;
    for (unsigned i = 0; i < k->n_fields; i++)
        if (one_pass_name_unread(op, c->fields[k->first_field + i].name_id))
            return 1;
    return 0;
}

/* Has a class up `ci`'s chain, or a field of one, a name not read yet?
 * Then the field table, which goes by names, cannot say which of its
 * fields are hash caches of redacted texts.  Memoised for every class
 * the walk passes, so that each class is looked at once whatever the
 * depth of the hierarchy.  @return HPROF_OK and *unread, or an error. */
static int chain_names_unread(struct one_pass *op, const struct class_info *ci, int *unread)
{
    const struct classes *c = &op->model.classes;
    size_t n = 0;
    uint64_t memo = 0;
    const struct class_info *k = ci;
    for (; k != NULL && !idmap_get(&op->names_unread, k->id, &memo); k = classes_up(c, k)) {
        const struct class_info **grown = grow_array(op->walk, &op->cap_walk, n + 1, sizeof *grown);
        if (grown == NULL)
            return rewrite_nomem(&op->ctx);
        op->walk = grown;
        op->walk[n++] = k;
    }
    *unread = k != NULL && memo == 2;
    while (n-- > 0) { /* from the top down: each class's answer */
        *unread = *unread || own_names_unread(op, op->walk[n]);
        if (idmap_put(&op->names_unread, op->walk[n]->id, 1 + (uint64_t)*unread) != HPROF_OK)
            return rewrite_nomem(&op->ctx);
    }
    return HPROF_OK;
}

int one_pass_redact_class(struct one_pass *op, struct class_info *ci)
{
    if (!one_pass_redacting(op))
        return HPROF_OK;
    int rc = redact_resolve_class(&op->redact, ci), unread = 0;
    if (rc == HPROF_OK && op->opt.redact != HPROF_REDACT_NONE)
        rc = chain_names_unread(op, ci, &unread);
    if (rc == HPROF_OK && unread && idmap_put(&op->redact.blind, ci->id, 0) != HPROF_OK)
        rc = rewrite_nomem(&op->ctx);
    one_pass_sync_redact_plan(op);
    return rc;
}

int one_pass_redact_instance(struct one_pass *op, const struct hprof_instance *o)
{
    return one_pass_redacting(op) ? redact_resolve_instance(&op->redact, o) : HPROF_OK;
}

int one_pass_keep_device_text(struct one_pass *op, uint64_t value)
{
    int rc = redact_keep_device_text(&op->redact, value);
    one_pass_sync_redact_plan(op);
    return rc;
}

/* String `string_id` holds `value` (`covers` elements of it from the
 * first, model_string_covers()): exempt from redaction if a keep rule
 * named the String (before now: a rule's holder that comes after the
 * String is too late for its text). */
int one_pass_exempt_value(struct one_pass *op, uint64_t string_id, uint64_t value,
                          uint64_t covers)
{
    struct redaction *r = &op->redact;
    uint64_t how;
    if (value == 0 || r->exempt_strings.count == 0 ||
        !idmap_get(&r->exempt_strings, string_id, &how))
        return HPROF_OK;
    int rc = redact_exempt_value(r, value, exempt_entry(how, covers));
    one_pass_sync_redact_plan(op);
    return rc;
}

/* The layout of `ci` is complete: its kind and redaction are worked out
 * once.  @return 1 when ready. */
int one_pass_class_ready(struct one_pass *op, struct class_info *ci, int *rc)
{
    *rc = HPROF_OK;
    if (ci->resolved)
        return 1;
    struct hprof_error not_yet = { 0 };
    if (classes_resolve(&op->model.classes, ci, &not_yet) != HPROF_OK)
        return 0;
    *rc = model_resolve_kind(&op->model, ci, op->ctx.err);
    if (*rc == HPROF_OK)
        *rc = one_pass_redact_class(op, ci);
    return *rc == HPROF_OK;
}

