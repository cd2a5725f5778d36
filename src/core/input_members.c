/*
 * input_members.c - inflating a gzip input of many members on every core.
 *
 * A gzip input of many members, as jcmd -gz and our -z write them (one per
 * MiB), is inflated on every core into the same copy, with the same errors
 * at the same offsets, as zlib streaming it would give.  A pipe is read
 * through a tape (input_stream.c) that keeps its bytes from the last true
 * member boundary on, so that it is read by offset as a file is.
 * Where a member ends is known only once it is inflated, so the calling
 * thread scans the compressed bytes for what looks like a member header and
 * makes each stretch from one such candidate to the next a job: a worker
 * inflates it whole (libdeflate, or zlib in a build without it) into a
 * buffer the size the 4 bytes before the next candidate give (ISIZE, the
 * trailer of the member if the candidate is right).  The calling thread
 * takes jobs back strictly in order and keeps one only if it starts where
 * the previous member truly ended and it inflated one whole member (CRC and
 * ISIZE checked); a job that starts before that point began inside a
 * member's data and is dropped.  Where no job fits (a member over
 * MEMBER_CAP, a header with FHCRC, a header the scan missed, a corrupt or
 * cut member, what follows the last member) zlib inflates one member on the
 * spot from the true boundary with the code that serves pipes, so every
 * error is found by that code at the offset it reports for a pipe.  Jobs in
 * flight are few (JOBS_PER_WORKER per worker, a single one until the magic
 * is checked) and their buffers bounded in all (the budget), so that the
 * checks above stop a bomb after a few members, whatever the file's size.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#ifdef HPROF_WITH_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "input_spool.h"
#include "pool.h"

/* A member a job may inflate: bigger ones are streamed by zlib on the spot
 * (jcmd and our -z write 1 MiB, bgzip 64 KiB; gzip(1) one member). */
#define MEMBER_CAP (8u << 20)
/* The compressed bytes a job may hold: MEMBER_CAP of incompressible data
 * (stored blocks add 5 bytes per 64 KiB) and a header with extra fields. */
#define EXTENT_CAP (MEMBER_CAP + (MEMBER_CAP >> 6) + (64u << 10))
#define JOB_MAX ((uint64_t)EXTENT_CAP + MEMBER_CAP)
/* Jobs in flight per worker, and the buffers each may keep for the budget:
 * a 1 MiB member and its compressed bytes, with room to spare. */
#define JOBS_PER_WORKER 4
#define JOB_TYPICAL (3u << 20)
/* A header (10), an empty block (2) and a trailer (8). */
#define MIN_MEMBER 20
#define FHCRC 0x02
#define FIRST_GUESS (256u << 10)
/* A job costs a read of at least a page and a few hand-overs between
 * threads, more than inflating a member of a few KiB: after a run of
 * SMALL_RUN members under SMALL_MEMBER compressed bytes, the rest of the
 * file is streamed by zlib on the calling thread, as from a pipe. */
#define SMALL_MEMBER (16u << 10)
#define SMALL_RUN 64

/* A candidate member: the compressed bytes from a header found by the scan
 * up to the next (or the end), and what a worker made of them. */
struct member_job {
    uint64_t start;             /* offset of the header in the file */
    uint8_t *in, *out;
    size_t in_len, in_cap, out_cap;
    uint32_t isize;             /* the size the trailer before the next header says */
    int speculate;              /* 0: left to zlib (too big, FHCRC, no header) */
    int busy;                   /* filled and not yet taken back (calling thread's) */
    /* Set by the worker: */
    int ok;                     /* one whole member inflated, CRC and size right */
    size_t in_used, out_len;
};

/* What a worker inflates with. */
struct inflater {
#ifdef HPROF_WITH_LIBDEFLATE
    struct libdeflate_decompressor *d;
#else
    z_stream z;
    int ready;
#endif
};

struct par {
    struct spool *s;
    uint64_t pos;               /* where the next member truly starts */
    uint64_t next_fill;         /* where the next job starts */
    int fill_more;              /* 0: no candidate left before `pos` catches up */
    int done;
    size_t guess;               /* compressed bytes to read for the next job */
    struct member_job *jobs;
    unsigned n_jobs;
    struct inflater *inflaters;
    unsigned n_inflaters;
    struct ordered_pool *pool;
    uint64_t held, budget;      /* bytes of job buffers allocated, and the most */
    unsigned small_run;         /* members in a row under SMALL_MEMBER bytes */
};

