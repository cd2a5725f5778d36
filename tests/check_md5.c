/*
 * check_md5.c - MD5 of many buffers at once (src/common/md5_lanes.c) gives
 * what OpenSSL's MD5 gives, for every kernel this machine can run: at every
 * length around a block's and a lane's chunk's end, with lanes full and
 * draining, with a job begun on the lanes and finished alone, and with
 * threads sharing a queue; viewed in place or read into the lanes'
 * buffers; and a failed read stops the queue.  Also the shrink's key for
 * a buffer (digest_pieces_*(), src/common/digest.c): MD5 up to a piece,
 * the MD5 of the pieces' MD5s beyond, the same however the bytes come.
 */
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "md5_lanes.h"
#include "testlib.h"

static const enum md5_kernel KERNELS[] = { MD5_KERNEL_PORTABLE, MD5_KERNEL_AVX512,
                                           MD5_KERNEL_BEST };
enum { N_KERNELS = sizeof KERNELS / sizeof *KERNELS };
/* Loop tests run every kernel on a source viewed in place, then copied. */
#define KERNEL KERNELS[_i % N_KERNELS]
#define COPIED (_i / N_KERNELS)

/* The source: a buffer of pseudo-random bytes, viewed in place (as a
 * mapping is) or copied into the lane's buffer (as pread() does). */
struct source {
    uint8_t *bytes;
    size_t size;
    uint64_t fail_at;       /* a view covering this offset fails (UINT64_MAX: none) */
    int copy;
    atomic_ullong viewed; /* bytes */
};

/* What a thread running a queue hands its views. */
struct viewing_thread {
    pthread_t self;
    unsigned long views;
    unsigned long elsewhere; /* views run on another thread than self */
};

static int view_source(void *arg, void *thread, const struct md5_job *job, uint64_t offset,
                       size_t len, uint8_t *buf, const uint8_t **p, struct hprof_error *err)
{
    struct source *s = arg;
    struct viewing_thread *t = thread;
    if (t != NULL) {
        t->views++;
        t->elsewhere += !pthread_equal(t->self, pthread_self());
    }
    ck_assert_uint_le(offset + len, s->size);
    /* a view is of the job it names */
    ck_assert_uint_ge(offset, job->offset);
    ck_assert_uint_le(offset + len, job->offset + job->bytes);
    if (s->fail_at >= offset && s->fail_at < offset + len)
        return hprof_error_set(err, HPROF_ERR_IO, "offset %llu: read failed",
                               (unsigned long long)s->fail_at);
    if (s->copy) {
        memcpy(buf, s->bytes + offset, len);
        *p = buf;
    } else {
        *p = s->bytes + offset;
    }
    atomic_fetch_add(&s->viewed, len);
    return HPROF_OK;
}

static struct source new_source(size_t size)
{
    struct source s = { .bytes = malloc(size), .size = size, .fail_at = UINT64_MAX };
    ck_assert_ptr_nonnull(s.bytes);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < size; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        s.bytes[i] = (uint8_t)x;
    }
    return s;
}

static void openssl_md5(const uint8_t *p, size_t n, uint8_t out[16])
{
    unsigned len = 0;
    ck_assert_int_eq(EVP_Digest(p, n, out, &len, EVP_md5(), NULL), 1);
    ck_assert_uint_eq(len, 16);
}

/* Is `kernel` runnable here?  If not, a queue asking for it is refused,
 * which the test asserts instead. */
static int kernel_or_refusal(enum md5_kernel kernel, struct md5_job *jobs, size_t n,
                             struct source *s)
{
    if (md5_kernel_available(kernel))
        return 1;
    struct md5_queue q = { .jobs = jobs, .n_jobs = n, .view = view_source, .source = s,
                           .kernel = kernel };
    struct hprof_error err = { 0 };
    atomic_init(&q.next, 0);
    ck_assert_int_eq(md5_queue_run(&q, NULL, &err), HPROF_ERR_USAGE);
    fprintf(stderr, "check_md5: this CPU has no AVX-512; its refusal was tested instead\n");
    return 0;
}

static void run_queue(struct md5_job *jobs, size_t n, struct source *s, enum md5_kernel kernel)
{
    struct md5_queue q = { .jobs = jobs, .n_jobs = n, .view = view_source, .source = s,
                           .kernel = kernel };
    struct hprof_error err = { 0 };
    atomic_init(&q.next, 0);
    ck_assert_msg(md5_queue_run(&q, NULL, &err) == HPROF_OK, "%s", err.message);
}

