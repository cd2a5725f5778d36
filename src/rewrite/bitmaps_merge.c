/*
 * bitmaps_merge.c - the bitmap merge (see bitmaps.h): digested candidates
 * grouped by type, length and MD5, and each member compared byte for byte
 * with the earlier ones of its group on every core, so that an MD5 match
 * alone never merges.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bitmaps_private.h"

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
struct group {
    struct candidate *member; /* its first; the others follow it in b->cand */
    size_t n;                 /* two or more */
};

struct merge_work {
    struct bitmaps *b;
    struct group *groups;
    size_t n_groups;
    atomic_size_t next;     /* the next group to take */
    atomic_uint_least64_t compared; /* bytes read to compare */
};

/* A thread's share of the comparisons. */
struct merge_task {
    struct merge_work *mw;
    int rc;
    size_t failed;          /* the group it failed on */
    struct hprof_error err;
};

/* Was member m found equal to the group's first while hashing? */
static int confirmed(const struct group *g, const struct candidate *m)
{
    return m->equal_to != 0 && m->equal_to == g->member[0].data_offset;
}

/* How many buffers of the group the merge reads: the members not
 * confirmed while hashing, and the first if there is any. */
static size_t to_compare(const struct group *g)
{
    size_t n = 0;
    for (size_t m = 1; m < g->n; m++)
        n += !confirmed(g, &g->member[m]);
    return n > 0 ? n + 1 : 0;
}

/* Every other member of the group compared with its first, a chunk at a
 * time: the first's chunk is read once for all of them, where comparing
 * them in pairs would read it once for each (a group of g reads g
 * buffers instead of 2(g - 1)).  A member confirmed while hashing is not
 * read again.  differs_from_first says a member is not equal. */
