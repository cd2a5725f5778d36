/*
 * sink.c - sinks for plain output: a file descriptor behind a 1 MiB buffer,
 * and memory (for tests and fuzzing).  gzip lives in gzip_out.c.
 */
#define _GNU_SOURCE /* sync_file_range(), fallocate() */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "errand.h"
#include "sink_private.h"

#define FD_BUFFER (1u << 20)

/* The most one write(2) is given.  A larger one (a pixel buffer of 14 MiB
 * written whole) ran at a third of the speed into preallocated blocks of
 * ext4 and at a tenth without, against writes of 0.5-4 MiB. */
#define WRITE_MAX ((size_t)1 << 20)

/* write(2) all of `buf` to `fd`, or pwrite(2) it at `offset` unless that is
 * -1, WRITE_MAX at a time, retrying on EINTR and short writes. */
static int put_all(int fd, const void *buf, size_t len, int64_t offset, struct hprof_error *err)
{
    const uint8_t *p = buf;
    while (len > 0) {
        size_t want = len < WRITE_MAX ? len : WRITE_MAX;
        ssize_t n = offset < 0 ? write(fd, p, want) : pwrite(fd, p, want, (off_t)offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return hprof_error_set(err, HPROF_ERR_IO, "write: %s", strerror(errno));
        if (n == 0)
            return hprof_error_set(err, HPROF_ERR_IO, "write: no progress");
        p += n;
        len -= (size_t)n;
        if (offset >= 0)
            offset += n;
    }
    return HPROF_OK;
}

int sink_write_fd(int fd, const void *buf, size_t len, struct hprof_error *err)
{
    return put_all(fd, buf, len, -1, err);
}

/* pread(2), again when a signal interrupts it. */
static ssize_t pread_retrying(int fd, void *buf, size_t len, uint64_t offset)
{
    ssize_t n;
    do
        n = pread(fd, buf, len, (off_t)offset);
    while (n < 0 && errno == EINTR);
    return n;
}

/* The `len` bytes at `at` of the area `what` of `fd`'s file, which starts
 * at file offset `base`, read whole. */
static int read_whole(int fd, uint64_t base, const char *what, uint64_t at, void *buf, size_t len,
                      struct hprof_error *err)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = pread_retrying(fd, p, len, base + at);
        if (n <= 0)
            return hprof_error_set(err, HPROF_ERR_IO, "%s offset 0x%" PRIx64 ": read: %s", what,
                                   at, n < 0 ? strerror(errno) : "the file is shorter");
        p += n;
        at += (uint64_t)n;
        len -= (size_t)n;
    }
    return HPROF_OK;
}

/* No more writes through the room: they must see the sink's state. */
static void close_room(struct hprof_sink *s)
{
    s->room_cap = 0;
    s->room_len = 0;
}

/* What a write or copy of `len` bytes that returned `rc` leaves: the bytes
 * counted, or a failed sink that takes nothing more. */
static int took(struct hprof_sink *s, int rc, size_t len)
{
    if (rc != HPROF_OK) {
        s->failed = 1;
        close_room(s);
    } else {
        s->bytes += len;
    }
    return rc;
}

int hprof_sink_write(struct hprof_sink *s, const void *buf, size_t len)
{
    if (s->failed || s->finished)
        return hprof_error_set(s->err, HPROF_ERR_USAGE, "write to a failed or finished sink");
    if (len == 0)
        return HPROF_OK;
    if (len <= s->room_cap - s->room_len)
        return sink_put(s, buf, len);
    return took(s, s->ops->write(s, buf, len), len);
}

int sink_copy(struct hprof_sink *s, int from, uint64_t offset, const void *buf, size_t len,
              uint64_t next)
{
    if (s->ops->copy == NULL || s->failed || s->finished || len == 0)
        return hprof_sink_write(s, buf, len);
    return took(s, s->ops->copy(s, from, offset, buf, len, next), len);
}

