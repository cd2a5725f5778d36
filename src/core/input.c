/*
 * input.c - opening a dump the way the tools need it: seekable and plain.
 * The passes re-read the input, so standard input, pipes and gzip-compressed
 * dumps (jcmd -gz, or gzip(1)) are first copied, decompressed, to an unlinked
 * temporary file in $TMPDIR.
 *
 * What comes out of a gzip stream is not trusted any more than a file: 1 MB
 * of gzipped zeros inflates to 1 GB.  So the copy
 *  - checks the hprof magic in the first bytes inflated, and stops there
 *    with "not a heap dump" instead of inflating the rest first;
 *  - follows the top-level records as they come and stops at the first
 *    tag the format does not define (zeros behind a valid header);
 *  - stops with a message naming the temporary directory (and TMPDIR, which
 *    chooses it) when it would exceed the room left there;
 *  - inflates member after member (the JDK writes one per chunk) with zlib's
 *    inflate(), not gzread(), which ignores whatever follows the last member
 *    without a word: here trailing bytes that are not another member are an
 *    error, as is a stream cut short.
 * Messages do not repeat the input's name: the tools print it before them.
 *
 * A gzip file (not a pipe) of many members, as jcmd -gz and our -z write
 * them (one per MiB), is inflated on every core into the same copy, with
 * the same errors at the same offsets, as when it comes through a pipe.
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
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zlib.h>
#ifdef HPROF_WITH_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "input_private.h"
#include "pool.h"
#include "sink_private.h"

#define SPOOL_BUFFER (1u << 20)
#define MAGIC "JAVA PROFILE 1.0."
#define MAGIC_LEN (sizeof MAGIC - 1)

struct spool {
    int in, out;
    int seekable;               /* `in` is a regular file: read with pread */
    char dir[4096];             /* the temporary file's directory */
    uint64_t written;           /* bytes of the copy so far */
    uint64_t room;              /* written + what was free when last looked:
                                 * what the directory had room for */
    uint8_t head[MAGIC_LEN];    /* the first bytes, until the magic is checked */
    size_t n_head;
    int checked;
    /* The record framing, followed as the copy is made (see frame()). */
    int in_header;              /* 1 in the file header, 0 after, -1 not followed */
    int nul_seen;               /* of the version string */
    int unknown_tag;            /* the framing stopped at an undefined tag */
    uint64_t skip;              /* bytes of the current part still to pass */
    uint8_t rec[9];             /* a record header being gathered */
    size_t n_rec;
    uint8_t *in_buf, *out_buf;
    uint64_t in_offset;         /* of in_buf[0] in the (compressed) input */
    int salvage;                /* HPROF_INPUT_SALVAGE */
    struct hprof_input_info *info;
    struct input_stats *stats;
};

/* The gzip stream ends before its last member does.  With salvage, what
 * was inflated stays (the reader then salvages the dump it holds), and
 * `info` says where the compressed input stopped; else an error. */
static int gzip_cut(struct spool *s, uint64_t at, struct hprof_error *err)
{
    if (!s->salvage)
        return hprof_error_set(err, HPROF_ERR_FORMAT,
                               "offset 0x%" PRIx64 " (compressed): gzip input is truncated"
                               "; --salvage keeps what is complete", at);
    s->info->gzip_cut = 1;
    s->info->gzip_cut_offset = at;
    return HPROF_OK;
}

static int temp_file(struct spool *s, struct hprof_error *err)
{
    const char *dir = getenv("TMPDIR");
    char path[sizeof s->dir + 32];
    if (dir == NULL || *dir == '\0')
        dir = "/tmp";
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(path, sizeof path, "%s/hprof-spool-XXXXXX", s->dir);
    int fd = mkstemp(path);
    if (fd < 0)
        return hprof_error_set(err, HPROF_ERR_IO,
                               "cannot create a temporary copy of the input in %s (TMPDIR "
                               "chooses the directory): %s", s->dir, strerror(errno));
    unlink(path);
    s->out = fd;
    return HPROF_OK;
}

/* What is free for us in the temporary file's file system. */
static uint64_t free_bytes(int fd)
{
    struct statvfs v;
    if (fstatvfs(fd, &v) != 0)
        return UINT64_MAX; /* cannot tell: writes will say */
    return (uint64_t)v.f_bavail * v.f_frsize;
}

