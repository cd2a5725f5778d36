/*
 * bitmaps_hash.c - the bitmap candidates' digests, without a pass where
 * they can be had (see bitmaps.h).
 *
 * Digests: a large buffer whose size no other candidate shares cannot have
 * a duplicate and is not hashed.  When passes 1-2 saw where every other
 * candidate's contents are (after its Bitmap, just before it or its
 * byte[][], or a byte array of 4 KiB or more), those over 12 KiB are told
 * apart by a fingerprint of three sampled blocks first, the ones that may
 * still have a twin are hashed on every core with pread() (nothing stays
 * mapped) or compared with the earliest of their bunch as it is hashed,
 * and the digest pass runs only if two may be equal and what else
 * refers to the copies is not known: passes 1-2 pin what refers to a known
 * candidate and put every other reference into a Bloom filter, which
 * mostly rules the rest out.  The candidates that could not be located
 * (in a dump straight from the JVM, a small buffer whose Bitmap comes long
 * after it) are hashed by the digest pass, and only they.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bitmaps_private.h"
#include "md5_lanes.h"

static size_t mark_unique_sizes(struct bitmaps *b)
{
    struct idmap sizes; /* count -> candidates of that count */
    size_t need = 0;
    if (idmap_init(&sizes, 1) != HPROF_OK)
        return b->n_cand;
    for (size_t i = 0; i < b->n_cand; i++) {
        const struct large_array *large = large_of(b, b->cand[i].id);
        uint64_t seen = 0;
        if (large != NULL) {
            idmap_get(&sizes, large->count, &seen);
            if (idmap_put(&sizes, large->count, seen + 1) != HPROF_OK) {
                idmap_free(&sizes);
                return b->n_cand;
            }
        }
    }
    for (size_t i = 0; i < b->n_cand; i++) {
        const struct large_array *large = large_of(b, b->cand[i].id);
        uint64_t seen = 0;
        b->cand[i].unique_size = large != NULL && idmap_get(&sizes, large->count, &seen) &&
                                 seen == 1;
        need += !b->cand[i].unique_size;
    }
    idmap_free(&sizes);
    return need;
}

/* Order candidates so that equal contents are adjacent, earliest first. */
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

/* ---- Hashing located candidates ----------------------------------------------------

 * A fingerprint of FP_BLOCKS blocks of FP_BLOCK bytes (the first, the middle
 * and the last) tells apart most same-length buffers for 12 KiB of reading
 * each: MD5 then runs only on those that still share type, length and
 * fingerprint with another.  Smaller buffers are hashed whole at once.
 * A fingerprint only ever rules a twin out; MD5 and the byte comparison
 * still decide every merge. */
#define FP_BLOCK (4u << 10)
#define FP_BLOCKS 3

static uint64_t mix64(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    }
    return h;
}

static int fingerprint(const struct bitmaps *b, struct candidate *c, uint8_t *buf)
{
    uint64_t at[FP_BLOCKS] = { 0, (c->bytes / 2) & ~(uint64_t)(FP_BLOCK - 1), c->bytes - FP_BLOCK };
    uint64_t h = c->bytes;
    for (unsigned i = 0; i < FP_BLOCKS; i++) {
        int rc = reader_pread_unmapped(b->ctx->reader, c->data_offset + at[i], buf, FP_BLOCK,
                                       b->ctx->err);
        if (rc != HPROF_OK)
            return rc;
        h = mix64(h, buf, FP_BLOCK);
    }
    c->fingerprint = h;
    return HPROF_OK;
}

static int compare_prints(const void *pa, const void *pb)
{
    const struct candidate *a = *(const struct candidate *const *)pa;
    const struct candidate *b = *(const struct candidate *const *)pb;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    if (a->count != b->count)
        return a->count < b->count ? -1 : 1;
    return a->fingerprint < b->fingerprint ? -1 : a->fingerprint > b->fingerprint;
}

