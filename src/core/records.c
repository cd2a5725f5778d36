/*
 * records.c - the record parser: records and heap sub-records, parsed in
 * place in the read window and handed to a visitor as pointers into it.
 * Arrays, the only sub-records that can be huge, go out in chunks of whole
 * elements, so no length field ever decides the size of an allocation
 * beyond HPROF_MAX_RECORD.  Every length is checked against what encloses
 * it before a byte of the body is asked for (reader_private.h).
 */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader_private.h"

#define CHUNK_MAX HPROF_READ_BUFFER     /* a multiple of every element size */
#define MEM_CHUNK_MAX (1u << 20)        /* the same, for input in memory */
#define PROGRESS_STEP (16u << 20)
#define PREFETCH_SEGMENT (8u << 10)     /* reader_read_heap() reads all of one this small at once */
/* Each sub-record asks for the line this far ahead of it.  Runs of small
 * instances (an object-rich heap) then stream in ahead of the parse, which
 * otherwise waits on a miss every line or two: 6% of a one-thread shrink
 * of such a dump.  Farther ahead asks for lines an array skips. */
#define PREFETCH_AHEAD 256u

/* ---- Messages ------------------------------------------------------------ */

/* "HEAP_DUMP_SEGMENT/INSTANCE_DUMP" or "STRING" for the current position. */
static const char *where(const struct hprof_reader *r, char *out, size_t len)
{
    if (r->in_heap)
        snprintf(out, len, "%s/%s", hprof_tag_name(r->rec_tag), hprof_subtag_name(r->sub_tag));
    else
        snprintf(out, len, "%s", hprof_tag_name(r->rec_tag));
    return out;
}

int reader_fail(struct hprof_reader *r, int code, uint64_t offset, const char *what)
{
    char w[80];
    return hprof_error_set(r->err, code, "offset 0x%" PRIx64 ": %s: %s", offset,
                           where(r, w, sizeof w), what);
}

/* reader_fail() with a formatted message, out of line and cold :
 * a 256-byte message buffer on the stack of each per-record reader would
 * keep GCC from inlining them into their loop (large-stack-frame-growth). */
int reader_failf(struct hprof_reader *r, int code, uint64_t offset, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return reader_fail(r, code, offset, msg);
}

int reader_visitor_failed(struct hprof_reader *r, int rc)
{
    uint64_t at = r->in_heap ? r->sub_offset : r->rec_offset;
    if (r->err->code == HPROF_OK)
        return reader_fail(r, rc, at, "a visitor failed");
    /* a visitor runs out of memory where the input holds more than it can
     * keep track of: where that is tells the user which dump and how far */
    if (r->err->code == HPROF_ERR_NOMEM && strncmp(r->err->message, "offset ", 7) != 0) {
        char what[sizeof r->err->message];
        snprintf(what, sizeof what, "%s", r->err->message);
        r->err->code = HPROF_OK;
        reader_fail(r, HPROF_ERR_NOMEM, at, what);
    }
    return r->err->code;
}

void reader_checkpoint(struct hprof_reader *r)
{
    window_release_behind(&r->in);
    window_publish_pos(&r->in);
    if (r->progress != NULL && r->in.pos >= r->next_progress) {
        r->progress(r->progress_ctx, r->in.pos, window_known_size(&r->in));
        r->next_progress = r->in.pos + PROGRESS_STEP;
    }
    r->next_check = r->in.pos + CHECK_STEP;
}

/* ---- The window, for the parser ------------------------------------------ */

static size_t avail(const struct hprof_reader *r)
{
    return window_avail(&r->in);
}

/* The input ends short of the `n` bytes read at `offset`: said at the
 * record or sub-record it cuts, as a file's length check says it (a
 * stream's end is known only once reached).  Between two sub-records,
 * the segment is what the end cuts. */
static int truncated(struct hprof_reader *r, uint64_t offset, uint64_t n)
{
    if (offset > r->in.size || n <= r->in.size - offset) /* the end not known yet */
        FAILF(r, HPROF_ERR_FORMAT, offset, "truncated: %" PRIu64 " bytes needed", n);
    int between = r->in_heap && r->sub_tag == 0;
    uint64_t start = r->in_heap && !between ? r->sub_offset : r->rec_offset;
    if (start > offset)
        start = offset;
    uint64_t into = r->in.size - start;
    if (between)
        return hprof_error_set(r->err, HPROF_ERR_TRUNCATED,
                               "offset 0x%" PRIx64 ": %s: the input ends %" PRIu64 " byte%s "
                               "into it, before the end its length says",
                               start, hprof_tag_name(r->rec_tag), into, into == 1 ? "" : "s");
    FAILF(r, HPROF_ERR_TRUNCATED, start, "the input ends %" PRIu64 " byte%s into it",
          into, into == 1 ? "" : "s");
}

