/*
 * one_pass_claims.c - the window of a one-pass shrink at work: records held
 * and claimed, buffers merged or kept as they leave it, the rule when it is
 * full, and the primitive arrays that decide which (see one_pass.c).
 */
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "filter.h"
#include "one_pass_private.h"
#include "sink_private.h"
#include "writer_private.h"

/* A record out of the window, decided now. */
int one_pass_send_held(struct one_pass *op, struct held *h, enum array_keep keep)
{
    if (h->kind == HELD_INSTANCE)
        return one_pass_send_instance(op, &h->rec.instance, h->heap);
    if (h->kind == HELD_PRIMITIVE_ARRAY)
        return one_pass_send_array(op, &h->rec.array, h->heap, keep);
    int rc = one_pass_switch_heap(op, h->heap);
    return rc == HPROF_OK ? one_pass_quiet_skip(hprof_visit_object_array(op->head, &h->rec.objects)) : rc;
}

/* ---- Copies of records that wait ----------------------------------------------- */

struct held *one_pass_instance_copy(struct one_pass *op, const struct hprof_instance *o)
{
    struct held *h = held_new(&op->window, HELD_INSTANCE, o->length);
    if (h == NULL)
        return NULL;
    memcpy(h->data, o->values, o->length);
    h->rec.instance = *o;
    h->rec.instance.values = h->data;
    h->heap = op->in_heap;
    return h;
}

static int nomem(struct one_pass *op)
{
    return rewrite_nomem(&op->ctx);
}

/* ---- Bitmap buffers -------------------------------------------------------------- */

static uint64_t merge_key(const uint8_t sha[32], uint8_t type, uint32_t count)
{
    uint64_t key = get_u8(sha) ^ ((uint64_t)type << 56) ^ count;
    return key != 0 ? key : 1;
}

/* Kept buffers under one key that a buffer is compared with, at most:
 * more are only made on purpose (the fingerprint is no secret), and each
 * costs a read back of the whole buffer. */
#define TWINS_MAX 8

/* The entry of the first kept buffer under `key`, or NULL. */
static struct merge_entry *merge_first(struct one_pass *op, uint64_t key)
{
    uint64_t at;
    return idmap_get(&op->merge_index, key, &at) ? &op->merges[at] : NULL;
}

/* A buffer of `type` and `count` is kept.  @return 1 when one of that
 * size was kept before (a twin, maybe), 0 when not, or HPROF_ERR_NOMEM. */
static int note_size(struct one_pass *op, uint8_t type, uint32_t count)
{
    uint64_t key = ((uint64_t)type << 32 | count) + 1;
    if (idmap_has(&op->buffer_sizes, key))
        return 1;
    return idmap_put(&op->buffer_sizes, key, 0);
}

/* A buffer too large for the window goes as it is, never compared: where
 * one of its size was kept, the multi-pass shrink may have merged it, and
 * it is counted late. */
static int kept_uncompared(struct one_pass *op, uint8_t type, uint32_t count)
{
    if (op->opt.keep_duplicates)
        return HPROF_OK;
    int twin = note_size(op, type, count);
    if (twin < 0)
        return nomem(op);
    op->st->window_late += (uint64_t)twin;
    return HPROF_OK;
}

/* Buffer `a` is kept: later copies merge into it, unless an earlier kept
 * buffer holds the same bytes (then it is the one). */
static int merge_register(struct one_pass *op, const uint8_t sha[32],
                          const struct hprof_primitive_array *a)
{
    uint8_t type = a->type;
    uint32_t count = a->count;
    if (note_size(op, type, count) < 0)
        return HPROF_ERR_NOMEM;
    uint64_t key = merge_key(sha, type, count);
    struct merge_entry *last = merge_first(op, key);
    int n = last != NULL;
    for (; last != NULL && last->next != 0 && n < TWINS_MAX; n++)
        last = &op->merges[last->next - 1];
    if (n == TWINS_MAX)
        return HPROF_OK; /* it stays unmerged for good */
    size_t at = last != NULL ? (size_t)(last - op->merges) : 0;
    struct merge_entry *grown =
        grow_array(op->merges, &op->cap_merges, op->n_merges + 1, sizeof *grown);
    if (grown == NULL)
        return HPROF_ERR_NOMEM;
    op->merges = grown;
    op->merges[op->n_merges] = (struct merge_entry){ .id = a->id, .data_offset = a->data_offset,
                                                     .out_at = UINT64_MAX, .type = type,
                                                     .count = count };
    memcpy(op->merges[op->n_merges].sha, sha, 32);
    if (last != NULL) {
        op->merges[at].next = ++op->n_merges;
        return HPROF_OK;
    }
    return idmap_put(&op->merge_index, key, op->n_merges++);
}

/* What buffer `a` is told apart by: a fingerprint, when a twin's bytes
 * can be read back to be compared, else SHA-256. */
static int digest_of(struct one_pass *op, const struct hprof_primitive_array *a, uint8_t out[32])
{
    op->st->bitmap_digested++;
    op->st->bitmap_bytes_hashed += a->length;
    if (!op->confirm_by_reading)
        return sha256_of(op->sha, a->data, a->length, out) == HPROF_OK ? HPROF_OK : nomem(op);
    uint64_t fp = fingerprint64(a->data, a->length);
    memset(out, 0, 32);
    memcpy(out, &fp, sizeof fp);
    return HPROF_OK;
}