/* Fingerprint every located candidate larger than the blocks and mark
 * those alone with their type, length and fingerprint (unique_print).
 * @return HPROF_OK or an error. */
static int fingerprint_candidates(struct bitmaps *b)
{
    struct hprof_shrink_stats *st = b->ctx->stats;
    struct candidate **by = malloc(b->n_cand * sizeof *by + 1);
    uint8_t *buf = malloc(FP_BLOCK);
    size_t n = 0;
    int rc = by != NULL && buf != NULL ? HPROF_OK : nomem(b);
    for (size_t i = 0; rc == HPROF_OK && i < b->n_cand; i++) {
        struct candidate *c = &b->cand[i];
        if (!c->located || c->unique_size || c->bytes <= (uint64_t)FP_BLOCKS * FP_BLOCK)
            continue;
        rc = fingerprint(b, c, buf);
        by[n++] = c;
        st->bitmap_fingerprinted++;
        st->bitmap_bytes_fingerprinted += (uint64_t)FP_BLOCKS * FP_BLOCK;
    }
    if (rc == HPROF_OK) {
        qsort(by, n, sizeof *by, compare_prints);
        for (size_t i = 0; i < n; i++)
            by[i]->unique_print = (i == 0 || compare_prints(&by[i - 1], &by[i]) != 0) &&
                                  (i + 1 == n || compare_prints(&by[i], &by[i + 1]) != 0);
    }
    free(buf);
    free(by);
    return rc;
}

unsigned threads_for(const struct bitmaps *b, uint64_t bytes, size_t most)
{
    uint64_t n = b->ctx->threads ? b->ctx->threads : 1;
    if (bytes / (4u << 20) + 1 < n)
        n = bytes / (4u << 20) + 1;
    if (most < n)
        n = most > 0 ? most : 1;
    return (unsigned)n;
}

void run_together(unsigned n, void *const *tasks, pool_run_fn run)
{
    struct hprof_error ignored;
    struct ordered_pool *p =
        n > 1 ? pool_new(n - 1, tasks + 1, n - 1, tasks + 1, run, &ignored) : NULL;
    for (unsigned i = 1; p != NULL && i < n; i++) {
        (void)pool_filling(p); /* a slot each: never NULL */
        pool_submit(p);
    }
    run(tasks[0], tasks[0]);
    for (unsigned i = 1; p != NULL && i < n; i++) {
        (void)pool_oldest(p);
        pool_release_oldest(p);
    }
    pool_free(p);
}

/* MD5 of located candidates on every core, many at once on each
 * (md5_lanes.h).  Reads go through pread(), so that no page of a mapped
 * input stays resident: hashing in the mapping and giving pages back
 * behind each lane still held pages, as the kernel maps the page cache's
 * large folios whole.
 *
 * The candidates that may be twins come in bunches of equal type, length
 * and fingerprint, and in a bunch most are usually copies of its first
 * (earliest in the file).  So a bunch's first is hashed, and as each of
 * its chunks is read, the same chunk of every other member (a peer) is
 * read and compared with it: a peer equal all through has the first's MD5
 * and is confirmed byte for byte, without MD5 running over it or the merge
 * reading it again.  Only the peers found different are hashed, after, in
 * a round of their own. */
struct peer {
    struct candidate *c;
    uint8_t differs;        /* found unequal to the first in some piece */
};

struct bunch {
    struct candidate *first; /* hashed in the round */
    struct peer *peers;     /* into hash_round.peers */
    size_t n_peers;
};

/* A piece of a bunch's first (see digest_pieces_begin()): an MD5 job,
 * tagged with the piece's index. */
struct piece {
    const struct bunch *bunch;
    uint64_t at;            /* into the first's contents */
    /* Per peer of the bunch: found unequal in this piece, so not read on.
     * Only the lane that views a piece looks at its own, so what is read
     * and counted does not depend on the threads' timing. */
    uint8_t *peer_differs;
};

