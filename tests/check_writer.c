/*
 * check_writer.c - the writer and sinks: round trips keep every record (byte
 * for byte where segment boundaries are unchanged), segments are bounded and
 * never empty, HEAP_DUMP_INFO follows splits, gzip output is the JDK's,
 * zstd output is one frame whose bytes do not depend on the thread count.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "sink_private.h"
#include "writer_private.h"
#include "testlib.h"

/* Top-level records of a dump in memory: count by tag, largest segment. */
struct walk {
    unsigned by_tag[256];
    uint32_t largest_segment;
    int empty_segments;
    int ok;
};

static struct walk walk(const uint8_t *d, size_t len)
{
    struct walk w;
    memset(&w, 0, sizeof w);
    size_t at = strlen((const char *)d) + 1 + 12;
    while (at + 9 <= len) {
        uint32_t n = (uint32_t)d[at + 5] << 24 | d[at + 6] << 16 | d[at + 7] << 8 | d[at + 8];
        w.by_tag[d[at]]++;
        if (d[at] == HPROF_TAG_HEAP_DUMP_SEGMENT) {
            if (n > w.largest_segment)
                w.largest_segment = n;
            w.empty_segments += n == 0;
        }
        at += 9 + (size_t)n;
    }
    w.ok = at == len;
    return w;
}

static char *synth(const char *args)
{
    char *path = tl_temp_path(".hprof");
    char *tool = tl_tool("hprof-synth");
    ck_assert_int_eq(tl_system("%s %s -f %s", tool, args, path), 0);
    free(tool);
    return path;
}

static void assert_same_records(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    struct tl_canon ca, cb;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(tl_canon_memory(a, alen, &ca, &err), HPROF_OK);
    ck_assert_int_eq(tl_canon_memory(b, blen, &cb, &err), HPROF_OK);
    ck_assert_uint_eq(ca.records, cb.records);
    ck_assert_uint_eq(ca.sub_records, cb.sub_records);
    ck_assert_mem_eq(ca.md5, cb.md5, 16);
}

static const char *const synth_modes[] = { "--android", "--hotspot", "--android --scale 3" };

START_TEST(round_trip_of_generated_dumps_is_byte_identical)
{
    char *path = synth(synth_modes[_i]);
    size_t len, out_len;
    uint8_t *in = tl_read_file(path, &len), *out;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(tl_roundtrip_memory(in, len, 0, &out, &out_len, &err), HPROF_OK);
    ck_assert_uint_eq(out_len, len);
    ck_assert_mem_eq(out, in, len);
    free(in);
    free(out);
    unlink(path);
    free(path);
}
END_TEST

/* Real runtimes' dumps: the same records and sub-records, the same bytes in
 * every body.  The HotSpot ones are byte-identical (the 1.0.1 one keeps its
 * one HEAP_DUMP record, with no HEAP_DUMP_END); the ART one loses its
 * zero-length segments (VisualVM rejects them). */
static const char *const shared[] = {
    "../shared/fixtures/art-ahat-test-dump.hprof",
    "../shared/fixtures/hotspot-1.0.2-test1.hprof",
    "../shared/fixtures/hotspot-jdk6-x32-1.0.1.hprof",
    "fixtures/hotspot-fixture.hprof.gz",
};

START_TEST(round_trip_keeps_every_record_of_real_dumps)
{
    if (_i < 3 && !tl_have_shared_fixtures()) {
        printf("note: ../shared/fixtures absent, %s not tried\n", shared[_i]);
        return;
    }
    char *plain = tl_temp_path(".hprof");
    ck_assert_int_eq(tl_system("gzip -dcf %s > %s", shared[_i], plain), 0);
    size_t len, out_len;
    uint8_t *in = tl_read_file(plain, &len), *out;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(tl_roundtrip_memory(in, len, 0, &out, &out_len, &err), HPROF_OK);
    assert_same_records(in, len, out, out_len);
    struct walk w = walk(out, out_len);
    ck_assert(w.ok);
    ck_assert_int_eq(w.empty_segments, 0);
    if (_i == 2) { /* JAVA PROFILE 1.0.1 */
        ck_assert_uint_eq(w.by_tag[HPROF_TAG_HEAP_DUMP], 1);
        ck_assert_uint_eq(w.by_tag[HPROF_TAG_HEAP_DUMP_SEGMENT], 0);
        ck_assert_uint_eq(w.by_tag[HPROF_TAG_HEAP_DUMP_END], 0);
    } else {
        ck_assert_uint_eq(w.by_tag[HPROF_TAG_HEAP_DUMP], 0);
        ck_assert_uint_ge(w.by_tag[HPROF_TAG_HEAP_DUMP_END], 1);
    }
    if (_i != 0) {
        ck_assert_uint_eq(out_len, len);
        ck_assert_mem_eq(out, in, len);
    }
    free(in);
    free(out);
    unlink(plain);
    free(plain);
}
END_TEST

/* With a small limit, segments are split (never beyond the limit unless one
 * sub-record alone is bigger) and every object keeps its heap: the canonical
 * digest pairs each sub-record with the heap of its segment. */
START_TEST(writer_splits_segments_at_the_limit_and_repeats_heap_info)
{
    static const uint32_t limits[] = { 64, 4096, 100000 };
    char *path = synth("--android");
    size_t len, out_len;
    uint8_t *in = tl_read_file(path, &len), *out;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(tl_roundtrip_memory(in, len, limits[_i], &out, &out_len, &err), HPROF_OK);
    assert_same_records(in, len, out, out_len);
    struct walk before = walk(in, len), after = walk(out, out_len);
    ck_assert(after.ok);
    ck_assert_uint_gt(after.by_tag[HPROF_TAG_HEAP_DUMP_SEGMENT],
                      before.by_tag[HPROF_TAG_HEAP_DUMP_SEGMENT]);
    ck_assert_int_eq(after.empty_segments, 0);
    ck_assert_uint_eq(after.by_tag[HPROF_TAG_HEAP_DUMP_END], 1);
    /* only the big bitmap's pixels exceed the limit, in a segment of its own */
    if (limits[_i] >= 100000)
        ck_assert_uint_le(after.largest_segment, 2621440 + 64);
    free(in);
    free(out);
    unlink(path);
    free(path);
}
END_TEST

START_TEST(writer_never_writes_an_empty_segment)
{
    struct tbuf b;
    size_t out_len;
    uint8_t *out;
    struct hprof_error err = { 0 };
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_segment_end(&b);                 /* empty, as ART sometimes writes */
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_u1(&b, HPROF_HEAP_DUMP_INFO);    /* an info with nothing after it */
    tb_u4(&b, 'Z');
    tb_id(&b, 0x10);
    tb_segment_end(&b);
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_u1(&b, HPROF_ROOT_UNKNOWN);
    tb_id(&b, 0x20);
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    ck_assert_int_eq(tl_roundtrip_memory(b.data, b.len, 0, &out, &out_len, &err), HPROF_OK);
    struct walk w = walk(out, out_len);
    ck_assert_uint_eq(w.by_tag[HPROF_TAG_HEAP_DUMP_SEGMENT], 1);
    ck_assert_int_eq(w.empty_segments, 0);
    ck_assert_uint_eq(out_len, 31 + 9 + 5 + 9);
    free(out);
    tb_free(&b);
}
END_TEST

/* A run of segments is one heap dump until its END, also with other
 * records between its segments: a top-level record does not end it (an
 * END there would make two dumps of one), and a run the input never ends
 * gets its one END at the end. */
START_TEST(writer_keeps_a_run_open_across_top_level_records_and_ends_it_once)
{
    struct tbuf b;
    size_t out_len;
    uint8_t *out;
    struct hprof_error err = { 0 };
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.2");
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_u1(&b, HPROF_ROOT_UNKNOWN);
    tb_id(&b, 0x20);
    tb_segment_end(&b);
    tb_string(&b, 0x30, "after");
    ck_assert_int_eq(tl_roundtrip_memory(b.data, b.len, 0, &out, &out_len, &err), HPROF_OK);
    const uint8_t *p = out + 31;
    ck_assert_uint_eq(p[0], HPROF_TAG_HEAP_DUMP_SEGMENT);
    ck_assert_uint_eq(p[14], HPROF_TAG_STRING);
    ck_assert_uint_eq(p[14 + 9 + 4 + 5], HPROF_TAG_HEAP_DUMP_END);
    ck_assert_uint_eq(out_len, 31 + 14 + 9 + 4 + 5 + 9);
    free(out);
    tb_free(&b);
}
END_TEST

