/*
 * writer.c - the last visitor: serialises records to a sink.
 *
 * Top-level records are written as they come, with their lengths recomputed.
 * Heap sub-records are collected into one segment buffer and written as a
 * HEAP_DUMP_SEGMENT when the input's segment ends or the buffer would pass
 * the limit, so segment boundaries of the input survive whenever they can
 * (and a round trip is byte-identical) while memory stays bounded.  A
 * sub-record larger than the limit (a big array) gets a segment of its own
 * whose length is known from its header; its data then streams straight
 * through to the sink.  On a sink that can overwrite what it has taken (a
 * file that can seek), there is no segment buffer at all: each segment goes
 * straight to the sink behind a blank header, filled in when it closes, so
 * that nothing is copied twice, nor any memory touched for it (a segment
 * holding a big bitmap would fault in a page of the buffer for every 4 KiB).
 * The bytes are the same either way.
 *
 * The output keeps the input's record kinds.  A HEAP_DUMP (0x0C), the one
 * heap record of a `JAVA PROFILE 1.0.1` dump, is written as one HEAP_DUMP,
 * never split and never followed by HEAP_DUMP_END: segments and their end
 * record came with 1.0.2, and several HEAP_DUMP records are several dumps to
 * MAT.  On a sink that can patch it streams like a segment (its length is
 * filled in at its end, whatever its size up to 4 GiB); on one that cannot
 * (a pipe, gzip, memory), its body is held in memory until it ends, so a
 * 1.0.1 heap costs its own size there (HotSpot wrote 1.0.1 only for heaps
 * under 2 GB, SegmentedHeapDumpThreshold).  The output of a heap of
 * segments is bounded by the limit, as above.
 *
 * HEAP_DUMP_INFO is held back and written just before the next sub-record of
 * its segment, and again at the start of every new output segment: readers
 * (perflib, ahat) take the heap of an object from the last HEAP_DUMP_INFO of
 * its segment, so a split must not move objects into the default heap, and an
 * info whose objects were all dropped by a filter leaves nothing behind.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "sink_private.h"
#include "writer_private.h"

/* What a writer has open and where it is: all of it forgotten by
 * writer_discard(), while the settings and buffers stay. */
struct writer_state {
    int header_written;         /* a writer fed several runs (one per heap dump) writes it once */
    size_t seg_len;             /* bytes of the open segment's body */
    uint32_t seg_time;
    uint8_t seg_tag;            /* the input's: HEAP_DUMP_SEGMENT or HEAP_DUMP */
    int whole_open;             /* a HEAP_DUMP begun, not yet written: it is
                                   written even if nothing in it survives */
    uint64_t seg_at;            /* where a streamed segment's blank header is */
    int in_run;                 /* segments written, HEAP_DUMP_END not yet */
    int closed_by_us;           /* we wrote the END the input has yet to send */

    int have_info;              /* the current HEAP_DUMP_INFO */
    uint32_t info_heap;
    uint64_t info_name;
    int info_written;           /* ... already in the open output segment */

    /* An array whose data is still arriving in chunks. */
    uint64_t array_id;
    uint64_t array_left;        /* data bytes still expected */
    uint64_t array_next;        /* chunk offset (bytes or elements) expected */
    int array_direct;           /* data goes straight to the sink */
    uint64_t array_data_at;     /* ... from this output offset (else UINT64_MAX) */
};

struct hprof_writer {
    struct hprof_visitor base;
    struct hprof_sink *sink;
    struct hprof_error *err;
    unsigned id_size;
    uint32_t limit;

    uint8_t *seg;               /* the open segment's body, up to `limit`
                                   (a whole HEAP_DUMP's: up to seg_cap) */
    size_t seg_cap;
    int streaming;              /* segments go to a sink that can patch, after
                                   a blank header filled in at their end */

    uint8_t *scratch;           /* one serialised sub-record */
    size_t scratch_cap;

    /* writer_copy_input(): the input's mapping, whose bytes a file sink
     * copies itself. */
    uintptr_t copy_map;
    uint64_t copy_size;
    int copy_fd;