static void assert_jobs_match_openssl(const struct md5_job *jobs, size_t n, struct source *s)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += jobs[i].bytes;
    ck_assert_uint_eq(atomic_load(&s->viewed), bytes); /* each byte viewed once */
    for (size_t i = 0; i < n; i++) {
        uint8_t want[16];
        openssl_md5(s->bytes + jobs[i].offset, (size_t)jobs[i].bytes, want);
        ck_assert_msg(memcmp(jobs[i].md5, want, 16) == 0, "job %zu (%llu bytes at %llu) differs",
                      i, (unsigned long long)jobs[i].bytes, (unsigned long long)jobs[i].offset);
    }
}

START_TEST(md5_of_the_rfc1321_test_suite)
{
    static const char *const text[] = {
        "", "a", "abc", "message digest", "abcdefghijklmnopqrstuvwxyz",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
    };
    static const char *const hex[] = {
        "d41d8cd98f00b204e9800998ecf8427e", "0cc175b9c0f1b6a831c399e269772661",
        "900150983cd24fb0d6963f7d28e17f72", "f96b697d7cb7938d525a2f31aaf161d0",
        "c3fcd3d76192e4007dfb496cca67e13b", "d174ab98d277d9f5a5611c2c9f419d9f",
        "57edf4a22be3c955ac49da2e2107b67a",
    };
    enum { N = sizeof text / sizeof *text };
    struct source s = { 0 };
    struct md5_job jobs[N];
    s.size = 0;
    for (size_t i = 0; i < N; i++)
        s.size += strlen(text[i]);
    s.bytes = malloc(s.size + 1);
    s.fail_at = UINT64_MAX;
    s.copy = COPIED;
    for (size_t i = 0, at = 0; i < N; at += strlen(text[i]), i++) {
        memcpy(s.bytes + at, text[i], strlen(text[i]));
        jobs[i] = (struct md5_job){ .offset = at, .bytes = strlen(text[i]) };
    }
    if (kernel_or_refusal(KERNEL, jobs, N, &s)) {
        run_queue(jobs, N, &s, KERNEL);
        for (size_t i = 0; i < N; i++) {
            char got[33];
            for (unsigned k = 0; k < 16; k++)
                snprintf(got + 2 * k, 3, "%02x", jobs[i].md5[k]);
            ck_assert_str_eq(got, hex[i]);
        }
    }
    free(s.bytes);
}
END_TEST

/* Lengths 0..300 (every way a block and its padding can end) and around
 * the end of a lane's 128 KiB chunk, at odd offsets; more jobs than lanes. */
START_TEST(md5_matches_openssl_at_every_length_around_block_and_buffer_ends)
{
    struct source s = new_source(8u << 20);
    s.copy = COPIED;
    size_t n = 0;
    struct md5_job *jobs = calloc(600, sizeof *jobs);
    uint64_t at = 1;
    for (uint64_t len = 0; len <= 300; len++, at += len + 3)
        jobs[n++] = (struct md5_job){ .offset = at, .bytes = len };
    for (uint64_t len = (128u << 10) - 72; len <= (128u << 10) + 72; len++, at += 7)
        jobs[n++] = (struct md5_job){ .offset = at % (4u << 20), .bytes = len };
    jobs[n++] = (struct md5_job){ .offset = 5, .bytes = 3 * (128u << 10) + 55 };
    jobs[n++] = (struct md5_job){ .offset = 0, .bytes = 4u << 20 };
    if (kernel_or_refusal(KERNEL, jobs, n, &s)) {
        run_queue(jobs, n, &s, KERNEL);
        assert_jobs_match_openssl(jobs, n, &s);
    }
    free(jobs);
    free(s.bytes);
}
END_TEST

/* A large job taken first outlives the small ones: begun on sixteen lanes,
 * it is finished alone from the state the lanes left. */
START_TEST(md5_of_a_job_begun_on_the_lanes_and_finished_alone)
{
    struct source s = new_source(3u << 20);
    s.copy = COPIED;
    struct md5_job jobs[20];
    jobs[0] = (struct md5_job){ .offset = 17, .bytes = (2u << 20) + 13 };
    for (unsigned i = 1; i < 20; i++)
        jobs[i] = (struct md5_job){ .offset = 1000u * i, .bytes = 70000u + 100u * i };
    if (kernel_or_refusal(KERNEL, jobs, 20, &s)) {
        run_queue(jobs, 20, &s, KERNEL);
        assert_jobs_match_openssl(jobs, 20, &s);
    }
    free(s.bytes);
}
END_TEST

