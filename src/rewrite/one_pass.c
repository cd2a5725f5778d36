/*
 * one_pass.c - hprof_shrink_one_pass(): the shrink in one run of the
 * reader, writing as it goes, for inputs that cannot be read twice.
 *
 *   reader -> names in use -> one pass -> chain of filters -> writer
 *
 * The multi-pass shrink decides everything before it writes; here each
 * record is decided when it is read if it can be, and otherwise waits in
 * the window (one_pass.h) for what decides it:
 *
 *   - a char[], byte[] (or, with DumpData, long[]) array for a String,
 *     Bitmap or DumpData to claim it: claimed, it keeps its contents;
 *   - an instance whose class layout is not complete, for its class;
 *   - a Bitmap for its buffer: once the buffer is read it is merged with
 *     an earlier one of the same type, length and SHA-256, or kept, and
 *     the Bitmap, its field rewritten if merged, follows it out.
 *
 * A claim for an array not read yet is remembered (`claims`) and decides
 * the array as it comes.  The window's rule: past `window` bytes, the
 * oldest record leaves undecided - an array as nobody's, a Bitmap with
 * its buffer never merged, an instance with its class unknown - and is
 * counted (window_by_rule).  A claim still open when its heap dump ends
 * came after its array had gone (or for one never dumped): window_late.
 *
 * Order inside a heap dump is free (analyzers index records by id), so a
 * record written later than read goes into the segment open then, after a
 * HEAP_DUMP_INFO naming its own heap where that differs.  STRING records
 * are held to the end, when the names in use are known, and written after
 * the heap dumps.  The verdict on each array goes to the chain through its
 * plan_cursor; the plan's other parts grow as the input is read
 * (one_pass_system.c for the zygote and image heaps).
 */
#include <string.h>

#include "filter.h"
#include "one_pass_private.h"

static int nomem(struct one_pass *op)
{
    return rewrite_nomem(&op->ctx);
}

/* ---- Instances ------------------------------------------------------------------------- */

/* A String: its value keeps its contents (and its text, if exempt). */
static int string_read(struct one_pass *op, const struct kind_layout *k,
                       const struct hprof_instance *o)
{
    int64_t coder = k->field[1];
    int utf16 = coder >= 0 && (uint64_t)coder < o->length && o->values[coder] == 1;
    uint64_t value = model_field_id(op->ctx.ids, o, k->field[0]);
    uint64_t covers = model_string_covers(k, o);
    int rc = one_pass_exempt_value(op, o->id, value, covers);
    if (rc == HPROF_OK && op->device.count > 0 && idmap_has(&op->device, o->id))
        rc = one_pass_keep_device_text(op, value);
    int shared = op->hold_values && value != 0 && id_table_find(&op->value_owner, value) != NULL;
    if (rc == HPROF_OK && op->hold_values && value != 0)
        rc = one_pass_note_value_owner(op, value, o->id, covers);
    if (rc == HPROF_OK)
        rc = one_pass_claim(op, value, utf16 ? ARRAY_STRING_UTF16 : ARRAY_STRING_VALUE);
    return rc == HPROF_OK && shared ? one_pass_charge_owner(op, value) : rc;
}

/* A Bitmap: it waits for its buffer's verdict unless that is known. */
static int bitmap_read(struct one_pass *op, const struct kind_layout *k,
                       const struct hprof_instance *o, int *waits)
{
    uint64_t buffer = model_field_id(op->ctx.ids, o, k->field[0]);
    *waits = 0;
    if (buffer == 0 || idmap_has(&op->plan.bitmaps.candidates, buffer))
        return HPROF_OK; /* decided: kept, or merged and in the remap */
    if (op->opt.keep_duplicates) /* nothing to rewrite: it need not wait */
        return one_pass_claim(op, buffer, ARRAY_BITMAP | CLAIM_PINNED);
    int rc = one_pass_claim(op, buffer, ARRAY_BITMAP);
    if (rc != HPROF_OK || idmap_has(&op->plan.bitmaps.candidates, buffer))
        return rc;
    *waits = 1;
    return one_pass_hold(op, one_pass_instance_copy(op, o), buffer, WAIT_BUFFER);
}