static int inflater_init(struct inflater *w)
{
#ifdef HPROF_WITH_LIBDEFLATE
    return (w->d = libdeflate_alloc_decompressor()) != NULL;
#else
    w->ready = inflateInit2(&w->z, 15 + 16) == Z_OK;
    return w->ready;
#endif
}

static void inflater_free(struct inflater *w)
{
#ifdef HPROF_WITH_LIBDEFLATE
    if (w->d != NULL)
        libdeflate_free_decompressor(w->d);
#else
    if (w->ready)
        inflateEnd(&w->z);
#endif
}

/* Inflate one job: one whole member from the start of its bytes, or
 * nothing.  Runs in a worker, or on the calling thread without workers. */
static void inflate_job(void *worker, void *job)
{
    struct inflater *w = worker;
    struct member_job *j = job;
    j->ok = 0;
    if (!j->speculate)
        return;
#ifdef HPROF_WITH_LIBDEFLATE
    j->ok = libdeflate_gzip_decompress_ex(w->d, j->in, j->in_len, j->out, j->isize, &j->in_used,
                                          &j->out_len) == LIBDEFLATE_SUCCESS;
#else
    if (inflateReset(&w->z) != Z_OK)
        return;
    w->z.next_in = j->in;
    w->z.avail_in = (uInt)j->in_len;
    w->z.next_out = j->out;
    w->z.avail_out = j->isize;
    if (inflate(&w->z, Z_FINISH) == Z_STREAM_END) {
        j->ok = 1;
        j->in_used = j->in_len - w->z.avail_in;
        j->out_len = j->isize - w->z.avail_out;
    }
#endif
}

/* What zlib takes for the start of a member: ID1, ID2, CM 8 (deflate) and
 * no reserved flag (zlib refuses any).  p has 4 bytes. */
static int member_header(const uint8_t *p)
{
    return p[0] == 0x1f && p[1] == 0x8b && p[2] == 8 && (p[3] & 0xe0) == 0;
}

/* The first member header in buf[from, len) with its 10 bytes in buf.
 * @return its index, or len if none. */
static size_t find_header(const uint8_t *buf, size_t from, size_t len)
{
    if (len < 10)
        return len;
    size_t last = len - 10;
    while (from <= last) {
        const uint8_t *hit = memchr(buf + from, 0x1f, last - from + 1);
        if (hit == NULL)
            break;
        if (member_header(hit))
            return (size_t)(hit - buf);
        from = (size_t)(hit - buf) + 1;
    }
    return len;
}

/* Room for `need` bytes in a job's buffer, within the budget's count. */
static int reserve(struct par *p, uint8_t **buf, size_t *cap, size_t need,
                   struct hprof_error *err)
{
    if (need <= *cap)
        return HPROF_OK;
    size_t grown = (need + 0xffff) & ~(size_t)0xffff;
    uint8_t *b = realloc(*buf, grown);
    if (b == NULL)
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
    p->held += grown - *cap;
    if (p->held > p->s->stats->buffers_peak)
        p->s->stats->buffers_peak = p->held;
    *buf = b;
    *cap = grown;
    return HPROF_OK;
}

/* Free the buffers of the jobs not in flight, but `keep`'s. */
static void drop_idle(struct par *p, const struct member_job *keep)
{
    for (unsigned i = 0; i < p->n_jobs; i++) {
        struct member_job *j = &p->jobs[i];
        if (j == keep || j->busy)
            continue;
        p->held -= j->in_cap + j->out_cap;
        free(j->in);
        free(j->out);
        j->in = j->out = NULL;
        j->in_cap = j->out_cap = 0;
    }
}

/* Whether `j` may be filled now: its buffers, grown to the most a job may
 * take, fit the budget beside every other job's.  Idle jobs give theirs
 * up when they do not; with no job in flight, that always makes room. */
