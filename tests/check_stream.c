/*
 * check_stream.c - reading a dump once, front to back, with nothing on
 * disk: a stream reader (hprof_reader_open_stream()) delivers what a reader
 * of the same bytes in memory delivers, whatever sizes its read function
 * gives; a stream cut short fails with an offset; inputs opened as streams
 * (hprof_input_open_stream()) give the bytes hprof_input_open() copies, and
 * its errors, with $TMPDIR pointing nowhere; the push interface
 * (hprof_shrink_push_*()) gives the same output however the dump is cut
 * into writes, surfaces its consumer's error and leaves no thread behind.
 */
#define _GNU_SOURCE /* F_GETPIPE_SZ */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "push.h"
#include "reader_internal.h"
#include "testlib.h"

/* ---- A stream over memory, in pieces of chosen sizes ---------------------------- */

enum piece { PIECE_ONE, PIECE_RANDOM, PIECE_LARGE };

struct mem_stream {
    const uint8_t *data;
    size_t len, at;
    enum piece piece;
    unsigned seed;
};

static int read_mem(void *ctx, void *buf, size_t len, size_t *got, struct hprof_error *err)
{
    struct mem_stream *m = ctx;
    size_t n = m->len - m->at;
    size_t most = m->piece == PIECE_ONE ? 1
                  : m->piece == PIECE_RANDOM ? 1 + (size_t)(rand_r(&m->seed) % 70000)
                  : (size_t)16 << 20;
    (void)err;
    if (n > most)
        n = most;
    if (n > len)
        n = len;
    memcpy(buf, m->data + m->at, n);
    m->at += n;
    *got = n;
    return HPROF_OK;
}

/* Reader -> writer into memory, the reader given; @return the reader's code. */
static int roundtrip(struct hprof_reader *r, uint8_t **out, size_t *out_len,
                     struct hprof_error *err)
{
    struct hprof_sink *sink = hprof_sink_new_memory(err);
    struct hprof_writer *w = hprof_writer_new(sink, err);
    int rc = hprof_reader_run(r, hprof_writer_visitor(w));
    if (rc == HPROF_OK)
        rc = hprof_sink_finish(sink);
    const uint8_t *data = hprof_sink_memory_data(sink, out_len);
    *out = malloc(*out_len + 1);
    memcpy(*out, data, *out_len);
    hprof_writer_free(w);
    hprof_sink_free(sink);
    return rc;
}

/* A visitor that skips: every third segment whole, and the contents of
 * arrays past their first chunk; a hash of what it sees. */
struct skipper {
    struct hprof_visitor base;
    uint64_t hash, segments;
};

static void mix(struct skipper *s, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        s->hash = (s->hash ^ b[i]) * 0x100000001b3ull;
}

static int skip_heap_begin(struct hprof_visitor *v, const struct hprof_segment *seg)
{
    struct skipper *s = (struct skipper *)v;
    mix(s, &seg->offset, sizeof seg->offset);
    return s->segments++ % 3 == 2 ? HPROF_SKIP : HPROF_OK;
}

static int skip_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct skipper *s = (struct skipper *)v;
    mix(s, &o->offset, sizeof o->offset);
    mix(s, o->values, o->length);
    return HPROF_OK;
}

static int skip_prim(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct skipper *s = (struct skipper *)v;
    mix(s, &a->offset, sizeof a->offset); /* not its chunk: its size is the window's */
    return HPROF_SKIP;
}

static int skip_objects(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct skipper *s = (struct skipper *)v;
    mix(s, &a->offset, sizeof a->offset);
    return HPROF_SKIP;
}

/* A skipping run that may fail: its code (the message in the reader's
 * error), and the hash of what it saw in *hash. */
static int skipping_run_rc(struct hprof_reader *r, uint64_t *hash)
{
    static const struct hprof_visitor_ops ops = {
        .heap_begin = skip_heap_begin,
        .instance = skip_instance,
        .primitive_array = skip_prim,
        .object_array = skip_objects,
    };
    struct skipper s = { .base.ops = &ops, .hash = 14695981039346656037ull };
    int rc = hprof_reader_run(r, &s.base);
    *hash = s.hash;
    return rc;
}

static uint64_t skipping_run(struct hprof_reader *r)
{
    uint64_t hash;
    ck_assert_int_eq(skipping_run_rc(r, &hash), HPROF_OK);
    return hash;
}

/* The stream reader over `data` in `piece`s gives what the memory reader
 * gives: the same records written back, the same skips. */
