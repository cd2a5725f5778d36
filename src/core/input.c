/*
 * input.c - opening a dump the way the tools need it: seekable and plain.
 * The passes re-read the input, so standard input, pipes and gzip-compressed
 * dumps (jcmd -gz, or gzip(1)) are first copied, decompressed, to an unlinked
 * temporary file in $TMPDIR.  zlib's gzread() reads concatenated members, as
 * the JDK writes them, and passes plain data through unchanged.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "sink_private.h"

#define SPOOL_BUFFER (1u << 20)

static int temp_file(struct hprof_error *err)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    if (dir == NULL || *dir == '\0')
        dir = "/tmp";
    snprintf(path, sizeof path, "%s/hprof-spool-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0)
        return hprof_error_set(err, HPROF_ERR_IO, "%s: cannot create a temporary file: %s",
                               dir, strerror(errno));
    unlink(path);
    return fd;
}

/* Copy everything `from` yields (decompressed if gzip) into a temporary file. */
static int spool(int from, const char *name, int *out, struct hprof_error *err)
{
    int tmp = temp_file(err);
    if (tmp < 0)
        return tmp;
    int dupfd = dup(from);
    gzFile gz = dupfd >= 0 ? gzdopen(dupfd, "rb") : NULL;
    uint8_t *buf = malloc(SPOOL_BUFFER);
    int rc = HPROF_OK;
    if (gz == NULL || buf == NULL) {
        if (dupfd >= 0 && gz == NULL)
            close(dupfd);
        rc = hprof_error_set(err, HPROF_ERR_NOMEM, "%s: cannot start reading", name);
        goto out;
    }
    gzbuffer(gz, SPOOL_BUFFER);
    for (;;) {
        int n = gzread(gz, buf, SPOOL_BUFFER);
        if (n < 0) {
            int zerr;
            const char *msg = gzerror(gz, &zerr);
            rc = hprof_error_set(err, zerr == Z_ERRNO ? HPROF_ERR_IO : HPROF_ERR_FORMAT,
                                 "%s: %s", name, zerr == Z_ERRNO ? strerror(errno) : msg);
            goto out;
        }
        if (n == 0)
            break;
        if ((rc = sink_write_fd(tmp, buf, (size_t)n, err)) != HPROF_OK)
            goto out;
    }
    /* gzread() reports a stream cut short only through gzclose(). */
    int zrc = gzclose(gz);
    gz = NULL;
    if (zrc == Z_BUF_ERROR)
        rc = hprof_error_set(err, HPROF_ERR_FORMAT, "%s: gzip input is truncated", name);
    else if (zrc != Z_OK)
        rc = hprof_error_set(err, HPROF_ERR_FORMAT, "%s: gzip input is corrupt", name);
out:
    if (gz != NULL)
        gzclose(gz);
    free(buf);
    if (rc != HPROF_OK) {
        close(tmp);
        return rc;
    }
    *out = tmp;
    return HPROF_OK;
}

static int is_gzip(int fd)
{
    uint8_t magic[2];
    return pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

int hprof_input_open(const char *path, int *out, int *spooled, struct hprof_error *err)
{
    int stdin_input = strcmp(path, "-") == 0;
    int fd = stdin_input ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (spooled)
        *spooled = 0;
    if (fd < 0)
        return hprof_error_set(err, HPROF_ERR_IO, "%s: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        int rc = hprof_error_set(err, HPROF_ERR_IO, "%s: %s", path, strerror(errno));
        if (!stdin_input)
            close(fd);
        return rc;
    }
    if (S_ISDIR(st.st_mode)) {
        if (!stdin_input)
            close(fd);
        return hprof_error_set(err, HPROF_ERR_IO, "%s: is a directory", path);
    }
    if (S_ISREG(st.st_mode) && !is_gzip(fd)) {
        *out = stdin_input ? dup(fd) : fd;
        if (*out < 0)
            return hprof_error_set(err, HPROF_ERR_IO, "%s: %s", path, strerror(errno));
        return HPROF_OK;
    }
    int rc = spool(fd, stdin_input ? "(stdin)" : path, out, err);
    if (!stdin_input)
        close(fd);
    if (rc == HPROF_OK && spooled)
        *spooled = 1;
    return rc;
}
