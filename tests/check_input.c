/*
 * check_input.c - hprof_input_open() on gzip and piped input that is not
 * what it claims: the magic checked in the first bytes inflated, the copy
 * bounded by the room of its directory, trailing garbage and truncation
 * reported, and messages that do not repeat the input's name (the tools
 * print it before them).
 *
 * A gzip file's members are inflated in parallel: every case here is also
 * opened the way a pipe is inflated (INPUT_INFLATE_STREAM, zlib member after
 * member, the code from before the parallel path), and the copy, the code,
 * the message and the salvage offset must be the same, on 1, 2 and 3
 * threads.  The statistics prove each case took the path it is about.
 */
#define _GNU_SOURCE /* memmem */
#include <check.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "input_private.h"
#include "testlib.h"

static int open_file(const void *data, size_t len, struct hprof_error *err, char **path)
{
    *path = tl_temp_file(data, len, ".hprof.gz");
    int fd = -1;
    int rc = hprof_input_open(*path, &fd, NULL, err);
    if (fd >= 0)
        close(fd);
    return rc;
}

static void assert_no_name(const struct hprof_error *err, const char *path)
{
    ck_assert_msg(strstr(err->message, path) == NULL, "the name is repeated: %s", err->message);
    ck_assert_msg(strchr(err->message, '\n') == NULL, "not one line: %s", err->message);
}

/* The bytes of a small valid dump. */
static struct tbuf small_dump(void)
{
    struct tbuf b;
    tb_small_dump(&b, 8);
    return b;
}

/* Standard input as a pipe that a child fills with `len` bytes of `data`,
 * 64 KiB a write, until the pipe is closed. */
struct piped_stdin {
    pid_t child;
    int saved;                  /* standard input before */
    int counted;                /* where the child says how much it wrote */
};

static struct piped_stdin stdin_from_child(const uint8_t *data, size_t len)
{
    int p[2], counted[2];
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(pipe(counted), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        signal(SIGPIPE, SIG_IGN);
        close(p[0]);
        close(counted[0]);
        size_t done = 0;
        while (done < len) {
            ssize_t n = write(p[1], data + done, len - done > 65536 ? 65536 : len - done);
            if (n <= 0)
                break;
            done += (size_t)n;
        }
        close(p[1]);
        ssize_t w = write(counted[1], &done, sizeof done);
        _exit(w == sizeof done ? 0 : 1);
    }
    close(p[1]);
    close(counted[1]);
    struct piped_stdin ps = { child, dup(STDIN_FILENO), counted[0] };
    dup2(p[0], STDIN_FILENO);
    close(p[0]);
    return ps;
}

/* Standard input back as it was, which closes the pipe (the writer stops).
 * @return how much the child could write. */
static size_t stdin_restore(struct piped_stdin ps)
{
    size_t written;
    dup2(ps.saved, STDIN_FILENO);
    close(ps.saved);
    ck_assert_int_eq(read(ps.counted, &written, sizeof written), (ssize_t)sizeof written);
    close(ps.counted);
    waitpid(ps.child, NULL, 0);
    return written;
}

/* hprof_input_open("-") with `gz` fed through a pipe by a child process;
 * @return its code, and in *written how much the child could write before
 * the pipe was closed. */
static int open_piped(const uint8_t *gz, size_t gz_len, struct hprof_error *err,
                      size_t *written)
{
    struct piped_stdin ps = stdin_from_child(gz, gz_len);
    int fd = -1;
    int rc = hprof_input_open("-", &fd, NULL, err);
    if (fd >= 0)
        close(fd);
    *written = stdin_restore(ps);
    return rc;
}

/* Fed through a pipe, a gzip stream that does not inflate to a heap dump
 * is given up after its first bytes: the writer of the pipe sees it closed
 * long before its 32 MB are through. */
START_TEST(gzip_input_that_is_not_a_dump_fails_at_its_first_bytes)
{
    enum { BIG = 32 << 20 };
    uint8_t *raw = malloc(BIG);
    for (size_t i = 0; i < BIG; i++)
        raw[i] = (uint8_t)(i * 2654435761u >> 13);
    memcpy(raw, "NOT A HEAP DUMP", 15);
    size_t gz_len, written;
    uint8_t *gz = tl_gzip_bytes(raw, BIG, 1, &gz_len);
    free(raw);
    struct hprof_error err = { 0 };
    ck_assert_int_eq(open_piped(gz, gz_len, &err, &written), HPROF_ERR_FORMAT);
    ck_assert_str_eq(err.message,
                     "offset 0x0: header: not a heap dump (no \"JAVA PROFILE 1.0.x\" magic)");
    ck_assert_msg(written < gz_len / 4, "%zu of %zu bytes read before giving up", written, gz_len);
    free(gz);
}
END_TEST

/* A .hprof.gz gzipped again (by a web server, an upload) and piped: the
 * copy stops at once and says what is inside. */
START_TEST(gzip_of_a_gzip_says_it_is_compressed_twice)
{
    struct tbuf b;
    tb_small_dump(&b, 4);
    size_t inner_len, gz_len, written;
    uint8_t *inner = tl_gzip_bytes(b.data, b.len, 0, &inner_len);
    uint8_t *gz = tl_gzip_bytes(inner, inner_len, 0, &gz_len);
    struct hprof_error err = { 0 };
    ck_assert_int_eq(open_piped(gz, gz_len, &err, &written), HPROF_ERR_FORMAT);
    ck_assert_str_eq(err.message, "offset 0x0: header: not a heap dump but gzip-compressed data "
                                  "(compressed twice? decompress it first: gzip -d)");
    free(gz);
    free(inner);
    tb_free(&b);
}
END_TEST

/* Two dumps joined, gzipped and piped: the copy stops at the second one's
 * header, and says what it is, as the reader of a file does. */
START_TEST(gzip_of_two_joined_dumps_stops_at_the_second_header_and_says_so)
{
    struct tbuf b;
    tb_small_dump(&b, 4);
    size_t first = b.len;
    tb_header(&b, "JAVA PROFILE 1.0.3");
    size_t gz_len, written;
    uint8_t *gz = tl_gzip_bytes(b.data, b.len, 0, &gz_len);
    struct hprof_error err = { 0 };
    ck_assert_int_eq(open_piped(gz, gz_len, &err, &written), HPROF_ERR_FORMAT);
    char want[160];
    snprintf(want, sizeof want,
             "offset 0x%zx: a heap dump's header (\"JAVA PROFILE\") where a record should start: "
             "two dump files joined into one? The first ends here", first);
    ck_assert_str_eq(err.message, want);
    free(gz);
    tb_free(&b);
}
END_TEST

/* Zeros behind a valid header read as records of tag 0: the copy stops at
 * the first, not after the 32 MB they inflate to, as the reader of a file
 * stops there: a cut input (its tail zero-filled), which salvage reads. */
