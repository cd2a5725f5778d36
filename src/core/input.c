/*
 * input.c - opening a dump the way the tools need it: seekable and plain.
 * The passes re-read the input, so standard input, pipes and gzip- or
 * zstd-compressed dumps (jcmd -gz, gzip(1), zstd(1)) are first copied,
 * decompressed, to an unlinked temporary file in $TMPDIR.
 *
 * The copy checks what it is given as it goes (input_stream.c).
 * Messages do not repeat the input's name: the tools print it before them.
 *
 * A gzip input of many members is inflated on every core (input_members.c),
 * a pipe through a tape that keeps what may be read again.
 *
 * hprof_input_open_stream() opens the same inputs for one pass without the
 * copy: a reader of the stream itself, or of the ring (push.h) a
 * decompressor on a thread of its own fills through the same checks.
 */
#define _GNU_SOURCE /* F_SETPIPE_SZ */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef HPROF_WITH_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "errand.h"
#include "input_spool.h"
#include "pool.h"
#include "ring.h"
#include "reader_internal.h"

static int temp_file(struct spool *s, struct hprof_error *err)
{
    const char *dir = getenv("TMPDIR");
    char path[sizeof s->dir + 32];
    if (dir == NULL || *dir == '\0')
        dir = "/tmp";
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(path, sizeof path, "%s/hprof-spool-XXXXXX", s->dir);
    int fd = mkstemp(path);
    if (fd < 0) {
        int e = errno;
        /* out of descriptors is the process's problem, anything else TMPDIR's */
        int code = e == EMFILE || e == ENFILE ? HPROF_ERR_IO : HPROF_ERR_NOROOM;
        return hprof_error_set(err, code,
                               "cannot create a temporary copy of the input in %s (TMPDIR "
                               "chooses the directory): %s", s->dir, strerror(e));
    }
    unlink(path);
    s->out = fd;
    return HPROF_OK;
}

/* ---- The copy ------------------------------------------------------------------ */

/* A plain stream (a pipe): copied as it comes. */
static int copy_all(struct spool *s, const uint8_t *first, size_t n_first,
                    struct hprof_error *err)
{
    int rc = spool_put(s, first, n_first, err);
    while (rc == HPROF_OK) {
        ssize_t n = read(s->in, s->out_buf, SPOOL_BUFFER);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return hprof_error_set(err, HPROF_ERR_IO, "offset 0x%" PRIx64 ": read: %s",
                                   s->written, strerror(errno));
        if (n == 0)
            break;
        rc = spool_put(s, s->out_buf, (size_t)n, err);
    }
    return rc;
}

enum input_kind { INPUT_PLAIN, INPUT_GZIP, INPUT_ZSTD };

static enum input_kind kind_of(const uint8_t *p, size_t n)
{
    if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b)
        return INPUT_GZIP;
    return spool_is_zstd(p, n) ? INPUT_ZSTD : INPUT_PLAIN;
}

/* What the first bytes of the file `fd` say it is. */
static enum input_kind file_kind(int fd)
{
    uint8_t magic[4];
    ssize_t n = pread(fd, magic, sizeof magic, 0);
    return kind_of(magic, n > 0 ? (size_t)n : 0);
}

/* The first four bytes of a pipe, which say gzip, zstd or neither; it may
 * give one at a time, and cannot give them again: they are kept. */