static int room_for(struct par *p, struct member_job *j)
{
    uint64_t own = j->in_cap + j->out_cap;
    if (p->held - own + JOB_MAX <= p->budget)
        return 1;
    drop_idle(p, j);
    return p->held - own + JOB_MAX <= p->budget;
}

/* Read the bytes of the job at p->next_fill up to the next member header,
 * the end of the file or EXTENT_CAP, and decide whether a worker may
 * inflate them. */
static int fill(struct par *p, struct member_job *j, struct hprof_error *err)
{
    size_t want = p->guess, searched = MIN_MEMBER, next = 0;
    int found = 0, at_end = 0, rc;
    j->start = p->next_fill;
    j->in_len = 0;
    j->speculate = j->ok = 0;
    j->busy = 1;
    for (;;) {
        if (want > EXTENT_CAP)
            want = EXTENT_CAP;
        if ((rc = reserve(p, &j->in, &j->in_cap, want, err)) != HPROF_OK)
            return rc;
        while (j->in_len < want) {
            ssize_t n = spool_read_in(p->s, j->in + j->in_len, want - j->in_len,
                                      j->start + j->in_len);
            if (n < 0)
                return hprof_error_set(err, HPROF_ERR_IO, "offset 0x%" PRIx64 ": read: %s",
                                       j->start + j->in_len, strerror(errno));
            if (n == 0) {
                at_end = 1;
                break;
            }
            j->in_len += (size_t)n;
        }
        next = find_header(j->in, searched, j->in_len);
        if (next < j->in_len) {
            found = 1;
            break;
        }
        if (j->in_len >= 10 && j->in_len - 9 > searched)
            searched = j->in_len - 9;
        if (at_end || j->in_len >= EXTENT_CAP)
            break;
        want = 2 * j->in_len;
    }
    if (found) {
        j->in_len = next;
        p->next_fill = j->start + next;
        p->guess = next + next / 8 + 4096;
    } else if (at_end) {
        p->next_fill = j->start + j->in_len;
        p->fill_more = 0;
    } else { /* no header within EXTENT_CAP: zlib will stream this member */
        p->fill_more = 0;
        return HPROF_OK;
    }
    if (j->in_len < MIN_MEMBER || !member_header(j->in) || (j->in[3] & FHCRC))
        return HPROF_OK; /* zlib checks a header's CRC; libdeflate skips it */
    const uint8_t *t = j->in + j->in_len - 4;
    j->isize = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
    if (j->isize > MEMBER_CAP)
        return HPROF_OK;
    if ((rc = reserve(p, &j->out, &j->out_cap, j->isize ? j->isize : 1, err)) != HPROF_OK)
        return rc;
    j->speculate = 1;
    return HPROF_OK;
}

/* Fill and submit the next job if there is one to fill and room in flight.
 * Until the magic is checked, one job at a time: a file that is not a dump
 * stops after its first member. */
static int fill_one(struct par *p, int *filled, struct hprof_error *err)
{
    *filled = 0;
    unsigned limit = p->s->checked ? p->n_jobs : 1;
    if (!p->fill_more || pool_pending(p->pool) >= limit)
        return HPROF_OK;
    struct member_job *j = pool_filling(p->pool);
    if (j == NULL || !room_for(p, j))
        return HPROF_OK;
    int rc = fill(p, j, err);
    if (rc == HPROF_OK) {
        pool_submit(p->pool);
        *filled = 1;
    }
    return rc;
}

static void release_oldest(struct par *p, struct member_job *j)
{
    j->busy = 0;
    pool_release_oldest(p->pool);
}

/* Take the oldest job back: keep its member if it starts at p->pos, drop
 * it if it starts before; otherwise, or if it failed, zlib inflates the
 * member at p->pos (or finds the end there). */
