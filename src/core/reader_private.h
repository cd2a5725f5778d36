/*
 * reader_private.h - the parts of a reader, shared by the files that make
 * it: read_window.c (the bytes: read buffer or mapping, pages given back,
 * read-ahead), records.c (the record parser), salvage.c (a dump cut short)
 * and reader.c (opening, settings, runs).  Each calls only those listed
 * before it.
 *
 * Invariants:
 *  1. `in.pos` is the input offset of `in.cur`; bytes [cur, lim) are valid.
 *  2. Every length read from the input is checked against what encloses it
 *     (the file for a record, the segment for a sub-record) before any byte
 *     of the body is requested, so a bad length becomes a message, not a read
 *     past the end or a huge buffer.
 *  3. All offsets and sizes are 64-bit; a u4 count times an element size
 *     cannot overflow 64 bits.
 */
#ifndef HPROF_READER_PRIVATE_H
#define HPROF_READER_PRIVATE_H

#include <stdatomic.h>

#include "layout.h"

#define CHECK_STEP (1u << 20)   /* how often progress and page release are looked at */

struct ordered_pool;

/* A thread touching the pages ahead of a mapped reader (read_window.c). */
struct read_ahead {
    struct ordered_pool *pool;  /* of one worker, which runs the touching */
    const volatile uint8_t *mem;
    void *map;
    uint64_t size;
    uint64_t released;          /* what the thread has given back of what it mapped */
    _Atomic uint64_t reader_pos;
    _Atomic int stop;
};

/* A stream read once, front to back (hprof_reader_open_stream()): its
 * size is unknown (the window's `size` is STREAM_SIZE_UNKNOWN) until the
 * read function says it ended, then it is the bytes it gave. */
#define STREAM_SIZE_UNKNOWN UINT64_MAX
struct push_ring;
struct read_stream {
    hprof_read_fn read;
    void *ctx;
    void (*close)(void *ctx);   /* called by hprof_reader_free(), or NULL */
    struct push_ring *ring;     /* read in place where not NULL (read_window.c) */
    uint64_t got;               /* bytes the read function gave so far */
    int ended;                  /* it said so: the window's size is known */
    int ran;                    /* the one run has begun */
};

/* The bytes of the input, through a buffer refilled by pread() or from a
 * stream, or through memory (given, or a mapping of the file). */
struct read_window {
    int fd;                     /* -1 when reading memory or a stream */
    struct read_stream *stream; /* or NULL */
    const uint8_t *mem;         /* the whole input, when in memory or mapped */
    void *map;                  /* our mapping of the file, or NULL */
    uint64_t released;          /* mapped pages before this offset are released */
    int skipped_segment;        /* mapped: the last record was a segment skipped */
    int want_read_ahead;        /* start a read-ahead thread for each run */
    struct read_ahead *ahead;   /* the running one, or NULL */
    uint64_t size;
    uint8_t *buf;
    size_t cap;
    const uint8_t *cur, *lim;
    const uint8_t *ring_at;     /* a stream's ring bytes the window is over, or NULL */
    uint64_t pos;
};

/* What the caller set; a clone reads as its original does. */
struct reader_settings {
    int strict;
    int salvage;                /* a record cut by the end of the file ends the run */
    unsigned only_dump;         /* hprof_reader_set_dump(): 0 all, else the n-th alone */
    int one_dump;               /* reader_set_one_dump(): a second dump stops the run */
    uint64_t range_start, range_end; /* reader_set_range(), or 0 */
};

/* Salvage, once the input is known to be cut: the classes whose superclass
 * chain is complete in what is kept, found by a census pass before the
 * first run delivers anything.  Shared read-only by the clones of a reader
 * (the write pass's workers), hence counted. */
struct salvage_state {
    _Atomic unsigned refs;
    struct idmap complete;      /* class ids delivered; others are dropped */
    uint64_t classes_dropped;   /* class dumps whose superclass never arrived */
    uint64_t instances_dropped; /* instances of a class not delivered */
    unsigned drop_types;        /* bit t: drop primitive arrays of type t */
    uint64_t arrays_dropped;    /* primitive arrays of those types */
    /* Array classes rebuilt, first in the first heap record: the class
     * dump of a primitive array type, named by LOAD_CLASS and never
     * dumped, with java.lang.Object as its superclass, as runtimes dump
     * it; analyzers need it to read the arrays of that type. */
    struct { uint64_t id, super_id; } rebuilt[16];
    unsigned n_rebuilt;
    uint64_t first_heap;        /* offset of the first heap record: they go first in it */
};