struct hash_round {
    const struct bitmaps *b;
    struct bunch *bunches;
    size_t n_bunches;
    struct peer *peers;         /* every bunch's, bunch after bunch */
    int has_peers;              /* the round compares (its threads need a peer room) */
    struct piece *pieces;
    uint8_t *piece_flags;       /* every piece's peer_differs */
    atomic_uint_least64_t compared; /* bytes of peers read */
};

/* A thread's share of a round: it runs the queue, and reads peers' chunks
 * into a room of its own. */
#define PEER_ROOM (128u << 10)

struct hash_task {
    struct md5_queue *q;
    uint8_t *peer_room;
    int rc;
    struct hprof_error err;
};

/* Compare `len` bytes of `peer` at `at` into its contents with `chunk`;
 * *differs is set if they are not equal. */
static int compare_peer(struct hash_round *hr, const struct candidate *peer, uint64_t at,
                        const uint8_t *chunk, size_t len, uint8_t *room, uint8_t *differs,
                        struct hprof_error *err)
{
    for (size_t done = 0; done < len;) {
        size_t n = len - done < PEER_ROOM ? len - done : PEER_ROOM;
        int rc = reader_pread_unmapped(hr->b->ctx->reader, peer->data_offset + at + done, room,
                                       n, err);
        if (rc != HPROF_OK)
            return rc;
        atomic_fetch_add_explicit(&hr->compared, n, memory_order_relaxed);
        if (memcmp(chunk + done, room, n) != 0) {
            *differs = 1;
            break;
        }
        done += n;
    }
    return HPROF_OK;
}

/* The lanes' view: the chunk read, then compared with the same chunk of
 * each peer of its bunch that has not differed yet. */
static int view_and_compare(void *arg, void *thread, const struct md5_job *job, uint64_t offset,
                            size_t len, uint8_t *buf, const uint8_t **p, struct hprof_error *err)
{
    struct hash_round *hr = arg;
    struct hash_task *task = thread;
    const struct piece *pc = &hr->pieces[job->tag];
    const struct bunch *bn = pc->bunch;
    uint64_t at = offset - bn->first->data_offset; /* a view may be inside the piece */
    *p = buf;
    int rc = reader_pread_unmapped(hr->b->ctx->reader, offset, buf, len, err);
    for (size_t k = 0; rc == HPROF_OK && k < bn->n_peers; k++)
        if (!pc->peer_differs[k])
            rc = compare_peer(hr, bn->peers[k].c, at, buf, len, task->peer_room,
                              &pc->peer_differs[k], err);
    return rc;
}

static void hash_task_run(void *worker, void *job)
{
    struct hash_task *t = job;
    const struct hash_round *hr = t->q->source;
    (void)worker;
    if (hr->has_peers && (t->peer_room = malloc(PEER_ROOM)) == NULL) {
        t->rc = hprof_error_set(&t->err, HPROF_ERR_NOMEM, "out of memory");
        return;
    }
    t->rc = md5_queue_run(t->q, t, &t->err);
    free(t->peer_room);
    t->peer_room = NULL;
}

/* Run queue q on n threads (the caller one of them).  @return HPROF_OK or
 * the first task's error. */
static int hash_on_threads(struct bitmaps *b, struct md5_queue *q, unsigned n)
{
    struct hash_task *tasks = calloc(n, sizeof *tasks);
    void **task_of = calloc(n, sizeof *task_of);
    int rc = tasks && task_of ? HPROF_OK : nomem(b);
    for (unsigned i = 0; rc == HPROF_OK && i < n; i++) {
        tasks[i].q = q;
        task_of[i] = &tasks[i];
    }
    if (rc == HPROF_OK)
        run_together(n, task_of, hash_task_run);
    for (unsigned i = 0; rc == HPROF_OK && i < n; i++)
        if (tasks[i].rc != HPROF_OK)
            rc = hprof_error_set(b->ctx->err, tasks[i].rc, "%s", tasks[i].err.message);
    free(tasks);
    free(task_of);
    return rc;
}