    struct writer_state st;
};

/* Chunks of array contents smaller than this are written with the rest:
 * a system call each would cost more than the copy it saves. */
#define COPY_MIN (64u << 10)

static int io(struct hprof_writer *w, const void *buf, size_t len)
{
    return sink_put(w->sink, buf, len);
}

/* A top-level record's 9-byte header at `h`.  @return the byte after it,
 * or NULL (error set) if the body is too long for a record. */
static uint8_t *put_record_header(struct hprof_writer *w, uint8_t *h, uint8_t tag, uint32_t time,
                                  uint64_t len)
{
    if (len > UINT32_MAX) {
        hprof_error_set(w->err, HPROF_ERR_USAGE,
                        "writer: %s body of %" PRIu64 " bytes does not fit a record",
                        hprof_tag_name(tag), len);
        return NULL;
    }
    return put_u4(put_u4(put_u1(h, tag), time), (uint32_t)len);
}

static int write_record_header(struct hprof_writer *w, uint8_t tag, uint32_t time, uint64_t len)
{
    uint8_t h[9];
    if (put_record_header(w, h, tag, time, len) == NULL)
        return HPROF_ERR_USAGE;
    return io(w, h, sizeof h);
}

static size_t info_size(const struct hprof_writer *w)
{
    return 1 + 4 + w->id_size;
}

static uint8_t *put_info(struct hprof_writer *w, uint8_t *p)
{
    p = put_u1(p, HPROF_HEAP_DUMP_INFO);
    p = put_u4(p, w->st.info_heap);
    return put_id(p, w->st.info_name, w->id_size);
}

/* Is the open output record a HEAP_DUMP, which must stay one record? */
static int whole(const struct hprof_writer *w)
{
    return w->st.seg_tag == HPROF_TAG_HEAP_DUMP;
}

/* Write the open segment (or HEAP_DUMP).  A segment with nothing in it is
 * not written; a HEAP_DUMP is, once, as the input had one. */
static int flush_segment(struct hprof_writer *w)
{
    int write_empty = whole(w) && w->st.whole_open;
    w->st.whole_open = 0;
    if (w->st.seg_len == 0 && !write_empty)
        return HPROF_OK;
    int rc;
    if (w->streaming && w->st.seg_len > 0) { /* checked against 4 GiB by emit() */
        uint8_t h[9];
        put_record_header(w, h, w->st.seg_tag, w->st.seg_time, w->st.seg_len);
        rc = sink_patch(w->sink, w->st.seg_at, h, sizeof h);
    } else if ((rc = write_record_header(w, w->st.seg_tag, w->st.seg_time, w->st.seg_len)) == HPROF_OK &&
               w->st.seg_len > 0) {
        rc = io(w, w->seg, w->st.seg_len);
    }
    w->st.seg_len = 0;
    w->st.info_written = 0;
    w->st.in_run = !whole(w);
    return rc;
}

/* Room for `n` bytes of a whole HEAP_DUMP in the segment buffer (a writer
 * that cannot patch holds it all).  @return HPROF_OK or an error. */
static int grow_segment(struct hprof_writer *w, uint64_t n)
{
    if (n <= w->seg_cap)
        return HPROF_OK;
    uint64_t cap = w->seg_cap ? w->seg_cap : 4096;
    while (cap < n)
        cap *= 2;
    if (cap > SIZE_MAX)
        return hprof_error_set(w->err, HPROF_ERR_NOMEM, "writer: out of memory");
    uint8_t *grown = realloc(w->seg, (size_t)cap);
    if (grown == NULL)
        return hprof_error_set(w->err, HPROF_ERR_NOMEM, "writer: out of memory");
    w->seg = grown;
    w->seg_cap = (size_t)cap;
    return HPROF_OK;
}

/* Close a run of segments with HEAP_DUMP_END. */
static int end_run(struct hprof_writer *w, uint32_t time)
{
    int rc = flush_segment(w);
    if (rc == HPROF_OK && w->st.in_run) {
        rc = write_record_header(w, HPROF_TAG_HEAP_DUMP_END, time, 0);
        w->st.in_run = 0;
    }
    return rc;
}