/* ---- Scratch area ------------------------------------------------------ */

/* Scratch writes fail without failing the sink: the caller keeps its
 * bytes another way (the one-pass shrink decides them by its rule). */
int sink_scratch_write(struct hprof_sink *s, uint64_t at, const void *buf, size_t len)
{
    struct file_scratch *fs = &s->scratch;
    if (s->failed || s->finished || !fs->on || s->bytes >= SINK_SCRATCH_AT ||
        at > SINK_SCRATCH_AT)
        return HPROF_ERR_USAGE;
    struct hprof_error quiet = { 0 };
    uint64_t file_at = fs->start + SINK_SCRATCH_AT + at;
    struct rlimit max;
    /* past a limit on file size the kernel would send SIGXFSZ, which
     * kills a process that does not ignore it */
    if (getrlimit(RLIMIT_FSIZE, &max) == 0 && max.rlim_cur != RLIM_INFINITY &&
        file_at + len > (uint64_t)max.rlim_cur)
        return HPROF_ERR_IO;
    fs->used = 1;
    return put_all(fs->fd, buf, len, (int64_t)file_at, &quiet);
}

int sink_scratch_read(struct hprof_sink *s, uint64_t at, void *buf, size_t len)
{
    struct file_scratch *fs = &s->scratch;
    if (s->failed || !fs->on)
        return hprof_error_set(s->err, HPROF_ERR_USAGE, "scratch read from a failed sink");
    return took(s, read_whole(fs->fd, fs->start + SINK_SCRATCH_AT, "scratch", at, buf, len, s->err),
                0);
}

void sink_scratch_release(struct hprof_sink *s, uint64_t at, uint64_t len)
{
    if (s->failed || !s->scratch.on || len == 0)
        return;
#ifdef FALLOC_FL_PUNCH_HOLE
    /* a file system that cannot punch keeps the blocks until the cut */
    (void)fallocate(s->scratch.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                    (off_t)(s->scratch.start + SINK_SCRATCH_AT + at), (off_t)len);
#else
    (void)at;
#endif
}

/* Whether `fd` is a regular file that pwrite() and pread() reach, from
 * `*start` (its offset now) on: seekable, open for reading too, and not
 * for appending (where Linux's pwrite() writes at the end too). */