static void assert_stream_reads_as_memory(const uint8_t *data, size_t len, enum piece piece,
                                          unsigned seed)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    uint8_t *want, *got;
    size_t want_len, got_len;
    ck_assert_int_eq(hprof_reader_open_memory(&r, data, len, &err), HPROF_OK);
    ck_assert_int_eq(roundtrip(r, &want, &want_len, &err), HPROF_OK);
    hprof_reader_free(r);
    struct mem_stream m = { data, len, 0, piece, seed };
    ck_assert_int_eq(hprof_reader_open_stream(&r, read_mem, &m, &err), HPROF_OK);
    ck_assert_msg(roundtrip(r, &got, &got_len, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(hprof_reader_size(r), len);
    hprof_reader_free(r);
    ck_assert_uint_eq(got_len, want_len);
    ck_assert_int_eq(memcmp(got, want, want_len), 0);
    free(want);
    free(got);

    ck_assert_int_eq(hprof_reader_open_memory(&r, data, len, &err), HPROF_OK);
    uint64_t want_hash = skipping_run(r);
    hprof_reader_free(r);
    m.at = 0;
    ck_assert_int_eq(hprof_reader_open_stream(&r, read_mem, &m, &err), HPROF_OK);
    ck_assert_uint_eq(skipping_run(r), want_hash);
    hprof_reader_free(r);
}

START_TEST(stream_reader_delivers_what_a_file_reader_does_for_every_fixture)
{
    if (!tl_fixture_available(_i))
        return;
    size_t len;
    uint8_t *data = tl_read_dump(tl_fixtures[_i], &len);
    assert_stream_reads_as_memory(data, len, PIECE_ONE, 0);
    for (unsigned seed = 1; seed <= 3; seed++)
        assert_stream_reads_as_memory(data, len, PIECE_RANDOM, seed);
    assert_stream_reads_as_memory(data, len, PIECE_LARGE, 0);
    free(data);
}
END_TEST

static uint8_t *synth(const char *mode, size_t *len)
{
    char *path = tl_temp_path(".hprof");
    char *tool = tl_tool("hprof-synth");
    ck_assert_int_eq(tl_system("%s %s -f %s", tool, mode, path), 0);
    uint8_t *data = tl_read_file(path, len);
    unlink(path);
    free(path);
    free(tool);
    return data;
}

static const char *const synth_modes[] = { "--android", "--hotspot", "--android --scale 3",
                                           "--hotspot --scale 2" };

START_TEST(stream_reader_delivers_what_a_file_reader_does_for_generated_dumps)
{
    size_t len;
    uint8_t *data = synth(synth_modes[_i], &len);
    assert_stream_reads_as_memory(data, len, PIECE_ONE, 0);
    assert_stream_reads_as_memory(data, len, PIECE_RANDOM, 7 + _i);
    assert_stream_reads_as_memory(data, len, PIECE_LARGE, 0);
    free(data);
}
END_TEST

/* Two dumps one after the other: the second selected, the first's
 * records read and dropped. */
START_TEST(stream_reader_selects_one_dump_of_several_as_a_file_reader_does)
{
    struct tbuf b;
    tb_init(&b, 4);
    tb_small_dump(&b, 4);
    size_t one = b.len;
    uint8_t *records = malloc(one);
    memcpy(records, b.data + 31, one - 31);
    tb_bytes(&b, records, one - 31); /* the records again: a second dump */
    free(records);
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    uint8_t *want, *got;
    size_t want_len, got_len;
    ck_assert_int_eq(hprof_reader_open_memory(&r, b.data, b.len, &err), HPROF_OK);
    hprof_reader_set_dump(r, 2);
    ck_assert_int_eq(roundtrip(r, &want, &want_len, &err), HPROF_OK);
    ck_assert_uint_eq(hprof_reader_dumps(r), 2);
    hprof_reader_free(r);
    struct mem_stream m = { b.data, b.len, 0, PIECE_ONE, 0 };
    ck_assert_int_eq(hprof_reader_open_stream(&r, read_mem, &m, &err), HPROF_OK);
    hprof_reader_set_dump(r, 2);
    ck_assert_int_eq(roundtrip(r, &got, &got_len, &err), HPROF_OK);
    hprof_reader_free(r);
    ck_assert_uint_eq(got_len, want_len);
    ck_assert_int_eq(memcmp(got, want, want_len), 0);
    free(want);
    free(got);
    tb_free(&b);
}
END_TEST

/* Every cut of a dump: the stream reader fails where a reader of the cut
 * bytes fails, with a message at an offset; a cut inside a heap record
 * names it. */
START_TEST(truncated_stream_fails_with_an_offset_and_the_record)
{
    size_t len;
    uint8_t *data = tl_read_dump(tl_fixtures[1], &len);
    unsigned seed = 11;
    for (int i = 0; i < 300; i++) {
        size_t cut = i < 100 ? (size_t)i : 31 + (size_t)rand_r(&seed) % (len - 31);
        struct hprof_error ferr = { 0 }, serr = { 0 };
        struct hprof_reader *r;
        uint8_t *out;
        size_t out_len;
        int frc = hprof_reader_open_memory(&r, data, cut, &ferr);
        if (frc == HPROF_OK) {
            hprof_reader_set_strict(r, 1);
            frc = roundtrip(r, &out, &out_len, &ferr);
            free(out);
            hprof_reader_free(r);
        }
        struct mem_stream m = { data, cut, 0, PIECE_RANDOM, (unsigned)i };
        int src = hprof_reader_open_stream(&r, read_mem, &m, &serr);
        if (src == HPROF_OK) {
            hprof_reader_set_strict(r, 1);
            src = roundtrip(r, &out, &out_len, &serr);
            free(out);
            hprof_reader_free(r);
        }
        ck_assert_msg(src == frc, "cut at %zu: stream %d (%s), memory %d (%s)", cut, src,
                      serr.message, frc, ferr.message);
        if (src != HPROF_OK)
            ck_assert_msg(strncmp(serr.message, "offset 0x", 9) == 0, "cut at %zu: %s", cut,
                          serr.message);
        if (src != HPROF_OK && strstr(ferr.message, "HEAP_DUMP_SEGMENT: length") != NULL)
            ck_assert_msg(strstr(serr.message, "HEAP_DUMP_SEGMENT") != NULL &&
                          strstr(serr.message, "the input ends") != NULL, "cut at %zu: %s", cut,
                          serr.message);
    }
    free(data);
}
END_TEST

/* A stream read in place from a ring (a pipe's pump, a decompressor, a
 * push) that is cut short fails as the same bytes read by copying fail:
 * the same code and message, whatever the ring already holds when the
 * reader gets to the cut (here all of it: the writer ended before the
 * reader began), since the reader learns of the end only on reaching it. */
START_TEST(a_ring_stream_cut_short_fails_as_a_copied_stream_does)
{
    size_t len;
    uint8_t *data = tl_read_dump(tl_fixtures[0], &len);
    for (size_t back = 1; back < 2000; back += 7) {
        size_t cut = len - back;
        struct hprof_error cerr = { 0 }, gerr = { 0 };
        struct hprof_reader *r;
        struct mem_stream m = { data, cut, 0, PIECE_LARGE, 0 };
        uint64_t copied_saw = 0, ring_saw = 0;
        int crc = hprof_reader_open_stream(&r, read_mem, &m, &cerr);
        if (crc == HPROF_OK) {
            crc = skipping_run_rc(r, &copied_saw);
            hprof_reader_free(r);
        }
        struct push_ring *g = ring_new(cut, &gerr);
        ck_assert_ptr_nonnull(g);
        ck_assert_int_eq(ring_write(g, data, cut, &gerr), HPROF_OK);
        ring_end(g, NULL);
        int grc = reader_open_stream(&r, ring_read, g, NULL, &gerr);
        if (grc == HPROF_OK) {
            reader_stream_from_ring(r, g);
            grc = skipping_run_rc(r, &ring_saw);
            hprof_reader_free(r);
        }
        ring_free(g);
        ck_assert_msg(grc == crc && strcmp(gerr.message, cerr.message) == 0,
                      "cut at %zu: ring %d (%s), copied %d (%s)", cut, grc, gerr.message, crc,
                      cerr.message);
        ck_assert_uint_eq(ring_saw, copied_saw); /* the same records before the cut */
    }
    free(data);
}
END_TEST

static void progress(void *ctx, uint64_t done, uint64_t total)
{
    uint64_t *seen = ctx;
    (void)done;
    seen[0]++;
    if (total != 0)
        seen[1]++;
}

START_TEST(stream_reader_runs_once_and_refuses_what_needs_the_input_again)
{
    size_t len;
    uint8_t *data = tl_read_dump(tl_fixtures[0], &len);
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    struct mem_stream m = { data, len, 0, PIECE_LARGE, 0 };
    ck_assert_int_eq(hprof_reader_open_stream(&r, read_mem, &m, &err), HPROF_OK);
    ck_assert_uint_lt(hprof_reader_size(r), len);
    uint8_t b[4];
    ck_assert_int_eq(hprof_reader_pread(r, 0, b, 4), HPROF_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(err.message, "stream"));
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(hprof_reader_map(r), HPROF_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(err.message, "stream"));
    memset(&err, 0, sizeof err);
    uint64_t seen[2] = { 0, 0 };
    hprof_reader_set_progress(r, progress, seen);
    struct tl_counter c;
    tl_counter_init(&c);
    ck_assert_int_eq(hprof_reader_run(r, &c.base), HPROF_OK);
    ck_assert_uint_gt(seen[0], 1);
    ck_assert_uint_eq(seen[1], 1); /* the total, at the end only */
    ck_assert_uint_eq(hprof_reader_size(r), len);
    ck_assert_int_eq(hprof_reader_run(r, &c.base), HPROF_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(err.message, "second run"));
    hprof_reader_free(r);

    memset(&err, 0, sizeof err);
    m.at = 0;
    ck_assert_int_eq(hprof_reader_open_stream(&r, read_mem, &m, &err), HPROF_OK);
    hprof_reader_set_salvage(r, 1);
    ck_assert_int_eq(hprof_reader_run(r, &c.base), HPROF_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(err.message, "salvage"));
    hprof_reader_free(r);
    free(data);
}
END_TEST

static int read_fails(void *ctx, void *buf, size_t len, size_t *got, struct hprof_error *err)
{
    struct mem_stream *m = ctx;
    if (m->at >= 1000)
        return hprof_error_set(err, HPROF_ERR_IO, "offset 0x3e8: read: the wire broke");
    return read_mem(ctx, buf, len < 1000 - m->at ? len : 1000 - m->at, got, err);
}

START_TEST(stream_read_error_ends_the_run_with_its_message)
{
    size_t len;
    uint8_t *data = tl_read_dump(tl_fixtures[0], &len);
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    struct mem_stream m = { data, len, 0, PIECE_RANDOM, 3 };
    ck_assert_int_eq(hprof_reader_open_stream(&r, read_fails, &m, &err), HPROF_OK);
    struct tl_counter c;
    tl_counter_init(&c);
    ck_assert_int_eq(hprof_reader_run(r, &c.base), HPROF_ERR_IO);
    ck_assert_str_eq(err.message, "offset 0x3e8: read: the wire broke");
    hprof_reader_free(r);
    free(data);
}
END_TEST

static int read_fails_silently(void *ctx, void *buf, size_t len, size_t *got,
                               struct hprof_error *err)
{
    struct mem_stream *m = ctx;
    if (m->at >= m->len)
        return HPROF_ERR_IO; /* its message forgotten */
    return read_mem(ctx, buf, len, got, err);
}

/* A read function that fails without a message: the open (when the header
 * cannot be read) or the run fails with its code and a message that says
 * where, never HPROF_OK or an empty message. */
START_TEST(stream_read_error_without_a_message_gets_one)
{
    size_t len;
    uint8_t *data = tl_read_dump(tl_fixtures[0], &len);
    struct hprof_error err = { 0 };
    struct hprof_reader *r = (struct hprof_reader *)&err;
    struct mem_stream none = { data, 0, 0, PIECE_LARGE, 0 };
    ck_assert_int_eq(hprof_reader_open_stream(&r, read_fails_silently, &none, &err),
                     HPROF_ERR_IO);
    ck_assert_ptr_null(r);
    ck_assert_str_eq(err.message, "offset 0x0: the read function failed (-2)");
    memset(&err, 0, sizeof err);
    struct mem_stream m = { data, 5000, 0, PIECE_LARGE, 0 };
    ck_assert_int_eq(hprof_reader_open_stream(&r, read_fails_silently, &m, &err), HPROF_OK);
    struct tl_counter c;
    tl_counter_init(&c);
    ck_assert_int_eq(hprof_reader_run(r, &c.base), HPROF_ERR_IO);
    ck_assert_int_eq(err.code, HPROF_ERR_IO);
    ck_assert_str_eq(err.message, "offset 0x1388: the read function failed (-2)");
    hprof_reader_free(r);
    free(data);
}
END_TEST

/* ---- Inputs as streams ---------------------------------------------------------- */

/* The gzip sink's members, one per MiB. */
static char *gzip_members_file(const void *data, size_t len)
{
    char *path = tl_temp_path(".hprof.gz");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    struct hprof_error err = { 0 };
    struct hprof_sink *s = hprof_sink_new_gzip(fd, 1, 1, &err);
    ck_assert_int_eq(hprof_sink_write(s, data, len), HPROF_OK);
    ck_assert_int_eq(hprof_sink_finish(s), HPROF_OK);
    hprof_sink_free(s);
    close(fd);
    return path;
}

/* What hprof_input_open() copies, read back whole. */
static uint8_t *spooled(const char *path, size_t *len, struct hprof_error *err)
{
    int fd = -1;
    if (hprof_input_open(path, &fd, NULL, err) != HPROF_OK)
        return NULL;
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    *len = (size_t)st.st_size;
    uint8_t *data = malloc(*len + 1);
    ck_assert_int_eq(pread(fd, data, *len, 0), (ssize_t)*len);
    close(fd);
    return data;
}

/* hprof_input_open_stream() of `path`, with $TMPDIR a directory that does
 * not exist, written back: @return the run's code. */
static int stream_roundtrip(const char *path, unsigned threads, uint8_t **out, size_t *out_len,
                            uint64_t *size, struct hprof_error *err)
{
    const char *tmp = getenv("TMPDIR");
    char *saved = tmp != NULL ? strdup(tmp) : NULL;
    setenv("TMPDIR", "/nonexistent/stream-test", 1);
    struct hprof_reader *r;
    struct hprof_input_info info;
    *out = NULL;
    int rc = hprof_input_open_stream(path, threads, &r, &info, err);
    if (rc == HPROF_OK) {
        ck_assert_int_eq(info.spooled, 0);
        rc = roundtrip(r, out, out_len, err);
        *size = hprof_reader_size(r);
        hprof_reader_free(r);
    }
    if (saved != NULL)
        setenv("TMPDIR", saved, 1);
    else
        unsetenv("TMPDIR");
    free(saved);
    return rc;
}

/* The stream gives the spool's bytes: the same size, the same records. */
static void assert_stream_input_as_spool(const char *path, unsigned threads)
{
    struct hprof_error err = { 0 };
    size_t len, want_len, got_len;
    uint8_t *plain = spooled(path, &len, &err), *want, *got;
    ck_assert_msg(plain != NULL, "%s", err.message);
    struct hprof_reader *r;
    ck_assert_int_eq(hprof_reader_open_memory(&r, plain, len, &err), HPROF_OK);
    ck_assert_int_eq(roundtrip(r, &want, &want_len, &err), HPROF_OK);
    hprof_reader_free(r);
    uint64_t size = 0;
    ck_assert_msg(stream_roundtrip(path, threads, &got, &got_len, &size, &err) == HPROF_OK,
                  "%s: %s", path, err.message);
    ck_assert_uint_eq(size, len);
    ck_assert_uint_eq(got_len, want_len);
    ck_assert_int_eq(memcmp(got, want, want_len), 0);
    free(plain);
    free(want);
    free(got);
}

START_TEST(input_stream_reads_plain_gzip_and_zstd_files_as_the_spool_without_tmpdir)
{
    size_t len, n;
    uint8_t *data = tl_read_dump(tl_fixtures[_i % 2], &len);
    char *plain = tl_temp_file(data, len, ".hprof");
    uint8_t *gz = tl_gzip_bytes(data, len, 0, &n);
    char *single = tl_temp_file(gz, n, ".hprof.gz");
    free(gz);
    char *members = gzip_members_file(data, len);
    size_t cap = ZSTD_compressBound(len);
    uint8_t *zst = malloc(cap);
    n = ZSTD_compress(zst, cap, data, len, 3);
    ck_assert(!ZSTD_isError(n));
    char *zstd = tl_temp_file(zst, n, ".hprof.zst");
    free(zst);
    const char *paths[] = { plain, single, members, zstd };
    for (unsigned i = 0; i < 4; i++) {
        assert_stream_input_as_spool(paths[i], 1);
        assert_stream_input_as_spool(paths[i], 4);
        unlink(paths[i]);
    }
    free(plain);
    free(single);
    free(members);
    free(zstd);
    free(data);
}
END_TEST

/* A pipe read as a stream is grown to 1 MiB, so that its writer is not
 * woken for every 64 KiB (seen from the writer's end of a FIFO). */
START_TEST(input_stream_grows_the_pipe_it_reads_to_1_mib)
{
    char *fifo = tl_temp_path(".fifo");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    int w = open(fifo, O_RDWR); /* a FIFO's writer that does not wait for a reader */
    ck_assert_int_ge(w, 0);
    struct tbuf b;
    tb_small_dump(&b, 8);
    ck_assert_int_eq(write(w, b.data, b.len), (ssize_t)b.len);
    ck_assert_int_lt(fcntl(w, F_GETPIPE_SZ), 1 << 20);
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    struct hprof_input_info info;
    ck_assert_msg(hprof_input_open_stream(fifo, 1, &r, &info, &err) == HPROF_OK, "%s",
                  err.message);
    ck_assert_int_ge(fcntl(w, F_GETPIPE_SZ), 1 << 20);
    hprof_reader_free(r);
    close(w);
    unlink(fifo);
    free(fifo);
    tb_free(&b);
}
END_TEST

/* `len` bytes at `in`, as a pipe's writer that has not ended would have
 * sent them: plain (_i 0), or compressed and flushed, not finished (gzip
 * 1, zstd 2).  *out is malloc()ed. */
static size_t sent_so_far(int format, const uint8_t *in, size_t len, uint8_t **out)
{
    size_t cap = len + 1024, n = len;
    *out = malloc(cap);
    if (format == 0) {
        memcpy(*out, in, len);
    } else if (format == 1) {
        z_stream z = { 0 };
        ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
        z.next_in = (uint8_t *)in;
        z.avail_in = (uInt)len;
        z.next_out = *out;
        z.avail_out = (uInt)cap;
        ck_assert_int_eq(deflate(&z, Z_SYNC_FLUSH), Z_OK);
        n = cap - z.avail_out;
        deflateEnd(&z);
    } else {
        ZSTD_CCtx *c = ZSTD_createCCtx();
        ZSTD_inBuffer i = { in, len, 0 };
        ZSTD_outBuffer o = { *out, cap, 0 };
        ck_assert_int_eq(ZSTD_compressStream2(c, &o, &i, ZSTD_e_flush), 0);
        n = o.pos;
        ZSTD_freeCCtx(c);
    }
    return n;
}

static int refuse_header(struct hprof_visitor *v, const struct hprof_header *h)
{
    (void)v;
    (void)h;
    return HPROF_ERR_USAGE;
}

/* A reader of a pipe whose writer neither writes more nor closes it (a
 * JVM stuck mid-dump, a test holding a FIFO open) still stops, whether
 * the pipe's bytes are plain, gzip or zstd: freed before it ran, and
 * after its run failed on what it got. */
START_TEST(a_pipe_reader_stops_while_its_writer_holds_the_pipe_open)
{
    static const struct hprof_visitor_ops refusing = { .header = refuse_header };
    struct hprof_visitor refuser = { .ops = &refusing };
    struct tbuf b;
    tb_small_dump(&b, 8);
    ck_assert_uint_gt(b.len, 200);
    uint8_t *sent;
    size_t n = sent_so_far(_i, b.data, 200, &sent); /* the dump goes on */
    for (int run = 0; run < 2; run++) {
        char *fifo = tl_temp_path(".fifo");
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        int w = open(fifo, O_RDWR); /* a FIFO's writer that does not wait for a reader */
        ck_assert_int_ge(w, 0);
        ck_assert_int_eq(write(w, sent, n), (ssize_t)n);
        struct hprof_error err = { 0 };
        struct hprof_reader *r;
        struct hprof_input_info info;
        ck_assert_msg(hprof_input_open_stream(fifo, 1, &r, &info, &err) == HPROF_OK, "%s",
                      err.message);
        if (run == 1)
            ck_assert_int_eq(hprof_reader_run(r, &refuser), HPROF_ERR_USAGE);
        hprof_reader_free(r); /* returns: the check's timeout says if not */
        close(w);
        unlink(fifo);
        free(fifo);
    }
    free(sent);
    tb_free(&b);
}
END_TEST

/* A read of a pipe or socket that fails says where, as it did before a
 * thread of its own read the pipe: the offset of the first byte not read
 * (a socket reset by its peer: the bytes it sent, then the error). */
START_TEST(a_socket_read_error_says_its_offset)
{
    size_t len;
    uint8_t *data = tl_read_dump(tl_fixtures[1], &len);
    int sv[2], saved = dup(STDIN_FILENO);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(write(sv[0], data, 50000), 50000);
    ck_assert_int_eq(write(sv[1], "x", 1), 1); /* unread by its peer: its close resets */
    ck_assert_int_eq(close(sv[0]), 0);
    ck_assert_int_ge(dup2(sv[1], STDIN_FILENO), 0);
    close(sv[1]);
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    struct hprof_input_info info;
    ck_assert_msg(hprof_input_open_stream("-", 1, &r, &info, &err) == HPROF_OK, "%s",
                  err.message);
    struct tl_counter c;
    tl_counter_init(&c);
    ck_assert_int_eq(hprof_reader_run(r, &c.base), HPROF_ERR_IO);
    ck_assert_str_eq(err.message, "offset 0xc350: read: Connection reset by peer");
    hprof_reader_free(r);
    dup2(saved, STDIN_FILENO);
    close(saved);
    free(data);
}
END_TEST

/* A FIFO, fed by a shell in the background: read as it comes. */
START_TEST(input_stream_reads_a_pipe_as_the_spool_of_the_same_bytes)
{
    static const char *const filters[] = { "cat", "gzip -c", "zstd -qc" };
    size_t len;
    uint8_t *data = tl_read_dump(tl_fixtures[0], &len);
    char *plain = tl_temp_file(data, len, ".hprof");
    char *fifo = tl_temp_path(".fifo");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    char *want_path = tl_temp_path(".copy");
    ck_assert_int_eq(tl_system("%s < %s > %s", filters[_i], plain, want_path), 0);
    struct hprof_error err = { 0 };
    size_t want_len, got_len, copy_len;
    uint8_t *copy = spooled(want_path, &copy_len, &err), *want, *got;
    ck_assert_uint_eq(copy_len, len);
    struct hprof_reader *r;
    ck_assert_int_eq(hprof_reader_open_memory(&r, copy, copy_len, &err), HPROF_OK);
    ck_assert_int_eq(roundtrip(r, &want, &want_len, &err), HPROF_OK);
    hprof_reader_free(r);
    ck_assert_int_eq(tl_system("cat %s > %s &", want_path, fifo), 0);
    uint64_t size = 0;
    ck_assert_msg(stream_roundtrip(fifo, 4, &got, &got_len, &size, &err) == HPROF_OK, "%s",
                  err.message);
    ck_assert_uint_eq(size, len);
    ck_assert_uint_eq(got_len, want_len);
    ck_assert_int_eq(memcmp(got, want, want_len), 0);
    unlink(fifo);
    unlink(plain);
    unlink(want_path);
    free(fifo);
    free(plain);
    free(want_path);
    free(copy);
    free(want);
    free(got);
    free(data);
}
END_TEST

/* Corrupt, cut and trailing bytes: the stream fails with the code and
 * message of the spool. */
START_TEST(input_stream_reports_bad_gzip_and_zstd_as_the_spool_does)
{
    size_t len, n;
    uint8_t *data = tl_read_dump(tl_fixtures[1], &len);
    uint8_t *gz = tl_gzip_bytes(data, len, 0, &n);
    size_t cap = ZSTD_compressBound(len);
    uint8_t *zst = malloc(cap);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1); /* as zstd(1) writes */
    size_t zn = ZSTD_compress2(cctx, zst, cap, data, len);
    ck_assert(!ZSTD_isError(zn));
    ZSTD_freeCCtx(cctx);
    struct { uint8_t *bytes; size_t len; } cases[6];
    for (int i = 0; i < 6; i++)
        cases[i].bytes = malloc((i < 3 ? n : zn) + 16);
    /* gzip: corrupt in the middle, cut, trailing garbage */
    memcpy(cases[0].bytes, gz, n);
    cases[0].len = n;
    for (size_t i = n / 2; i < n / 2 + 8; i++)
        cases[0].bytes[i] ^= 0x5a;
    memcpy(cases[1].bytes, gz, n);
    cases[1].len = n * 2 / 3;
    memcpy(cases[2].bytes, gz, n);
    memcpy(cases[2].bytes + n, "garbage!", 8);
    cases[2].len = n + 8;
    /* zstd: the same */
    memcpy(cases[3].bytes, zst, zn);
    cases[3].len = zn;
    for (size_t i = zn / 2; i < zn / 2 + 8; i++)
        cases[3].bytes[i] ^= 0x5a;
    memcpy(cases[4].bytes, zst, zn);
    cases[4].len = zn * 2 / 3;
    memcpy(cases[5].bytes, zst, zn);
    memcpy(cases[5].bytes + zn, "garbage!", 8);
    cases[5].len = zn + 8;
    for (int i = 0; i < 6; i++) {
        char *path = tl_temp_file(cases[i].bytes, cases[i].len, ".hprof.x");
        struct hprof_error want = { 0 }, got = { 0 };
        size_t sl;
        uint8_t *s = spooled(path, &sl, &want), *out;
        ck_assert_msg(s == NULL, "case %d: the spool should fail", i);
        for (unsigned threads = 1; threads <= 4; threads += 3) {
            memset(&got, 0, sizeof got);
            size_t out_len;
            uint64_t size;
            int rc = stream_roundtrip(path, threads, &out, &out_len, &size, &got);
            free(out);
            ck_assert_msg(rc == want.code && strcmp(got.message, want.message) == 0,
                          "case %d: stream %d \"%s\", spool %d \"%s\"", i, rc, got.message,
                          want.code, want.message);
        }
        unlink(path);
        free(path);
        free(cases[i].bytes);
    }
    free(gz);
    free(zst);
    free(data);
}
END_TEST