static int no_room(const struct spool *s, struct hprof_error *err)
{
    return hprof_error_set(err, HPROF_ERR_IO,
                           "offset 0x%" PRIx64 ": the decompressed copy of the input would "
                           "exceed the %" PRIu64 " bytes free in %s (TMPDIR chooses the "
                           "temporary directory)", s->written, s->room, s->dir);
}

static int not_a_dump(struct hprof_error *err)
{
    return hprof_error_set(err, HPROF_ERR_FORMAT,
                           "offset 0x0: header: not a heap dump (no \"" MAGIC "x\" magic)");
}

/* Follow the top-level records through the bytes of the copy from offset
 * s->written: a tag the format does not define stops the copy there, with
 * the reader's message, so that a bomb of zeros behind a valid header costs
 * 31 bytes, not the gigabytes it inflates to.  (Everything else is left to
 * the reader, which sees the whole file.) */
static int frame(struct spool *s, const uint8_t *p, size_t n, struct hprof_error *err)
{
    uint64_t at = s->written;
    while (n > 0 && s->in_header >= 0) {
        size_t used;
        if (s->in_header && !s->nul_seen) { /* the version string and its NUL */
            const uint8_t *nul = memchr(p, 0, n);
            if (nul == NULL) {
                if (at + n > 64)
                    s->in_header = -1; /* no NUL: the reader will say; stop following */
                return HPROF_OK;
            }
            used = (size_t)(nul - p) + 1;
            s->nul_seen = 1;
            s->skip = 12; /* identifier size and time stamp */
        } else if (s->skip > 0) {
            used = n < s->skip ? n : (size_t)s->skip;
            s->skip -= used;
            if (s->skip == 0)
                s->in_header = 0;
        } else {
            used = n < 9 - s->n_rec ? n : 9 - s->n_rec;
            memcpy(s->rec + s->n_rec, p, used);
            s->n_rec += used;
            if (s->n_rec == 9) {
                s->n_rec = 0;
                s->unknown_tag = !hprof_tag_known(s->rec[0]);
                if (s->unknown_tag)
                    return hprof_error_set(err, HPROF_ERR_FORMAT,
                                           "offset 0x%" PRIx64 ": tag 0x%02x: unknown record tag",
                                           at + used - 9, s->rec[0]);
                s->skip = get_u4(s->rec + 5);
            }
        }
        p += used;
        n -= used;
        at += used;
    }
    return HPROF_OK;
}

/* Append `n` bytes of plain dump to the copy, checking the magic as soon as
 * its bytes are there, the framing, and the room before every write. */
static int put(struct spool *s, const uint8_t *p, size_t n, struct hprof_error *err)
{
    if (!s->checked) {
        size_t take = n < MAGIC_LEN - s->n_head ? n : MAGIC_LEN - s->n_head;
        memcpy(s->head + s->n_head, p, take);
        s->n_head += take;
        if (memcmp(s->head, MAGIC, s->n_head) != 0)
            return not_a_dump(err);
        s->checked = s->n_head == MAGIC_LEN;
    }
    int rc = frame(s, p, n, err);
    if (rc != HPROF_OK)
        return rc;
    if (n > s->room - s->written) {
        uint64_t free_now = free_bytes(s->out);
        s->room = free_now > UINT64_MAX - s->written ? UINT64_MAX : s->written + free_now;
        if (n > s->room - s->written)
            return no_room(s, err);
    }
    struct hprof_error werr = { 0 };
    if (sink_write_fd(s->out, p, n, &werr) != HPROF_OK)
        return hprof_error_set(err, HPROF_ERR_IO,
                               "offset 0x%" PRIx64 ": the decompressed copy of the input in %s "
                               "(TMPDIR chooses the temporary directory): %s", s->written,
                               s->dir, werr.message);
    s->written += n;
    return HPROF_OK;
}

/* Read up to `len` bytes of the input at offset `at` (a file) or next (a
 * pipe), retrying on EINTR.  @return bytes read (0 at the end), or -1. */
static ssize_t read_in(const struct spool *s, uint8_t *buf, size_t len, uint64_t at)
{
    ssize_t n;
    do
        n = s->seekable ? pread(s->in, buf, len, (off_t)at) : read(s->in, buf, len);
    while (n < 0 && errno == EINTR);
    return n;
}

/* ---- Inflating as the bytes come: pipes, and a file's odd members --------- */

/* Read more input after the `keep` bytes at z->next_in, moved to the front.
 * @return bytes read (0 at the end), or a negative error. */
