/*
 * md5_lanes.c - MD5 (RFC 1321) of many buffers at once: sixteen lanes of
 * AVX-512 where the CPU has them, portable C otherwise.  Why: md5_lanes.h.
 *
 * Each lane views its job a chunk at a time, where the source has it in
 * memory or in a buffer of the lane's; the job's last bytes short of a
 * block go to a small block of the lane's with MD5's padding, so the
 * kernels only ever see whole 64-byte blocks.  Between refills all busy lanes advance by as
 * many blocks as the emptiest of them holds.
 */
#include <stdlib.h>
#include <string.h>

#include "md5_lanes.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX512_KERNEL 1
#endif

#define LANES 16
#define LANE_CHUNK MD5_VIEW_MAX
/* Below this many busy lanes, one buffer at a time is faster: a lone
 * lane hashes at about half the speed of portable C. */
#define MIN_BUSY_LANES 2

static const uint32_t K[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

static const uint32_t MD5_INIT[4] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476 };

/* The 64 steps of a block: S(function, a, b, c, d, message word, step, shift),
 * in RFC 1321's order; the callers name the four functions. */
#define MD5_STEPS(F, G, H, I)                                                                     \
    F(a, b, c, d, 0, 0, 7); F(d, a, b, c, 1, 1, 12); F(c, d, a, b, 2, 2, 17);                     \
    F(b, c, d, a, 3, 3, 22); F(a, b, c, d, 4, 4, 7); F(d, a, b, c, 5, 5, 12);                     \
    F(c, d, a, b, 6, 6, 17); F(b, c, d, a, 7, 7, 22); F(a, b, c, d, 8, 8, 7);                     \
    F(d, a, b, c, 9, 9, 12); F(c, d, a, b, 10, 10, 17); F(b, c, d, a, 11, 11, 22);                \
    F(a, b, c, d, 12, 12, 7); F(d, a, b, c, 13, 13, 12); F(c, d, a, b, 14, 14, 17);               \
    F(b, c, d, a, 15, 15, 22);                                                                    \
    G(a, b, c, d, 1, 16, 5); G(d, a, b, c, 6, 17, 9); G(c, d, a, b, 11, 18, 14);                  \
    G(b, c, d, a, 0, 19, 20); G(a, b, c, d, 5, 20, 5); G(d, a, b, c, 10, 21, 9);                  \
    G(c, d, a, b, 15, 22, 14); G(b, c, d, a, 4, 23, 20); G(a, b, c, d, 9, 24, 5);                 \
    G(d, a, b, c, 14, 25, 9); G(c, d, a, b, 3, 26, 14); G(b, c, d, a, 8, 27, 20);                 \
    G(a, b, c, d, 13, 28, 5); G(d, a, b, c, 2, 29, 9); G(c, d, a, b, 7, 30, 14);                  \
    G(b, c, d, a, 12, 31, 20);                                                                    \
    H(a, b, c, d, 5, 32, 4); H(d, a, b, c, 8, 33, 11); H(c, d, a, b, 11, 34, 16);                 \
    H(b, c, d, a, 14, 35, 23); H(a, b, c, d, 1, 36, 4); H(d, a, b, c, 4, 37, 11);                 \
    H(c, d, a, b, 7, 38, 16); H(b, c, d, a, 10, 39, 23); H(a, b, c, d, 13, 40, 4);                \
    H(d, a, b, c, 0, 41, 11); H(c, d, a, b, 3, 42, 16); H(b, c, d, a, 6, 43, 23);                 \
    H(a, b, c, d, 9, 44, 4); H(d, a, b, c, 12, 45, 11); H(c, d, a, b, 15, 46, 16);                \
    H(b, c, d, a, 2, 47, 23);                                                                     \
    I(a, b, c, d, 0, 48, 6); I(d, a, b, c, 7, 49, 10); I(c, d, a, b, 14, 50, 15);                 \
    I(b, c, d, a, 5, 51, 21); I(a, b, c, d, 12, 52, 6); I(d, a, b, c, 3, 53, 10);                 \
    I(c, d, a, b, 10, 54, 15); I(b, c, d, a, 1, 55, 21); I(a, b, c, d, 8, 56, 6);                 \
    I(d, a, b, c, 15, 57, 10); I(c, d, a, b, 6, 58, 15); I(b, c, d, a, 13, 59, 21);               \
    I(a, b, c, d, 4, 60, 6); I(d, a, b, c, 11, 61, 10); I(c, d, a, b, 2, 62, 15);                 \
    I(b, c, d, a, 9, 63, 21)

/* ---- One buffer: portable C ---------------------------------------------------------- */