START_TEST(writer_rejects_an_array_whose_chunks_stop_short)
{
    struct hprof_error err = { 0 };
    struct hprof_sink *sink = hprof_sink_new_memory(&err);
    struct hprof_writer *w = hprof_writer_new(sink, &err);
    struct hprof_visitor *v = hprof_writer_visitor(w);
    struct hprof_header h = { "JAVA PROFILE 1.0.3", 4, 0, 0 };
    struct hprof_segment seg = { .tag = HPROF_TAG_HEAP_DUMP_SEGMENT };
    struct hprof_primitive_array a = { .tag = HPROF_PRIMITIVE_ARRAY_DUMP, .id = 0x10,
                                       .count = 4, .type = HPROF_TYPE_INT, .length = 8,
                                       .data = (const uint8_t *)"abcdefgh" };
    ck_assert_int_eq(hprof_visit_header(v, &h), HPROF_OK);
    ck_assert_int_eq(hprof_visit_heap_begin(v, &seg), HPROF_OK);
    ck_assert_int_eq(hprof_visit_primitive_array(v, &a), HPROF_OK);
    ck_assert_int_eq(hprof_visit_heap_end(v, &seg), HPROF_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(err.message, "ended 8 bytes early"));
    hprof_writer_free(w);
    hprof_sink_free(sink);
}
END_TEST

/* gzip output: 1 MiB members, the first commented, gunzip gives the bytes;
 * the same bytes for 1, 2 and 5 threads; with each deflate backend built. */
static const unsigned gzip_threads[] = { 1, 2, 5 };
static const enum gzip_backend backends[] = {
    GZIP_ZLIB,
#ifdef HPROF_WITH_LIBDEFLATE
    GZIP_LIBDEFLATE,
#endif
};
#define N_BACKENDS (sizeof backends / sizeof backends[0])


/* Inflate gzip members one at a time into `plain` (`cap` bytes), checking
 * that none holds more than a block.  @return the bytes restored. */
static size_t gunzip_members(const uint8_t *z, size_t zlen, uint8_t *plain, size_t cap,
                             int *members)
{
    z_stream st;
    size_t at = 0, got = 0;
    memset(&st, 0, sizeof st);
    *members = 0;
    while (at < zlen) {
        ck_assert_int_eq(inflateInit2(&st, 15 + 16), Z_OK);
        st.next_in = (Bytef *)z + at;
        st.avail_in = (uInt)(zlen - at);
        st.next_out = plain + got;
        st.avail_out = (uInt)(cap - got);
        ck_assert_int_eq(inflate(&st, Z_FINISH), Z_STREAM_END);
        ck_assert_uint_le(st.total_out, HPROF_GZIP_BLOCK);
        at += st.total_in;
        got += st.total_out;
        inflateEnd(&st);
        (*members)++;
    }
    return got;
}

START_TEST(gzip_sink_writes_jdk_style_members_that_gunzip_exactly)
{
    size_t len = 3 * HPROF_GZIP_BLOCK + 12345;
    uint8_t *data = malloc(len);
    for (size_t i = 0; i < len; i++)
        data[i] = (uint8_t)(i * 7 + i / 1000);
    char *path = tl_temp_path(".gz");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = gzip_sink_new(fd, 1, gzip_threads[_i % 3], backends[_i / 3], &err);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(hprof_sink_write(s, data, 1000), HPROF_OK);
    ck_assert_int_eq(hprof_sink_write(s, data + 1000, len - 1000), HPROF_OK);
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    ck_assert_uint_eq(hprof_sink_bytes(s), len);
    hprof_sink_free(s);
    close(fd);

    size_t zlen;
    uint8_t *z = tl_read_file(path, &zlen);
    ck_assert_uint_eq(z[0], 0x1f);
    ck_assert_uint_eq(z[1], 0x8b);
    ck_assert_uint_eq(z[3] & 0x10, 0x10); /* FCOMMENT */
    ck_assert_mem_eq(z + 10, "HPROF BLOCKSIZE=1048576", 24);
    uint8_t *plain = malloc(len);
    int members;
    size_t got = gunzip_members(z, zlen, plain, len, &members);
    ck_assert_int_eq(members, 4);
    ck_assert_uint_eq(got, len);
    ck_assert_mem_eq(plain, data, len);
    ck_assert_int_eq(tl_system("gzip -t %s", path), 0);
    free(plain);
    free(z);
    free(data);
    unlink(path);
    free(path);
}
END_TEST

/* The bytes of the temporary file `path`, which is then removed (and `path`
 * freed). */
static uint8_t *read_back(char *path, size_t *len)
{
    uint8_t *data = tl_read_file(path, len);
    unlink(path);
    free(path);
    return data;
}

static uint8_t *gzip_memory(const uint8_t *data, size_t len, int level, unsigned threads,
                            enum gzip_backend backend, size_t *zlen)
{
    char *path = tl_temp_path(".gz");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = gzip_sink_new(fd, level, threads, backend, &err);
    ck_assert_ptr_nonnull(s);
    for (size_t at = 0; at < len; at += 77777)
        ck_assert_int_eq(hprof_sink_write(s, data + at, len - at < 77777 ? len - at : 77777),
                         HPROF_OK);
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    hprof_sink_free(s);
    close(fd);
    return read_back(path, zlen);
}

START_TEST(gzip_output_is_the_same_for_every_thread_count)
{
    size_t len = 9 * HPROF_GZIP_BLOCK + 999, one_len, many_len;
    uint8_t *data = malloc(len);
    for (size_t i = 0; i < len; i++)
        data[i] = (uint8_t)(i / 3 + (i >> 12));
    int level = 6 /* gzip's default */;
    uint8_t *one = gzip_memory(data, len, level, 1, backends[_i], &one_len);
    for (unsigned threads = 2; threads <= 8; threads += 3) {
        uint8_t *many = gzip_memory(data, len, level, threads, backends[_i], &many_len);
        ck_assert_uint_eq(many_len, one_len);
        ck_assert_mem_eq(many, one, one_len);
        free(many);
    }
    free(one);
    free(data);
}
END_TEST

/* Random bytes do not compress: a member may be a little larger than its
 * block, and must still fit and gunzip, at the fastest and best levels. */
START_TEST(gzip_members_of_incompressible_data_fit_and_gunzip)
{
    size_t len = 2 * HPROF_GZIP_BLOCK + 5, zlen;
    uint8_t *data = malloc(len);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data[i] = (uint8_t)x;
    }
    for (int level = 1; level <= 9; level += 8) {
        uint8_t *z = gzip_memory(data, len, level, 2, backends[_i], &zlen);
        ck_assert_uint_gt(zlen, len);
        uint8_t *plain = malloc(len);
        int members;
        ck_assert_uint_eq(gunzip_members(z, zlen, plain, len, &members), len);
        ck_assert_int_eq(members, 3);
        ck_assert_mem_eq(plain, data, len);
        free(plain);
        free(z);
    }
    free(data);
}
END_TEST

/* hprof_sink_new_gzip() deflates every level with a backend whose bytes
 * are the same on every machine: libdeflate where built, else zlib; never
 * ISA-L, whose level 1 chooses its code (and so its bytes) by CPU. */
#ifdef HPROF_WITH_LIBDEFLATE
#define DETERMINISTIC_BUILT GZIP_LIBDEFLATE
#else
#define DETERMINISTIC_BUILT GZIP_ZLIB
#endif

START_TEST(gzip_sink_deflates_every_level_with_a_backend_whose_bytes_are_the_same_everywhere)
{
    int level = _i == 0 ? 1 : 6;
    enum gzip_backend expected = DETERMINISTIC_BUILT;
    size_t len = HPROF_GZIP_BLOCK + 4321, chosen_len, expected_len;
    uint8_t *data = malloc(len);
    for (size_t i = 0; i < len; i++)
        data[i] = (uint8_t)(i % 251 + (i >> 9));

    char *path = tl_temp_path(".gz");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = hprof_sink_new_gzip(fd, level, 2, &err);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(hprof_sink_write(s, data, len), HPROF_OK);
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    hprof_sink_free(s);
    close(fd);
    uint8_t *chosen = tl_read_file(path, &chosen_len);
    uint8_t *direct = gzip_memory(data, len, level, 2, expected, &expected_len);
    ck_assert_uint_eq(chosen_len, expected_len);
    ck_assert_mem_eq(chosen, direct, chosen_len);
    free(direct);
    free(chosen);
    unlink(path);
    free(path);
    free(data);
}
END_TEST