/* An element of DumpData.buffers: a buffer read already is decided now,
 * since the array of buffers is written right after; one not read yet is
 * decided when it comes, its slot in the array patched if it merges (or,
 * where the output cannot be patched, it stays unmerged).  Of an array
 * that comes in chunks (`whole` 0), the first of which went out already,
 * nothing may go out until its last: every element stays unmerged, and
 * one read already waits on as a buffer. */
static int claim_element(struct one_pass *op, uint64_t id, uint32_t index, int whole)
{
    struct held *first = wait_window_first(&op->window, id);
    int read = first != NULL && first->kind == HELD_PRIMITIVE_ARRAY;
    /* not read, or read and waiting for a Bitmap's group to decide it:
     * decided after the array is written */
    int later = !read ? one_pass_spill_find(op, id) == NULL : first->wait != WAIT_CLAIM;
    if (whole && later && id != 0)
        return one_pass_claim_later_buffer(op, id, index);
    if (whole)
        return one_pass_claim(op, id, ARRAY_BITMAP | (read ? CLAIM_DECIDE_NOW : CLAIM_PINNED));
    if (read && first->wait == WAIT_CLAIM)
        return one_pass_pin_waiting(op, id);
    return one_pass_claim(op, id, ARRAY_BITMAP | CLAIM_PINNED);
}

static int claim_elements(struct one_pass *op, const struct hprof_object_array *a, int whole)
{
    const unsigned ids = op->ctx.ids;
    int rc = idmap_put(&op->plan.bitmaps.dump_buffers, a->id, 0) == HPROF_OK ? HPROF_OK
                                                                             : nomem(op);
    for (uint32_t i = 0; rc == HPROF_OK && i < a->n; i++)
        rc = claim_element(op, get_id(a->elements + (size_t)i * ids, ids), a->first + i, whole);
    return rc;
}

/* DumpData: its natives keep their contents; the elements of its array
 * of buffers are buffers (now if the array waits, else when it comes). */
static int dump_data_read(struct one_pass *op, const struct kind_layout *k,
                          const struct hprof_instance *o)
{
    int rc = one_pass_claim(op, model_field_id(op->ctx.ids, o, k->field[1]), ARRAY_NATIVES);
    uint64_t buffers = model_field_id(op->ctx.ids, o, k->field[0]);
    struct held *first = buffers != 0 ? wait_window_first(&op->window, buffers) : NULL;
    if (rc != HPROF_OK || buffers == 0)
        return rc;
    if (first == NULL || first->kind != HELD_OBJECT_ARRAY)
        return id_table_put(&op->claims, buffers, CLAIM_BUFFERS_ARRAY) == HPROF_OK ? HPROF_OK
                                                                                   : nomem(op);
    struct held *h = wait_window_take(&op->window, buffers);
    rc = claim_elements(op, &h->rec.objects, 1);
    if (rc == HPROF_OK)
        rc = one_pass_send_held(op, h, ARRAY_NOT_KEPT);
    if (rc == HPROF_OK)
        rc = one_pass_slots_place(op, buffers);
    held_free(&op->window, h);
    return rc;
}

struct ref_walk {
    struct one_pass *op;
    int64_t bitmap_slot;
};

/* A reference of a kept object: pins a buffer, makes a stand-in, or names
 * a merged buffer too late. */
static int walk_ref(void *ctx, uint32_t at, uint64_t name_id, uint64_t ref)
{
    struct ref_walk *w = ctx;
    (void)name_id;
    if (ref == 0)
        return HPROF_OK;
    if ((int64_t)at != w->bitmap_slot)
        one_pass_note_ref(w->op, ref);
    return one_pass_system_refer(w->op, ref);
}