START_TEST(gzip_zeros_behind_a_header_stop_at_the_first_record)
{
    enum { BIG = 32 << 20 };
    uint8_t *raw = calloc(1, BIG);
    static const uint8_t header[31] = "JAVA PROFILE 1.0.3\0\0\0\0\4";
    memcpy(raw, header, sizeof header);
    size_t gz_len, written;
    uint8_t *gz = tl_gzip_bytes(raw, BIG, 1, &gz_len);
    free(raw);
    struct hprof_error err = { 0 };
    ck_assert_int_eq(open_piped(gz, gz_len, &err, &written), HPROF_ERR_TRUNCATED);
    ck_assert_str_eq(err.message, "offset 0x1f: zero bytes where a record should start (a preallocated or zero-filled tail?)");
    ck_assert_msg(written < gz_len / 4, "%zu of %zu bytes read before giving up", written, gz_len);
    free(gz);
}
END_TEST

/* The error of bytes after the last member that are not another one. */
static void assert_trailing_bytes_at(const struct hprof_error *err, size_t at)
{
    char want[160];
    snprintf(want, sizeof want, "offset 0x%zx (compressed): gzip input has trailing bytes after "
             "its last member that are not another member", at);
    ck_assert_int_eq(err->code, HPROF_ERR_FORMAT);
    ck_assert_str_eq(err->message, want);
}

START_TEST(gzip_trailing_garbage_is_an_error)
{
    struct tbuf b = small_dump();
    size_t gz_len;
    uint8_t *gz = tl_gzip_bytes(b.data, b.len, 0, &gz_len);
    gz = realloc(gz, gz_len + 8);
    memcpy(gz + gz_len, "garbage\n", 8);
    struct hprof_error err = { 0 };
    char *path;
    ck_assert_int_eq(open_file(gz, gz_len + 8, &err, &path), HPROF_ERR_FORMAT);
    assert_trailing_bytes_at(&err, gz_len);
    unlink(path);
    free(path);
    free(gz);
    tb_free(&b);
}
END_TEST

/* A small dump's gzip stream, then `zeros` zero bytes and `tail`. */
static uint8_t *gzip_padded(size_t zeros, const char *tail, size_t *gz_len, size_t *len)
{
    struct tbuf b = small_dump();
    uint8_t *gz = tl_gzip_bytes(b.data, b.len, 0, gz_len);
    tb_free(&b);
    *len = *gz_len + zeros + strlen(tail);
    gz = realloc(gz, *len);
    memset(gz + *gz_len, 0, zeros);
    memcpy(gz + *gz_len + zeros, tail, strlen(tail));
    return gz;
}

/* Zeros after the last member are padding (a tape's blocks, dd
 * conv=sync), as gzip -d takes them: from a file and from a pipe, past
 * any one read. */
START_TEST(gzip_zero_padding_after_the_last_member_is_passed_over)
{
    size_t gz_len, len, written;
    uint8_t *gz = gzip_padded(3u << 20, "", &gz_len, &len);
    struct hprof_error err = { 0 };
    char *path;
    ck_assert_msg(open_file(gz, len, &err, &path) == HPROF_OK, "%s", err.message);
    ck_assert_msg(open_piped(gz, len, &err, &written) == HPROF_OK, "%s", err.message);
    unlink(path);
    free(path);
    free(gz);
}
END_TEST

/* ... and what is not zero after them is trailing garbage, at its own
 * offset. */
START_TEST(gzip_garbage_after_zero_padding_is_an_error_at_its_offset)
{
    size_t gz_len, len, written;
    uint8_t *gz = gzip_padded(3u << 20, "x", &gz_len, &len);
    struct hprof_error err = { 0 };
    char *path;
    (void)open_file(gz, len, &err, &path);
    assert_trailing_bytes_at(&err, len - 1);
    memset(&err, 0, sizeof err);
    (void)open_piped(gz, len, &err, &written);
    assert_trailing_bytes_at(&err, len - 1);
    unlink(path);
    free(path);
    free(gz);
}
END_TEST

/* Under a gzip layer the input took off, any compressor is a second
 * layer, xz's too (which alone is a format not read). */
START_TEST(xz_under_gzip_says_it_is_compressed_twice)
{
    static const uint8_t xz[16] = { 0xfd, '7', 'z', 'X', 'Z', 0 };
    size_t gz_len, written;
    uint8_t *gz = tl_gzip_bytes(xz, sizeof xz, 0, &gz_len);
    struct hprof_error err = { 0 };
    ck_assert_int_eq(open_piped(gz, gz_len, &err, &written), HPROF_ERR_FORMAT);
    ck_assert_str_eq(err.message, "offset 0x0: header: not a heap dump but xz-compressed data "
                                  "(compressed twice? decompress it first: xz -d)");
    free(gz);
}
END_TEST

/* As the JDK writes them: one member after another, read as one stream. */
START_TEST(gzip_members_one_after_another_are_one_dump)
{
    struct tbuf b = small_dump();
    size_t half = b.len / 2, len1, len2;
    uint8_t *m1 = tl_gzip_bytes(b.data, half, 0, &len1);
    uint8_t *m2 = tl_gzip_bytes(b.data + half, b.len - half, 0, &len2);
    uint8_t *both = malloc(len1 + len2);
    memcpy(both, m1, len1);
    memcpy(both + len1, m2, len2);
    char *path = tl_temp_file(both, len1 + len2, ".hprof.gz");
    struct hprof_error err = { 0 };
    int fd = -1;
    ck_assert_int_eq(hprof_input_open(path, &fd, NULL, &err), HPROF_OK);
    uint8_t *copy = malloc(b.len + 1);
    ck_assert_int_eq(pread(fd, copy, b.len + 1, 0), (ssize_t)b.len);
    ck_assert_int_eq(memcmp(copy, b.data, b.len), 0);
    close(fd);
    unlink(path);
    free(path);
    free(copy);
    free(both);
    free(m1);
    free(m2);
    tb_free(&b);
}
END_TEST

START_TEST(gzip_truncated_says_so_once_without_the_name)
{
    struct tbuf b = small_dump();
    size_t gz_len;
    uint8_t *gz = tl_gzip_bytes(b.data, b.len, 0, &gz_len);
    struct hprof_error err = { 0 };
    char *path;
    ck_assert_int_eq(open_file(gz, gz_len - 10, &err, &path), HPROF_ERR_TRUNCATED);
    ck_assert_msg(strstr(err.message, "gzip input is truncated") != NULL, "%s", err.message);
    ck_assert_msg(strncmp(err.message, "offset 0x", 9) == 0, "%s", err.message);
    assert_no_name(&err, path);
    unlink(path);
    free(path);
    free(gz);
    tb_free(&b);
}
END_TEST

START_TEST(gzip_corrupt_says_where)
{
    static const uint8_t corrupt[] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff };
    struct hprof_error err = { 0 };
    char *path;
    ck_assert_int_eq(open_file(corrupt, sizeof corrupt, &err, &path), HPROF_ERR_FORMAT);
    ck_assert_msg(strstr(err.message, "(compressed): gzip input is corrupt") != NULL, "%s",
                  err.message);
    assert_no_name(&err, path);
    unlink(path);
    free(path);
}
END_TEST

