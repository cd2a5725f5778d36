/*
 * input.c - opening a dump the way the tools need it: seekable and plain.
 * The passes re-read the input, so standard input, pipes and gzip- or
 * zstd-compressed dumps (jcmd -gz, gzip(1), zstd(1)) are first copied,
 * decompressed, to an unlinked temporary file in $TMPDIR.
 *
 * The copy checks what it is given as it goes (input_stream.c).
 * Messages do not repeat the input's name: the tools print it before them.
 *
 * A gzip file (not a pipe) of many members is inflated on every core
 * (input_members.c).
 */
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

#include "input_spool.h"
#include "pool.h"

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

static int is_gzip(int fd)
{
    uint8_t magic[2];
    return pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

static int is_zstd(int fd)
{
    uint8_t magic[4];
    return pread(fd, magic, 4, 0) == 4 && spool_is_zstd(magic, 4);
}

/* Copy everything `from` yields, decompressed if gzip or zstd, into a
 * temporary file; *out is that file on success.  `file_size` > 0: `from`
 * is a compressed file of that size (read with pread; gzip inflated as
 * `how` says); else a stream. */
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
    s->room = spool_free_bytes(s->out);
    if (s->seekable && is_zstd(from)) {
        rc = spool_unzstd(s, 0, err);
        goto out;
    }
    if (s->seekable) {
        rc = how == INPUT_INFLATE_STREAM ? spool_inflate_stream(s, 0, 0, 0, &end, &done, err)
                                         : spool_inflate_members(s, file_size, threads, err);
        goto out;
    }
    /* The first four bytes say gzip, zstd or neither; a pipe may give one
     * at a time. */
    size_t got = 0;
    while (got < 4) {
        ssize_t n = read(from, s->in_buf + got, 4 - got);
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
    if (got >= 2 && s->in_buf[0] == 0x1f && s->in_buf[1] == 0x8b) /* they stay in in_buf */
        rc = spool_inflate_stream(s, 0, got, 0, &end, &done, err);
    else if (spool_is_zstd(s->in_buf, got))
        rc = spool_unzstd(s, got, err);
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
    int compressed_file = S_ISREG(st.st_mode) && (is_gzip(fd) || is_zstd(fd));
    if (S_ISREG(st.st_mode) && !compressed_file) {
        *out = stdin_input ? dup(fd) : fd;
        if (*out < 0)
            return hprof_error_set(err, HPROF_ERR_IO, "%s", strerror(errno));
        return HPROF_OK;
    }
    int rc = spool(fd, compressed_file ? (uint64_t)st.st_size : 0, flags, threads, how, out, info,
                   stats, err);
    if (!stdin_input)
        close(fd);
    if (rc == HPROF_OK)
        info->spooled = 1;
    return rc;
}
