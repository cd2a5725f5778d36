/*
 * input_stream.c - the copy input.c makes, written as the bytes come, and
 * zlib inflating a gzip stream into it member after member.
 *
 * What comes out of a gzip stream is not trusted any more than a file: 1 MB
 * of gzipped zeros inflates to 1 GB.  So the copy
 *  - checks the hprof magic in the first bytes inflated, and stops there
 *    with "not a heap dump" instead of inflating the rest first;
 *  - follows the top-level records as they come and stops at the first
 *    tag the format does not define (zeros behind a valid header), but
 *    with salvage follows zeros where a record should start to the end
 *    without writing them: a zero-filled tail (see zeros_here());
 *  - stops with a message naming the temporary directory (and TMPDIR, which
 *    chooses it) when it would exceed the room left there;
 *  - inflates member after member (the JDK writes one per chunk) with zlib's
 *    inflate(), not gzread(), which ignores whatever follows the last member
 *    without a word: here trailing bytes that are not another member are an
 *    error, as is a stream cut short, but for zeros to the end (padding,
 *    which gzip -d passes over too).
 * Messages do not repeat the input's name: the tools print it before them.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zlib.h>

#include "input_spool.h"
#include "sink_private.h"

int spool_cut(struct spool *s, enum spool_format format, uint64_t at, struct hprof_error *err)
{
    int zstd = format == SPOOL_ZSTD;
    if (!s->salvage)
        return hprof_error_set(err, HPROF_ERR_TRUNCATED,
                               "offset 0x%" PRIx64 " (compressed): %s input is truncated", at,
                               zstd ? "zstd" : "gzip");
    if (zstd) {
        s->info->zstd_cut = 1;
        s->info->zstd_cut_offset = at;
    } else {
        s->info->gzip_cut = 1;
        s->info->gzip_cut_offset = at;
    }
    return HPROF_OK;
}

/* What is free for us in the temporary file's file system. */
uint64_t spool_free_bytes(int fd)
{
    struct statvfs v;
    if (fstatvfs(fd, &v) != 0)
        return UINT64_MAX; /* cannot tell: writes will say */
    return (uint64_t)v.f_bavail * v.f_frsize;
}

static int no_room(const struct spool *s, struct hprof_error *err)
{
    return hprof_error_set(err, HPROF_ERR_NOROOM,
                           "offset 0x%" PRIx64 ": the decompressed copy of the input would "
                           "exceed the %" PRIu64 " bytes free in %s (TMPDIR chooses the "
                           "temporary directory)", s->written, s->room, s->dir);
}

static int not_a_dump(const struct spool *s, struct hprof_error *err)
{
    int read_by_input;
    const char *compressor = hprof_compressed_by(s->head, s->n_head, &read_by_input);
    if (compressor != NULL)
        return hprof_error_set(err, HPROF_ERR_FORMAT,
                               read_by_input || s->layered ? HPROF_COMPRESSED_TWICE
                                                           : HPROF_COMPRESSED_UNREAD,
                               compressor, compressor);
    return hprof_error_set(err, HPROF_ERR_FORMAT, HPROF_NOT_A_DUMP);
}

static int all_zeros(const uint8_t *p, size_t n)
{
    return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* Bytes that follow a record header of zeros at s->zeros_at, in salvage:
 * while they are zeros the tail may be a zero-filled one, which the copy
 * must hold as the file would (the salvage takes the zeros for the end of
 * the data by where they start and how many they are).  A byte that is not
 * zero makes them zeros in the middle of the dump: the salvaging reader of
 * the file fails at the header, with this message. */
static int follow_zeros(const struct spool *s, const uint8_t *p, size_t n,
                        struct hprof_error *err)
{
    if (all_zeros(p, n))
        return HPROF_OK;
    return hprof_error_set(err, HPROF_ERR_FORMAT, "offset 0x%" PRIx64 ": " HPROF_ZEROS_HERE,
                           s->zeros_at);
}

/* The framing met a record header of zeros at `at`, which no record has:
 * a tail of zeros, or zeros over the middle of a dump.  Without salvage the
 * copy stops there with the reader's message and code (the input is cut,
 * --salvage may help), so that a bomb of zeros behind a valid header costs
 * a few bytes, not the gigabytes it inflates to.  With salvage the zeros
 * are followed to the end (follow_zeros()) and held back: they cost no
 * room, only the time to inflate them. */
static int zeros_here(struct spool *s, uint64_t at, struct hprof_error *err)
{
    if (!s->salvage)
        return hprof_error_set(err, HPROF_ERR_TRUNCATED,
                               "offset 0x%" PRIx64 ": " HPROF_ZEROS_HERE, at);
    s->in_zeros = 1;
    s->zeros_at = at;
    return HPROF_OK;
}

/* Follow the top-level records through the `n` bytes at `p`, which the copy
 * holds from offset s->written: a tag the format does not define stops the
 * copy there, with the reader's message, so that garbage behind a valid
 * header is not inflated to its end.  (Everything else is left to the
 * reader, which sees the whole file.)  *emit: how many of the bytes go to
 * the copy now, the rest being zeros held back (zeros_here()). */
static int frame(struct spool *s, const uint8_t *p, size_t n, size_t *emit,
                 struct hprof_error *err)
{
    uint64_t at = s->written;
    *emit = n;
    if (s->in_zeros) {
        *emit = 0;
        return follow_zeros(s, p, n, err);
    }
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
                uint64_t rec_at = at + used - 9;
                if (all_zeros(s->rec, sizeof s->rec)) {
                    int rc = zeros_here(s, rec_at, err);
                    if (rc != HPROF_OK)
                        return rc;
                    /* the header's bytes in earlier chunks went out: zeros too */
                    *emit = rec_at > s->written ? (size_t)(rec_at - s->written) : 0;
                    return follow_zeros(s, p + used, n - used, err);
                }
                if (s->unknown_tag && hprof_head_is_file_header(s->rec[0], get_u4(s->rec + 1),
                                                                get_u4(s->rec + 5)))
                    return hprof_error_set(err, HPROF_ERR_FORMAT,
                                           "offset 0x%" PRIx64 ": " HPROF_FILE_HEADER_HERE,
                                           rec_at);
                if (s->unknown_tag)
                    return hprof_error_set(err, HPROF_ERR_FORMAT,
                                           "offset 0x%" PRIx64 ": tag 0x%02x: unknown record tag",
                                           rec_at, s->rec[0]);
                s->skip = get_u4(s->rec + 5);
            }
        }
        p += used;
        n -= used;
        at += used;
    }
    return HPROF_OK;
}