/* Bytes that compress, but not to nothing, across several of libzstd's
 * jobs (8 MiB at level 3). */
static uint8_t *zstd_test_data(size_t len)
{
    uint8_t *data = malloc(len);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data[i] = (i >> 10) % 3 == 0 ? (uint8_t)x : (uint8_t)(i / 7 + (i >> 13));
    }
    return data;
}

static uint8_t *zstd_memory(const uint8_t *data, size_t len, int level, unsigned threads,
                            size_t *zlen)
{
    char *path = tl_temp_path(".zst");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = hprof_sink_new_zstd(fd, level, threads, &err);
    ck_assert_msg(s != NULL, "%s", err.message);
    for (size_t at = 0; at < len;) { /* small writes, and some past the room */
        size_t n = at % 5 == 0 ? 300000 : 777;
        n = len - at < n ? len - at : n;
        ck_assert_int_eq(hprof_sink_write(s, data + at, n), HPROF_OK);
        at += n;
    }
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    ck_assert_uint_eq(hprof_sink_bytes(s), len);
    hprof_sink_free(s);
    close(fd);
    return read_back(path, zlen);
}

/* Decompress one zstd frame with libzstd; @return its size (the frame
 * must be all of `z`, with a checksum that matches). */
static size_t unzstd(const uint8_t *z, size_t zlen, uint8_t *plain, size_t cap)
{
    static const uint8_t magic[] = { 0x28, 0xb5, 0x2f, 0xfd };
    ck_assert_uint_gt(zlen, 5);
    ck_assert_mem_eq(z, magic, 4);
    ck_assert_uint_eq(z[4] >> 2 & 1, 1); /* Content_Checksum_flag */
    ck_assert_uint_eq(ZSTD_findFrameCompressedSize(z, zlen), zlen);
    ZSTD_DStream *d = ZSTD_createDStream();
    ZSTD_inBuffer in = { z, zlen, 0 };
    ZSTD_outBuffer out = { plain, cap, 0 };
    size_t left = 1;
    while (left != 0 && !ZSTD_isError(left) && (in.pos < in.size || out.pos < out.size))
        left = ZSTD_decompressStream(d, &out, &in);
    ck_assert_msg(!ZSTD_isError(left), "%s", ZSTD_getErrorName(left));
    ck_assert_uint_eq(left, 0);
    ZSTD_freeDStream(d);
    return out.pos;
}

START_TEST(zstd_sink_writes_one_checksummed_frame_that_decompresses_exactly)
{
    size_t len = 20u << 20, zlen;
    uint8_t *data = zstd_test_data(len), *plain = malloc(len + 1);
    uint8_t *z = zstd_memory(data, len, HPROF_ZSTD_LEVEL_DEFAULT, 2, &zlen);
    ck_assert_uint_lt(zlen, len / 2);
    ck_assert_uint_eq(unzstd(z, zlen, plain, len + 1), len);
    ck_assert_mem_eq(plain, data, len);
    free(z);
    z = zstd_memory(data, 0, 1, 1, &zlen); /* nothing written: still a frame */
    ck_assert_uint_eq(unzstd(z, zlen, plain, len), 0);
    free(z);
    free(plain);
    free(data);
}
END_TEST

/* libzstd's single-threaded mode writes other bytes than its workers do;
 * -j1 must write those of -j4. */
START_TEST(zstd_output_is_the_same_for_every_thread_count)
{
    static const int levels[] = { 1, HPROF_ZSTD_LEVEL_DEFAULT };
    size_t len = 40u << 20, one_len, many_len;
    uint8_t *data = zstd_test_data(len);
    uint8_t *one = zstd_memory(data, len, levels[_i], 1, &one_len);
    for (unsigned threads = 2; threads <= 4; threads += 2) {
        uint8_t *many = zstd_memory(data, len, levels[_i], threads, &many_len);
        ck_assert_uint_eq(many_len, one_len);
        ck_assert_mem_eq(many, one, one_len);
        free(many);
    }
    free(one);
    free(data);
}
END_TEST

START_TEST(zstd_sink_refuses_levels_out_of_range)
{
    struct hprof_error err = { 0 };
    ck_assert_ptr_null(hprof_sink_new_zstd(1, 0, 1, &err));
    ck_assert_int_eq(err.code, HPROF_ERR_USAGE);
    memset(&err, 0, sizeof err);
    ck_assert_ptr_null(hprof_sink_new_zstd(1, HPROF_ZSTD_LEVEL_MAX + 1, 1, &err));
    ck_assert_ptr_nonnull(strstr(err.message, "zstd level 20"));
}
END_TEST

START_TEST(fd_sink_reports_a_full_disk)
{
    struct hprof_error err = { 0 };
    int fd = open("/dev/full", O_WRONLY);
    ck_assert_int_ge(fd, 0);
    struct hprof_sink *s = hprof_sink_new_fd(fd, &err);
    uint8_t block[4096] = { 0 };
    int rc = HPROF_OK;
    for (int i = 0; i < 1024 && rc == HPROF_OK; i++)
        rc = hprof_sink_write(s, block, sizeof block);
    if (rc == HPROF_OK)
        rc = hprof_sink_finish(s);
    ck_assert_int_eq(rc, HPROF_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.message, "No space left on device"));
    hprof_sink_free(s);
    close(fd);
}
END_TEST

/* Small writes fill the fd sink's buffer inline; sizes that straddle it,
 * fill it exactly or skip it (big) must still land in order. */
START_TEST(fd_sink_writes_every_byte_in_order_across_its_buffer)
{
    size_t len = 5u << 20;
    uint8_t *data = malloc(len);
    for (size_t i = 0; i < len; i++)
        data[i] = (uint8_t)(i * 31 + (i >> 11));
    char *path = tl_temp_path(".bin");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = hprof_sink_new_fd(fd, &err);
    static const size_t sizes[] = { 1, 9, 17, 300, 4096, (1u << 20) - 77, 3, 65536, 1u << 20 };
    for (size_t at = 0, i = 0; at < len; i++) {
        size_t want = sizes[i % (sizeof sizes / sizeof sizes[0])];
        size_t n = want < len - at ? want : len - at;
        ck_assert_int_eq(hprof_sink_write(s, data + at, n), HPROF_OK);
        at += n;
    }
    ck_assert_uint_eq(hprof_sink_bytes(s), len);
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    hprof_sink_free(s);
    close(fd);
    size_t got_len;
    uint8_t *got = tl_read_file(path, &got_len);
    ck_assert_uint_eq(got_len, len);
    ck_assert_mem_eq(got, data, len);
    free(got);
    unlink(path);
    free(path);
    free(data);
}
END_TEST

/* Read back, a file opened for reading and writing gives every byte
 * written, whether it has reached the file or still waits in the sink's
 * buffer; a file opened write-only and a pipe cannot. */
START_TEST(fd_sink_reads_back_what_it_wrote_from_the_file_and_its_buffer)
{
    size_t len = 3u << 20;
    uint8_t *data = malloc(len), *back = malloc(len);
    for (size_t i = 0; i < len; i++)
        data[i] = (uint8_t)(i * 131 + (i >> 9));
    char *path = tl_temp_path(".bin");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = hprof_sink_new_fd(fd, &err);
    ck_assert(sink_can_read_back(s));
    for (size_t at = 0; at < len; at += 1000) /* ends in the buffer, not yet in the file */
        ck_assert_int_eq(hprof_sink_write(s, data + at, len - at < 1000 ? len - at : 1000),
                         HPROF_OK);
    static const size_t spans[][2] = { { 0, 1 }, { 12345, 70000 }, { 0, 3u << 20 },
                                       { (3u << 20) - 5000, 5000 }, { 1u << 20, 1u << 20 } };
    for (size_t i = 0; i < sizeof spans / sizeof spans[0]; i++) {
        memset(back, 0, spans[i][1]);
        ck_assert_int_eq(sink_read_back(s, spans[i][0], back, spans[i][1]), HPROF_OK);
        ck_assert_mem_eq(back, data + spans[i][0], spans[i][1]);
    }
    ck_assert_int_eq(sink_read_back(s, len - 10, back, 11), HPROF_ERR_USAGE);
    hprof_sink_free(s);
    close(fd);

    fd = open(path, O_WRONLY);
    s = hprof_sink_new_fd(fd, &err);
    ck_assert(!sink_can_read_back(s));
    hprof_sink_free(s);
    close(fd);
    int ends[2];
    ck_assert_int_eq(pipe(ends), 0);
    s = hprof_sink_new_fd(ends[1], &err);
    ck_assert(!sink_can_read_back(s));
    hprof_sink_free(s);
    close(ends[0]);
    close(ends[1]);
    unlink(path);
    free(path);
    free(data);
    free(back);
}
END_TEST