/* `len` bytes as one zstd frame, into a new buffer. */
static uint8_t *zstd_bytes(const void *data, size_t len, size_t *out_len)
{
    size_t cap = ZSTD_compressBound(len);
    uint8_t *out = malloc(cap);
    *out_len = ZSTD_compress(out, cap, data, len, 3);
    ck_assert(!ZSTD_isError(*out_len));
    return out;
}

/* input_open() on a .zst file holding `z`: its code, the copy's bytes in
 * *copy (when it opened) and what was written to the copy. */
static int open_zstd_file(const uint8_t *z, size_t z_len, struct hprof_error *err,
                          struct tbuf *copy, struct input_stats *stats)
{
    char *path = tl_temp_file(z, z_len, ".hprof.zst");
    struct hprof_input_info info;
    int fd = -1;
    int rc = input_open(path, 0, 1, INPUT_INFLATE_PARALLEL, &fd, &info, stats, err);
    if (rc == HPROF_OK) {
        tb_init(copy, 4);
        uint8_t buf[65536];
        ssize_t n;
        for (off_t at = 0; (n = pread(fd, buf, sizeof buf, at)) > 0; at += n)
            tb_bytes(copy, buf, (size_t)n);
        ck_assert_int_eq(info.spooled, 1);
    }
    if (fd >= 0)
        close(fd);
    assert_no_name(err, path);
    unlink(path);
    free(path);
    return rc;
}

/* Two frames one after the other, as `cat a.zst b.zst` makes: one dump,
 * read from a file and (failing only at its end) from a pipe. */
START_TEST(zstd_frames_one_after_another_are_one_dump)
{
    struct tbuf b = small_dump(), copy;
    size_t half = b.len / 2, len1, len2;
    uint8_t *f1 = zstd_bytes(b.data, half, &len1);
    uint8_t *f2 = zstd_bytes(b.data + half, b.len - half, &len2);
    uint8_t *both = malloc(len1 + len2);
    memcpy(both, f1, len1);
    memcpy(both + len1, f2, len2);
    struct hprof_error err = { 0 };
    struct input_stats stats;
    ck_assert_int_eq(open_zstd_file(both, len1 + len2, &err, &copy, &stats), HPROF_OK);
    ck_assert_uint_eq(copy.len, b.len);
    ck_assert_mem_eq(copy.data, b.data, b.len);
    size_t written;
    ck_assert_int_eq(open_piped(both, len1 + len2, &err, &written), HPROF_OK);
    tb_free(&copy);
    free(both);
    free(f1);
    free(f2);
    tb_free(&b);
}
END_TEST

/* A skippable frame first, as pzstd writes one: the dump is the frame
 * after it, from a file and from a pipe. */
START_TEST(zstd_a_skippable_frame_first_is_passed_over)
{
    struct tbuf b = small_dump(), copy;
    size_t len;
    uint8_t *frame = zstd_bytes(b.data, b.len, &len);
    static const uint8_t skippable[12] = { 0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 'p', 'z', 's', 't' };
    uint8_t *z = malloc(sizeof skippable + len);
    memcpy(z, skippable, sizeof skippable);
    memcpy(z + sizeof skippable, frame, len);
    struct hprof_error err = { 0 };
    struct input_stats stats;
    ck_assert_int_eq(open_zstd_file(z, sizeof skippable + len, &err, &copy, &stats), HPROF_OK);
    ck_assert_uint_eq(copy.len, b.len);
    ck_assert_mem_eq(copy.data, b.data, b.len);
    size_t written;
    ck_assert_int_eq(open_piped(z, sizeof skippable + len, &err, &written), HPROF_OK);
    tb_free(&copy);
    free(z);
    free(frame);
    tb_free(&b);
}
END_TEST

/* Zeros behind a valid header: the copy stops at the first record, not
 * after the 256 MB that 8 KB of zstd inflate to. */
START_TEST(zstd_zeros_behind_a_header_stop_at_the_first_record)
{
    enum { BIG = 256 << 20 };
    uint8_t *raw = calloc(1, BIG);
    static const uint8_t header[31] = "JAVA PROFILE 1.0.3\0\0\0\0\4";
    memcpy(raw, header, sizeof header);
    size_t z_len;
    uint8_t *z = zstd_bytes(raw, BIG, &z_len);
    free(raw);
    struct hprof_error err = { 0 };
    struct input_stats stats;
    struct tbuf copy;
    ck_assert_int_eq(open_zstd_file(z, z_len, &err, &copy, &stats), HPROF_ERR_TRUNCATED);
    ck_assert_str_eq(err.message, "offset 0x1f: zero bytes where a record should start (a preallocated or zero-filled tail?)");
    ck_assert_uint_eq(stats.bytes_spooled, 0);
    memset(&err, 0, sizeof err);
    size_t written;
    ck_assert_int_eq(open_piped(z, z_len, &err, &written), HPROF_ERR_TRUNCATED);
    ck_assert_str_eq(err.message, "offset 0x1f: zero bytes where a record should start (a preallocated or zero-filled tail?)");
    free(z);
}
END_TEST

/* Cut anywhere after its magic, a frame says where the input ended, from a
 * file as from a pipe. */
START_TEST(zstd_truncated_says_where_it_ends)
{
    struct tbuf b = small_dump(), copy;
    size_t z_len;
    uint8_t *z = zstd_bytes(b.data, b.len, &z_len);
    for (size_t cut = 4; cut < z_len; cut += (z_len - 4) / 7 + 1) {
        char want[128];
        snprintf(want, sizeof want, "offset 0x%zx (compressed): zstd input is truncated", cut);
        struct hprof_error err = { 0 };
        struct input_stats stats;
        ck_assert_int_eq(open_zstd_file(z, cut, &err, &copy, &stats), HPROF_ERR_TRUNCATED);
        ck_assert_str_eq(err.message, want);
        memset(&err, 0, sizeof err);
        size_t written;
        ck_assert_int_eq(open_piped(z, cut, &err, &written), HPROF_ERR_TRUNCATED);
        ck_assert_str_eq(err.message, want);
    }
    free(z);
    tb_free(&b);
}
END_TEST

/* A damaged frame header, and bytes after the last frame that are not
 * another frame: one line, with an offset. */
START_TEST(zstd_corrupt_says_where)
{
    struct tbuf b = small_dump(), copy;
    size_t z_len;
    uint8_t *z = zstd_bytes(b.data, b.len, &z_len);
    z = realloc(z, z_len + 8);
    memcpy(z + z_len, "garbage\n", 8);
    for (int damaged_header = 0; damaged_header < 2; damaged_header++) {
        uint8_t *bad = malloc(z_len + 8);
        memcpy(bad, z, z_len + 8);
        if (damaged_header)
            bad[4] |= 0x08; /* a reserved bit of the frame header descriptor */
        struct hprof_error err = { 0 };
        struct input_stats stats;
        ck_assert_int_eq(open_zstd_file(bad, z_len + 8, &err, &copy, &stats), HPROF_ERR_FORMAT);
        ck_assert_msg(strncmp(err.message, "offset 0x", 9) == 0, "%s", err.message);
        ck_assert_msg(strstr(err.message, " (compressed): zstd input is corrupt: ") != NULL,
                      "%s", err.message);
        free(bad);
    }
    free(z);
    tb_free(&b);
}
END_TEST