#define COMPARE_CHUNK ((size_t)1 << 20)

/* Whether buffer `a` holds the bytes the kept buffer of `e` was written
 * with, read back from the output (unknown where: not the same). */
static int same_as_kept(struct one_pass *op, const struct merge_entry *e,
                        const struct hprof_primitive_array *a, int *same)
{
    *same = 0;
    if (e->out_at == UINT64_MAX)
        return HPROF_OK;
    if (op->compare_buf == NULL && (op->compare_buf = malloc(COMPARE_CHUNK)) == NULL)
        return nomem(op);
    for (size_t done = 0, n; done < a->length; done += n) {
        n = a->length - done < COMPARE_CHUNK ? a->length - done : COMPARE_CHUNK;
        int rc = sink_read_back(op->sink, e->out_at + done, op->compare_buf, n);
        if (rc != HPROF_OK)
            return rc;
        op->st->bitmap_bytes_compared += n;
        if (memcmp(op->compare_buf, a->data + done, n) != 0)
            return HPROF_OK;
    }
    *same = 1;
    return HPROF_OK;
}

/* The first kept buffer with the bytes of `a`: of its type, length and
 * SHA-256, or fingerprint and bytes read back.  NULL: none. */
static int find_twin(struct one_pass *op, const struct hprof_primitive_array *a,
                     const uint8_t sha[32], struct merge_entry **twin)
{
    *twin = NULL;
    struct merge_entry *e = merge_first(op, merge_key(sha, a->type, a->count));
    for (int n = 0; e != NULL && n < TWINS_MAX; n++) {
        int same = e->type == a->type && e->count == a->count && memcmp(e->sha, sha, 32) == 0;
        int rc = same && op->confirm_by_reading ? same_as_kept(op, e, a, &same) : HPROF_OK;
        if (rc != HPROF_OK || same) {
            *twin = same ? e : NULL;
            return rc;
        }
        e = e->next != 0 ? &op->merges[e->next - 1] : NULL;
    }
    return HPROF_OK;
}

/* ---- Slots of DumpData's array of buffers ---------------------------------------- */

int one_pass_claim_later_buffer(struct one_pass *op, uint64_t id, uint32_t index)
{
    struct buffer_slots *s = &op->slots;
    if (!sink_can_patch(op->sink))
        return one_pass_claim(op, id, ARRAY_BITMAP | CLAIM_PINNED);
    uint64_t *grown = grow_array(s->pending, &s->cap_pending, s->n_pending + 2, sizeof *grown);
    if (grown == NULL)
        return nomem(op);
    s->pending = grown;
    s->pending[s->n_pending++] = id;
    s->pending[s->n_pending++] = index;
    /* it waits in the window when it comes, as a Bitmap's buffer does, so
     * that buffers are decided in the order read: the first of twins stays */
    return one_pass_claim(op, id, ARRAY_BITMAP);
}

int one_pass_slots_place(struct one_pass *op, uint64_t array_id)
{
    struct buffer_slots *s = &op->slots;
    uint64_t data_at = writer_array_data_at(op->writer, array_id);
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && i < s->n_pending; i += 2) {
        uint64_t id = s->pending[i], *claim, last = 0;
        if (data_at == UINT64_MAX) { /* not where the writer can say: it stays */
            if ((claim = id_table_find(&op->claims, id)) != NULL)
                *claim |= CLAIM_PINNED;
            continue;
        }
        struct buffer_slot *grown = grow_array(s->at, &s->cap, s->n + 1, sizeof *grown);
        if (grown == NULL)
            return nomem(op);
        s->at = grown;
        (void)id_table_take(&s->last, id, &last);
        s->at[s->n] = (struct buffer_slot){ .at = data_at + s->pending[i + 1] * op->ctx.ids,
                                            .next = (size_t)last };
        if (id_table_put(&s->last, id, ++s->n) != HPROF_OK)
            rc = nomem(op);
    }
    s->n_pending = 0;
    return rc;
}

/* Buffer `id` is decided: where an array of buffers names it, `twin`
 * instead, if it merged into one (0: it did not). */
static int patch_slots(struct one_pass *op, uint64_t id, uint64_t twin)
{
    struct buffer_slots *s = &op->slots;
    uint64_t k;
    uint8_t bytes[8];
    int rc = HPROF_OK;
    if (s->last.count == 0 || !id_table_take(&s->last, id, &k) || twin == 0)
        return HPROF_OK;
    put_id(bytes, twin, op->ctx.ids);
    for (; rc == HPROF_OK && k != 0; k = s->at[k - 1].next)
        rc = sink_patch(op->sink, s->at[k - 1].at, bytes, op->ctx.ids);
    return rc;
}

void one_pass_slots_free(struct one_pass *op)
{
    struct buffer_slots *s = &op->slots;
    id_table_free(&s->last);
    free(s->at);
    free(s->pending);
    memset(s, 0, sizeof *s);
}

/* Buffer `id`, just written, is the last one registered: where its data
 * went, to be read back for its twins. */
static void note_kept_at(struct one_pass *op, uint64_t id)
{
    struct merge_entry *e = op->n_merges > 0 ? &op->merges[op->n_merges - 1] : NULL;
    if (op->confirm_by_reading && e != NULL && e->id == id && e->out_at == UINT64_MAX)
        e->out_at = writer_array_data_at(op->writer, id);
}

