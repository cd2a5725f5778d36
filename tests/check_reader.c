/*
 * check_reader.c - the reader: every header variant, every framing error
 * with its offset, chunked arrays, skipping and repeated passes.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hprof_private.h"
#include "reader_internal.h"
#include "testlib.h"

/* A visitor that counts what it sees. */
struct counter {
    struct hprof_visitor base;
    int strings, load_classes, records, segments, roots, classes, instances;
    int object_arrays, primitive_arrays, chunks, infos, ends;
    size_t largest_chunk;
    uint64_t array_bytes, last_record_tag;
    int misaligned;
    int skip_segments, skip_arrays;
    long rss_file_first, rss_file_max; /* KiB, sampled at heap_begin if measure_rss */
    int measure_rss;
    long wait_for_growth;       /* KiB: at the first heap_begin, wait up to 2 s for it */
    int grew;                   /* and whether it came */
    uint64_t wait_at_array_byte; /* at the first chunk from this byte of an array on, */
    int mapped_ahead;           /* wait up to 2 s for the page 3 MiB on to be mapped */
};

/* Whether the page at `addr` is mapped in this process (/proc/self/pagemap
 * bit 63: present), or -1. */
static int page_mapped(const void *addr)
{
    long page = sysconf(_SC_PAGESIZE);
    int fd = open("/proc/self/pagemap", O_RDONLY);
    uint64_t entry = 0;
    off_t at = (off_t)((uintptr_t)addr / (uintptr_t)page * sizeof entry);
    ssize_t n = fd >= 0 ? pread(fd, &entry, sizeof entry, at) : -1;
    if (fd >= 0)
        close(fd);
    return n == (ssize_t)sizeof entry ? (int)(entry >> 63) : -1;
}

static int n_string(struct hprof_visitor *v, const struct hprof_string *s)
{ (void)s; ((struct counter *)v)->strings++; return HPROF_OK; }
static int n_load(struct hprof_visitor *v, const struct hprof_load_class *c)
{ (void)c; ((struct counter *)v)->load_classes++; return HPROF_OK; }
static int n_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    struct counter *c = (struct counter *)v;
    c->records++;
    c->last_record_tag = r->tag;
    return HPROF_OK;
}
/* Wait up to 2 s for the file's resident pages to grow by wait_for_growth
 * KiB from rss_file_first. */
static void wait_for_growth(struct counter *c)
{
    for (int waited_ms = 0; waited_ms < 2000 && !c->grew; waited_ms++) {
        c->grew = tl_rss_file_kib() - c->rss_file_first >= c->wait_for_growth;
        usleep(1000);
    }
}

static int n_heap_begin(struct hprof_visitor *v, const struct hprof_segment *s)
{
    (void)s;
    struct counter *c = (struct counter *)v;
    if (c->segments == 0 && c->wait_for_growth > 0 && c->wait_at_array_byte == 0)
        wait_for_growth(c);
    if (c->measure_rss) {
        long kib = tl_rss_file_kib();
        if (c->segments == 0 && c->wait_for_growth == 0)
            c->rss_file_first = kib;
        if (kib > c->rss_file_max)
            c->rss_file_max = kib;
    }
    c->segments++;
    return c->skip_segments ? HPROF_SKIP : HPROF_OK;
}
static int n_root(struct hprof_visitor *v, const struct hprof_root *r)
{ (void)r; ((struct counter *)v)->roots++; return HPROF_OK; }
static int n_info(struct hprof_visitor *v, const struct hprof_heap_info *i)
{ (void)i; ((struct counter *)v)->infos++; return HPROF_OK; }
static int n_class(struct hprof_visitor *v, const struct hprof_class_dump *d)
{ (void)d; ((struct counter *)v)->classes++; return HPROF_OK; }
static int n_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{ (void)o; ((struct counter *)v)->instances++; return HPROF_OK; }
static int n_oarray(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct counter *c = (struct counter *)v;
    c->object_arrays += a->first == 0;
    return HPROF_OK;
}
static int n_parray(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct counter *c = (struct counter *)v;
    if (c->wait_at_array_byte > 0 && a->first >= c->wait_at_array_byte && !c->grew) {
        c->grew = -1; /* looked */
        for (int waited_ms = 0; waited_ms < 2000 && c->mapped_ahead != 1; waited_ms++) {
            c->mapped_ahead = page_mapped(a->data + (3u << 20));
            usleep(1000);
        }
    }
    c->primitive_arrays += a->first == 0;
    c->chunks++;
    c->array_bytes += a->length;
    if (a->length > c->largest_chunk)
        c->largest_chunk = a->length;
    if (a->length % hprof_type_size(a->type, 4) != 0)
        c->misaligned++;
    return c->skip_arrays ? HPROF_SKIP : HPROF_OK;
}
static int n_end(struct hprof_visitor *v)
{ ((struct counter *)v)->ends++; return HPROF_OK; }

static const struct hprof_visitor_ops counter_ops = {
    .string = n_string, .load_class = n_load, .record = n_record, .heap_begin = n_heap_begin,
    .root = n_root, .heap_info = n_info, .class_dump = n_class, .instance = n_instance,
    .object_array = n_oarray, .primitive_array = n_parray, .end = n_end,
};

