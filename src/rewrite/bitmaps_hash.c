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
#include <pthread.h>
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
        uint64_t count, seen = 0;
        if (idmap_get(&b->large, b->cand[i].id, &count)) {
            idmap_get(&sizes, count, &seen);
            if (idmap_put(&sizes, count, seen + 1) != HPROF_OK) {
                idmap_free(&sizes);
                return b->n_cand;
            }
        }
    }
    for (size_t i = 0; i < b->n_cand; i++) {
        uint64_t count, seen = 0;
        b->cand[i].unique_size = idmap_get(&b->large, b->cand[i].id, &count) &&
                                 idmap_get(&sizes, count, &seen) && seen == 1;
        need += !b->cand[i].unique_size;
    }
    idmap_free(&sizes);
    return need;
}

/* Order candidates so that equal contents are adjacent, earliest first. */
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

/* MD5 of located candidates on every core, many at once on each
 * (md5_lanes.h).  Reads go through pread(), so that no page of a mapped
 * input stays resident (a 2 GB dump's hashing held 585 MB): hashing in
 * the mapping and giving pages back behind each lane still held 60-100 MB,
 * as the kernel maps the page cache's large folios whole.
 *
 * The candidates that may be twins come in bunches of equal type, length
 * and fingerprint, and in a bunch most are usually copies of its first
 * (earliest in the file).  So a bunch's first is hashed, and as each of
 * its chunks is read, the same chunk of every other member is read and
 * compared with it: a member equal all through has the first's MD5 and is
 * confirmed byte for byte, without MD5 running over it or the merge
 * reading it again.  Only the members found different are hashed, after.
 * (Hashing every member, then comparing each group, read every copy twice
 * and ran MD5 over it: 861 MB hashed and 550 MB compared on the 2 GB
 * bitmap bench dump, against 492 MB hashed and every byte read once.) */
struct bunch {
    size_t first_peer;      /* into hash_round.peers */
    size_t n_peers;         /* the other members (0: none, or not a first) */
};

struct hash_round {
    const struct bitmaps *b;
    struct bunch *bunch;        /* per candidate: its peers, if a bunch's first */
    size_t *peers;              /* candidate indexes by bunch, each first before its peers */
    uint8_t *differs;           /* per candidate: a peer found unequal to its first */
    uint8_t *hash_now;          /* per candidate: hashed in the round under way */
    int has_peers;              /* the round compares (its threads need a peer room) */
    /* Per job (a piece), per peer of its buffer: found unequal in the piece,
     * so not read on.  Only the lane that views a piece looks at its own,
     * so what is read and counted does not depend on the threads' timing. */
    const struct md5_job *jobs;
    size_t *piece_base;         /* per job: where its flags start */
    uint8_t *piece_differs;
    atomic_uint_least64_t compared; /* bytes of peers read */
};

struct hash_worker {
    struct md5_queue *q;
    pthread_t thread;
    int started, rc;
    struct hprof_error err;
};

/* Where a hashing thread reads a peer's chunk.  The lanes' views run on
 * the thread that runs the queue, so each thread has its own, which
 * hash_main() allocates before the queue runs and frees after. */
#define PEER_ROOM (128u << 10)
static _Thread_local uint8_t *peer_room;

/* Compare `len` bytes of `peer` at `at` into its contents with `chunk`;
 * *differs is set if they are not equal. */
static int compare_peer(struct hash_round *hr, size_t peer, uint64_t at, const uint8_t *chunk,
                        size_t len, uint8_t *differs, struct hprof_error *err)
{
    const struct candidate *c = &hr->b->cand[peer];
    for (size_t done = 0; done < len;) {
        size_t n = len - done < PEER_ROOM ? len - done : PEER_ROOM;
        int rc = reader_pread_unmapped(hr->b->ctx->reader, c->data_offset + at + done, peer_room,
                                       n, err);
        if (rc != HPROF_OK)
            return rc;
        atomic_fetch_add_explicit(&hr->compared, n, memory_order_relaxed);
        if (memcmp(chunk + done, peer_room, n) != 0) {
            *differs = 1;
            break;
        }
        done += n;
    }
    return HPROF_OK;
}

/* The lanes' view: the chunk read, then compared with the same chunk of
 * each peer of its buffer that has not differed yet. */
static int view_and_compare(void *arg, const struct md5_job *job, uint64_t offset, size_t len,
                            uint8_t *buf, const uint8_t **p, struct hprof_error *err)
{
    struct hash_round *hr = arg;
    const struct bunch *bn = &hr->bunch[job->tag];
    uint8_t *differs = hr->piece_differs + hr->piece_base[job - hr->jobs];
    uint64_t at = offset - hr->b->cand[job->tag].data_offset;
    *p = buf;
    int rc = reader_pread_unmapped(hr->b->ctx->reader, offset, buf, len, err);
    for (size_t k = 0; rc == HPROF_OK && k < bn->n_peers; k++)
        if (!differs[k])
            rc = compare_peer(hr, hr->peers[bn->first_peer + k], at, buf, len, &differs[k], err);
    return rc;
}