static int readable_file(int fd, uint64_t *start)
{
    off_t at = lseek(fd, 0, SEEK_CUR);
    int flags = fcntl(fd, F_GETFL);
    struct stat st; /* a device that seeks (/dev/null) reads back nothing */
    *start = at >= 0 ? (uint64_t)at : 0;
    return at >= 0 && flags >= 0 && !(flags & O_APPEND) && (flags & O_ACCMODE) == O_RDWR &&
           fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

uint64_t sink_scratch_room(const struct hprof_sink *s)
{
    struct statvfs vfs;
    if (!s->scratch.on || fstatvfs(s->scratch.fd, &vfs) != 0)
        return UINT64_MAX;
    return (uint64_t)vfs.f_bavail * vfs.f_frsize;
}

int sink_scratch_open(struct hprof_sink *s, int fd)
{
    struct file_scratch *fs = &s->scratch;
    fs->on = readable_file(fd, &fs->start);
    fs->fd = fd;
    fs->used = 0;
    return fs->on;
}

/* The file cut back to where its writes end, once its scratch area was
 * used: the output, whatever its encoding, is all that stays. */
static int cut_scratch(struct hprof_sink *s, struct hprof_error *err)
{
    struct file_scratch *fs = &s->scratch;
    if (!fs->used)
        return HPROF_OK;
    fs->used = 0;
    off_t end = lseek(fs->fd, 0, SEEK_CUR);
    if (end >= 0 && ftruncate(fs->fd, end) == 0)
        return HPROF_OK;
    return hprof_error_set(err, HPROF_ERR_IO, "truncate: %s", strerror(errno));
}

/* Give back the blocks reserved past the end of the file, whatever the
 * bookkeeping says (a fallocate() that fails on a full disk may keep part
 * of what it allocated).  Cutting the file at its own size never changes
 * its contents; should it fail, the blocks stay reserved until the file
 * goes, and nothing else is wrong. */
static void release_reserve(struct hprof_sink *s)
{
    struct stat st;
    if (s->reserving && fstat(s->reserve_fd, &st) == 0)
        (void)ftruncate(s->reserve_fd, st.st_size);
    s->reserving = 0;
}

int hprof_sink_finish(struct hprof_sink *s)
{
    struct hprof_error quiet = { 0 };
    if (s->failed) {
        (void)cut_scratch(s, &quiet);
        release_reserve(s);
        return s->err && s->err->code ? s->err->code : HPROF_ERR_IO;
    }
    if (s->finished)
        return HPROF_OK;
    s->finished = 1;
    int rc = s->ops->finish(s); /* drains the room */
    if (rc == HPROF_OK)
        rc = cut_scratch(s, s->err);
    close_room(s);
    release_reserve(s);
    if (rc != HPROF_OK)
        s->failed = 1;
    return rc;
}

/* Whether the `len` bytes at output offset `at` are written already. */
static int written_already(const struct hprof_sink *s, uint64_t at, size_t len)
{
    return at <= s->bytes && len <= s->bytes - at;
}

int sink_patch(struct hprof_sink *s, uint64_t at, const void *buf, size_t len)
{
    if (s->failed || s->finished || !sink_can_patch(s))
        return hprof_error_set(s->err, HPROF_ERR_USAGE, "patch of a failed or finished sink");
    if (!written_already(s, at, len))
        return hprof_error_set(s->err, HPROF_ERR_USAGE, "patch past the bytes written");
    return took(s, s->ops->patch(s, at, buf, len), 0);
}

int sink_read_back(struct hprof_sink *s, uint64_t at, void *buf, size_t len)
{
    if (s->failed || !sink_can_read_back(s))
        return hprof_error_set(s->err, HPROF_ERR_USAGE, "read back from a failed sink");
    if (!written_already(s, at, len))
        return hprof_error_set(s->err, HPROF_ERR_USAGE, "read back past the bytes written");
    return took(s, s->ops->read_back(s, at, buf, len), 0);
}

uint64_t hprof_sink_bytes(const struct hprof_sink *s)
{
    return s->bytes;
}

uint64_t hprof_sink_file_bytes(const struct hprof_sink *s)
{
    return s->file_bytes;
}

void hprof_sink_free(struct hprof_sink *s)
{
    struct hprof_error quiet = { 0 };
    if (s == NULL)
        return;
    (void)cut_scratch(s, &quiet);
    s->ops->free(s);
}

/* ---- File descriptor ---------------------------------------------------- */

/* `n` more bytes are in the file: start writing it back when due. */
static void wrote(struct hprof_sink *s, int fd, uint64_t n)
{
    if (s->writeback_step == 0)
        return;
    s->unsynced += n;
    if (s->unsynced >= s->writeback_step) {
        s->unsynced = 0;
        s->writebacks++;
#ifdef SYNC_FILE_RANGE_WRITE
        /* The whole file: pages already on their way are left alone, and
         * the fd's offset need not be known.  A failure (a pipe, a file
         * system without it) only means the final fsync() does the work. */
        (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#else
        (void)fd;
#endif
    }
}

/* Reserve the blocks of a write of `len` bytes to `fd` if they are not
 * yet: a write into reserved blocks takes less of the kernel's time than
 * one that makes the file grow a page at a time (ext4).  Only at the end of a regular file: the
 * reserve keeps the file's size (FALLOC_FL_KEEP_SIZE), and a file system
 * that cannot reserve is written as it would be without. */
static void reserve_ahead(struct hprof_sink *s, int fd, size_t len)
{
#ifdef FALLOC_FL_KEEP_SIZE
    if (!s->reserving) {
        struct stat st;
        off_t at;
        if (s->preallocate_step == 0)
            return;
        at = lseek(fd, 0, SEEK_CUR);
        if (at < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || at != st.st_size) {
            s->preallocate_step = 0;
            return;
        }
        s->reserving = 1;
        s->reserve_fd = fd;
        s->file_pos = s->reserved_to = (uint64_t)at;
    }
    uint64_t end = s->file_pos + len, step = s->preallocate_step;
    if (step > 0 && end > s->reserved_to) {
        uint64_t grow = (end - s->reserved_to + step - 1) / step * step;
        int rc;
        do
            rc = fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)s->reserved_to, (off_t)grow);
        while (rc != 0 && errno == EINTR);
        if (rc == 0)
            s->reserved_to += grow;
        else
            s->preallocate_step = 0; /* no more; what is reserved is released at the end */
    }
    s->file_pos = end; /* even with no more reserving: a step set again starts here */
#else
    (void)s;
    (void)fd;
    (void)len;
#endif
}