/* Buffer `a` (all of it) that a Bitmap claims: merged into the first of
 * its type, length and digest (its bytes compared, where they can be read
 * back), or kept.  `pinned`: something else has named it (a Bitmap
 * written already, or any other object), so it stays. */
/* Buffer `id` is a Bitmap's: decided, its Bitmaps need not wait. */
static int add_candidate(struct one_pass *op, uint64_t id)
{
    op->st->bitmap_candidates++;
    return idmap_put(&op->plan.bitmaps.candidates, id, 0) == HPROF_OK ? HPROF_OK : nomem(op);
}

static int decide_group(struct one_pass *op, uint64_t key, int evicted, int *by_rule);

/* Buffer `a` would be the first kept of its bytes: a twin read before it
 * that waits in the window is decided first, kept as the first read
 * (*twin its entry then), as the multi-pass shrink keeps it. */
static int decide_earlier_twin(struct one_pass *op, const struct hprof_primitive_array *a,
                               const uint8_t sha[32], struct merge_entry **twin)
{
    uint64_t print;
    if (op->twins.key_of.count == 0)
        return HPROF_OK;
    if (op->confirm_by_reading) /* its digest is the fingerprint */
        memcpy(&print, sha, sizeof print);
    else
        print = fingerprint64(a->data, a->length);
    struct held *first = one_pass_twins_earlier(op, a, print);
    int by_rule;
    if (first == NULL)
        return HPROF_OK;
    int rc = decide_group(op, first->key, 0, &by_rule);
    return rc == HPROF_OK ? find_twin(op, a, sha, twin) : rc;
}

static int decide_buffer_bytes(struct one_pass *op, const struct hprof_primitive_array *a,
                               int pinned, enum array_keep *keep)
{
    struct shrink_plan *p = &op->plan;
    uint8_t sha[32];
    uint64_t bytes = a->length;
    *keep = ARRAY_BITMAP;
    int rc = add_candidate(op, a->id);
    if (rc != HPROF_OK || op->opt.keep_duplicates || a->tag == HPROF_PRIMITIVE_ARRAY_NODATA)
        return rc;
    rc = digest_of(op, a, sha);
    if (rc != HPROF_OK)
        return rc;
    struct merge_entry *e;
    if ((rc = find_twin(op, a, sha, &e)) != HPROF_OK)
        return rc;
    if (e == NULL && (rc = decide_earlier_twin(op, a, sha, &e)) != HPROF_OK)
        return rc;
    if (e == NULL) {
        (void)patch_slots(op, a->id, 0); /* kept: its slots name it */
        return merge_register(op, sha, a) != HPROF_OK ? nomem(op) : HPROF_OK;
    }
    if (pinned) { /* what names it went out already (a Bitmap by the rule, an array of
                   * DumpData's buffers read before it): it stays, where the multi-pass
                   * shrink merges it */
        op->st->window_late++;
        return HPROF_OK;
    }
    /* the multi-pass shrink keeps the first of twins read; one read
     * before it that left the window unclaimed merges into it here */
    if (a->data_offset < e->data_offset)
        op->st->window_late++;
    if (idmap_put(&p->bitmaps.remap, a->id, e->id) != HPROF_OK)
        return nomem(op);
    if ((rc = patch_slots(op, a->id, e->id)) != HPROF_OK)
        return rc;
    op->st->bitmap_groups += !e->merged;
    e->merged = 1;
    count_add(&op->st->bitmap_duplicates, bytes);
    /* named by another object too: its Bitmaps take the twin, and it stays
     * as an array of nobody's */
    if (op->tracking_pins && idfilter_maybe_now(&op->pins, a->id)) {
        *keep = ARRAY_NOT_KEPT;
        return HPROF_OK;
    }
    if (idmap_put(&p->bitmaps.dropped, a->id, 0) != HPROF_OK)
        return nomem(op);
    *keep = ARRAY_DUPLICATE;
    return HPROF_OK;
}

/* decide_buffer_bytes(), for a buffer that is a String's value too: its
 * Bitmaps take a twin as any other's, but the array stays with its
 * contents, kept for the String, as the multi-pass shrink keeps a
 * String's value whatever else names it. */
static int decide_buffer(struct one_pass *op, const struct hprof_primitive_array *a, int pinned,
                         enum array_keep *keep)
{
    int rc = decide_buffer_bytes(op, a, pinned, keep);
    uint64_t value;
    if (rc == HPROF_OK && op->value_buffers.count > 0 && *keep != ARRAY_DUPLICATE &&
        id_table_take(&op->value_buffers, a->id, &value))
        *keep = (enum array_keep)value;
    return rc;
}

static int is_value_keep(unsigned keep)
{
    return keep == ARRAY_STRING_VALUE || keep == ARRAY_STRING_UTF16;
}

/* Array `id`, a Bitmap's buffer, is a String's value too (`keep`). */
static int also_value(struct one_pass *op, uint64_t id, unsigned keep)
{
    return id_table_put(&op->value_buffers, id, keep) == HPROF_OK ? HPROF_OK : nomem(op);
}

/* Instances `list` (linked by next_same) go out, and their blocks back. */
static int send_list(struct one_pass *op, struct held *list)
{
    int rc = HPROF_OK;
    for (struct held *h = list, *next; h != NULL; h = next) {
        next = h->next_same;
        if (rc == HPROF_OK)
            rc = one_pass_send_held(op, h, ARRAY_NOT_KEPT);
        held_free(&op->window, h);
    }
    return rc;
}