static int run_memory(const struct tbuf *b, struct counter *c, struct hprof_error *err)
{
    struct hprof_reader *r = NULL;
    memset(err, 0, sizeof *err);
    int skip_s = c->skip_segments, skip_a = c->skip_arrays;
    memset(c, 0, sizeof *c);
    c->base.ops = &counter_ops;
    c->skip_segments = skip_s;
    c->skip_arrays = skip_a;
    int rc = hprof_reader_open_memory(&r, b->data, b->len, err);
    if (rc == HPROF_OK)
        rc = hprof_reader_run(r, &c->base);
    hprof_reader_free(r);
    return rc;
}

static const char *const versions[] = {
    "JAVA PROFILE 1.0.1", "JAVA PROFILE 1.0.2", "JAVA PROFILE 1.0.3",
};

START_TEST(reader_accepts_every_version_and_id_size)
{
    struct tbuf b;
    struct counter c = { 0 };
    struct hprof_error err;
    unsigned ids = _i % 2 ? 8 : 4;
    tb_small_dump(&b, ids);
    /* patch the version: all three have the same length */
    memcpy(b.data, versions[_i / 2], strlen(versions[0]));
    ck_assert_int_eq(run_memory(&b, &c, &err), HPROF_OK);
    ck_assert_int_eq(c.strings, 1);
    ck_assert_int_eq(c.load_classes, 1);
    ck_assert_int_eq(c.segments, 1);
    ck_assert_int_eq(c.roots, 1);
    ck_assert_int_eq(c.classes, 1);
    ck_assert_int_eq(c.instances, 1);
    ck_assert_int_eq(c.primitive_arrays, 1);
    ck_assert_int_eq(c.records, 1); /* HEAP_DUMP_END */
    ck_assert_int_eq(c.ends, 1);
    tb_free(&b);
}
END_TEST

START_TEST(reader_rejects_empty_file)
{
    struct hprof_reader *r;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(hprof_reader_open_memory(&r, "", 0, &err), HPROF_ERR_FORMAT);
    ck_assert_ptr_null(r);
    ck_assert_str_eq(err.message, "offset 0x0: header: empty file");
}
END_TEST

START_TEST(reader_rejects_bad_magic)
{
    struct hprof_reader *r;
    struct hprof_error err = { 0 };
    const char text[] = "PK\3\4 this is a zip file, not a heap dump";
    ck_assert_int_eq(hprof_reader_open_memory(&r, text, sizeof text, &err), HPROF_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.message, "offset 0x0: header: not a heap dump"));
}
END_TEST

/* Compressed data where the header should be is named by its compressor:
 * gzip or zstd, a dump compressed twice, its outer layer taken off by the
 * input; another, a format the library does not read. */
START_TEST(reader_names_compressed_data_in_place_of_a_header)
{
    static const struct {
        const char *bytes, *message;
    } cases[] = {
        { "\x1f\x8b\x08\0\0\0\0\0\0\xff", "gzip-compressed data (compressed twice? "
                                          "decompress it first: gzip -d)" },
        { "\x28\xb5\x2f\xfd\x24\0\0\0\0\0", "zstd-compressed data (compressed twice? "
                                          "decompress it first: zstd -d)" },
        /* formats no input takes off: never a second layer */
        { "\xfd" "7zXZ\0\0\0\0\0", "xz-compressed data (only gzip and zstd are read: "
                                    "decompress it first: xz -d)" },
        { "BZh9\0\0\0\0\0\0", "bzip2-compressed data (only gzip and zstd are read: "
                             "decompress it first: bzip2 -d)" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct hprof_reader *r;
        struct hprof_error err = { 0 };
        ck_assert_int_eq(hprof_reader_open_memory(&r, cases[i].bytes, 10, &err), HPROF_ERR_FORMAT);
        ck_assert_ptr_nonnull(strstr(err.message, "offset 0x0: header: not a heap dump but "));
        ck_assert_msg(strstr(err.message, cases[i].message) != NULL, "%s", err.message);
    }
}
END_TEST

START_TEST(reader_rejects_identifier_sizes_other_than_4_and_8)
{
    static const unsigned sizes[] = { 0, 3, 16, 5 };
    struct tbuf b;
    struct hprof_reader *r;
    struct hprof_error err = { 0 };
    tb_init(&b, sizes[_i]);
    tb_header(&b, "JAVA PROFILE 1.0.2");
    ck_assert_int_eq(hprof_reader_open_memory(&r, b.data, b.len, &err), HPROF_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.message, "offset 0x13: header: identifier size"));
    tb_free(&b);
}
END_TEST

START_TEST(reader_accepts_a_file_that_is_only_a_header)
{
    struct tbuf b;
    struct counter c = { 0 };
    struct hprof_error err;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    ck_assert_int_eq(run_memory(&b, &c, &err), HPROF_OK);
    ck_assert_int_eq(c.ends, 1);
    ck_assert_int_eq(c.records + c.segments + c.strings, 0);
    tb_free(&b);
}
END_TEST

/* Every proper prefix of a valid dump that does not end on a record boundary
 * is rejected with a message naming an offset, and never read past its end
 * (ASan watches): past the file header, as an input cut short
 * (HPROF_ERR_TRUNCATED), whose message is the library's and names no
 * option of a tool.  A prefix ending on a boundary is a valid, shorter
 * dump. */