int sink_write_file(struct hprof_sink *s, int fd, const void *buf, size_t len)
{
    reserve_ahead(s, fd, len);
    int rc = sink_write_fd(fd, buf, len, s->err);
    if (rc == HPROF_OK) {
        s->file_bytes += len;
        wrote(s, fd, len);
    }
    return rc;
}

void hprof_sink_set_writeback(struct hprof_sink *s, uint64_t step)
{
    s->writeback_step = step;
}

void hprof_sink_set_preallocate(struct hprof_sink *s, uint64_t step)
{
    s->preallocate_step = step;
}

/* The next bytes of a copy, read on a thread of their own while the
 * calling thread writes the last ones (sink_copy_ahead()): one read at a
 * time, into one of two rooms of its own, in turn. */
struct copy_ahead {
    struct errand *errand;
    uint8_t *rooms[2];
    int turn;               /* the room the next read goes to */
    int asked;              /* a read was asked for and not yet taken */
    uint64_t taken;         /* bytes written from reads made ahead (tests) */
    /* the read, and its result once done */
    int from;
    uint64_t offset;
    uint8_t *into;
    size_t want;
    ssize_t got;
    int error;
};

/* The buffer is the sink's room: writes that fit never reach fd_write(). */
struct fd_sink {
    struct hprof_sink base;
    int fd;
    uint64_t start;         /* the file offset of the first byte (seekable files) */
    struct copy_ahead *ahead; /* NULL: copies read on the caller's thread */
};

static int fd_flush(struct fd_sink *f)
{
    int rc = sink_write_file(&f->base, f->fd, f->base.room, f->base.room_len);
    f->base.room_len = 0;
    return rc;
}

/* `len` bytes that do not fit what is left of the room. */
static int fd_write(struct hprof_sink *s, const void *buf, size_t len)
{
    struct fd_sink *f = (struct fd_sink *)s;
    int rc = fd_flush(f);
    if (rc != HPROF_OK)
        return rc;
    if (len >= FD_BUFFER / 2) /* big: skip the copy */
        return sink_write_file(s, f->fd, buf, len);
    memcpy(s->room, buf, len);
    s->room_len = len;
    return HPROF_OK;
}

static void copy_ahead_task(void *arg)
{
    struct copy_ahead *a = arg;
    ssize_t n = pread_retrying(a->from, a->into, a->want, a->offset);
    a->got = n;
    a->error = n < 0 ? errno : 0;
}

/* Stops the thread once its read is done. */
static void copy_ahead_free(struct copy_ahead *a)
{
    if (a == NULL)
        return;
    errand_free(a->errand);
    free(a->rooms[0]);
    free(a->rooms[1]);
    free(a);
}