struct shared_run {
    struct md5_queue *q;
    struct viewing_thread viewing;
    int rc;
    struct hprof_error err;
};

static void *run_shared(void *arg)
{
    struct shared_run *r = arg;
    r->viewing.self = pthread_self();
    r->rc = md5_queue_run(r->q, &r->viewing, &r->err);
    return NULL;
}

START_TEST(md5_threads_sharing_a_queue_hash_each_job_once)
{
    enum { JOBS = 200, THREADS = 3 };
    struct source s = new_source(2u << 20);
    struct md5_job jobs[JOBS];
    for (unsigned i = 0; i < JOBS; i++)
        jobs[i] = (struct md5_job){ .offset = 4099u * i, .bytes = 1000u + 977u * (i % 50) };
    struct md5_queue q = { .jobs = jobs, .n_jobs = JOBS, .view = view_source,
                           .source = &s };
    atomic_init(&q.next, 0);
    pthread_t t[THREADS];
    struct shared_run r[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        r[i] = (struct shared_run){ .q = &q };
        ck_assert_int_eq(pthread_create(&t[i], NULL, run_shared, &r[i]), 0);
    }
    for (unsigned i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_msg(r[i].rc == HPROF_OK, "%s", r[i].err.message);
    }
    assert_jobs_match_openssl(jobs, JOBS, &s);
    free(s.bytes);
}
END_TEST

/* Each thread's views get what that thread gave md5_queue_run(): room of
 * its own, with no thread-local state. */
START_TEST(md5_views_get_the_argument_of_the_thread_that_runs_them)
{
    enum { JOBS = 300, THREADS = 3 };
    struct source s = new_source(2u << 20);
    struct md5_job jobs[JOBS];
    for (unsigned i = 0; i < JOBS; i++) /* each under a view: a view per job */
        jobs[i] = (struct md5_job){ .offset = 5003u * i, .bytes = 700u + 311u * (i % 13) };
    struct md5_queue q = { .jobs = jobs, .n_jobs = JOBS, .view = view_source, .source = &s };
    atomic_init(&q.next, 0);
    pthread_t t[THREADS];
    struct shared_run r[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        r[i] = (struct shared_run){ .q = &q };
        ck_assert_int_eq(pthread_create(&t[i], NULL, run_shared, &r[i]), 0);
    }
    unsigned long views = 0;
    for (unsigned i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_msg(r[i].rc == HPROF_OK, "%s", r[i].err.message);
        ck_assert_uint_eq(r[i].viewing.elsewhere, 0);
        views += r[i].viewing.views;
    }
    ck_assert_uint_eq(views, JOBS);
    assert_jobs_match_openssl(jobs, JOBS, &s);
    free(s.bytes);
}
END_TEST

START_TEST(md5_queue_stops_at_a_failed_read_and_says_where)
{
    struct source s = new_source(1u << 20);
    s.copy = COPIED;
    struct md5_job jobs[40];
    for (unsigned i = 0; i < 40; i++)
        jobs[i] = (struct md5_job){ .offset = 20000u * i, .bytes = 20000 };
    s.fail_at = 20000u * 7 + 5;
    if (kernel_or_refusal(KERNEL, jobs, 40, &s)) {
        struct md5_queue q = { .jobs = jobs, .n_jobs = 40, .view = view_source, .source = &s,
                               .kernel = KERNEL };
        struct hprof_error err = { 0 };
        atomic_init(&q.next, 0);
        ck_assert_int_eq(md5_queue_run(&q, NULL, &err), HPROF_ERR_IO);
        ck_assert_str_eq(err.message, "offset 140005: read failed");
        ck_assert_uint_eq(atomic_load(&q.next), 40); /* other threads take nothing more */
    }
    free(s.bytes);
}
END_TEST

/* The sizes around the end of one piece and of several. */
static const uint64_t PIECED_SIZES[] = {
    0, 1, DIGEST_PIECE - 1, DIGEST_PIECE, DIGEST_PIECE + 1, 2 * DIGEST_PIECE, 3 * DIGEST_PIECE + 77,
};
enum { N_PIECED_SIZES = sizeof PIECED_SIZES / sizeof *PIECED_SIZES };

