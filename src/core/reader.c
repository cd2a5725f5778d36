/*
 * reader.c - streams a heap dump through a visitor chain: opening, the
 * header, what the caller sets, and runs.  The parts of a reader are in
 * reader_private.h: the bytes come through read_window.c, records.c parses
 * them, salvage.c reads a dump cut short.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reader_private.h"

#define MAX_HEADER 64

/* ---- Opening --------------------------------------------------------------- */

/* The first bytes, up to MAX_HEADER: a stream's stay in the window, where
 * its one run starts. */
static int read_head(struct hprof_reader *r, uint8_t *head, size_t *len)
{
    if (r->in.stream != NULL) {
        window_seek(&r->in, 0);
        int rc = window_fill(&r->in, MAX_HEADER, r->err);
        *len = window_avail(&r->in) < MAX_HEADER ? window_avail(&r->in) : MAX_HEADER;
        memcpy(head, r->in.cur, *len);
        return rc;
    }
    *len = r->in.size < MAX_HEADER ? (size_t)r->in.size : MAX_HEADER;
    if (r->in.mem != NULL)
        memcpy(head, r->in.mem, *len);
    else if (*len > 0)
        return window_pread(&r->in, 0, head, *len, r->err);
    return HPROF_OK;
}

static int parse_header(struct hprof_reader *r)
{
    uint8_t head[MAX_HEADER];
    size_t len;
    int rc = read_head(r, head, &len);
    if (rc != HPROF_OK)
        return r->err->code != HPROF_OK ? r->err->code : rc;
    if (len == 0)
        return hprof_error_set(r->err, HPROF_ERR_FORMAT, "offset 0x0: header: empty file");

    const char magic[] = "JAVA PROFILE 1.0.";
    const uint8_t *nul = memchr(head, 0, len);
    int read_by_input;
    const char *compressor = hprof_compressed_by(head, len, &read_by_input);
    if (compressor != NULL)
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               read_by_input ? HPROF_COMPRESSED_TWICE : HPROF_COMPRESSED_UNREAD,
                               compressor, compressor);
    if (len < sizeof magic - 1 || memcmp(head, magic, sizeof magic - 1) != 0)
        return hprof_error_set(r->err, HPROF_ERR_FORMAT, HPROF_NOT_A_DUMP);
    /* The hprof agent's format=a writes "JAVA PROFILE 1.0.1, created ..."
     * and text lines: the version is followed by a comma, not a NUL. */
    if (len > sizeof magic && (head[sizeof magic] == ',' || head[sizeof magic] == '\n'))
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               "offset 0x0: header: a text-format hprof (format=a), not a binary "
                               "heap dump");
    if (nul == NULL || (size_t)(nul - head) >= sizeof r->header.version)
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               "offset 0x0: header: version string is not terminated");
    size_t vlen = (size_t)(nul - head);
    if (vlen != sizeof magic || (head[vlen - 1] < '1' || head[vlen - 1] > '3'))
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               "offset 0x0: header: unsupported version \"%.*s\"", (int)vlen,
                               (const char *)head);
    if (len < vlen + 1 + 12)
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               "offset 0x%zx: header: truncated (file is %" PRIu64 " bytes)",
                               vlen + 1, r->in.size);
    memcpy(r->header.version, head, vlen + 1);
    r->header.id_size = get_u4(head + vlen + 1);
    r->header.timestamp_ms = get_u8(head + vlen + 5);
    r->header.length = vlen + 1 + 12;
    if (r->header.id_size != 4 && r->header.id_size != 8)
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               "offset 0x%zx: header: identifier size %" PRIu32
                               " (expected 4 or 8)", vlen + 1, r->header.id_size);
    return HPROF_OK;
}

static int open_common(struct hprof_reader **out, struct hprof_reader *r)
{
    int rc = parse_header(r);
    if (rc != HPROF_OK) {
        hprof_reader_free(r);
        *out = NULL;
        return rc;
    }
    *out = r;
    return HPROF_OK;
}

int hprof_reader_open_fd(struct hprof_reader **out, int fd, struct hprof_error *err)
{
    struct stat st;
    *out = NULL;
    if (fstat(fd, &st) != 0)
        return hprof_error_set(err, HPROF_ERR_IO, "stat: %s", strerror(errno));
    if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
        return hprof_error_set(err, HPROF_ERR_IO, "input is not a regular file");
    struct hprof_reader *r = calloc(1, sizeof *r);
    uint8_t *buf = malloc(HPROF_READ_BUFFER);
    if (r == NULL || buf == NULL) {
        free(r);
        free(buf);
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
    }
    r->in.fd = fd;
    r->in.size = (uint64_t)st.st_size;
    r->err = err;
    r->in.buf = buf;
    r->in.cap = HPROF_READ_BUFFER;
    return open_common(out, r);
}