/* Bitmaps `list` (under buffer `key`) go as they are, the buffer to be
 * kept unmerged when it comes (the rule): the Bitmaps name it. */
static int send_bitmaps_as_they_are(struct one_pass *op, struct held *list, uint64_t key)
{
    int rc = one_pass_pin_buffer(op, key);
    int sent = send_list(op, list); /* frees them all, whatever happens */
    return rc != HPROF_OK ? rc : sent;
}

/* Bitmaps that waited for their buffer until the window let them go wait
 * on apart (`long_wait`, a window of their own, an eighth of the size):
 * they are small, and sent as they are they would keep their buffer from
 * merging.  Its oldest leave by the rule.  *moved 0: no room. */
static int wait_longer(struct one_pass *op, struct held *list, uint64_t key, int *moved)
{
    uint64_t bytes = 0;
    int rc = HPROF_OK;
    for (struct held *h = list; h != NULL; h = h->next_same)
        bytes += h->bytes;
    *moved = bytes <= op->long_wait.limit / 2;
    while (*moved && rc == HPROF_OK && wait_window_full(&op->long_wait, bytes)) {
        uint64_t oldest = wait_window_oldest(&op->long_wait)->key;
        struct held *group = wait_window_take(&op->long_wait, oldest);
        for (struct held *h = group; h != NULL; h = h->next_same)
            count_add(&op->st->window_by_rule, h->bytes);
        rc = send_bitmaps_as_they_are(op, group, oldest);
    }
    for (struct held *h = list, *next; *moved && h != NULL; h = next) {
        next = h->next_same;
        if (rc == HPROF_OK && wait_window_hold(&op->long_wait, h, key, WAIT_BUFFER) != HPROF_OK)
            rc = nomem(op); /* h freed */
        else if (rc != HPROF_OK)
            held_free(&op->window, h);
    }
    return rc;
}

/* The Bitmaps that waited for buffer `id`, which is decided, apart and in
 * the window: they go, their field rewritten if it merged. */
static int long_wait_over(struct one_pass *op, uint64_t id)
{
    int rc = HPROF_OK;
    for (int in_window = 0; rc == HPROF_OK && in_window < 2; in_window++) {
        struct wait_window *w = in_window ? &op->window : &op->long_wait;
        rc = send_list(op, w->index.count > 0 ? wait_window_take(w, id) : NULL);
    }
    return rc;
}

int one_pass_long_wait_end(struct one_pass *op)
{
    int rc = HPROF_OK;
    while (rc == HPROF_OK && wait_window_oldest(&op->long_wait) != NULL) {
        uint64_t key = wait_window_oldest(&op->long_wait)->key;
        rc = send_bitmaps_as_they_are(op, wait_window_take(&op->long_wait, key), key);
    }
    return rc;
}

/* The group under buffer `key` leaves the window: the buffer (if read)
 * decided and written, then the Bitmaps that waited for it.  Without the
 * buffer, the Bitmaps wait apart if `evicted` and there is room, else go
 * as they are, and the buffer stays when it comes (the rule).  `*by_rule`
 * tells whether they went so. */
static int decide_group(struct one_pass *op, uint64_t key, int evicted, int *by_rule)
{
    struct held *list = wait_window_take(&op->window, key);
    struct held *buffer = NULL;
    int rc = HPROF_OK;
    for (struct held *h = list; h != NULL; h = h->next_same)
        if (h->wait == WAIT_DECIDE)
            buffer = h;
    *by_rule = buffer == NULL;
    if (buffer != NULL)
        one_pass_twins_remove(op, key);
    if (buffer == NULL) {
        int moved = 0;
        rc = evicted ? wait_longer(op, list, key, &moved) : HPROF_OK;
        *by_rule = !moved;
        return rc != HPROF_OK || moved ? rc : send_bitmaps_as_they_are(op, list, key);
    }
    enum array_keep keep;
    rc = decide_buffer(op, &buffer->rec.array, buffer->pinned, &keep);
    if (rc == HPROF_OK)
        rc = one_pass_send_held(op, buffer, keep);
    if (rc == HPROF_OK)
        note_kept_at(op, key);
    for (struct held *h = list, *next; h != NULL; h = next) {
        next = h->next_same;
        if (rc == HPROF_OK && h != buffer)
            rc = one_pass_send_held(op, h, ARRAY_NOT_KEPT);
        held_free(&op->window, h);
    }
    return rc;
}

/* A buffer a Bitmap claims, read whole: it waits (decided when it leaves
 * the window, so that what names it meanwhile pins it), unless it is
 * pinned already or must be decided now (DumpData's, whose array of
 * buffers is written next). */
static int buffer_claimed(struct one_pass *op, struct held *h, unsigned claim)
{
    uint64_t id = h->rec.array.id;
    /* Bitmaps waiting apart have waited long enough: it is decided now */
    int waited_for = op->long_wait.index.count > 0 && wait_window_has(&op->long_wait, id);
    h->pinned = (claim & CLAIM_PINNED) != 0;
    if (!h->pinned && !(claim & CLAIM_DECIDE_NOW) && !op->opt.keep_duplicates && !waited_for) {
        int rc = one_pass_hold(op, h, id, WAIT_DECIDE);
        return rc == HPROF_OK ? one_pass_twins_add(op, h) : rc;
    }
    enum array_keep keep;
    int rc = decide_buffer(op, &h->rec.array, h->pinned, &keep);
    if (rc == HPROF_OK)
        rc = one_pass_send_held(op, h, keep);
    if (rc == HPROF_OK)
        note_kept_at(op, id);
    held_free(&op->window, h);
    return rc == HPROF_OK && waited_for ? long_wait_over(op, id) : rc;
}