START_TEST(input_stream_stops_a_gzip_bomb_at_its_first_record)
{
    size_t n;
    size_t len = 64u << 20;
    uint8_t *zeros = calloc(1, len);
    memcpy(zeros, "JAVA PROFILE 1.0.2", 19);
    zeros[22] = 4;
    uint8_t *gz = tl_gzip_bytes(zeros, len, 0, &n);
    char *path = tl_temp_file(gz, n, ".hprof.gz");
    struct hprof_error err = { 0 };
    uint8_t *out;
    size_t out_len;
    uint64_t size = 0;
    ck_assert_int_eq(stream_roundtrip(path, 4, &out, &out_len, &size, &err), HPROF_ERR_TRUNCATED);
    ck_assert_str_eq(err.message, "offset 0x1f: zero bytes where a record should start (a preallocated or zero-filled tail?)");
    free(out);
    unlink(path);
    free(path);
    free(gz);
    free(zeros);
}
END_TEST

/* ---- The push interface ---------------------------------------------------------- */

/* The dump pushed in pieces (`seed` 0: whole) through a shrink push into
 * memory; @return the result, *out the output. */
static int push_dump(const uint8_t *data, size_t len, unsigned seed, unsigned threads,
                     uint8_t **out, size_t *out_len, struct hprof_error *err)
{
    struct hprof_sink *sink = hprof_sink_new_memory(err);
    struct hprof_shrink_options o = { .threads = threads };
    struct hprof_shrink_push *p;
    ck_assert_int_eq(hprof_shrink_push_new(&p, sink, &o, err), HPROF_OK);
    int rc = HPROF_OK;
    for (size_t at = 0; at < len && rc == HPROF_OK;) {
        size_t n = seed == 0 ? len : 1 + (size_t)rand_r(&seed) % 300000;
        if (n > len - at)
            n = len - at;
        rc = hprof_shrink_push_write(p, data + at, n);
        at += n;
    }
    struct hprof_shrink_stats stats;
    int frc = hprof_shrink_push_finish(p, &stats);
    ck_assert_int_eq(frc, rc == HPROF_OK ? frc : rc); /* an error stays */
    if (frc == HPROF_OK) {
        ck_assert_uint_eq(stats.bytes_in, len);
        ck_assert_int_eq(hprof_sink_finish(sink), HPROF_OK);
    }
    const uint8_t *d = hprof_sink_memory_data(sink, out_len);
    *out = malloc(*out_len + 1);
    if (*out_len > 0)
        memcpy(*out, d, *out_len);
    hprof_shrink_push_free(p);
    hprof_sink_free(sink);
    return frc;
}

