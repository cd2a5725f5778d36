/*
 * gzip_out.c - a sink writing gzip the way the JDK's `jcmd GC.heap_dump -gz`
 * does (heapDumperCompression.cpp): the input is cut into blocks of
 * HPROF_GZIP_BLOCK bytes and each block becomes an independent gzip member.
 * The first member's header carries the comment "HPROF BLOCKSIZE=1048576",
 * which tells readers (VisualVM, the JDK's own tools) that they may seek by
 * inflating single members.  Concatenated members are one valid gzip stream,
 * so plain gunzip restores the dump.  The header time is 0.
 *
 * Because members are independent they compress in parallel, as pigz does:
 * blocks are numbered, workers take them in order, each with its own zlib
 * state, and the caller's thread writes finished members strictly in number
 * order.  In-flight blocks are capped at twice the workers, so memory stays
 * at about 2 x threads x 2 MiB.  The bytes written are the same for every
 * thread count.
 *
 * Which library deflates a member depends on what the level asks for and
 * what the library is built with.  Level 1 asks for speed: ISA-L's level 1
 * (HPROF_WITH_ISAL) is 2x faster than libdeflate's on shrunk dumps whose
 * arrays are emptied and 7x on zeroed ones, and its output is 2-8% smaller
 * than zlib's level 1 (the bytes pigz -1 writes), though 4-8% larger than
 * libdeflate's.  Levels 2-9 ask for size: libdeflate (HPROF_WITH_LIBDEFLATE)
 * is 2.5x faster than zlib at level 6 with 5% smaller output, where ISA-L's
 * best level is larger than zlib -6.  zlib does what neither is built for.
 * All three compress whole buffers, which is what a member is; they give
 * different bytes, each deterministic.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#ifdef HPROF_WITH_LIBDEFLATE
#include <libdeflate.h>
#endif
#ifdef HPROF_WITH_ISAL
#include <isa-l/igzip_lib.h>
#endif

#include "sink_private.h"

/* The first member's comment, as the JDK writes it. */
static const char BLOCKSIZE_COMMENT[] = "HPROF BLOCKSIZE=1048576";

/* ---- Deflating one member ------------------------------------------------- */

/* One compressor, owned by one thread. */
struct member_coder {
    enum gzip_backend backend;
    int level;
    z_stream z;
    int z_ready;
#ifdef HPROF_WITH_LIBDEFLATE
    struct libdeflate_compressor *ld;
#endif
#ifdef HPROF_WITH_ISAL
    struct isal_zstream *isal;  /* 80 KiB of state: on the heap */
    uint8_t *isal_level_buf;
#endif
};