/* Make `n` bytes available at `cur`; n <= HPROF_MAX_RECORD.  Callers have
 * already checked that the enclosing record holds them, so running out of
 * file here means the file ends mid-record.  A stream, whose size is not
 * known before it ends, can only tell once the bytes are not there. */
static int refill(struct hprof_reader *r, size_t n)
{
    if (n > r->in.size - r->in.pos)
        return truncated(r, r->in.pos, n);
    int rc = window_fill(&r->in, n, r->err);
    if (rc == HPROF_OK && avail(r) < n)
        return truncated(r, r->in.pos, n);
    return rc;
}

static inline int need(struct hprof_reader *r, size_t n)
{
    return avail(r) >= n ? HPROF_OK : refill(r, n);
}

static inline void consume(struct hprof_reader *r, size_t n)
{
    window_consume(&r->in, n);
}

/* A stream's bytes skipped are read and dropped, and may not be there. */
static int skip_stream(struct hprof_reader *r, uint64_t n)
{
    uint64_t from = r->in.pos;
    int rc = window_stream_skip(&r->in, n, r->err);
    if (rc == HPROF_OK && r->in.pos - from < n)
        return truncated(r, from, n);
    return rc;
}

static inline int skip(struct hprof_reader *r, uint64_t n)
{
    if (n > avail(r) && r->in.stream != NULL)
        return skip_stream(r, n);
    window_skip(&r->in, n);
    return HPROF_OK;
}

static int overrun(struct hprof_reader *r, size_t n, uint64_t limit)
{
    if (r->scanning)
        r->scan_hit_end = 1;
    FAILF(r, HPROF_ERR_FORMAT, r->sub_offset,
          "sub-record runs past the end of its segment (needs %zu bytes at 0x%" PRIx64
          ", %" PRIu64 " left)", n, r->in.pos, limit - r->in.pos);
}

/* Take `n` bytes of the current sub-record, which must end by `limit`.
 * Inline: it runs a few times for every record. */
static inline int take(struct hprof_reader *r, size_t n, uint64_t limit, const uint8_t **p)
{
    int rc = n > limit - r->in.pos ? overrun(r, n, limit) : need(r, n);
    *p = r->in.cur; /* unused on error; set so that no caller reads it unset */
    if (rc == HPROF_OK)
        consume(r, n);
    return rc;
}
/* ---- Heap sub-records ------------------------------------------------------ */

static int read_root(struct hprof_reader *r, struct hprof_visitor *v, uint64_t limit)
{
    unsigned ids = r->header.id_size;
    const uint8_t *p;
    int rc = take(r, root_body_size(r->sub_tag, ids), limit, &p);
    if (rc != HPROF_OK)
        return rc;
    struct hprof_root root = { .offset = r->sub_offset };
    root_get(p, r->sub_tag, ids, &root);
    return hprof_visit_root(v, &root);
}

static int read_heap_info(struct hprof_reader *r, struct hprof_visitor *v, uint64_t limit)
{
    const uint8_t *p;
    int rc = take(r, 4 + r->header.id_size, limit, &p);
    if (rc != HPROF_OK)
        return rc;
    struct hprof_heap_info info = {
        .offset = r->sub_offset,
        .heap_id = get_u4(p),
        .name_id = get_id(p + 4, r->header.id_size),
    };
    return hprof_visit_heap_info(v, &info);
}

static int grow_table(struct hprof_reader *r, void **table, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap)
        return HPROF_OK;
    void *grown = realloc(*table, n * size);
    if (grown == NULL)
        return hprof_error_set(r->err, HPROF_ERR_NOMEM, "out of memory");
    *table = grown;
    *cap = n;
    return HPROF_OK;
}

