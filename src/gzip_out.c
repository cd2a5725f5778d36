/*
 * gzip_out.c - a sink writing gzip the way the JDK's `jcmd GC.heap_dump -gz`
 * does (heapDumperCompression.cpp): the input is cut into blocks of
 * HPROF_GZIP_BLOCK bytes and each block becomes an independent gzip member.
 * The first member's header carries the comment "HPROF BLOCKSIZE=1048576",
 * which tells readers (VisualVM, the JDK's own tools) that they may seek by
 * inflating single members.  Concatenated members are one valid gzip stream,
 * so plain gunzip restores the dump.  The header time is 0, so the output is
 * deterministic.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "sink_private.h"

struct gzip_sink {
    struct hprof_sink base;
    int fd;
    int level;
    z_stream z;
    int z_ready;
    uint64_t members;
    uint8_t *in;            /* one block of input */
    size_t in_len;
    uint8_t *out;           /* deflateBound() of one block */
    size_t out_cap;
};

static int compress_block(struct gzip_sink *g)
{
    static char comment[] = "HPROF BLOCKSIZE=1048576";
    gz_header header;
    memset(&header, 0, sizeof header);
    header.os = 3; /* Unix, as gzip(1) writes */
    if (g->members == 0)
        header.comment = (Bytef *)comment;
    if (deflateReset(&g->z) != Z_OK || deflateSetHeader(&g->z, &header) != Z_OK)
        return hprof_error_set(g->base.err, HPROF_ERR_IO, "gzip: cannot start a member");
    g->z.next_in = g->in;
    g->z.avail_in = (uInt)g->in_len;
    g->z.next_out = g->out;
    g->z.avail_out = (uInt)g->out_cap;
    if (deflate(&g->z, Z_FINISH) != Z_STREAM_END)
        return hprof_error_set(g->base.err, HPROF_ERR_IO, "gzip: deflate failed: %s",
                               g->z.msg ? g->z.msg : "output buffer too small");
    g->members++;
    g->in_len = 0;
    return sink_write_fd(g->fd, g->out, g->out_cap - g->z.avail_out, g->base.err);
}

static int gzip_write(struct hprof_sink *s, const void *buf, size_t len)
{
    struct gzip_sink *g = (struct gzip_sink *)s;
    const uint8_t *p = buf;
    while (len > 0) {
        size_t n = HPROF_GZIP_BLOCK - g->in_len;
        if (n > len)
            n = len;
        memcpy(g->in + g->in_len, p, n);
        g->in_len += n;
        p += n;
        len -= n;
        if (g->in_len == HPROF_GZIP_BLOCK) {
            int rc = compress_block(g);
            if (rc != HPROF_OK)
                return rc;
        }
    }
    return HPROF_OK;
}

static int gzip_finish(struct hprof_sink *s)
{
    struct gzip_sink *g = (struct gzip_sink *)s;
    if (g->in_len > 0 || g->members == 0)
        return compress_block(g);
    return HPROF_OK;
}

static void gzip_free(struct hprof_sink *s)
{
    struct gzip_sink *g = (struct gzip_sink *)s;
    if (g->z_ready)
        deflateEnd(&g->z);
    free(g->in);
    free(g->out);
    free(g);
}

static const struct sink_ops gzip_ops = { gzip_write, gzip_finish, gzip_free };

struct hprof_sink *hprof_sink_new_gzip(int fd, int level, struct hprof_error *err)
{
    if (level < 1 || level > 9) {
        hprof_error_set(err, HPROF_ERR_USAGE, "gzip level %d (expected 1-9)", level);
        return NULL;
    }
    struct gzip_sink *g = calloc(1, sizeof *g);
    if (g == NULL) {
        hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    g->base.ops = &gzip_ops;
    g->base.err = err;
    g->fd = fd;
    g->level = level;
    /* windowBits 15 + 16: a gzip wrapper; memLevel 8 as zlib's default. */
    if (deflateInit2(&g->z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(g);
        hprof_error_set(err, HPROF_ERR_NOMEM, "gzip: cannot initialise zlib");
        return NULL;
    }
    g->z_ready = 1;
    g->out_cap = deflateBound(&g->z, HPROF_GZIP_BLOCK) + 64; /* + header comment */
    g->in = malloc(HPROF_GZIP_BLOCK);
    g->out = malloc(g->out_cap);
    if (g->in == NULL || g->out == NULL) {
        gzip_free(&g->base);
        hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return &g->base;
}