/* hprof_shrink_one_pass() of a reader of the whole dump in memory. */
static int one_pass_memory(const uint8_t *data, size_t len, unsigned threads, uint8_t **out,
                           size_t *out_len, struct hprof_error *err)
{
    struct hprof_reader *r;
    struct hprof_sink *sink = hprof_sink_new_memory(err);
    struct hprof_shrink_options o = { .threads = threads };
    ck_assert_int_eq(hprof_reader_open_memory(&r, data, len, err), HPROF_OK);
    int rc = hprof_shrink_one_pass(r, sink, &o, NULL, err);
    if (rc == HPROF_OK)
        rc = hprof_sink_finish(sink);
    const uint8_t *d = hprof_sink_memory_data(sink, out_len);
    *out = malloc(*out_len + 1);
    if (*out_len > 0)
        memcpy(*out, d, *out_len);
    hprof_reader_free(r);
    hprof_sink_free(sink);
    return rc;
}

START_TEST(push_in_pieces_gives_the_bytes_of_a_whole_push_and_of_the_file)
{
    if (!tl_fixture_available(_i))
        return;
    size_t len, want_len, whole_len, got_len;
    uint8_t *data = tl_read_dump(tl_fixtures[_i], &len), *want, *whole, *got;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(one_pass_memory(data, len, 1, &want, &want_len, &err), HPROF_OK);
    for (unsigned threads = 1; threads <= 4; threads += 3) {
        ck_assert_int_eq(push_dump(data, len, 0, threads, &whole, &whole_len, &err), HPROF_OK);
        ck_assert_uint_eq(whole_len, want_len);
        ck_assert_int_eq(memcmp(whole, want, want_len), 0);
        for (unsigned seed = 1; seed <= 3; seed++) {
            ck_assert_msg(push_dump(data, len, seed, threads, &got, &got_len, &err) == HPROF_OK,
                          "%s", err.message);
            ck_assert_uint_eq(got_len, whole_len);
            ck_assert_int_eq(memcmp(got, whole, whole_len), 0);
            free(got);
        }
        free(whole);
    }
    free(want);
    free(data);
}
END_TEST

