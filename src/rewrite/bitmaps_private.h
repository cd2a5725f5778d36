/*
 * bitmaps_private.h - what the bitmap rewrite's files share: bitmaps.c
 * finds the candidates and applies the decisions, bitmaps_hash.c hashes
 * them (and orders them by key), bitmaps_merge.c decides which merge.
 */
#ifndef HPROF_REWRITE_BITMAPS_PRIVATE_H
#define HPROF_REWRITE_BITMAPS_PRIVATE_H

#include "bitmaps.h"
#include "pool.h"

/* Bytes read at once to compare two buffers. */
#define COMPARE_BUFFER (1u << 20)

static inline int nomem(const struct bitmaps *b)
{
    return rewrite_nomem(b->ctx);
}

/* Where large byte array `id` is, if pass 1 remembered it, or NULL. */
const struct large_array *large_of(const struct bitmaps *b, uint64_t id);
/* The candidate of buffer `id`, or NULL. */
struct candidate *candidate_of(const struct bitmaps *b, uint64_t id);
/* Where candidate `c`'s contents are, learnt before the digest pass. */
void locate(struct candidate *c, uint8_t type, uint32_t count, uint64_t bytes,
            uint64_t data_offset);
/* Candidate `c` has its key (by the digest pass or the lanes): counted. */
void mark_hashed(struct bitmaps *b, struct candidate *c);

/* Merge order: equal contents adjacent, earliest first (a qsort order). */
int compare_candidates(const void *pa, const void *pb);
/* Do two candidates share type, length and MD5 (both digested)? */
int same_key(const struct candidate *a, const struct candidate *b);

/* How many threads (the caller one of them) for a step that reads `bytes`:
 * up to ctx->threads, one for at least every 4 MiB (starting one costs
 * more), and at most `most` (what there is to share out). */
unsigned threads_for(const struct bitmaps *b, uint64_t bytes, size_t most);
/* Runs run(tasks[i], tasks[i]) for every i < n at once: tasks[0] on the
 * caller, the others on pool workers.  Each task reports its own result.
 * When no worker can start, the caller runs tasks[0] alone: the tasks
 * share one queue of work, so its share is then all of it. */
void run_together(unsigned n, void *const *tasks, pool_run_fn run);

#endif
