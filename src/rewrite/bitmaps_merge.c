/*
 * bitmaps_merge.c - the bitmap merge (see bitmaps.h): digested candidates
 * grouped by type, length and MD5, and each member compared byte for byte
 * with the earlier ones of its group on every core, so that an MD5 match
 * alone never merges.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bitmaps_private.h"

int compare_candidates(const void *pa, const void *pb)
{
    const struct candidate *a = pa, *b = pb;
    if (a->digested != b->digested)
        return a->digested ? -1 : 1;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    if (a->count != b->count)
        return a->count < b->count ? -1 : 1;
    int c = memcmp(a->md5, b->md5, 16);
    if (c != 0)
        return c;
    return a->data_offset < b->data_offset ? -1 : a->data_offset > b->data_offset;
}

int same_key(const struct candidate *a, const struct candidate *b)
{
    return a->digested && b->digested && a->type == b->type && a->count == b->count &&
           memcmp(a->md5, b->md5, 16) == 0;
}

/* Byte-for-byte comparison of two candidates' contents in the input (with
 * pread(), so that no page stays mapped). */
static int same_contents(const struct hprof_reader *r, const struct candidate *x,
                         const struct candidate *y, uint8_t *buf_x, uint8_t *buf_y, int *same,
                         atomic_uint_least64_t *compared, struct hprof_error *err)
{
    *same = 1;
    for (uint64_t at = 0; at < x->bytes; at += COMPARE_BUFFER) {
        size_t n = x->bytes - at < COMPARE_BUFFER ? (size_t)(x->bytes - at) : COMPARE_BUFFER;
        int rc = reader_pread_unmapped(r, x->data_offset + at, buf_x, n, err);
        if (rc == HPROF_OK)
            rc = reader_pread_unmapped(r, y->data_offset + at, buf_y, n, err);
        if (rc != HPROF_OK)
            return rc;
        atomic_fetch_add_explicit(compared, 2 * n, memory_order_relaxed);
        if (memcmp(buf_x, buf_y, n) != 0) {
            *same = 0;
            return HPROF_OK;
        }
    }
    return HPROF_OK;
}

/* The merge's comparisons, a group (same type, length, MD5) at a time on
 * every thread; what each candidate merges into is applied in order after,
 * so the plan and the counts are those of one thread. */
struct merge_work {
    struct bitmaps *b;
    size_t *groups;         /* [start, end) pairs of groups of two or more */
    size_t n_groups;
    size_t *original;       /* per candidate: the index + 1 it merges into, or 0 */
    uint8_t *differs;       /* per candidate: not equal to its group's first */
    atomic_size_t next;
    atomic_uint_least64_t compared; /* bytes read to compare */
};

struct merge_worker {
    struct merge_work *mw;
    pthread_t thread;
    int started, rc;
    size_t failed;          /* the group it failed on */
    struct hprof_error err;
};

/* Was member m found equal to the group's first while hashing? */
static int confirmed(const struct candidate *cand, size_t start, size_t m)
{
    return cand[m].equal_to != 0 && cand[m].equal_to == cand[start].data_offset;
}

/* How many buffers of the group [start, end) the merge reads: the members
 * not confirmed while hashing, and the first if there is any. */
static size_t to_compare(const struct candidate *cand, size_t start, size_t end)
{
    size_t n = 0;
    for (size_t m = start + 1; m < end; m++)
        n += !confirmed(cand, start, m);
    return n > 0 ? n + 1 : 0;
}

/* Every other member of the group compared with its first, a chunk at a
 * time: the first's chunk is read once for all of them, where comparing
 * them in pairs would read it once for each (a group of g reads g
 * buffers instead of 2(g - 1)).  A member confirmed while hashing is not
 * read again.  differs[m] says a member is not equal. */
static int compare_with_first(struct merge_work *mw, size_t start, size_t end, uint8_t *buf_x,
                              uint8_t *buf_y, struct hprof_error *err)
{
    const struct hprof_reader *r = mw->b->ctx->reader;
    const struct candidate *cand = mw->b->cand;
    const uint64_t bytes = cand[start].bytes;
    int alike = to_compare(cand, start, end) > 0; /* some member to compare, equal so far */
    for (uint64_t at = 0; alike && at < bytes; at += COMPARE_BUFFER) {
        size_t n = bytes - at < COMPARE_BUFFER ? (size_t)(bytes - at) : COMPARE_BUFFER;
        int rc = reader_pread_unmapped(r, cand[start].data_offset + at, buf_x, n, err);
        atomic_fetch_add_explicit(&mw->compared, n, memory_order_relaxed);
        alike = 0;
        for (size_t m = start + 1; rc == HPROF_OK && m < end; m++) {
            if (mw->differs[m] || confirmed(cand, start, m))
                continue;
            rc = reader_pread_unmapped(r, cand[m].data_offset + at, buf_y, n, err);
            atomic_fetch_add_explicit(&mw->compared, n, memory_order_relaxed);
            if (rc == HPROF_OK && memcmp(buf_x, buf_y, n) != 0)
                mw->differs[m] = 1;
            alike |= !mw->differs[m];
        }
        if (rc != HPROF_OK)
            return rc;
    }
    return HPROF_OK;
}

/* Each member merges into the first earlier member with equal bytes that
 * did not merge itself, which is the earliest in the file with that
 * content: most into the group's first, compared with all at once; the
 * rare one that differs from it (an MD5 collision) then with the group's
 * other distinct contents, a pair at a time. */