/* What salvage learned of where the input is cut, before the first run
 * (salvage_prepare()) or from the reader cloned, so that every pass and
 * every write-pass worker stops at the same sub-record. */
struct salvage_found {
    int prepared;               /* salvage_prepare() ran (or was inherited) */
    int cut_known;
    uint64_t cut_record;        /* offset of the heap record the end of file cuts */
    uint64_t cut_kept;          /* bytes of its body that hold complete sub-records */
    uint64_t cut_subs;          /* how many complete sub-records that is */
    uint8_t cut_sub_tag;        /* tag of the sub-record cut short (0: none) */
    uint64_t zero_tail;         /* zero bytes past `in.size` taken as the end of
                                   the data (find_zero_tail()) */
    int cut_before_heap;        /* the input ends between records, before the
                                   heap dump it was to hold (find_cut()) */
    struct salvage_state *sv;   /* the input is cut: what to drop, or NULL */
};

struct hprof_reader {
    struct read_window in;
    struct reader_settings set;
    struct salvage_found found;
    struct hprof_header header;
    struct hprof_error *err;
    uint64_t skip_to;           /* reader_skip_to(): where the skipped segment's walk goes on */

    /* What is being parsed, for messages. */
    uint64_t rec_offset;
    uint8_t rec_tag;
    uint64_t sub_offset;
    uint8_t sub_tag;
    int in_heap;

    /* Class-dump tables, reused (at most 65535 entries each). */
    struct hprof_constant *constants;
    struct hprof_static_field *statics;
    struct hprof_field *fields;
    size_t cap_constants, cap_statics, cap_fields;

    int scanning;               /* scan_cut_heap() is at work */
    int scan_hit_end;           /* ... and a sub-record ran into the end of the file */
    const struct idmap *deliver;/* during runs: class ids delivered, or NULL */
    struct hprof_salvage_report report; /* of the last run */
    uint64_t records;           /* in this run */
    uint64_t heap_bytes;        /* bytes of heap records in this run */
    uint64_t open_run;          /* offset of an unclosed HEAP_DUMP_SEGMENT run, or 0 */
    uint32_t cut_time, cut_length; /* the header of the record the end of file cuts */

    /* Several heap dumps in one file (the hprof agent appends one per
     * request): ids are unique within a dump only. */
    unsigned selecting;         /* only_dump during a run from the header, else 0 */
    int guarding;               /* one_dump, in a run of every dump */
    int stopped_at_dump;        /* the last run stopped at a second heap dump */
    unsigned dumps;             /* heap dumps begun so far in this run */
    unsigned dumps_seen;        /* ... in the last run */
    uint64_t dump_end;          /* where the selected dump's last record ends */
    /* hprof_reader_ends_before_heap(): the records of this run so far are
     * all of the kinds runtimes write before a heap dump */
    int before_heap_only;
    int ended_before_heap;      /* ... and the last whole run ended so */

    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
    uint64_t next_progress;
    uint64_t next_check;        /* report_progress() looks no sooner */
};

/* ---- read_window.c -------------------------------------------------------- */

void window_seek(struct read_window *w, uint64_t offset);
/* The buffer and the mapping. */
void window_free(struct read_window *w);
/* `len` bytes at `offset` of the file (not the mapping). */
int window_pread(const struct read_window *w, uint64_t offset, void *dst, size_t len,
                 struct hprof_error *err);
/* `len` bytes at `offset`, through the mapping or memory if there is one. */
int window_read_at(const struct read_window *w, uint64_t offset, void *dst, size_t len,
                   struct hprof_error *err);
/* Make `n` bytes available at `cur`, which the input holds.  From a
 * stream, fewer when it ends first (its size is then known). */
int window_fill(struct read_window *w, size_t n, struct hprof_error *err);
/* Stream: move forward `n` bytes, more than the window holds, reading and
 * dropping them; short of that only where the stream ends. */