static int peek_magic(int fd, uint8_t *buf, size_t *got, struct hprof_error *err)
{
    *got = 0;
    while (*got < 4) {
        ssize_t n = read(fd, buf + *got, 4 - *got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return hprof_error_set(err, HPROF_ERR_IO, "offset 0x0: read: %s", strerror(errno));
        if (n == 0)
            break;
        *got += (size_t)n;
    }
    return HPROF_OK;
}

static void spool_free(struct spool *s)
{
    if (s == NULL)
        return;
    spool_tape_free(s);
    free(s->in_buf);
    free(s->out_buf);
    free(s);
}

/* The state of decompressing `from` (a file when `seekable`); its bytes go
 * to s->emit, which the caller sets. */
static struct spool *spool_new(int from, int seekable, unsigned flags,
                               struct hprof_input_info *info, struct input_stats *stats,
                               struct hprof_error *err)
{
    struct spool *s = calloc(1, sizeof *s);
    if (s == NULL || (s->in_buf = malloc(SPOOL_BUFFER)) == NULL ||
        (s->out_buf = malloc(SPOOL_BUFFER)) == NULL) {
        spool_free(s);
        hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->salvage = (flags & HPROF_INPUT_SALVAGE) != 0;
    s->info = info;
    s->stats = stats;
    s->in = from;
    s->stop_fd = -1;
    s->seekable = seekable;
    s->out = -1;
    s->in_header = 1;
    return s;
}

/* Everything s->in yields, decompressed as `kind` says, through the
 * checks to s->emit.  A pipe's first `prefix` bytes are in s->in_buf; a
 * gzip file of `file_size` bytes is inflated as `how` says. */
static int decompress(struct spool *s, enum input_kind kind, size_t prefix, uint64_t file_size,
                      unsigned threads, enum input_inflate how, struct hprof_error *err)
{
    int done;
    uint64_t end;
    s->layered = kind != INPUT_PLAIN;
    switch (kind) {
    case INPUT_ZSTD:
        return spool_unzstd(s, prefix, err);
    case INPUT_GZIP:
        if (how != INPUT_INFLATE_PARALLEL)
            return spool_inflate_stream(s, 0, prefix, 0, &end, &done, err);
        if (s->seekable)
            return spool_inflate_members(s, file_size, threads, err);
        if (spool_tape_start(s, prefix, err) != HPROF_OK)
            return err->code;
        return spool_inflate_members(s, UINT64_MAX, threads, err); /* a pipe's size: unknown */
    default:
        return copy_all(s, s->in_buf, prefix, err);
    }
}

/* Copy everything `from` yields, decompressed if gzip or zstd, into a
 * temporary file; *out is that file on success.  `file_size` > 0: `from`
 * is a compressed file of that size (read with pread; gzip inflated as
 * `how` says); else a stream. */
static int spool(int from, uint64_t file_size, unsigned flags, unsigned threads,
                 enum input_inflate how, int *out, struct hprof_input_info *info,
                 struct input_stats *stats, struct hprof_error *err)
{
    struct spool *s = spool_new(from, file_size > 0, flags, info, stats, err);
    if (s == NULL)
        return err->code;
    s->emit = spool_emit_file;
    size_t got = 0;
    enum input_kind kind = INPUT_PLAIN;
    int rc = temp_file(s, err);
    if (rc == HPROF_OK) {
        s->room = spool_free_bytes(s->out);
        if (s->seekable)
            kind = file_kind(from);
        else if ((rc = peek_magic(from, s->in_buf, &got, err)) == HPROF_OK)
            kind = kind_of(s->in_buf, got); /* they stay in in_buf */
    }
    if (rc == HPROF_OK)
        rc = decompress(s, kind, got, file_size, threads, how, err);
    if (rc == HPROF_OK)
        rc = spool_fill_zeros(s, err);
    stats->bytes_spooled = s->written;
    if (rc == HPROF_OK)
        *out = s->out;
    else if (s->out >= 0)
        close(s->out);
    spool_free(s);
    return rc;
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

/* `path` ("-": standard input) opened, *fd, and what it is, *st; not a
 * directory.  *own: the fd is ours to close. */
static int open_path(const char *path, int *fd, int *own, struct stat *st,
                     struct hprof_error *err)
{
    *own = strcmp(path, "-") != 0;
    *fd = *own ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
    if (*fd < 0)
        return hprof_error_set(err, HPROF_ERR_IO, "%s", strerror(errno));
    int rc = HPROF_OK;
    if (fstat(*fd, st) != 0)
        rc = hprof_error_set(err, HPROF_ERR_IO, "%s", strerror(errno));
    else if (S_ISDIR(st->st_mode))
        rc = hprof_error_set(err, HPROF_ERR_IO, "is a directory");
    if (rc != HPROF_OK && *own)
        close(*fd);
    return rc;
}

/* Whether an input opened by open_path() is read as a file (by offset,
 * from its start): a regular file, unless it is standard input past its
 * start, which is read from where it stands, as cat reads it. */
static int read_as_file(int fd, int own, const struct stat *st)
{
    return S_ISREG(st->st_mode) && (own || lseek(fd, 0, SEEK_CUR) <= 0);
}

int input_open(const char *path, unsigned flags, unsigned threads, enum input_inflate how,
               int *out, struct hprof_input_info *info, struct input_stats *stats,
               struct hprof_error *err)
{
    struct input_stats unused;
    int fd, own;
    struct stat st;
    memset(info, 0, sizeof *info);
    if (stats == NULL)
        stats = &unused;
    memset(stats, 0, sizeof *stats);
    int rc = open_path(path, &fd, &own, &st, err);
    if (rc != HPROF_OK)
        return rc;
    int stdin_input = !own, as_file = read_as_file(fd, own, &st);
    int compressed_file = as_file && file_kind(fd) != INPUT_PLAIN;
    if (as_file && !compressed_file) {
        *out = stdin_input ? dup(fd) : fd;
        if (*out < 0)
            return hprof_error_set(err, HPROF_ERR_IO, "%s", strerror(errno));
        return HPROF_OK;
    }
    rc = spool(fd, compressed_file ? (uint64_t)st.st_size : 0, flags, threads, how, out, info,
                   stats, err);
    if (!stdin_input)
        close(fd);
    if (rc == HPROF_OK)
        info->spooled = 1;
    return rc;
}

/* ---- One pass over a stream --------------------------------------------------- */

/* What a stream reader of an input reads, handed over to it (the reader
 * calls stream_close()). */
struct stream_input {
    int fd, own_fd;
    int seekable;               /* a regular file: read with pread from 0 */
    uint64_t offset;            /* bytes of the input given so far */
    uint8_t head[4];            /* a pipe's first bytes, given first */
    size_t n_head;
    /* Compressed: a decompressor on a thread of its own fills `ring`. */
    enum input_kind kind;
    uint64_t file_size;
    unsigned threads;
    struct spool *s;
    struct push_ring *ring;
    struct errand *producer;
    int stop_reading[2];        /* written to when the reader stops (a pipe's), or -1 */
    struct input_stats stats;
    struct hprof_input_info info;
};

static int read_plain(void *ctx, void *buf, size_t len, size_t *got, struct hprof_error *err)
{
    struct stream_input *in = ctx;
    if (in->offset < in->n_head) {
        size_t n = in->n_head - (size_t)in->offset;
        *got = n < len ? n : len;
        memcpy(buf, in->head + in->offset, *got);
        in->offset += *got;
        return HPROF_OK;
    }
    ssize_t n;
    do
        n = in->seekable ? pread(in->fd, buf, len, (off_t)in->offset) : read(in->fd, buf, len);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return hprof_error_set(err, HPROF_ERR_IO, "offset 0x%" PRIx64 ": read: %s", in->offset,
                               strerror(errno));
    *got = (size_t)n;
    in->offset += (uint64_t)n;
    return HPROF_OK;
}

static int read_decompressed(void *ctx, void *buf, size_t len, size_t *got,
                             struct hprof_error *err)
{
    struct stream_input *in = ctx;
    return ring_read(in->ring, buf, len, got, err);
}

static int emit_to_ring(struct spool *s, const uint8_t *p, size_t n, struct hprof_error *err)
{
    return ring_write(s->emit_ctx, p, n, err);
}

/* The decompressor's thread: the input through the checks a copy makes,
 * into the ring, which ends with its error if it fails. */
static void decompress_into_ring(void *arg)
{
    struct stream_input *in = arg;
    struct hprof_error err = { 0 };
    int rc = decompress(in->s, in->kind, in->n_head, in->file_size, in->threads,
                        INPUT_INFLATE_PARALLEL, &err);
    ring_end(in->ring, rc == HPROF_OK ? NULL : &err);
}

/* The pump's thread: a pipe's bytes into the ring as they come, so that
 * the read() calls, and the wake-ups of whoever writes the pipe, are on
 * another core than the reader's parse. */
static void pump_into_ring(void *arg)
{
    struct stream_input *in = arg;
    struct hprof_error err = { 0 };
    int rc = ring_write(in->ring, in->head, in->n_head, &err);
    uint64_t at = in->n_head;
    for (size_t got = 1; rc == HPROF_OK && got > 0;) {
        if (wait_to_read(in->fd, in->stop_reading[0]))
            break; /* the reader stopped: nobody reads what would come */
        if ((rc = ring_write_from(in->ring, in->fd, &got, &err)) == HPROF_OK)
            at += got;
    }
    if (rc != HPROF_OK && err.code == HPROF_ERR_IO) { /* where it failed */
        struct hprof_error where = { 0 };
        hprof_error_set(&where, HPROF_ERR_IO, "offset 0x%" PRIx64 ": %s", at, err.message);
        err = where;
    }
    ring_end(in->ring, rc == HPROF_OK ? NULL : &err);
}

/* The reader is done: a decompressor still writing finds the ring closed
 * and stops; then everything goes. */
static void stream_close(void *ctx)
{
    struct stream_input *in = ctx;
    if (in->ring != NULL)
        ring_close(in->ring, HPROF_ERR_USAGE);
    if (in->stop_reading[1] >= 0) /* a thread waiting on a pipe nobody writes */
        while (write(in->stop_reading[1], "", 1) < 0 && errno == EINTR)
            ;
    errand_free(in->producer);
    for (int i = 0; i < 2; i++)
        if (in->stop_reading[i] >= 0)
            close(in->stop_reading[i]);
    ring_free(in->ring);
    spool_free(in->s);
    if (in->own_fd)
        close(in->fd);
    free(in);
}

/* The pipe that tells the thread reading a pipe that its reader stopped:
 * the pipe's writer may never write or close it, and that thread waits
 * for either. */
static int open_stop_reading(struct stream_input *in, struct hprof_error *err)
{
    if (pipe2(in->stop_reading, O_CLOEXEC) == 0)
        return HPROF_OK;
    in->stop_reading[0] = in->stop_reading[1] = -1;
    return hprof_error_set(err, HPROF_ERR_IO, "pipe2: %s", strerror(errno));
}

/* Start the pump of `in`, a plain pipe. */
static int start_pump(struct stream_input *in, struct hprof_error *err)
{
    if ((in->ring = ring_new(PUSH_RING_BYTES, err)) == NULL)
        return err->code;
    if (open_stop_reading(in, err) != HPROF_OK)
        return err->code;
    if ((in->producer = errand_new(pump_into_ring, in)) == NULL)
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory or threads");
    errand_run(in->producer);
    return HPROF_OK;
}

/* Start the decompressor of `in`. */
static int start_decompressor(struct stream_input *in, struct hprof_error *err)
{
    in->s = spool_new(in->fd, in->seekable, 0, &in->info, &in->stats, err);
    if (in->s == NULL)
        return err->code;
    if ((in->ring = ring_new(PUSH_RING_BYTES, err)) == NULL)
        return err->code;
    if (!in->seekable && open_stop_reading(in, err) != HPROF_OK)
        return err->code;
    in->s->stop_fd = in->stop_reading[0];
    in->s->emit = emit_to_ring;
    in->s->emit_ctx = in->ring;
    memcpy(in->s->in_buf, in->head, in->n_head);
    if ((in->producer = errand_new(decompress_into_ring, in)) == NULL)
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory or threads");
    errand_run(in->producer);
    return HPROF_OK;
}

int hprof_input_open_stream(const char *path, unsigned threads, struct hprof_reader **out,
                            struct hprof_input_info *info, struct hprof_error *err)
{
    int fd, own;
    struct stat st;
    *out = NULL;
    memset(info, 0, sizeof *info);
    int rc = open_path(path, &fd, &own, &st, err);
    if (rc != HPROF_OK)
        return rc;
    struct stream_input *in = calloc(1, sizeof *in);
    if (in == NULL) {
        if (own)
            close(fd);
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
    }
    in->fd = fd;
    in->own_fd = own;
    in->threads = threads;
    in->stop_reading[0] = in->stop_reading[1] = -1;
    in->seekable = read_as_file(fd, own, &st);
    if (in->seekable) {
        in->kind = file_kind(fd);
        in->file_size = (uint64_t)st.st_size;
    } else {
#ifdef F_SETPIPE_SZ /* Linux */
        /* a pipe of 1 MiB rather than 64 KiB: the writer fills it while we
         * parse, and we read it in a sixteenth of the calls and wake-ups
         * (whoever may not grow it, keeps what it has) */
        if (S_ISFIFO(st.st_mode))
            (void)fcntl(fd, F_SETPIPE_SZ, 1 << 20);
#endif
        if ((rc = peek_magic(fd, in->head, &in->n_head, err)) == HPROF_OK)
            in->kind = kind_of(in->head, in->n_head);
    }
    if (rc == HPROF_OK && in->kind != INPUT_PLAIN)
        rc = start_decompressor(in, err);
    else if (rc == HPROF_OK && !in->seekable)
        rc = start_pump(in, err);
    if (rc != HPROF_OK) {
        stream_close(in);
        return rc;
    }
    struct push_ring *ring = in->ring;
    rc = reader_open_stream(out, ring == NULL ? read_plain : read_decompressed, in, stream_close,
                            err);
    if (rc == HPROF_OK && ring != NULL)
        reader_stream_from_ring(*out, ring);
    return rc;
}