/* hprof_input_open(path) with $TMPDIR `dir`, the descriptor closed. */
static int open_with_tmpdir(const char *dir, const char *path, struct hprof_error *err)
{
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("TMPDIR", dir, 1);
    int fd = -1;
    int rc = hprof_input_open(path, &fd, NULL, err);
    if (saved) {
        setenv("TMPDIR", saved, 1);
        free(saved);
    } else {
        unsetenv("TMPDIR");
    }
    if (fd >= 0)
        close(fd);
    return rc;
}

/* A gzip file of `bytes` of dump whose records frame (one STRING record),
 * so that the copy goes on until its room runs out. */
static char *framed_gzip_file(uint32_t bytes)
{
    uint8_t *raw = calloc(1, bytes);
    memcpy(raw, "JAVA PROFILE 1.0.3\0\0\0\0\4", 23);
    uint32_t body = bytes - 31 - 9;
    raw[31] = HPROF_TAG_STRING;
    raw[36] = (uint8_t)(body >> 24), raw[37] = (uint8_t)(body >> 16);
    raw[38] = (uint8_t)(body >> 8), raw[39] = (uint8_t)body;
    size_t gz_len;
    uint8_t *gz = tl_gzip_bytes(raw, bytes, 0, &gz_len);
    char *path = tl_temp_file(gz, gz_len, ".hprof.gz");
    free(gz);
    free(raw);
    return path;
}

/* A temporary directory that cannot take the copy at all is the same kind
 * of failure as one too small: HPROF_ERR_NOROOM, which lets a caller turn
 * to hprof_input_open_stream() instead. */
START_TEST(gzip_copy_into_a_missing_temporary_directory_is_no_room)
{
    char *path = framed_gzip_file(4096);
    struct hprof_error err = { 0 };
    ck_assert_int_eq(open_with_tmpdir("/nonexistent/hprof-tmp", path, &err), HPROF_ERR_NOROOM);
    ck_assert_msg(strstr(err.message, "/nonexistent/hprof-tmp") != NULL &&
                  strstr(err.message, "TMPDIR") != NULL, "%s", err.message);
    assert_no_name(&err, path);
    unlink(path);
    free(path);
}
END_TEST

/* A write of the copy that fails (here past a limit on file size, EFBIG)
 * is no room too, with the write's own reason. */
START_TEST(gzip_copy_that_cannot_be_written_is_no_room)
{
    char *path = framed_gzip_file(4 << 20);
    struct rlimit was, small;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &was), 0);
    small = (struct rlimit){ 1 << 20, was.rlim_max }; /* the soft limit: it can go back */
    void (*old)(int) = signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    struct hprof_error err = { 0 };
    int rc = open_with_tmpdir("/tmp", path, &err);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &was), 0);
    signal(SIGXFSZ, old);
    ck_assert_int_eq(rc, HPROF_ERR_NOROOM);
    ck_assert_msg(strstr(err.message, "the decompressed copy of the input in /tmp") != NULL &&
                  strstr(err.message, "too large") != NULL, "%s", err.message);
    assert_no_name(&err, path);
    unlink(path);
    free(path);
}
END_TEST

/* A copy that would not fit its directory stops with a message naming it
 * and TMPDIR.  Needs a small file system: a tmpfs mounted for the test
 * (root only; otherwise the test says it did not run). */
START_TEST(gzip_copy_larger_than_the_temporary_directory_names_it)
{
    char dir[] = "/tmp/hprof-small-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    if (geteuid() != 0 || tl_system("mount -t tmpfs -o size=256k tmpfs %s 2>/dev/null", dir) != 0) {
        printf("note: cannot mount a small tmpfs; the full-TMPDIR case is not tried\n");
        rmdir(dir);
        return;
    }
    char *path = framed_gzip_file(4 << 20);
    struct hprof_error err = { 0 };
    int rc = open_with_tmpdir(dir, path, &err);
    tl_system("umount %s", dir);
    rmdir(dir);
    ck_assert_int_eq(rc, HPROF_ERR_NOROOM);
    ck_assert_msg(strstr(err.message, dir) != NULL && strstr(err.message, "TMPDIR") != NULL &&
                  strstr(err.message, "would exceed the") != NULL, "%s", err.message);
    assert_no_name(&err, path);
    unlink(path);
    free(path);
}
END_TEST

/* ---- The parallel path against the streaming one ---------------------------- */

/* A copy made by input_open(), or what stopped it. */
struct opened {
    int rc;
    char message[sizeof ((struct hprof_error *)0)->message];
    struct hprof_input_info info;
    struct input_stats stats;
    uint8_t *data;
    size_t len;
};

static void open_as(const char *path, unsigned flags, unsigned threads, enum input_inflate how,
                    struct opened *o)
{
    struct hprof_error err = { 0 };
    int fd = -1;
    memset(o, 0, sizeof *o);
    o->rc = input_open(path, flags, threads, how, &fd, &o->info, &o->stats, &err);
    snprintf(o->message, sizeof o->message, "%s", err.message);
    if (o->rc == HPROF_OK) {
        off_t end = lseek(fd, 0, SEEK_END);
        ck_assert_int_ge(end, 0);
        o->len = (size_t)end;
        o->data = malloc(o->len + 1);
        ck_assert_int_eq(pread(fd, o->data, o->len, 0), (ssize_t)o->len);
        close(fd);
    }
}

static void opened_free(struct opened *o)
{
    free(o->data);
    o->data = NULL;
}

/* Open the gzip file `path` streaming, and in parallel on 1, 2 and 3
 * threads, with `flags`; every parallel result must be the streaming one.
 * *ref is the streaming result, *par the one on `threads` (both to be
 * freed). */
static void same_both_ways(const char *path, unsigned flags, unsigned threads, struct opened *ref,
                           struct opened *par)
{
    open_as(path, flags, 1, INPUT_INFLATE_STREAM, ref);
    ck_assert_uint_eq(ref->stats.members_parallel, 0);
    for (unsigned t = 1; t <= 3; t++) {
        struct opened o;
        open_as(path, flags, t, INPUT_INFLATE_PARALLEL, &o);
        ck_assert_msg(o.rc == ref->rc && strcmp(o.message, ref->message) == 0,
                      "%u threads: %d \"%s\"; streaming: %d \"%s\"", t, o.rc, o.message,
                      ref->rc, ref->message);
        ck_assert_int_eq(o.info.gzip_cut, ref->info.gzip_cut);
        ck_assert_uint_eq(o.info.gzip_cut_offset, ref->info.gzip_cut_offset);
        ck_assert_uint_eq(o.len, ref->len);
        ck_assert_msg(o.len == 0 || memcmp(o.data, ref->data, o.len) == 0,
                      "%u threads: the copy differs", t);
        ck_assert_uint_eq(o.stats.workers, t > 1 ? t : 0);
        if (t == threads)
            *par = o;
        else
            opened_free(&o);
    }
}

/* input_open("-") with `gz` written into standard input by a child, on
 * `threads`: a pipe's members are inflated in parallel through the tape
 * that keeps them, to the streaming copy, its code, message and salvage
 * offset (*ref); with several members, jobs took all but the first. */