/* Any reference but a Bitmap's to its own buffer (an object's field, an
 * array's element, a root, a static), as the multi-pass shrink's pins
 * take them: one to a merged copy already dropped comes too late. */
void one_pass_note_ref(struct one_pass *op, uint64_t ref)
{
    if (!op->tracking_pins || ref == 0)
        return;
    idfilter_add(&op->pins, ref);
    if (op->plan.bitmaps.dropped.count > 0 && idmap_has(&op->plan.bitmaps.dropped, ref))
        op->st->window_late++;
}

/* Instance `o` of class `ci`, whose layout is complete. */
static int instance_ready(struct one_pass *op, const struct hprof_instance *o,
                          struct class_info *ci, uint32_t heap)
{
    if (ci->total_bytes != o->length) {
        struct class_info *unused;
        return classes_check_instance(&op->model.classes, o, &unused, op->ctx.err);
    }
    const struct kind_layout *k;
    int waits = 0;
    int rc = one_pass_redact_instance(op, o);
    if (idmap_has(&op->redact.blind, o->class_id))
        op->st->window_late++; /* every number zero, where the multi-pass shrink keeps some */
    int kind = rc == HPROF_OK ? model_kind(&op->model, o->class_id, &k) : NAME_NONE;
    if (kind == NAME_CLASS_STRING)
        rc = string_read(op, k, o);
    else if (kind == NAME_CLASS_BITMAP && op->tracking_bitmaps)
        rc = bitmap_read(op, k, o, &waits);
    else if (kind == NAME_CLASS_DUMP_DATA)
        rc = dump_data_read(op, k, o);
    if (rc == HPROF_OK && (op->tracking_pins || one_pass_system_tracking(op))) {
        struct ref_walk walk = { op, kind == NAME_CLASS_BITMAP ? k->field[0] : -1 };
        rc = classes_each_ref(&op->model.classes, ci, o->values, o->length, walk_ref, &walk);
    }
    if (rc != HPROF_OK || waits)
        return rc;
    return one_pass_send_instance(op, o, heap);
}

static int on_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct one_pass *op = (struct one_pass *)v;
    int rc = one_pass_dumped_once(op, o->id, o->offset, HPROF_INSTANCE_DUMP);
    if (rc == HPROF_OK && op->prelude)
        rc = one_pass_prelude_end(op);
    if (rc == HPROF_OK)
        rc = one_pass_system_object(op, o->id);
    if (rc != HPROF_OK)
        return rc == ONE_PASS_DROPPED ? one_pass_system_instance(op, o) : rc;
    struct class_info *ci = classes_find(&op->model.classes, o->class_id);
    if (ci == NULL || !one_pass_class_ready(op, ci, &rc)) {
        if (rc != HPROF_OK)
            return rc;
        rc = one_pass_block_class(op, o->class_id);
        return rc == HPROF_OK ? one_pass_hold(op, one_pass_instance_copy(op, o), o->class_id,
                                              WAIT_CLASS)
                              : rc;
    }
    if ((rc = one_pass_live_heap(op)) != HPROF_OK)
        return rc;
    return instance_ready(op, o, ci, op->in_heap);
}

/* Instances that waited for class `class_id`, which is ready now. */
static int release_class(struct one_pass *op, uint64_t class_id, struct class_info *ci)
{
    int rc = HPROF_OK;
    for (struct held *h = wait_window_take(&op->window, class_id), *next; h != NULL; h = next) {
        next = h->next_same;
        if (rc == HPROF_OK)
            rc = instance_ready(op, &h->rec.instance, ci, h->heap);
        held_free(&op->window, h);
    }
    return rc;
}