START_TEST(fd_sink_refuses_even_small_writes_once_failed_or_finished)
{
    struct hprof_error err = { 0 };
    int fd = open("/dev/full", O_WRONLY);
    struct hprof_sink *s = hprof_sink_new_fd(fd, &err);
    ck_assert_int_eq(hprof_sink_write(s, "x", 1), HPROF_OK); /* buffered */
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_ERR_IO);
    ck_assert_int_eq(hprof_sink_write(s, "y", 1), HPROF_ERR_USAGE);
    ck_assert_int_eq(sink_put(s, "y", 1), HPROF_ERR_USAGE); /* the writer's inline way */
    ck_assert_int_eq(err.code, HPROF_ERR_IO); /* the first error is the one reported */
    ck_assert_uint_eq(hprof_sink_bytes(s), 1);
    hprof_sink_free(s);
    close(fd);

    struct hprof_error err2 = { 0 };
    fd = open("/dev/null", O_WRONLY);
    s = hprof_sink_new_fd(fd, &err2);
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    ck_assert_int_eq(sink_put(s, "z", 1), HPROF_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(err2.message, "finished sink"));
    ck_assert_int_eq(hprof_sink_write(s, "z", 1), HPROF_ERR_USAGE);
    ck_assert_uint_eq(hprof_sink_bytes(s), 0);
    hprof_sink_free(s);
    close(fd);
}
END_TEST

/* Byte `i` of a pattern in which no run of bytes repeats at another
 * offset (so bytes read from the wrong place do not pass for the right
 * ones) and which deflate cannot shrink. */
static uint8_t pattern_byte(size_t i)
{
    return (uint8_t)((uint32_t)(i * 2654435761u) >> 21 ^ i >> 12);
}

/* A file of `len` pattern bytes (its path, to free); *data gets them. */
static char *pattern_file(size_t len, uint8_t **data)
{
    *data = malloc(len);
    for (size_t i = 0; i < len; i++)
        (*data)[i] = pattern_byte(i);
    char *path = tl_temp_file(*data, len, ".bin");
    return path;
}

/* The input and output files of a copy test, gone. */
static void remove_files(char *in, char *out)
{
    unlink(in);
    unlink(out);
    free(in);
    free(out);
}

/* sink_copy() into a file reads from the input file, between buffered
 * writes, in order, a range longer than the sink's buffer included.  The
 * bytes passed along are zeros here, so the output shows which way each
 * range went: from the file. */
START_TEST(fd_sink_copies_file_ranges_between_its_writes)
{
    size_t len = 3u << 20;
    const size_t BIG = (1u << 20) + 4099;
    uint8_t *data, *zeros = calloc(1, len);
    char *in = pattern_file(len, &data), *out = tl_temp_path(".bin");
    int in_fd = open(in, O_RDONLY), out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = hprof_sink_new_fd(out_fd, &err);
    ck_assert(sink_can_copy(s));
    ck_assert_int_eq(hprof_sink_write(s, "head", 4), HPROF_OK);
    ck_assert_int_eq(sink_copy(s, in_fd, 100, zeros, BIG, 0), HPROF_OK);
    ck_assert_int_eq(hprof_sink_write(s, "mid", 3), HPROF_OK);
    ck_assert_int_eq(sink_copy(s, in_fd, 2u << 20, zeros, 65536, 0), HPROF_OK);
    ck_assert_uint_eq(hprof_sink_bytes(s), 4 + BIG + 3 + 65536);
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    hprof_sink_free(s);
    close(out_fd);
    size_t got_len;
    uint8_t *got = tl_read_file(out, &got_len);
    ck_assert_uint_eq(got_len, 4 + BIG + 3 + 65536);
    ck_assert_mem_eq(got, "head", 4);
    ck_assert_mem_eq(got + 4, data + 100, BIG);
    ck_assert_mem_eq(got + 4 + BIG, "mid", 3);
    ck_assert_mem_eq(got + 7 + BIG, data + (2u << 20), 65536);
    close(in_fd);
    remove_files(in, out);
    free(got);
    free(data);
    free(zeros);
}
END_TEST

/* Reading ahead, an array copied in parts, each saying how much follows,
 * comes out as it is in the file, all but its first part from reads made
 * ahead; so do a copy whose hint was wrong (the next copy is of other
 * bytes), that next copy, and one longer than a read made ahead for it. */
/* Run twice: on an output opened write-only, and opened for reading too
 * (as the CLI's temporary file is), which can also be read back. */