/* A value of basic type `type` at the cursor. */
static int take_value(struct hprof_reader *r, uint8_t type, uint64_t limit, uint64_t *value)
{
    unsigned size = type_size(type, r->header.id_size);
    const uint8_t *p;
    if (size == 0)
        FAILF(r, HPROF_ERR_FORMAT, r->sub_offset, "invalid basic type %u at 0x%" PRIx64,
              type, r->in.pos - 1);
    int rc = take(r, size, limit, &p);
    if (rc == HPROF_OK)
        *value = get_value(p, size);
    return rc;
}

static int read_class_dump(struct hprof_reader *r, struct hprof_visitor *v, uint64_t limit)
{
    unsigned ids = r->header.id_size;
    const uint8_t *p;
    int rc = take(r, class_dump_head_size(ids), limit, &p);
    if (rc != HPROF_OK)
        return rc;
    struct hprof_class_dump cd = { .offset = r->sub_offset };
    class_dump_head_get(p, ids, &cd);

    rc = grow_table(r, (void **)&r->constants, &r->cap_constants, cd.n_constants,
                    sizeof *r->constants);
    for (unsigned i = 0; rc == HPROF_OK && i < cd.n_constants; i++) {
        rc = take(r, 3, limit, &p);
        if (rc != HPROF_OK)
            break;
        r->constants[i].index = get_u2(p);
        r->constants[i].type = p[2];
        rc = take_value(r, p[2], limit, &r->constants[i].value);
    }
    if (rc == HPROF_OK)
        rc = take(r, 2, limit, &p);
    if (rc != HPROF_OK)
        return rc;
    cd.n_statics = get_u2(p);
    rc = grow_table(r, (void **)&r->statics, &r->cap_statics, cd.n_statics, sizeof *r->statics);
    for (unsigned i = 0; rc == HPROF_OK && i < cd.n_statics; i++) {
        rc = take(r, ids + 1, limit, &p);
        if (rc != HPROF_OK)
            break;
        r->statics[i].name_id = get_id(p, ids);
        r->statics[i].type = p[ids];
        rc = take_value(r, p[ids], limit, &r->statics[i].value);
    }
    if (rc == HPROF_OK)
        rc = take(r, 2, limit, &p);
    if (rc != HPROF_OK)
        return rc;
    cd.n_fields = get_u2(p);
    rc = grow_table(r, (void **)&r->fields, &r->cap_fields, cd.n_fields, sizeof *r->fields);
    if (rc == HPROF_OK)
        rc = take(r, (size_t)cd.n_fields * (ids + 1), limit, &p);
    if (rc != HPROF_OK)
        return rc;
    for (unsigned i = 0; i < cd.n_fields; i++, p += ids + 1) {
        r->fields[i].name_id = get_id(p, ids);
        r->fields[i].type = p[ids];
        if (type_size(p[ids], ids) == 0)
            FAILF(r, HPROF_ERR_FORMAT, r->sub_offset, "field %u has invalid basic type %u", i,
                  p[ids]);
    }
    cd.constants = r->constants;
    cd.statics = r->statics;
    cd.fields = r->fields;
    if (r->deliver != NULL && !idmap_has(r->deliver, cd.id))
        return HPROF_OK; /* salvage: its superclass never arrived */
    return hprof_visit_class_dump(v, &cd);
}

static int read_instance(struct hprof_reader *r, struct hprof_visitor *v, uint64_t limit)
{
    unsigned ids = r->header.id_size;
    const uint8_t *p;
    int rc = take(r, instance_head_size(ids), limit, &p);
    if (rc != HPROF_OK)
        return rc;
    struct hprof_instance o = { .offset = r->sub_offset };
    instance_head_get(p, ids, &o);
    if (o.length > HPROF_MAX_RECORD)
        FAILF(r, HPROF_ERR_FORMAT, r->sub_offset,
              "%" PRIu32 " bytes of fields exceed the reader's limit of %u", o.length,
              HPROF_MAX_RECORD);
    rc = take(r, o.length, limit, &o.values);
    if (rc != HPROF_OK)
        return rc;
    if (r->deliver != NULL && !idmap_has(r->deliver, o.class_id))
        return HPROF_OK; /* salvage: its class never arrived (whole) */
    return hprof_visit_instance(v, &o);
}

/* Size of the next chunk of an array with `left` bytes to go, elements of
 * `esize` bytes: what the window already holds, or a fresh CHUNK_MAX. */