static int by_tag(const void *pa, const void *pb)
{
    const struct md5_job *a = pa, *b = pb;
    return a->tag < b->tag ? -1 : a->tag > b->tag;
}

static int needs_hash(const struct candidate *c)
{
    return c->located && !c->digested && !c->unique_size && !c->unique_print;
}

/* A job and what it reads: its piece, and the same piece of each peer. */
struct costed_job {
    uint64_t cost;
    struct md5_job job;
};

/* Costliest first: the lanes then finish close together. */
static int costlier_first(const void *pa, const void *pb)
{
    const struct costed_job *a = pa, *b = pb;
    if (a->cost != b->cost)
        return a->cost > b->cost ? -1 : 1;
    return a->job.offset < b->job.offset ? -1 : a->job.offset > b->job.offset;
}

static void pieces_free(struct hash_round *hr)
{
    free(hr->pieces);
    free(hr->piece_flags);
    hr->pieces = NULL;
    hr->piece_flags = NULL;
}

/* Every bunch's first cut in pieces, bunch after bunch and each in order,
 * with its peer flags cleared.  @return how many, or SIZE_MAX when memory
 * is short. */
static size_t pieces_new(struct hash_round *hr)
{
    uint64_t n = 0, flags = 0;
    for (size_t i = 0; i < hr->n_bunches; i++) {
        uint64_t of_first = hr->bunches[i].first->bytes / DIGEST_PIECE + 1;
        n += of_first;
        flags += of_first * hr->bunches[i].n_peers;
    }
    if (n >= PTRDIFF_MAX / sizeof(struct costed_job) || flags >= PTRDIFF_MAX)
        return SIZE_MAX;
    hr->pieces = malloc((size_t)n * sizeof *hr->pieces + 1);
    hr->piece_flags = calloc((size_t)flags + 1, 1);
    if (hr->pieces == NULL || hr->piece_flags == NULL) {
        pieces_free(hr);
        return SIZE_MAX;
    }
    size_t at_piece = 0, at_flag = 0;
    for (size_t i = 0; i < hr->n_bunches; i++) {
        const struct bunch *bn = &hr->bunches[i];
        uint64_t at = 0;
        do {
            hr->pieces[at_piece++] = (struct piece){ bn, at, hr->piece_flags + at_flag };
            at_flag += bn->n_peers;
            at += DIGEST_PIECE;
        } while (at < bn->first->bytes);
    }
    return at_piece;
}

/* A job per piece (tagged with the piece's index), costliest first, or
 * NULL when memory is short; *cost the bytes they read in all. */
static struct md5_job *piece_jobs(struct hash_round *hr, size_t *n_jobs, uint64_t *cost)
{
    size_t n = pieces_new(hr);
    *n_jobs = 0;
    *cost = 0;
    if (n == SIZE_MAX)
        return NULL;
    struct costed_job *by_cost = malloc(n * sizeof *by_cost + 1);
    struct md5_job *jobs = malloc(n * sizeof *jobs + 1);
    if (by_cost == NULL || jobs == NULL) {
        free(by_cost);
        free(jobs);
        pieces_free(hr);
        return NULL;
    }
    for (size_t j = 0; j < n; j++) {
        const struct bunch *bn = hr->pieces[j].bunch;
        uint64_t at = hr->pieces[j].at;
        uint64_t len = bn->first->bytes - at < DIGEST_PIECE ? bn->first->bytes - at : DIGEST_PIECE;
        by_cost[j] = (struct costed_job){
            .cost = len * (1 + bn->n_peers),
            .job = { .offset = bn->first->data_offset + at, .bytes = len, .tag = j },
        };
        *cost += by_cost[j].cost;
    }
    qsort(by_cost, n, sizeof *by_cost, costlier_first);
    for (size_t j = 0; j < n; j++)
        jobs[j] = by_cost[j].job;
    free(by_cost);
    *n_jobs = n;
    return jobs;
}