static int check_no_array_pending(struct hprof_writer *w)
{
    if (w->st.array_left == 0)
        return HPROF_OK;
    return hprof_error_set(w->err, HPROF_ERR_USAGE,
                           "writer: array 0x%" PRIx64 " ended %" PRIu64 " bytes early",
                           w->st.array_id, w->st.array_left);
}

/* emit() into the open segment of a streaming writer: straight to the
 * sink, the segment's header left blank until flush_segment().  No copy
 * through `seg`, nor its memory, which a 2 MB array had to go through. */
static int stream(struct hprof_writer *w, size_t info, const uint8_t *head, size_t head_len)
{
    int rc = HPROF_OK;
    if (w->st.seg_len == 0) {
        static const uint8_t blank[9];
        w->st.seg_at = hprof_sink_bytes(w->sink);
        rc = io(w, blank, sizeof blank);
    }
    if (rc == HPROF_OK && info) {
        uint8_t info_bytes[16];
        rc = io(w, info_bytes, (size_t)(put_info(w, info_bytes) - info_bytes));
    }
    if (rc == HPROF_OK)
        rc = io(w, head, head_len);
    w->st.seg_len += info + head_len + w->st.array_left;
    w->st.info_written |= info != 0;
    return rc;
}

/* Place a sub-record of `head` bytes (already serialised) followed by `tail`
 * bytes that will come later as array chunks.  It goes into the segment
 * buffer, or, when it cannot fit in any segment of the limit, into a segment
 * of its own written directly. */
static int emit(struct hprof_writer *w, const uint8_t *head, size_t head_len, uint64_t tail)
{
    int rc = check_no_array_pending(w);
    if (rc != HPROF_OK)
        return rc;
    uint64_t n = head_len + tail;
    size_t info = w->st.have_info && !w->st.info_written ? info_size(w) : 0;
    if (whole(w)) { /* one record: no split, no segment of its own */
        if (w->st.seg_len + info + n > UINT32_MAX)
            return hprof_error_set(w->err, HPROF_ERR_USAGE,
                                   "writer: HEAP_DUMP body passes 4 GiB (it cannot be split)");
        if (!w->streaming && (rc = grow_segment(w, w->st.seg_len + info + n)) != HPROF_OK)
            return rc;
    } else if (w->st.seg_len + info + n > w->limit && w->st.seg_len > 0) {
        if ((rc = flush_segment(w)) != HPROF_OK)
            return rc;
        info = w->st.have_info ? info_size(w) : 0;
    }
    w->st.array_left = tail;
    w->st.array_direct = !whole(w) && info + n > w->limit;
    if (!w->st.array_direct && w->streaming)
        return stream(w, info, head, head_len);
    if (!w->st.array_direct) {
        if (info)
            put_info(w, w->seg + w->st.seg_len);
        memcpy(w->seg + w->st.seg_len + info, head, head_len); /* head_len > 0 */
        w->st.seg_len += info + head_len;
        w->st.info_written |= info != 0;
        return HPROF_OK;
    }
    /* A segment of its own; the next sub-record starts a fresh one. */
    uint8_t info_bytes[16];
    rc = write_record_header(w, HPROF_TAG_HEAP_DUMP_SEGMENT, w->st.seg_time, info + n);
    if (rc == HPROF_OK && info)
        rc = io(w, info_bytes, (size_t)(put_info(w, info_bytes) - info_bytes));
    if (rc == HPROF_OK)
        rc = io(w, head, head_len);
    w->st.in_run = 1;
    w->st.info_written = 0;
    return rc;
}