/* NULL when out of memory or threads. */
static struct copy_ahead *copy_ahead_new(void)
{
    struct copy_ahead *a = calloc(1, sizeof *a);
    if (a == NULL)
        return NULL;
    a->rooms[0] = malloc(FD_BUFFER);
    a->rooms[1] = malloc(FD_BUFFER);
    if (a->rooms[0] == NULL || a->rooms[1] == NULL ||
        (a->errand = errand_new(copy_ahead_task, a)) == NULL) {
        copy_ahead_free(a);
        return NULL;
    }
    return a;
}

/* Read up to a room of the `want` bytes of `from` at `offset`, on the
 * thread, into the room after the last one's.  The last read must have
 * been taken. */
static void copy_ahead_ask(struct copy_ahead *a, int from, uint64_t offset, uint64_t want)
{
    a->from = from;
    a->offset = offset;
    a->into = a->rooms[a->turn];
    a->want = want < FD_BUFFER ? (size_t)want : FD_BUFFER;
    a->asked = 1;
    a->turn ^= 1;
    errand_run(a->errand);
}

static int read_failed(struct hprof_sink *s, uint64_t at, int error)
{
    return hprof_error_set(s->err, HPROF_ERR_IO, "read at byte %llu: %s", (unsigned long long)at,
                           strerror(error));
}

/* The read asked for, once done, if it is of `from` at `offset`: `*ready`
 * its first bytes (no more than `len`), or the error of a failed read.
 * Any other is dropped.  Its room stays as it is until the read after the
 * next one is asked for. */
static int copy_ahead_take(struct hprof_sink *s, struct copy_ahead *a, int from, uint64_t offset,
                           size_t len, const uint8_t **ready, size_t *ready_len)
{
    *ready_len = 0;
    if (!a->asked)
        return HPROF_OK;
    a->asked = 0;
    errand_wait(a->errand);
    if (a->from != from || a->offset != offset)
        return HPROF_OK;
    if (a->got < 0)
        return read_failed(s, offset, a->error);
    *ready = a->into;
    *ready_len = (size_t)a->got < len ? (size_t)a->got : len;
    a->taken += *ready_len;
    return HPROF_OK;
}

/* Array contents still in the input: read from its file into a room, a
 * room at a time, and written from there.  Nothing of them is mapped, so
 * kept pixels add nothing to the mapped pages.  copy_file_range() was
 * slower: it moves a page at a time, and as the output's pages do not
 * start where the input's do, each output page took two partial writes;
 * splice() through a pipe, faster alone, was no faster in the shrink.
 * With a read-ahead thread, the bytes that `next` says follow are read
 * there while these are written, and the copy of them finds them read.
 * A read that comes short (the input shrank since it was mapped) leaves
 * the rest to the mapping, whose fault the tools report. */
static int fd_copy(struct hprof_sink *s, int from, uint64_t offset, const void *buf, size_t len,
                   uint64_t next)
{
    struct fd_sink *f = (struct fd_sink *)s;
    int rc = fd_flush(f);
    const uint8_t *ready = NULL;
    size_t done = 0;
    if (rc == HPROF_OK && f->ahead != NULL)
        rc = copy_ahead_take(s, f->ahead, from, offset, len, &ready, &done);
    if (rc == HPROF_OK && f->ahead != NULL && next > 0)
        copy_ahead_ask(f->ahead, from, offset + len, next);
    if (rc == HPROF_OK && done > 0)
        rc = sink_write_file(s, f->fd, ready, done);
    while (rc == HPROF_OK && done < len) {
        size_t want = len - done < FD_BUFFER ? len - done : FD_BUFFER;
        ssize_t n = pread_retrying(from, s->room, want, offset + done);
        if (n < 0)
            return read_failed(s, offset + done, errno);
        if (n == 0)
            break;
        rc = sink_write_file(s, f->fd, s->room, (size_t)n);
        done += (size_t)n;
    }
    if (rc == HPROF_OK && done < len)
        rc = sink_write_file(s, f->fd, (const uint8_t *)buf + done, len - done);
    return rc;
}