START_TEST(fd_sink_reading_ahead_copies_every_part_in_order)
{
    size_t len = 7u << 20, part = 1u << 20, total = 0;
    uint8_t *data, *zeros = calloc(1, len);
    char *in = pattern_file(len, &data), *out = tl_temp_path(".bin");
    int in_fd = open(in, O_RDONLY);
    int out_fd = open(out, (_i ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC, 0600);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = hprof_sink_new_fd(out_fd, &err);
    ck_assert(sink_copy_ahead(s, 1));
    /* an array of 3.5 parts at byte 77 */
    size_t array = 3 * part + part / 2;
    for (size_t at = 0; at < array; at += part) {
        size_t n = array - at < part ? array - at : part;
        ck_assert_int_eq(sink_copy(s, in_fd, 77 + at, zeros, n, array - at - n), HPROF_OK);
        total += n;
    }
    ck_assert_uint_eq(sink_copied_ahead(s), array - part);
    ck_assert_int_eq(hprof_sink_write(s, "mid", 3), HPROF_OK);
    /* says 1 MiB follows at 4 MiB + 100, then copies from 5 MiB */
    ck_assert_int_eq(sink_copy(s, in_fd, 4u << 20, zeros, 100, part), HPROF_OK);
    ck_assert_int_eq(sink_copy(s, in_fd, 5u << 20, zeros, 70000, 70000), HPROF_OK);
    ck_assert_uint_eq(sink_copied_ahead(s), array - part);
    /* 70000 bytes were read ahead for a copy of 1 MiB: the rest is read then */
    ck_assert_int_eq(sink_copy(s, in_fd, (5u << 20) + 70000, zeros, part, 0), HPROF_OK);
    ck_assert_uint_eq(sink_copied_ahead(s), array - part + 70000);
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    hprof_sink_free(s);
    close(out_fd);
    size_t got_len;
    uint8_t *got = tl_read_file(out, &got_len);
    ck_assert_uint_eq(got_len, total + 3 + 100 + 70000 + part);
    ck_assert_mem_eq(got, data + 77, array);
    ck_assert_mem_eq(got + array, "mid", 3);
    ck_assert_mem_eq(got + array + 3, data + (4u << 20), 100);
    ck_assert_mem_eq(got + array + 103, data + (5u << 20), 70000 + part);
    close(in_fd);
    remove_files(in, out);
    free(got);
    free(data);
    free(zeros);
}
END_TEST

/* A read made ahead that fails fails the copy that needed it, naming its
 * first byte.  The input is this process's memory (/proc/self/mem): a
 * page that reads, then one that is not mapped while it is read ahead,
 * and is by the time the copy of it comes. */
START_TEST(fd_sink_reading_ahead_says_where_a_read_failed)
{
    int mem = open("/proc/self/mem", O_RDONLY);
    ck_assert_int_ge(mem, 0);
    char *out = tl_temp_path(".bin");
    int out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = hprof_sink_new_fd(out_fd, &err);
    ck_assert(sink_copy_ahead(s, 1));
    /* last, so that nothing allocated since can be given the hole */
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *two = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(two, MAP_FAILED);
    memset(two, 0x42, (size_t)page);
    ck_assert_int_eq(munmap(two + page, (size_t)page), 0);
    uint64_t at = (uintptr_t)two;
    ck_assert_int_eq(sink_copy(s, mem, at, two, (size_t)page, (uint64_t)page), HPROF_OK);
    ck_assert_uint_eq(sink_copied_ahead(s), 0); /* the read of the hole is done */
    /* the hole mapped again: only the read made before can fail now */
    ck_assert_ptr_eq(mmap(two + page, (size_t)page, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), two + page);
    ck_assert_int_eq(sink_copy(s, mem, at + (uint64_t)page, two, (size_t)page, 0), HPROF_ERR_IO);
    char want[96];
    snprintf(want, sizeof want, "read at byte %llu: Input/output error",
             (unsigned long long)(at + (uint64_t)page));
    ck_assert_str_eq(err.message, want);
    hprof_sink_free(s);
    close(out_fd);
    close(mem);
    munmap(two, 2 * (size_t)page);
    unlink(out);
    free(out);
}
END_TEST

/* Where the file cannot give it all (here: it ends first), the rest comes
 * from the bytes passed along; a pipe never offers the copy. */
START_TEST(fd_sink_copy_falls_back_to_the_bytes_it_was_given)
{
    size_t len = 1u << 20;
    uint8_t *data, *given = malloc(len);
    memset(given, 0xab, len);
    char *in = pattern_file(len, &data), *out = tl_temp_path(".bin");
    int in_fd = open(in, O_RDONLY), out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = hprof_sink_new_fd(out_fd, &err);
    ck_assert_int_eq(sink_copy(s, in_fd, len - 1000, given, 5000, 0), HPROF_OK);
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    hprof_sink_free(s);
    close(out_fd);
    size_t got_len;
    uint8_t *got = tl_read_file(out, &got_len);
    ck_assert_uint_eq(got_len, 5000);
    ck_assert_mem_eq(got, data + len - 1000, 1000);
    ck_assert_mem_eq(got + 1000, given + 1000, 4000);
    free(got);

    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    s = hprof_sink_new_fd(p[1], &err);
    ck_assert(!sink_can_copy(s));
    ck_assert_int_eq(sink_copy(s, in_fd, 0, given, 4000, 0), HPROF_OK);
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    hprof_sink_free(s);
    close(p[1]);
    uint8_t back[4001];
    size_t n = 0;
    ssize_t k;
    while ((k = read(p[0], back + n, sizeof back - n)) > 0)
        n += (size_t)k;
    ck_assert_uint_eq(n, 4000);
    ck_assert_mem_eq(back, given, 4000);
    close(p[0]);
    close(in_fd);
    remove_files(in, out);
    free(data);
    free(given);
}
END_TEST

/* A read of the input file that fails (here: a descriptor open only for
 * writing) fails the copy, naming the byte where it failed. */
START_TEST(fd_sink_copy_says_where_a_read_of_the_input_failed)
{
    size_t len = 1u << 16;
    uint8_t *data;
    char *in = pattern_file(len, &data), *out = tl_temp_path(".bin");
    int in_fd = open(in, O_WRONLY), out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = hprof_sink_new_fd(out_fd, &err);
    ck_assert_int_eq(sink_copy(s, in_fd, 4096, data + 4096, 1000, 0), HPROF_ERR_IO);
    ck_assert_str_eq(err.message, "read at byte 4096: Bad file descriptor");
    hprof_sink_free(s);
    close(out_fd);
    close(in_fd);
    remove_files(in, out);
    free(data);
}
END_TEST

/* Writes `blocks` blocks of 1 MiB to `fd` through a sink asking for
 * writeback every `step` bytes; returns how many times it asked. */
static uint64_t writebacks_for(int fd, unsigned blocks, uint64_t step)
{
    static uint8_t block[1u << 20];
    memset(block, 0x5a, sizeof block);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = hprof_sink_new_fd(fd, &err);
    hprof_sink_set_writeback(s, step);
    for (unsigned i = 0; i < blocks; i++)
        ck_assert_int_eq(hprof_sink_write(s, block, sizeof block), HPROF_OK);
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    uint64_t n = s->writebacks;
    hprof_sink_free(s);
    return n;
}

/* Blocks of 1 MiB reach the file 2 MiB at a time (the buffered one, then
 * the next, which is too big to buffer), so 5 of them with a step of
 * 2 MiB make two requests; the last 1 MiB is left to the final fsync. */
START_TEST(fd_sink_starts_writeback_once_per_step_written)
{
    char *path = tl_temp_path(".bin");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_uint_eq(writebacks_for(fd, 5, 2u << 20), 2);
    ck_assert_uint_eq(writebacks_for(fd, 5, 0), 0); /* the default: none */
    close(fd);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_size, 10 << 20);
    unlink(path);
    free(path);
}
END_TEST

/* A pipe whose reading end a child drains, counting: p[1] is the
 * caller's to write and close.  @return the child. */
static pid_t pipe_to_a_counter(int p[2])
{
    ck_assert_int_eq(pipe(p), 0);
    pid_t child = fork();
    if (child == 0) { /* drain, counting, and exit with the count in MiB */
        close(p[1]);
        static uint8_t buf[65536];
        size_t total = 0;
        ssize_t n;
        while ((n = read(p[0], buf, sizeof buf)) > 0)
            total += (size_t)n;
        _exit((int)(total >> 20));
    }
    close(p[0]);
    return child;
}