static int array_data(struct hprof_writer *w, const uint8_t *data, size_t len)
{
    if (len > w->st.array_left)
        return hprof_error_set(w->err, HPROF_ERR_USAGE,
                               "writer: array 0x%" PRIx64 " got more data than its count",
                               w->st.array_id);
    w->st.array_left -= len;
    /* An empty array, as --arrays=empty makes most: nothing to write, and
     * hprof_sink_write(), where sink_put() sends 0 bytes, would only check
     * that the sink is still usable. */
    if (len == 0 && !w->sink->failed && !w->sink->finished)
        return HPROF_OK;
    if (w->st.array_direct || w->streaming) { /* counted in seg_len by stream() */
        uint64_t at = (uintptr_t)data - w->copy_map;
        if (w->copy_fd >= 0 && len >= COPY_MIN && (uintptr_t)data >= w->copy_map &&
            at <= w->copy_size && len <= w->copy_size - at)
            return sink_copy(w->sink, w->copy_fd, at, data, len, w->st.array_left);
        return io(w, data, len);
    }
    if (len > 0) /* data may be NULL for an empty array */
        memcpy(w->seg + w->st.seg_len, data, len);
    w->st.seg_len += len;
    return HPROF_OK;
}

static uint8_t *scratch(struct hprof_writer *w, size_t n)
{
    if (n > w->scratch_cap) {
        size_t cap = w->scratch_cap ? w->scratch_cap : 256;
        while (cap < n)
            cap *= 2;
        uint8_t *grown = realloc(w->scratch, cap);
        if (grown == NULL) {
            hprof_error_set(w->err, HPROF_ERR_NOMEM, "writer: out of memory");
            return NULL;
        }
        w->scratch = grown;
        w->scratch_cap = cap;
    }
    return w->scratch;
}

/* ---- Callbacks ------------------------------------------------------------ */

static struct hprof_writer *self(struct hprof_visitor *v)
{
    return (struct hprof_writer *)v;
}

static int on_header(struct hprof_visitor *v, const struct hprof_header *h)
{
    struct hprof_writer *w = self(v);
    uint8_t tail[12];
    size_t vlen = strlen(h->version) + 1;
    if (h->id_size != 4 && h->id_size != 8)
        return hprof_error_set(w->err, HPROF_ERR_USAGE, "writer: id size %" PRIu32, h->id_size);
    if (w->st.header_written)
        return HPROF_OK;
    w->st.header_written = 1;
    w->id_size = h->id_size;
    put_u4(put_u4(put_u4(tail, h->id_size), (uint32_t)(h->timestamp_ms >> 32)),
           (uint32_t)h->timestamp_ms);
    int rc = io(w, h->version, vlen);
    return rc == HPROF_OK ? io(w, tail, sizeof tail) : rc;
}

/* A top-level record ends the open segment but not the run: a run of
 * segments is one heap dump until its HEAP_DUMP_END, also with names or
 * traces between its segments (as the JDK's hprof agent writes them), and
 * an END written here would make it two dumps to MAT and to the reader. */
static int before_top_level(struct hprof_writer *w)
{
    int rc = check_no_array_pending(w);
    return rc == HPROF_OK ? flush_segment(w) : rc;
}

/* Names are the most numerous top-level records: header and id go out in
 * one write, the text in another. */
static int on_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct hprof_writer *w = self(v);
    uint8_t head[9 + 8], *p;
    int rc = before_top_level(w);
    if (rc != HPROF_OK)
        return rc;
    p = put_record_header(w, head, HPROF_TAG_STRING, s->time, (uint64_t)w->id_size + s->length);
    if (p == NULL)
        return HPROF_ERR_USAGE;
    p = put_id(p, s->id, w->id_size);
    rc = io(w, head, (size_t)(p - head));
    return rc == HPROF_OK ? io(w, s->utf8, s->length) : rc;
}

static int on_load_class(struct hprof_visitor *v, const struct hprof_load_class *c)
{
    struct hprof_writer *w = self(v);
    uint8_t record[9 + 24];
    uint8_t *p = put_record_header(w, record, HPROF_TAG_LOAD_CLASS, c->time, 8 + 2 * w->id_size);
    int rc = before_top_level(w);
    if (rc != HPROF_OK)
        return rc;
    p = put_u4(p, c->class_serial);
    p = put_id(p, c->class_id, w->id_size);
    p = put_u4(p, c->stack_serial);
    p = put_id(p, c->name_id, w->id_size);
    return io(w, record, (size_t)(p - record));
}

