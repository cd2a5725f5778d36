/*
 * input_spool.h - the copy input.c makes of a dump that is not a plain
 * seekable file: input_stream.c writes it and inflates a gzip stream into
 * it, input_members.c a gzip file's members on every core, input_zstd.c
 * a zstd input.  The decompressed bytes, once checked, go to `emit`: the
 * temporary file (spool_emit_file()), or the ring a stream reader reads
 * (hprof_input_open_stream()).
 */
#ifndef HPROF_INPUT_SPOOL_H
#define HPROF_INPUT_SPOOL_H

#include <sys/types.h>

#include "input_private.h"

#define SPOOL_BUFFER (1u << 20)
#define MAGIC "JAVA PROFILE 1.0."
#define MAGIC_LEN (sizeof MAGIC - 1)

/* A pipe's compressed bytes from the oldest offset that may still be read
 * again: input_members.c reads a pipe by offset as it reads a file, the
 * calling thread scanning ahead for members while zlib may have to stream
 * one from its start. */
struct in_tape {
    uint8_t *buf;
    size_t cap;
    size_t start, len;          /* the bytes held: buf[start, start + len) */
    uint64_t base;              /* their offset in the input */
};

struct spool;
/* Where the checked bytes of plain dump go.  @return HPROF_OK or an error. */
typedef int (*spool_emit_fn)(struct spool *s, const uint8_t *p, size_t n,
                             struct hprof_error *err);

struct spool {
    int in, out;
    int stop_fd;                /* readable once the reader stopped (a pipe's), or -1 */
    spool_emit_fn emit;
    void *emit_ctx;             /* what emit writes to, besides `out` */
    int seekable;               /* `in` is a regular file: read with pread */
    char dir[4096];             /* the temporary file's directory */
    uint64_t written;           /* bytes of the copy so far */
    uint64_t room;              /* written + what was free when last looked:
                                 * what the directory had room for */
    int layered;                /* the bytes put are decompressed (gzip or zstd) */
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
    /* With salvage, a record header of zeros (a zero-filled tail?): from
     * zeros_at on every byte has been zero, and those past the ones
     * written are counted in `written` but not emitted; spool_fill_zeros()
     * puts them in the copy. */
    int in_zeros;
    uint64_t zeros_at;
    uint8_t *in_buf, *out_buf;
    uint64_t in_offset;         /* of in_buf[0] in the (compressed) input */
    struct in_tape *tape;       /* a pipe read by offset (spool_tape_start()), or NULL */
    int salvage;                /* HPROF_INPUT_SALVAGE */
    struct hprof_input_info *info;
    struct input_stats *stats;
};

enum spool_format { SPOOL_GZIP, SPOOL_ZSTD };
/* The compressed stream ends inside a member or frame.  With salvage, what
 * was decompressed stays (the reader then salvages the dump it holds), and
 * s->info says where the compressed input stopped; else an error. */
int spool_cut(struct spool *s, enum spool_format format, uint64_t at, struct hprof_error *err);
/* Bytes free where `fd` is. */
uint64_t spool_free_bytes(int fd);
/* Append `n` bytes of plain dump to the copy, checked (input_stream.c). */
int spool_put(struct spool *s, const uint8_t *p, size_t n, struct hprof_error *err);
/* After the last spool_put() into the temporary file: the zeros of a
 * zero-filled tail held back, added as a hole (nothing is written). */
int spool_fill_zeros(struct spool *s, struct hprof_error *err);
/* The emit of a copy to the temporary file s->out, within its room. */
int spool_emit_file(struct spool *s, const uint8_t *p, size_t n, struct hprof_error *err);
/* Wait until `fd` has bytes, or its end, to read: 0; or 1 when `stop_fd`
 * became readable first (the reader of what is read stopped, and a
 * pipe's writer may never write or close). */
int wait_to_read(int fd, int stop_fd);
/* Up to `len` bytes of the input at offset `at` (a file, or a pipe read
 * through its tape), or next (a pipe). */
ssize_t spool_read_in(struct spool *s, uint8_t *buf, size_t len, uint64_t at);
/* Read the pipe s->in by offset from now on, through a tape that starts
 * with the `prefix` bytes in in_buf.  @return HPROF_OK or HPROF_ERR_NOMEM. */
int spool_tape_start(struct spool *s, size_t prefix, struct hprof_error *err);
/* Nothing before offset `upto` will be read again. */
void spool_tape_release(struct spool *s, uint64_t upto);
void spool_tape_free(struct spool *s);
/* Inflate with zlib, member after member, from offset `at`
 * (input_stream.c). */
int spool_inflate_stream(struct spool *s, uint64_t at, size_t prefix, int one, uint64_t *end,
                         int *done, struct hprof_error *err);
/* Inflate the gzip file s->in of `size` bytes into the copy, with
 * `threads` (0: one per core) (input_members.c). */
int spool_inflate_members(struct spool *s, uint64_t size, unsigned threads,
                          struct hprof_error *err);

/* Whether the `n` bytes at `p` start with a zstd frame's magic. */
int spool_is_zstd(const uint8_t *p, size_t n);
/* Decompress the zstd input s->in, whose first `prefix` bytes are in
 * in_buf already, into the copy (input_zstd.c). */
int spool_unzstd(struct spool *s, size_t prefix, struct hprof_error *err);

#endif