static int coder_init(struct member_coder *c, enum gzip_backend backend, int level)
{
    memset(c, 0, sizeof *c);
    c->backend = backend;
    c->level = level;
#ifdef HPROF_WITH_LIBDEFLATE
    if (backend == GZIP_LIBDEFLATE)
        return (c->ld = libdeflate_alloc_compressor(level)) != NULL;
#endif
#ifdef HPROF_WITH_ISAL
    if (backend == GZIP_ISAL) {
        c->isal = calloc(1, sizeof *c->isal);
        c->isal_level_buf = calloc(1, ISAL_DEF_LVL1_DEFAULT);
        return c->isal != NULL && c->isal_level_buf != NULL;
    }
#endif
    /* windowBits 15 + 16: a gzip wrapper; memLevel 8 as zlib's default. */
    c->z_ready = deflateInit2(&c->z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    return c->z_ready;
}

static void coder_free(struct member_coder *c)
{
    if (c->z_ready)
        deflateEnd(&c->z);
#ifdef HPROF_WITH_LIBDEFLATE
    if (c->ld != NULL)
        libdeflate_free_compressor(c->ld);
#endif
#ifdef HPROF_WITH_ISAL
    free(c->isal);
    free(c->isal_level_buf);
#endif
    memset(c, 0, sizeof *c);
}

/* Room for the member of a full block: the backend's worst case for the
 * deflate stream, plus the gzip header with its comment and the trailer. */
static size_t member_bound(enum gzip_backend backend)
{
    size_t wrapper = 10 + sizeof BLOCKSIZE_COMMENT + 8;
#ifdef HPROF_WITH_LIBDEFLATE
    if (backend == GZIP_LIBDEFLATE)
        return libdeflate_deflate_compress_bound(NULL, HPROF_GZIP_BLOCK) + wrapper;
#else
    (void)backend;
#endif
    /* ISA-L falls back to stored blocks, 5 bytes per 64 KiB: zlib's bound,
     * which allows for the same, covers it. */
    return compressBound(HPROF_GZIP_BLOCK) + wrapper;
}

#if defined(HPROF_WITH_LIBDEFLATE) || defined(HPROF_WITH_ISAL)
static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* RFC 1952 by hand, as zlib writes it for this member: no name, time 0,
 * the extra-flags byte zlib derives from the level, OS Unix. */
static size_t gzip_header(uint8_t *out, int first, int level)
{
    size_t n = 0;
    out[n++] = 0x1f;
    out[n++] = 0x8b;
    out[n++] = 8; /* deflate */
    out[n++] = first ? 0x10 : 0; /* FCOMMENT */
    put_le32(out + n, 0);
    n += 4;
    out[n++] = level == 9 ? 2 : level == 1 ? 4 : 0;
    out[n++] = 3;
    if (first) {
        memcpy(out + n, BLOCKSIZE_COMMENT, sizeof BLOCKSIZE_COMMENT);
        n += sizeof BLOCKSIZE_COMMENT;
    }
    return n;
}
#endif

/* Deflate `len` bytes into one gzip member at `out` (`cap` bytes).
 * @return its size, or 0 on failure. */
static size_t coder_member(struct member_coder *c, const uint8_t *in, size_t len, int first,
                           uint8_t *out, size_t cap)
{
#ifdef HPROF_WITH_LIBDEFLATE
    if (c->backend == GZIP_LIBDEFLATE) {
        size_t head = gzip_header(out, first, c->level);
        size_t body = libdeflate_deflate_compress(c->ld, in, len, out + head, cap - head - 8);
        if (body == 0)
            return 0;
        put_le32(out + head + body, libdeflate_crc32(0, in, len));
        put_le32(out + head + body + 4, (uint32_t)len);
        return head + body + 8;
    }
#endif
#ifdef HPROF_WITH_ISAL
    if (c->backend == GZIP_ISAL) {
        size_t head = gzip_header(out, first, 1);
        struct isal_zstream *z = c->isal;
        /* Every member from the same state, whatever this coder did before:
         * isal_deflate_stateless_init() leaves fields alone (hist_bits, the
         * window, among them) that change the output. */
        memset(z, 0, sizeof *z);
        memset(c->isal_level_buf, 0, ISAL_DEF_LVL1_REQ);
        isal_deflate_stateless_init(z);
        z->level = 1;
        z->level_buf = c->isal_level_buf;
        z->level_buf_size = ISAL_DEF_LVL1_DEFAULT;
        z->gzip_flag = IGZIP_GZIP_NO_HDR; /* our header; ISA-L writes the trailer */
        z->end_of_stream = 1;
        z->next_in = (uint8_t *)in;
        z->avail_in = (uint32_t)len;
        z->next_out = out + head;
        z->avail_out = (uint32_t)(cap - head);
        if (isal_deflate_stateless(z) != COMP_OK)
            return 0;
        return head + z->total_out;
    }
#endif
    gz_header header;
    memset(&header, 0, sizeof header);
    header.os = 3; /* Unix, as gzip(1) writes */
    if (first)
        header.comment = (Bytef *)BLOCKSIZE_COMMENT;
    if (deflateReset(&c->z) != Z_OK || deflateSetHeader(&c->z, &header) != Z_OK)
        return 0;
    c->z.next_in = (Bytef *)in;
    c->z.avail_in = (uInt)len;
    c->z.next_out = out;
    c->z.avail_out = (uInt)cap;
    if (deflate(&c->z, Z_FINISH) != Z_STREAM_END)
        return 0;
    return cap - c->z.avail_out;
}

/* ---- The sink ------------------------------------------------------------------ */

enum slot_state { SLOT_FREE, SLOT_FILLED, SLOT_BUSY, SLOT_DONE };

struct slot {
    enum slot_state state;
    uint64_t seq;
    uint8_t *in;
    size_t in_len;
    uint8_t *out;
    size_t out_len;
    int failed;
};

struct gzip_sink {
    struct hprof_sink base;
    int fd;
    int level;
    enum gzip_backend backend;
    size_t out_cap;
    unsigned threads;           /* worker threads; 0: compress inline */

    struct slot *slots;         /* a ring of n_slots, indexed by seq % n_slots */
    unsigned n_slots;
    uint64_t next_fill;         /* seq of the block being filled */
    uint64_t next_write;        /* seq of the next member to write */
    uint64_t next_take;         /* seq of the next block a worker takes */

    struct member_coder inline_coder;   /* threads == 0 */

    pthread_t *workers;
    unsigned started;
    pthread_mutex_t lock;
    pthread_cond_t work;        /* a block was filled, or stop */
    pthread_cond_t done;        /* a block was compressed */
    int sync_ready;             /* lock and conditions initialised */
    int stop;
};

/* Compress one block into one member.  Runs in a worker or inline. */
static void compress_slot(struct member_coder *c, struct slot *s, size_t out_cap)
{
    s->out_len = coder_member(c, s->in, s->in_len, s->seq == 0, s->out, out_cap);
    s->failed = s->out_len == 0;
}

static void *worker_main(void *arg)
{
    struct gzip_sink *g = arg;
    struct member_coder c;
    int ok = coder_init(&c, g->backend, g->level);
    pthread_mutex_lock(&g->lock);
    for (;;) {
        struct slot *s = &g->slots[g->next_take % g->n_slots];
        while (!g->stop && !(s->state == SLOT_FILLED && s->seq == g->next_take)) {
            pthread_cond_wait(&g->work, &g->lock);
            s = &g->slots[g->next_take % g->n_slots];
        }
        if (g->stop && !(s->state == SLOT_FILLED && s->seq == g->next_take))
            break;
        s->state = SLOT_BUSY;
        g->next_take++;
        pthread_cond_broadcast(&g->work); /* the next block may be ready too */
        pthread_mutex_unlock(&g->lock);
        if (ok)
            compress_slot(&c, s, g->out_cap);
        else
            s->failed = 1;
        pthread_mutex_lock(&g->lock);
        s->state = SLOT_DONE;
        pthread_cond_broadcast(&g->done);
    }
    pthread_mutex_unlock(&g->lock);
    coder_free(&c);
    return NULL;
}

/* Write the oldest member once compressed.  Caller holds no lock. */
static int write_oldest(struct gzip_sink *g)
{
    struct slot *s = &g->slots[g->next_write % g->n_slots];
    if (g->threads > 0) {
        pthread_mutex_lock(&g->lock);
        while (s->state != SLOT_DONE)
            pthread_cond_wait(&g->done, &g->lock);
        pthread_mutex_unlock(&g->lock);
    }
    int rc = s->failed ? hprof_error_set(g->base.err, HPROF_ERR_IO, "gzip: deflate failed")
                       : sink_write_file(&g->base, g->fd, s->out, s->out_len);
    s->in_len = 0;
    g->next_write++;
    if (g->threads > 0) /* workers read every slot's state while they wait */
        pthread_mutex_lock(&g->lock);
    s->state = SLOT_FREE;
    if (g->threads > 0)
        pthread_mutex_unlock(&g->lock);
    return rc;
}

/* Hand the block being filled to the workers (or compress it now). */
static int submit(struct gzip_sink *g)
{
    struct slot *s = &g->slots[g->next_fill % g->n_slots];
    if (g->threads == 0) {
        s->seq = g->next_fill++;
        compress_slot(&g->inline_coder, s, g->out_cap);
        s->state = SLOT_DONE;
        return write_oldest(g);
    }
    pthread_mutex_lock(&g->lock); /* workers read seq and state while they wait */
    s->seq = g->next_fill++;
    s->state = SLOT_FILLED;
    pthread_cond_broadcast(&g->work);
    pthread_mutex_unlock(&g->lock);
    /* Keep the ring from overflowing: the next slot must be free. */
    if (g->next_fill - g->next_write >= g->n_slots)
        return write_oldest(g);
    return HPROF_OK;
}

static int gzip_write(struct hprof_sink *sink, const void *buf, size_t len)
{
    struct gzip_sink *g = (struct gzip_sink *)sink;
    const uint8_t *p = buf;
    while (len > 0) {
        struct slot *s = &g->slots[g->next_fill % g->n_slots];
        size_t n = HPROF_GZIP_BLOCK - s->in_len;
        if (n > len)
            n = len;
        memcpy(s->in + s->in_len, p, n);
        s->in_len += n;
        p += n;
        len -= n;
        if (s->in_len == HPROF_GZIP_BLOCK) {
            int rc = submit(g);
            if (rc != HPROF_OK)
                return rc;
        }
    }
    return HPROF_OK;
}

static int gzip_finish(struct hprof_sink *sink)
{
    struct gzip_sink *g = (struct gzip_sink *)sink;
    int rc = HPROF_OK;
    /* An empty input still makes one (empty) member: a valid gzip file. */
    if (g->slots[g->next_fill % g->n_slots].in_len > 0 || g->next_fill == 0)
        rc = submit(g);
    while (rc == HPROF_OK && g->next_write < g->next_fill)
        rc = write_oldest(g);
    return rc;
}

static void stop_workers(struct gzip_sink *g)
{
    if (g->started == 0)
        return;
    pthread_mutex_lock(&g->lock);
    g->stop = 1;
    pthread_cond_broadcast(&g->work);
    pthread_mutex_unlock(&g->lock);
    for (unsigned i = 0; i < g->started; i++)
        pthread_join(g->workers[i], NULL);
    g->started = 0;
}

static void gzip_free(struct hprof_sink *sink)
{
    struct gzip_sink *g = (struct gzip_sink *)sink;
    stop_workers(g);
    if (g->sync_ready) {
        pthread_mutex_destroy(&g->lock);
        pthread_cond_destroy(&g->work);
        pthread_cond_destroy(&g->done);
    }
    coder_free(&g->inline_coder);
    for (unsigned i = 0; g->slots != NULL && i < g->n_slots; i++) {
        free(g->slots[i].in);
        free(g->slots[i].out);
    }
    free(g->slots);
    free(g->workers);
    free(g);
}

static const struct sink_ops gzip_ops = { gzip_write, gzip_finish, gzip_free, NULL };

static unsigned online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

struct hprof_sink *hprof_sink_new_gzip(int fd, int level, unsigned threads,
                                       struct hprof_error *err)
{
    enum gzip_backend backend = GZIP_ZLIB;
#ifdef HPROF_WITH_LIBDEFLATE
    backend = GZIP_LIBDEFLATE;
#endif
#ifdef HPROF_WITH_ISAL
    if (level == 1)
        backend = GZIP_ISAL;
#endif
    return gzip_sink_new(fd, level, threads, backend, err);
}

struct hprof_sink *gzip_sink_new(int fd, int level, unsigned threads, enum gzip_backend backend,
                                 struct hprof_error *err)
{
    if (level < 1 || level > 9) {
        hprof_error_set(err, HPROF_ERR_USAGE, "gzip level %d (expected 1-9)", level);
        return NULL;
    }
    if (backend == GZIP_ISAL && level != 1) {
        hprof_error_set(err, HPROF_ERR_USAGE, "gzip level %d: ISA-L serves level 1 only", level);
        return NULL;
    }
    if (threads == 0)
        threads = online_cores();
    if (threads > 256)
        threads = 256;
    struct gzip_sink *g = calloc(1, sizeof *g);
    if (g == NULL)
        goto nomem;
    g->base.ops = &gzip_ops;
    g->base.err = err;
    g->fd = fd;
    g->level = level;
    g->backend = backend;
    /* One thread: compress inline, no worker to hand blocks to. */
    g->threads = threads > 1 ? threads : 0;
    g->n_slots = g->threads ? 2 * g->threads : 1;
    if (!coder_init(&g->inline_coder, backend, level))
        goto nomem;
    g->out_cap = member_bound(backend);
    g->slots = calloc(g->n_slots, sizeof *g->slots);
    if (g->slots == NULL)
        goto nomem;
    for (unsigned i = 0; i < g->n_slots; i++) {
        g->slots[i].in = malloc(HPROF_GZIP_BLOCK);
        g->slots[i].out = malloc(g->out_cap);
        if (g->slots[i].in == NULL || g->slots[i].out == NULL)
            goto nomem;
    }
    if (g->threads > 0) {
        pthread_mutex_init(&g->lock, NULL);
        pthread_cond_init(&g->work, NULL);
        pthread_cond_init(&g->done, NULL);
        g->sync_ready = 1;
        g->workers = calloc(g->threads, sizeof *g->workers);
        if (g->workers == NULL)
            goto nomem;
        for (; g->started < g->threads; g->started++)
            if (pthread_create(&g->workers[g->started], NULL, worker_main, g) != 0) {
                gzip_free(&g->base);
                hprof_error_set(err, HPROF_ERR_NOMEM, "gzip: cannot start a thread");
                return NULL;
            }
    }
    return &g->base;
nomem:
    if (g != NULL)
        gzip_free(&g->base);
    hprof_error_set(err, HPROF_ERR_NOMEM, "gzip: out of memory");
    return NULL;
}