static int refill(struct spool *s, z_stream *z, struct hprof_error *err)
{
    size_t keep = z->avail_in;
    s->in_offset += (uint64_t)(z->next_in - s->in_buf);
    if (keep > 0)
        memmove(s->in_buf, z->next_in, keep);
    z->next_in = s->in_buf;
    ssize_t n = read_in(s, s->in_buf + keep, SPOOL_BUFFER - keep, s->in_offset + keep);
    if (n < 0)
        return hprof_error_set(err, HPROF_ERR_IO, "offset 0x%" PRIx64 ": read: %s",
                               s->in_offset + keep, strerror(errno));
    z->avail_in = (uInt)(keep + (size_t)n);
    return (int)(n > 0);
}

/* Offset in the compressed input of z->next_in. */
static uint64_t in_at(const struct spool *s, const z_stream *z)
{
    return s->in_offset + (uint64_t)(z->next_in - s->in_buf);
}

/* How much more of a member is inflated, and dropped, to see whether it is
 * corrupt, once the framing met an undefined tag in it: the rest of any
 * member jcmd or our -z writes (1 MiB each), a small cost for a bomb. */
#define RECHECK_CAP (1u << 20)

/* The framing met an undefined tag in what the current member inflated
 * to.  A corrupt member gives garbage before zlib can tell (at a block
 * that makes no sense, or at its CRC), and the gzip error is the one that
 * says what is wrong: inflate on, dropping the output, up to RECHECK_CAP
 * bytes or the member's end, and when zlib finds the member corrupt or
 * cut short, that replaces the framing's error.  A sound member (zeros
 * behind a valid header: a bomb) keeps it, at a bounded cost. */
static void prefer_gzip_error(struct spool *s, z_stream *z, int zrc, int more,
                              struct hprof_error *err)
{
    struct hprof_error ignored = { 0 };
    uint64_t left = RECHECK_CAP;
    while (zrc == Z_OK || zrc == Z_BUF_ERROR) {
        if (left == 0)
            return;
        if (z->avail_in == 0 && more > 0 && (more = refill(s, z, &ignored)) < 0)
            return;
        if (z->avail_in == 0) {
            if (!s->salvage) {
                memset(err, 0, sizeof *err);
                gzip_cut(s, in_at(s, z), err);
            }
            return;
        }
        z->next_out = s->out_buf;
        z->avail_out = SPOOL_BUFFER;
        zrc = inflate(z, Z_NO_FLUSH);
        size_t produced = SPOOL_BUFFER - z->avail_out;
        left -= produced < left ? produced : left;
    }
    if (zrc == Z_DATA_ERROR) {
        memset(err, 0, sizeof *err);
        hprof_error_set(err, HPROF_ERR_FORMAT,
                        "offset 0x%" PRIx64 " (compressed): gzip input is corrupt: %s",
                        in_at(s, z), z->msg != NULL ? z->msg : "bad data");
    }
    /* else the member's end, or no memory: the framing's error stands */
}

/* Inflate with zlib, member after member, from offset `at` of the input:
 * its start (where the first `prefix` bytes, from a pipe, are in in_buf
 * already) or, in a file, the end of a member.  With `one`, stop at the end
 * of the first member inflated, *end then being the offset after it.  *done
 * says the input is finished: it ended after a whole member, or was cut
 * short and salvaged. */