/* What the child of pipe_to_a_counter() read, in MiB, once it is done. */
static int mib_counted(pid_t child)
{
    int status;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* Bytes of `fd`'s file that are on disk or reserved (st_blocks). */
static uint64_t allocated_bytes(int fd)
{
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    return (uint64_t)st.st_blocks * 512;
}

static uint64_t file_size(int fd)
{
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    return (uint64_t)st.st_size;
}

/* 3 MiB and 10 bytes in 1 MiB writes with a step of 4 MiB: while it
 * writes, the file is as long as what it holds but has 4 MiB of blocks;
 * once finished, the blocks past its end are given back.  (The test's
 * TMPDIR must be on a file system with fallocate(): ext4, xfs, tmpfs.) */
START_TEST(fd_sink_reserves_blocks_ahead_and_gives_back_the_rest)
{
    static uint8_t block[1u << 20];
    size_t len = 0;
    char *path = tl_temp_path(".bin");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = hprof_sink_new_fd(fd, &err);
    hprof_sink_set_preallocate(s, 4u << 20);
    for (int i = 0; i < 3; i++) {
        memset(block, 'a' + i, sizeof block);
        ck_assert_int_eq(hprof_sink_write(s, block, sizeof block), HPROF_OK);
    }
    ck_assert_uint_eq(file_size(fd), 2u << 20); /* the third is in the room */
    ck_assert_msg(allocated_bytes(fd) >= 4u << 20, "%s: no blocks reserved (fallocate?)", path);
    ck_assert_int_eq(hprof_sink_write(s, "0123456789", 10), HPROF_OK);
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    hprof_sink_free(s);
    ck_assert_uint_eq(file_size(fd), (3u << 20) + 10);
    ck_assert_uint_le(allocated_bytes(fd), (3u << 20) + 65536);
    close(fd);
    uint8_t *data = tl_read_file(path, &len);
    ck_assert_uint_eq(data[0], 'a');
    ck_assert_uint_eq(data[(2u << 20) + 5], 'c');
    ck_assert_mem_eq(data + (3u << 20), "0123456789", 10);
    free(data);
    unlink(path);
    free(path);
}
END_TEST

/* A sink that starts inside a file writes over its bytes but reserves
 * nothing, while it writes or after: what lies past its writes stays. */
START_TEST(fd_sink_preallocating_inside_a_file_keeps_what_lies_past_its_writes)
{
    size_t len = 4u << 20, over = (1u << 20) + 4;
    uint8_t *data, *mine = malloc(over);
    memset(mine, 0x5a, over);
    char *path = pattern_file(len, &data);
    int fd = open(path, O_WRONLY);
    ck_assert_int_eq(lseek(fd, 4, SEEK_SET), 4);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = hprof_sink_new_fd(fd, &err);
    hprof_sink_set_preallocate(s, 8u << 20);
    ck_assert_int_eq(hprof_sink_write(s, mine, over), HPROF_OK); /* past the room: written now */
    ck_assert_uint_le(allocated_bytes(fd), len + 65536);
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    hprof_sink_free(s);
    ck_assert_uint_le(allocated_bytes(fd), len + 65536);
    close(fd);
    size_t got_len;
    uint8_t *got = tl_read_file(path, &got_len);
    ck_assert_uint_eq(got_len, len);
    ck_assert_mem_eq(got, data, 4);
    ck_assert_mem_eq(got + 4, mine, over);
    ck_assert_mem_eq(got + 4 + over, data + 4 + over, len - 4 - over);
    free(got);
    free(mine);
    free(data);
    unlink(path);
    free(path);
}
END_TEST

/* The gzip sink writes its members through the same reserve (held while
 * it writes: more members than its threads have slots are written before
 * the end), and gives back what is left of it when it ends the stream. */
START_TEST(gzip_sink_gives_back_its_reserve_when_it_finishes)
{
    size_t len = 8 * HPROF_GZIP_BLOCK + 777, zlen;
    uint8_t *data = malloc(len);
    for (size_t i = 0; i < len; i++) /* members about as long as their blocks */
        data[i] = pattern_byte(i);
    char *path = tl_temp_path(".gz");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = hprof_sink_new_gzip(fd, 1, 2, &err);
    hprof_sink_set_preallocate(s, 16u << 20);
    ck_assert_int_eq(hprof_sink_write(s, data, len), HPROF_OK);
    ck_assert_uint_gt(file_size(fd), 0);
    ck_assert_uint_ge(allocated_bytes(fd), 16u << 20);
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    hprof_sink_free(s);
    uint64_t size = file_size(fd);
    ck_assert_uint_le(allocated_bytes(fd), size + 65536);
    close(fd);
    uint8_t *z = tl_read_file(path, &zlen);
    ck_assert_uint_eq(zlen, size);
    uint8_t *plain = malloc(len);
    int members;
    ck_assert_uint_eq(gunzip_members(z, zlen, plain, len, &members), len);
    ck_assert_mem_eq(plain, data, len);
    free(plain);
    free(z);
    free(data);
    unlink(path);
    free(path);
}
END_TEST

/* A pipe has no blocks to reserve; the output must not notice. */
START_TEST(fd_sink_preallocating_on_a_pipe_loses_nothing)
{
    int p[2];
    pid_t child = pipe_to_a_counter(p);
    static uint8_t block[1u << 20];
    struct hprof_error err = { 0 };
    struct hprof_sink *s = hprof_sink_new_fd(p[1], &err);
    hprof_sink_set_preallocate(s, 1u << 20);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(hprof_sink_write(s, block, sizeof block), HPROF_OK);
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    hprof_sink_free(s);
    close(p[1]);
    ck_assert_int_eq(mib_counted(child), 3);
}
END_TEST

/* sync_file_range() fails on a pipe; the output must not. */
START_TEST(fd_sink_writeback_on_a_pipe_loses_nothing)
{
    int p[2];
    pid_t child = pipe_to_a_counter(p);
    ck_assert_uint_eq(writebacks_for(p[1], 4, 1u << 20), 4);
    close(p[1]);
    ck_assert_int_eq(mib_counted(child), 4);
}
END_TEST

/* A round trip of `in` through a writer into `fd` (through an fd sink:
 * streaming where the file can seek); `patched` says whether it could. */
static void round_trip_to_fd(const uint8_t *in, size_t len, uint32_t limit, int fd, int *patched)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    struct hprof_sink *sink = hprof_sink_new_fd(fd, &err);
    struct hprof_writer *w = hprof_writer_new(sink, &err);
    ck_assert_ptr_nonnull(w);
    *patched = sink_can_patch(sink);
    if (limit)
        ck_assert_int_eq(hprof_writer_set_segment_limit(w, limit), HPROF_OK);
    ck_assert_int_eq(hprof_reader_open_memory(&r, in, len, &err), HPROF_OK);
    ck_assert_msg(hprof_reader_run(r, hprof_writer_visitor(w)) == HPROF_OK, "%s", err.message);
    ck_assert_int_eq(hprof_sink_finish(sink), HPROF_OK);
    hprof_reader_free(r);
    hprof_writer_free(w);
    hprof_sink_free(sink);
}

/* A generated dump (`synth_args`) and its round trip in memory, which
 * buffers every segment. */
static uint8_t *dump_and_round_trip(const char *synth_args, uint32_t limit, size_t *len,
                                    uint8_t **want, size_t *want_len)
{
    char *path = synth(synth_args);
    uint8_t *in = tl_read_file(path, len);
    struct hprof_error err = { 0 };
    ck_assert_int_eq(tl_roundtrip_memory(in, *len, limit, want, want_len, &err), HPROF_OK);
    unlink(path);
    free(path);
    return in;
}

/* What a round trip of `in` writes into a file after `prefix`, the file
 * opened to append if `append`; *patched: whether its sink could patch. */
static uint8_t *round_trip_into_file(const uint8_t *in, size_t len, uint32_t limit,
                                     const char *prefix, int append, int *patched,
                                     size_t *out_len)
{
    char *out = tl_temp_path(".hprof");
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, prefix, strlen(prefix)), (ssize_t)strlen(prefix));
    if (append) {
        close(fd);
        fd = open(out, O_WRONLY | O_APPEND);
    }
    round_trip_to_fd(in, len, limit, fd, patched);
    close(fd);
    return read_back(out, out_len);
}

/* Into a file, the writer writes each segment as it goes and fills in its
 * length at the end (by pwrite once the header has left the sink's buffer,
 * as for the 2.6 MB bitmap's segment): the bytes are those it buffers. */
START_TEST(streaming_writer_writes_the_bytes_of_a_buffering_one)
{
    static const uint32_t limits[] = { 0, 64, 4096, 100000 };
    uint32_t limit = limits[_i % 4];
    size_t len, want_len, got_len;
    uint8_t *want, *in = dump_and_round_trip(synth_modes[_i / 4], limit, &len, &want, &want_len);
    int patched;
    uint8_t *got = round_trip_into_file(in, len, limit, "", 0, &patched, &got_len);
    ck_assert_int_eq(patched, 1);
    ck_assert_uint_eq(got_len, want_len);
    ck_assert_mem_eq(got, want, want_len);
    free(in);
    free(want);
    free(got);
}
END_TEST

/* A JAVA PROFILE 1.0.1 dump as the JDK 6 heap dumper wrote it: names, then
 * the whole heap in one HEAP_DUMP (roots, a class, instances, an array of
 * `big` bytes), then more records and no HEAP_DUMP_END; `empty` leaves the
 * HEAP_DUMP with nothing in it. */
static void dump_1_0_1(struct tbuf *b, uint32_t big, int empty)
{
    static const uint8_t types[] = { HPROF_TYPE_INT, HPROF_TYPE_OBJECT };
    uint8_t values[8] = { 0, 0, 0, 7, 0, 0, 0x01, 0x10 };
    tb_init(b, 4);
    tb_header(b, "JAVA PROFILE 1.0.1");
    tb_string(b, 0x30, "Thing");
    tb_load_class(b, 1, 0x100, 0x30);
    tb_segment_begin(b, HPROF_TAG_HEAP_DUMP);
    if (!empty) {
        tb_u1(b, HPROF_ROOT_STICKY_CLASS);
        tb_id(b, 0x100);
        tb_class(b, 0x100, 0, types, 2);
        for (uint32_t i = 0; i < 20; i++)
            tb_instance(b, 0x200 + 16 * i, 0x100, values, sizeof values);
        uint8_t *data = calloc(1, big);
        tb_prim_array(b, 0x110, HPROF_TYPE_BYTE, big, data);
        free(data);
    }
    tb_segment_end(b);
    tb_string(b, 0x40, "after the heap");
}

/* The record kinds of the output match its header: a 1.0.1 heap stays one
 * HEAP_DUMP, never split (at any segment limit: a HEAP_DUMP split in two
 * is two heap dumps to MAT), with no HEAP_DUMP_END (a 1.0.2 record); the
 * bytes are the input's, whether the writer buffers (memory) or streams
 * (a file).  Loop: limit 0 (default), 64, 4096, each into memory and into
 * a file. */