/* A stream's buffer: what a pipe grown to 1 MiB holds, taken in one read
 * (128 KiB reads made eight times the wake-ups, and the writer waited). */
#define STREAM_BUFFER ((size_t)1 << 20)

int reader_open_stream(struct hprof_reader **out, hprof_read_fn read, void *ctx,
                       void (*close)(void *ctx), struct hprof_error *err)
{
    *out = NULL;
    struct hprof_reader *r = calloc(1, sizeof *r);
    struct read_stream *s = calloc(1, sizeof *s);
    uint8_t *buf = malloc(STREAM_BUFFER);
    if (r == NULL || s == NULL || buf == NULL) {
        free(r);
        free(s);
        free(buf);
        if (close != NULL)
            close(ctx);
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
    }
    s->read = read;
    s->ctx = ctx;
    s->close = close;
    r->in.fd = -1;
    r->in.stream = s;
    r->in.size = STREAM_SIZE_UNKNOWN;
    r->in.buf = buf;
    r->in.cap = STREAM_BUFFER;
    r->err = err;
    return open_common(out, r);
}

void reader_stream_from_ring(struct hprof_reader *r, struct push_ring *ring)
{
    r->in.stream->ring = ring;
}

int hprof_reader_open_stream(struct hprof_reader **out, hprof_read_fn read, void *ctx,
                             struct hprof_error *err)
{
    return reader_open_stream(out, read, ctx, NULL, err);
}

int hprof_reader_open_memory(struct hprof_reader **out, const void *data, size_t len,
                             struct hprof_error *err)
{
    *out = NULL;
    struct hprof_reader *r = calloc(1, sizeof *r);
    if (r == NULL)
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
    r->in.fd = -1;
    r->in.mem = data;
    r->in.size = len;
    r->err = err;
    return open_common(out, r);
}

const struct hprof_header *hprof_reader_header(const struct hprof_reader *r)
{
    return &r->header;
}

uint64_t hprof_reader_size(const struct hprof_reader *r)
{
    if (r->in.stream != NULL)
        return r->in.stream->got;
    return r->in.size;
}

void hprof_reader_set_strict(struct hprof_reader *r, int strict)
{
    r->set.strict = strict;
}

void hprof_reader_set_dump(struct hprof_reader *r, unsigned dump)
{
    r->set.only_dump = dump;
}

unsigned hprof_reader_dumps(const struct hprof_reader *r)
{
    return r->dumps_seen;
}

int hprof_reader_ends_before_heap(const struct hprof_reader *r)
{
    return r->ended_before_heap;
}

void reader_set_one_dump(struct hprof_reader *r, int on)
{
    r->set.one_dump = on;
}

int reader_stopped_at_second_dump(const struct hprof_reader *r)
{
    return r->stopped_at_dump;
}

uint64_t reader_dump_end(const struct hprof_reader *r)
{
    return r->dump_end;
}

void reader_set_range(struct hprof_reader *r, uint64_t start, uint64_t end)
{
    r->set.range_start = start;
    r->set.range_end = end;
}

void hprof_reader_set_progress(struct hprof_reader *r,
                               void (*fn)(void *ctx, uint64_t done, uint64_t total), void *ctx)
{
    r->progress = fn;
    r->progress_ctx = ctx;
}

void hprof_reader_free(struct hprof_reader *r)
{
    if (r == NULL)
        return;
    window_free(&r->in);
    free(r->constants);
    free(r->statics);
    free(r->fields);
    salvage_state_release(r->found.sv);
    free(r);
}

static int run_records(struct hprof_reader *r, struct hprof_visitor *v);

/* Before the first run of a salvaging reader delivers anything: is the
 * input cut (salvage_find_cut())?  If it is, a census run (without
 * visitors' output: arrays skipped) finds the classes whose superclass
 * chain is complete in what is kept; the runs then deliver only those
 * class dumps and the instances of those classes, so that what they
 * deliver is a valid dump (validate.h, rules 2 and 3).  A complete input
 * is read as without salvage.  @return HPROF_OK or an error of the input. */