static int next_chunk(struct hprof_reader *r, uint64_t left, unsigned esize, size_t *chunk)
{
    size_t have = avail(r);
    size_t n = left < have ? (size_t)left : have;
    /* Bounded chunks also bound a mapping's resident pages.  From memory
     * they are larger: a big array's contents then reach a file sink in
     * writes it makes without copying them into its buffer. */
    size_t max = r->in.mem != NULL ? MEM_CHUNK_MAX : CHUNK_MAX;
    if (n > max)
        n = max;
    n -= n % esize;
    if (n == 0 && left > 0) {
        n = left < CHUNK_MAX ? (size_t)left : CHUNK_MAX;
        int rc = need(r, n);
        if (rc != HPROF_OK)
            return rc;
    }
    *chunk = n;
    return HPROF_OK;
}

static int check_array_fits(struct hprof_reader *r, uint64_t bytes, uint32_t count,
                            uint64_t limit)
{
    if (bytes > limit - r->in.pos && r->scanning)
        r->scan_hit_end = 1;
    if (bytes > limit - r->in.pos)
        FAILF(r, HPROF_ERR_FORMAT, r->sub_offset,
              "%" PRIu32 " elements (%" PRIu64 " bytes) run past the end of the segment "
              "(%" PRIu64 " bytes left)", count, bytes, limit - r->in.pos);
    return HPROF_OK;
}

static int read_object_array(struct hprof_reader *r, struct hprof_visitor *v, uint64_t limit)
{
    unsigned ids = r->header.id_size;
    const uint8_t *p;
    int rc = take(r, object_array_head_size(ids), limit, &p);
    if (rc != HPROF_OK)
        return rc;
    struct hprof_object_array a = { .offset = r->sub_offset };
    object_array_head_get(p, ids, &a);
    uint64_t left = (uint64_t)a.count * ids;
    rc = check_array_fits(r, left, a.count, limit);
    do {
        size_t chunk;
        if (rc == HPROF_OK)
            rc = next_chunk(r, left, ids, &chunk);
        if (rc != HPROF_OK)
            return rc;
        a.n = (uint32_t)(chunk / ids);
        a.elements = r->in.cur;
        rc = hprof_visit_object_array(v, &a);
        consume(r, chunk);
        report_progress(r); /* pages given back, read-ahead moved on */
        left -= chunk;
        a.first += a.n;
        if (rc == HPROF_SKIP)
            return skip(r, left);
    } while (left > 0);
    return rc;
}

static int read_primitive_array(struct hprof_reader *r, struct hprof_visitor *v, uint64_t limit)
{
    unsigned ids = r->header.id_size;
    const uint8_t *p;
    int rc = take(r, primitive_array_head_size(ids), limit, &p);
    if (rc != HPROF_OK)
        return rc;
    struct hprof_primitive_array a = { .offset = r->sub_offset, .tag = r->sub_tag };
    primitive_array_head_get(p, ids, &a);
    unsigned esize = type_size(a.type, ids);
    if (esize == 0 || a.type == HPROF_TYPE_OBJECT)
        FAILF(r, HPROF_ERR_FORMAT, r->sub_offset, "invalid element type %u", a.type);
    a.data_offset = r->in.pos;
    uint64_t left = r->sub_tag == HPROF_PRIMITIVE_ARRAY_NODATA ? 0 : (uint64_t)a.count * esize;
    rc = check_array_fits(r, left, a.count, limit);
    if (rc == HPROF_OK && left < avail(r)) /* the next header, while visitors see this one */
        __builtin_prefetch(r->in.cur + left);
    if (rc == HPROF_OK && r->deliver != NULL && (r->found.sv->drop_types >> a.type & 1)) {
        return skip(r, left); /* salvage: the class of its type never arrived */
    }
    do {
        size_t chunk;
        if (rc == HPROF_OK)
            rc = next_chunk(r, left, esize, &chunk);
        if (rc != HPROF_OK)
            return rc;
        a.length = chunk;
        a.data = r->in.cur;
        rc = hprof_visit_primitive_array(v, &a);
        consume(r, chunk);
        report_progress(r); /* pages given back, read-ahead moved on */
        left -= chunk;
        a.first += chunk;
        if (rc == HPROF_SKIP)
            return skip(r, left);
    } while (left > 0);
    return rc;
}