int one_pass_block_class(struct one_pass *op, uint64_t class_id)
{
    for (size_t i = 0; i < op->n_blocked; i++)
        if (op->blocked[i] == class_id)
            return HPROF_OK;
    uint64_t *grown = grow_array(op->blocked, &op->cap_blocked, op->n_blocked + 1, sizeof *grown);
    if (grown == NULL)
        return nomem(op);
    op->blocked = grown;
    op->blocked[op->n_blocked++] = class_id;
    return HPROF_OK;
}

/* After a class dump: the classes whose instances wait, ready now? */
static int retry_blocked(struct one_pass *op)
{
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && i < op->n_blocked;) {
        struct class_info *ci = classes_find(&op->model.classes, op->blocked[i]);
        if (ci == NULL || !one_pass_class_ready(op, ci, &rc)) {
            i++;
            continue;
        }
        uint64_t id = op->blocked[i];
        op->blocked[i] = op->blocked[--op->n_blocked];
        rc = release_class(op, id, ci);
    }
    return rc;
}

/* android.os.Build's statics that describe the device name Strings whose
 * text --redact keeps (names.c's NAME_FIELD_DEVICE_TEXT). */
static int note_device_strings(struct one_pass *op, const struct hprof_class_dump *cd)
{
    uint64_t code;
    if (model_class_name_code(&op->model, cd->id) != NAME_CLASS_DEVICE)
        return HPROF_OK;
    for (unsigned i = 0; i < cd->n_statics; i++) {
        const struct hprof_static_field *f = &cd->statics[i];
        if (f->type == HPROF_TYPE_OBJECT && f->value != 0 &&
            idmap_get(&op->model.names, f->name_id, &code) && code == NAME_FIELD_DEVICE_TEXT &&
            idmap_put(&op->device, f->value, 0) != HPROF_OK)
            return nomem(op);
    }
    return HPROF_OK;
}

static int on_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *cd)
{
    struct one_pass *op = (struct one_pass *)v;
    int rc = one_pass_dumped_once(op, cd->id, cd->offset, HPROF_CLASS_DUMP);
    for (unsigned i = 0; i < cd->n_statics; i++)
        if (cd->statics[i].type == HPROF_TYPE_OBJECT)
            one_pass_note_ref(op, cd->statics[i].value);
    if (rc == HPROF_OK && op->hold_values)
        rc = note_device_strings(op, cd);
    if (rc == HPROF_OK)
        rc = classes_add(&op->model.classes, cd, op->ctx.err);
    struct class_info *ci = rc == HPROF_OK ? classes_find(&op->model.classes, cd->id) : NULL;
    if (ci != NULL)
        one_pass_class_ready(op, ci, &rc);
    if (rc == HPROF_OK)
        rc = one_pass_system_class_dump(op, cd);
    if (rc == HPROF_OK)
        rc = one_pass_names_class_dump(op, cd);
    if (rc == HPROF_OK && op->prelude)
        rc = one_pass_prelude_class_dump(op, cd);
    else if (rc == HPROF_OK && (rc = one_pass_live_heap(op)) == HPROF_OK)
        rc = one_pass_quiet_skip(hprof_visit_class_dump(op->head, cd));
    return rc == HPROF_OK && op->n_blocked > 0 ? retry_blocked(op) : rc;
}

/* ---- Object arrays ------------------------------------------------------------------------ */

/* A byte[][] no DumpData has claimed yet may be its buffers: it waits,
 * read whole. */
static int may_be_buffers(struct one_pass *op, const struct hprof_object_array *a)
{
    const struct kind_layout *k;
    return (op->model.names_seen & (1u << NAME_CLASS_DUMP_DATA)) &&
           model_kind(&op->model, a->class_id, &k) == NAME_CLASS_BYTE_ARRAYS &&
           (uint64_t)a->count * op->ctx.ids <= op->window.limit;
}