START_TEST(writer_keeps_a_1_0_1_heap_as_one_heap_dump_record)
{
    static const uint32_t limits[] = { 0, 64, 4096 };
    uint32_t limit = limits[_i % 3];
    struct tbuf b;
    struct hprof_error err = { 0 };
    size_t out_len;
    uint8_t *out;
    dump_1_0_1(&b, 10000, 0); /* the array alone passes every limit but 0 */
    if (_i < 3) {
        ck_assert_int_eq(tl_roundtrip_memory(b.data, b.len, limit, &out, &out_len, &err),
                         HPROF_OK);
    } else {
        int patched;
        out = round_trip_into_file(b.data, b.len, limit, "", 0, &patched, &out_len);
        ck_assert_int_eq(patched, 1);
    }
    struct walk w = walk(out, out_len);
    ck_assert(w.ok);
    ck_assert_uint_eq(w.by_tag[HPROF_TAG_HEAP_DUMP], 1);
    ck_assert_uint_eq(w.by_tag[HPROF_TAG_HEAP_DUMP_SEGMENT], 0);
    ck_assert_uint_eq(w.by_tag[HPROF_TAG_HEAP_DUMP_END], 0);
    ck_assert_uint_eq(out_len, b.len);
    ck_assert_mem_eq(out, b.data, b.len);
    free(out);
    tb_free(&b);
}
END_TEST

/* A HEAP_DUMP with nothing in it (or nothing left by a filter) is still
 * written, as the input had it: a dump with an empty heap is not a dump
 * without one.  (Empty segments are dropped: a run may have any number.) */
START_TEST(writer_keeps_an_empty_heap_dump)
{
    struct tbuf b;
    struct hprof_error err = { 0 };
    size_t out_len;
    uint8_t *out;
    dump_1_0_1(&b, 0, 1);
    ck_assert_int_eq(tl_roundtrip_memory(b.data, b.len, 0, &out, &out_len, &err), HPROF_OK);
    struct walk w = walk(out, out_len);
    ck_assert_uint_eq(w.by_tag[HPROF_TAG_HEAP_DUMP], 1);
    ck_assert_uint_eq(w.by_tag[HPROF_TAG_HEAP_DUMP_END], 0);
    ck_assert_uint_eq(out_len, b.len);
    ck_assert_mem_eq(out, b.data, b.len);
    free(out);
    tb_free(&b);
}
END_TEST

/* Segments and then a HEAP_DUMP from a visitor chain (the reader refuses
 * such input; a tool's chain might make it): the segments' run is closed
 * by its END before the HEAP_DUMP. */
START_TEST(writer_ends_a_run_of_segments_before_a_heap_dump)
{
    struct hprof_error err = { 0 };
    struct hprof_sink *sink = hprof_sink_new_memory(&err);
    struct hprof_writer *w = hprof_writer_new(sink, &err);
    struct hprof_visitor *v = hprof_writer_visitor(w);
    struct hprof_header h = { "JAVA PROFILE 1.0.2", 4, 0, 0 };
    struct hprof_segment segments = { .tag = HPROF_TAG_HEAP_DUMP_SEGMENT };
    struct hprof_segment heap_dump = { .tag = HPROF_TAG_HEAP_DUMP };
    struct hprof_root first = { .tag = HPROF_ROOT_UNKNOWN, .id = 0x20 };
    struct hprof_root second = { .tag = HPROF_ROOT_UNKNOWN, .id = 0x30 };
    ck_assert_int_eq(hprof_visit_header(v, &h), HPROF_OK);
    ck_assert_int_eq(hprof_visit_heap_begin(v, &segments), HPROF_OK);
    ck_assert_int_eq(hprof_visit_root(v, &first), HPROF_OK);
    ck_assert_int_eq(hprof_visit_heap_end(v, &segments), HPROF_OK);
    ck_assert_int_eq(hprof_visit_heap_begin(v, &heap_dump), HPROF_OK);
    ck_assert_int_eq(hprof_visit_root(v, &second), HPROF_OK);
    ck_assert_int_eq(hprof_visit_heap_end(v, &heap_dump), HPROF_OK);
    ck_assert_int_eq(hprof_visit_end(v), HPROF_OK);
    size_t out_len;
    const uint8_t *out = hprof_sink_memory_data(sink, &out_len);
    const uint8_t *p = out + 31;
    ck_assert_uint_eq(out_len, 31 + 14 + 9 + 14);
    ck_assert_uint_eq(p[0], HPROF_TAG_HEAP_DUMP_SEGMENT);
    ck_assert_uint_eq(p[14], HPROF_TAG_HEAP_DUMP_END);
    ck_assert_uint_eq(p[23], HPROF_TAG_HEAP_DUMP);
    hprof_writer_free(w);
    hprof_sink_free(sink);
}
END_TEST

/* The parallel write pass: a worker's writer makes the records of an input
 * heap record in memory, the main writer appends them.  After a HEAP_DUMP
 * no run is open (no END is written); after segments one is. */
START_TEST(writer_put_segments_opens_a_run_only_after_segments)
{
    uint8_t tag = _i ? HPROF_TAG_HEAP_DUMP_SEGMENT : HPROF_TAG_HEAP_DUMP;
    struct hprof_error err = { 0 };
    struct hprof_sink *part_sink = hprof_sink_new_memory(&err);
    struct hprof_sink *sink = hprof_sink_new_memory(&err);
    struct hprof_writer *part = hprof_writer_new(part_sink, &err);
    struct hprof_writer *w = hprof_writer_new(sink, &err);
    struct hprof_header h = { "JAVA PROFILE 1.0.1", 4, 0, 0 };
    struct hprof_segment seg = { .tag = tag, .length = 5 };
    struct hprof_root root = { .tag = HPROF_ROOT_UNKNOWN, .id = 0x20 };
    struct hprof_string str = { .id = 0x40, .length = 1, .utf8 = (const uint8_t *)"x" };
    writer_for_segments(part, 4, part_sink);
    ck_assert_int_eq(hprof_visit_heap_begin(hprof_writer_visitor(part), &seg), HPROF_OK);
    ck_assert_int_eq(hprof_visit_root(hprof_writer_visitor(part), &root), HPROF_OK);
    ck_assert_int_eq(hprof_visit_heap_end(hprof_writer_visitor(part), &seg), HPROF_OK);
    size_t part_len, out_len;
    const uint8_t *bytes = hprof_sink_memory_data(part_sink, &part_len);
    ck_assert_uint_eq(part_len, 14);
    ck_assert_uint_eq(bytes[0], tag);
    ck_assert_int_eq(hprof_visit_header(hprof_writer_visitor(w), &h), HPROF_OK);
    ck_assert_int_eq(writer_put_segments(w, bytes, part_len, writer_run_state(part), 1), HPROF_OK);
    ck_assert_int_eq(hprof_visit_string(hprof_writer_visitor(w), &str), HPROF_OK);
    ck_assert_int_eq(hprof_visit_end(hprof_writer_visitor(w)), HPROF_OK);
    const uint8_t *out = hprof_sink_memory_data(sink, &out_len);
    struct walk wk = walk(out, out_len);
    ck_assert(wk.ok);
    ck_assert_uint_eq(wk.by_tag[tag], 1);
    ck_assert_uint_eq(wk.by_tag[HPROF_TAG_HEAP_DUMP_END], _i ? 1 : 0);
    ck_assert_uint_eq(out[31 + 14], HPROF_TAG_STRING); /* the run stays open past it */
    if (_i)
        ck_assert_uint_eq(out[out_len - 9], HPROF_TAG_HEAP_DUMP_END);
    hprof_writer_free(part);
    hprof_writer_free(w);
    hprof_sink_free(part_sink);
    hprof_sink_free(sink);
}
END_TEST

/* Where writes can only go to the end, the writer buffers each segment as
 * before: after what the file held, the same bytes.  Nor can a pipe patch. */
START_TEST(writer_buffers_segments_for_a_file_opened_to_append)
{
    size_t len, want_len, got_len;
    uint8_t *want, *in = dump_and_round_trip("--android --scale 3", 0, &len, &want, &want_len);
    int patched;
    uint8_t *got = round_trip_into_file(in, len, 0, "before", 1, &patched, &got_len);
    ck_assert_int_eq(patched, 0);
    ck_assert_uint_eq(got_len, 6 + want_len);
    ck_assert_mem_eq(got, "before", 6);
    ck_assert_mem_eq(got + 6, want, want_len);
    int p[2];
    struct hprof_error err = { 0 };
    ck_assert_int_eq(pipe(p), 0);
    struct hprof_sink *s = hprof_sink_new_fd(p[1], &err);
    ck_assert_int_eq(sink_can_patch(s), 0);
    hprof_sink_free(s);
    close(p[0]);
    close(p[1]);
    free(in);
    free(want);
    free(got);
}
END_TEST

/* A patch lands where its bytes are: in the file, in the buffer, or both
 * for one that straddles them; in a file that did not start at offset 0. */