static int on_record_boundary(const struct tbuf *b, size_t len)
{
    size_t at = strlen((const char *)b->data) + 1 + 12;
    while (at < len && at + 9 <= b->len) {
        const uint8_t *p = b->data + at + 5;
        at += 9 + ((size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3]);
    }
    return at == len;
}

START_TEST(reader_rejects_every_truncation_with_an_offset)
{
    struct tbuf b;
    struct counter c = { 0 };
    struct hprof_error err;
    tb_small_dump(&b, _i ? 8 : 4);
    size_t full = b.len, header = strlen((const char *)b.data) + 1 + 12;
    for (size_t len = 0; len < full; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, b.data, len);
        struct tbuf t = { .data = copy, .len = len };
        int rc = run_memory(&t, &c, &err);
        if (on_record_boundary(&b, len)) {
            ck_assert_int_eq(rc, HPROF_OK);
        } else {
            ck_assert_msg(rc == (len < header ? HPROF_ERR_FORMAT : HPROF_ERR_TRUNCATED),
                          "prefix %zu: rc %d", len, rc);
            ck_assert_msg(strncmp(err.message, "offset 0x", 9) == 0, "prefix %zu: %s", len,
                          err.message);
            ck_assert_msg(strstr(err.message, "salvage") == NULL, "prefix %zu: %s", len,
                          err.message);
        }
        free(copy);
    }
    tb_free(&b);
}
END_TEST

START_TEST(reader_rejects_unknown_top_level_tag_naming_tag_and_offset)
{
    struct tbuf b;
    struct counter c = { 0 };
    struct hprof_error err;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_record(&b, 0x77, "abc", 3);
    ck_assert_int_eq(run_memory(&b, &c, &err), HPROF_ERR_FORMAT);
    ck_assert_int_eq(c.records, 0);
    ck_assert_str_eq(err.message, "offset 0x1f: tag 0x77: unknown record tag");
    tb_free(&b);
}
END_TEST

/* cat a.hprof b.hprof > c.hprof: where a record should start comes b's
 * header, which the message names, not as the unknown tag 0x4a. */
START_TEST(reader_names_a_second_dump_header_as_files_joined)
{
    struct tbuf b;
    struct counter c = { 0 };
    struct hprof_error err;
    tb_small_dump(&b, 4);
    size_t first = b.len;
    tb_header(&b, "JAVA PROFILE 1.0.3");
    ck_assert_int_eq(run_memory(&b, &c, &err), HPROF_ERR_FORMAT);
    char want[160];
    snprintf(want, sizeof want,
             "offset 0x%zx: a heap dump's header (\"JAVA PROFILE\") where a record should start: "
             "two dump files joined into one? The first ends here", first);
    ck_assert_str_eq(err.message, want);
    tb_free(&b);
}
END_TEST

/* Segments, then a HEAP_DUMP with no HEAP_DUMP_END between: which heap
 * dump it is part of has no answer, so it is refused where it begins. */
START_TEST(reader_rejects_a_heap_dump_inside_open_segments)
{
    struct tbuf b;
    struct counter c = { 0 };
    struct hprof_error err;
    static const uint8_t types[] = { HPROF_TYPE_INT };
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    size_t segments = b.len;
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&b, 0x100, 0, types, 1);
    tb_segment_end(&b);
    size_t heap_dump = b.len;
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP);
    tb_instance(&b, 0x110, 0x100, "1234", 4);
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    ck_assert_int_eq(run_memory(&b, &c, &err), HPROF_ERR_FORMAT);
    char expect[200];
    snprintf(expect, sizeof expect, "offset 0x%zx: HEAP_DUMP: inside the HEAP_DUMP_SEGMENTs from "
             "0x%zx, which no HEAP_DUMP_END closed", heap_dump, segments);
    ck_assert_str_eq(err.message, expect);
    tb_free(&b);
}
END_TEST

START_TEST(reader_checks_fixed_record_layouts)
{
    static const struct {
        uint8_t tag;
        uint32_t len;
        int ok;
    } cases[] = {
        { HPROF_TAG_UNLOAD_CLASS, 4, 1 }, { HPROF_TAG_UNLOAD_CLASS, 5, 0 },
        { HPROF_TAG_STACK_FRAME, 24, 1 }, { HPROF_TAG_STACK_FRAME, 23, 0 },
        { HPROF_TAG_STACK_TRACE, 12, 1 }, { HPROF_TAG_STACK_TRACE, 16, 0 },
        { HPROF_TAG_STACK_TRACE, 8, 0 },  { HPROF_TAG_ALLOC_SITES, 34, 1 },
        { HPROF_TAG_ALLOC_SITES, 35, 0 }, { HPROF_TAG_HEAP_SUMMARY, 24, 1 },
        { HPROF_TAG_HEAP_SUMMARY, 20, 0 }, { HPROF_TAG_START_THREAD, 24, 1 },
        { HPROF_TAG_START_THREAD, 25, 0 }, { HPROF_TAG_END_THREAD, 4, 1 },
        { HPROF_TAG_END_THREAD, 0, 0 },   { HPROF_TAG_CPU_SAMPLES, 8, 1 },
        { HPROF_TAG_CPU_SAMPLES, 16, 0 }, { HPROF_TAG_CONTROL_SETTINGS, 6, 1 },
        { HPROF_TAG_CONTROL_SETTINGS, 8, 0 }, { HPROF_TAG_HEAP_DUMP_END, 1, 0 },
        { HPROF_INSTANCE_DUMP, 0, 0 },    { HPROF_OBJECT_ARRAY_DUMP, 12, 0 },
    };
    static const uint8_t zeros[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tbuf b;
        struct counter c = { 0 };
        struct hprof_error err = { 0 };
        tb_init(&b, 4);
        tb_header(&b, "JAVA PROFILE 1.0.3");
        tb_record(&b, cases[i].tag, zeros, cases[i].len);
        int rc = run_memory(&b, &c, &err);
        ck_assert_msg(rc == (cases[i].ok ? HPROF_OK : HPROF_ERR_FORMAT), "tag 0x%02x length %u: %s",
                      cases[i].tag, cases[i].len, err.message);
        if (!cases[i].ok)
            ck_assert_msg(strncmp(err.message, "offset 0x1f: ", 13) == 0, "%s", err.message);
        tb_free(&b);
    }
}
END_TEST