static void *hash_main(void *arg)
{
    struct hash_worker *w = arg;
    const struct hash_round *hr = w->q->source;
    if (hr->has_peers && (peer_room = malloc(PEER_ROOM)) == NULL) {
        w->rc = hprof_error_set(&w->err, HPROF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    w->rc = md5_queue_run(w->q, &w->err);
    free(peer_room);
    peer_room = NULL;
    return NULL;
}

/* A candidate's pieces together, in order. */
static int by_candidate(const void *pa, const void *pb)
{
    const struct md5_job *a = pa, *b = pb;
    if (a->tag != b->tag)
        return a->tag < b->tag ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
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

/* The candidates hr->hash_now names as jobs of a piece each (see
 * digest_pieces_begin()), costliest first, or NULL when memory is short;
 * *cost the bytes they read in all. */
static struct md5_job *piece_jobs(const struct hash_round *hr, size_t *n_jobs, uint64_t *cost)
{
    const struct bitmaps *b = hr->b;
    uint64_t n = 0;
    for (size_t i = 0; i < b->n_cand; i++)
        n += hr->hash_now[i] ? b->cand[i].bytes / DIGEST_PIECE + 1 : 0;
    *n_jobs = 0;
    if (n >= PTRDIFF_MAX / sizeof(struct costed_job))
        return NULL;
    struct costed_job *by_cost = malloc((size_t)n * sizeof *by_cost + 1);
    struct md5_job *jobs = malloc((size_t)n * sizeof *jobs + 1);
    *cost = 0;
    for (size_t i = 0; by_cost != NULL && jobs != NULL && i < b->n_cand; i++) {
        const struct candidate *c = &b->cand[i];
        uint64_t at = 0;
        if (hr->hash_now[i])
            do {
                uint64_t len = c->bytes - at < DIGEST_PIECE ? c->bytes - at : DIGEST_PIECE;
                by_cost[*n_jobs] = (struct costed_job){
                    .cost = len * (1 + hr->bunch[i].n_peers),
                    .job = { .offset = c->data_offset + at, .bytes = len, .tag = i },
                };
                *cost += by_cost[(*n_jobs)++].cost;
                at += len;
            } while (at < c->bytes);
    }
    if (by_cost != NULL && jobs != NULL) {
        qsort(by_cost, *n_jobs, sizeof *by_cost, costlier_first);
        for (size_t j = 0; j < *n_jobs; j++)
            jobs[j] = by_cost[j].job;
    } else {
        free(jobs);
        jobs = NULL;
    }
    free(by_cost);
    return jobs;
}

/* Each job's flags for the peers of its buffer, cleared.  @return
 * HPROF_OK or an error. */
static int piece_flags_new(struct hash_round *hr, const struct md5_job *jobs, size_t n_jobs)
{
    size_t flags = 0;
    hr->jobs = jobs;
    hr->piece_base = malloc((n_jobs + 1) * sizeof *hr->piece_base);
    for (size_t j = 0; hr->piece_base != NULL && j < n_jobs; j++) {
        hr->piece_base[j] = flags;
        flags += hr->bunch[jobs[j].tag].n_peers;
    }
    hr->piece_differs = calloc(flags + 1, 1);
    return hr->piece_base && hr->piece_differs ? HPROF_OK : nomem(hr->b);
}

/* The pieces' flags into each peer's: unequal in any piece, unequal. */
static void piece_flags_free(struct hash_round *hr, size_t n_jobs)
{
    for (size_t j = 0; hr->piece_differs != NULL && hr->piece_base != NULL && j < n_jobs; j++) {
        const struct bunch *bn = &hr->bunch[hr->jobs[j].tag];
        for (size_t k = 0; k < bn->n_peers; k++)
            hr->differs[hr->peers[bn->first_peer + k]] |= hr->piece_differs[hr->piece_base[j] + k];
    }
    free(hr->piece_base);
    free(hr->piece_differs);
    hr->jobs = NULL;
    hr->piece_base = NULL;
    hr->piece_differs = NULL;
}

/* Each hashed candidate's key from its pieces' MD5s. */
static int join_pieces(struct bitmaps *b, struct md5_job *jobs, size_t n_jobs)
{
    qsort(jobs, n_jobs, sizeof *jobs, by_candidate);
    for (size_t i = 0; i < n_jobs;) {
        size_t tag = jobs[i].tag;
        struct candidate *c = &b->cand[tag];
        int rc = digest_pieces_begin(b->digest, c->bytes);
        for (; rc == HPROF_OK && i < n_jobs && jobs[i].tag == tag; i++)
            rc = digest_pieces_add(b->digest, jobs[i].md5);
        if (rc == HPROF_OK)
            rc = digest_pieces_final(b->digest, c->md5);
        if (rc != HPROF_OK)
            return rc;
        mark_hashed(b, c);
    }
    return HPROF_OK;
}

/* Hash the candidates hr->hash_now names (comparing the peers of those
 * that are a bunch's first), with up to ctx->threads threads (the caller
 * is one).  @return HPROF_OK or an error. */
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
    unsigned n = threads_for(b, cost, most);
    struct hash_worker *w = calloc(n, sizeof *w);
    int rc = w != NULL ? piece_flags_new(hr, jobs, q.n_jobs) : nomem(b);
    for (unsigned i = 0; rc == HPROF_OK && i < n; i++) {
        w[i].q = &q;
        w[i].started = i > 0 && pthread_create(&w[i].thread, NULL, hash_main, &w[i]) == 0;
    }
    if (rc == HPROF_OK)
        hash_main(&w[0]); /* the caller hashes too; unstarted threads' share falls to it */
    for (unsigned i = 0; w != NULL && i < n; i++) { /* every thread, even after an error */
        if (w[i].started)
            pthread_join(w[i].thread, NULL);
        if (w[i].rc != HPROF_OK && rc == HPROF_OK)
            rc = hprof_error_set(b->ctx->err, w[i].rc, "%s", w[i].err.message);
    }
    piece_flags_free(hr, q.n_jobs); /* before join_pieces() reorders the jobs */
    if (rc == HPROF_OK)
        rc = join_pieces(b, jobs, q.n_jobs);
    free(w);
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
 * first is to be hashed now (hash_now), its other members are its peers. */
static int form_bunches(struct bitmaps *b, struct hash_round *hr)
{
    struct candidate **by = malloc(b->n_cand * sizeof *by + 1);
    size_t n = 0;
    if (by == NULL)
        return nomem(b);
    for (size_t i = 0; i < b->n_cand; i++)
        if (needs_hash(&b->cand[i]))
            by[n++] = &b->cand[i];
    qsort(by, n, sizeof *by, by_bunch);
    for (size_t i = 0, first = 0; i < n; i++) {
        size_t at = (size_t)(by[i] - b->cand);
        hr->peers[i] = at;
        if (i > 0 && compare_prints(&by[i - 1], &by[i]) == 0) {
            hr->bunch[first].n_peers++;
            hr->has_peers = 1;
        } else {
            first = at;
            hr->bunch[first].first_peer = i + 1;
            hr->hash_now[first] = 1;
        }
    }
    free(by);
    return HPROF_OK;
}

/* After the firsts are hashed: a peer equal to its first takes its key and
 * is confirmed (equal_to); the others are to be hashed next (hash_now).
 * @return whether any is. */
static int settle_peers(struct bitmaps *b, struct hash_round *hr)
{
    int more = 0;
    memset(hr->hash_now, 0, b->n_cand);
    for (size_t f = 0; f < b->n_cand; f++) {
        struct bunch *bn = &hr->bunch[f];
        for (size_t k = 0; k < bn->n_peers; k++) {
            size_t peer = hr->peers[bn->first_peer + k];
            struct candidate *c = &b->cand[peer];
            if (hr->differs[peer]) {
                hr->hash_now[peer] = 1;
                more = 1;
                continue;
            }
            memcpy(c->md5, b->cand[f].md5, sizeof c->md5);
            c->digested = 1;
            c->equal_to = b->cand[f].data_offset;
            b->ctx->stats->bitmap_digested++;
        }
        bn->n_peers = 0; /* the next round compares nothing */
    }
    hr->has_peers = 0;
    return more;
}

/* Hash the located candidates that may have a twin: each bunch's first,
 * its peers compared with it as it is read, then the peers that differ.
 * @return HPROF_OK or an error. */
static int hash_candidates(struct bitmaps *b)
{
    struct hash_round hr = { .b = b };
    hr.bunch = calloc(b->n_cand + 1, sizeof *hr.bunch);
    hr.peers = malloc((b->n_cand + 1) * sizeof *hr.peers);
    hr.differs = calloc(b->n_cand + 1, sizeof *hr.differs);
    hr.hash_now = calloc(b->n_cand + 1, 1);
    atomic_init(&hr.compared, 0);
    int rc = hr.bunch && hr.peers && hr.differs && hr.hash_now ? form_bunches(b, &hr) : nomem(b);
    if (rc == HPROF_OK)
        rc = hash_round_run(b, &hr);
    if (rc == HPROF_OK && settle_peers(b, &hr))
        rc = hash_round_run(b, &hr);
    b->ctx->stats->bitmap_bytes_compared += atomic_load(&hr.compared);
    free(hr.bunch);
    free(hr.peers);
    free(hr.differs);
    free(hr.hash_now);
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
        uint64_t count, at;
        if (!c->located && idmap_get(&b->large, c->id, &count) &&
            idmap_get(&b->large_at, c->id, &at))
            locate(c, HPROF_TYPE_BYTE, (uint32_t)count, count, at);
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
    for (size_t i = 0; ruled_out && i < b->n_byte_arrays; i += 2)
        if (idmap_has(&copies, b->byte_arrays[i + 1]) &&
            !idmap_has(&b->dump_buffers, b->byte_arrays[i]))
            ruled_out = idmap_put(&b->pinned, b->byte_arrays[i + 1], 0) == HPROF_OK;
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