/* ---- Claims ------------------------------------------------------------------------ */

/* A String's value, with --redact and keep rules: the rule's holder (a
 * KeyedWeakReference for its key) often comes after the String, so the
 * value waits for it. */
static int waits_for_rules(const struct one_pass *op, unsigned claim)
{
    unsigned keep = claim & CLAIM_KEEP;
    return op->hold_values && (keep == ARRAY_STRING_VALUE || keep == ARRAY_STRING_UTF16);
}

static int hold_value(struct one_pass *op, struct held *h, unsigned claim)
{
    h->keep = (uint8_t)(claim & CLAIM_KEEP);
    return one_pass_hold(op, h, h->rec.array.id, WAIT_EXEMPT);
}

int one_pass_note_value_owner(struct one_pass *op, uint64_t value, uint64_t owner,
                              uint64_t covers)
{
    /* A value read already that waits neither in the window nor set aside
     * went out: no rule can exempt it any more, and its owners would stay
     * noted to the end of the heap dump, a String each where many share
     * it (G1's String deduplication, new String(s)): memory without bound.
     * Its text went redacted, as when it leaves with its owners noted. */
    if (one_pass_dumped_already(op, value) && !wait_window_has(&op->window, value) &&
        one_pass_spill_find(op, value) == NULL) {
        idfilter_add(&op->values_gone, owner);
        return HPROF_OK;
    }
    uint64_t *was = id_table_find(&op->value_owner, value), was_covers = UINT64_MAX, last = 0;
    if (was != NULL) { /* another String holds it too: it stays in line */
        size_t at = op->free_owners - 1; /* an entry given back, if any */
        if (op->free_owners != 0) {
            op->free_owners = op->more_owners[at].next;
        } else {
            struct value_owner *grown = grow_array(op->more_owners, &op->cap_more_owners,
                                                   op->n_more_owners + 1, sizeof *grown);
            if (grown == NULL)
                return nomem(op);
            op->more_owners = grown;
            at = op->n_more_owners++;
        }
        (void)id_table_take(&op->value_covers, value, &was_covers);
        (void)id_table_take(&op->more_owners_last, value, &last);
        op->more_owners[at] = (struct value_owner){
            .value = value, .owner = *was, .covers = was_covers, .next = (size_t)last };
        if (id_table_put(&op->more_owners_last, value, at + 1) != HPROF_OK)
            return nomem(op);
    }
    if (id_table_put(&op->value_owner, value, owner) != HPROF_OK ||
        (covers != UINT64_MAX && id_table_put(&op->value_covers, value, covers) != HPROF_OK))
        return nomem(op);
    return HPROF_OK;
}

/* The multi-pass shrink keeps the text the one pass redacted, when the
 * String's value left before the rule came (a String named before then is
 * not named "for the first time", so it never gets here). */
void one_pass_string_named(void *ctx, uint64_t string_id)
{
    struct one_pass *op = ctx;
    if (op->hold_values && idfilter_maybe(&op->values_gone, string_id))
        op->st->window_late++;
}

int one_pass_value_owners_init(struct one_pass *op)
{
    if (!op->hold_values)
        return HPROF_OK;
    op->redact.on_exempt = one_pass_string_named;
    op->redact.on_exempt_ctx = op;
    return idfilter_init(&op->values_gone, VALUES_GONE_BYTES) == HPROF_OK ? HPROF_OK
                                                                         : nomem(op);
}

void one_pass_value_owners_free(struct one_pass *op)
{
    if (op->values_gone.words != NULL)
        idfilter_free(&op->values_gone);
    id_table_free(&op->value_owner);
    id_table_free(&op->value_covers);
    id_table_free(&op->more_owners_last);
    free(op->more_owners);
    op->more_owners = NULL;
    op->n_more_owners = op->cap_more_owners = op->free_owners = 0;
}

/* String `owner` holds `value`, which leaves the window: exempt if a rule
 * named the String, or a static of android.os.Build (the device's text). */
static int exempt_for(struct one_pass *op, uint64_t value, uint64_t owner, uint64_t covers)
{
    int rc = one_pass_exempt_value(op, owner, value, covers);
    if (rc == HPROF_OK && idmap_has(&op->device, owner))
        rc = one_pass_keep_device_text(op, value);
    else
        idfilter_add(&op->values_gone, owner); /* its text goes redacted */
    return rc;
}

/* A String's value leaves the window: exempt if a rule named any String
 * that holds it. */
static int exempt_if_named(struct one_pass *op, uint64_t value)
{
    uint64_t owner, covers, k = 0, next;
    int rc = HPROF_OK;
    if (!id_table_take(&op->value_covers, value, &covers))
        covers = UINT64_MAX;
    if (id_table_take(&op->value_owner, value, &owner))
        rc = exempt_for(op, value, owner, covers);
    if (op->more_owners_last.count > 0)
        (void)id_table_take(&op->more_owners_last, value, &k);
    /* each entry is given back for the next String that shares a value:
     * the entries in use are those of the values waiting, not of every
     * String read that shared one */
    for (; k != 0; k = next) {
        struct value_owner *e = &op->more_owners[k - 1];
        next = e->next;
        if (rc == HPROF_OK)
            rc = exempt_for(op, value, e->owner, e->covers);
        e->next = op->free_owners;
        op->free_owners = (size_t)k;
    }
    return rc;
}

