/*
 * reader.c - streams a heap dump through a visitor chain.
 *
 * The input is read through one window (`cur`..`lim`) over a buffer that is
 * refilled with large pread()s; records are parsed in place and handed out
 * as pointers into the window.  Arrays, the only sub-records that can be
 * huge, go out in chunks of whole elements, so no length field ever decides
 * the size of an allocation beyond HPROF_MAX_RECORD.
 *
 * A file can instead be read through a memory mapping (hprof_reader_map()):
 * no copy at all, and the contents of arrays a pass skips are never
 * touched.  Pages behind the reading position are then released every
 * RELEASE_STEP bytes, between records and between chunks of an array, so
 * that resident memory stays bounded by that step, not by the file.  A run
 * can also have another thread touch the pages a little ahead of the
 * reading position (hprof_reader_set_threads()): the page faults,
 * and reading any page not yet cached, then happen on another core.
 *
 * A salvaging reader (hprof_reader_set_salvage()) reads a dump cut short
 * as far as it is complete: before its first run it reads the record
 * headers, and if the input is cut, the sub-records of the cut heap record
 * up to the last complete one (scan_cut_heap()) and the class dumps of
 * what is kept (salvage_prepare()'s census); every run then stops at the
 * same sub-record and leaves out what would not make a valid dump.
 *
 * Invariants:
 *  1. `pos` is the input offset of `cur`; bytes [cur, lim) are valid.
 *  2. Every length read from the input is checked against what encloses it
 *     (the file for a record, the segment for a sub-record) before any byte
 *     of the body is requested, so a bad length becomes a message, not a read
 *     past the end or a huge buffer.
 *  3. All offsets and sizes are 64-bit; a u4 count times an element size
 *     cannot overflow 64 bits.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "layout.h"

#define CHUNK_MAX HPROF_READ_BUFFER     /* a multiple of every element size */
#define MEM_CHUNK_MAX (1u << 20)        /* the same, for input in memory */
#define RELEASE_STEP (8u << 20)
#define PREFETCH_SEGMENT (8u << 10)     /* read_heap() asks for all of one this small */
#define PROGRESS_STEP (16u << 20)
#define CHECK_STEP (1u << 20)           /* how often the two above are looked at */
#define MAX_HEADER 64
/* The read-ahead thread touches a page every PAGE_STEP bytes up to
 * READ_AHEAD bytes past the last reading position published (every
 * CHECK_STEP), and looks again every IDLE_NS when it is there. */
#define READ_AHEAD (4u << 20)
#define PAGE_STEP 4096u
#define IDLE_NS 20000

struct read_ahead {
    pthread_t thread;
    const volatile uint8_t *mem;
    void *map;
    uint64_t size;
    uint64_t released;          /* what the thread has given back of what it mapped */
    _Atomic uint64_t reader_pos;
    _Atomic int stop;
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

struct hprof_reader {
    int fd;                     /* -1 when reading memory */
    const uint8_t *mem;         /* the whole input, when in memory or mapped */
    void *map;                  /* our mapping of the file, or NULL */
    uint64_t released;          /* mapped pages before this offset are released */
    int skipped_segment;        /* mapped: the last record was a segment skipped */
    uint64_t skip_to;           /* reader_skip_to(): where the skipped segment's walk goes on */
    int want_read_ahead;        /* start a read-ahead thread for each run */
    struct read_ahead *ahead;   /* the running one, or NULL */
    uint64_t size;
    struct hprof_header header;
    struct hprof_error *err;

    uint8_t *buf;
    size_t cap;
    const uint8_t *cur, *lim;
    uint64_t pos;

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

    int strict;
    int salvage;                /* a record cut by the end of the file ends the run */
    /* Salvage: where the input is cut, found by salvage_prepare() before
     * the first run (or copied by reader_clone()), so that every pass and
     * every write-pass worker stops at the same sub-record. */
    int cut_known;
    uint64_t cut_record;        /* offset of the heap record the end of file cuts */
    uint64_t cut_kept;          /* bytes of its body that hold complete sub-records */
    uint64_t cut_subs;          /* how many complete sub-records that is */
    uint8_t cut_sub_tag;        /* tag of the sub-record cut short (0: none) */
    int prepared;               /* salvage_prepare() ran (or was inherited) */
    uint64_t zero_tail;         /* zero bytes past `size` taken as the end of
                                   the data (find_zero_tail()) */
    struct salvage_state *sv;   /* the input is cut: what to drop, or NULL */
    int scanning;               /* scan_cut_heap() is at work */
    int scan_hit_end;           /* ... and a sub-record ran into the end of the file */
    const struct idmap *deliver;/* during runs: class ids delivered, or NULL */
    struct hprof_salvage_report report; /* of the last run */
    uint64_t records;           /* in this run */
    uint64_t heap_bytes;        /* bytes of heap records in this run */
    uint64_t open_run;          /* offset of an unclosed HEAP_DUMP_SEGMENT run, or 0 */