START_TEST(reader_rejects_unknown_sub_tag_naming_tag_and_offset)
{
    struct tbuf b;
    struct counter c = { 0 };
    struct hprof_error err;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_u1(&b, HPROF_ROOT_UNKNOWN);
    tb_u4(&b, 0x1234);
    tb_u1(&b, 0x0C); /* a HEAP_DUMP tag inside a segment */
    tb_u4(&b, 0);
    tb_segment_end(&b);
    ck_assert_int_eq(run_memory(&b, &c, &err), HPROF_ERR_FORMAT);
    ck_assert_str_eq(err.message,
                     "offset 0x2d: HEAP_DUMP_SEGMENT/unknown: unknown sub-record tag 0x0c");
    tb_free(&b);
}
END_TEST

START_TEST(reader_rejects_record_length_past_end_of_file)
{
    struct tbuf b;
    struct counter c = { 0 };
    struct hprof_error err;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_u1(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_u4(&b, 0);
    tb_u4(&b, 0xFFFFFFF0u); /* claims 4 GiB */
    tb_u1(&b, HPROF_ROOT_UNKNOWN);
    tb_u4(&b, 1);
    ck_assert_int_eq(run_memory(&b, &c, &err), HPROF_ERR_TRUNCATED);
    ck_assert_str_eq(err.message, "offset 0x1f: HEAP_DUMP_SEGMENT: length 4294967280 runs past "
                                  "the end of the file (5 bytes left)");
    tb_free(&b);
}
END_TEST

START_TEST(reader_rejects_sub_record_crossing_its_segment)
{
    struct tbuf b;
    struct counter c = { 0 };
    struct hprof_error err;
    static const uint8_t types[] = { HPROF_TYPE_LONG };
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&b, 0x100, 0, types, 1);
    size_t end = b.len;
    tb_instance(&b, 0x110, 0x100, "12345678", 8);
    tb_segment_end(&b);
    /* shrink the segment so that it ends inside the instance */
    b.data[b.segment_at + 3] -= 5;
    tb_u1(&b, HPROF_TAG_HEAP_DUMP_END);
    ck_assert_int_eq(run_memory(&b, &c, &err), HPROF_ERR_FORMAT);
    char expect[200];
    snprintf(expect, sizeof expect, "offset 0x%zx: HEAP_DUMP_SEGMENT/INSTANCE_DUMP: sub-record "
             "runs past the end of its segment", end);
    ck_assert_msg(strncmp(err.message, expect, strlen(expect)) == 0, "%s", err.message);
    tb_free(&b);
}
END_TEST

START_TEST(reader_rejects_array_count_larger_than_its_segment)
{
    struct tbuf b;
    struct counter c = { 0 };
    struct hprof_error err;
    tb_init(&b, 8);
    tb_header(&b, "JAVA PROFILE 1.0.2");
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_u1(&b, HPROF_PRIMITIVE_ARRAY_DUMP);
    tb_id(&b, 0x10);
    tb_u4(&b, 0);
    tb_u4(&b, 0xFFFFFFFFu); /* 4G longs: 32 GiB */
    tb_u1(&b, HPROF_TYPE_LONG);
    tb_u8(&b, 7);
    tb_segment_end(&b);
    ck_assert_int_eq(run_memory(&b, &c, &err), HPROF_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.message, "PRIMITIVE_ARRAY_DUMP: 4294967295 elements "
                                              "(34359738360 bytes) run past the end"));
    tb_free(&b);
}
END_TEST

START_TEST(reader_rejects_invalid_array_element_type)
{
    struct tbuf b;
    struct counter c = { 0 };
    struct hprof_error err;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_u1(&b, HPROF_PRIMITIVE_ARRAY_DUMP);
    tb_id(&b, 0x10);
    tb_u4(&b, 0);
    tb_u4(&b, 1);
    tb_u1(&b, 3); /* no such type */
    tb_u1(&b, 0);
    tb_segment_end(&b);
    ck_assert_int_eq(run_memory(&b, &c, &err), HPROF_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.message, "invalid element type 3"));
    tb_free(&b);
}
END_TEST

/* ---- Through a file ------------------------------------------------------- */

/* The dump in `b`, in a temporary file (so in the page cache); frees `b`. */
static char *dump_file(struct tbuf *b)
{
    char *path = tl_temp_file(b->data, b->len, ".hprof");
    tb_free(b);
    return path;
}

/* A dump of one segment holding one array of `count` elements of `type`
 * (zeros); with `misalign`, a root first, so the array does not start
 * aligned. */