static void same_through_a_pipe(const uint8_t *gz, size_t gz_len, unsigned flags,
                                unsigned threads, const struct opened *ref)
{
    struct piped_stdin ps = stdin_from_child(gz, gz_len);
    struct opened o;
    open_as("-", flags, threads, INPUT_INFLATE_PARALLEL, &o);
    (void)stdin_restore(ps);
    ck_assert_msg(o.rc == ref->rc && strcmp(o.message, ref->message) == 0,
                  "pipe, %u threads: %d \"%s\"; streaming: %d \"%s\"", threads, o.rc,
                  o.message, ref->rc, ref->message);
    ck_assert_int_eq(o.info.gzip_cut, ref->info.gzip_cut);
    ck_assert_uint_eq(o.info.gzip_cut_offset, ref->info.gzip_cut_offset);
    ck_assert_uint_eq(o.len, ref->len);
    ck_assert_msg(o.len == 0 || memcmp(o.data, ref->data, o.len) == 0,
                  "pipe, %u threads: the copy differs", threads);
    if (o.rc == HPROF_OK && ref->stats.members_streamed > 1 && o.stats.jobs_failed == 0)
        ck_assert_uint_gt(o.stats.members_parallel, 0);
    opened_free(&o);
}

/* same_both_ways() on the gzip bytes `gz`, from a temporary file that
 * goes at once. */
static void same_both_ways_on(const uint8_t *gz, size_t gz_len, unsigned flags, unsigned threads,
                              struct opened *ref, struct opened *par)
{
    char *path = tl_temp_file(gz, gz_len, ".hprof.gz");
    same_both_ways(path, flags, threads, ref, par);
    unlink(path);
    free(path);
    for (unsigned t = 1; t <= 3; t++)
        same_through_a_pipe(gz, gz_len, flags, t, ref);
}

static void opened_free_both(struct opened *ref, struct opened *par)
{
    opened_free(ref);
    opened_free(par);
}

/* A dump of `len` bytes (at least 64) whose records frame: a header, then
 * STRING records of 1000-70000 bytes, text and noise in turn, so that
 * members compress to varied sizes.  Deterministic. */
static uint8_t *framed_dump(size_t len)
{
    uint8_t *d = malloc(len);
    static const char header[31] = "JAVA PROFILE 1.0.2\0\0\0\0\4";
    memcpy(d, header, sizeof header);
    uint32_t x = 12345;
    size_t at = sizeof header;
    for (unsigned n = 0; at < len; n++) {
        x = x * 1103515245u + 12345u;
        size_t body = 1000 + (x >> 8) % 69000;
        if (at + 9 + body > len || len - (at + 9 + body) < 9)
            body = len - at - 9;
        d[at] = HPROF_TAG_STRING;
        memset(d + at + 1, 0, 4);
        d[at + 5] = (uint8_t)(body >> 24), d[at + 6] = (uint8_t)(body >> 16);
        d[at + 7] = (uint8_t)(body >> 8), d[at + 8] = (uint8_t)body;
        at += 9;
        for (size_t i = 0; i < body; i++, at++) {
            x = x * 1103515245u + 12345u;
            d[at] = n % 3 == 0 ? (uint8_t)(x >> 16) : (uint8_t)("some text of a heap "[i % 20]);
        }
    }
    return d;
}

/* The dump gzipped by our sink: 1 MiB members, as jcmd -gz writes them. */
static uint8_t *sink_gzip(const uint8_t *data, size_t len, size_t *out_len)
{
    char *path = tl_temp_file("", 0, ".gz");
    int fd = open(path, O_WRONLY | O_TRUNC);
    ck_assert_int_ge(fd, 0);
    struct hprof_error err = { 0 };
    struct hprof_sink *sink = hprof_sink_new_gzip(fd, 6, 2, &err);
    ck_assert_ptr_nonnull(sink);
    ck_assert_int_eq(hprof_sink_write(sink, data, len), HPROF_OK);
    ck_assert_int_eq(hprof_sink_finish(sink), HPROF_OK);
    hprof_sink_free(sink);
    close(fd);
    uint8_t *gz = tl_read_file(path, out_len);
    ck_assert_ptr_nonnull(gz);
    unlink(path);
    free(path);
    return gz;
}

/* One gzip member of `len` bytes at `level`, its header with what `h`
 * says (NULL: none), appended to *gz. */
static void add_member(uint8_t **gz, size_t *gz_len, const void *data, size_t len, int level,
                       gz_header *h)
{
    z_stream z = { 0 };
    ck_assert_int_eq(deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    if (h != NULL)
        ck_assert_int_eq(deflateSetHeader(&z, h), Z_OK);
    size_t cap = deflateBound(&z, len) + 1024;
    *gz = realloc(*gz, *gz_len + cap);
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)len;
    z.next_out = *gz + *gz_len;
    z.avail_out = (uInt)cap;
    ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    *gz_len += cap - z.avail_out;
    deflateEnd(&z);
}

/* `data` cut into members at the offsets `cuts` (ascending, then 0). */
static uint8_t *members_at(const uint8_t *data, size_t len, const size_t *cuts, int level,
                           size_t *gz_len)
{
    uint8_t *gz = NULL;
    size_t from = 0;
    *gz_len = 0;
    for (const size_t *c = cuts;; c++) {
        size_t to = *c ? *c : len;
        add_member(&gz, gz_len, data + from, to - from, level, NULL);
        from = to;
        if (*c == 0)
            break;
    }
    return gz;
}

/* Open gz both ways on `threads`, expecting `data`; *par the parallel
 * result (to be freed). */
static void expect_copy(const uint8_t *gz, size_t gz_len, const uint8_t *data, size_t len,
                        struct opened *par)
{
    struct opened ref;
    same_both_ways_on(gz, gz_len, 0, 2, &ref, par);
    ck_assert_msg(ref.rc == HPROF_OK, "%s", ref.message);
    ck_assert_uint_eq(ref.len, len);
    ck_assert_int_eq(memcmp(ref.data, data, len), 0);
    opened_free(&ref);
}

START_TEST(gzip_members_of_our_sink_inflate_in_parallel_to_the_same_copy)
{
    enum { LEN = (6 << 20) + 12345 };
    uint8_t *data = framed_dump(LEN);
    size_t gz_len;
    uint8_t *gz = sink_gzip(data, LEN, &gz_len);
    ck_assert_msg(memmem(gz, 64, "HPROF BLOCKSIZE=1048576", 23) != NULL, "not the JDK's format");
    struct opened par;
    expect_copy(gz, gz_len, data, LEN, &par);
    ck_assert_uint_eq(par.stats.members_parallel, 7);
    ck_assert_uint_eq(par.stats.members_streamed, 0);
    ck_assert_uint_eq(par.stats.jobs_discarded + par.stats.jobs_failed, 0);
    opened_free(&par);
    free(gz);
    free(data);
}
END_TEST