static int on_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    struct hprof_writer *w = self(v);
    int rc = check_no_array_pending(w);
    if (rc != HPROF_OK)
        return rc;
    if (r->tag == HPROF_TAG_HEAP_DUMP_END) {
        int ours = w->st.closed_by_us && !w->st.in_run && w->st.seg_len == 0;
        w->st.closed_by_us = 0;
        if (ours)
            return HPROF_OK;        /* already written when the run ended */
        w->st.in_run = 1;              /* the input's END is written as it is */
        return end_run(w, r->time);
    }
    rc = before_top_level(w);
    if (rc == HPROF_OK)
        rc = write_record_header(w, r->tag, r->time, r->length);
    return rc == HPROF_OK ? io(w, r->body, r->length) : rc;
}

static int on_heap_begin(struct hprof_visitor *v, const struct hprof_segment *s)
{
    struct hprof_writer *w = self(v);
    int rc = check_no_array_pending(w);
    if (rc == HPROF_OK)
        rc = flush_segment(w);
    if (rc == HPROF_OK && s->tag == HPROF_TAG_HEAP_DUMP && w->st.in_run) {
        rc = end_run(w, 0); /* segments then a HEAP_DUMP: close their run */
        w->st.closed_by_us = 1;
    } else {
        w->st.closed_by_us = 0;
    }
    w->st.seg_time = s->time;
    w->st.seg_tag = s->tag == HPROF_TAG_HEAP_DUMP ? HPROF_TAG_HEAP_DUMP : HPROF_TAG_HEAP_DUMP_SEGMENT;
    w->st.whole_open = whole(w);
    /* even if nothing in a segment survives, the run gets its END */
    w->st.in_run = !whole(w);
    w->st.have_info = 0; /* readers start each input segment in the default heap */
    return rc;
}

static int on_heap_end(struct hprof_visitor *v, const struct hprof_segment *s)
{
    struct hprof_writer *w = self(v);
    (void)s;
    int rc = check_no_array_pending(w);
    return rc == HPROF_OK ? flush_segment(w) : rc;
}

static int on_root(struct hprof_visitor *v, const struct hprof_root *r)
{
    struct hprof_writer *w = self(v);
    uint8_t buf[32], *p = buf;
    p = put_u1(p, r->tag);
    p = root_put(p, r, w->id_size);
    return emit(w, buf, (size_t)(p - buf), 0);
}

static int on_heap_info(struct hprof_visitor *v, const struct hprof_heap_info *i)
{
    struct hprof_writer *w = self(v);
    int rc = check_no_array_pending(w);
    w->st.have_info = 1;
    w->st.info_written = 0;
    w->st.info_heap = i->heap_id;
    w->st.info_name = i->name_id;
    return rc;
}

static int on_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    struct hprof_writer *w = self(v);
    unsigned ids = w->id_size;
    size_t n = class_dump_size(c, ids);
    uint8_t *p = scratch(w, n), *start = p;
    if (p == NULL)
        return HPROF_ERR_NOMEM;
    p = put_u1(p, HPROF_CLASS_DUMP);
    p = class_dump_head_put(p, c, ids);
    for (unsigned i = 0; i < c->n_constants; i++) {
        const struct hprof_constant *k = &c->constants[i];
        p = put_u2(p, k->index);
        p = put_u1(p, k->type);
        p = put_value(p, k->value, type_size(k->type, ids));
    }
    p = put_u2(p, c->n_statics);
    for (unsigned i = 0; i < c->n_statics; i++) {
        const struct hprof_static_field *s = &c->statics[i];
        p = put_id(p, s->name_id, ids);
        p = put_u1(p, s->type);
        p = put_value(p, s->value, type_size(s->type, ids));
    }
    p = put_u2(p, c->n_fields);
    for (unsigned i = 0; i < c->n_fields; i++) {
        p = put_id(p, c->fields[i].name_id, ids);
        p = put_u1(p, c->fields[i].type);
    }
    return emit(w, start, (size_t)(p - start), 0);
}