static char *array_file(uint8_t type, uint32_t count, int misalign)
{
    struct tbuf b;
    uint8_t *data = calloc(count, hprof_type_size(type, 4));
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    if (misalign) {
        tb_u1(&b, HPROF_ROOT_UNKNOWN);
        tb_u4(&b, 0x10);
    }
    tb_prim_array(&b, 0x10, type, count, data);
    tb_segment_end(&b);
    free(data);
    return dump_file(&b);
}

/* A dump of `n` segments, each a byte[] of 64 KiB, then HEAP_DUMP_END. */
static char *segments_file(unsigned n)
{
    struct tbuf b;
    const uint32_t count = 64u << 10;
    uint8_t *data = calloc(count, 1);
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    for (uint32_t i = 0; i < n; i++) {
        tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
        tb_prim_array(&b, 0x10 + i, HPROF_TYPE_BYTE, count, data);
        tb_segment_end(&b);
    }
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    free(data);
    return dump_file(&b);
}

/* A dump of `n` segments, each a byte[] of 1 MiB, not in the page cache:
 * written a segment at a time, synced, then dropped from the cache (any
 * user may drop the clean pages of a file). */
static char *uncached_segments_file(unsigned n)
{
    char *path = tl_temp_path(".hprof");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    const uint32_t count = 1u << 20;
    uint8_t *data = calloc(count, 1);
    struct tbuf b;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    for (uint32_t i = 0; i <= n; i++) {
        if (i < n) {
            tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
            tb_prim_array(&b, 0x10 + i, HPROF_TYPE_BYTE, count, data);
            tb_segment_end(&b);
        } else {
            tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
        }
        ck_assert_int_eq(write(fd, b.data, b.len), (ssize_t)b.len);
        b.len = 0;
    }
    tb_free(&b);
    free(data);
    ck_assert_int_eq(fsync(fd), 0);
    ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    close(fd);
    return path;
}

static struct hprof_error file_err;

/* A reader of `path`: mapped if `mapped`, given `threads` (2: a
 * read-ahead thread). */
static struct hprof_reader *open_file(const char *path, int *fd, int mapped, unsigned threads)
{
    struct hprof_reader *r;
    *fd = open(path, O_RDONLY);
    ck_assert_int_ge(*fd, 0);
    memset(&file_err, 0, sizeof file_err);
    ck_assert_int_eq(hprof_reader_open_fd(&r, *fd, &file_err), HPROF_OK);
    if (mapped)
        ck_assert_int_eq(hprof_reader_map(r), HPROF_OK);
    hprof_reader_set_threads(r, threads);
    return r;
}

static void close_file(struct hprof_reader *r, int fd, char *path)
{
    hprof_reader_free(r);
    close(fd);
    unlink(path);
    free(path);
}

/* The counter `c`, its options set, run over the file at `path` as
 * open_file() reads it; the run must succeed; then the file goes.  A
 * counter that waits for the file's pages to grow measures them from just
 * before the run. */
static void count_file(char *path, int mapped, unsigned threads, struct counter *c)
{
    int fd;
    struct hprof_reader *r = open_file(path, &fd, mapped, threads);
    c->base.ops = &counter_ops;
    if (c->wait_for_growth > 0) {
        c->rss_file_first = tl_rss_file_kib();
        ck_assert_int_ge(c->rss_file_first, 0);
    }
    ck_assert_int_eq(hprof_reader_run(r, &c->base), HPROF_OK);
    close_file(r, fd, path);
}

/* Through a file, a 9 MiB array arrives in several chunks of whole
 * elements that add up to the array: of the read buffer's size when read,
 * of 1 MiB through a mapping (a file sink writes those without a copy). */
START_TEST(reader_delivers_large_arrays_in_whole_element_chunks)
{
    const uint32_t count = (9u << 20) / 2 + 1; /* chars: 9 MiB + 2 bytes, > the read buffer */
    struct counter c = { 0 };
    /* through a mapping, chunks also bound the pages held */
    count_file(array_file(HPROF_TYPE_CHAR, count, 1), _i, 1, &c);
    ck_assert_int_eq(c.primitive_arrays, 1);
    ck_assert_int_gt(c.chunks, 2);
    ck_assert_uint_eq(c.largest_chunk, _i ? 1u << 20 : HPROF_READ_BUFFER);
    ck_assert_int_eq(c.misaligned, 0);
    ck_assert_uint_eq(c.array_bytes, (uint64_t)count * 2);
}
END_TEST

START_TEST(reader_skips_a_segment_when_heap_begin_says_skip)
{
    struct tbuf b;
    struct counter c = { .skip_segments = 1 };
    struct hprof_error err;
    tb_small_dump(&b, 4);
    ck_assert_int_eq(run_memory(&b, &c, &err), HPROF_OK);
    ck_assert_int_eq(c.segments, 1);
    ck_assert_int_eq(c.instances + c.classes + c.roots, 0);
    ck_assert_int_eq(c.records, 1); /* the END after it is still seen */
    tb_free(&b);
}
END_TEST

/* A visitor that runs out of memory at the first instance, saying only
 * that, as the rewrites' tables do. */
struct starved {
    struct hprof_visitor base;
    struct hprof_error *err;
};

static int starve_at_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    (void)o;
    return hprof_error_set(((struct starved *)v)->err, HPROF_ERR_NOMEM, "out of memory");
}