/* `cat a.gz b.gz`, gzip(1)'s members of any size, an empty one among them. */
START_TEST(gzip_members_concatenated_inflate_in_parallel_to_the_same_copy)
{
    enum { LEN = 5 << 20 };
    uint8_t *data = framed_dump(LEN);
    static const size_t cuts[] = { 100, 100, 70000, 1 << 20, (1 << 20) + 3, 3 << 20, 0 };
    size_t gz_len;
    uint8_t *gz = members_at(data, LEN, cuts, 6, &gz_len);
    struct opened par;
    expect_copy(gz, gz_len, data, LEN, &par);
    ck_assert_uint_eq(par.stats.members_parallel, 7);
    opened_free(&par);
    free(gz);
    free(data);
}
END_TEST

/* FEXTRA, FNAME and FCOMMENT are skipped by the workers as zlib skips them;
 * FHCRC, whose CRC zlib checks and libdeflate does not, is left to zlib. */
START_TEST(gzip_headers_with_extra_name_comment_and_crc_inflate_to_the_same_copy)
{
    enum { LEN = 3 << 20 };
    uint8_t *data = framed_dump(LEN);
    static uint8_t extra[300];
    memset(extra, 0x1f, sizeof extra); /* candidates in the header itself */
    gz_header h[4];
    memset(h, 0, sizeof h);
    h[0].extra = extra, h[0].extra_len = sizeof extra;
    h[1].name = (Bytef *)"dump.hprof";
    h[2].comment = (Bytef *)"HPROF BLOCKSIZE=1048576";
    h[2].name = (Bytef *)"x";
    h[3].hcrc = 1, h[3].name = (Bytef *)"crc";
    uint8_t *gz = NULL;
    size_t gz_len = 0, step = LEN / 5, crc_at = 0;
    for (unsigned i = 0; i < 5; i++) {
        if (i == 3)
            crc_at = gz_len + 10 + sizeof "crc";
        add_member(&gz, &gz_len, data + i * step, i < 4 ? step : LEN - 4 * step, 6,
                   i < 4 ? &h[i] : NULL);
    }
    struct opened ref, par;
    expect_copy(gz, gz_len, data, LEN, &par);
    ck_assert_uint_eq(par.stats.members_parallel, 4);
    ck_assert_uint_eq(par.stats.members_streamed, 1); /* the one with FHCRC */
    opened_free(&par);
    /* a wrong header CRC: zlib's error, which libdeflate would not see */
    gz[crc_at] ^= 1;
    same_both_ways_on(gz, gz_len, 0, 2, &ref, &par);
    ck_assert_msg(strstr(par.message, "gzip input is corrupt: header crc mismatch") != NULL, "%s",
                  par.message);
    opened_free_both(&ref, &par);
    free(gz);
    free(data);
}
END_TEST

/* A stored member whose data holds a whole gzip member: the scan takes it
 * for one, a worker may even inflate it, and it is dropped because the
 * member around it does not end there. */
START_TEST(gzip_member_inside_a_stored_member_is_not_taken_for_one)
{
    enum { LEN = 2 << 20, AT = 300000 };
    uint8_t *data = framed_dump(LEN);
    size_t fake_len;
    uint8_t *fake = tl_gzip_bytes("inside", 6, 0, &fake_len);
    memcpy(data + AT, fake, fake_len); /* inside a STRING's body */
    static const size_t cuts[] = { AT - 1000, AT + 50000, 0 };
    uint8_t *gz = NULL;
    size_t gz_len = 0;
    add_member(&gz, &gz_len, data, cuts[0], 6, NULL);
    add_member(&gz, &gz_len, data + cuts[0], cuts[1] - cuts[0], 0, NULL); /* stored */
    add_member(&gz, &gz_len, data + cuts[1], LEN - cuts[1], 6, NULL);
    ck_assert_ptr_nonnull(memmem(gz, gz_len, fake, fake_len));
    struct opened par;
    expect_copy(gz, gz_len, data, LEN, &par);
    ck_assert_uint_ge(par.stats.jobs_discarded, 1);
    ck_assert_uint_eq(par.stats.members_parallel + par.stats.members_streamed, 3);
    opened_free(&par);
    free(gz);
    free(fake);
    free(data);
}
END_TEST

/* Members bigger than a job may hold are inflated on the spot by zlib,
 * between members inflated in parallel; one member alone too. */
START_TEST(gzip_member_over_the_cap_and_single_members_inflate_to_the_same_copy)
{
    enum { LEN = 14 << 20 };
    uint8_t *data = framed_dump(LEN);
    static const size_t cuts[] = { 1 << 20, 11 << 20, 12 << 20, 0 };
    size_t gz_len;
    uint8_t *gz = members_at(data, LEN, cuts, 1, &gz_len);
    struct opened par;
    expect_copy(gz, gz_len, data, LEN, &par);
    ck_assert_uint_eq(par.stats.members_streamed, 1);
    ck_assert_uint_eq(par.stats.members_parallel, 3);
    opened_free(&par);
    free(gz);
    /* gzip(1): one member, over the cap (streamed) or not (one job) */
    static const size_t none[] = { 0 };
    gz = members_at(data, LEN, none, 1, &gz_len);
    expect_copy(gz, gz_len, data, LEN, &par);
    ck_assert_uint_eq(par.stats.members_streamed, 1);
    opened_free(&par);
    free(gz);
    gz = members_at(data, 3 << 20, none, 1, &gz_len);
    expect_copy(gz, gz_len, data, 3 << 20, &par);
    ck_assert_uint_eq(par.stats.members_parallel, 1);
    opened_free(&par);
    free(gz);
    free(data);
}
END_TEST

/* Three small members: the inputs of the cut and corruption loops. */
static uint8_t *small_members(uint8_t **data, size_t *len, size_t *gz_len, size_t *ends)
{
    *len = 200000;
    *data = framed_dump(*len);
    uint8_t *gz = NULL;
    *gz_len = 0;
    for (unsigned i = 0; i < 3; i++) {
        size_t from = i * (*len / 3), to = i < 2 ? (i + 1) * (*len / 3) : *len;
        add_member(&gz, gz_len, *data + from, to - from, 6, NULL);
        ends[i] = *gz_len;
    }
    return gz;
}

/* What follows the last member: nothing more is a member, half a magic is
 * a cut, a header that stops is a cut, garbage is an error, zeros to the
 * end are padding. */
START_TEST(gzip_bytes_after_the_last_member_end_as_in_a_stream)
{
    static const struct {
        const char *bytes;
        size_t len;
        int padding;
    } tails[] = {
        { "garbage\n", 8, 0 }, { "\x1f", 1, 0 }, { "\x1f\x8b", 2, 0 },
        { "\x1f\x8b\x08\x00\x00", 5, 0 },
        { "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff\xff\xff", 13, 0 },
        { "\0\0\0\0", 4, 1 }, { "\0\0\0\0garbage", 11, 0 },
        { "\x1f\x8b\x09\x00\x00\x00\x00\x00\x00\x03garbage garbage", 25, 0 },
    };
    uint8_t *data;
    size_t len, gz_len, ends[3];
    uint8_t *gz = small_members(&data, &len, &gz_len, ends);
    gz = realloc(gz, gz_len + 64);
    for (unsigned i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        memcpy(gz + gz_len, tails[i].bytes, tails[i].len);
        for (unsigned salvage = 0; salvage < 2; salvage++) {
            struct opened ref, par;
            same_both_ways_on(gz, gz_len + tails[i].len, salvage ? HPROF_INPUT_SALVAGE : 0, 2,
                              &ref, &par);
            if (tails[i].padding)
                ck_assert_msg(ref.rc == HPROF_OK && !ref.info.gzip_cut, "tail %u: %d %s", i,
                              ref.rc, ref.message);
            else
                ck_assert_msg(ref.rc != HPROF_OK || (salvage && ref.info.gzip_cut),
                              "tail %u: %d %s", i, ref.rc, ref.message);
            opened_free_both(&ref, &par);
        }
    }
    free(gz);
    free(data);
}
END_TEST