static int salvage_prepare(struct hprof_reader *r)
{
    uint64_t first_heap;
    int cut;
    r->found.prepared = 1;
    int rc = salvage_find_cut(r, &cut, &first_heap);
    if (rc != HPROF_OK || !cut)
        return rc;
    struct census *cs = salvage_census_new(r->err);
    void (*progress)(void *, uint64_t, uint64_t) = r->progress;
    rc = cs != NULL ? HPROF_OK : r->err->code;
    if (rc == HPROF_OK) {
        r->progress = NULL; /* the run that follows reports progress */
        rc = run_records(r, salvage_census_visitor(cs));
        r->progress = progress;
        window_release_all(&r->in); /* the run starts from the top again */
    }
    if (rc == HPROF_OK)
        rc = salvage_state_from_census(r, cs, first_heap);
    salvage_census_free(cs);
    if (rc != HPROF_OK)
        r->found.prepared = 0;
    return rc;
}

/* Before a run: the census if it is due, and what to deliver. */
static int salvage_begin(struct hprof_reader *r)
{
    int rc = HPROF_OK;
    if (r->set.salvage && !r->found.prepared)
        rc = salvage_prepare(r);
    r->deliver = r->set.salvage && r->found.sv != NULL ? &r->found.sv->complete : NULL;
    return rc;
}

/* The record at the cursor; a cut one salvaged.  @return HPROF_OK,
 * READER_CUT or an error. */
static int read_record(struct hprof_reader *r, struct hprof_visitor *v)
{
    int rc = reader_read_record(r, v);
    if (rc == READER_CUT_HEADER)
        return salvage_cut_record_header(r);
    if (rc == READER_CUT_RECORD)
        return salvage_cut_record(r, r->cut_time, r->cut_length, v);
    return rc;
}

static int run_records(struct hprof_reader *r, struct hprof_visitor *v)
{
    int rc = salvage_begin(r);
    if (rc != HPROF_OK)
        return rc;
    if (r->in.stream != NULL) /* its window is at the header still */
        window_consume(&r->in, r->header.length);
    else
        window_seek(&r->in, r->set.range_start != 0 ? r->set.range_start : r->header.length);
    uint64_t end = r->set.range_end != 0 ? r->set.range_end : r->in.size;
    r->next_progress = r->next_check = 0;
    r->in_heap = 0;
    r->rec_tag = 0;
    r->records = 0;
    r->heap_bytes = 0;
    r->open_run = 0;
    r->dumps = 0;
    r->dump_end = 0;
    r->selecting = r->set.only_dump;
    r->guarding = r->set.one_dump && r->set.only_dump == 0;
    r->stopped_at_dump = 0;
    r->before_heap_only = 1;
    r->ended_before_heap = 0;
    memset(&r->report, 0, sizeof r->report);
    r->report.zero_tail = r->found.zero_tail;
    if (r->found.zero_tail != 0)
        r->report.input_end = r->in.size;
    if (r->deliver != NULL) {
        r->report.classes_dropped = r->found.sv->classes_dropped;
        r->report.instances_dropped = r->found.sv->instances_dropped;
        r->report.arrays_dropped = r->found.sv->arrays_dropped;
        r->report.array_classes_rebuilt = r->found.sv->n_rebuilt;
    }
    rc = hprof_visit_header(v, &r->header);
    if (rc < 0)
        return hprof_error_set(r->err, rc, "offset 0x0: header: a visitor failed");
    while (r->in.pos < end) {
        rc = read_record(r, v);
        if (rc == READER_CUT)
            break;
        if (rc != HPROF_OK)
            return rc;
        r->before_heap_only &= hprof_tag_before_heap(r->rec_tag);
        report_progress(r);
    }
    r->dumps_seen = r->dumps;
    if (r->selecting > r->dumps)
        return hprof_error_set(r->err, HPROF_ERR_USAGE,
                               "no heap dump %u: the file holds %u", r->selecting, r->dumps);
    if (r->set.salvage && r->open_run != 0) { /* the visitors' end closes it */
        if (!r->report.cut)
            r->report.input_end = r->report.kept_end = r->in.size;
        r->report.cut = 1;
        r->report.unclosed_run = r->open_run;
    }
    if (r->set.salvage && r->found.cut_before_heap) { /* nothing lost but the heap */
        r->report.cut = 1;
        r->report.input_end = r->report.kept_end = r->in.size;
    }
    if (r->set.strict && r->records == 0)
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               "offset 0x%" PRIx64 ": end of file: no %srecord after the header "
                               "(truncated?)%s", r->in.size, r->set.salvage ? "complete " : "",
                               r->set.salvage ? ": nothing to salvage" : "");
    /* A cut before the heap: analyzers refuse a dump without one. */
    if (r->set.strict && r->report.cut && r->heap_bytes == 0 && r->records > 0)
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               "offset 0x%" PRIx64 ": end of file: cut before any complete heap "
                               "sub-record: nothing to salvage", r->in.size);
    if (r->set.strict && r->open_run != 0 && !r->set.salvage)
        return hprof_error_set(r->err, HPROF_ERR_TRUNCATED,
                               "offset 0x%" PRIx64 ": end of file: the HEAP_DUMP_SEGMENTs from "
                               "0x%" PRIx64 " are not closed by HEAP_DUMP_END (truncated?)",
                               r->in.size, r->open_run);
    /* (a run over part of the input knows nothing of the rest) */
    r->ended_before_heap = r->before_heap_only && r->records > 0 && r->dumps == 0 &&
                           r->set.range_start == 0 && r->set.range_end == 0;
    if (r->progress != NULL)
        r->progress(r->progress_ctx, r->in.size, r->in.size);
    rc = hprof_visit_end(v);
    if (rc < 0)
        return hprof_error_set(r->err, rc, "offset 0x%" PRIx64 ": end of file: a visitor failed",
                               r->in.size);
    return HPROF_OK;
}