static int fd_finish(struct hprof_sink *s)
{
    struct fd_sink *f = (struct fd_sink *)s;
    return fd_flush(f);
}

static void fd_free(struct hprof_sink *s)
{
    copy_ahead_free(((struct fd_sink *)s)->ahead);
    free(s->room);
    free(s);
}

/* Bytes still in the room are patched there, the others in the file. */
static int fd_patch(struct hprof_sink *s, uint64_t at, const void *buf, size_t len)
{
    struct fd_sink *f = (struct fd_sink *)s;
    uint64_t room_at = s->bytes - s->room_len; /* output offset of room[0] */
    const uint8_t *p = buf;
    if (at < room_at) {
        size_t n = at + len <= room_at ? len : (size_t)(room_at - at);
        int rc = put_all(f->fd, p, n, (int64_t)(f->start + at), s->err);
        if (rc != HPROF_OK)
            return rc;
        p += n;
        at += n;
        len -= n;
    }
    if (len > 0)
        memcpy(s->room + (at - room_at), p, len);
    return HPROF_OK;
}

/* Bytes still in the room are read there, the others from the file (an
 * output opened write-only cannot be read: EBADF says so). */
static int fd_read_back(struct hprof_sink *s, uint64_t at, void *buf, size_t len)
{
    const struct fd_sink *f = (const struct fd_sink *)s;
    uint64_t room_at = s->bytes - s->room_len;
    uint8_t *p = buf;
    size_t from_file = at >= room_at ? 0 : at + len <= room_at ? len : (size_t)(room_at - at);
    int rc = read_whole(f->fd, f->start, "output", at, p, from_file, s->err);
    if (rc == HPROF_OK && len > from_file)
        memcpy(p + from_file, s->room + (at + from_file - room_at), len - from_file);
    return rc;
}

static const struct sink_ops fd_ops = { .write = fd_write, .finish = fd_finish, .free = fd_free };
static const struct sink_ops fd_seekable_ops = {
    .write = fd_write, .finish = fd_finish, .free = fd_free, .patch = fd_patch, .copy = fd_copy,
};
/* A file open for reading too: what was written can be read back. */
static const struct sink_ops fd_readable_ops = {
    .write = fd_write, .finish = fd_finish, .free = fd_free, .patch = fd_patch, .copy = fd_copy,
    .read_back = fd_read_back,
};