static inline uint32_t rotl32(uint32_t x, unsigned s)
{
    return (x << s) | (x >> (32 - s));
}

static inline uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define STEP1(f, a, b, c, d, w, i, s) a = b + rotl32(a + (f) + K[i] + m[w], s)
#define F1(a, b, c, d, w, i, s) STEP1((b & c) | (~b & d), a, b, c, d, w, i, s)
#define G1(a, b, c, d, w, i, s) STEP1((b & d) | (c & ~d), a, b, c, d, w, i, s)
#define H1(a, b, c, d, w, i, s) STEP1(b ^ c ^ d, a, b, c, d, w, i, s)
#define I1(a, b, c, d, w, i, s) STEP1(c ^ (b | ~d), a, b, c, d, w, i, s)

static void md5_blocks_portable(uint32_t h[4], const uint8_t *p, size_t blocks)
{
    for (; blocks > 0; blocks--, p += 64) {
        uint32_t m[16];
        for (unsigned w = 0; w < 16; w++)
            m[w] = le32(p + 4 * w);
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
        MD5_STEPS(F1, G1, H1, I1);
        h[0] += a;
        h[1] += b;
        h[2] += c;
        h[3] += d;
    }
}

/* ---- Sixteen buffers: AVX-512 -------------------------------------------------------- */

#ifdef HAVE_AVX512_KERNEL
/* The four functions are each one vpternlogd: the immediate is the truth
 * table of f(b, c, d), bit 4b + 2c + d.  a + m + K does not wait for the
 * step before, so a step's chain is four instructions: f, add, rotate, add. */
#define STEP16(f, a, b, c, d, w, i, s)                                                            \
    a = _mm512_add_epi32(                                                                         \
        b, _mm512_rol_epi32(_mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a, m[w]),          \
                                                              _mm512_set1_epi32((int)K[i])),      \
                                             _mm512_ternarylogic_epi32(b, c, d, f)),              \
                            s))
#define F16(a, b, c, d, w, i, s) STEP16(0xCA, a, b, c, d, w, i, s) /* b ? c : d */
#define G16(a, b, c, d, w, i, s) STEP16(0xE4, a, b, c, d, w, i, s) /* d ? b : c */
#define H16(a, b, c, d, w, i, s) STEP16(0x96, a, b, c, d, w, i, s) /* b ^ c ^ d */
#define I16(a, b, c, d, w, i, s) STEP16(0x39, a, b, c, d, w, i, s) /* c ^ (b | ~d) */

/* Word w of every lane's block in m[w], lane l in element l: a 16 x 16
 * transpose of the blocks, in four rounds of shuffles. */