int spool_emit_file(struct spool *s, const uint8_t *p, size_t n, struct hprof_error *err)
{
    if (n > s->room - s->written) {
        uint64_t free_now = spool_free_bytes(s->out);
        s->room = free_now > UINT64_MAX - s->written ? UINT64_MAX : s->written + free_now;
        if (n > s->room - s->written)
            return no_room(s, err);
    }
    struct hprof_error werr = { 0 };
    if (sink_write_fd(s->out, p, n, &werr) != HPROF_OK)
        return hprof_error_set(err, HPROF_ERR_NOROOM,
                               "offset 0x%" PRIx64 ": the decompressed copy of the input in %s "
                               "(TMPDIR chooses the temporary directory): %s", s->written,
                               s->dir, werr.message);
    return HPROF_OK;
}

/* Append `n` bytes of plain dump to the copy, checking the magic as soon as
 * its bytes are there and the framing; s->emit checks its room. */
int spool_put(struct spool *s, const uint8_t *p, size_t n, struct hprof_error *err)
{
    if (!s->checked) {
        size_t take = n < MAGIC_LEN - s->n_head ? n : MAGIC_LEN - s->n_head;
        memcpy(s->head + s->n_head, p, take);
        s->n_head += take;
        if (memcmp(s->head, MAGIC, s->n_head) != 0)
            return not_a_dump(s, err);
        s->checked = s->n_head == MAGIC_LEN;
    }
    size_t emit;
    int rc = frame(s, p, n, &emit, err);
    if (rc == HPROF_OK && emit > 0)
        rc = s->emit(s, p, emit, err);
    if (rc != HPROF_OK)
        return rc;
    s->written += n;
    return HPROF_OK;
}

int spool_fill_zeros(struct spool *s, struct hprof_error *err)
{
    if (!s->in_zeros || ftruncate(s->out, (off_t)s->written) == 0)
        return HPROF_OK;
    return hprof_error_set(err, HPROF_ERR_NOROOM,
                           "offset 0x%" PRIx64 ": the decompressed copy of the input in %s "
                           "(TMPDIR chooses the temporary directory): %s", s->zeros_at, s->dir,
                           strerror(errno));
}

int wait_to_read(int fd, int stop_fd)
{
    struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = stop_fd, .events = POLLIN } };
    while (poll(p, 2, -1) < 0 && errno == EINTR)
        ;
    return (p[1].revents & POLLIN) != 0;
}

/* A read of a pipe, unless the reader stopped first: ECANCELED. */
static ssize_t read_retried(const struct spool *s, uint8_t *buf, size_t len)
{
    if (s->stop_fd >= 0 && wait_to_read(s->in, s->stop_fd)) {
        errno = ECANCELED;
        return -1;
    }
    ssize_t n;
    do
        n = read(s->in, buf, len);
    while (n < 0 && errno == EINTR);
    return n;
}

/* ---- A pipe read by offset ------------------------------------------------------ */

int spool_tape_start(struct spool *s, size_t prefix, struct hprof_error *err)
{
    struct in_tape *t = calloc(1, sizeof *t);
    if (t == NULL || (t->buf = malloc(SPOOL_BUFFER)) == NULL) {
        free(t);
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
    }
    t->cap = SPOOL_BUFFER;
    memcpy(t->buf, s->in_buf, prefix);
    t->len = prefix;
    s->tape = t;
    return HPROF_OK;
}

void spool_tape_release(struct spool *s, uint64_t upto)
{
    struct in_tape *t = s->tape;
    if (t == NULL || upto <= t->base)
        return;
    size_t drop = upto - t->base < t->len ? (size_t)(upto - t->base) : t->len;
    t->start += drop;
    t->len -= drop;
    t->base += drop;
}