static int read_sub_record(struct hprof_reader *r, struct hprof_visitor *v, uint64_t limit)
{
    switch (r->sub_tag) {
    case HPROF_ROOT_UNKNOWN: case HPROF_ROOT_JNI_GLOBAL: case HPROF_ROOT_JNI_LOCAL:
    case HPROF_ROOT_JAVA_FRAME: case HPROF_ROOT_NATIVE_STACK: case HPROF_ROOT_STICKY_CLASS:
    case HPROF_ROOT_THREAD_BLOCK: case HPROF_ROOT_MONITOR_USED: case HPROF_ROOT_THREAD_OBJECT:
    case HPROF_ROOT_INTERNED_STRING: case HPROF_ROOT_FINALIZING: case HPROF_ROOT_DEBUGGER:
    case HPROF_ROOT_REFERENCE_CLEANUP: case HPROF_ROOT_VM_INTERNAL: case HPROF_ROOT_JNI_MONITOR:
    case HPROF_UNREACHABLE:
        return read_root(r, v, limit);
    case HPROF_HEAP_DUMP_INFO: return read_heap_info(r, v, limit);
    case HPROF_CLASS_DUMP: return read_class_dump(r, v, limit);
    case HPROF_INSTANCE_DUMP: return read_instance(r, v, limit);
    case HPROF_OBJECT_ARRAY_DUMP: return read_object_array(r, v, limit);
    case HPROF_PRIMITIVE_ARRAY_DUMP:
    case HPROF_PRIMITIVE_ARRAY_NODATA: return read_primitive_array(r, v, limit);
    default:
        FAILF(r, HPROF_ERR_FORMAT, r->sub_offset, "unknown sub-record tag 0x%02x", r->sub_tag);
    }
}

/* The sub-records from the cursor to `limit`, through `v`; with `scan`,
 * where the complete ones end.  The one loop over sub-records, for
 * reader_read_heap() and salvage's scan_cut_heap(): read_sub_record() and
 * the readers of instances and arrays then have one caller and are inlined
 * into it, which saves a call per object.
 * @return HPROF_OK or an error. */
int reader_sub_records(struct hprof_reader *r, struct hprof_visitor *v, uint64_t limit,
                       struct cut_scan *scan)
{
    while (r->in.pos < limit) {
        const uint8_t *p;
        if (avail(r) > PREFETCH_AHEAD)
            __builtin_prefetch(r->in.cur + PREFETCH_AHEAD);
        r->sub_offset = r->in.pos;
        r->sub_tag = 0;
        int rc = take(r, 1, limit, &p);
        if (rc != HPROF_OK)
            return rc;
        r->sub_tag = *p;
        rc = read_sub_record(r, v, limit);
        if (rc < 0)
            return reader_visitor_failed(r, rc);
        if (scan != NULL) {
            scan->kept = r->in.pos;
            scan->subs++;
            if (r->in.pos >= scan->next_release) { /* a mapping's pages stay bounded */
                window_release_behind(&r->in);
                scan->next_release = r->in.pos + CHECK_STEP;
            }
        }
        report_progress(r);
    }
    return HPROF_OK;
}

/* Salvage: the array classes rebuilt (struct salvage_state), first in
 * the first heap record. */
static int deliver_rebuilt(struct hprof_reader *r, struct hprof_visitor *v)
{
    for (unsigned i = 0; i < r->found.sv->n_rebuilt; i++) {
        struct hprof_class_dump cd = {
            .offset = r->in.pos,
            .id = r->found.sv->rebuilt[i].id,
            .super_id = r->found.sv->rebuilt[i].super_id,
            .constants = r->constants, .statics = r->statics, .fields = r->fields,
        };
        r->sub_offset = r->in.pos;
        r->sub_tag = HPROF_CLASS_DUMP;
        int rc = hprof_visit_class_dump(v, &cd);
        if (rc < 0)
            return reader_visitor_failed(r, rc);
    }
    return HPROF_OK;
}

