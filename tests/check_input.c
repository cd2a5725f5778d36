/*
 * check_input.c - hprof_input_open() on gzip and piped input that is not
 * what it claims: the magic checked in the first bytes inflated, the copy
 * bounded by the room of its directory, trailing garbage and truncation
 * reported, and messages that do not repeat the input's name (the tools
 * print it before them).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "testlib.h"

/* `len` bytes gzipped (level 0 for speed when `stored`) into a new buffer. */
static uint8_t *gzip_bytes(const void *data, size_t len, int stored, size_t *out_len)
{
    z_stream z = { 0 };
    ck_assert_int_eq(deflateInit2(&z, stored ? 0 : 6, Z_DEFLATED, 15 + 16, 8,
                                  Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, len) + 64;
    uint8_t *out = malloc(cap);
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

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

/* hprof_input_open("-") with `gz` fed through a pipe by a child process;
 * @return its code, and in *written how much the child could write before
 * the pipe was closed. */
static int open_piped(const uint8_t *gz, size_t gz_len, struct hprof_error *err,
                      size_t *written)
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
        while (done < gz_len) {
            ssize_t n = write(p[1], gz + done, gz_len - done > 65536 ? 65536 : gz_len - done);
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
    int saved = dup(STDIN_FILENO);
    dup2(p[0], STDIN_FILENO);
    close(p[0]);
    int fd = -1;
    int rc = hprof_input_open("-", &fd, NULL, err);
    if (fd >= 0)
        close(fd);
    dup2(saved, STDIN_FILENO); /* closes the pipe: the writer stops */
    close(saved);
    ck_assert_int_eq(read(counted[0], written, sizeof *written), (ssize_t)sizeof *written);
    close(counted[0]);
    waitpid(child, NULL, 0);
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
    uint8_t *gz = gzip_bytes(raw, BIG, 1, &gz_len);
    free(raw);
    struct hprof_error err = { 0 };
    ck_assert_int_eq(open_piped(gz, gz_len, &err, &written), HPROF_ERR_FORMAT);
    ck_assert_str_eq(err.message,
                     "offset 0x0: header: not a heap dump (no \"JAVA PROFILE 1.0.x\" magic)");
    ck_assert_msg(written < gz_len / 4, "%zu of %zu bytes read before giving up", written, gz_len);
    free(gz);
}
END_TEST

/* Zeros behind a valid header read as records of tag 0: the copy stops at
 * the first, not after the 32 MB they inflate to. */
START_TEST(gzip_zeros_behind_a_header_stop_at_the_first_record)
{
    enum { BIG = 32 << 20 };
    uint8_t *raw = calloc(1, BIG);
    static const uint8_t header[31] = "JAVA PROFILE 1.0.3\0\0\0\0\4";
    memcpy(raw, header, sizeof header);
    size_t gz_len, written;
    uint8_t *gz = gzip_bytes(raw, BIG, 1, &gz_len);
    free(raw);
    struct hprof_error err = { 0 };
    ck_assert_int_eq(open_piped(gz, gz_len, &err, &written), HPROF_ERR_FORMAT);
    ck_assert_str_eq(err.message, "offset 0x1f: tag 0x00: unknown record tag");
    ck_assert_msg(written < gz_len / 4, "%zu of %zu bytes read before giving up", written, gz_len);
    free(gz);
}
END_TEST

START_TEST(gzip_trailing_garbage_is_an_error)
{
    struct tbuf b = small_dump();
    size_t gz_len;
    uint8_t *gz = gzip_bytes(b.data, b.len, 0, &gz_len);
    gz = realloc(gz, gz_len + 8);
    memcpy(gz + gz_len, "garbage\n", 8);
    struct hprof_error err = { 0 };
    char *path;
    ck_assert_int_eq(open_file(gz, gz_len + 8, &err, &path), HPROF_ERR_FORMAT);
    char want[160];
    snprintf(want, sizeof want, "offset 0x%zx (compressed): gzip input has trailing bytes after "
             "its last member that are not another member", gz_len);
    ck_assert_str_eq(err.message, want);
    unlink(path);
    free(path);
    free(gz);
    tb_free(&b);
}
END_TEST

/* As the JDK writes them: one member after another, read as one stream. */
START_TEST(gzip_members_one_after_another_are_one_dump)
{
    struct tbuf b = small_dump();
    size_t half = b.len / 2, len1, len2;
    uint8_t *m1 = gzip_bytes(b.data, half, 0, &len1);
    uint8_t *m2 = gzip_bytes(b.data + half, b.len - half, 0, &len2);
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
    uint8_t *gz = gzip_bytes(b.data, b.len, 0, &gz_len);
    struct hprof_error err = { 0 };
    char *path;
    ck_assert_int_eq(open_file(gz, gz_len - 10, &err, &path), HPROF_ERR_FORMAT);
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
    enum { BIG = 4 << 20 };
    uint8_t *raw = calloc(1, BIG);
    memcpy(raw, "JAVA PROFILE 1.0.3\0\0\0\0\4", 23);
    uint32_t body = BIG - 31 - 9; /* one STRING record: it frames */
    raw[31] = HPROF_TAG_STRING;
    raw[36] = (uint8_t)(body >> 24), raw[37] = (uint8_t)(body >> 16);
    raw[38] = (uint8_t)(body >> 8), raw[39] = (uint8_t)body;
    size_t gz_len;
    uint8_t *gz = gzip_bytes(raw, BIG, 0, &gz_len);
    char *path = tl_temp_file(gz, gz_len, ".hprof.gz");
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("TMPDIR", dir, 1);
    struct hprof_error err = { 0 };
    int fd = -1;
    int rc = hprof_input_open(path, &fd, NULL, &err);
    if (saved) {
        setenv("TMPDIR", saved, 1);
        free(saved);
    } else {
        unsetenv("TMPDIR");
    }
    tl_system("umount %s", dir);
    rmdir(dir);
    ck_assert_int_eq(rc, HPROF_ERR_IO);
    ck_assert_msg(strstr(err.message, dir) != NULL && strstr(err.message, "TMPDIR") != NULL &&
                  strstr(err.message, "would exceed the") != NULL, "%s", err.message);
    assert_no_name(&err, path);
    unlink(path);
    free(path);
    free(gz);
    free(raw);
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
    tcase_add_test(t, gzip_members_one_after_another_are_one_dump);
    tcase_add_test(t, gzip_truncated_says_so_once_without_the_name);
    tcase_add_test(t, gzip_corrupt_says_where);
    tcase_add_test(t, gzip_copy_larger_than_the_temporary_directory_names_it);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(input_suite());
}
