/*
 * zstd_out.c - a sink writing one zstd frame (with its content checksum,
 * as zstd(1) writes by default) through libzstd's streaming compressor.
 *
 * libzstd compresses on worker threads of its own (ZSTD_c_nbWorkers): the
 * input is cut into jobs whose size follows from the level alone, and each
 * job is compressed by whichever worker takes it, with the tail of the
 * previous job as its history.  Its output is therefore the same for any
 * number of workers from 1 up, but differs from its single-threaded mode
 * (0 workers): so this sink always asks for at least one worker, and the
 * same input gives the same bytes at every thread count.
 *
 * The writer makes several small writes per record; they gather in the
 * sink's room and reach libzstd ZSTD_CStreamInSize() bytes at a time.
 */
#include <stdlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "pool.h"
#include "sink_private.h"

struct zstd_sink {
    struct hprof_sink base;
    int fd;
    ZSTD_CCtx *cctx;
    uint8_t *out;               /* compressed bytes on their way to fd */
    size_t out_cap;
};

static int zstd_failed(struct zstd_sink *z, size_t code)
{
    /* libzstd says so too when its workers' threads cannot be started */
    int nomem = ZSTD_getErrorCode(code) == ZSTD_error_memory_allocation;
    return hprof_error_set(z->base.err, nomem ? HPROF_ERR_NOMEM : HPROF_ERR_IO, "zstd: %s%s",
                           ZSTD_getErrorName(code), nomem ? " (or no thread for its workers)" : "");
}

/* Compress `len` bytes with `op` (continue, or end the frame) and write
 * what comes out, until libzstd has taken them all (and, to end, flushed
 * everything). */
static int compress(struct zstd_sink *z, const void *buf, size_t len, ZSTD_EndDirective op)
{
    ZSTD_inBuffer in = { buf, len, 0 };
    for (;;) {
        ZSTD_outBuffer out = { z->out, z->out_cap, 0 };
        size_t left = ZSTD_compressStream2(z->cctx, &out, &in, op);
        if (ZSTD_isError(left))
            return zstd_failed(z, left);
        if (out.pos > 0) {
            int rc = sink_write_file(&z->base, z->fd, z->out, out.pos);
            if (rc != HPROF_OK)
                return rc;
        }
        if (op == ZSTD_e_end ? left == 0 : in.pos == in.size)
            return HPROF_OK;
    }
}

/* Hand the room to libzstd; it is empty again after. */
static int drain_room(struct zstd_sink *z)
{
    int rc = z->base.room_len ? compress(z, z->base.room, z->base.room_len, ZSTD_e_continue)
                              : HPROF_OK;
    z->base.room_len = 0;
    return rc;
}

/* `len` bytes that do not fit what is left of the room. */
static int zstd_write(struct hprof_sink *sink, const void *buf, size_t len)
{
    struct zstd_sink *z = (struct zstd_sink *)sink;
    int rc = drain_room(z);
    if (rc != HPROF_OK)
        return rc;
    if (len >= z->base.room_cap / 2) /* big: no copy */
        return compress(z, buf, len, ZSTD_e_continue);
    memcpy(z->base.room, buf, len);
    z->base.room_len = len;
    return HPROF_OK;
}

static int zstd_finish(struct hprof_sink *sink)
{
    struct zstd_sink *z = (struct zstd_sink *)sink;
    int rc = drain_room(z);
    return rc == HPROF_OK ? compress(z, NULL, 0, ZSTD_e_end) : rc;
}

static void zstd_free(struct hprof_sink *sink)
{
    struct zstd_sink *z = (struct zstd_sink *)sink;
    ZSTD_freeCCtx(z->cctx);
    free(z->base.room);
    free(z->out);
    free(z);
}

static const struct sink_ops zstd_ops = { .write = zstd_write, .finish = zstd_finish, .free = zstd_free };

/* Set `param`; @return 0, or 1 with `err` set. */
static int set_param(struct zstd_sink *z, ZSTD_cParameter param, int value)
{
    size_t r = ZSTD_CCtx_setParameter(z->cctx, param, value);
    return ZSTD_isError(r) ? (zstd_failed(z, r), 1) : 0;
}

struct hprof_sink *hprof_sink_new_zstd(int fd, int level, unsigned threads,
                                       struct hprof_error *err)
{
    if (level < 1 || level > HPROF_ZSTD_LEVEL_MAX) {
        hprof_error_set(err, HPROF_ERR_USAGE, "zstd level %d (expected 1-%d)", level,
                        HPROF_ZSTD_LEVEL_MAX);
        return NULL;
    }
    threads = pool_threads(POOL_ZSTD, threads, 0);
    struct zstd_sink *z = calloc(1, sizeof *z);
    if (z == NULL) {
        hprof_error_set(err, HPROF_ERR_NOMEM, "zstd: out of memory");
        return NULL;
    }
    z->base.ops = &zstd_ops;
    z->base.err = err;
    z->fd = fd;
    (void)sink_scratch_open(&z->base, fd);
    z->out_cap = ZSTD_CStreamOutSize();
    z->base.room_cap = ZSTD_CStreamInSize();
    z->out = malloc(z->out_cap);
    z->base.room = malloc(z->base.room_cap);
    z->cctx = ZSTD_createCCtx();
    if (z->out == NULL || z->base.room == NULL || z->cctx == NULL) {
        hprof_error_set(err, HPROF_ERR_NOMEM, "zstd: out of memory");
        zstd_free(&z->base);
        return NULL;
    }
    /* Workers: 1 or more, never libzstd's single-threaded mode (see above).
     * A libzstd built without threads refuses them: that is an error, not
     * different bytes. */
    if (set_param(z, ZSTD_c_compressionLevel, level) || set_param(z, ZSTD_c_checksumFlag, 1) ||
        set_param(z, ZSTD_c_nbWorkers, (int)(threads > 1 ? threads : 1))) {
        zstd_free(&z->base);
        return NULL;
    }
    return &z->base;
}