    /* Several heap dumps in one file (the hprof agent appends one per
     * request): ids are unique within a dump only. */
    unsigned only_dump;         /* hprof_reader_set_dump(): 0 all, else the n-th alone */
    unsigned selecting;         /* only_dump during a run from the header, else 0 */
    int guarding;               /* one_dump, in a run of every dump */
    int stopped_at_dump;        /* the last run stopped at a second heap dump */
    int one_dump;               /* reader_set_one_dump(): a second dump stops the run */
    unsigned dumps;             /* heap dumps begun so far in this run */
    unsigned dumps_seen;        /* ... in the last run */
    uint64_t dump_end;          /* where the selected dump's last record ends */
    uint64_t range_start, range_end; /* reader_set_range(), or 0 */

    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
    uint64_t next_progress;
    uint64_t next_check;        /* report_progress() looks no sooner */
};

static void salvage_state_release(struct salvage_state *sv);

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

static int fail(struct hprof_reader *r, int code, uint64_t offset, const char *what)
{
    char w[80];
    return hprof_error_set(r->err, code, "offset 0x%" PRIx64 ": %s: %s", offset,
                           where(r, w, sizeof w), what);
}

/* fail() with a formatted message.  Out of line and cold: formatted in
 * place, each message gave the reader that can fail a 256-byte buffer on
 * its stack, and stack frames that large keep GCC from inlining the
 * per-record readers into their loop (--param large-stack-frame-growth). */
__attribute__((cold, format(printf, 4, 5)))
static int failf(struct hprof_reader *r, int code, uint64_t offset, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fail(r, code, offset, msg);
}

#define FAILF(r, code, offset, ...) return failf((r), (code), (offset), __VA_ARGS__)

/* A visitor returned an error: keep its message, or say which record. */
static int visitor_failed(struct hprof_reader *r, int rc)
{
    return fail(r, rc, r->in_heap ? r->sub_offset : r->rec_offset, "a visitor failed");
}

/* ---- The window ---------------------------------------------------------- */

static size_t avail(const struct hprof_reader *r)
{
    return (size_t)(r->lim - r->cur);
}

static void seek_to(struct hprof_reader *r, uint64_t offset)
{
    r->skipped_segment = 0;
    if (r->mem != NULL) {
        r->cur = r->mem + offset;
        r->lim = r->mem + r->size;
    } else {
        r->cur = r->lim = r->buf;
    }
    r->pos = offset;
}

static int pread_full(struct hprof_reader *r, uint64_t offset, uint8_t *dst, size_t len)
{
    while (len > 0) {
        ssize_t n = pread(r->fd, dst, len, (off_t)offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return hprof_error_set(r->err, HPROF_ERR_IO, "offset 0x%" PRIx64 ": read: %s",
                                   offset, strerror(errno));
        if (n == 0)
            return hprof_error_set(r->err, HPROF_ERR_IO,
                                   "offset 0x%" PRIx64 ": read: input shrank while reading",
                                   offset);
        dst += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    return HPROF_OK;
}

/* Make `n` bytes available at `cur`; n <= HPROF_MAX_RECORD.  Callers have
 * already checked that the enclosing record holds them, so running out of
 * file here means the file ends mid-record. */
static int refill(struct hprof_reader *r, size_t n)
{
    if (n > r->size - r->pos)
        FAILF(r, HPROF_ERR_FORMAT, r->pos, "truncated: %zu bytes needed, %" PRIu64 " left",
              n, r->size - r->pos);
    if (r->mem != NULL)
        return HPROF_OK; /* unreachable: memory windows span the whole input */
    size_t have = avail(r);
    if (n > r->cap) {
        size_t cap = r->cap;
        while (cap < n)
            cap *= 2;
        uint8_t *grown = malloc(cap);
        if (grown == NULL)
            return hprof_error_set(r->err, HPROF_ERR_NOMEM, "out of memory (%zu bytes)", cap);
        memcpy(grown, r->cur, have);
        free(r->buf);
        r->buf = grown;
        r->cap = cap;
    } else {
        memmove(r->buf, r->cur, have);
    }
    r->cur = r->buf;
    r->lim = r->buf + have;
    uint64_t left = r->size - r->pos - have;
    size_t want = r->cap - have;
    if (want > left)
        want = (size_t)left;
    int rc = pread_full(r, r->pos + have, r->buf + have, want);
    if (rc != HPROF_OK)
        return rc;
    r->lim += want;
    return HPROF_OK;
}

static inline int need(struct hprof_reader *r, size_t n)
{
    return avail(r) >= n ? HPROF_OK : refill(r, n);
}

static void consume(struct hprof_reader *r, size_t n)
{
    r->cur += n;
    r->pos += n;
}

/* Move forward `n` bytes (already checked to lie inside the input). */
static void skip(struct hprof_reader *r, uint64_t n)
{
    if (n <= avail(r))
        consume(r, (size_t)n);
    else
        seek_to(r, r->pos + n);
}

static int overrun(struct hprof_reader *r, size_t n, uint64_t limit)
{
    if (r->scanning)
        r->scan_hit_end = 1;
    FAILF(r, HPROF_ERR_FORMAT, r->sub_offset,
          "sub-record runs past the end of its segment (needs %zu bytes at 0x%" PRIx64
          ", %" PRIu64 " left)", n, r->pos, limit - r->pos);
}

/* Take `n` bytes of the current sub-record, which must end by `limit`.
 * Inline: it runs a few times for every record. */
static inline int take(struct hprof_reader *r, size_t n, uint64_t limit, const uint8_t **p)
{
    int rc = n > limit - r->pos ? overrun(r, n, limit) : need(r, n);
    *p = r->cur; /* unused on error; set so that no caller reads it unset */
    if (rc == HPROF_OK)
        consume(r, n);
    return rc;
}

/* Give back the pages of `map` from *released to `pos` once RELEASE_STEP
 * of them have gathered (the file stays in the page cache; only our
 * mapping of it goes). */
static void give_back(void *map, uint64_t *released, uint64_t pos)
{
    uint64_t upto = pos & ~(uint64_t)(sysconf(_SC_PAGESIZE) - 1);
    if (upto <= *released || upto - *released < RELEASE_STEP)
        return;
    madvise((uint8_t *)map + *released, (size_t)(upto - *released), MADV_DONTNEED);
    *released = upto;
}

/* Mapped input: the pages behind the reading position. */
static void release_behind(struct hprof_reader *r)
{
    if (r->map != NULL)
        give_back(r->map, &r->released, r->pos);
}

static void checkpoint(struct hprof_reader *r)
{
    release_behind(r);
    if (r->ahead != NULL)
        atomic_store_explicit(&r->ahead->reader_pos, r->pos, memory_order_relaxed);
    if (r->progress != NULL && r->pos >= r->next_progress) {
        r->progress(r->progress_ctx, r->pos, r->size);
        r->next_progress = r->pos + PROGRESS_STEP;
    }
    r->next_check = r->pos + CHECK_STEP;
}

/* After every record: only a comparison, most of the time. */
static inline void report_progress(struct hprof_reader *r)
{
    if (r->pos >= r->next_check)
        checkpoint(r);
}

/* ---- Opening --------------------------------------------------------------- */

static int parse_header(struct hprof_reader *r)
{
    uint8_t head[MAX_HEADER];
    size_t len = r->size < MAX_HEADER ? (size_t)r->size : MAX_HEADER;
    if (r->size == 0)
        return hprof_error_set(r->err, HPROF_ERR_FORMAT, "offset 0x0: header: empty file");
    if (r->mem != NULL)
        memcpy(head, r->mem, len);
    else if (pread_full(r, 0, head, len) != HPROF_OK)
        return r->err->code;

    const char magic[] = "JAVA PROFILE 1.0.";
    const uint8_t *nul = memchr(head, 0, len);
    if (len < sizeof magic - 1 || memcmp(head, magic, sizeof magic - 1) != 0)
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               "offset 0x0: header: not a heap dump (no \"JAVA PROFILE 1.0.x\" magic)");
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
                               vlen + 1, r->size);
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
    r->fd = fd;
    r->size = (uint64_t)st.st_size;
    r->err = err;
    r->buf = buf;
    r->cap = HPROF_READ_BUFFER;
    return open_common(out, r);
}

int hprof_reader_open_memory(struct hprof_reader **out, const void *data, size_t len,
                             struct hprof_error *err)
{
    *out = NULL;
    struct hprof_reader *r = calloc(1, sizeof *r);
    if (r == NULL)
        return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
    r->fd = -1;
    r->mem = data;
    r->size = len;
    r->err = err;
    return open_common(out, r);
}

int reader_mapped_file(const struct hprof_reader *r, const uint8_t **map, uint64_t *size)
{
    *map = r->map;
    *size = r->map != NULL ? r->size : 0;
    return r->map != NULL ? r->fd : -1;
}

int hprof_reader_map(struct hprof_reader *r)
{
    if (r->map != NULL)
        return HPROF_OK;
    if (r->fd < 0)
        return hprof_error_set(r->err, HPROF_ERR_USAGE, "map: the reader does not read a file");
    if (r->size > SIZE_MAX)
        return hprof_error_set(r->err, HPROF_ERR_IO, "map: the file is too large to map");
    void *map = mmap(NULL, (size_t)r->size, PROT_READ, MAP_PRIVATE, r->fd, 0);
    if (map == MAP_FAILED)
        return hprof_error_set(r->err, HPROF_ERR_IO, "map: %s", strerror(errno));
    r->map = map;
    r->mem = map;
    r->released = 0;
    return HPROF_OK;
}

const struct hprof_header *hprof_reader_header(const struct hprof_reader *r)
{
    return &r->header;
}

uint64_t hprof_reader_size(const struct hprof_reader *r)
{
    return r->size;
}

void hprof_reader_set_strict(struct hprof_reader *r, int strict)
{
    r->strict = strict;
}

void hprof_reader_set_dump(struct hprof_reader *r, unsigned dump)
{
    r->only_dump = dump;
}

unsigned hprof_reader_dumps(const struct hprof_reader *r)
{
    return r->dumps_seen;
}

void reader_set_one_dump(struct hprof_reader *r, int on)
{
    r->one_dump = on;
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
    r->range_start = start;
    r->range_end = end;
}

void hprof_reader_set_progress(struct hprof_reader *r,
                               void (*fn)(void *ctx, uint64_t done, uint64_t total), void *ctx)
{
    r->progress = fn;
    r->progress_ctx = ctx;
}

int hprof_reader_pread(struct hprof_reader *r, uint64_t offset, void *buf, size_t len)
{
    if (offset > r->size || len > r->size - offset)
        return hprof_error_set(r->err, HPROF_ERR_USAGE,
                               "pread of %zu bytes at 0x%" PRIx64 " is outside the input", len,
                               offset);
    if (r->mem != NULL) {
        memcpy(buf, r->mem + offset, len);
        return HPROF_OK;
    }
    return pread_full(r, offset, buf, len);
}

int reader_pread_unmapped(const struct hprof_reader *r, uint64_t offset, void *buf, size_t len,
                          struct hprof_error *err)
{
    if (offset > r->size || len > r->size - offset)
        return hprof_error_set(err, HPROF_ERR_USAGE,
                               "pread of %zu bytes at 0x%" PRIx64 " is outside the input", len,
                               offset);
    if (r->fd < 0) {
        memcpy(buf, r->mem + offset, len);
        return HPROF_OK;
    }
    for (uint8_t *dst = buf; len > 0;) {
        ssize_t n = pread(r->fd, dst, len, (off_t)offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return hprof_error_set(err, HPROF_ERR_IO, "offset 0x%" PRIx64 ": read: %s", offset,
                                   n < 0 ? strerror(errno) : "input shrank while reading");
        dst += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    return HPROF_OK;
}

void hprof_reader_free(struct hprof_reader *r)
{
    if (r == NULL)
        return;
    if (r->map != NULL)
        munmap(r->map, (size_t)r->size);
    free(r->buf);
    free(r->constants);
    free(r->statics);
    free(r->fields);
    salvage_state_release(r->sv);
    free(r);
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
              type, r->pos - 1);
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
    size_t max = r->mem != NULL ? MEM_CHUNK_MAX : CHUNK_MAX;
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
    if (bytes > limit - r->pos && r->scanning)
        r->scan_hit_end = 1;
    if (bytes > limit - r->pos)
        FAILF(r, HPROF_ERR_FORMAT, r->sub_offset,
              "%" PRIu32 " elements (%" PRIu64 " bytes) run past the end of the segment "
              "(%" PRIu64 " bytes left)", count, bytes, limit - r->pos);
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
        a.elements = r->cur;
        rc = hprof_visit_object_array(v, &a);
        consume(r, chunk);
        report_progress(r); /* pages given back, read-ahead moved on */
        left -= chunk;
        a.first += a.n;
        if (rc == HPROF_SKIP) {
            skip(r, left);
            return HPROF_OK;
        }
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
    a.data_offset = r->pos;
    uint64_t left = r->sub_tag == HPROF_PRIMITIVE_ARRAY_NODATA ? 0 : (uint64_t)a.count * esize;
    rc = check_array_fits(r, left, a.count, limit);
    if (rc == HPROF_OK && left < avail(r)) /* the next header, while visitors see this one */
        __builtin_prefetch(r->cur + left);
    if (rc == HPROF_OK && r->deliver != NULL && (r->sv->drop_types >> a.type & 1)) {
        skip(r, left); /* salvage: the class of its type never arrived */
        return HPROF_OK;
    }
    do {
        size_t chunk;
        if (rc == HPROF_OK)
            rc = next_chunk(r, left, esize, &chunk);
        if (rc != HPROF_OK)
            return rc;
        a.length = chunk;
        a.data = r->cur;
        rc = hprof_visit_primitive_array(v, &a);
        consume(r, chunk);
        report_progress(r); /* pages given back, read-ahead moved on */
        left -= chunk;
        a.first += chunk;
        if (rc == HPROF_SKIP) {
            skip(r, left);
            return HPROF_OK;
        }
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

/* What scan_cut_heap() learns from read_sub_records(). */
struct cut_scan {
    uint64_t kept;              /* where the last complete sub-record ends */
    uint64_t subs;              /* how many complete sub-records */
    uint64_t next_release;      /* a mapping's pages are given back from here */
};

/* The sub-records from the cursor to `limit`, through `v`; with `scan`,
 * where the complete ones end.  The one loop over sub-records, for
 * read_heap() and scan_cut_heap(): read_sub_record() and the readers of
 * instances and arrays then have one caller and are inlined into it.  (With
 * two callers they were not, and the calls cost about 30 instructions per
 * object, 3% of a shrink.)
 * @return HPROF_OK or an error. */
static int read_sub_records(struct hprof_reader *r, struct hprof_visitor *v, uint64_t limit,
                            struct cut_scan *scan)
{
    while (r->pos < limit) {
        const uint8_t *p;
        r->sub_offset = r->pos;
        r->sub_tag = 0;
        int rc = take(r, 1, limit, &p);
        if (rc != HPROF_OK)
            return rc;
        r->sub_tag = *p;
        rc = read_sub_record(r, v, limit);
        if (rc < 0)
            return r->err->code != HPROF_OK ? r->err->code : visitor_failed(r, rc);
        if (scan != NULL) {
            scan->kept = r->pos;
            scan->subs++;
            if (r->pos >= scan->next_release) { /* a mapping's pages stay bounded */
                release_behind(r);
                scan->next_release = r->pos + CHECK_STEP;
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
    for (unsigned i = 0; i < r->sv->n_rebuilt; i++) {
        struct hprof_class_dump cd = {
            .offset = r->pos, .id = r->sv->rebuilt[i].id, .super_id = r->sv->rebuilt[i].super_id,
            .constants = r->constants, .statics = r->statics, .fields = r->fields,
        };
        r->sub_offset = r->pos;
        r->sub_tag = HPROF_CLASS_DUMP;
        int rc = hprof_visit_class_dump(v, &cd);
        if (rc < 0)
            return visitor_failed(r, rc);
    }
    return HPROF_OK;
}

static int read_heap(struct hprof_reader *r, struct hprof_visitor *v,
                     const struct hprof_segment *seg)
{
    int rc = hprof_visit_heap_begin(v, seg);
    uint64_t skip_to = r->skip_to; /* reader_skip_to(), asked only with this skip */
    r->skip_to = 0;
    r->heap_bytes += seg->length;
    if (rc == HPROF_SKIP) {
        skip(r, seg->length);
        if (skip_to > r->pos && skip_to <= r->size)
            skip(r, skip_to - r->pos);
        r->skipped_segment = r->map != NULL;
        return HPROF_OK;
    }
    if (rc < 0)
        return visitor_failed(r, rc);
    uint64_t limit = r->pos + seg->length;
    /* Every sub-record of a small segment (ART ends one past 4 KiB) is
     * parsed: asking for all its lines at once, and the next record's
     * header, overlaps their cache misses instead of taking them one
     * sub-record after another (the Android-style 2 GB bench dump: pass 1
     * 0.29 s -> 0.19 s, the write pass's workers 0.25 s -> 0.21 s).
     * HotSpot's segments are larger, and prefetching ahead of the cursor
     * there fetched array contents nothing reads: 10-20% slower. */
    if (seg->length <= PREFETCH_SEGMENT && seg->length < avail(r)) {
        for (size_t at = 0; at < seg->length; at += 64)
            __builtin_prefetch(r->cur + at);
        __builtin_prefetch(r->cur + seg->length);
    }
    r->in_heap = 1;
    if (r->deliver != NULL && seg->offset == r->sv->first_heap &&
        (rc = deliver_rebuilt(r, v)) != HPROF_OK)
        return rc;
    if ((rc = read_sub_records(r, v, limit, NULL)) != HPROF_OK)
        return rc;
    r->in_heap = 0;
    rc = hprof_visit_heap_end(v, seg);
    return rc < 0 ? visitor_failed(r, rc) : HPROF_OK;
}

/* ---- Salvage: a dump cut short ------------------------------------------- */

/* Bytes at `offset` of the input, mapped or not. */
static int read_at(struct hprof_reader *r, uint64_t offset, uint8_t *dst, size_t len)
{
    if (r->fd >= 0)
        return pread_full(r, offset, dst, len);
    memcpy(dst, r->mem + offset, len);
    return HPROF_OK;
}

/* Where the run of zero bytes that ends the input starts, no earlier than
 * the header's end. */
static int trailing_zeros_start(struct hprof_reader *r, uint64_t *start)
{
    uint8_t buf[64 << 10];
    uint64_t end = r->size;
    while (end > r->header.length) {
        size_t n = end - r->header.length < sizeof buf ? (size_t)(end - r->header.length)
                                                     : sizeof buf;
        int rc = read_at(r, end - n, buf, n);
        if (rc != HPROF_OK)
            return rc;
        size_t i = n;
        while (i > 0 && buf[i - 1] == 0)
            i--;
        if (i > 0) {
            *start = end - n + i;
            return HPROF_OK;
        }
        end -= n;
    }
    *start = end;
    return HPROF_OK;
}

/* A zero-filled tail (a download preallocated, a writer that crashed after
 * fallocate()) holds no record: tag 0 is not one.  The data ends where a
 * record would start in it, or, when a heap record runs into it (the cut
 * came inside that record, whose sub-records would read as zeros), where
 * the zeros start: the salvage then keeps the sub-records before them.
 * Any other record that runs into the zeros is cut there too (its length
 * may be zeros), except HEAP_DUMP_END, whose time and length are zeros,
 * and a record that ends exactly with the file.  A cut can leave data
 * that ends in zeros too (a zero field, an id 0): zeros from the middle
 * of a record are taken for a fill only from ZERO_FILL_MIN bytes on, as
 * a preallocation makes them; at a record boundary, where no record
 * starts with a zero tag, a record header's worth decides.  Sets r->size
 * to where the data ends and r->zero_tail. */
#define ZERO_TAIL_MIN 9
#define ZERO_FILL_MIN 256

static int find_zero_tail(struct hprof_reader *r)
{
    uint64_t zeros, pos = r->header.length, end;
    uint8_t h[9];
    if (r->size - r->header.length < ZERO_TAIL_MIN)
        return HPROF_OK;
    int rc = read_at(r, r->size - 1, h, 1);
    if (rc != HPROF_OK || h[0] != 0)
        return rc;
    if ((rc = trailing_zeros_start(r, &zeros)) != HPROF_OK || r->size - zeros < ZERO_TAIL_MIN)
        return rc;
    for (;;) {
        if (pos >= zeros) {
            end = pos;
            break;
        }
        if (r->size - pos < sizeof h) {
            if (r->size - zeros < ZERO_FILL_MIN)
                return HPROF_OK;
            end = zeros;
            break;
        }
        if ((rc = read_at(r, pos, h, sizeof h)) != HPROF_OK)
            return rc;
        if (!hprof_tag_known(h[0]))
            return HPROF_OK; /* a problem before the zeros: the run reports it */
        uint64_t next = pos + sizeof h + get_u4(h + 5);
        if (next > zeros && next != r->size && h[0] != HPROF_TAG_HEAP_DUMP_END) {
            if (r->size - zeros < ZERO_FILL_MIN)
                return HPROF_OK; /* a cut that ends in zeros: the usual salvage */
            end = zeros;
            break;
        }
        pos = next;
    }
    if (end < r->size) {
        r->zero_tail = r->size - end;
        r->size = end;
    }
    return HPROF_OK;
}

/* read_record() says the input is cut and nothing after it can be read;
 * run_records() then ends the run as if the file ended there. */
#define READER_CUT 2
/* What a message about a cut adds, for the tools' users. */
#define SALVAGE_HINT "; --salvage keeps what is complete"

/* The scan only needs the size of each sub-record: arrays are skipped. */
static int scan_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    (void)v;
    (void)a;
    return HPROF_SKIP;
}

static int scan_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    (void)v;
    (void)a;
    return HPROF_SKIP;
}

static const struct hprof_visitor_ops scan_ops = {
    .object_array = scan_object_array,
    .primitive_array = scan_primitive_array,
};

/* The heap record at r->rec_offset, whose body starts at the cursor, runs
 * past the end of the file.  Reads its sub-records without visitors up to
 * the first one the end of the file cuts, and remembers how many bytes of
 * the body the complete ones take (r->cut_*): every pass, and every reader
 * cloned after this one, then reads the record as that long, so all stop
 * at the same sub-record.  A problem other than the end of the file is
 * reported as a normal read would, with its message.  The cursor is put
 * back at the body.  @return HPROF_OK or that error. */
static int scan_cut_heap(struct hprof_reader *r)
{
    struct hprof_visitor scan = { &scan_ops, NULL };
    struct hprof_error scratch = { 0 }, *err = r->err;
    uint64_t body = r->pos, next_check = r->next_check;
    struct cut_scan at = { .kept = body, .next_release = body + CHECK_STEP };
    r->err = &scratch;
    r->scanning = 1;
    r->scan_hit_end = 0;
    r->next_check = UINT64_MAX; /* no progress while going ahead of the run */
    r->in_heap = 1;
    int rc = read_sub_records(r, &scan, r->size, &at);
    uint64_t kept = at.kept;
    r->scanning = 0;
    r->err = err;
    r->next_check = next_check;
    r->in_heap = 0;
    if (rc < 0 && !r->scan_hit_end)
        return hprof_error_set(err, scratch.code, "%s", scratch.message);
    r->cut_known = 1;
    r->cut_record = r->rec_offset;
    r->cut_kept = kept - body;
    r->cut_subs = at.subs;
    r->cut_sub_tag = kept < r->size ? r->sub_tag : 0;
    seek_to(r, body);
    if (r->map != NULL && r->released > body) /* read again: give it back again */
        r->released = body & ~(uint64_t)(sysconf(_SC_PAGESIZE) - 1);
    return HPROF_OK;
}

/* Salvage: the end of the file cuts the header of the record at the
 * cursor.  Nothing of it is kept. */
static int cut_record_header(struct hprof_reader *r)
{
    struct hprof_salvage_report *s = &r->report;
    s->cut = 1;
    s->input_end = r->size;
    s->kept_end = r->pos;
    s->bytes_lost = r->size - r->pos;
    s->record_offset = r->pos;
    s->record_tag = 0;
    if (r->pos < r->size && hprof_reader_pread(r, r->pos, &s->record_tag, 1) != HPROF_OK)
        return r->err->code;
    s->records_lost = 1;
    return READER_CUT;
}

/* Salvage: the record whose header was just read at r->rec_offset
 * announces `length` bytes and the file ends first.  Any other record is
 * lost whole; a heap record is read up to its last complete sub-record,
 * and its visitors see a segment of that length, begun and ended as
 * usual.  @return READER_CUT, or an error. */
static int cut_record(struct hprof_reader *r, uint32_t time, uint32_t length,
                      struct hprof_visitor *v)
{
    struct hprof_salvage_report *s = &r->report;
    uint64_t body = r->pos;
    s->cut = 1;
    s->input_end = r->size;
    s->record_offset = r->rec_offset;
    s->record_tag = r->rec_tag;
    s->record_missing = length - (r->size - body);
    if (r->rec_tag != HPROF_TAG_HEAP_DUMP && r->rec_tag != HPROF_TAG_HEAP_DUMP_SEGMENT) {
        r->records--;
        s->kept_end = r->rec_offset;
        s->bytes_lost = r->size - r->rec_offset;
        s->records_lost = 1;
        return READER_CUT;
    }
    int rc = HPROF_OK;
    if (!r->cut_known || r->cut_record != r->rec_offset)
        rc = scan_cut_heap(r);
    if (rc != HPROF_OK)
        return rc;
    s->kept_end = body + r->cut_kept;
    s->bytes_lost = r->size - s->kept_end;
    s->sub_records_kept = r->cut_subs;
    s->sub_records_lost = s->bytes_lost > 0;
    s->sub_tag = r->cut_sub_tag;
    struct hprof_segment seg = { r->rec_offset, r->rec_tag, time, (uint32_t)r->cut_kept };
    rc = read_heap(r, v, &seg);
    return rc == HPROF_OK ? READER_CUT : rc;
}

static int run_records(struct hprof_reader *r, struct hprof_visitor *v);

/* The census of a cut input: each class dump's superclass, and how many
 * instances each class has. */
struct census {
    struct hprof_visitor base;
    struct idmap supers;        /* class id -> superclass id */
    struct idmap instances;     /* class id -> instances */
    /* Primitive arrays name no class: analyzers find the class of each
     * type by its name (VisualVM fails on a type whose class is missing). */
    struct idmap type_names;    /* STRING id of "[B", "byte[]", ... -> type */
    struct idmap type_classes;  /* class id of those names -> type */
    uint64_t arrays[16];        /* primitive arrays by type */
    uint64_t object_class;      /* java.lang.Object, by its LOAD_CLASS */
};

static int census_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    static const char *const names[] = { "[Z", "[C", "[F", "[D", "[B", "[S", "[I", "[J",
        "boolean[]", "char[]", "float[]", "double[]", "byte[]", "short[]", "int[]", "long[]" };
    for (unsigned i = 0; i < 16; i++)
        if (s->length == strlen(names[i]) && memcmp(s->utf8, names[i], s->length) == 0)
            return idmap_put(&((struct census *)v)->type_names, s->id,
                             HPROF_TYPE_BOOLEAN + i % 8);
    if (s->length == 16 && (memcmp(s->utf8, "java.lang.Object", 16) == 0 ||
                            memcmp(s->utf8, "java/lang/Object", 16) == 0))
        return idmap_put(&((struct census *)v)->type_names, s->id, 0);
    return HPROF_OK;
}

static int census_load_class(struct hprof_visitor *v, const struct hprof_load_class *c)
{
    struct census *cs = (struct census *)v;
    uint64_t type;
    if (!idmap_get(&cs->type_names, c->name_id, &type))
        return HPROF_OK;
    if (type == 0) {
        cs->object_class = c->class_id;
        return HPROF_OK;
    }
    return idmap_put(&cs->type_classes, c->class_id, type);
}

static int census_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    ((struct census *)v)->arrays[a->type & 15]++;
    return HPROF_SKIP;
}

static int census_class(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    return idmap_put(&((struct census *)v)->supers, c->id, c->super_id);
}

static int census_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct census *cs = (struct census *)v;
    uint64_t n = 0;
    idmap_get(&cs->instances, o->class_id, &n);
    return idmap_put(&cs->instances, o->class_id, n + 1);
}

static const struct hprof_visitor_ops census_ops = {
    .string = census_string,
    .load_class = census_load_class,
    .class_dump = census_class,
    .instance = census_instance,
    .object_array = scan_object_array,
    .primitive_array = census_primitive_array,
};

/* Does the superclass chain of `id` end within what `supers` holds?  A
 * cycle counts as complete: it is an error of its own, reported later. */
static int chain_complete(const struct idmap *supers, uint64_t id)
{
    for (size_t steps = 0; steps <= supers->count; steps++) {
        uint64_t super;
        if (!idmap_get(supers, id, &super))
            return 0;   /* never arrived */
        if (super == 0)
            return 1;
        id = super;
    }
    return 1;
}

static void salvage_state_release(struct salvage_state *sv)
{
    if (sv != NULL && atomic_fetch_sub(&sv->refs, 1) == 1) {
        idmap_free(&sv->complete);
        free(sv);
    }
}

/* Before the first run of a salvaging reader delivers anything: is the
 * input cut (a record runs past its end, or a run of segments is left
 * open)?  The record headers say, read with pread() (no page of a mapping
 * touched).  If it is, a census pass (without visitors' output: arrays
 * skipped) finds the classes whose superclass chain is complete in what is
 * kept; the runs then deliver only those class dumps and the instances of
 * those classes, so that what they deliver is a valid dump (validate.h,
 * rules 2 and 3).  A complete input is read as without salvage.
 * @return HPROF_OK or an error of the input. */
static int salvage_prepare(struct hprof_reader *r)
{
    uint64_t pos = r->header.length, open_run = 0, first_heap = 0;
    int cut = 0, rc = HPROF_OK;
    r->prepared = 1;
    if ((rc = find_zero_tail(r)) != HPROF_OK)
        return rc;
    while (pos < r->size && !cut) {
        uint8_t h[9];
        if (r->size - pos < sizeof h) {
            cut = 1;
            break;
        }
        /* pread() even when mapped: touching each header in the mapping
         * would map most of an ART dump (a segment every few KiB) */
        if (r->fd >= 0)
            rc = pread_full(r, pos, h, sizeof h);
        else
            memcpy(h, r->mem + pos, sizeof h);
        if (rc != HPROF_OK)
            return rc;
        uint32_t length = get_u4(h + 5);
        if ((h[0] == HPROF_TAG_HEAP_DUMP || h[0] == HPROF_TAG_HEAP_DUMP_SEGMENT) &&
            first_heap == 0)
            first_heap = pos;
        if (h[0] == HPROF_TAG_HEAP_DUMP_SEGMENT && open_run == 0)
            open_run = pos + 1;
        else if (h[0] == HPROF_TAG_HEAP_DUMP_END)
            open_run = 0;
        if (length <= r->size - pos - sizeof h) {
            pos += sizeof h + length;
            continue;
        }
        cut = 1;
        if (h[0] == HPROF_TAG_HEAP_DUMP || h[0] == HPROF_TAG_HEAP_DUMP_SEGMENT) {
            r->rec_offset = pos;
            r->rec_tag = h[0];
            seek_to(r, pos + sizeof h);
            if ((rc = scan_cut_heap(r)) != HPROF_OK)
                return rc;
        }
    }
    if (!cut && open_run == 0)
        return HPROF_OK;

    struct census cs = { .base = { &census_ops, NULL } };
    struct salvage_state *sv = calloc(1, sizeof *sv);
    void (*progress)(void *, uint64_t, uint64_t) = r->progress;
    if (sv == NULL || idmap_init(&cs.supers, 1) != HPROF_OK ||
        idmap_init(&cs.instances, 1) != HPROF_OK || idmap_init(&cs.type_names, 1) != HPROF_OK ||
        idmap_init(&cs.type_classes, 1) != HPROF_OK || idmap_init(&sv->complete, 0) != HPROF_OK) {
        rc = hprof_error_set(r->err, HPROF_ERR_NOMEM, "out of memory");
        goto out;
    }
    atomic_init(&sv->refs, 1);
    r->progress = NULL; /* the run that follows reports progress */
    rc = run_records(r, &cs.base);
    r->progress = progress;
    if (r->map != NULL) { /* the run starts from the top again */
        madvise(r->map, (size_t)r->size, MADV_DONTNEED);
        r->released = 0;
    }
    for (size_t i = 0; rc == HPROF_OK && i <= cs.supers.mask; i++) {
        uint64_t id = cs.supers.keys[i];
        if (id == 0)
            continue;
        if (chain_complete(&cs.supers, id))
            rc = idmap_put(&sv->complete, id, 0);
        else
            sv->classes_dropped++;
        if (rc != HPROF_OK)
            rc = hprof_error_set(r->err, HPROF_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; rc == HPROF_OK && i <= cs.instances.mask; i++)
        if (cs.instances.keys[i] != 0 && !idmap_has(&sv->complete, cs.instances.keys[i]))
            sv->instances_dropped += cs.instances.values[i];
    /* A type whose array class is named but not delivered: rebuilt first
     * in the first heap record if there is one, else its arrays go.  One
     * named nowhere is left alone (nothing says it is missing). */
    sv->first_heap = first_heap;
    uint64_t object = idmap_has(&sv->complete, cs.object_class) ? cs.object_class : 0;
    for (size_t i = 0; rc == HPROF_OK && i <= cs.type_classes.mask; i++) {
        uint64_t id = cs.type_classes.keys[i], t = cs.type_classes.values[i];
        if (id == 0 || idmap_has(&sv->complete, id) || cs.arrays[t] == 0)
            continue;
        if (first_heap == 0 || sv->n_rebuilt == 16) {
            sv->drop_types |= 1u << t;
            continue;
        }
        sv->rebuilt[sv->n_rebuilt].id = id;
        sv->rebuilt[sv->n_rebuilt++].super_id = object;
        if (idmap_put(&sv->complete, id, 0) != HPROF_OK)
            rc = hprof_error_set(r->err, HPROF_ERR_NOMEM, "out of memory");
    }
    for (unsigned t = 0; t < 16; t++)
        if (sv->drop_types >> t & 1)
            sv->arrays_dropped += cs.arrays[t];
    if (rc == HPROF_OK) {
        r->sv = sv;
        sv = NULL;
    }
out:
    if (sv != NULL) {
        idmap_free(&sv->complete);
        free(sv);
    }
    idmap_free(&cs.supers);
    idmap_free(&cs.instances);
    idmap_free(&cs.type_names);
    idmap_free(&cs.type_classes);
    if (rc != HPROF_OK)
        r->prepared = 0;
    return rc;
}

/* Before a run: the census if it is due, and what to deliver. */
static int salvage_begin(struct hprof_reader *r)
{
    int rc = HPROF_OK;
    if (r->salvage && !r->prepared)
        rc = salvage_prepare(r);
    r->deliver = r->salvage && r->sv != NULL ? &r->sv->complete : NULL;
    return rc;
}

void hprof_reader_set_salvage(struct hprof_reader *r, int on)
{
    r->salvage = on;
}

const struct hprof_salvage_report *hprof_reader_salvage_report(const struct hprof_reader *r)
{
    return &r->report;
}

void reader_copy_salvage_report(struct hprof_reader *to, const struct hprof_reader *from)
{
    to->report = from->report;
}

/* ---- Top-level records --------------------------------------------------- */

/* A tag the format does not define: an error, before its length is
 * trusted for anything. */
static int unknown_tag(struct hprof_reader *r)
{
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
        return unknown_tag(r);
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

static int read_record(struct hprof_reader *r, struct hprof_visitor *v)
{
    unsigned ids = r->header.id_size;
    r->rec_offset = r->pos;
    r->rec_tag = 0;
    r->in_heap = 0;
    if (r->size - r->pos < 9) {
        if (r->salvage)
            return cut_record_header(r);
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               "offset 0x%" PRIx64 ": record header: truncated: 9 bytes needed, "
                               "%" PRIu64 " left" SALVAGE_HINT, r->pos, r->size - r->pos);
    }
    int rc = need(r, 9);
    if (rc != HPROF_OK)
        return rc;
    const uint8_t *p = r->cur;
    uint8_t head[9];
    if (r->skipped_segment) {
        /* A walk that skips segments (the write pass's dispatcher) needs
         * only their headers.  Touching one in the mapping would map the
         * 64 KiB around it, then unmap them: for ART's small segments that
         * is most of the file, on the thread that writes the output. */
        r->skipped_segment = 0;
        if ((rc = pread_full(r, r->pos, head, sizeof head)) != HPROF_OK)
            return rc;
        p = head;
    }
    r->rec_tag = p[0];
    uint32_t time = get_u4(p + 1), length = get_u4(p + 5);
    consume(r, 9);
    r->records++;
    if (r->rec_tag == 0 && time == 0 && length == 0)
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               "offset 0x%" PRIx64 ": zero bytes where a record should start "
                               "(a preallocated or zero-filled tail?%s)", r->rec_offset,
                               r->salvage ? "" : " try --salvage");
    int heap_record = 0;
    if (r->rec_tag == HPROF_TAG_HEAP_DUMP || r->rec_tag == HPROF_TAG_HEAP_DUMP_SEGMENT ||
        r->rec_tag == HPROF_TAG_HEAP_DUMP_END) {
        heap_record = 1;
        if ((rc = dump_boundary(r)) != HPROF_OK)
            return rc;
    }
    if (!hprof_tag_known(r->rec_tag))
        return unknown_tag(r);
    if (length > r->size - r->pos && r->salvage)
        return cut_record(r, time, length, v);
    if (length > r->size - r->pos)
        FAILF(r, HPROF_ERR_FORMAT, r->rec_offset,
              "length %" PRIu32 " runs past the end of the file (%" PRIu64 " bytes left)"
              SALVAGE_HINT, length, r->size - r->pos);
    if (heap_record && r->selecting != 0) {
        if (r->dumps != r->selecting) { /* another dump's: not this run's */
            skip(r, length);
            return HPROF_OK;
        }
        r->dump_end = r->pos + length;
    }

    if (r->rec_tag == HPROF_TAG_HEAP_DUMP || r->rec_tag == HPROF_TAG_HEAP_DUMP_SEGMENT) {
        struct hprof_segment seg = { r->rec_offset, r->rec_tag, time, length };
        return read_heap(r, v, &seg);
    }
    if (length > HPROF_MAX_RECORD)
        FAILF(r, HPROF_ERR_FORMAT, r->rec_offset,
              "body of %" PRIu32 " bytes exceeds the reader's limit of %u", length,
              HPROF_MAX_RECORD);
    rc = need(r, length);
    if (rc != HPROF_OK)
        return rc;
    p = r->cur;
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
    return rc < 0 ? visitor_failed(r, rc) : HPROF_OK;
}

static int run_records(struct hprof_reader *r, struct hprof_visitor *v)
{
    int rc = salvage_begin(r);
    if (rc != HPROF_OK)
        return rc;
    seek_to(r, r->range_start != 0 ? r->range_start : r->header.length);
    uint64_t end = r->range_end != 0 ? r->range_end : r->size;
    r->next_progress = r->next_check = 0;
    r->in_heap = 0;
    r->rec_tag = 0;
    r->records = 0;
    r->heap_bytes = 0;
    r->open_run = 0;
    r->dumps = 0;
    r->dump_end = 0;
    r->selecting = r->only_dump;
    r->guarding = r->one_dump && r->only_dump == 0;
    r->stopped_at_dump = 0;
    memset(&r->report, 0, sizeof r->report);
    r->report.zero_tail = r->zero_tail;
    if (r->zero_tail != 0)
        r->report.input_end = r->size;
    if (r->deliver != NULL) {
        r->report.classes_dropped = r->sv->classes_dropped;
        r->report.instances_dropped = r->sv->instances_dropped;
        r->report.arrays_dropped = r->sv->arrays_dropped;
        r->report.array_classes_rebuilt = r->sv->n_rebuilt;
    }
    rc = hprof_visit_header(v, &r->header);
    if (rc < 0)
        return hprof_error_set(r->err, rc, "offset 0x0: header: a visitor failed");
    while (r->pos < end) {
        rc = read_record(r, v);
        if (rc == READER_CUT)
            break;
        if (rc != HPROF_OK)
            return rc;
        report_progress(r);
    }
    r->dumps_seen = r->dumps;
    if (r->selecting > r->dumps)
        return hprof_error_set(r->err, HPROF_ERR_USAGE,
                               "no heap dump %u: the file holds %u", r->selecting, r->dumps);
    if (r->salvage && r->open_run != 0) { /* the visitors' end closes it */
        if (!r->report.cut)
            r->report.input_end = r->report.kept_end = r->size;
        r->report.cut = 1;
        r->report.unclosed_run = r->open_run;
    }
    if (r->strict && r->records == 0)
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               "offset 0x%" PRIx64 ": end of file: no %srecord after the header "
                               "(truncated?)%s", r->size, r->salvage ? "complete " : "",
                               r->salvage ? ": nothing to salvage" : "");
    /* A cut before the heap: analyzers refuse a dump without one. */
    if (r->strict && r->report.cut && r->heap_bytes == 0 && r->records > 0)
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               "offset 0x%" PRIx64 ": end of file: cut before any complete heap "
                               "sub-record: nothing to salvage", r->size);
    if (r->strict && r->open_run != 0 && !r->salvage)
        return hprof_error_set(r->err, HPROF_ERR_FORMAT,
                               "offset 0x%" PRIx64 ": end of file: the HEAP_DUMP_SEGMENTs from "
                               "0x%" PRIx64 " are not closed by HEAP_DUMP_END (truncated?)"
                               SALVAGE_HINT, r->size, r->open_run);
    if (r->progress != NULL)
        r->progress(r->progress_ctx, r->size, r->size);
    rc = hprof_visit_end(v);
    if (rc < 0)
        return hprof_error_set(r->err, rc, "offset 0x%" PRIx64 ": end of file: a visitor failed",
                               r->size);
    return HPROF_OK;
}