int reader_read_heap(struct hprof_reader *r, struct hprof_visitor *v,
                     const struct hprof_segment *seg)
{
    int rc = hprof_visit_heap_begin(v, seg);
    uint64_t skip_to = r->skip_to; /* reader_skip_to(), asked only with this skip */
    r->skip_to = 0;
    r->heap_bytes += seg->length;
    if (rc == HPROF_SKIP) {
        if ((rc = skip(r, seg->length)) == HPROF_OK && skip_to > r->in.pos &&
            skip_to <= r->in.size)
            rc = skip(r, skip_to - r->in.pos);
        r->in.skipped_segment = r->in.map != NULL;
        return rc;
    }
    if (rc < 0)
        return reader_visitor_failed(r, rc);
    uint64_t limit = r->in.pos + seg->length;
    /* Every sub-record of a small segment (ART ends one past 4 KiB) is
     * parsed: asking for all its lines at once, and the next record's
     * header, overlaps their cache misses instead of taking them one
     * sub-record after another.  HotSpot's segments are larger: prefetching
     * ahead of the cursor there would fetch array contents nothing reads. */
    if (seg->length <= PREFETCH_SEGMENT && seg->length < avail(r)) {
        for (size_t at = 0; at < seg->length; at += 64)
            __builtin_prefetch(r->in.cur + at);
        __builtin_prefetch(r->in.cur + seg->length);
    }
    r->in_heap = 1;
    if (r->deliver != NULL && seg->offset == r->found.sv->first_heap &&
        (rc = deliver_rebuilt(r, v)) != HPROF_OK)
        return rc;
    if ((rc = reader_sub_records(r, v, limit, NULL)) != HPROF_OK)
        return rc;
    r->in_heap = 0;
    rc = hprof_visit_heap_end(v, seg);
    return rc < 0 ? reader_visitor_failed(r, rc) : HPROF_OK;
}

/* ---- Top-level records --------------------------------------------------- */

/* A tag the format does not define: an error, before its length is
 * trusted for anything. */
static int unknown_tag(struct hprof_reader *r, uint32_t time, uint32_t length)
{
    if (hprof_head_is_file_header(r->rec_tag, time, length))
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               "offset 0x%" PRIx64 ": " HPROF_FILE_HEADER_HERE, r->rec_offset);
    if (r->rec_tag >= HPROF_CLASS_DUMP && strcmp(hprof_subtag_name(r->rec_tag), "unknown") != 0)
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               "offset 0x%" PRIx64 ": tag 0x%02x: heap sub-record %s "
                               "outside a heap dump", r->rec_offset, r->rec_tag,
                               hprof_subtag_name(r->rec_tag));
    return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                           "offset 0x%" PRIx64 ": tag 0x%02x: unknown record tag",
                           r->rec_offset, r->rec_tag);
}

/* Nothing passes through unexamined: a record of a tag the format does not
 * define is an error, not an opaque body to copy (a flipped bit in a
 * segment's tag would otherwise carry a whole heap, Strings and pixels
 * included, past every rewrite), and every record whose layout the format
 * fixes must have exactly that length.  Heaps are checked sub-record by
 * sub-record as they are read; this covers the rest.  `p` holds the body. */
static int check_layout(struct hprof_reader *r, const uint8_t *p, uint32_t length)
{
    unsigned ids = r->header.id_size;
    uint64_t want;
    switch (r->rec_tag) {
    case HPROF_TAG_STRING:
        if (length < ids)
            FAILF(r, HPROF_ERR_FORMAT, r->rec_offset, "length %" PRIu32 " is shorter than an id",
                  length);
        return HPROF_OK;
    case HPROF_TAG_LOAD_CLASS: want = 8 + 2 * ids; break;
    case HPROF_TAG_UNLOAD_CLASS: case HPROF_TAG_END_THREAD: want = 4; break;
    case HPROF_TAG_STACK_FRAME: want = 8 + 4 * ids; break;
    case HPROF_TAG_STACK_TRACE:
        if (length < 12)
            FAILF(r, HPROF_ERR_FORMAT, r->rec_offset, "length %" PRIu32 ", expected at least 12",
                  length);
        want = 12 + (uint64_t)get_u4(p + 8) * ids;
        if (want != length)
            FAILF(r, HPROF_ERR_FORMAT, r->rec_offset,
                  "length %" PRIu32 " does not hold its %" PRIu32 " frames (%" PRIu64 " bytes)",
                  length, get_u4(p + 8), want);
        return HPROF_OK;
    case HPROF_TAG_ALLOC_SITES: /* u2 flags, u4 ratio, 2 x u4, 2 x u8, u4 n, n x 25 bytes */
        if (length < 34)
            FAILF(r, HPROF_ERR_FORMAT, r->rec_offset, "length %" PRIu32 ", expected at least 34",
                  length);
        want = 34 + (uint64_t)get_u4(p + 30) * 25;
        if (want != length)
            FAILF(r, HPROF_ERR_FORMAT, r->rec_offset,
                  "length %" PRIu32 " does not hold its %" PRIu32 " sites (%" PRIu64 " bytes)",
                  length, get_u4(p + 30), want);
        return HPROF_OK;
    case HPROF_TAG_HEAP_SUMMARY: want = 24; break;
    case HPROF_TAG_START_THREAD: want = 8 + 4 * ids; break;
    case HPROF_TAG_CPU_SAMPLES:
        if (length < 8)
            FAILF(r, HPROF_ERR_FORMAT, r->rec_offset, "length %" PRIu32 ", expected at least 8",
                  length);
        want = 8 + (uint64_t)get_u4(p + 4) * 8;
        if (want != length)
            FAILF(r, HPROF_ERR_FORMAT, r->rec_offset,
                  "length %" PRIu32 " does not hold its %" PRIu32 " samples (%" PRIu64 " bytes)",
                  length, get_u4(p + 4), want);
        return HPROF_OK;
    case HPROF_TAG_CONTROL_SETTINGS: want = 6; break;
    case HPROF_TAG_HEAP_DUMP_END: want = 0; break;
    default:
        return unknown_tag(r, 0, length);
    }
    if (length != want)
        FAILF(r, HPROF_ERR_FORMAT, r->rec_offset, "length %" PRIu32 ", expected %" PRIu64,
              length, want);
    return HPROF_OK;
}

