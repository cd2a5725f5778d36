/*
 * one_pass_twins.c - the buffers Bitmaps claimed that wait in the window,
 * found by their bytes.
 *
 * The multi-pass shrink keeps the first read of twin buffers; the one
 * pass decides a claimed buffer as it leaves the window, in the order
 * claimed.  When Bitmaps come in another order than their buffers, the
 * buffer about to be kept first may have a twin read before it, claimed
 * and waiting too: that one is decided first (one_pass_claims.c), so the
 * first read is kept here as well.  A twin read before it and not
 * claimed yet needs nothing: it is older in the window, and leaves it
 * before the buffer claimed after it does, unless a full window decides
 * that buffer first (its claim is then counted late, as any twin that
 * merges into one read after it).
 *
 * Only claimed buffers are indexed, by type, length and a fingerprint
 * (memory speed): a key's list is its twins, or a fingerprint made to
 * collide, and the bytes, both in memory, are compared.  The list is
 * linked both ways: buffers leave the window oldest first, from the far
 * end of a list that may hold every buffer of the window (a dump of many
 * small identical ones), and one walk from the newest per buffer made
 * the shrink quadratic.
 */
#include <string.h>

#include "digest.h"
#include "one_pass_private.h"

static uint64_t twin_key(const struct hprof_primitive_array *a, uint64_t print)
{
    uint64_t key = print ^ ((uint64_t)a->type << 56) ^ a->count;
    return key != 0 ? key : 1;
}

int one_pass_twins_add(struct one_pass *op, const struct held *h)
{
    struct waiting_twins *t = &op->twins;
    const struct hprof_primitive_array *a = &h->rec.array;
    if (op->opt.keep_duplicates || a->tag == HPROF_PRIMITIVE_ARRAY_NODATA ||
        id_table_find(&t->key_of, a->id) != NULL)
        return HPROF_OK;
    uint64_t key = twin_key(a, fingerprint64(a->data, a->length));
    uint64_t *newest = id_table_find(&t->newest, key);
    if ((newest != NULL && (id_table_put(&t->older, a->id, *newest) != HPROF_OK ||
                            id_table_put(&t->newer, *newest, a->id) != HPROF_OK)) ||
        id_table_put(&t->newest, key, a->id) != HPROF_OK ||
        id_table_put(&t->key_of, a->id, key) != HPROF_OK)
        return rewrite_nomem(&op->ctx);
    return HPROF_OK;
}

void one_pass_twins_remove(struct one_pass *op, uint64_t id)
{
    struct waiting_twins *t = &op->twins;
    uint64_t key, older = 0, newer = 0, unused;
    if (t->key_of.count == 0 || !id_table_take(&t->key_of, id, &key))
        return;
    int has_older = id_table_take(&t->older, id, &older);
    int has_newer = id_table_take(&t->newer, id, &newer);
    /* no growth below: every slot written is there */
    if (has_newer && has_older) /* the one claimed after it: the link to it moves on */
        *id_table_find(&t->older, newer) = older;
    else if (has_newer)
        (void)id_table_take(&t->older, newer, &unused);
    else if (has_older)
        *id_table_find(&t->newest, key) = older;
    else
        (void)id_table_take(&t->newest, key, &unused);
    if (has_older && has_newer)
        *id_table_find(&t->newer, older) = newer;
    else if (has_older)
        (void)id_table_take(&t->newer, older, &unused);
}

/* The buffer waiting under its own id in the window. */
static struct held *waiting_buffer(const struct one_pass *op, uint64_t id)
{
    struct held *h = wait_window_first(&op->window, id);
    while (h != NULL && h->wait != WAIT_DECIDE)
        h = h->next_same;
    return h;
}

struct held *one_pass_twins_earlier(struct one_pass *op, const struct hprof_primitive_array *a,
                                    uint64_t print)
{
    struct waiting_twins *t = &op->twins;
    struct held *first = NULL;
    if (t->key_of.count == 0 || a->tag == HPROF_PRIMITIVE_ARRAY_NODATA)
        return NULL;
    uint64_t *id = id_table_find(&t->newest, twin_key(a, print));
    for (; id != NULL; id = id_table_find(&t->older, *id)) {
        struct held *h = waiting_buffer(op, *id);
        const struct hprof_primitive_array *b = h != NULL ? &h->rec.array : NULL;
        if (b == NULL || b->type != a->type || b->count != a->count ||
            b->length != a->length || b->data_offset >= a->data_offset ||
            (first != NULL && b->data_offset >= first->rec.array.data_offset))
            continue;
        if (memcmp(b->data, a->data, a->length) == 0)
            first = h;
    }
    return first;
}

void one_pass_twins_free(struct one_pass *op)
{
    id_table_free(&op->twins.newest);
    id_table_free(&op->twins.older);
    id_table_free(&op->twins.newer);
    id_table_free(&op->twins.key_of);
}