int reader_clone(const struct hprof_reader *r, struct hprof_reader **out, struct hprof_error *err)
{
    /* A mapped file is mapped again: each mapping gives back the pages
     * behind its own reader, which one shared mapping could not. */
    int rc = r->mem != NULL && r->map == NULL
                 ? hprof_reader_open_memory(out, r->mem, (size_t)r->size, err)
                 : hprof_reader_open_fd(out, r->fd, err);
    if (rc == HPROF_OK && r->map != NULL && (rc = hprof_reader_map(*out)) != HPROF_OK) {
        hprof_reader_free(*out);
        *out = NULL;
        return rc;
    }
    if (rc == HPROF_OK && (*out)->size != r->size + r->zero_tail) {
        hprof_reader_free(*out);
        *out = NULL;
        return hprof_error_set(err, HPROF_ERR_IO, "the input changed size while reading");
    }
    if (rc == HPROF_OK) {
        (*out)->strict = r->strict;
        (*out)->salvage = r->salvage;
        (*out)->cut_known = r->cut_known;
        (*out)->cut_record = r->cut_record;
        (*out)->cut_kept = r->cut_kept;
        (*out)->cut_subs = r->cut_subs;
        (*out)->cut_sub_tag = r->cut_sub_tag;
        (*out)->prepared = r->prepared;
        (*out)->only_dump = r->only_dump;
        (*out)->one_dump = r->one_dump;
        (*out)->range_start = r->range_start;
        (*out)->range_end = r->range_end;
        (*out)->size = r->size;
        (*out)->zero_tail = r->zero_tail;
        if (((*out)->sv = r->sv) != NULL)
            atomic_fetch_add(&r->sv->refs, 1);
    }
    return rc;
}