static int gather_objects(struct one_pass *op, const struct hprof_object_array *a)
{
    const unsigned ids = op->ctx.ids;
    struct held *h = op->gather_objects;
    if (a->first == 0) {
        h = held_new(&op->window, HELD_OBJECT_ARRAY, (size_t)a->count * ids);
        if (h == NULL)
            return nomem(op);
        h->rec.objects = *a;
        h->rec.objects.elements = h->data;
        h->rec.objects.n = a->count;
        h->heap = op->in_heap;
        op->gather_objects = h;
    }
    memcpy(h->data + (size_t)a->first * ids, a->elements, (size_t)a->n * ids);
    if (a->first + a->n < a->count)
        return HPROF_OK;
    op->gather_objects = NULL;
    return one_pass_hold(op, h, a->id, WAIT_CLAIM);
}

/* The start of an object array: in a dropped heap, claimed as DumpData's
 * buffers, or to wait for such a claim (*taken: it is the window's). */
static int start_object_array(struct one_pass *op, const struct hprof_object_array *a,
                              int *taken)
{
    *taken = 0;
    int rc = one_pass_system_object(op, a->id);
    op->dropping_array = rc == ONE_PASS_DROPPED;
    op->buffers_array = 0;
    if (rc != HPROF_OK)
        return op->dropping_array ? HPROF_OK : rc;
    uint64_t claim;
    if (op->claims.count > 0 && id_table_take(&op->claims, a->id, &claim))
        op->buffers_array = 1;
    else if (may_be_buffers(op, a)) {
        *taken = 1;
        return gather_objects(op, a);
    }
    return one_pass_live_heap(op);
}

static int on_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct one_pass *op = (struct one_pass *)v;
    const unsigned ids = op->ctx.ids;
    if (op->gather_objects != NULL)
        return gather_objects(op, a);
    int taken = 0;
    int rc = a->first == 0 ? one_pass_dumped_once(op, a->id, a->offset, HPROF_OBJECT_ARRAY_DUMP)
                           : HPROF_OK;
    if (rc == HPROF_OK && a->first == 0 && op->prelude)
        rc = one_pass_prelude_end(op);
    if (rc == HPROF_OK && a->first == 0)
        rc = start_object_array(op, a, &taken);
    if (rc != HPROF_OK || taken)
        return rc;
    if (op->dropping_array)
        return one_pass_system_object_array(op, a);
    if (op->buffers_array)
        rc = claim_elements(op, a, a->first == 0 && a->n == a->count);
    for (uint32_t i = 0; rc == HPROF_OK && !op->buffers_array && i < a->n; i++) {
        uint64_t ref = get_id(a->elements + (size_t)i * ids, ids);
        if (ref != 0) {
            one_pass_note_ref(op, ref);
            rc = one_pass_system_refer(op, ref);
        }
    }
    if (rc == HPROF_OK)
        rc = hprof_visit_object_array(op->head, a);
    return rc == HPROF_OK && op->buffers_array ? one_pass_slots_place(op, a->id) : rc;
}

/* ---- The end of a heap dump ----------------------------------------------------- */

/* The pins' filter: every reference of every object goes in, a cache miss
 * each, taken on another core when there is one.  A twin merges only if
 * nothing named it, and the filter's maybe keeps its record where the
 * multi-pass shrink drops it, unnoticed: the ids of heap addresses are
 * kept exactly (a bit per 8 bytes of heap, within PINS_EXACT_PAGES). */
static int start_pins(struct one_pass *op)
{
    int rc = idfilter_init(&op->pins, PINS_BYTES);
    if (rc == HPROF_OK)
        (void)idfilter_use_exact(&op->pins, PINS_EXACT_PAGES);
    if (rc == HPROF_OK && op->ctx.helper_threads)
        idfilter_use_thread(&op->pins);
    return rc;
}

/* Object ids are unique within a heap dump only: what was learnt of the
 * last one's objects and classes is forgotten. */