/* The pieces' flags into each peer's: unequal in any piece, unequal. */
static void fold_piece_flags(struct hash_round *hr, size_t n_pieces)
{
    for (size_t j = 0; j < n_pieces; j++) {
        const struct piece *pc = &hr->pieces[j];
        for (size_t k = 0; k < pc->bunch->n_peers; k++)
            pc->bunch->peers[k].differs |= pc->peer_differs[k];
    }
}

/* Each bunch's first's key from its pieces' MD5s. */
static int join_pieces(struct bitmaps *b, const struct hash_round *hr, struct md5_job *jobs,
                       size_t n_jobs)
{
    qsort(jobs, n_jobs, sizeof *jobs, by_tag); /* bunch after bunch, each in order */
    for (size_t i = 0; i < n_jobs;) {
        const struct bunch *bn = hr->pieces[jobs[i].tag].bunch;
        int rc = digest_pieces_begin(b->digest, bn->first->bytes);
        for (; rc == HPROF_OK && i < n_jobs && hr->pieces[jobs[i].tag].bunch == bn; i++)
            rc = digest_pieces_add(b->digest, jobs[i].md5);
        if (rc == HPROF_OK)
            rc = digest_pieces_final(b->digest, bn->first->md5);
        if (rc != HPROF_OK)
            return rc;
        mark_hashed(b, bn->first);
    }
    return HPROF_OK;
}

/* Hash each bunch's first (comparing its peers as it is read), with up to
 * ctx->threads threads (the caller is one).  @return HPROF_OK or an error. */
static int hash_round_run(struct bitmaps *b, struct hash_round *hr)
{
    struct md5_queue q = { .view = view_and_compare, .source = hr };
    uint64_t cost;
    struct md5_job *jobs = piece_jobs(hr, &q.n_jobs, &cost);
    if (jobs == NULL)
        return nomem(b);
    q.jobs = jobs;
    atomic_init(&q.next, 0);
    /* Hashing alone, a thread is worth it for a lane-full of jobs; a job
     * that compares has its own work on any thread. */
    size_t most = hr->has_peers ? q.n_jobs : q.n_jobs / md5_queue_width(&q) + 1;
    int rc = hash_on_threads(b, &q, threads_for(b, cost, most));
    fold_piece_flags(hr, q.n_jobs);
    if (rc == HPROF_OK)
        rc = join_pieces(b, hr, jobs, q.n_jobs);
    pieces_free(hr);
    free(jobs);
    return rc;
}

/* Bunches: candidates that may have a twin, by type, length, fingerprint
 * and place. */
static int by_bunch(const void *pa, const void *pb)
{
    const struct candidate *a = *(const struct candidate *const *)pa;
    const struct candidate *b = *(const struct candidate *const *)pb;
    int c = compare_prints(pa, pb);
    if (c != 0)
        return c;
    return a->data_offset < b->data_offset ? -1 : a->data_offset > b->data_offset;
}

/* Sort the candidates that may have a twin into bunches: each bunch's
 * first (the earliest) to be hashed, the others its peers. */
static int form_bunches(struct bitmaps *b, struct hash_round *hr)
{
    struct candidate **by = malloc(b->n_cand * sizeof *by + 1);
    size_t n = 0, n_peers = 0;
    if (by == NULL)
        return nomem(b);
    for (size_t i = 0; i < b->n_cand; i++)
        if (needs_hash(&b->cand[i]))
            by[n++] = &b->cand[i];
    qsort(by, n, sizeof *by, by_bunch);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && compare_prints(&by[i - 1], &by[i]) == 0) {
            hr->peers[n_peers++] = (struct peer){ .c = by[i] };
            hr->bunches[hr->n_bunches - 1].n_peers++;
            hr->has_peers = 1;
        } else {
            hr->bunches[hr->n_bunches++] =
                (struct bunch){ .first = by[i], .peers = &hr->peers[n_peers] };
        }
    }
    free(by);
    return HPROF_OK;
}