static int inflate_stream(struct spool *s, uint64_t at, size_t prefix, int one, uint64_t *end,
                          int *done, struct hprof_error *err)
{
    z_stream z = { .next_in = s->in_buf, .avail_in = (uInt)prefix };
    s->in_offset = at;
    *done = 0;
    if (inflateInit2(&z, 15 + 16) != Z_OK) /* gzip only */
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory for zlib");
    int rc = HPROF_OK, more = 1, in_member = at == 0;
    for (;;) {
        while (z.avail_in < 2 && more > 0) /* two bytes: enough to see the next member */
            more = refill(s, &z, err);
        if (more < 0) {
            rc = err->code;
            break;
        }
        if (!in_member) {
            if (z.avail_in == 0) {
                *done = 1; /* the end, after a whole member */
                break;
            }
            if (z.avail_in < 2 && !more && z.next_in[0] == 0x1f) { /* half a magic */
                rc = gzip_cut(s, in_at(s, &z), err);
                *done = 1;
                break;
            }
            if (z.avail_in < 2 || z.next_in[0] != 0x1f || z.next_in[1] != 0x8b) {
                rc = hprof_error_set(err, HPROF_ERR_FORMAT,
                                     "offset 0x%" PRIx64 " (compressed): gzip input has trailing "
                                     "bytes after its last member that are not another member",
                                     in_at(s, &z));
                break;
            }
            inflateReset(&z);
            in_member = 1;
        }
        if (z.avail_in == 0) {
            rc = gzip_cut(s, in_at(s, &z), err);
            *done = 1;
            break;
        }
        z.next_out = s->out_buf;
        z.avail_out = SPOOL_BUFFER;
        int zrc = inflate(&z, Z_NO_FLUSH);
        size_t produced = SPOOL_BUFFER - z.avail_out;
        if (produced > 0 && (rc = put(s, s->out_buf, produced, err)) != HPROF_OK) {
            if (s->unknown_tag && zrc != Z_STREAM_END) {
                prefer_gzip_error(s, &z, zrc, more, err);
                rc = err->code;
            }
            break;
        }
        if (zrc == Z_STREAM_END) {
            in_member = 0;
            s->stats->members_streamed++;
            if (one) {
                *end = in_at(s, &z);
                break;
            }
        } else if (zrc == Z_MEM_ERROR) {
            rc = hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory for zlib");
            break;
        } else if (zrc != Z_OK && zrc != Z_BUF_ERROR) { /* BUF: wants more input */
            rc = hprof_error_set(err, HPROF_ERR_FORMAT,
                                 "offset 0x%" PRIx64 " (compressed): gzip input is corrupt: %s",
                                 in_at(s, &z), z.msg != NULL ? z.msg : "bad data");
            break;
        } else if (zrc == Z_BUF_ERROR && !more && z.avail_in == 0) {
            rc = gzip_cut(s, in_at(s, &z), err);
            *done = 1;
            break;
        }
    }
    inflateEnd(&z);
    return rc;
}

/* ---- Inflating a file's members on every core ------------------------------- */

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
 * file is streamed by zlib on the calling thread, as from a pipe (a million
 * empty members took 5.7 s as jobs, 0.06 s streamed). */
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
            ssize_t n = read_in(p->s, j->in + j->in_len, want - j->in_len, j->start + j->in_len);
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
                rc = put(s, j->out, j->out_len, err);
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
        rc = inflate_stream(s, p->pos, 0, 1, &end, &p->done, err);
        p->pos = end;
    }
    if (p->pos > from) /* a member was taken: how big? */
        p->small_run = p->pos - from < SMALL_MEMBER ? p->small_run + 1 : 0;
    if (rc == HPROF_OK && !p->done && p->small_run >= SMALL_RUN) { /* the rest, streamed */
        uint64_t end = p->pos;
        rc = inflate_stream(s, p->pos, 0, 0, &end, &p->done, err);
        p->pos = end;
        p->fill_more = 0;
        return rc;
    }
    if (p->pos > p->next_fill) { /* past every job: scan again from here */
        p->next_fill = p->pos;
        p->fill_more = 1;
    }
    return rc;
}

/* Inflate the gzip file s->in of `size` bytes into the copy, with
 * `threads` (0: one per core). */