/* What a stream cannot do, being read once, front to back. */
static int stream_refuses(struct hprof_error *err, const char *what)
{
    return hprof_error_set(err, HPROF_ERR_USAGE,
                           "%s: the reader reads a stream, once, front to back", what);
}

/* The one run of a stream, from the header it holds in its window. */
static int stream_begin_run(struct hprof_reader *r)
{
    if (r->in.stream->ran)
        return stream_refuses(r->err, "a second run");
    if (r->set.salvage)
        return stream_refuses(r->err, "salvage (it reads the end of the input first)");
    if (r->set.range_start != 0 || r->set.range_end != 0)
        return stream_refuses(r->err, "a run over part of the input");
    r->in.stream->ran = 1;
    return HPROF_OK;
}

int reader_clone(const struct hprof_reader *r, struct hprof_reader **out, struct hprof_error *err)
{
    *out = NULL;
    if (r->in.stream != NULL)
        return stream_refuses(err, "a clone");
    /* A mapped file is mapped again: each mapping gives back the pages
     * behind its own reader, which one shared mapping could not.  Where
     * the address space has no room for another (a limit on it), the
     * clone reads with pread() instead, as a reader that was never
     * mapped does. */
    int rc = r->in.mem != NULL && r->in.map == NULL
                 ? hprof_reader_open_memory(out, r->in.mem, (size_t)r->in.size, err)
                 : hprof_reader_open_fd(out, r->in.fd, err);
    struct hprof_error before = *err;
    if (rc == HPROF_OK && r->in.map != NULL && hprof_reader_map(*out) != HPROF_OK)
        *err = before; /* the map's error alone is forgotten */
    if (rc == HPROF_OK && (*out)->in.size != r->in.size + r->found.zero_tail) {
        hprof_reader_free(*out);
        *out = NULL;
        return hprof_error_set(err, HPROF_ERR_IO, "the input changed size while reading");
    }
    if (rc == HPROF_OK) {
        /* what salvage found holds for the clone too: it stops where this
         * reader stops, at a zero tail as well */
        (*out)->set = r->set;
        (*out)->found = r->found;
        (*out)->in.size = r->in.size;
        salvage_state_hold(r->found.sv);
    }
    return rc;
}

int reader_run_segments(struct hprof_reader *r, uint64_t start, uint64_t end,
                        struct hprof_visitor *v)
{
    struct read_ahead ahead;
    if (r->in.stream != NULL)
        return stream_refuses(r->err, "a run over part of the input");
    int rc = salvage_begin(r);
    if (rc != HPROF_OK)
        return rc;
    window_seek(&r->in, start);
    r->next_check = 0;
    r->selecting = 0; /* the caller chose the records */
    r->guarding = 0;
    window_start_read_ahead(&r->in, &ahead, start);
    do
        rc = read_record(r, v);
    while (rc == HPROF_OK && r->in.pos < end);
    window_stop_read_ahead(&r->in);
    return rc == READER_CUT ? HPROF_OK : rc;
}

void reader_skip_to(struct hprof_reader *r, uint64_t offset)
{
    r->skip_to = offset;
}

int reader_salvaging(const struct hprof_reader *r)
{
    return r->set.salvage;
}

int hprof_reader_run(struct hprof_reader *r, struct hprof_visitor *v)
{
    struct read_ahead ahead;
    int rc = r->in.stream != NULL ? stream_begin_run(r) : HPROF_OK;
    if (rc == HPROF_OK)
        rc = salvage_begin(r); /* its census before the read-ahead starts */
    if (rc != HPROF_OK)
        return rc;
    window_start_read_ahead(&r->in, &ahead, 0);
    rc = run_records(r, v);
    window_stop_read_ahead(&r->in); /* before the mapping's pages are given back */
    window_release_all(&r->in); /* the next run starts from the top again */
    return rc;
}