/* An undefined tag at the first record: the shrink fails, and the writer
 * hears it from a write (once the ring is full, a write waits for the
 * consumer, which fails) or from the finish. */
START_TEST(push_of_a_malformed_dump_fails_from_write_or_finish)
{
    size_t len;
    uint8_t *data = tl_read_dump(tl_fixtures[0], &len);
    data[31] = 0x77; /* the first record's tag */
    struct hprof_error err = { 0 };
    uint8_t *out;
    size_t out_len;
    ck_assert_int_eq(push_dump(data, len, 5, 1, &out, &out_len, &err), HPROF_ERR_FORMAT);
    ck_assert_str_eq(err.message, "offset 0x1f: tag 0x77: unknown record tag");
    free(out);

    /* a write after the failure says so too */
    struct hprof_sink *sink = hprof_sink_new_memory(&err);
    struct hprof_shrink_push *p;
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(hprof_shrink_push_new(&p, sink, NULL, &err), HPROF_OK);
    int rc = HPROF_OK;
    for (size_t at = 0; at < 4 * len && rc == HPROF_OK; at += 4096) /* past the ring */
        rc = hprof_shrink_push_write(p, data + at % len,
                                     len - at % len < 4096 ? len - at % len : 4096);
    ck_assert_int_eq(rc, HPROF_ERR_FORMAT);
    ck_assert_int_eq(hprof_shrink_push_write(p, data, 10), HPROF_ERR_FORMAT);
    ck_assert_int_eq(hprof_shrink_push_finish(p, NULL), HPROF_ERR_FORMAT);
    ck_assert_str_eq(err.message, "offset 0x1f: tag 0x77: unknown record tag");
    hprof_shrink_push_free(p);
    hprof_sink_free(sink);
    free(data);
}
END_TEST