__attribute__((target("avx512f"))) static inline void transpose16(__m512i m[16],
                                                                   const uint8_t *const p[LANES],
                                                                   size_t at)
{
    __m512i r[16], t[16];
    for (unsigned l = 0; l < 16; l++)
        r[l] = _mm512_loadu_si512((const void *)(p[l] + at));
    for (unsigned i = 0; i < 16; i += 2) { /* pairs of lanes, words interleaved */
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (unsigned j = 0; j < 16; j += 4) { /* r[j + q]: word 4k + q of lanes j..j+3 */
        r[j] = _mm512_unpacklo_epi64(t[j], t[j + 2]);
        r[j + 1] = _mm512_unpackhi_epi64(t[j], t[j + 2]);
        r[j + 2] = _mm512_unpacklo_epi64(t[j + 1], t[j + 3]);
        r[j + 3] = _mm512_unpackhi_epi64(t[j + 1], t[j + 3]);
    }
    for (unsigned q = 0; q < 4; q++) { /* gather each word's 128-bit quarters */
        __m512i v0 = _mm512_shuffle_i32x4(r[q], r[4 + q], 0x44);
        __m512i v1 = _mm512_shuffle_i32x4(r[q], r[4 + q], 0xEE);
        __m512i v2 = _mm512_shuffle_i32x4(r[8 + q], r[12 + q], 0x44);
        __m512i v3 = _mm512_shuffle_i32x4(r[8 + q], r[12 + q], 0xEE);
        m[q] = _mm512_shuffle_i32x4(v0, v2, 0x88);
        m[4 + q] = _mm512_shuffle_i32x4(v0, v2, 0xDD);
        m[8 + q] = _mm512_shuffle_i32x4(v1, v3, 0x88);
        m[12 + q] = _mm512_shuffle_i32x4(v1, v3, 0xDD);
    }
}

/* `blocks` blocks of every lane, lane l's from p[l] on; h[k][l] is word k
 * of lane l's state. */
__attribute__((target("avx512f"))) static void md5_blocks_avx512(uint32_t h[4][LANES],
                                                                  const uint8_t *const p[LANES],
                                                                  size_t blocks)
{
    __m512i A = _mm512_loadu_si512(h[0]), B = _mm512_loadu_si512(h[1]);
    __m512i C = _mm512_loadu_si512(h[2]), D = _mm512_loadu_si512(h[3]);
    for (size_t at = 0; at < 64 * blocks; at += 64) {
        __m512i m[16];
        transpose16(m, p, at);
        __m512i a = A, b = B, c = C, d = D;
        MD5_STEPS(F16, G16, H16, I16);
        A = _mm512_add_epi32(A, a);
        B = _mm512_add_epi32(B, b);
        C = _mm512_add_epi32(C, c);
        D = _mm512_add_epi32(D, d);
    }
    _mm512_storeu_si512(h[0], A);
    _mm512_storeu_si512(h[1], B);
    _mm512_storeu_si512(h[2], C);
    _mm512_storeu_si512(h[3], D);
}
#endif

int md5_kernel_available(enum md5_kernel kernel)
{
    switch (kernel) {
    case MD5_KERNEL_BEST:
    case MD5_KERNEL_PORTABLE:
        return 1;
    case MD5_KERNEL_AVX512:
#ifdef HAVE_AVX512_KERNEL
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f");
#else
        return 0;
#endif
    }
    return 0;
}

unsigned md5_queue_width(const struct md5_queue *q)
{
    return q->kernel != MD5_KERNEL_PORTABLE && md5_kernel_available(MD5_KERNEL_AVX512) ? LANES : 1;
}

/* ---- The lanes --------------------------------------------------------------------- */

struct lane {
    struct md5_job *job;    /* NULL: free */
    uint64_t viewed;        /* bytes of the job viewed so far */
    const uint8_t *next;    /* the next block to hash */
    size_t blocks;          /* blocks left from next on */
    unsigned end_blocks;    /* blocks in end, hashed after the view's */
    uint8_t *buf;           /* what views read into */
    uint8_t end[128];       /* the job's last bytes and the padding */
};

struct lanes {
    struct md5_queue *q;
    void *thread;           /* the views' */
    struct hprof_error *err;
    int simd;
    int queue_empty;
    uint32_t h[4][LANES];
    struct lane lane[LANES];
};

/* The job's last n bytes (< 64, at tail) and MD5's padding: 0x80, zeros,
 * the length in bits, to the end of a block.  @return the blocks of end. */
static unsigned pad_end(struct lane *ln, const uint8_t *tail, size_t n)
{
    unsigned blocks = n + 9 <= 64 ? 1 : 2;
    uint64_t bits = ln->job->bytes * 8;
    memcpy(ln->end, tail, n);
    ln->end[n] = 0x80;
    memset(ln->end + n + 1, 0, 64 * blocks - 8 - (n + 1));
    for (unsigned i = 0; i < 8; i++)
        ln->end[64 * blocks - 8 + i] = (uint8_t)(bits >> (8 * i));
    return blocks;
}

/* Views the lane's next chunk; with the job's end, the bytes short of a
 * block go to end, padded. */
static int lane_view(struct lanes *ls, struct lane *ln)
{
    struct md5_job *job = ln->job;
    uint64_t left = job->bytes - ln->viewed;
    size_t n = left < LANE_CHUNK ? (size_t)left : LANE_CHUNK;
    const uint8_t *p = ln->buf;
    if (n > 0) {
        int rc = ls->q->view(ls->q->source, ls->thread, job, job->offset + ln->viewed, n,
                             ln->buf, &p, ls->err);
        if (rc != HPROF_OK)
            return rc;
    }
    ln->viewed += n;
    ln->next = p;
    ln->blocks = n / 64;
    if (ln->viewed == job->bytes)
        ln->end_blocks = pad_end(ln, p + n / 64 * 64, n % 64);
    return HPROF_OK;
}

static void lane_finish(struct lanes *ls, unsigned l)
{
    struct lane *ln = &ls->lane[l];
    for (unsigned k = 0; k < 4; k++)
        for (unsigned i = 0; i < 4; i++)
            ln->job->md5[4 * k + i] = (uint8_t)(ls->h[k][l] >> (8 * i));
    ln->job = NULL;
}

static int lane_take_job(struct lanes *ls, unsigned l)
{
    struct md5_queue *q = ls->q;
    size_t i = ls->queue_empty ? q->n_jobs
                               : atomic_fetch_add_explicit(&q->next, 1, memory_order_relaxed);
    struct lane *ln = &ls->lane[l];
    if (i >= q->n_jobs) {
        ls->queue_empty = 1;
        return HPROF_OK;
    }
    ln->job = &q->jobs[i];
    ln->viewed = 0;
    ln->end_blocks = 0;
    for (unsigned k = 0; k < 4; k++)
        ls->h[k][l] = MD5_INIT[k];
    return lane_view(ls, ln);
}

/* A lane that has hashed all it holds goes on to its padded end, finishes
 * its job, views on, or takes a new job, until it holds blocks or the
 * queue is empty.  @return HPROF_OK or an error. */
static int lane_refill(struct lanes *ls, unsigned l)
{
    struct lane *ln = &ls->lane[l];
    for (;;) {
        int rc = HPROF_OK;
        if (ln->job == NULL) {
            rc = lane_take_job(ls, l);
            if (rc != HPROF_OK || ln->job == NULL)
                return rc;
            continue;
        }
        if (ln->blocks > 0)
            return HPROF_OK;
        if (ln->end_blocks > 0) {
            ln->next = ln->end;
            ln->blocks = ln->end_blocks;
            ln->end_blocks = 0;
        } else if (ln->viewed == ln->job->bytes) {
            lane_finish(ls, l);
        } else if ((rc = lane_view(ls, ln)) != HPROF_OK) {
            return rc;
        }
    }
}

static int lanes_refill(struct lanes *ls, unsigned *busy)
{
    *busy = 0;
    for (unsigned l = 0; l < LANES; l++) {
        int rc = lane_refill(ls, l);
        if (rc != HPROF_OK)
            return rc;
        *busy += ls->lane[l].job != NULL;
    }
    return HPROF_OK;
}

/* Hashes what the busy lanes hold: together while enough of them are busy
 * (as far as the emptiest goes), else each on its own. */
static void lanes_step(struct lanes *ls, unsigned busy)
{
#ifdef HAVE_AVX512_KERNEL
    if (ls->simd && (busy >= MIN_BUSY_LANES || !ls->queue_empty)) {
        const uint8_t *p[LANES], *any = NULL;
        size_t blocks = SIZE_MAX;
        for (unsigned l = 0; l < LANES; l++) {
            struct lane *ln = &ls->lane[l];
            if (ln->job != NULL) {
                p[l] = any = ln->next;
                blocks = ln->blocks < blocks ? ln->blocks : blocks;
            } else {
                p[l] = NULL;
            }
        }
        for (unsigned l = 0; l < LANES; l++)
            if (p[l] == NULL)
                p[l] = any; /* a free lane hashes a busy one's blocks, for nothing */
        md5_blocks_avx512(ls->h, p, blocks);
        for (unsigned l = 0; l < LANES; l++)
            if (ls->lane[l].job != NULL) {
                ls->lane[l].next += blocks * 64;
                ls->lane[l].blocks -= blocks;
            }
        return;
    }
#else
    (void)busy;
#endif
    for (unsigned l = 0; l < LANES; l++) {
        struct lane *ln = &ls->lane[l];
        if (ln->job == NULL || ln->blocks == 0)
            continue;
        uint32_t h[4] = { ls->h[0][l], ls->h[1][l], ls->h[2][l], ls->h[3][l] };
        md5_blocks_portable(h, ln->next, ln->blocks);
        for (unsigned k = 0; k < 4; k++)
            ls->h[k][l] = h[k];
        ln->next += ln->blocks * 64;
        ln->blocks = 0;
    }
}

int md5_queue_run(struct md5_queue *q, void *thread, struct hprof_error *err)
{
    struct lanes ls = { .q = q, .thread = thread, .err = err };
    ls.simd = md5_queue_width(q) > 1;
    if (q->kernel == MD5_KERNEL_AVX512 && !ls.simd)
        return hprof_error_set(err, HPROF_ERR_USAGE, "md5: this CPU has no AVX-512");
    uint8_t *mem = malloc((size_t)LANES * LANE_CHUNK);
    if (mem == NULL)
        return hprof_error_set(err, HPROF_ERR_NOMEM, "md5: out of memory");
    for (unsigned l = 0; l < LANES; l++)
        ls.lane[l].buf = mem + (size_t)l * LANE_CHUNK;
    int rc;
    unsigned busy;
    while ((rc = lanes_refill(&ls, &busy)) == HPROF_OK && busy > 0)
        lanes_step(&ls, busy);
    if (rc != HPROF_OK) /* the other threads stop at their next job */
        atomic_store_explicit(&q->next, q->n_jobs, memory_order_relaxed);
    free(mem);
    return rc;
}