/* ---- The read-ahead thread ------------------------------------------------ */

/* Touches one byte of every page from the reading position to READ_AHEAD
 * past it: what the reader then finds mapped (and cached) costs it no
 * fault.  It reads only, like the reader; it never waits for it either.
 * On a file not yet cached it waits for the disk while the reader, which
 * skips arrays, gets ahead: what it maps may then be behind pages the
 * reader has given back, so it gives back what it mapped behind the
 * reader too (the 2 GB HotSpot dump's first pass held up to 240 MB of it).
 * It looks for the reader after every TOUCH_BATCH bytes, to skip to it
 * rather than map what the reader has passed. */
#define TOUCH_BATCH (64u << 10)

static void *read_ahead_main(void *arg)
{
    struct read_ahead *a = arg;
    uint64_t touched = 0;
    while (!atomic_load_explicit(&a->stop, memory_order_relaxed)) {
        uint64_t at = atomic_load_explicit(&a->reader_pos, memory_order_relaxed);
        give_back(a->map, &a->released, touched < at ? touched : at);
        uint64_t until = a->size - at > READ_AHEAD ? at + READ_AHEAD : a->size;
        if (touched < at)
            touched = at - at % PAGE_STEP;
        if (touched >= until) {
            if (until == a->size)
                break;
            struct timespec idle = { 0, IDLE_NS };
            nanosleep(&idle, NULL);
            continue;
        }
        uint64_t batch_end = until - touched > TOUCH_BATCH ? touched + TOUCH_BATCH : until;
        for (; touched < batch_end; touched += PAGE_STEP)
            (void)a->mem[touched];
    }
    return NULL;
}