struct hprof_sink *hprof_sink_new_fd(int fd, struct hprof_error *err)
{
    struct fd_sink *f = calloc(1, sizeof *f);
    uint8_t *buf = malloc(FD_BUFFER);
    if (f == NULL || buf == NULL) {
        free(f);
        free(buf);
        hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    /* Bytes written can be patched with pwrite() where the file can seek,
     * unless every write goes to its end (O_APPEND: Linux's pwrite too). */
    off_t start = lseek(fd, 0, SEEK_CUR);
    int flags = fcntl(fd, F_GETFL);
    int seekable = start >= 0 && flags >= 0 && !(flags & O_APPEND);
    int readable = sink_scratch_open(&f->base, fd);
    f->base.ops = readable ? &fd_readable_ops : seekable ? &fd_seekable_ops : &fd_ops;
    f->base.err = err;
    f->base.room = buf;
    f->base.room_cap = FD_BUFFER;
    f->fd = fd;
    f->start = seekable ? (uint64_t)start : 0;
    return &f->base;
}

uint64_t sink_copied_ahead(struct hprof_sink *s)
{
    const struct fd_sink *f = (const struct fd_sink *)s;
    if (s->ops->copy != fd_copy || f->ahead == NULL)
        return 0;
    if (f->ahead->asked) /* done before it is looked at */
        errand_wait(f->ahead->errand);
    return f->ahead->taken;
}

int sink_copy_ahead(struct hprof_sink *s, int on)
{
    if (s->ops->copy != fd_copy)
        return 0;
    struct fd_sink *f = (struct fd_sink *)s;
    if (!on) {
        copy_ahead_free(f->ahead);
        f->ahead = NULL;
    } else if (f->ahead == NULL) {
        f->ahead = copy_ahead_new();
    }
    return f->ahead != NULL;
}

/* ---- Memory -------------------------------------------------------------- */

struct mem_sink {
    struct hprof_sink base;
    uint8_t *data;
    size_t len, cap;
    size_t max;             /* refuse to hold more (0: no limit) */
    int over;               /* ... and was asked to */
};

static int mem_write(struct hprof_sink *s, const void *buf, size_t len)
{
    struct mem_sink *m = (struct mem_sink *)s;
    if (len > SIZE_MAX / 2 - m->len)
        return hprof_error_set(s->err, HPROF_ERR_NOMEM, "memory sink: too large");
    if (m->max > 0 && m->len + len > m->max) {
        m->over = 1;
        return hprof_error_set(s->err, HPROF_ERR_NOMEM, "memory sink: over %zu bytes", m->max);
    }
    if (m->len + len > m->cap) {
        size_t cap = m->cap ? m->cap : 4096;
        while (cap < m->len + len)
            cap *= 2;
        uint8_t *grown = realloc(m->data, cap);
        if (grown == NULL)
            return hprof_error_set(s->err, HPROF_ERR_NOMEM, "memory sink: out of memory");
        m->data = grown;
        m->cap = cap;
    }
    memcpy(m->data + m->len, buf, len);
    m->len += len;
    return HPROF_OK;
}

static int mem_finish(struct hprof_sink *s)
{
    (void)s;
    return HPROF_OK;
}

static void mem_free(struct hprof_sink *s)
{
    struct mem_sink *m = (struct mem_sink *)s;
    free(m->data);
    free(m);
}

static const struct sink_ops mem_ops = { .write = mem_write, .finish = mem_finish, .free = mem_free };

struct hprof_sink *hprof_sink_new_memory(struct hprof_error *err)
{
    struct mem_sink *m = calloc(1, sizeof *m);
    if (m == NULL) {
        hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    m->base.ops = &mem_ops;
    m->base.err = err;
    return &m->base;
}

struct hprof_sink *mem_sink_new_capped(size_t max, struct hprof_error *err)
{
    struct hprof_sink *s = hprof_sink_new_memory(err);
    if (s != NULL)
        ((struct mem_sink *)s)->max = max;
    return s;
}

int mem_sink_over(const struct hprof_sink *s)
{
    return ((const struct mem_sink *)s)->over;
}

void mem_sink_swap(struct hprof_sink *s, uint8_t **data, size_t *len, size_t *cap)
{
    struct mem_sink *m = (struct mem_sink *)s;
    uint8_t *held = m->data;
    size_t held_len = m->len, held_cap = m->cap;
    m->data = *data;
    m->cap = *cap;
    m->len = 0;
    m->over = 0;
    s->bytes = 0;
    s->failed = s->finished = 0;
    *data = held;
    *len = held_len;
    *cap = held_cap;
}

const uint8_t *hprof_sink_memory_data(const struct hprof_sink *s, size_t *len)
{
    const struct mem_sink *m = (const struct mem_sink *)s;
    if (s->ops != &mem_ops) {
        *len = 0;
        return NULL;
    }
    *len = m->len;
    return m->data;
}

/* ---- Null: counts only ------------------------------------------------------ */

static int null_write(struct hprof_sink *s, const void *buf, size_t len)
{
    (void)s;
    (void)buf;
    (void)len;
    return HPROF_OK;
}

static void null_free(struct hprof_sink *s)
{
    free(s);
}

static const struct sink_ops null_ops = { .write = null_write, .finish = mem_finish, .free = null_free };

struct hprof_sink *hprof_sink_new_null(struct hprof_error *err)
{
    struct hprof_sink *s = calloc(1, sizeof *s);
    if (s == NULL) {
        hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->ops = &null_ops;
    s->err = err;
    return s;
}