static int take_one(struct par *p, struct hprof_error *err)
{
    struct spool *s = p->s;
    struct member_job *j = pool_pending(p->pool) > 0 ? pool_oldest(p->pool) : NULL;
    int rc = HPROF_OK, stream = 1;
    uint64_t from = p->pos;
    if (j != NULL) {
        if (j->ok)
            s->stats->bytes_speculated += j->out_len;
        if (j->start < p->pos) {
            s->stats->jobs_discarded++;
            release_oldest(p, j);
            stream = 0;
        } else if (j->start == p->pos) {
            if (j->ok) {
                rc = spool_put(s, j->out, j->out_len, err);
                p->pos += j->in_used;
                s->stats->members_parallel++;
                stream = 0;
            } else {
                s->stats->jobs_failed++;
            }
            release_oldest(p, j);
        }
        /* else it starts after p->pos: the scan missed the member there */
    }
    if (stream && rc == HPROF_OK) {
        uint64_t end = p->pos;
        rc = spool_inflate_stream(s, p->pos, 0, 1, &end, &p->done, err);
        p->pos = end;
    }
    if (p->pos > from) /* a member was taken: how big? */
        p->small_run = p->pos - from < SMALL_MEMBER ? p->small_run + 1 : 0;
    if (rc == HPROF_OK && !p->done && p->small_run >= SMALL_RUN) { /* the rest, streamed */
        uint64_t end = p->pos;
        rc = spool_inflate_stream(s, p->pos, 0, 0, &end, &p->done, err);
        p->pos = end;
        p->fill_more = 0;
        return rc;
    }
    spool_tape_release(s, p->pos);
    if (p->pos > p->next_fill) { /* past every job: scan again from here */
        p->next_fill = p->pos;
        p->fill_more = 1;
    }
    return rc;
}

/* Inflate the gzip file s->in of `size` bytes into the copy, with
 * `threads` (0: one per core). */
int spool_inflate_members(struct spool *s, uint64_t size, unsigned threads,
                          struct hprof_error *err)
{
    /* A pipe's first member is streamed: a scan for the next header would
     * read up to EXTENT_CAP of it before the magic is checked. */
    struct par p = { .s = s, .fill_more = s->tape == NULL, .guess = FIRST_GUESS };
    threads = pool_threads(POOL_INFLATE, threads, size);
    unsigned workers = threads > 1 ? threads : 0;
    p.n_jobs = workers ? JOBS_PER_WORKER * workers : 1;
    p.n_inflaters = workers ? workers : 1;
    p.budget = JOB_MAX + (uint64_t)p.n_jobs * JOB_TYPICAL;
    p.jobs = calloc(p.n_jobs, sizeof *p.jobs);
    p.inflaters = calloc(p.n_inflaters, sizeof *p.inflaters);
    void **jobs = calloc(p.n_jobs, sizeof *jobs);
    void **ctx = calloc(p.n_inflaters, sizeof *ctx);
    int rc = HPROF_OK;
    if (p.jobs == NULL || p.inflaters == NULL || jobs == NULL || ctx == NULL) {
        rc = hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (unsigned i = 0; i < p.n_jobs; i++)
        jobs[i] = &p.jobs[i];
    for (unsigned i = 0; i < p.n_inflaters; i++) {
        ctx[i] = &p.inflaters[i];
        if (!inflater_init(&p.inflaters[i])) {
            rc = hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
            goto out;
        }
    }
    p.pool = pool_new_or_inline(p.n_jobs, jobs, workers, ctx, inflate_job, err);
    if (p.pool == NULL) {
        rc = err->code;
        goto out;
    }
    s->stats->workers = pool_workers(p.pool);
    while (rc == HPROF_OK && !p.done) {
        int filled;
        rc = fill_one(&p, &filled, err);
        if (rc == HPROF_OK && !filled)
            rc = take_one(&p, err);
    }
out:
    pool_free(p.pool); /* workers finish the member in hand first */
    for (unsigned i = 0; p.jobs != NULL && i < p.n_jobs; i++)
        if (p.jobs[i].busy && p.jobs[i].ok) /* inflated, never taken back */
            s->stats->bytes_speculated += p.jobs[i].out_len;
    for (unsigned i = 0; p.inflaters != NULL && i < p.n_inflaters; i++)
        inflater_free(&p.inflaters[i]);
    for (unsigned i = 0; p.jobs != NULL && i < p.n_jobs; i++) {
        free(p.jobs[i].in);
        free(p.jobs[i].out);
    }
    free(p.jobs);
    free(p.inflaters);
    free(jobs);
    free(ctx);
    return rc;
}