void hprof_reader_set_threads(struct hprof_reader *r, unsigned threads)
{
    r->want_read_ahead = threads > 1;
}

void reader_set_readahead_thread(struct hprof_reader *r, int on)
{
    r->want_read_ahead = on;
}

int reader_readahead_thread(const struct hprof_reader *r)
{
    return r->want_read_ahead;
}

/* A thread for this run, if asked for and the input is mapped; failing to
 * start one only means the reader takes its own faults. */
static void start_read_ahead(struct hprof_reader *r, struct read_ahead *a, uint64_t from)
{
    if (!r->want_read_ahead || r->map == NULL)
        return;
    a->mem = r->mem;
    a->map = r->map;
    a->size = r->size;
    a->released = from - from % PAGE_STEP;
    atomic_init(&a->reader_pos, from);
    atomic_init(&a->stop, 0);
    if (pthread_create(&a->thread, NULL, read_ahead_main, a) == 0)
        r->ahead = a;
}

static void stop_read_ahead(struct hprof_reader *r)
{
    if (r->ahead == NULL)
        return;
    atomic_store_explicit(&r->ahead->stop, 1, memory_order_relaxed);
    pthread_join(r->ahead->thread, NULL);
    r->ahead = NULL;
}

int reader_run_segments(struct hprof_reader *r, uint64_t start, uint64_t end,
                        struct hprof_visitor *v)
{
    struct read_ahead ahead;
    int rc = salvage_begin(r);
    if (rc != HPROF_OK)
        return rc;
    seek_to(r, start);
    r->next_check = 0;
    r->selecting = 0; /* the caller chose the records */
    r->guarding = 0;
    start_read_ahead(r, &ahead, start);
    do
        rc = read_record(r, v);
    while (rc == HPROF_OK && r->pos < end);
    stop_read_ahead(r);
    return rc == READER_CUT ? HPROF_OK : rc;
}

void reader_skip_to(struct hprof_reader *r, uint64_t offset)
{
    r->skip_to = offset;
}

int reader_salvaging(const struct hprof_reader *r)
{
    return r->salvage;
}

int hprof_reader_run(struct hprof_reader *r, struct hprof_visitor *v)
{
    struct read_ahead ahead;
    int rc = salvage_begin(r); /* its census before the read-ahead starts */
    if (rc != HPROF_OK)
        return rc;
    start_read_ahead(r, &ahead, 0);
    rc = run_records(r, v);
    stop_read_ahead(r); /* before the mapping's pages are given back */
    if (r->map != NULL) { /* the next run starts from the top again */
        madvise(r->map, (size_t)r->size, MADV_DONTNEED);
        r->released = 0;
    }
    return rc;
}