int one_pass_reset_dump(struct one_pass *op)
{
    struct shrink_plan *p = &op->plan;
    classes_free(&op->model.classes);
    int rc = classes_init(&op->model.classes, op->ctx.ids);
    if (rc == HPROF_OK)
        rc = one_pass_checks_reset(op);
    if (rc == HPROF_OK)
        rc = model_forget_kinds(&op->model, op->ctx.err);
    if (rc == HPROF_OK && one_pass_redacting(op)) {
        rc = redact_forget(&op->redact);
        if (rc == HPROF_OK && (idmap_reset(&op->redact.exempt_values) != HPROF_OK ||
                               idmap_reset(&op->names_unread) != HPROF_OK))
            rc = HPROF_ERR_NOMEM;
        one_pass_sync_redact_plan(op);
    }
    id_table_free(&op->claims);
    id_table_free(&op->value_buffers);
    one_pass_slots_free(op);
    one_pass_twins_free(op);
    one_pass_value_owners_free(op);
    if (rc == HPROF_OK)
        rc = one_pass_value_owners_init(op);
    one_pass_spill_reset(op);
    if (idmap_reset(&op->device) != HPROF_OK)
        rc = HPROF_ERR_NOMEM;
    op->n_blocked = 0;
    op->n_merges = 0;
    if (rc == HPROF_OK &&
        (idmap_reset(&p->bitmaps.candidates) != HPROF_OK ||
         idmap_reset(&p->bitmaps.remap) != HPROF_OK ||
         idmap_reset(&p->bitmaps.dropped) != HPROF_OK ||
         idmap_reset(&p->bitmaps.dump_buffers) != HPROF_OK ||
         idmap_reset(&op->merge_index) != HPROF_OK ||
         idmap_reset(&op->buffer_sizes) != HPROF_OK))
        rc = HPROF_ERR_NOMEM;
    idlog_clear(&op->contents_out);
    idlog_clear(&op->buffers_out);
    if (rc == HPROF_OK && op->tracking_pins) {
        idfilter_free(&op->pins);
        rc = start_pins(op);
        op->tracking_pins = rc == HPROF_OK;
    }
    if (rc == HPROF_OK)
        rc = one_pass_system_reset(op);
    return rc == HPROF_ERR_NOMEM ? rewrite_nomem(&op->ctx) : rc;
}

/* Whether Bitmaps are looked at, decided at each heap record: every name
 * comes before the heap in the dumps of every runtime. */
void one_pass_start_heap(struct one_pass *op)
{
    if (!op->tracking_bitmaps && (op->model.names_seen & (1u << NAME_CLASS_BITMAP))) {
        op->tracking_bitmaps = 1;
        if (!op->opt.keep_duplicates && start_pins(op) == HPROF_OK)
            op->tracking_pins = 1;
    }
}

/* ---- Names, heaps and the ends of dumps ------------------------------------------------------ */


static int on_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct one_pass *op = (struct one_pass *)v;
    int rc = model_note_string(&op->model, s) < 0 ? nomem(op) : HPROF_OK;
    if (rc == HPROF_OK)
        rc = one_pass_redact_string(op, s);
    return rc == HPROF_OK ? one_pass_names_string(op, s) : rc;
}

static int on_load_class(struct hprof_visitor *v, const struct hprof_load_class *lc)
{
    struct one_pass *op = (struct one_pass *)v;
    if (model_note_load_class(&op->model, lc) != HPROF_OK)
        return nomem(op);
    int rc = one_pass_names_use(op, lc->name_id);
    return rc == HPROF_OK ? hprof_visit_load_class(op->head, lc) : rc;
}

static int on_heap_begin(struct hprof_visitor *v, const struct hprof_segment *s)
{
    struct one_pass *op = (struct one_pass *)v;
    op->in_heap = HPROF_HEAP_DEFAULT; /* each segment starts there */
    one_pass_start_heap(op);
    if (op->prelude)
        return one_pass_prelude_segment(op, s);
    op->seg = *s;
    op->in_segment = 1;
    op->out_heap = HPROF_HEAP_DEFAULT;
    return hprof_visit_heap_begin(op->head, s);
}