/* After the firsts are hashed: a peer equal to its first takes its key and
 * is confirmed (equal_to); each of the others becomes a bunch of its own,
 * to be hashed in the next round (*more says whether there is one). */
static void settle_peers(struct bitmaps *b, struct hash_round *hr, struct bunch *next, int *more)
{
    size_t n_next = 0;
    for (size_t i = 0; i < hr->n_bunches; i++) {
        const struct bunch *bn = &hr->bunches[i];
        for (size_t k = 0; k < bn->n_peers; k++) {
            struct candidate *c = bn->peers[k].c;
            if (bn->peers[k].differs) {
                next[n_next++] = (struct bunch){ .first = c };
                continue;
            }
            memcpy(c->md5, bn->first->md5, sizeof c->md5);
            c->digested = 1;
            c->equal_to = bn->first->data_offset;
            b->ctx->stats->bitmap_digested++;
        }
    }
    memcpy(hr->bunches, next, n_next * sizeof *next);
    hr->n_bunches = n_next;
    hr->has_peers = 0; /* the next round compares nothing */
    *more = n_next > 0;
}

/* Hash the located candidates that may have a twin: each bunch's first,
 * its peers compared with it as it is read, then the peers that differ.
 * @return HPROF_OK or an error. */
static int hash_candidates(struct bitmaps *b)
{
    struct hash_round hr = { .b = b };
    hr.bunches = malloc((b->n_cand + 1) * sizeof *hr.bunches);
    hr.peers = malloc((b->n_cand + 1) * sizeof *hr.peers);
    struct bunch *next = malloc((b->n_cand + 1) * sizeof *next);
    atomic_init(&hr.compared, 0);
    int more = 0;
    int rc = hr.bunches && hr.peers && next ? form_bunches(b, &hr) : nomem(b);
    if (rc == HPROF_OK)
        rc = hash_round_run(b, &hr);
    if (rc == HPROF_OK)
        settle_peers(b, &hr, next, &more);
    if (rc == HPROF_OK && more)
        rc = hash_round_run(b, &hr);
    b->ctx->stats->bitmap_bytes_compared += atomic_load(&hr.compared);
    free(hr.bunches);
    free(hr.peers);
    free(next);
    return rc;
}

/* Candidates whose arrays came before their Bitmap in pass 2 are located
 * from pass 1 when large; the located ones are fingerprinted and those
 * that may still have a twin hashed, without a pass.  *all_located says
 * whether every candidate that needs a digest was; the digest pass hashes
 * the others (a small buffer whose Bitmap comes long after it, in a dump
 * straight from the JVM), and bitmaps_digest_finish() what they may equal. */
static int digest_located(struct bitmaps *b, int *all_located)
{
    size_t unlocated = 0;
    for (size_t i = 0; i < b->n_cand; i++) {
        struct candidate *c = &b->cand[i];
        const struct large_array *large = c->located ? NULL : large_of(b, c->id);
        if (large != NULL)
            locate(c, HPROF_TYPE_BYTE, (uint32_t)large->count, large->count, large->data_offset);
        unlocated += !c->unique_size && !c->located;
    }
    *all_located = unlocated == 0;
    int rc = fingerprint_candidates(b);
    return rc == HPROF_OK ? hash_candidates(b) : rc;
}

/* A candidate's type and length as one key (never 0, idmap's empty slot:
 * no type is 0). */
static uint64_t size_key(const struct candidate *c)
{
    return (uint64_t)c->count << 8 | c->type;
}