/* Cut offsets: a few bytes either side of each end of member, then every
 * 997th byte. */
#define CUTS_NEAR 12
#define CUTS_STRIDE 997
#define CUT_TESTS (3 * 2 * CUTS_NEAR + 100)

static size_t cut_offset(int i, const size_t *ends, size_t gz_len)
{
    ck_assert_uint_lt(gz_len, (CUT_TESTS - 3 * 2 * CUTS_NEAR) * CUTS_STRIDE);
    if (i < 3 * 2 * CUTS_NEAR)
        return ends[i / (2 * CUTS_NEAR)] - CUTS_NEAR + (size_t)(i % (2 * CUTS_NEAR));
    return (size_t)(i - 3 * 2 * CUTS_NEAR) * CUTS_STRIDE;
}

/* The three small members cut at offset `at`: an error, or with salvage
 * the copy of what is complete and the offset, as when streamed. */
START_TEST(gzip_cut_anywhere_fails_or_salvages_as_in_a_stream)
{
    uint8_t *data;
    size_t len, gz_len, ends[3];
    uint8_t *gz = small_members(&data, &len, &gz_len, ends);
    size_t at = cut_offset(_i, ends, gz_len);
    if (at >= 2 && at <= gz_len) { /* shorter is not gzip */
        for (unsigned salvage = 0; salvage < 2; salvage++) {
            struct opened ref, par;
            same_both_ways_on(gz, at, salvage ? HPROF_INPUT_SALVAGE : 0, 2, &ref, &par);
            if (at != ends[0] && at != ends[1] && at != ends[2] && !salvage) /* else whole */
                ck_assert_msg(ref.rc == HPROF_ERR_TRUNCATED &&
                              strstr(ref.message, "gzip input is truncated") != NULL,
                              "cut at %zu: %s", at, ref.message);
            opened_free_both(&ref, &par);
        }
    }
    free(gz);
    free(data);
}
END_TEST

/* A byte of the middle member changed: the same error at the same
 * compressed offset as when streamed (or the same copy, if the change
 * happens not to matter, as in the header's time stamp). */
START_TEST(gzip_corrupt_middle_member_says_where_as_in_a_stream)
{
    uint8_t *data;
    size_t len, gz_len, ends[3];
    uint8_t *gz = small_members(&data, &len, &gz_len, ends);
    size_t span = ends[1] - ends[0], at = ends[0] + (size_t)_i * span / 40;
    gz[at] ^= (uint8_t)(0x55 + _i);
    struct opened ref, par;
    same_both_ways_on(gz, gz_len, 0, 2, &ref, &par);
    if (at >= ends[0] + 10 && at < ends[1] - 8) /* in the deflate data */
        ck_assert_msg(ref.rc == HPROF_ERR_FORMAT &&
                      strstr(ref.message, "(compressed): gzip input is corrupt") != NULL,
                      "byte %zu: %s", at, ref.message);
    opened_free_both(&ref, &par);
    free(gz);
    free(data);
}
END_TEST

/* Zeros behind a valid header, in a file of 1 MiB members: the copy stops
 * at the first record whichever member holds it, after inflating a few
 * members at most (one job in flight until the magic is checked, then four
 * per worker), not the 64 MiB the file holds. */
START_TEST(gzip_file_of_zeros_behind_a_header_stops_after_a_few_members)
{
    enum { BIG = 64 << 20, MIB = 1 << 20 };
    static const uint8_t header[31] = "JAVA PROFILE 1.0.3\0\0\0\0\4";
    uint8_t *raw = calloc(1, BIG);
    for (unsigned alone = 0; alone < 2; alone++) {
        uint8_t *gz = NULL;
        size_t gz_len = 0, zeros_len;
        if (alone)
            memset(raw, 0, sizeof header);
        else
            memcpy(raw, header, sizeof header);
        if (alone) /* the header in a member of its own, the zeros after */
            add_member(&gz, &gz_len, header, sizeof header, 6, NULL);
        uint8_t *zeros = sink_gzip(raw, BIG, &zeros_len);
        gz = realloc(gz, gz_len + zeros_len);
        memcpy(gz + gz_len, zeros, zeros_len);
        struct opened ref, par;
        same_both_ways_on(gz, gz_len + zeros_len, 0, 2, &ref, &par);
        ck_assert_int_eq(par.rc, HPROF_ERR_TRUNCATED);
        ck_assert_str_eq(par.message, "offset 0x1f: zero bytes where a record should start (a preallocated or zero-filled tail?)");
        ck_assert_uint_le(par.stats.bytes_spooled, sizeof header);
        ck_assert_uint_le(par.stats.bytes_speculated,
                          alone ? sizeof header + (4 * 2 + 1) * MIB : MIB);
        opened_free_both(&ref, &par);
        free(zeros);
        free(gz);
    }
    free(raw);
}
END_TEST

/* A file that does not inflate to a dump: given up after its first member. */
START_TEST(gzip_file_that_is_not_a_dump_stops_after_its_first_member)
{
    enum { BIG = 32 << 20, MIB = 1 << 20 };
    uint8_t *raw = malloc(BIG);
    for (size_t i = 0; i < BIG; i++)
        raw[i] = (uint8_t)(i * 2654435761u >> 13);
    memcpy(raw, "NOT A HEAP DUMP", 15);
    size_t gz_len;
    uint8_t *gz = sink_gzip(raw, BIG, &gz_len);
    struct opened ref, par;
    same_both_ways_on(gz, gz_len, 0, 3, &ref, &par);
    ck_assert_str_eq(par.message,
                     "offset 0x0: header: not a heap dump (no \"JAVA PROFILE 1.0.x\" magic)");
    ck_assert_uint_le(par.stats.bytes_speculated, MIB);
    opened_free_both(&ref, &par);
    free(gz);
    free(raw);
}
END_TEST

/* Members as big as a job may be, many in flight: the buffers held stay
 * within the bound hprof.h states (17 MiB and 12 MiB per thread), whatever
 * the file's size. */
