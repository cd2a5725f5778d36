/*
 * sink_private.h - the sink interface shared by sink.c and gzip_out.c.
 * A sink is a small vtable over "where bytes go"; it counts what it accepts.
 */
#ifndef HPROF_SINK_PRIVATE_H
#define HPROF_SINK_PRIVATE_H

#include <string.h>

#include "hprof_private.h"

struct sink_ops {
    int (*write)(struct hprof_sink *s, const void *buf, size_t len);
    int (*finish)(struct hprof_sink *s);
    void (*free)(struct hprof_sink *s);
    /* Overwrite bytes already written (sink_patch()); NULL where they are
     * gone for good: a pipe, a gzip member. */
    int (*patch)(struct hprof_sink *s, uint64_t at, const void *buf, size_t len);
    /* Append the `len` bytes at `offset` of file `from`, which are also
     * at `buf`, read from that file rather than from `buf` (sink_copy());
     * NULL where the sink wants the bytes themselves. */
    int (*copy)(struct hprof_sink *s, int from, uint64_t offset, const void *buf, size_t len,
                uint64_t next);
    /* Read bytes already written back (sink_read_back()); NULL where they
     * are gone. */
    int (*read_back)(struct hprof_sink *s, uint64_t at, void *buf, size_t len);
};

/* The scratch area of the file a sink writes (sink_scratch_write()): any
 * sink whose file is a regular one, open for reading too, has one, since
 * bytes far past the output are the file's own whatever the output's
 * encoding (gzip, zstd).  Written and read on the sink's thread only. */
struct file_scratch {
    int on;
    int fd;
    uint64_t start;         /* the file offset of the output's first byte */
    int used;               /* the file reaches into the area */
};

struct hprof_sink {
    const struct sink_ops *ops;
    struct hprof_error *err;
    uint64_t bytes;
    int failed;
    int finished;
    /* A buffer the sink lets sink_put() fill without calling it (0 bytes
     * of room for sinks that do not): the writer makes several small
     * writes per record.  room_cap drops to 0 once the sink fails or
     * finishes, so that such writes go through hprof_sink_write(). */
    uint8_t *room;
    size_t room_len, room_cap;
    /* hprof_sink_set_writeback(): bytes written to the file since the
     * last request to write it back, and how many requests were made. */
    uint64_t writeback_step, unsynced;
    uint64_t writebacks;
    uint64_t file_bytes;    /* hprof_sink_file_bytes() */
    /* hprof_sink_set_preallocate(): the file's blocks are reserved up to
     * `reserved_to`, `preallocate_step` at a time ahead of `file_pos`,
     * where the next write lands; `reserving` once both are known. */
    uint64_t preallocate_step, file_pos, reserved_to;
    int reserving, reserve_fd;
    struct file_scratch scratch;
};

/* hprof_sink_write(), inline while 1 or more bytes fit the sink's room
 * (nothing goes the long way, which refuses it on a failed sink). */
static inline int sink_put(struct hprof_sink *s, const void *buf, size_t len)
{
    if (len - 1 < s->room_cap - s->room_len) {
        memcpy(s->room + s->room_len, buf, len);
        s->room_len += len;
        s->bytes += len;
        return HPROF_OK;
    }
    return hprof_sink_write(s, buf, len);
}

/* hprof_sink_write() of `len` bytes that are also those of file `from` at
 * `offset`: a file sink reads them from there (pread), so that `buf`, a
 * mapping, is never faulted in, and falls back to writing `buf` where the
 * file ends early.  `next`: how many bytes of `from` right after these the
 * next copy will ask for (0: none or not known), which a sink reading
 * ahead reads while it writes these. */
int sink_copy(struct hprof_sink *s, int from, uint64_t offset, const void *buf, size_t len,
              uint64_t next);
/* (`from` must then stay open and be the same file until the next
 * sink_copy(), sink_copy_ahead(s, 0) or hprof_sink_free().) */

/* With `on`, a file sink reads the bytes a sink_copy() says come next on
 * a thread of its own while it writes that copy's, so that its caller's
 * thread mostly writes; without, the thread stops (as it does when the
 * sink is freed).  @return whether copies now read ahead (not on other
 * sinks, nor without a thread: they are then read by the calling thread). */
int sink_copy_ahead(struct hprof_sink *s, int on);
/* Bytes copies took from reads made ahead so far; a read still under way
 * is waited for first.  For tests, the only way to observe them: a copy
 * writes the same bytes whether they were read ahead or not, and only the
 * wait tells a test that a read made ahead is done, so that it can change
 * the input after it and before the copy that takes it. */
uint64_t sink_copied_ahead(struct hprof_sink *s);

/* Whether sink_copy() reads from the file, rather than write the bytes. */
static inline int sink_can_copy(const struct hprof_sink *s)
{
    return s->ops->copy != NULL;
}

/* Whether sink_read_back() works on `s`. */
static inline int sink_can_read_back(const struct hprof_sink *s)
{
    return s->ops->read_back != NULL;
}