static int on_heap_info(struct hprof_visitor *v, const struct hprof_heap_info *i)
{
    struct one_pass *op = (struct one_pass *)v;
    unsigned at = 0;
    while (at < op->n_heap_names && op->heap_names[at].heap != i->heap_id)
        at++;
    if (at == op->n_heap_names && at < ONE_PASS_HEAPS)
        op->n_heap_names++;
    if (at < ONE_PASS_HEAPS)
        op->heap_names[at] = (struct heap_name){ i->heap_id, i->name_id };
    op->in_heap = i->heap_id;
    op->heap_infos_in++;
    /* --jvm drops the record: its heap's name is no name in use */
    int rc = op->opt.jvm ? HPROF_OK : one_pass_names_use(op, i->name_id);
    if (rc != HPROF_OK || op->prelude) /* a held class dump says its heap */
        return rc;
    op->out_heap = i->heap_id;
    return hprof_visit_heap_info(op->head, i);
}

static int on_root(struct hprof_visitor *v, const struct hprof_root *r)
{
    struct one_pass *op = (struct one_pass *)v;
    one_pass_note_ref(op, r->id);
    if (op->prelude && op->system == NULL)
        return one_pass_prelude_root(op, r);
    return one_pass_system_root(op, r);
}

/* Everything still held goes out, in a segment of its own when none is
 * open; what waited for a class that never came is an error. */
static int flush_window(struct one_pass *op)
{
    if (wait_window_oldest(&op->window) == NULL && !one_pass_system_pending(op) &&
        !one_pass_spill_pending(op) && wait_window_oldest(&op->long_wait) == NULL)
        return HPROF_OK;
    int opened = !op->in_segment;
    int rc = HPROF_OK;
    if (opened) {
        op->seg = (struct hprof_segment){ .offset = 0, .tag = HPROF_TAG_HEAP_DUMP_SEGMENT };
        op->in_heap = op->out_heap = HPROF_HEAP_DEFAULT;
        rc = hprof_visit_heap_begin(op->head, &op->seg);
    }
    while (rc == HPROF_OK && wait_window_oldest(&op->window) != NULL)
        rc = one_pass_leave_window(op, 0);
    if (rc == HPROF_OK)
        rc = one_pass_long_wait_end(op);
    if (rc == HPROF_OK)
        rc = one_pass_claims_end(op);
    if (rc == HPROF_OK)
        rc = one_pass_system_flush(op);
    if (rc == HPROF_OK && opened)
        rc = hprof_visit_heap_end(op->head, &op->seg);
    if (opened)
        op->in_segment = 0;
    return rc;
}

/* Claims met by a log of what went out: a Bitmap's (`buffers`) by the log
 * of buffers written whole or merged for another Bitmap (a shared buffer),
 * a String's or DumpData's by the log of arrays written whole for another
 * claim (a value two Strings share); a byte[][]'s elements by neither. */
struct claims_answered {
    struct id_table *claims;
    int buffers;
};

static void answer_claim(void *ctx, uint64_t id)
{
    const struct claims_answered *a = ctx;
    uint64_t *claim = id_table_find(a->claims, id), ignored;
    if (claim != NULL && !(*claim & CLAIM_BUFFERS_ARRAY) &&
        ((*claim & CLAIM_KEEP) == ARRAY_BITMAP) == a->buffers)
        id_table_take(a->claims, id, &ignored);
}

/* Claims no array answered: the array had gone by (or was never dumped).
 * Takes the answered ones out of the claims.  A buffer that went out as a
 * String's value alone answers no Bitmap: the multi-pass shrink may have
 * merged it. */