static int value_leaves(struct one_pass *op, struct held *h)
{
    int rc = exempt_if_named(op, h->rec.array.id);
    return rc == HPROF_OK ? one_pass_send_held(op, h, (enum array_keep)h->keep) : rc;
}

int one_pass_claims_end(struct one_pass *op)
{
    struct one_pass_spill *s = &op->spill;
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && i < s->n; i++)
        if (!s->list[i].sent && s->list[i].keep != ARRAY_NOT_KEPT)
            rc = exempt_if_named(op, s->list[i].array.id);
    return rc == HPROF_OK ? one_pass_spill_flush(op) : rc;
}

/* Array `e`, set aside, is claimed: it goes out now with the verdict of
 * `claim`.  A buffer is decided as one read now, from its bytes read back
 * (one larger than the window stays unmerged, as when it is read). */
static int claim_set_aside(struct one_pass *op, struct spilled *e, unsigned claim)
{
    enum array_keep keep = (enum array_keep)(claim & CLAIM_KEEP);
    size_t bytes = e->array.length;
    if (e->keep == ARRAY_BITMAP && is_value_keep(keep)) {
        /* a buffer kept as it is, and a String's value: the String's
         * claim wins, as in the multi-pass shrink (redacted as text) */
        e->keep = (uint8_t)keep;
        return HPROF_OK;
    }
    if (e->keep != ARRAY_NOT_KEPT) /* claimed before: sent with the others */
        return HPROF_OK;
    if (waits_for_rules(op, claim)) {
        e->keep = (uint8_t)keep;
        return HPROF_OK;
    }
    if (keep != ARRAY_BITMAP)
        return one_pass_spill_send(op, e, keep, NULL);
    if (bytes > op->window.limit || op->opt.keep_duplicates || (claim & CLAIM_PINNED)) {
        /* kept as it is: it waits on, sent with the others (a pinned
         * claim may come while an array goes out in chunks) */
        e->keep = ARRAY_BITMAP;
        int rc = bytes > op->window.limit ? kept_uncompared(op, e->array.type, e->array.count)
                                          : HPROF_OK;
        return rc == HPROF_OK ? add_candidate(op, e->array.id) : rc;
    }
    uint8_t *data = malloc(bytes);
    if (data == NULL)
        return nomem(op);
    int rc = one_pass_spill_read(op, e, data);
    struct hprof_primitive_array a = e->array;
    a.data = data;
    if (rc == HPROF_OK)
        rc = decide_buffer(op, &a, (claim & CLAIM_PINNED) != 0, &keep);
    if (rc == HPROF_OK)
        rc = one_pass_spill_send(op, e, keep, data);
    if (rc == HPROF_OK)
        note_kept_at(op, a.id);
    free(data);
    return rc;
}

/* Array `id` is a String's value, DumpData's natives or a Bitmap's buffer
 * (`claim`: an array_keep, with CLAIM_* flags for a buffer).  Waiting in
 * the window, it goes out now (a buffer: it waits on as a buffer); not
 * read yet, it will be decided when it is. */
int one_pass_claim(struct one_pass *op, uint64_t id, unsigned claim)
{
    if (id == 0)
        return HPROF_OK;
    struct held *first = wait_window_first(&op->window, id);
    if (first != NULL && first->wait != WAIT_CLAIM) { /* a buffer claimed before */
        /* a claim that pins walks the records under the id, every Bitmap
         * of a shared buffer among them; one that does not would change
         * nothing, once per Bitmap */
        int value = is_value_keep(claim & CLAIM_KEEP), read = 0;
        for (struct held *h = first; ((claim & CLAIM_PINNED) || value) && h != NULL;
             h = h->next_same) {
            h->pinned |= (claim & CLAIM_PINNED) != 0;
            read |= h->wait == WAIT_DECIDE;
        }
        if (read && value) /* read: its group decides it, and the String keeps it */
            return also_value(op, id, claim & CLAIM_KEEP);
        first = NULL;
    }
    if (first == NULL || first->kind != HELD_PRIMITIVE_ARRAY) {
        struct spilled *e = one_pass_spill_find(op, id);
        if (e != NULL)
            return claim_set_aside(op, e, claim);
        uint64_t *was = id_table_find(&op->claims, id);
        if (was != NULL) { /* claimed twice: a buffer stays pinned */
            unsigned had = (unsigned)(*was & CLAIM_KEEP), keep = claim & CLAIM_KEEP;
            if (had == ARRAY_BITMAP && is_value_keep(keep))
                return also_value(op, id, keep);
            if (is_value_keep(had) && keep == ARRAY_BITMAP) { /* a buffer, and a value */
                *was = claim;
                return also_value(op, id, had);
            }
            *was |= claim & CLAIM_PINNED;
            return HPROF_OK;
        }
        if (wait_window_has(&op->window, id))
            return HPROF_OK; /* its group decides it */
        return id_table_put(&op->claims, id, claim) == HPROF_OK ? HPROF_OK : nomem(op);
    }
    struct held *h = wait_window_take(&op->window, id);
    if ((claim & CLAIM_KEEP) == ARRAY_BITMAP)
        return buffer_claimed(op, h, claim);
    if (waits_for_rules(op, claim))
        return hold_value(op, h, claim);
    int rc = one_pass_send_held(op, h, (enum array_keep)(claim & CLAIM_KEEP));
    held_free(&op->window, h);
    return rc;
}