/* The `len` bytes written at output offset `at`, read again: from the
 * file, or from the sink's buffer for those not written to it yet.
 * @return HPROF_OK, or an error (the sink is then failed). */
int sink_read_back(struct hprof_sink *s, uint64_t at, void *buf, size_t len);

/* Whether `s` has a scratch area (sink_scratch_write()). */
static inline int sink_has_scratch(const struct hprof_sink *s)
{
    return s->scratch.on;
}

/* A sink writing a regular file opened for reading too keeps bytes its
 * user will want later (the one-pass shrink's large arrays waiting for a
 * claim, names not used yet) in a scratch area of the file,
 * SINK_SCRATCH_AT bytes past the output's start: the blocks between are
 * never written (a sparse file), and the file is cut back to the output
 * when the sink is finished or freed.  Nothing about the output changes;
 * `at` counts from the area's start.
 * sink_scratch_write() @return HPROF_OK, or an error code with no message
 * set that leaves the sink usable (a file system may refuse a file that
 * large: EFBIG); the caller then does without.  sink_scratch_read() @return
 * HPROF_OK, or an error (the sink is then failed). */
#define SINK_SCRATCH_AT ((uint64_t)1 << 42)
int sink_scratch_write(struct hprof_sink *s, uint64_t at, const void *buf, size_t len);
int sink_scratch_read(struct hprof_sink *s, uint64_t at, void *buf, size_t len);
/* The `len` scratch bytes at `at` will not be read again: their blocks go
 * back to the file system (where it can punch holes). */
void sink_scratch_release(struct hprof_sink *s, uint64_t at, uint64_t len);
/* Bytes the file system of `s`'s scratch area has free for us
 * (UINT64_MAX where it does not say). */
uint64_t sink_scratch_room(const struct hprof_sink *s);
/* Give `s`, a new sink writing to `fd`, the scratch area of fd's file
 * where it can have one (a regular file, seekable, open for reading and
 * not for appending).  @return whether it has. */
int sink_scratch_open(struct hprof_sink *s, int fd);

/* Whether sink_patch() works on `s`. */
static inline int sink_can_patch(const struct hprof_sink *s)
{
    return s->ops->patch != NULL;
}

/* Overwrite `len` bytes of what `s` has accepted, from byte `at` of its
 * output on (at + len <= bytes accepted), before it is finished.  The
 * writer fills in a segment's length once the segment is complete. */
int sink_patch(struct hprof_sink *s, uint64_t at, const void *buf, size_t len);

/* A sink in front of `next` (not owned: the caller finishes and frees
 * it) that can hold back what is written to it (sink_hold.c).  Outside a
 * hold, writes go straight on.  sink_hold_start(): from now on, bytes stay
 * in memory, up to `limit`; past that, all of them go on and the hold
 * ends.  sink_hold_patch(): overwrite `len` bytes from output offset `at`
 * if they are still held (@return 1), else nothing (@return 0).
 * sink_hold_release(): what is held goes on and the hold ends; finishing
 * the sink does that too, freeing it drops them.  sink_holding(): whether
 * a hold is on.  Such a sink cannot patch (sink_can_patch()): the writer
 * must not count on bytes that may have gone on. */
struct hprof_sink *sink_hold_new(struct hprof_sink *next, struct hprof_error *err);
int sink_hold_start(struct hprof_sink *s, size_t limit);
int sink_hold_patch(struct hprof_sink *s, uint64_t at, const void *buf, size_t len);
int sink_hold_release(struct hprof_sink *s);
int sink_holding(const struct hprof_sink *s);

/* write(2) all of `buf` to `fd`, retrying on EINTR and short writes. */
int sink_write_fd(int fd, const void *buf, size_t len, struct hprof_error *err);

/* sink_write_fd() for sink `s`, which then starts writeback when due. */
int sink_write_file(struct hprof_sink *s, int fd, const void *buf, size_t len);

/* A memory sink refusing to hold more than `max` bytes (then
 * mem_sink_over() is 1).  mem_sink_swap() hands over what it holds (*data,
 * *len, *cap) and continues, empty and usable again, in the buffer passed
 * in (*data of *cap bytes, malloc()ed, or NULL), so that buffers go round
 * instead of being allocated for every use. */
struct hprof_sink *mem_sink_new_capped(size_t max, struct hprof_error *err);
int mem_sink_over(const struct hprof_sink *s);
void mem_sink_swap(struct hprof_sink *s, uint8_t **data, size_t *len, size_t *cap);

/* Which library deflates gzip members. */
enum gzip_backend { GZIP_ZLIB, GZIP_LIBDEFLATE };

/* hprof_sink_new_gzip() with a chosen backend (tests compare them);
 * GZIP_LIBDEFLATE needs a library built with HPROF_WITH_LIBDEFLATE. */
struct hprof_sink *gzip_sink_new(int fd, int level, unsigned threads, enum gzip_backend backend,
                                 struct hprof_error *err);

#endif
