/*
 * input_zstd.c - libzstd decompressing a zstd input (zstd(1), or
 * hprof-shrink --zstd) into the copy input.c makes, as the bytes come.
 *
 * The copy is written through spool_put(), which follows the records as
 * they come: a bomb (zeros behind a valid header) stops at its first
 * undefined tag, after at most one buffer of output.  Memory is libzstd's
 * window, which it refuses past 2^27 bytes (its default limit, zstd(1)'s
 * too), and the spool's two buffers.  Concatenated frames are one input,
 * as zstd(1) reads them; bytes after the last frame that are not another
 * frame are an error, and so is a frame cut short, unless salvaged.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <zstd.h>

#include "input_spool.h"

/* A zstd frame, or a skippable frame (0x184D2A50-5F, little-endian), which
 * pzstd writes first and the decoder passes over. */
int spool_is_zstd(const uint8_t *p, size_t n)
{
    if (n < 4)
        return 0;
    if (p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd)
        return 1;
    return (p[0] & 0xf0) == 0x50 && p[1] == 0x2a && p[2] == 0x4d && p[3] == 0x18;
}

/* Read the next buffer of input after the `in->size` bytes taken.
 * @return bytes read (0 at the end), or a negative error. */
static int refill(struct spool *s, ZSTD_inBuffer *in, struct hprof_error *err)
{
    s->in_offset += in->size;
    ssize_t n = spool_read_in(s, s->in_buf, SPOOL_BUFFER, s->in_offset);
    if (n < 0)
        return hprof_error_set(err, HPROF_ERR_IO, "offset 0x%" PRIx64 ": read: %s",
                               s->in_offset, strerror(errno));
    in->src = s->in_buf;
    in->size = (size_t)n;
    in->pos = 0;
    return n > 0;
}

int spool_unzstd(struct spool *s, size_t prefix, struct hprof_error *err)
{
    ZSTD_DStream *d = ZSTD_createDStream();
    if (d == NULL)
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory for zstd");
    ZSTD_inBuffer in = { s->in_buf, prefix, 0 };
    s->in_offset = 0;
    int rc = HPROF_OK, more = 1, flushed = 1;
    size_t hint = 1; /* 0 at the end of a frame */
    for (;;) {
        if (in.pos == in.size && more && (more = refill(s, &in, err)) < 0) {
            rc = err->code;
            break;
        }
        if (in.pos == in.size && !more && flushed) {
            if (hint != 0)
                rc = spool_cut(s, SPOOL_ZSTD, s->in_offset + in.pos, err); /* its cut block lost */
            break;
        }
        ZSTD_outBuffer out = { s->out_buf, SPOOL_BUFFER, 0 };
        hint = ZSTD_decompressStream(d, &out, &in);
        if (ZSTD_isError(hint)) {
            rc = hprof_error_set(err, HPROF_ERR_FORMAT,
                                 "offset 0x%" PRIx64 " (compressed): zstd input is corrupt: %s",
                                 s->in_offset + in.pos, ZSTD_getErrorName(hint));
            break;
        }
        flushed = out.pos < out.size; /* else libzstd may hold more output */
        if (out.pos > 0 && (rc = spool_put(s, s->out_buf, out.pos, err)) != HPROF_OK)
            break;
    }
    ZSTD_freeDStream(d);
    return rc;
}