START_TEST(gzip_members_in_flight_hold_bounded_buffers)
{
    enum { LEN = 96 << 20, MEMBER = 8 << 20 };
    uint8_t *data = calloc(1, LEN);
    static const uint8_t header[31] = "JAVA PROFILE 1.0.3\0\0\0\0\4";
    memcpy(data, header, sizeof header);
    for (size_t at = sizeof header; at < LEN;) { /* STRING records of zeros */
        uint32_t body = (uint32_t)(LEN - at - 9 < 5000000 ? LEN - at - 9 : 5000000);
        data[at] = HPROF_TAG_STRING;
        data[at + 5] = (uint8_t)(body >> 24), data[at + 6] = (uint8_t)(body >> 16);
        data[at + 7] = (uint8_t)(body >> 8), data[at + 8] = (uint8_t)body;
        at += 9 + body;
    }
    size_t cuts[LEN / MEMBER + 1], n = 0;
    for (size_t at = MEMBER; at < LEN; at += MEMBER)
        cuts[n++] = at;
    cuts[n] = 0;
    size_t gz_len;
    uint8_t *gz = members_at(data, LEN, cuts, 1, &gz_len);
    char *path = tl_temp_file(gz, gz_len, ".hprof.gz");
    for (unsigned threads = 1; threads <= 4; threads *= 2) {
        struct opened o;
        open_as(path, 0, threads, INPUT_INFLATE_PARALLEL, &o);
        ck_assert_msg(o.rc == HPROF_OK, "%s", o.message);
        ck_assert_uint_eq(o.len, LEN);
        ck_assert_int_eq(memcmp(o.data, data, LEN), 0);
        ck_assert_uint_eq(o.stats.members_parallel, LEN / MEMBER);
        uint64_t workers = threads > 1 ? threads : 0;
        ck_assert_msg(o.stats.buffers_peak <= (17u << 20) + (12u << 20) * (workers ? workers : 1),
                      "%u threads: %" PRIu64 " bytes of buffers", threads, o.stats.buffers_peak);
        opened_free(&o);
    }
    unlink(path);
    free(path);
    free(gz);
    free(data);
}
END_TEST

/* -j1: no thread; 0 (one per core): none either for a small file. */
START_TEST(gzip_one_thread_starts_no_worker)
{
    uint8_t *data;
    size_t len, gz_len, ends[3];
    uint8_t *gz = small_members(&data, &len, &gz_len, ends);
    char *path = tl_temp_file(gz, gz_len, ".hprof.gz");
    struct opened o;
    open_as(path, 0, 1, INPUT_INFLATE_PARALLEL, &o);
    ck_assert_uint_eq(o.stats.workers, 0);
    ck_assert_uint_eq(o.stats.members_parallel, 3);
    opened_free(&o);
    open_as(path, 0, 0, INPUT_INFLATE_PARALLEL, &o);
    ck_assert_uint_eq(o.stats.workers, 0);
    opened_free(&o);
    unlink(path);
    free(path);
    free(gz);
    free(data);
}
END_TEST

/* A dump followed by 100,000 empty members (20 bytes each): each would be
 * a job, a read and hand-overs between threads, 100x what streaming them
 * costs; after a run of small members the rest is streamed, so the jobs
 * stay few, and the copy is the stream's. */
START_TEST(gzip_many_tiny_members_are_streamed_not_made_jobs)
{
    enum { LEN = 300000, EMPTY = 20000 };
    uint8_t *data = framed_dump(LEN), *gz;
    size_t gz_len;
    static const size_t cuts[] = { 100000, 200000, 0 };
    gz = members_at(data, LEN, cuts, 6, &gz_len);
    for (unsigned i = 0; i < EMPTY; i++)
        add_member(&gz, &gz_len, "", 0, 6, NULL);
    struct opened par;
    expect_copy(gz, gz_len, data, LEN, &par);
    ck_assert_uint_lt(par.stats.members_parallel + par.stats.jobs_discarded +
                      par.stats.jobs_failed, 1000);
    ck_assert_uint_gt(par.stats.members_streamed, EMPTY - 1000);
    opened_free(&par);
    free(gz);
    free(data);
}
END_TEST

static Suite *input_suite(void)
{
    Suite *s = suite_create("input");
    TCase *t = tcase_create("input");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, gzip_input_that_is_not_a_dump_fails_at_its_first_bytes);
    tcase_add_test(t, gzip_zeros_behind_a_header_stop_at_the_first_record);
    tcase_add_test(t, gzip_trailing_garbage_is_an_error);
    tcase_add_test(t, gzip_zero_padding_after_the_last_member_is_passed_over);
    tcase_add_test(t, xz_under_gzip_says_it_is_compressed_twice);
    tcase_add_test(t, gzip_garbage_after_zero_padding_is_an_error_at_its_offset);
    tcase_add_test(t, gzip_members_one_after_another_are_one_dump);
    tcase_add_test(t, gzip_truncated_says_so_once_without_the_name);
    tcase_add_test(t, gzip_corrupt_says_where);
    tcase_add_test(t, zstd_frames_one_after_another_are_one_dump);
    tcase_add_test(t, zstd_a_skippable_frame_first_is_passed_over);
    tcase_add_test(t, zstd_zeros_behind_a_header_stop_at_the_first_record);
    tcase_add_test(t, gzip_of_two_joined_dumps_stops_at_the_second_header_and_says_so);
    tcase_add_test(t, gzip_of_a_gzip_says_it_is_compressed_twice);
    tcase_add_test(t, zstd_truncated_says_where_it_ends);
    tcase_add_test(t, zstd_corrupt_says_where);
    tcase_add_test(t, gzip_copy_larger_than_the_temporary_directory_names_it);
    tcase_add_test(t, gzip_copy_into_a_missing_temporary_directory_is_no_room);
    tcase_add_test(t, gzip_copy_that_cannot_be_written_is_no_room);
    suite_add_tcase(s, t);

    TCase *p = tcase_create("parallel");
    tcase_set_timeout(p, 120);
    tcase_add_test(p, gzip_members_of_our_sink_inflate_in_parallel_to_the_same_copy);
    tcase_add_test(p, gzip_members_concatenated_inflate_in_parallel_to_the_same_copy);
    tcase_add_test(p, gzip_headers_with_extra_name_comment_and_crc_inflate_to_the_same_copy);
    tcase_add_test(p, gzip_member_inside_a_stored_member_is_not_taken_for_one);
    tcase_add_test(p, gzip_member_over_the_cap_and_single_members_inflate_to_the_same_copy);
    tcase_add_test(p, gzip_bytes_after_the_last_member_end_as_in_a_stream);
    tcase_add_loop_test(p, gzip_cut_anywhere_fails_or_salvages_as_in_a_stream, 0, CUT_TESTS);
    tcase_add_loop_test(p, gzip_corrupt_middle_member_says_where_as_in_a_stream, 0, 40);
    tcase_add_test(p, gzip_file_of_zeros_behind_a_header_stops_after_a_few_members);
    tcase_add_test(p, gzip_file_that_is_not_a_dump_stops_after_its_first_member);
    tcase_add_test(p, gzip_members_in_flight_hold_bounded_buffers);
    tcase_add_test(p, gzip_one_thread_starts_no_worker);
    tcase_add_test(p, gzip_many_tiny_members_are_streamed_not_made_jobs);
    suite_add_tcase(s, p);
    return s;
}

int main(void)
{
    return tl_run_suite(input_suite());
}