static int on_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct hprof_writer *w = self(v);
    unsigned ids = w->id_size;
    uint8_t head[32], *p = head;
    p = put_u1(p, HPROF_INSTANCE_DUMP);
    p = instance_head_put(p, o, ids);
    int rc = emit(w, head, (size_t)(p - head), o->length);
    w->st.array_id = o->id;
    return rc == HPROF_OK ? array_data(w, o->values, o->length) : rc;
}

/* Is this call the next chunk of the array being written? */
static int continues_array(struct hprof_writer *w, uint64_t id, uint64_t first)
{
    if (first == 0)
        return 0;
    if (w->st.array_left == 0 || id != w->st.array_id || first != w->st.array_next) {
        hprof_error_set(w->err, HPROF_ERR_USAGE,
                        "writer: chunk at %" PRIu64 " of array 0x%" PRIx64 " out of order",
                        first, id);
        return -1;
    }
    return 1;
}

static int on_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct hprof_writer *w = self(v);
    unsigned ids = w->id_size;
    int cont = continues_array(w, a->id, a->first);
    if (cont < 0)
        return HPROF_ERR_USAGE;
    if (!cont) {
        uint8_t head[32], *p = head;
        p = put_u1(p, HPROF_OBJECT_ARRAY_DUMP);
        p = object_array_head_put(p, a, ids);
        int rc = emit(w, head, (size_t)(p - head), (uint64_t)a->count * ids);
        if (rc != HPROF_OK)
            return rc;
        w->st.array_id = a->id;
        w->st.array_data_at = w->st.array_direct || w->streaming ? hprof_sink_bytes(w->sink)
                                                                  : UINT64_MAX;
    }
    w->st.array_next = (uint64_t)a->first + a->n;
    return array_data(w, a->elements, (size_t)a->n * ids);
}

static int on_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct hprof_writer *w = self(v);
    unsigned ids = w->id_size;
    int cont = continues_array(w, a->id, a->first);
    if (cont < 0)
        return HPROF_ERR_USAGE;
    if (!cont) {
        uint8_t head[32], *p = head;
        int nodata = a->tag == HPROF_PRIMITIVE_ARRAY_NODATA;
        unsigned esize = type_size(a->type, ids);
        if (esize == 0 || a->type == HPROF_TYPE_OBJECT)
            return hprof_error_set(w->err, HPROF_ERR_USAGE,
                                   "writer: array 0x%" PRIx64 " has element type %u", a->id,
                                   a->type);
        p = put_u1(p, nodata ? HPROF_PRIMITIVE_ARRAY_NODATA : HPROF_PRIMITIVE_ARRAY_DUMP);
        p = primitive_array_head_put(p, a, ids);
        int rc = emit(w, head, (size_t)(p - head), nodata ? 0 : (uint64_t)a->count * esize);
        if (rc != HPROF_OK)
            return rc;
        w->st.array_id = a->id;
        w->st.array_data_at = w->st.array_direct || w->streaming ? hprof_sink_bytes(w->sink)
                                                                  : UINT64_MAX;
    }
    w->st.array_next = a->first + a->length;
    return array_data(w, a->data, a->length);
}

static int on_end(struct hprof_visitor *v)
{
    struct hprof_writer *w = self(v);
    int rc = check_no_array_pending(w);
    return rc == HPROF_OK ? end_run(w, 0) : rc;
}

static const struct hprof_visitor_ops writer_ops = {
    .header = on_header,
    .string = on_string,
    .load_class = on_load_class,
    .record = on_record,
    .heap_begin = on_heap_begin,
    .root = on_root,
    .heap_info = on_heap_info,
    .class_dump = on_class_dump,
    .instance = on_instance,
    .object_array = on_object_array,
    .primitive_array = on_primitive_array,
    .heap_end = on_heap_end,
    .end = on_end,
};

/* ---- Segments written elsewhere (the parallel write pass) ----------------- */

uint64_t writer_array_data_at(const struct hprof_writer *w, uint64_t id)
{
    return w->st.array_id == id ? w->st.array_data_at : UINT64_MAX;
}