/* At a heap record: a HEAP_DUMP, or a segment that opens a run, begins a
 * heap dump (as MAT counts them: a HEAP_DUMP record or a HEAP_DUMP_END
 * ends one).  With reader_set_one_dump(), a second one stops the run. */
static int dump_boundary(struct hprof_reader *r)
{
    /* no writer puts one there, and which dump it would belong to is
     * anyone's guess: every tool refuses it alike */
    if (r->rec_tag == HPROF_TAG_HEAP_DUMP && r->open_run != 0)
        FAILF(r, HPROF_ERR_FORMAT, r->rec_offset,
              "inside the HEAP_DUMP_SEGMENTs from 0x%" PRIx64 ", which no HEAP_DUMP_END closed",
              r->open_run);
    int begins = r->rec_tag == HPROF_TAG_HEAP_DUMP ||
                 (r->rec_tag == HPROF_TAG_HEAP_DUMP_SEGMENT && r->open_run == 0);
    if (r->rec_tag == HPROF_TAG_HEAP_DUMP_SEGMENT && r->open_run == 0)
        r->open_run = r->rec_offset;
    else if (r->rec_tag == HPROF_TAG_HEAP_DUMP_END)
        r->open_run = 0;
    if (!begins)
        return HPROF_OK;
    if (r->dumps == UINT_MAX)
        FAILF(r, HPROF_ERR_FORMAT, r->rec_offset, "more than %u heap dumps", UINT_MAX);
    r->dumps++;
    if (r->guarding && r->dumps > 1) {
        r->dumps_seen = r->dumps;
        r->stopped_at_dump = 1;
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               "offset 0x%" PRIx64 ": %s: a second heap dump begins here "
                               "(each dump is read on its own)", r->rec_offset,
                               hprof_tag_name(r->rec_tag));
    }
    return HPROF_OK;
}

/* A record other than a heap record, whose header was just read: whole
 * in the window, its layout checked, to the visitor. */
static int read_plain_record(struct hprof_reader *r, struct hprof_visitor *v, uint32_t time,
                             uint32_t length)
{
    unsigned ids = r->header.id_size;
    if (length > HPROF_MAX_RECORD)
        FAILF(r, HPROF_ERR_FORMAT, r->rec_offset,
              "body of %" PRIu32 " bytes exceeds the reader's limit of %u", length,
              HPROF_MAX_RECORD);
    int rc = need(r, length);
    if (rc != HPROF_OK)
        return rc;
    const uint8_t *p = r->in.cur;
    if ((rc = check_layout(r, p, length)) != HPROF_OK)
        return rc;
    switch (r->rec_tag) {
    case HPROF_TAG_STRING: {
        struct hprof_string s = { r->rec_offset, time, get_id(p, ids), length - ids, p + ids };
        rc = hprof_visit_string(v, &s);
        break;
    }
    case HPROF_TAG_LOAD_CLASS: {
        struct hprof_load_class c = {
            .offset = r->rec_offset, .time = time, .class_serial = get_u4(p),
            .class_id = get_id(p + 4, ids), .stack_serial = get_u4(p + 4 + ids),
            .name_id = get_id(p + 8 + ids, ids),
        };
        rc = hprof_visit_load_class(v, &c);
        break;
    }
    default: {
        struct hprof_record rec = { r->rec_offset, r->rec_tag, time, length, p };
        rc = hprof_visit_record(v, &rec);
        break;
    }
    }
    consume(r, length);
    return rc < 0 ? reader_visitor_failed(r, rc) : HPROF_OK;
}