static const struct hprof_visitor_ops starved_ops = { .instance = starve_at_instance };

START_TEST(reader_says_where_a_visitor_ran_out_of_memory)
{
    struct tbuf b;
    struct hprof_error err = { 0 };
    struct starved v = { .base.ops = &starved_ops, .err = &err };
    struct hprof_reader *r = NULL;
    tb_small_dump(&b, 4);
    ck_assert_int_eq(hprof_reader_open_memory(&r, b.data, b.len, &err), HPROF_OK);
    ck_assert_int_eq(hprof_reader_run(r, &v.base), HPROF_ERR_NOMEM);
    ck_assert_msg(strncmp(err.message, "offset 0x", 9) == 0 &&
                  strstr(err.message, ": HEAP_DUMP_SEGMENT/INSTANCE_DUMP: out of memory") != NULL,
                  "%s", err.message);
    hprof_reader_free(r);
    tb_free(&b);
}
END_TEST

/* The write pass's dispatcher skips every segment and needs only their
 * headers: through a mapping, reading one must not map the pages around
 * it (the kernel maps 64 KiB around a fault), so a walk over 256 segments
 * of 64 KiB holds none of the file's 16 MiB. */
START_TEST(reader_through_a_mapping_skips_segments_without_mapping_them)
{
    struct counter c = { .skip_segments = 1, .measure_rss = 1 };
    count_file(segments_file(256), 1, 1, &c);
    ck_assert_int_eq(c.segments, 256);
    ck_assert_int_eq(c.records, 1); /* the END, read after a skipped segment too */
    ck_assert_int_eq(c.primitive_arrays, 0);
    ck_assert_int_ge(c.rss_file_first, 0);
    /* before, up to the 8 MiB the reader holds before giving pages back */
    ck_assert_int_lt(c.rss_file_max - c.rss_file_first, 1024);
}
END_TEST

/* A visitor that skips every segment, and at the one at `from` asks the
 * reader to go on at `to` (reader_skip_to(), the write pass's walk). */
struct skipper {
    struct hprof_visitor base;
    struct hprof_reader *r;
    uint64_t from, to;
    uint64_t seen[16];
    int n_seen, records;
};

static int skipper_heap_begin(struct hprof_visitor *v, const struct hprof_segment *s)
{
    struct skipper *k = (struct skipper *)v;
    if (k->n_seen < 16)
        k->seen[k->n_seen++] = s->offset;
    if (s->offset == k->from)
        reader_skip_to(k->r, k->to);
    return HPROF_SKIP;
}

static int skipper_record(struct hprof_visitor *v, const struct hprof_record *rec)
{
    (void)rec;
    ((struct skipper *)v)->records++;
    return HPROF_OK;
}

static const struct hprof_visitor_ops skipper_ops = { .heap_begin = skipper_heap_begin,
                                                      .record = skipper_record };

/* A skipping visitor can have the reader step over the records that follow
 * a segment: they are not seen, the run goes on from there, and the next
 * run reads every record again; mapped or not. */
START_TEST(reader_goes_on_where_a_skipping_visitor_says)
{
    char *path = segments_file(6);
    int fd;
    struct hprof_reader *r = open_file(path, &fd, _i, 1);
    struct skipper all = { .base = { &skipper_ops, NULL }, .r = r, .from = UINT64_MAX };
    ck_assert_int_eq(hprof_reader_run(r, &all.base), HPROF_OK);
    ck_assert_int_eq(all.n_seen, 6);
    struct skipper some = { .base = { &skipper_ops, NULL }, .r = r, .from = all.seen[1],
                            .to = all.seen[4] };
    ck_assert_int_eq(hprof_reader_run(r, &some.base), HPROF_OK);
    ck_assert_int_eq(some.n_seen, 4); /* the third and fourth are stepped over */
    ck_assert_uint_eq(some.seen[1], all.seen[1]);
    ck_assert_uint_eq(some.seen[2], all.seen[4]);
    ck_assert_int_eq(some.records, 1); /* the END */
    struct skipper again = { .base = { &skipper_ops, NULL }, .r = r, .from = UINT64_MAX };
    ck_assert_int_eq(hprof_reader_run(r, &again.base), HPROF_OK);
    ck_assert_int_eq(again.n_seen, 6);
    close_file(r, fd, path);
}
END_TEST

START_TEST(reader_with_a_readahead_thread_sees_what_it_sees_without)
{
    struct tl_canon alone, ahead;
    struct hprof_error err = { 0 };
    if (!tl_fixture_available(_i))
        return;
    ck_assert_int_eq(tl_canon_file_via(tl_fixtures[_i], &alone, TL_MAPPED, &err), HPROF_OK);
    ck_assert_int_eq(tl_canon_file_via(tl_fixtures[_i], &ahead, TL_MAPPED | TL_READ_AHEAD, &err),
                     HPROF_OK);
    ck_assert_uint_eq(alone.records, ahead.records);
    ck_assert_uint_eq(alone.sub_records, ahead.sub_records);
    ck_assert_mem_eq(alone.md5, ahead.md5, 16);
}
END_TEST

/* While the reader waits at the first segment of a 32 MiB dump, the thread
 * maps the pages ahead of it (3 MiB or more, within 2 s); over the run the
 * file's resident pages stay under 16 MiB (8 given back at a time, 4 ahead,
 * 1 between publications of the reader's position, and some slack). */