int bitmaps_digest_finish(struct bitmaps *b)
{
    struct idmap sizes; /* of the candidates the digest pass hashed */
    size_t twins = 0;
    if (idmap_init(&sizes, 0) != HPROF_OK)
        return nomem(b);
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && i < b->n_cand; i++)
        if (!b->cand[i].located && b->cand[i].digested)
            rc = idmap_put(&sizes, size_key(&b->cand[i]), 0);
    for (size_t i = 0; rc == HPROF_OK && i < b->n_cand; i++) {
        struct candidate *c = &b->cand[i];
        if (c->located && !c->digested && idmap_has(&sizes, size_key(c))) {
            c->unique_size = c->unique_print = 0; /* unique only among the located */
            twins++;
        }
    }
    idmap_free(&sizes);
    if (rc != HPROF_OK)
        return nomem(b);
    return twins > 0 ? hash_candidates(b) : HPROF_OK;
}

/* The candidates in merge order (equal contents adjacent), as a copy the
 * caller frees; NULL when memory is short. */
static struct candidate *sorted_candidates(const struct bitmaps *b)
{
    struct candidate *sorted = malloc(b->n_cand * sizeof *sorted);
    if (sorted != NULL) {
        memcpy(sorted, b->cand, b->n_cand * sizeof *sorted);
        qsort(sorted, b->n_cand, sizeof *sorted, compare_candidates);
    }
    return sorted;
}

/* Do two digested candidates share type, length and MD5? */
static int may_share_contents(const struct bitmaps *b)
{
    struct candidate *sorted = sorted_candidates(b);
    if (sorted == NULL)
        return 1; /* the digest pass and the merge decide, as they would anyway */
    int shared = 0;
    for (size_t i = 1; i < b->n_cand && !shared; i++)
        shared = same_key(&sorted[i - 1], &sorted[i]);
    free(sorted);
    return shared;
}

/* Can passes 1-2 vouch that nothing but a bitmap slot refers to any buffer
 * that may merge into another (every member of a group of equal type,
 * length and MD5 but its earliest)?  Then the digest pass has no pin to
 * find. */
static int pins_ruled_out(struct bitmaps *b)
{
    if (b->refs_seen.words == NULL || b->refs_incomplete || b->byte_arrays_overflow)
        return 0;
    struct candidate *sorted = sorted_candidates(b);
    struct idmap copies;
    if (sorted == NULL || idmap_init(&copies, 0) != HPROF_OK) {
        free(sorted);
        return 0;
    }
    int ruled_out = 1;
    for (size_t i = 1; ruled_out && i < b->n_cand; i++)
        if (same_key(&sorted[i - 1], &sorted[i]))
            ruled_out = !idfilter_maybe(&b->refs_seen, sorted[i].id) &&
                        idmap_put(&copies, sorted[i].id, 0) == HPROF_OK;
    /* an element of a byte[][] other than DumpData.buffers is a pin */
    for (size_t i = 0; ruled_out && i < b->n_byte_arrays; i++) {
        const struct byte_array_element *e = &b->byte_arrays[i];
        if (idmap_has(&copies, e->element) && !idmap_has(&b->dump_buffers, e->array))
            ruled_out = idmap_put(&b->pinned, e->element, 0) == HPROF_OK;
    }
    idmap_free(&copies);
    free(sorted);
    return ruled_out;
}

int bitmaps_digest_located(struct bitmaps *b, int *digest_pass, int *merge)
{
    *digest_pass = *merge = 0;
    b->ctx->stats->bitmap_candidates = b->n_cand;
    if (mark_unique_sizes(b) == 0)
        return HPROF_OK;
    int all_located = 0;
    b->digest = digest_new(b->ctx->err);
    int rc = b->digest ? digest_located(b, &all_located) : b->ctx->err->code;
    /* the digest pass hashes what could not be located, and finds the pins
     * when some contents may be shared (unless passes 1-2 rule them out);
     * otherwise there is nothing to merge */
    if (rc == HPROF_OK && (!all_located || may_share_contents(b))) {
        *merge = 1;
        *digest_pass = !all_located || !pins_ruled_out(b);
    }
    return rc;
}