int writer_copy_input(struct hprof_writer *w, const uint8_t *map, uint64_t size, int fd)
{
    int copy_fd = map != NULL && sink_can_copy(w->sink) ? fd : -1;
    if (copy_fd != w->copy_fd) /* a read made ahead would be of the last file */
        (void)sink_copy_ahead(w->sink, 0);
    w->copy_map = (uintptr_t)map;
    w->copy_size = size;
    w->copy_fd = copy_fd;
    return w->copy_fd >= 0;
}

int writer_copy_ahead(struct hprof_writer *w, int on)
{
    return sink_copy_ahead(w->sink, on && w->copy_fd >= 0);
}

void writer_for_segments(struct hprof_writer *w, unsigned id_size, struct hprof_sink *sink)
{
    w->id_size = id_size;
    w->sink = sink;
    w->streaming = sink_can_patch(sink);
}

void writer_begin_job(struct hprof_writer *w)
{
    w->st.in_run = 0;
    w->st.closed_by_us = 0;
}

struct writer_run writer_run_state(const struct hprof_writer *w)
{
    return (struct writer_run){ w->st.in_run, w->st.closed_by_us };
}

void writer_discard(struct hprof_writer *w)
{
    w->st = (struct writer_state){ .seg_tag = HPROF_TAG_HEAP_DUMP_SEGMENT };
}

/* The bytes are whole records; only their first header is read, to know
 * whether a HEAP_DUMP closes the run this writer has open.  After
 * HEAP_DUMP_SEGMENTs a run is open, after a HEAP_DUMP none is. */
int writer_put_segments(struct hprof_writer *w, const uint8_t *bytes, size_t len,
                        struct writer_run after, size_t records)
{
    int rc = check_no_array_pending(w);
    if (rc == HPROF_OK)
        rc = flush_segment(w);
    /* A job starts with no run open: a HEAP_DUMP first in it closes the run
     * this writer has open, as one writer would have. */
    int closes = len >= 9 && bytes[0] == HPROF_TAG_HEAP_DUMP && w->st.in_run;
    if (rc == HPROF_OK && closes)
        rc = end_run(w, 0);
    w->st.in_run = after.in_run;
    w->st.closed_by_us = after.closed_by_us || (closes && records == 1);
    w->st.have_info = 0;
    return rc == HPROF_OK ? io(w, bytes, len) : rc;
}

struct hprof_writer *hprof_writer_new(struct hprof_sink *sink, struct hprof_error *err)
{
    if (sink == NULL) {
        hprof_error_set(err, HPROF_ERR_USAGE, "writer: no sink");
        return NULL;
    }
    struct hprof_writer *w = calloc(1, sizeof *w);
    if (w == NULL) {
        hprof_error_set(err, HPROF_ERR_NOMEM, "writer: out of memory");
        return NULL;
    }
    w->base.ops = &writer_ops;
    w->sink = sink;
    w->streaming = sink_can_patch(sink);
    w->copy_fd = -1;
    w->err = err;
    w->id_size = 4;
    w->st.seg_tag = HPROF_TAG_HEAP_DUMP_SEGMENT;
    if (hprof_writer_set_segment_limit(w, HPROF_SEGMENT_LIMIT) != HPROF_OK) {
        hprof_writer_free(w);
        return NULL;
    }
    return w;
}

int hprof_writer_set_segment_limit(struct hprof_writer *w, uint32_t bytes)
{
    if (bytes < HPROF_SEGMENT_LIMIT_MIN || w->st.seg_len > 0)
        return hprof_error_set(w->err, HPROF_ERR_USAGE, "writer: bad segment limit %" PRIu32,
                               bytes);
    uint8_t *seg = realloc(w->seg, bytes);
    if (seg == NULL)
        return hprof_error_set(w->err, HPROF_ERR_NOMEM, "writer: out of memory");
    w->seg = seg;
    w->seg_cap = bytes;
    w->limit = bytes;
    return HPROF_OK;
}

struct hprof_visitor *hprof_writer_visitor(struct hprof_writer *w)
{
    return &w->base;
}

void hprof_writer_free(struct hprof_writer *w)
{
    if (w == NULL)
        return;
    free(w->seg);
    free(w->scratch);
    free(w);
}