static void run_ahead_threads(unsigned threads, struct counter *c)
{
    *c = (struct counter){ .measure_rss = 1, .wait_for_growth = 3 << 10 };
    count_file(segments_file(512), 1, threads, c);
    ck_assert_int_eq(c->segments, 512);
    ck_assert_int_eq(c->primitive_arrays, 512);
}

static void run_ahead(int with_thread, struct counter *c)
{
    run_ahead_threads(with_thread ? 2 : 1, c);
}

START_TEST(readahead_thread_maps_the_pages_ahead_of_the_reader_within_a_bound)
{
    struct counter c;
    run_ahead(1, &c);
    ck_assert_msg(c.grew, "no pages mapped ahead within 2 s");
    ck_assert_int_lt(c.rss_file_max - c.rss_file_first, 16 << 10);
}
END_TEST

/* Inside one 32 MiB array too, the thread keeps ahead of the reader: at
 * the chunk from 16 MiB on, the page 3 MiB further is (soon) mapped. */
START_TEST(readahead_thread_keeps_ahead_inside_a_large_array)
{
    struct counter c = { .wait_at_array_byte = 16u << 20 };
    count_file(array_file(HPROF_TYPE_BYTE, 32u << 20, 0), 1, 2, &c);
    ck_assert_int_eq(c.primitive_arrays, 1);
    ck_assert_int_eq(c.grew, -1);
    ck_assert_msg(c.mapped_ahead == 1, "the page 3 MiB ahead is not mapped (%d) within 2 s",
                  c.mapped_ahead);
}
END_TEST

/* On a file not in the page cache the thread waits for the disk, and the
 * reader, skipping every array, gets ahead of it: the pages the thread then
 * maps behind the reader are given back too.  Over 256 MiB the file's
 * resident pages stay under 24 MiB (8 behind the reader, 8 behind the
 * thread, 4 ahead, and slack). */
START_TEST(readahead_thread_gives_back_what_it_maps_behind_the_reader)
{
    struct counter c = { .skip_arrays = 1, .measure_rss = 1 };
    count_file(uncached_segments_file(256), 1, 2, &c);
    ck_assert_int_eq(c.segments, 256);
    ck_assert_int_ge(c.rss_file_first, 0);
    ck_assert_int_lt(c.rss_file_max - c.rss_file_first, 24 << 10);
}
END_TEST

START_TEST(reader_without_a_readahead_thread_maps_only_what_it_reads)
{
    struct counter c;
    run_ahead(0, &c);
    ck_assert(!c.grew);
}
END_TEST

/* A count of threads of two or more maps pages ahead of the reader; one,
 * or none, does not. */
static const unsigned ahead_threads[] = { 2, 0, 8, 1 };

START_TEST(reader_reads_ahead_only_when_given_two_threads_or_more)
{
    struct counter c;
    run_ahead_threads(ahead_threads[_i], &c);
    ck_assert_int_eq(c.grew != 0, ahead_threads[_i] > 1);
}
END_TEST

START_TEST(reader_runs_again_from_the_start)
{
    struct tbuf b;
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    struct counter c = { .base = { &counter_ops, NULL } };
    tb_small_dump(&b, 8);
    ck_assert_int_eq(hprof_reader_open_memory(&r, b.data, b.len, &err), HPROF_OK);
    ck_assert_int_eq(hprof_reader_run(r, &c.base), HPROF_OK);
    ck_assert_int_eq(hprof_reader_run(r, &c.base), HPROF_OK);
    ck_assert_int_eq(c.instances, 2);
    ck_assert_int_eq(c.ends, 2);
    hprof_reader_free(r);
    tb_free(&b);
}
END_TEST

START_TEST(reader_reads_android_only_sub_records)
{
    static const uint8_t root_tags[] = { 0x89, 0x8A, 0x8B, 0x8C, 0x8D, 0x90 };
    struct tbuf b;
    struct counter c = { 0 };
    struct hprof_error err;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_u1(&b, HPROF_HEAP_DUMP_INFO);
    tb_u4(&b, 'A');
    tb_id(&b, 0x10);
    for (size_t i = 0; i < sizeof root_tags; i++) {
        tb_u1(&b, root_tags[i]);
        tb_id(&b, 0x100 + i);
    }
    tb_u1(&b, HPROF_ROOT_JNI_MONITOR);
    tb_id(&b, 0x200);
    tb_u4(&b, 1);
    tb_u4(&b, 2);
    tb_u1(&b, HPROF_PRIMITIVE_ARRAY_NODATA);
    tb_id(&b, 0x300);
    tb_u4(&b, 0);
    tb_u4(&b, 1000);
    tb_u1(&b, HPROF_TYPE_INT);
    tb_segment_end(&b);
    ck_assert_int_eq(run_memory(&b, &c, &err), HPROF_OK);
    ck_assert_int_eq(c.infos, 1);
    ck_assert_int_eq(c.roots, 7);
    ck_assert_int_eq(c.primitive_arrays, 1);
    ck_assert_uint_eq(c.array_bytes, 0);
    tb_free(&b);
}
END_TEST