START_TEST(fd_sink_patches_bytes_in_the_file_and_in_its_buffer)
{
    size_t len = (3u << 20) + 1000;
    uint8_t *data = malloc(len);
    for (size_t i = 0; i < len; i++)
        data[i] = (uint8_t)(i * 7 + (i >> 9));
    char *path = tl_temp_path(".bin");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_eq(write(fd, "xyz", 3), 3);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = hprof_sink_new_fd(fd, &err);
    ck_assert_int_eq(sink_can_patch(s), 1);
    for (size_t at = 0; at < len; at += 4096)
        ck_assert_int_eq(hprof_sink_write(s, data + at, len - at < 4096 ? len - at : 4096),
                         HPROF_OK);
    uint64_t in_file = len - s->room_len; /* the buffer's first byte */
    ck_assert_uint_gt(s->room_len, 16);
    static const uint8_t patch[9] = "PATCHED!";
    const uint64_t ats[] = { 0, 1u << 20, in_file - 4, len - 9 };
    for (size_t i = 0; i < sizeof ats / sizeof ats[0]; i++) {
        ck_assert_int_eq(sink_patch(s, ats[i], patch, sizeof patch), HPROF_OK);
        memcpy(data + ats[i], patch, sizeof patch);
    }
    ck_assert_int_eq(sink_patch(s, len - 4, patch, sizeof patch), HPROF_ERR_USAGE);
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    hprof_sink_free(s);
    close(fd);
    size_t got_len;
    uint8_t *got = tl_read_file(path, &got_len);
    ck_assert_uint_eq(got_len, 3 + len);
    ck_assert_mem_eq(got, "xyz", 3);
    ck_assert_mem_eq(got + 3, data, len);
    free(got);
    unlink(path);
    free(path);
    free(data);
}
END_TEST

/* A hold sink passes writes straight on, holds back what comes once a
 * hold starts, lets what it holds be overwritten, and lets it go, in
 * order, when released or past its limit; it cannot patch, so that a
 * writer never counts on bytes that may have gone on. */
START_TEST(hold_sink_keeps_bytes_back_until_released_or_past_its_limit)
{
    struct hprof_error err = { 0 };
    struct hprof_sink *mem = hprof_sink_new_memory(&err);
    struct hprof_sink *h = sink_hold_new(mem, &err);
    ck_assert_int_eq(sink_can_patch(h), 0);
    size_t len;
    ck_assert_int_eq(hprof_sink_write(h, "head ", 5), HPROF_OK);
    ck_assert_int_eq(sink_holding(h), 0);
    ck_assert_int_eq(sink_hold_patch(h, 0, "H", 1), 0); /* gone on */
    ck_assert_int_eq(sink_hold_start(h, 100), HPROF_OK);
    ck_assert_int_eq(hprof_sink_write(h, "*****", 5), HPROF_OK);
    ck_assert_int_eq(hprof_sink_write(h, " tail", 5), HPROF_OK);
    hprof_sink_memory_data(mem, &len);
    ck_assert_uint_eq(len, 5);
    ck_assert_uint_eq(hprof_sink_bytes(h), 15);
    ck_assert_int_eq(sink_hold_patch(h, 5, "names", 5), 1);
    ck_assert_int_eq(sink_hold_patch(h, 12, "tails", 5), 0); /* past what is held */
    ck_assert_int_eq(sink_hold_release(h), HPROF_OK);
    ck_assert_int_eq(sink_holding(h), 0);
    ck_assert_mem_eq(hprof_sink_memory_data(mem, &len), "head names tail", 15);
    ck_assert_uint_eq(len, 15);
    /* past the limit everything held goes on, and what follows */
    uint8_t big[64];
    memset(big, 'x', sizeof big);
    ck_assert_int_eq(sink_hold_start(h, 100), HPROF_OK);
    ck_assert_int_eq(hprof_sink_write(h, big, sizeof big), HPROF_OK);
    hprof_sink_memory_data(mem, &len);
    ck_assert_uint_eq(len, 15);
    ck_assert_int_eq(hprof_sink_write(h, big, sizeof big), HPROF_OK);
    ck_assert_int_eq(sink_holding(h), 0);
    ck_assert_int_eq(sink_hold_patch(h, 15, "y", 1), 0);
    hprof_sink_memory_data(mem, &len);
    ck_assert_uint_eq(len, 15 + 2 * sizeof big);
    ck_assert_uint_eq(hprof_sink_bytes(h), len);
    hprof_sink_free(h);
    hprof_sink_free(mem);
}
END_TEST

static Suite *writer_suite(void)
{
    Suite *s = suite_create("writer");
    TCase *t = tcase_create("writer");
    tcase_set_timeout(t, 120);
    tcase_add_loop_test(t, round_trip_of_generated_dumps_is_byte_identical, 0, 3);
    tcase_add_loop_test(t, round_trip_keeps_every_record_of_real_dumps, 0, 4);
    tcase_add_loop_test(t, writer_splits_segments_at_the_limit_and_repeats_heap_info, 0, 3);
    tcase_add_test(t, writer_never_writes_an_empty_segment);
    tcase_add_test(t, writer_keeps_a_run_open_across_top_level_records_and_ends_it_once);
    tcase_add_test(t, writer_rejects_an_array_whose_chunks_stop_short);
    tcase_add_loop_test(t, gzip_sink_writes_jdk_style_members_that_gunzip_exactly, 0,
                        3 * N_BACKENDS);
    tcase_add_loop_test(t, gzip_output_is_the_same_for_every_thread_count, 0, N_BACKENDS);
    tcase_add_loop_test(t, gzip_members_of_incompressible_data_fit_and_gunzip, 0, N_BACKENDS);
    tcase_add_loop_test(t, gzip_sink_deflates_every_level_with_a_backend_whose_bytes_are_the_same_everywhere, 0, 2);
    tcase_add_test(t, zstd_sink_writes_one_checksummed_frame_that_decompresses_exactly);
    tcase_add_loop_test(t, zstd_output_is_the_same_for_every_thread_count, 0, 2);
    tcase_add_test(t, zstd_sink_refuses_levels_out_of_range);
    tcase_add_test(t, fd_sink_writes_every_byte_in_order_across_its_buffer);
    tcase_add_test(t, fd_sink_reads_back_what_it_wrote_from_the_file_and_its_buffer);
    tcase_add_loop_test(t, streaming_writer_writes_the_bytes_of_a_buffering_one, 0, 12);
    tcase_add_test(t, writer_buffers_segments_for_a_file_opened_to_append);
    tcase_add_loop_test(t, writer_keeps_a_1_0_1_heap_as_one_heap_dump_record, 0, 6);
    tcase_add_test(t, writer_keeps_an_empty_heap_dump);
    tcase_add_test(t, writer_ends_a_run_of_segments_before_a_heap_dump);
    tcase_add_loop_test(t, writer_put_segments_opens_a_run_only_after_segments, 0, 2);
    tcase_add_test(t, fd_sink_patches_bytes_in_the_file_and_in_its_buffer);
    tcase_add_test(t, hold_sink_keeps_bytes_back_until_released_or_past_its_limit);
    tcase_add_test(t, fd_sink_refuses_even_small_writes_once_failed_or_finished);
    tcase_add_test(t, fd_sink_starts_writeback_once_per_step_written);
    tcase_add_test(t, fd_sink_writeback_on_a_pipe_loses_nothing);
    tcase_add_test(t, fd_sink_reserves_blocks_ahead_and_gives_back_the_rest);
    tcase_add_test(t, fd_sink_preallocating_inside_a_file_keeps_what_lies_past_its_writes);
    tcase_add_test(t, fd_sink_preallocating_on_a_pipe_loses_nothing);
    tcase_add_test(t, gzip_sink_gives_back_its_reserve_when_it_finishes);
    tcase_add_test(t, fd_sink_reports_a_full_disk);
    tcase_add_test(t, fd_sink_copies_file_ranges_between_its_writes);
    tcase_add_test(t, fd_sink_copy_falls_back_to_the_bytes_it_was_given);
    tcase_add_test(t, fd_sink_copy_says_where_a_read_of_the_input_failed);
    tcase_add_loop_test(t, fd_sink_reading_ahead_copies_every_part_in_order, 0, 2);
    tcase_add_test(t, fd_sink_reading_ahead_says_where_a_read_failed);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(writer_suite());
}