/* ---- The window's rule ----------------------------------------------------------- */

/* An instance the rule sends before its class dump came: whether it is a
 * String, a Bitmap, a stand-in's referrer or has fields to redact is not
 * known, so it is late; and under redaction nothing of it may go out as
 * it is, so every field, references included, goes out zero. */
static int instance_without_class(struct one_pass *op, struct held *h)
{
    op->st->window_late++;
    if (one_pass_redacting(op))
        memset(h->data, 0, h->rec.instance.length);
    return HPROF_OK;
}

/* The oldest record leaves the window: a buffer's group is decided as
 * at the end of the dump; anything else undecided, by the rule (counted
 * when the window was full: at the end, nothing can claim it any more). */
int one_pass_leave_window(struct one_pass *op, int evicted)
{
    struct held *oldest = wait_window_oldest(&op->window);
    int by_rule = 1, rc;
    uint64_t bytes = oldest->bytes;
    if (oldest->wait == WAIT_DECIDE || oldest->wait == WAIT_BUFFER) {
        rc = decide_group(op, oldest->key, evicted, &by_rule);
    } else if (oldest->wait == WAIT_EXEMPT) {
        struct held *h = wait_window_take_oldest(&op->window);
        by_rule = 0;
        rc = value_leaves(op, h);
        held_free(&op->window, h);
    } else {
        struct held *h = wait_window_take_oldest(&op->window);
        int set_aside = 0;
        if (h->wait == WAIT_CLASS && !evicted) { /* its class never came */
            struct class_info *unused;
            rc = classes_check_instance(&op->model.classes, &h->rec.instance, &unused,
                                        op->ctx.err);
        } else if (h->wait == WAIT_CLASS) { /* its class has not come: nothing decided */
            rc = instance_without_class(op, h);
        } else if (evicted && h->kind == HELD_PRIMITIVE_ARRAY) { /* no claim yet */
            rc = one_pass_spill_held(op, h, &set_aside);
            by_rule = !set_aside;
        } else {
            rc = HPROF_OK;
        }
        if (rc == HPROF_OK && !set_aside)
            rc = one_pass_send_held(op, h, ARRAY_NOT_KEPT);
        held_free(&op->window, h);
    }
    if (evicted && by_rule)
        count_add(&op->st->window_by_rule, bytes);
    return rc;
}

/* Room for `bytes` more in the window: the buffers Bitmaps claimed are
 * decided first (what they wait for is only a pin, and they are the
 * largest), then the oldest records leave by the rule. */
static int make_room(struct one_pass *op, uint64_t bytes)
{
    int rc = HPROF_OK;
    while (rc == HPROF_OK && wait_window_full(&op->window, bytes)) {
        int by_rule;
        const struct held *buffer = wait_window_oldest_buffer(&op->window);
        if (buffer != NULL)
            rc = decide_group(op, buffer->key, 1, &by_rule);
        else
            rc = one_pass_leave_window(op, 1);
    }
    return rc;
}

int one_pass_hold(struct one_pass *op, struct held *h, uint64_t key, uint8_t wait)
{
    if (h == NULL)
        return nomem(op);
    if (key == 0) { /* id 0 is null, no object: nothing will come for it */
        struct class_info *unused;
        int rc = wait == WAIT_CLASS ? classes_check_instance(&op->model.classes, &h->rec.instance,
                                                             &unused, op->ctx.err)
                                    : one_pass_send_held(op, h, ARRAY_NOT_KEPT);
        held_free(&op->window, h);
        return rc;
    }
    int rc = make_room(op, h->bytes);
    if (rc == HPROF_OK && wait_window_hold(&op->window, h, key, wait) != HPROF_OK)
        return nomem(op);
    if (rc != HPROF_OK)
        held_free(&op->window, h);
    return rc;
}

/* What a String's note costs (its entry and the slots of the tables that
 * find it), counted in the window. */
#define OWNER_NOTE_BYTES 64u

int one_pass_charge_owner(struct one_pass *op, uint64_t id)
{
    struct held *h = wait_window_first(&op->window, id);
    if (h == NULL || h->wait != WAIT_EXEMPT)
        return HPROF_OK;
    h->bytes += OWNER_NOTE_BYTES;
    op->window.bytes += OWNER_NOTE_BYTES;
    if (op->window.bytes > op->window.peak)
        op->window.peak = op->window.bytes;
    return make_room(op, 0);
}

int one_pass_pin_waiting(struct one_pass *op, uint64_t id)
{
    struct held *h = wait_window_take(&op->window, id); /* alone under its id */
    h->pinned = 1;
    /* the same bytes back in: no room to make, nothing sent */
    if (wait_window_hold(&op->window, h, id, WAIT_DECIDE) != HPROF_OK)
        return nomem(op);
    return one_pass_twins_add(op, h);
}

int one_pass_pin_buffer(struct one_pass *op, uint64_t id)
{
    uint64_t *claim = id_table_find(&op->claims, id);
    if (claim != NULL)
        *claim |= CLAIM_PINNED;
    return HPROF_OK;
}