START_TEST(reader_through_a_mapping_sees_what_pread_sees)
{
    struct tl_canon by_pread, by_map, again;
    struct hprof_error err = { 0 };
    if (!tl_fixture_available(_i))
        return;
    ck_assert_int_eq(tl_canon_file_via(tl_fixtures[_i], &by_pread, 0, &err), HPROF_OK);
    ck_assert_int_eq(tl_canon_file_via(tl_fixtures[_i], &by_map, TL_MAPPED, &err), HPROF_OK);
    ck_assert_uint_eq(by_pread.records, by_map.records);
    ck_assert_uint_eq(by_pread.sub_records, by_map.sub_records);
    ck_assert_mem_eq(by_pread.md5, by_map.md5, 16);
    ck_assert_int_eq(tl_canon_file_via(tl_fixtures[_i], &again, TL_MAPPED, &err), HPROF_OK);
    ck_assert_mem_eq(by_map.md5, again.md5, 16);
}
END_TEST

START_TEST(reader_through_a_mapping_runs_again_from_the_start)
{
    struct tbuf b;
    tb_small_dump(&b, 4);
    char *path = tl_temp_file(b.data, b.len, ".hprof");
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    struct counter c = { .base = { &counter_ops, NULL } };
    ck_assert_int_eq(hprof_reader_open_fd(&r, fd, &err), HPROF_OK);
    ck_assert_int_eq(hprof_reader_map(r), HPROF_OK);
    ck_assert_int_eq(hprof_reader_map(r), HPROF_OK); /* a second call changes nothing */
    ck_assert_int_eq(hprof_reader_run(r, &c.base), HPROF_OK);
    ck_assert_int_eq(hprof_reader_run(r, &c.base), HPROF_OK);
    ck_assert_int_eq(c.instances, 2);
    ck_assert_int_eq(c.ends, 2);
    hprof_reader_free(r);
    close(fd);
    unlink(path);
    free(path);
    tb_free(&b);
}
END_TEST

START_TEST(reader_of_memory_cannot_be_mapped)
{
    struct tbuf b;
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    tb_small_dump(&b, 4);
    ck_assert_int_eq(hprof_reader_open_memory(&r, b.data, b.len, &err), HPROF_OK);
    ck_assert_int_eq(hprof_reader_map(r), HPROF_ERR_USAGE);
    hprof_reader_free(r);
    tb_free(&b);
}
END_TEST

static Suite *reader_suite(void)
{
    Suite *s = suite_create("reader");
    TCase *t = tcase_create("reader");
    tcase_set_timeout(t, 60);
    tcase_add_loop_test(t, reader_accepts_every_version_and_id_size, 0, 6);
    tcase_add_test(t, reader_rejects_empty_file);
    tcase_add_test(t, reader_rejects_bad_magic);
    tcase_add_test(t, reader_names_compressed_data_in_place_of_a_header);
    tcase_add_loop_test(t, reader_rejects_identifier_sizes_other_than_4_and_8, 0, 4);
    tcase_add_test(t, reader_accepts_a_file_that_is_only_a_header);
    tcase_add_loop_test(t, reader_rejects_every_truncation_with_an_offset, 0, 2);
    tcase_add_test(t, reader_rejects_unknown_top_level_tag_naming_tag_and_offset);
    tcase_add_test(t, reader_names_a_second_dump_header_as_files_joined);
    tcase_add_test(t, reader_checks_fixed_record_layouts);
    tcase_add_test(t, reader_rejects_a_heap_dump_inside_open_segments);
    tcase_add_test(t, reader_rejects_unknown_sub_tag_naming_tag_and_offset);
    tcase_add_test(t, reader_rejects_record_length_past_end_of_file);
    tcase_add_test(t, reader_rejects_sub_record_crossing_its_segment);
    tcase_add_test(t, reader_rejects_array_count_larger_than_its_segment);
    tcase_add_test(t, reader_rejects_invalid_array_element_type);
    tcase_add_loop_test(t, reader_delivers_large_arrays_in_whole_element_chunks, 0, 2);
    tcase_add_loop_test(t, reader_through_a_mapping_sees_what_pread_sees, 0, TL_N_FIXTURES);
    tcase_add_test(t, reader_through_a_mapping_runs_again_from_the_start);
    tcase_add_test(t, reader_through_a_mapping_skips_segments_without_mapping_them);
    tcase_add_loop_test(t, reader_with_a_readahead_thread_sees_what_it_sees_without, 0,
                        TL_N_FIXTURES);
    tcase_add_test(t, readahead_thread_maps_the_pages_ahead_of_the_reader_within_a_bound);
    tcase_add_test(t, reader_without_a_readahead_thread_maps_only_what_it_reads);
    tcase_add_loop_test(t, reader_reads_ahead_only_when_given_two_threads_or_more, 0,
                        sizeof ahead_threads / sizeof ahead_threads[0]);
    tcase_add_test(t, readahead_thread_keeps_ahead_inside_a_large_array);
    tcase_add_test(t, readahead_thread_gives_back_what_it_maps_behind_the_reader);
    tcase_add_test(t, reader_of_memory_cannot_be_mapped);
    tcase_add_test(t, reader_skips_a_segment_when_heap_begin_says_skip);
    tcase_add_test(t, reader_says_where_a_visitor_ran_out_of_memory);
    tcase_add_loop_test(t, reader_goes_on_where_a_skipping_visitor_says, 0, 2);
    tcase_add_test(t, reader_runs_again_from_the_start);
    tcase_add_test(t, reader_reads_android_only_sub_records);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(reader_suite());
}