int reader_read_record(struct hprof_reader *r, struct hprof_visitor *v)
{
    r->rec_offset = r->in.pos;
    r->rec_tag = 0;
    r->in_heap = 0;
    if (r->in.stream != NULL && avail(r) < 9) { /* the end of a stream shows here */
        int rc = window_fill(&r->in, 9, r->err);
        if (rc != HPROF_OK)
            return rc;
        if (r->in.pos == r->in.size)
            return READER_CUT;
    }
    if (r->in.size - r->in.pos < 9) {
        if (r->set.salvage)
            return READER_CUT_HEADER;
        return hprof_error_set(r->err, HPROF_ERR_TRUNCATED,
                               "offset 0x%" PRIx64 ": record header: truncated: 9 bytes needed, "
                               "%" PRIu64 " left", r->in.pos, r->in.size - r->in.pos);
    }
    int rc = need(r, 9);
    if (rc != HPROF_OK)
        return rc;
    const uint8_t *p = r->in.cur;
    uint8_t head[9];
    if (r->in.skipped_segment) {
        /* A walk that skips segments (the write pass's dispatcher) needs
         * only their headers.  Touching one in the mapping would map the
         * 64 KiB around it, then unmap them: for ART's small segments that
         * is most of the file, on the thread that writes the output. */
        r->in.skipped_segment = 0;
        if ((rc = window_pread(&r->in, r->in.pos, head, sizeof head, r->err)) != HPROF_OK)
            return rc;
        p = head;
    }
    r->rec_tag = p[0];
    uint32_t time = get_u4(p + 1), length = get_u4(p + 5);
    consume(r, 9);
    r->records++;
    /* Zeros that a salvaging run meets were not taken for a zero-filled
     * tail (salvage.c): salvage does not help with them. */
    if (r->rec_tag == 0 && time == 0 && length == 0)
        return hprof_error_set(r->err, r->set.salvage ? HPROF_ERR_FORMAT : HPROF_ERR_TRUNCATED,
                               "offset 0x%" PRIx64 ": " HPROF_ZEROS_HERE, r->rec_offset);
    int heap_record = 0;
    if (r->rec_tag == HPROF_TAG_HEAP_DUMP || r->rec_tag == HPROF_TAG_HEAP_DUMP_SEGMENT ||
        r->rec_tag == HPROF_TAG_HEAP_DUMP_END) {
        heap_record = 1;
        if ((rc = dump_boundary(r)) != HPROF_OK)
            return rc;
    }
    if (!hprof_tag_known(r->rec_tag))
        return unknown_tag(r, time, length);
    if (length > r->in.size - r->in.pos && r->set.salvage) {
        r->cut_time = time;
        r->cut_length = length;
        return READER_CUT_RECORD;
    }
    if (length > r->in.size - r->in.pos)
        FAILF(r, HPROF_ERR_TRUNCATED, r->rec_offset,
              "length %" PRIu32 " runs past the end of the file (%" PRIu64 " bytes left)",
              length, r->in.size - r->in.pos);
    if (heap_record && r->selecting != 0) {
        if (r->dumps != r->selecting) { /* another dump's: not this run's */
            return skip(r, length);
        }
        r->dump_end = r->in.pos + length;
    }

    if (r->rec_tag == HPROF_TAG_HEAP_DUMP || r->rec_tag == HPROF_TAG_HEAP_DUMP_SEGMENT) {
        struct hprof_segment seg = { r->rec_offset, r->rec_tag, time, length };
        return reader_read_heap(r, v, &seg);
    }
    return read_plain_record(r, v, time, length);
}