int window_stream_skip(struct read_window *w, uint64_t n, struct hprof_error *err);
/* The size, or 0 while a stream has not ended. */
static inline uint64_t window_known_size(const struct read_window *w)
{
    return w->size == STREAM_SIZE_UNKNOWN ? 0 : w->size;
}
/* Mapped input: give back the pages behind the reading position. */
void window_release_behind(struct read_window *w);
/* Mapped input: give back every page (a run starts from the top again). */
void window_release_all(struct read_window *w);
/* Seek back to `offset` to read from there again, pages given back again. */
void window_reread_from(struct read_window *w, uint64_t offset);
/* Tell a read-ahead thread where the reader is. */
void window_publish_pos(struct read_window *w);
/* A read-ahead thread for a run from `from`, if asked for and mapped;
 * `a` lives until window_stop_read_ahead(). */
void window_start_read_ahead(struct read_window *w, struct read_ahead *a, uint64_t from);
void window_stop_read_ahead(struct read_window *w);

static inline size_t window_avail(const struct read_window *w)
{
    return (size_t)(w->lim - w->cur);
}

static inline void window_consume(struct read_window *w, size_t n)
{
    w->cur += n;
    w->pos += n;
}

/* Move forward `n` bytes (already checked to lie inside the input; not a
 * stream's: records.c's skip() reads those). */
static inline void window_skip(struct read_window *w, uint64_t n)
{
    if (n <= window_avail(w))
        window_consume(w, (size_t)n);
    else
        window_seek(w, w->pos + n);
}

/* ---- records.c ------------------------------------------------------------ */

int reader_fail(struct hprof_reader *r, int code, uint64_t offset, const char *what);
__attribute__((cold, format(printf, 4, 5)))
int reader_failf(struct hprof_reader *r, int code, uint64_t offset, const char *fmt, ...);
#define FAILF(r, code, offset, ...) return reader_failf((r), (code), (offset), __VA_ARGS__)
/* A visitor returned an error: keep its message, or say which record. */
int reader_visitor_failed(struct hprof_reader *r, int rc);
/* Progress, pages given back, the read-ahead told. */
void reader_checkpoint(struct hprof_reader *r);

/* After every record: only a comparison, most of the time. */
static inline void report_progress(struct hprof_reader *r)
{
    if (r->in.pos >= r->next_check)
        reader_checkpoint(r);
}

/* The input is cut and nothing after it can be read, or a stream ended
 * between records: a run ends as if the file ended there. */
#define READER_CUT 2
/* With salvage, reader_read_record() found the record header at the
 * cursor cut, or the record whose header it read (cut_time, cut_length):
 * salvage_cut_record_header() or salvage_cut_record() takes it from there. */
#define READER_CUT_HEADER 3
#define READER_CUT_RECORD 4

/* What scan_cut_heap() learns from reader_sub_records(). */
struct cut_scan {
    uint64_t kept;              /* where the last complete sub-record ends */
    uint64_t subs;              /* how many complete sub-records */
    uint64_t next_release;      /* a mapping's pages are given back from here */
};

/* The record at the cursor, through `v`.  @return HPROF_OK,
 * READER_CUT_HEADER, READER_CUT_RECORD or an error. */
int reader_read_record(struct hprof_reader *r, struct hprof_visitor *v);
/* A heap record whose 9-byte header was just read. */
int reader_read_heap(struct hprof_reader *r, struct hprof_visitor *v,
                     const struct hprof_segment *seg);
/* The sub-records from the cursor to `limit`; with `scan`, where the
 * complete ones end. */
int reader_sub_records(struct hprof_reader *r, struct hprof_visitor *v, uint64_t limit,
                       struct cut_scan *scan);

/* ---- salvage.c ------------------------------------------------------------ */

struct census;
int salvage_find_cut(struct hprof_reader *r, int *cut, uint64_t *first_heap);
/* The visitor of a census run: class chains, instances and array types. */
struct census *salvage_census_new(struct hprof_error *err);
struct hprof_visitor *salvage_census_visitor(struct census *cs);
void salvage_census_free(struct census *cs);
int salvage_state_from_census(struct hprof_reader *r, const struct census *cs,
                              uint64_t first_heap);
/* The end of the file cuts the header of the record at the cursor. */
int salvage_cut_record_header(struct hprof_reader *r);
/* The end of the file cuts the record whose header was just read.
 * @return READER_CUT or an error. */
int salvage_cut_record(struct hprof_reader *r, uint32_t time, uint32_t length,
                       struct hprof_visitor *v);
void salvage_state_hold(struct salvage_state *sv);
void salvage_state_release(struct salvage_state *sv);

#endif