/* The key as digest.c defines it, computed here from its definition. */
static void key_by_definition(const uint8_t *p, uint64_t n, uint8_t out[16])
{
    if (n <= DIGEST_PIECE) {
        openssl_md5(p, (size_t)n, out);
        return;
    }
    size_t pieces = (size_t)((n + DIGEST_PIECE - 1) / DIGEST_PIECE);
    uint8_t *md5s = malloc(16 * pieces);
    ck_assert_ptr_nonnull(md5s);
    for (size_t i = 0; i < pieces; i++) {
        uint64_t at = i * DIGEST_PIECE, len = n - at < DIGEST_PIECE ? n - at : DIGEST_PIECE;
        openssl_md5(p + at, (size_t)len, md5s + 16 * i);
    }
    openssl_md5(md5s, 16 * pieces, out);
    free(md5s);
}

START_TEST(pieced_key_from_bytes_in_any_split_follows_its_definition)
{
    uint64_t size = PIECED_SIZES[_i];
    struct source s = new_source((size_t)size + 1);
    struct hprof_error err = { 0 };
    struct digest *d = digest_new(&err);
    ck_assert_ptr_nonnull(d);
    uint8_t want[16], whole[16], split[16];
    key_by_definition(s.bytes, size, want);
    ck_assert_int_eq(digest_pieces_begin(d, size), HPROF_OK);
    ck_assert_int_eq(digest_pieces_update(d, s.bytes, (size_t)size), HPROF_OK);
    ck_assert_int_eq(digest_pieces_final(d, whole), HPROF_OK);
    ck_assert_int_eq(digest_pieces_begin(d, size), HPROF_OK);
    for (uint64_t at = 0; at < size; at += 65599) { /* parts that straddle the pieces */
        size_t part = (size_t)(size - at < 65599 ? size - at : 65599);
        ck_assert_int_eq(digest_pieces_update(d, s.bytes + at, part), HPROF_OK);
    }
    ck_assert_int_eq(digest_pieces_final(d, split), HPROF_OK);
    ck_assert_mem_eq(whole, want, 16);
    ck_assert_mem_eq(split, want, 16);
    digest_free(d);
    free(s.bytes);
}
END_TEST

/* What the shrink does with a buffer hashed on the lanes: a job per piece,
 * the key from their MD5s; it must equal the key from the bytes. */
START_TEST(pieced_key_from_the_pieces_md5s_equals_the_key_from_the_bytes)
{
    uint64_t size = PIECED_SIZES[_i];
    struct source s = new_source((size_t)size + 1);
    struct hprof_error err = { 0 };
    struct digest *d = digest_new(&err);
    ck_assert_ptr_nonnull(d);
    struct md5_job jobs[8];
    size_t n = 0;
    uint64_t at = 0;
    do {
        uint64_t len = size - at < DIGEST_PIECE ? size - at : DIGEST_PIECE;
        jobs[n++] = (struct md5_job){ .offset = at, .bytes = len };
        at += len;
    } while (at < size);
    run_queue(jobs, n, &s, MD5_KERNEL_BEST);
    uint8_t want[16], got[16];
    key_by_definition(s.bytes, size, want);
    ck_assert_int_eq(digest_pieces_begin(d, size), HPROF_OK);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(digest_pieces_add(d, jobs[i].md5), HPROF_OK);
    ck_assert_int_eq(digest_pieces_final(d, got), HPROF_OK);
    ck_assert_mem_eq(got, want, 16);
    if (size > DIGEST_PIECE) { /* not the plain MD5, which would be one chain */
        openssl_md5(s.bytes, (size_t)size, want);
        ck_assert_mem_ne(got, want, 16);
    }
    digest_free(d);
    free(s.bytes);
}
END_TEST

static Suite *md5_suite(void)
{
    Suite *s = suite_create("md5");
    TCase *t = tcase_create("md5");
    int kernels = 2 * N_KERNELS; /* in place, copied */
    tcase_add_loop_test(t, md5_of_the_rfc1321_test_suite, 0, kernels);
    tcase_add_loop_test(t, md5_matches_openssl_at_every_length_around_block_and_buffer_ends, 0,
                        kernels);
    tcase_add_loop_test(t, md5_of_a_job_begun_on_the_lanes_and_finished_alone, 0, kernels);
    tcase_add_test(t, md5_threads_sharing_a_queue_hash_each_job_once);
    tcase_add_test(t, md5_views_get_the_argument_of_the_thread_that_runs_them);
    tcase_add_loop_test(t, md5_queue_stops_at_a_failed_read_and_says_where, 0, kernels);
    tcase_add_loop_test(t, pieced_key_from_bytes_in_any_split_follows_its_definition, 0,
                        N_PIECED_SIZES);
    tcase_add_loop_test(t, pieced_key_from_the_pieces_md5s_equals_the_key_from_the_bytes, 0,
                        N_PIECED_SIZES);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(md5_suite());
}