/* ---- Primitive arrays ------------------------------------------------------------------ */

/* Could a String, Bitmap or DumpData still claim an array of this type? */
static int may_be_claimed(const struct one_pass *op, uint8_t type)
{
    return type == HPROF_TYPE_BYTE || type == HPROF_TYPE_CHAR ||
           (type == HPROF_TYPE_LONG && (op->model.names_seen & (1u << NAME_CLASS_DUMP_DATA)));
}

/* The first chunk of an array that must be read whole before it goes
 * out (`claim`: what claimed it, or CLAIM_NONE to wait for a claim). */
static int start_gather(struct one_pass *op, const struct hprof_primitive_array *a, uint64_t bytes,
                        unsigned claim)
{
    int rc = make_room(op, bytes); /* before the copy is made, so that it counts */
    if (rc != HPROF_OK)
        return rc;
    struct held *h = held_new(&op->window, HELD_PRIMITIVE_ARRAY, (size_t)bytes);
    if (h == NULL)
        return nomem(op);
    h->rec.array = *a;
    h->rec.array.data = h->data;
    h->rec.array.length = (size_t)bytes;
    h->heap = op->in_heap;
    op->gather = h;
    op->gather_claim = claim;
    op->gather_have = 0;
    return HPROF_OK;
}

static int finish_gather(struct one_pass *op)
{
    struct held *h = op->gather;
    op->gather = NULL;
    if (op->gather_claim == CLAIM_NONE)
        return one_pass_hold(op, h, h->rec.array.id, WAIT_CLAIM);
    if (waits_for_rules(op, op->gather_claim))
        return hold_value(op, h, op->gather_claim);
    return buffer_claimed(op, h, op->gather_claim);
}

static int gather_chunk(struct one_pass *op, const struct hprof_primitive_array *a)
{
    struct held *h = op->gather;
    if (a->first != op->gather_have || a->length > h->rec.array.length - op->gather_have)
        return hprof_error_set(op->ctx.err, HPROF_ERR_FORMAT, "offset 0x%llx: "
                               "PRIMITIVE_ARRAY_DUMP: chunks out of order",
                               (unsigned long long)a->offset);
    memcpy(h->data + op->gather_have, a->data, a->length);
    op->gather_have += a->length;
    return op->gather_have == h->rec.array.length ? finish_gather(op) : HPROF_OK;
}

int one_pass_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct one_pass *op = (struct one_pass *)v;
    if (op->gather != NULL)
        return gather_chunk(op, a);
    if (op->spill.open != 0)
        return one_pass_spill_chunk(op, a);
    if (a->first != 0) /* a chunk of an array going out as it is read */
        return hprof_visit_primitive_array(op->head, a);
    int rc = one_pass_dumped_once(op, a->id, a->offset, a->tag);
    if (rc == HPROF_OK && op->prelude)
        rc = one_pass_prelude_end(op);
    if (rc == HPROF_OK)
        rc = one_pass_system_object(op, a->id);
    if (rc != HPROF_OK)
        return rc == ONE_PASS_DROPPED ? one_pass_system_array(op, a) : rc;
    uint64_t bytes = (uint64_t)a->count * type_size(a->type, op->ctx.ids);
    uint64_t claim = CLAIM_NONE;
    int claimed = id_table_take(&op->claims, a->id, &claim);
    enum array_keep keep = claimed ? (enum array_keep)(claim & CLAIM_KEEP) : ARRAY_NOT_KEPT;
    /* a buffer is read whole to be hashed; an array nobody claimed yet
     * waits for a claim; NODATA has no contents to keep either way */
    int gather = (claimed ? keep == ARRAY_BITMAP || waits_for_rules(op, (unsigned)claim)
                          : may_be_claimed(op, a->type)) &&
                 a->tag != HPROF_PRIMITIVE_ARRAY_NODATA;
    if (gather && bytes > op->window.limit) { /* cannot wait here */
        int set_aside = 0;
        if (!claimed && (rc = one_pass_spill_begin(op, a, bytes, &set_aside)) != HPROF_OK)
            return rc;
        if (set_aside)
            return HPROF_OK;
        count_add(&op->st->window_by_rule, bytes); /* the rule decides now */
        if (keep == ARRAY_BITMAP && (rc = kept_uncompared(op, a->type, a->count)) != HPROF_OK)
            return rc;
        gather = 0;
    }
    if (!gather) {
        if (a->tag == HPROF_PRIMITIVE_ARRAY_NODATA) {
            keep = ARRAY_NOT_KEPT;
            /* the multi-pass shrink keeps nothing of it either, whoever
             * claims it: a String or Bitmap that comes after it is not
             * late (late_claims() answers the claims of these ids) */
            if (one_pass_note_out(op, a->id, ARRAY_NOT_KEPT, 1) != HPROF_OK)
                return HPROF_ERR_NOMEM;
        }
        if ((rc = one_pass_live_heap(op)) != HPROF_OK ||
            (rc = one_pass_give_verdict(op, a, keep)) != HPROF_OK)
            return rc;
        return hprof_visit_primitive_array(op->head, a);
    }
    rc = start_gather(op, a, bytes, claimed ? (unsigned)claim : CLAIM_NONE);
    return rc == HPROF_OK ? gather_chunk(op, a) : rc;
}