static uint64_t late_claims(struct one_pass *op)
{
    struct claims_answered contents = { &op->claims, 0 }, buffers = { &op->claims, 1 };
    if (op->claims.count > 0)
        idlog_each(&op->contents_out, answer_claim, &contents);
    if (op->claims.count > 0)
        idlog_each(&op->buffers_out, answer_claim, &buffers);
    return op->claims.count;
}

/* A heap dump ended: what waits goes out, and the next dump is a space of
 * ids of its own. */
static int end_dump(struct one_pass *op)
{
    /* every class's superclass dumped, as the multi-pass shrink and
     * hprof-verify require: an output naming one it lacks is not valid */
    int rc = classes_resolve_all(&op->model.classes, op->ctx.err);
    if (rc == HPROF_OK)
        rc = one_pass_prelude_end(op);
    if (rc == HPROF_OK)
        rc = flush_window(op);
    op->st->window_late += late_claims(op);
    op->st->strings_kept_by_rule += op->redact.exempt_strings.count;
    op->st->dumps++;
    if (rc == HPROF_OK)
        rc = one_pass_reset_dump(op);
    op->prelude = 1; /* the next heap dump's */
    op->heap_open = 0;
    return rc;
}

/* The output segment the end of a dump left open, closed. */
static int close_segment(struct one_pass *op)
{
    int rc = op->in_segment ? hprof_visit_heap_end(op->head, &op->seg) : HPROF_OK;
    op->in_segment = 0;
    return rc;
}

static int on_heap_end(struct hprof_visitor *v, const struct hprof_segment *s)
{
    struct one_pass *op = (struct one_pass *)v;
    if (s->tag != HPROF_TAG_HEAP_DUMP) /* a segment ends: its dump goes on */
        return op->prelude ? HPROF_OK : close_segment(op);
    int rc = end_dump(op);
    if (rc == HPROF_OK)
        rc = close_segment(op);
    return rc == HPROF_OK ? one_pass_names_after_dump(op) : rc;
}

static int on_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    struct one_pass *op = (struct one_pass *)v;
    if (r->tag != HPROF_TAG_HEAP_DUMP_END) {
        int rc = one_pass_names_record(op, r);
        return rc == HPROF_OK ? hprof_visit_record(op->head, r) : rc;
    }
    int rc = end_dump(op);
    if (rc == HPROF_OK)
        rc = close_segment(op);
    if (rc == HPROF_OK)
        rc = hprof_visit_record(op->head, r);
    return rc == HPROF_OK ? one_pass_names_after_dump(op) : rc;
}

static int on_end(struct hprof_visitor *v)
{
    struct one_pass *op = (struct one_pass *)v;
    int rc = HPROF_OK;
    if (op->prelude_seg || wait_window_oldest(&op->window) != NULL || op->claims.count > 0) {
        rc = end_dump(op);
        if (rc == HPROF_OK)
            rc = close_segment(op);
        if (rc == HPROF_OK)
            rc = one_pass_names_after_dump(op);
    }
    if (rc == HPROF_OK)
        rc = one_pass_names_end(op);
    return rc == HPROF_OK ? hprof_visit_end(op->head) : rc;
}

static int on_header(struct hprof_visitor *v, const struct hprof_header *h)
{
    struct one_pass *op = (struct one_pass *)v;
    op->names.keep_unused = strcmp(h->version, "JAVA PROFILE 1.0.3") == 0;
    return hprof_visit_header(op->head, h);
}

const struct hprof_visitor_ops one_pass_ops = {
    .header = on_header,
    .string = on_string,
    .load_class = on_load_class,
    .record = on_record,
    .heap_begin = on_heap_begin,
    .root = on_root,
    .heap_info = on_heap_info,
    .class_dump = on_class_dump,
    .instance = on_instance,
    .object_array = on_object_array,
    .primitive_array = one_pass_primitive_array,
    .heap_end = on_heap_end,
    .end = on_end,
};