static int inflate_file(struct spool *s, uint64_t size, unsigned threads,
                        struct hprof_error *err)
{
    struct par p = { .s = s, .fill_more = 1, .guess = FIRST_GUESS };
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
    p.pool = pool_new(p.n_jobs, jobs, workers, ctx, inflate_job, err);
    if (p.pool == NULL) {
        rc = err->code;
        goto out;
    }
    s->stats->workers = workers;
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

/* ---- The copy ------------------------------------------------------------------ */

/* A plain stream (a pipe): copied as it comes. */
static int copy_all(struct spool *s, const uint8_t *first, size_t n_first,
                    struct hprof_error *err)
{
    int rc = put(s, first, n_first, err);
    while (rc == HPROF_OK) {
        ssize_t n = read(s->in, s->out_buf, SPOOL_BUFFER);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return hprof_error_set(err, HPROF_ERR_IO, "offset 0x%" PRIx64 ": read: %s",
                                   s->written, strerror(errno));
        if (n == 0)
            break;
        rc = put(s, s->out_buf, (size_t)n, err);
    }
    return rc;
}

/* Copy everything `from` yields, decompressed if gzip, into a temporary
 * file; *out is that file on success.  `file_size` > 0: `from` is a gzip
 * file of that size (read with pread, inflated as `how` says); else a
 * stream. */
static int spool(int from, uint64_t file_size, unsigned flags, unsigned threads,
                 enum input_inflate how, int *out, struct hprof_input_info *info,
                 struct input_stats *stats, struct hprof_error *err)
{
    struct spool *s = calloc(1, sizeof *s);
    int rc = HPROF_OK, done;
    uint64_t end;
    if (s == NULL || (s->in_buf = malloc(SPOOL_BUFFER)) == NULL ||
        (s->out_buf = malloc(SPOOL_BUFFER)) == NULL) {
        rc = hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
        goto out;
    }
    s->salvage = (flags & HPROF_INPUT_SALVAGE) != 0;
    s->info = info;
    s->stats = stats;
    s->in = from;
    s->seekable = file_size > 0;
    s->out = -1;
    s->in_header = 1;
    if ((rc = temp_file(s, err)) != HPROF_OK)
        goto out;
    s->room = free_bytes(s->out);
    if (s->seekable) {
        rc = how == INPUT_INFLATE_STREAM ? inflate_stream(s, 0, 0, 0, &end, &done, err)
                                         : inflate_file(s, file_size, threads, err);
        goto out;
    }
    /* The first two bytes say gzip or not; a pipe may give one at a time. */
    size_t got = 0;
    while (got < 2) {
        ssize_t n = read(from, s->in_buf + got, 2 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = hprof_error_set(err, HPROF_ERR_IO, "offset 0x0: read: %s", strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    if (got == 2 && s->in_buf[0] == 0x1f && s->in_buf[1] == 0x8b)
        rc = inflate_stream(s, 0, got, 0, &end, &done, err); /* the two bytes stay in in_buf */
    else
        rc = copy_all(s, s->in_buf, got, err);
out:
    if (s != NULL) {
        stats->bytes_spooled = s->written;
        if (rc == HPROF_OK)
            *out = s->out;
        else if (s->out >= 0)
            close(s->out);
        free(s->in_buf);
        free(s->out_buf);
        free(s);
    }
    return rc;
}

static int is_gzip(int fd)
{
    uint8_t magic[2];
    return pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

int hprof_input_open(const char *path, int *out, int *spooled, struct hprof_error *err)
{
    struct hprof_input_info info;
    int rc = hprof_input_open_threads(path, 0, 0, out, &info, err);
    if (spooled)
        *spooled = info.spooled;
    return rc;
}

int hprof_input_open_flags(const char *path, unsigned flags, int *out,
                           struct hprof_input_info *info, struct hprof_error *err)
{
    return hprof_input_open_threads(path, flags, 0, out, info, err);
}

int hprof_input_open_threads(const char *path, unsigned flags, unsigned threads, int *out,
                             struct hprof_input_info *info, struct hprof_error *err)
{
    return input_open(path, flags, threads, INPUT_INFLATE_PARALLEL, out, info, NULL, err);
}

int input_open(const char *path, unsigned flags, unsigned threads, enum input_inflate how,
               int *out, struct hprof_input_info *info, struct input_stats *stats,
               struct hprof_error *err)
{
    struct input_stats unused;
    int stdin_input = strcmp(path, "-") == 0;
    int fd = stdin_input ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    memset(info, 0, sizeof *info);
    if (stats == NULL)
        stats = &unused;
    memset(stats, 0, sizeof *stats);
    if (fd < 0)
        return hprof_error_set(err, HPROF_ERR_IO, "%s", strerror(errno));
    if (fstat(fd, &st) != 0) {
        int rc = hprof_error_set(err, HPROF_ERR_IO, "%s", strerror(errno));
        if (!stdin_input)
            close(fd);
        return rc;
    }
    if (S_ISDIR(st.st_mode)) {
        if (!stdin_input)
            close(fd);
        return hprof_error_set(err, HPROF_ERR_IO, "is a directory");
    }
    int gzip_file = S_ISREG(st.st_mode) && is_gzip(fd);
    if (S_ISREG(st.st_mode) && !gzip_file) {
        *out = stdin_input ? dup(fd) : fd;
        if (*out < 0)
            return hprof_error_set(err, HPROF_ERR_IO, "%s", strerror(errno));
        return HPROF_OK;
    }
    int rc = spool(fd, gzip_file ? (uint64_t)st.st_size : 0, flags, threads, how, out, info,
                   stats, err);
    if (!stdin_input)
        close(fd);
    if (rc == HPROF_OK)
        info->spooled = 1;
    return rc;
}