static int merge_group(struct merge_work *mw, size_t start, size_t end, uint8_t *buf_x,
                       uint8_t *buf_y, struct hprof_error *err)
{
    const struct candidate *cand = mw->b->cand;
    int rc = compare_with_first(mw, start, end, buf_x, buf_y, err);
    for (size_t m = start + 1; rc == HPROF_OK && m < end; m++) {
        if (!mw->differs[m]) {
            mw->original[m] = start + 1;
            continue;
        }
        for (size_t k = start + 1; k < m; k++) {
            int same = 0;
            if (mw->original[k] != 0)
                continue; /* merged itself: not a distinct content */
            rc = same_contents(mw->b->ctx->reader, &cand[k], &cand[m], buf_x, buf_y, &same,
                               &mw->compared, err);
            if (rc != HPROF_OK)
                break;
            if (same) {
                mw->original[m] = k + 1;
                break;
            }
        }
    }
    return rc;
}

static void *merge_main(void *arg)
{
    struct merge_worker *w = arg;
    struct merge_work *mw = w->mw;
    uint8_t *buf_x = malloc(COMPARE_BUFFER), *buf_y = malloc(COMPARE_BUFFER);
    w->rc = buf_x && buf_y ? HPROF_OK : hprof_error_set(&w->err, HPROF_ERR_NOMEM, "out of memory");
    w->failed = SIZE_MAX;
    while (w->rc == HPROF_OK) {
        size_t g = atomic_fetch_add_explicit(&mw->next, 1, memory_order_relaxed);
        if (g >= mw->n_groups)
            break;
        w->rc = merge_group(mw, mw->groups[2 * g], mw->groups[2 * g + 1], buf_x, buf_y, &w->err);
        if (w->rc != HPROF_OK)
            w->failed = g;
    }
    /* the others take no new group; those before this one are all taken,
     * so the first failure in file order is among the workers' */
    if (w->rc != HPROF_OK)
        atomic_store_explicit(&mw->next, mw->n_groups, memory_order_relaxed);
    free(buf_x);
    free(buf_y);
    return NULL;
}

/* Run the comparisons of mw on up to ctx->threads threads (the caller is
 * one). */
static int compare_groups(struct bitmaps *b, struct merge_work *mw, uint64_t bytes)
{
    unsigned n = threads_for(b, bytes, mw->n_groups);
    struct merge_worker *w = calloc(n, sizeof *w);
    if (w == NULL)
        return nomem(b);
    atomic_init(&mw->next, 0);
    atomic_init(&mw->compared, 0);
    for (unsigned i = 0; i < n; i++) {
        w[i].mw = mw;
        w[i].started = i > 0 && pthread_create(&w[i].thread, NULL, merge_main, &w[i]) == 0;
    }
    merge_main(&w[0]); /* the caller compares too; unstarted threads' share falls to it */
    struct merge_worker *first = NULL;
    for (unsigned i = 0; i < n; i++) {
        if (w[i].started)
            pthread_join(w[i].thread, NULL);
        if (w[i].rc != HPROF_OK && (first == NULL || w[i].failed < first->failed))
            first = &w[i];
    }
    int rc = first ? hprof_error_set(b->ctx->err, first->rc, "%s", first->err.message) : HPROF_OK;
    b->ctx->stats->bitmap_bytes_compared += atomic_load(&mw->compared);
    free(w);
    return rc;
}

/* Group digested candidates by type, length and MD5; within a group each
 * member merges into the first earlier one with equal bytes.  An MD5 match
 * alone never merges. */
int bitmaps_merge(struct bitmaps *b)
{
    struct hprof_shrink_stats *st = b->ctx->stats;
    struct merge_work mw = { .b = b };
    uint64_t bytes = 0;
    qsort(b->cand, b->n_cand, sizeof *b->cand, compare_candidates);
    mw.groups = malloc(b->n_cand * sizeof *mw.groups + 1);
    mw.original = calloc(b->n_cand + 1, sizeof *mw.original);
    mw.differs = calloc(b->n_cand + 1, 1);
    int rc = mw.groups && mw.original && mw.differs ? HPROF_OK : nomem(b);
    for (size_t i = 0; rc == HPROF_OK && i < b->n_cand; i++)
        if (idmap_put(&b->candidates, b->cand[i].id, i + 1) != HPROF_OK)
            rc = nomem(b);
    for (size_t start = 0, end; rc == HPROF_OK && start < b->n_cand; start = end) {
        for (end = start + 1; end < b->n_cand && same_key(&b->cand[start], &b->cand[end]);)
            end++;
        if (end - start > 1) { /* at most n_cand / 2 groups: two slots each fit */
            mw.groups[2 * mw.n_groups] = start;
            mw.groups[2 * mw.n_groups++ + 1] = end;
            bytes += to_compare(b->cand, start, end) * b->cand[start].bytes;
        }
    }
    if (rc == HPROF_OK && mw.n_groups > 0)
        rc = compare_groups(b, &mw, bytes);
    for (size_t m = 0; rc == HPROF_OK && m < b->n_cand; m++) {
        if (mw.original[m] == 0)
            continue;
        struct candidate *copy = &b->cand[m], *original = &b->cand[mw.original[m] - 1];
        if (idmap_put(&b->remap, copy->id, original->id) != HPROF_OK ||
            (!idmap_has(&b->pinned, copy->id) && idmap_put(&b->dropped, copy->id, 0) != HPROF_OK)) {
            rc = nomem(b);
            break;
        }
        if (!original->has_copies)
            st->bitmap_groups++;
        original->has_copies = 1;
        st->bitmap_duplicates.count++;
        st->bitmap_duplicates.bytes += copy->bytes;
    }
    free(mw.groups);
    free(mw.original);
    free(mw.differs);
    return rc;
}