START_TEST(push_freed_without_finish_stops_its_thread)
{
    size_t len;
    uint8_t *data = tl_read_dump(tl_fixtures[0], &len);
    struct hprof_error err = { 0 };
    struct hprof_sink *sink = hprof_sink_new_memory(&err);
    struct hprof_shrink_push *p;
    /* nothing written */
    ck_assert_int_eq(hprof_shrink_push_new(&p, sink, NULL, &err), HPROF_OK);
    hprof_shrink_push_free(p);
    /* half of it: its consumer waits for more */
    ck_assert_int_eq(hprof_shrink_push_new(&p, sink, NULL, &err), HPROF_OK);
    ck_assert_int_eq(hprof_shrink_push_write(p, data, len / 2), HPROF_OK);
    hprof_shrink_push_free(p);
    /* a finish after a dump cut short fails, saying where, as a cut: a
     * push has no salvage to offer, and its message offers none */
    ck_assert_int_eq(hprof_shrink_push_new(&p, sink, NULL, &err), HPROF_OK);
    ck_assert_int_eq(hprof_shrink_push_write(p, data, len / 2), HPROF_OK);
    ck_assert_int_eq(hprof_shrink_push_finish(p, NULL), HPROF_ERR_TRUNCATED);
    ck_assert_msg(strncmp(err.message, "offset 0x", 9) == 0, "%s", err.message);
    ck_assert_msg(strstr(err.message, "salvage") == NULL, "%s", err.message);
    hprof_shrink_push_free(p);
    hprof_sink_free(sink);
    free(data);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream");
    TCase *t = tcase_create("reader");
    tcase_set_timeout(t, 600);
    tcase_add_loop_test(t, stream_reader_delivers_what_a_file_reader_does_for_every_fixture, 0,
                        TL_N_FIXTURES);
    tcase_add_loop_test(t, stream_reader_delivers_what_a_file_reader_does_for_generated_dumps,
                        0, 4);
    tcase_add_test(t, stream_reader_selects_one_dump_of_several_as_a_file_reader_does);
    tcase_add_test(t, truncated_stream_fails_with_an_offset_and_the_record);
    tcase_add_test(t, stream_reader_runs_once_and_refuses_what_needs_the_input_again);
    tcase_add_test(t, stream_read_error_ends_the_run_with_its_message);
    tcase_add_test(t, stream_read_error_without_a_message_gets_one);
    tcase_add_test(t, a_ring_stream_cut_short_fails_as_a_copied_stream_does);
    suite_add_tcase(s, t);
    TCase *i = tcase_create("input");
    tcase_set_timeout(i, 600);
    tcase_add_loop_test(i, input_stream_reads_plain_gzip_and_zstd_files_as_the_spool_without_tmpdir,
                        0, 2);
    tcase_add_loop_test(i, input_stream_reads_a_pipe_as_the_spool_of_the_same_bytes, 0, 3);
    tcase_add_test(i, input_stream_grows_the_pipe_it_reads_to_1_mib);
    tcase_add_test(i, a_socket_read_error_says_its_offset);
    TCase *held = tcase_create("pipes held open");
    tcase_set_timeout(held, 20);
    tcase_add_loop_test(held, a_pipe_reader_stops_while_its_writer_holds_the_pipe_open, 0, 3);
    tcase_add_test(i, input_stream_reports_bad_gzip_and_zstd_as_the_spool_does);
    tcase_add_test(i, input_stream_stops_a_gzip_bomb_at_its_first_record);
    suite_add_tcase(s, i);
    suite_add_tcase(s, held);
    TCase *p = tcase_create("push");
    tcase_set_timeout(p, 600);
    tcase_add_loop_test(p, push_in_pieces_gives_the_bytes_of_a_whole_push_and_of_the_file, 0,
                        TL_N_FIXTURES);
    tcase_add_test(p, push_of_a_malformed_dump_fails_from_write_or_finish);
    tcase_add_test(p, push_freed_without_finish_stops_its_thread);
    suite_add_tcase(s, p);
    return tl_run_suite(s);
}