void spool_tape_free(struct spool *s)
{
    if (s->tape != NULL)
        free(s->tape->buf);
    free(s->tape);
    s->tape = NULL;
}

/* Room for `want` more bytes after those held: moved to the front first
 * (they are few: the members in flight), grown if that is not enough. */
static int tape_room(struct in_tape *t, size_t want)
{
    if (t->start + t->len + want <= t->cap)
        return 1;
    memmove(t->buf, t->buf + t->start, t->len);
    t->start = 0;
    if (t->len + want <= t->cap)
        return 1;
    size_t cap = 2 * t->cap > t->len + want ? 2 * t->cap : t->len + want;
    uint8_t *grown = realloc(t->buf, cap);
    if (grown == NULL)
        return 0;
    t->buf = grown;
    t->cap = cap;
    return 1;
}

/* The bytes at `at` from the tape, read from the pipe onto it if `at` is
 * where it ends.  Offsets released, or past what was read, are not there:
 * ESPIPE (a caller's error: its offsets only move on). */
static ssize_t tape_read(const struct spool *s, uint8_t *buf, size_t len, uint64_t at)
{
    struct in_tape *t = s->tape;
    if (at < t->base || at > t->base + t->len) {
        errno = ESPIPE;
        return -1;
    }
    if (at == t->base + t->len) {
        if (!tape_room(t, len)) {
            errno = ENOMEM;
            return -1;
        }
        ssize_t n = read_retried(s, t->buf + t->start + t->len, len);
        if (n <= 0)
            return n;
        t->len += (size_t)n;
    }
    size_t held = (size_t)(t->base + t->len - at);
    size_t n = len < held ? len : held;
    memcpy(buf, t->buf + t->start + (size_t)(at - t->base), n);
    return (ssize_t)n;
}

/* Read up to `len` bytes of the input at offset `at` (a file, or a pipe
 * through its tape) or next (a pipe), retrying on EINTR.  @return bytes
 * read (0 at the end), or -1. */
ssize_t spool_read_in(struct spool *s, uint8_t *buf, size_t len, uint64_t at)
{
    if (s->tape != NULL)
        return tape_read(s, buf, len, at);
    if (!s->seekable)
        return read_retried(s, buf, len);
    ssize_t n;
    do
        n = pread(s->in, buf, len, (off_t)at);
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
    spool_tape_release(s, s->in_offset); /* zlib has what it needs from before */
    ssize_t n = spool_read_in(s, s->in_buf + keep, SPOOL_BUFFER - keep, s->in_offset + keep);
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
                spool_cut(s, SPOOL_GZIP, in_at(s, z), err);
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

/* Zeros after the last member, to the end of the input: padding (a tape's
 * blocks, `dd conv=sync`), which gzip -d passes over in silence too.
 * @return HPROF_OK at the end, else the trailing bytes' error at the first
 * byte that is not zero. */
static int zero_padding(struct spool *s, z_stream *z, int more, struct hprof_error *err)
{
    for (;;) {
        while (z->avail_in > 0 && z->next_in[0] == 0) {
            z->next_in++;
            z->avail_in--;
        }
        if (z->avail_in > 0)
            return hprof_error_set(err, HPROF_ERR_FORMAT,
                                   "offset 0x%" PRIx64 " (compressed): gzip input has trailing "
                                   "bytes after its last member that are not another member",
                                   in_at(s, z));
        if (!more)
            return HPROF_OK;
        if ((more = refill(s, z, err)) < 0)
            return err->code;
    }
}

/* Inflate with zlib, member after member, from offset `at` of the input:
 * its start (where the first `prefix` bytes, from a pipe, are in in_buf
 * already) or, in a file, the end of a member.  With `one`, stop at the end
 * of the first member inflated, *end then being the offset after it.  *done
 * says the input is finished: it ended after a whole member, or was cut
 * short and salvaged. */
int spool_inflate_stream(struct spool *s, uint64_t at, size_t prefix, int one, uint64_t *end,
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
            if (z.next_in[0] == 0) {
                rc = zero_padding(s, &z, more, err);
                *done = rc == HPROF_OK;
                break;
            }
            if (z.avail_in < 2 && !more && z.next_in[0] == 0x1f) { /* half a magic */
                rc = spool_cut(s, SPOOL_GZIP, in_at(s, &z), err);
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
            rc = spool_cut(s, SPOOL_GZIP, in_at(s, &z), err);
            *done = 1;
            break;
        }
        z.next_out = s->out_buf;
        z.avail_out = SPOOL_BUFFER;
        int zrc = inflate(&z, Z_NO_FLUSH);
        size_t produced = SPOOL_BUFFER - z.avail_out;
        if (produced > 0 && (rc = spool_put(s, s->out_buf, produced, err)) != HPROF_OK) {
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
            rc = spool_cut(s, SPOOL_GZIP, in_at(s, &z), err);
            *done = 1;
            break;
        }
    }
    inflateEnd(&z);
    return rc;
}