static int compare_with_first(struct merge_work *mw, const struct group *g, uint8_t *buf_x,
                              uint8_t *buf_y, struct hprof_error *err)
{
    const struct hprof_reader *r = mw->b->ctx->reader;
    const struct candidate *first = &g->member[0];
    int alike = to_compare(g) > 0; /* some member to compare, equal so far */
    for (uint64_t at = 0; alike && at < first->bytes; at += COMPARE_BUFFER) {
        uint64_t left = first->bytes - at;
        size_t n = left < COMPARE_BUFFER ? (size_t)left : COMPARE_BUFFER;
        int rc = reader_pread_unmapped(r, first->data_offset + at, buf_x, n, err);
        atomic_fetch_add_explicit(&mw->compared, n, memory_order_relaxed);
        alike = 0;
        for (size_t m = 1; rc == HPROF_OK && m < g->n; m++) {
            struct candidate *c = &g->member[m];
            if (c->differs_from_first || confirmed(g, c))
                continue;
            rc = reader_pread_unmapped(r, c->data_offset + at, buf_y, n, err);
            atomic_fetch_add_explicit(&mw->compared, n, memory_order_relaxed);
            if (rc == HPROF_OK && memcmp(buf_x, buf_y, n) != 0)
                c->differs_from_first = 1;
            alike |= !c->differs_from_first;
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
static int merge_group(struct merge_work *mw, const struct group *g, uint8_t *buf_x,
                       uint8_t *buf_y, struct hprof_error *err)
{
    int rc = compare_with_first(mw, g, buf_x, buf_y, err);
    for (size_t m = 1; rc == HPROF_OK && m < g->n; m++) {
        struct candidate *c = &g->member[m];
        if (!c->differs_from_first) {
            c->merges_into = &g->member[0];
            continue;
        }
        for (size_t k = 1; k < m; k++) {
            int same = 0;
            if (g->member[k].merges_into != NULL)
                continue; /* merged itself: not a distinct content */
            rc = same_contents(mw->b->ctx->reader, &g->member[k], c, buf_x, buf_y, &same,
                               &mw->compared, err);
            if (rc != HPROF_OK)
                break;
            if (same) {
                c->merges_into = &g->member[k];
                break;
            }
        }
    }
    return rc;
}

static void merge_task_run(void *worker, void *job)
{
    struct merge_task *t = job;
    struct merge_work *mw = t->mw;
    (void)worker;
    uint8_t *buf_x = malloc(COMPARE_BUFFER), *buf_y = malloc(COMPARE_BUFFER);
    t->rc = buf_x && buf_y ? HPROF_OK : hprof_error_set(&t->err, HPROF_ERR_NOMEM, "out of memory");
    t->failed = SIZE_MAX;
    while (t->rc == HPROF_OK) {
        size_t g = atomic_fetch_add_explicit(&mw->next, 1, memory_order_relaxed);
        if (g >= mw->n_groups)
            break;
        t->rc = merge_group(mw, &mw->groups[g], buf_x, buf_y, &t->err);
        if (t->rc != HPROF_OK)
            t->failed = g;
    }
    /* the others take no new group; those before this one are all taken,
     * so the first failure in file order is among the tasks' */
    if (t->rc != HPROF_OK)
        atomic_store_explicit(&mw->next, mw->n_groups, memory_order_relaxed);
    free(buf_x);
    free(buf_y);
}

/* Run the comparisons of mw on up to ctx->threads threads (the caller is
 * one).  @return HPROF_OK or the error of the earliest group that failed. */
static int compare_groups(struct bitmaps *b, struct merge_work *mw, uint64_t bytes)
{
    unsigned n = threads_for(b, bytes, mw->n_groups);
    struct merge_task *tasks = calloc(n, sizeof *tasks);
    void **task_of = calloc(n, sizeof *task_of);
    if (tasks == NULL || task_of == NULL) {
        free(tasks);
        free(task_of);
        return nomem(b);
    }
    atomic_init(&mw->next, 0);
    atomic_init(&mw->compared, 0);
    for (unsigned i = 0; i < n; i++) {
        tasks[i].mw = mw;
        task_of[i] = &tasks[i];
    }
    run_together(n, task_of, merge_task_run);
    const struct merge_task *first = NULL;
    for (unsigned i = 0; i < n; i++)
        if (tasks[i].rc != HPROF_OK && (first == NULL || tasks[i].failed < first->failed))
            first = &tasks[i];
    int rc = first ? hprof_error_set(b->ctx->err, first->rc, "%s", first->err.message) : HPROF_OK;
    b->ctx->stats->bitmap_bytes_compared += atomic_load(&mw->compared);
    free(tasks);
    free(task_of);
    return rc;
}

/* The groups of two or more among the sorted candidates, into mw;
 * *bytes what comparing them reads. */
static void find_groups(struct bitmaps *b, struct merge_work *mw, uint64_t *bytes)
{
    *bytes = 0;
    for (size_t start = 0, end; start < b->n_cand; start = end) {
        for (end = start + 1; end < b->n_cand && same_key(&b->cand[start], &b->cand[end]);)
            end++;
        if (end - start > 1) {
            struct group *g = &mw->groups[mw->n_groups++];
            *g = (struct group){ .member = &b->cand[start], .n = end - start };
            *bytes += to_compare(g) * g->member[0].bytes;
        }
    }
}

/* What the comparisons decided, in candidate order: the remap, the
 * records that go, and the counts. */
static int apply_merges(struct bitmaps *b)
{
    struct hprof_shrink_stats *st = b->ctx->stats;
    for (size_t m = 0; m < b->n_cand; m++) {
        struct candidate *copy = &b->cand[m], *original = copy->merges_into;
        if (original == NULL)
            continue;
        if (idmap_put(&b->remap, copy->id, original->id) != HPROF_OK ||
            (!idmap_has(&b->pinned, copy->id) && idmap_put(&b->dropped, copy->id, 0) != HPROF_OK))
            return nomem(b);
        if (!original->has_copies)
            st->bitmap_groups++;
        original->has_copies = 1;
        st->bitmap_duplicates.count++;
        st->bitmap_duplicates.bytes += copy->bytes;
    }
    return HPROF_OK;
}

/* Group digested candidates by type, length and MD5; within a group each
 * member merges into the first earlier one with equal bytes.  An MD5 match
 * alone never merges. */
int bitmaps_merge(struct bitmaps *b)
{
    struct merge_work mw = { .b = b };
    uint64_t bytes;
    qsort(b->cand, b->n_cand, sizeof *b->cand, compare_candidates);
    mw.groups = malloc((b->n_cand / 2 + 1) * sizeof *mw.groups); /* two members or more each */
    int rc = mw.groups ? HPROF_OK : nomem(b);
    for (size_t i = 0; rc == HPROF_OK && i < b->n_cand; i++)
        if (idmap_put(&b->candidates, b->cand[i].id, i + 1) != HPROF_OK)
            rc = nomem(b);
    if (rc == HPROF_OK)
        find_groups(b, &mw, &bytes);
    if (rc == HPROF_OK && mw.n_groups > 0)
        rc = compare_groups(b, &mw, bytes);
    if (rc == HPROF_OK)
        rc = apply_merges(b);
    free(mw.groups);
    return rc;
}
