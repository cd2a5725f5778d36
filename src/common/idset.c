/*
 * idset.c - a map from object id to a 64-bit value, or a plain set of ids.
 *
 * Workload: millions of inserts of distinct, aligned ids during one pass,
 * then lookups.  Open addressing with linear probing keeps it to two flat
 * arrays (16 bytes per slot with values, 8 without; at most half full, so
 * 16-32 bytes per remembered id); a multiply-shift hash spreads ids whose
 * low bits are always zero.  Id 0 is the null reference and marks a free
 * slot, so it is never stored.
 *
 * Also a sorted id list (idlist) and a fixed-size Bloom filter (idfilter).
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "hprof_private.h"
#include "pool.h"

#define INITIAL_CAPACITY 1024

/* The same hash as idmap_get() in hprof_private.h. */
static size_t slot_of(uint64_t key, size_t mask)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32 ^ h) & mask;
}

static int alloc_slots(struct idmap *m, size_t capacity, int with_values)
{
    m->keys = calloc(capacity, sizeof *m->keys);
    m->values = with_values ? calloc(capacity, sizeof *m->values) : NULL;
    if (m->keys == NULL || (with_values && m->values == NULL)) {
        free(m->keys);
        free(m->values);
        m->keys = m->values = NULL;
        return HPROF_ERR_NOMEM;
    }
    m->mask = capacity - 1;
    m->count = 0;
    return HPROF_OK;
}

int idmap_init(struct idmap *m, int with_values)
{
    return alloc_slots(m, INITIAL_CAPACITY, with_values);
}

void idmap_free(struct idmap *m)
{
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

static int grow(struct idmap *m)
{
    struct idmap old = *m;
    size_t capacity = (old.mask + 1) * 2;
    if (capacity == 0 || capacity > SIZE_MAX / sizeof(uint64_t))
        return HPROF_ERR_NOMEM;
    if (alloc_slots(m, capacity, old.values != NULL) != HPROF_OK) {
        *m = old;
        return HPROF_ERR_NOMEM;
    }
    for (size_t i = 0; i <= old.mask; i++) {
        if (old.keys[i] == 0)
            continue;
        size_t s = slot_of(old.keys[i], m->mask);
        while (m->keys[s] != 0)
            s = (s + 1) & m->mask;
        m->keys[s] = old.keys[i];
        if (m->values)
            m->values[s] = old.values[i];
        m->count++;
    }
    free(old.keys);
    free(old.values);
    return HPROF_OK;
}

int idmap_reset(struct idmap *m)
{
    int with_values = m->values != NULL;
    idmap_free(m);
    return idmap_init(m, with_values);
}

int idmap_put(struct idmap *m, uint64_t key, uint64_t value)
{
    if (key == 0)
        return HPROF_OK;
    if ((m->count + 1) * 2 > m->mask + 1 && grow(m) != HPROF_OK)
        return HPROF_ERR_NOMEM;
    size_t s = slot_of(key, m->mask);
    while (m->keys[s] != 0 && m->keys[s] != key)
        s = (s + 1) & m->mask;
    if (m->keys[s] == 0) {
        m->keys[s] = key;
        m->count++;
    }
    if (m->values)
        m->values[s] = value;
    return HPROF_OK;
}

/* ---- Sorted id list ------------------------------------------------------- */

void idlist_init(struct idlist *l)
{
    memset(l, 0, sizeof *l);
    l->sorted = 1;
}

void idlist_free(struct idlist *l)
{
    free(l->ids);
    idlist_init(l);
}

void idlist_clear(struct idlist *l)
{
    l->n = l->cursor = 0;
    l->sorted = 1;
}

int idlist_add(struct idlist *l, uint64_t id)
{
    if (id == 0)
        return HPROF_OK;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        uint64_t *grown = cap < SIZE_MAX / sizeof *grown ? realloc(l->ids, cap * sizeof *grown)
                                                         : NULL;
        if (grown == NULL)
            return HPROF_ERR_NOMEM;
        l->ids = grown;
        l->cap = cap;
    }
    if (l->n > 0 && id < l->ids[l->n - 1])
        l->sorted = 0;
    l->ids[l->n++] = id;
    return HPROF_OK;
}

/* LSD radix sort, a byte per round; rounds in which every key has the same
 * byte (the high bytes of addresses, mostly) are skipped. */
static int radix_sort(uint64_t *keys, size_t n)
{
    static const size_t RADIX = 256;
    size_t(*counts)[256] = calloc(8, sizeof *counts);
    uint64_t *tmp = malloc(n * sizeof *tmp);
    if (counts == NULL || tmp == NULL) {
        free(counts);
        free(tmp);
        return HPROF_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        for (unsigned d = 0; d < 8; d++)
            counts[d][(keys[i] >> (8 * d)) & 0xFF]++;
    uint64_t *from = keys, *to = tmp;
    for (unsigned d = 0; d < 8; d++) {
        size_t *c = counts[d];
        if (c[(from[0] >> (8 * d)) & 0xFF] == n)
            continue;
        size_t sum = 0;
        for (size_t b = 0; b < RADIX; b++) {
            size_t k = c[b];
            c[b] = sum;
            sum += k;
        }
        for (size_t i = 0; i < n; i++)
            to[c[(from[i] >> (8 * d)) & 0xFF]++] = from[i];
        uint64_t *swap = from;
        from = to;
        to = swap;
    }
    if (from != keys)
        memcpy(keys, from, n * sizeof *keys);
    free(tmp);
    free(counts);
    return HPROF_OK;
}

int idlist_seal(struct idlist *l)
{
    if (!l->sorted && radix_sort(l->ids, l->n) != HPROF_OK)
        return HPROF_ERR_NOMEM;
    size_t kept = 0;
    for (size_t i = 0; i < l->n; i++)
        if (kept == 0 || l->ids[i] != l->ids[kept - 1])
            l->ids[kept++] = l->ids[i];
    l->n = kept;
    l->cursor = 0;
    l->sorted = 1;
    return HPROF_OK;
}

int idlist_has(struct idlist *l, uint64_t id)
{
    return idlist_find(l, &l->cursor, id);
}

int idlist_find(const struct idlist *l, size_t *cursor, uint64_t id)
{
    const uint64_t *ids = l->ids;
    size_t n = l->n, lo, hi; /* the first position holding >= id is in [lo, hi] */
    if (n == 0)
        return 0;
    size_t at = *cursor < n ? *cursor : n - 1;
    if (ids[at] < id) { /* gallop forward */
        size_t step = 1;
        lo = at + 1;
        while (lo + step - 1 < n && ids[lo + step - 1] < id) {
            lo += step;
            step *= 2;
        }
        hi = lo + step - 1 < n ? lo + step - 1 : n;
    } else { /* gallop backward */
        size_t step = 1;
        hi = at;
        while (hi >= step && ids[hi - step] >= id) {
            hi -= step;
            step *= 2;
        }
        lo = hi >= step ? hi - step + 1 : 0;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    *cursor = lo < n ? lo : n - 1;
    return lo < n && ids[lo] == id;
}

/* ---- Id log --------------------------------------------------------------- */

#define IDLOG_MAX_BYTES 10 /* a 64-bit varint */

void idlog_init(struct idlog *l)
{
    memset(l, 0, sizeof *l);
}

void idlog_free(struct idlog *l)
{
    free(l->bytes);
    idlog_init(l);
}

void idlog_clear(struct idlog *l)
{
    l->n = 0;
    l->last = 0;
}

int idlog_add(struct idlog *l, uint64_t id)
{
    if (l->cap - l->n < IDLOG_MAX_BYTES) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        uint8_t *grown = realloc(l->bytes, cap);
        if (grown == NULL)
            return HPROF_ERR_NOMEM;
        l->bytes = grown;
        l->cap = cap;
    }
    uint64_t step = id - l->last;
    uint64_t zigzag = step << 1 ^ (uint64_t)-(int64_t)(step >> 63);
    while (zigzag >= 0x80) {
        l->bytes[l->n++] = (uint8_t)(zigzag | 0x80);
        zigzag >>= 7;
    }
    l->bytes[l->n++] = (uint8_t)zigzag;
    l->last = id;
    return HPROF_OK;
}

void idlog_each(const struct idlog *l, void (*fn)(void *ctx, uint64_t id), void *ctx)
{
    uint64_t id = 0;
    for (size_t at = 0; at < l->n;) {
        uint64_t zigzag = 0;
        unsigned shift = 0;
        uint8_t byte;
        do {
            byte = l->bytes[at++];
            zigzag |= (uint64_t)(byte & 0x7F) << shift;
            shift += 7;
        } while (byte & 0x80);
        id += zigzag >> 1 ^ (uint64_t)-(int64_t)(zigzag & 1);
        fn(ctx, id);
    }
}

/* ---- Id filter --------------------------------------------------------- */

static uint64_t filter_hash(uint64_t id)
{
    id ^= id >> 33; /* the MurmurHash3 finaliser: ids are aligned addresses */
    id *= 0xff51afd7ed558ccdull;
    id ^= id >> 33;
    id *= 0xc4ceb9fe1a85ec53ull;
    return id ^ (id >> 33);
}

/* The block of hash `h` among `words` (the filter's, or its thread's copy
 * of the pointer). */
static uint64_t *block_of(uint64_t *words, size_t block_mask, uint64_t h)
{
    return words + 8 * ((size_t)(h >> 32) & block_mask);
}

static uint64_t *filter_block(const struct idfilter *f, uint64_t h)
{
    return block_of(f->words, f->block_mask, h);
}

/* Zeroed pages as they are first touched, in huge pages where the kernel
 * has them: in 4 KiB pages (a filter is up to 32 MiB), one random line
 * per id would also cost a TLB miss, which a prefetch does not hide, and
 * each page a fault. */
uint64_t *filter_words_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

void filter_words_free(uint64_t *words, size_t bytes)
{
    if (words != NULL)
        munmap(words, bytes);
}

int idfilter_init(struct idfilter *f, size_t bytes)
{
    size_t blocks = 1;
    while (blocks * 2 * 64 <= bytes)
        blocks *= 2;
    memset(f, 0, sizeof *f);
    f->words = filter_words_alloc(blocks * 64);
    f->block_mask = blocks - 1;
    return f->words ? HPROF_OK : HPROF_ERR_NOMEM;
}

void idfilter_free(struct idfilter *f)
{
    idfilter_settle(f);
    filter_words_free(f->words, (f->block_mask + 1) * 64);
    if (f->exact != NULL) {
        id_pages_free(f->exact);
        free(f->exact);
    }
    memset(f, 0, sizeof *f);
}

int idfilter_use_exact(struct idfilter *f, size_t max_pages)
{
    if (f->exact != NULL)
        return HPROF_OK;
    if (f->thread != NULL) /* it would never fill pages it was not given */
        return HPROF_ERR_USAGE;
    idfilter_flush(f); /* what is queued goes to the bits, as before */
    struct id_pages *p = malloc(sizeof *p);
    if (p == NULL || id_pages_init(p, max_pages) != HPROF_OK) {
        free(p);
        return HPROF_ERR_NOMEM;
    }
    f->exact = p;
    return HPROF_OK;
}

static void apply_adds(uint64_t *words, size_t block_mask, struct id_pages *exact, uint64_t *ids,
                       unsigned n)
{
    uint64_t h[IDFILTER_BATCH];
    if (exact != NULL)
        n = id_pages_set_batch(exact, ids, n);
    for (unsigned i = 0; i < n; i++) {
        h[i] = filter_hash(ids[i]);
        __builtin_prefetch(block_of(words, block_mask, h[i]), 1);
    }
    for (unsigned i = 0; i < n; i++) {
        uint64_t *block = block_of(words, block_mask, h[i]), bits = h[i];
        for (int k = 0; k < 3; k++, bits >>= 9)
            block[(bits >> 6) & 7] |= 1ull << (bits & 63);
    }
}

/* The filter's thread, a pool worker running one job until told to stop:
 * a ring of batches from the one adding thread (the producer) to the one
 * applying them (the consumer), each side moving its own counter.  The
 * consumer polls while the ring is empty (pool_idle_wait()), so that the
 * producer never has to wake it; the producer yields while it is full. */
#define RING_BATCHES 1024

struct idfilter_thread {
    struct ordered_pool *pool;
    uint64_t *words;
    size_t block_mask;
    struct id_pages *exact;     /* the filter's, applied here alone */
    _Atomic uint64_t produced, consumed;
    _Atomic int stop;
    unsigned n[RING_BATCHES];
    uint64_t ids[RING_BATCHES][IDFILTER_BATCH];
};

static void apply_until_stopped(void *worker, void *job)
{
    struct idfilter_thread *t = job;
    (void)worker;
    uint64_t done = 0;
    unsigned idle = 0;
    for (;;) {
        uint64_t ready = atomic_load_explicit(&t->produced, memory_order_acquire);
        if (done == ready) {
            /* a stop is set after the last batch: look once more */
            if (atomic_load_explicit(&t->stop, memory_order_acquire) &&
                atomic_load_explicit(&t->produced, memory_order_acquire) == done)
                break;
            pool_idle_wait(&idle);
            continue;
        }
        idle = 0;
        for (; done < ready; done++) {
            unsigned slot = (unsigned)(done % RING_BATCHES);
            apply_adds(t->words, t->block_mask, t->exact, t->ids[slot], t->n[slot]);
            atomic_store_explicit(&t->consumed, done + 1, memory_order_release);
        }
    }
}

int idfilter_use_thread(struct idfilter *f)
{
    if (f->thread != NULL)
        return HPROF_OK;
    struct idfilter_thread *t = calloc(1, sizeof *t);
    if (t == NULL)
        return HPROF_ERR_NOMEM;
    idfilter_flush(f); /* what is queued goes in first, in place */
    t->words = f->words;
    t->block_mask = f->block_mask;
    t->exact = f->exact;
    struct hprof_error ignored;
    void *job = t;
    if ((t->pool = pool_new(1, &job, 1, &job, apply_until_stopped, &ignored)) == NULL) {
        free(t);
        return HPROF_ERR_NOMEM;
    }
    (void)pool_filling(t->pool); /* the one slot: never NULL */
    pool_submit(t->pool);
    f->thread = t;
    return HPROF_OK;
}

static void hand_over(struct idfilter_thread *t, const uint64_t *ids, unsigned n)
{
    uint64_t next = atomic_load_explicit(&t->produced, memory_order_relaxed);
    while (next - atomic_load_explicit(&t->consumed, memory_order_acquire) >= RING_BATCHES)
        sched_yield();
    unsigned slot = (unsigned)(next % RING_BATCHES);
    memcpy(t->ids[slot], ids, n * sizeof *ids);
    t->n[slot] = n;
    atomic_store_explicit(&t->produced, next + 1, memory_order_release);
}

void idfilter_settle(struct idfilter *f)
{
    struct idfilter_thread *t = f->thread;
    if (t == NULL)
        return;
    if (f->n_queued > 0)
        hand_over(t, f->queued, f->n_queued);
    f->n_queued = 0;
    atomic_store_explicit(&t->stop, 1, memory_order_release);
    (void)pool_oldest(t->pool); /* it applies everything before it stops */
    pool_release_oldest(t->pool);
    pool_free(t->pool);
    free(t);
    f->thread = NULL;
}

void idfilter_flush(struct idfilter *f)
{
    if (f->thread != NULL && f->n_queued > 0)
        hand_over(f->thread, f->queued, f->n_queued);
    else
        apply_adds(f->words, f->block_mask, f->exact, f->queued, f->n_queued);
    f->n_queued = 0;
}

/* Every add so far applied, the thread (if any) going on. */
static void sync_adds(struct idfilter *f)
{
    struct idfilter_thread *t = f->thread;
    idfilter_flush(f);
    if (t == NULL)
        return;
    uint64_t want = atomic_load_explicit(&t->produced, memory_order_relaxed);
    while (atomic_load_explicit(&t->consumed, memory_order_acquire) < want)
        sched_yield();
}

static int test_bits(const struct idfilter *f, uint64_t id)
{
    if (f->exact != NULL && id_pages_test(f->exact, id) == 1)
        return 1; /* else it may be among the ids the pages could not hold */
    uint64_t h = filter_hash(id);
    const uint64_t *block = filter_block(f, h);
    for (int k = 0; k < 3; k++, h >>= 9)
        if (!(block[(h >> 6) & 7] & 1ull << (h & 63)))
            return 0;
    return 1;
}

int idfilter_maybe(struct idfilter *f, uint64_t id)
{
    idfilter_settle(f);
    idfilter_flush(f);
    return test_bits(f, id);
}

int idfilter_maybe_now(struct idfilter *f, uint64_t id)
{
    sync_adds(f);
    return test_bits(f, id);
}

/* ---- Id pages ------------------------------------------------------------------ */

_Static_assert(ID_PAGE_BYTES * 8 == 1u << (ID_PAGE_SHIFT - ID_STEP_SHIFT),
               "a page holds a bit per id step of its span");

int id_pages_init(struct id_pages *p, size_t max_pages)
{
    memset(p, 0, sizeof *p);
    p->max_pages = max_pages;
    return idmap_init(&p->page_of, 1);
}

void id_pages_free(struct id_pages *p)
{
    for (size_t i = 0; i < p->n_pages; i++)
        free(p->pages[i]);
    free(p->pages);
    idmap_free(&p->page_of);
    memset(p, 0, sizeof *p);
}

/* The page of ids with `key`, made if there may be another.  The map holds
 * key + 1: key 0 (ids below 256 KiB) is an idmap's free slot, which it
 * would neither keep nor find, giving such ids a new, empty page each time
 * they follow another page's ids.  (key + 1 cannot wrap: key < 2^46.)
 * @return it, NULL when it has none, or MAKE_FAILED. */
#define MAKE_FAILED ((uint64_t *)1)
static uint64_t *page_for(struct id_pages *p, uint64_t key)
{
    uint64_t index;
    if (idmap_get(&p->page_of, key + 1, &index))
        return p->pages[index];
    if (p->n_pages == p->max_pages)
        return NULL;
    if (p->n_pages == p->cap_pages) {
        size_t cap = p->cap_pages ? 2 * p->cap_pages : 64;
        uint64_t **grown = realloc(p->pages, cap * sizeof *grown);
        if (grown == NULL)
            return MAKE_FAILED;
        p->pages = grown;
        p->cap_pages = cap;
    }
    uint64_t *page = calloc(1, ID_PAGE_BYTES);
    if (page == NULL || idmap_put(&p->page_of, key + 1, p->n_pages) != HPROF_OK) {
        free(page);
        return MAKE_FAILED;
    }
    p->pages[p->n_pages++] = page;
    return page;
}

int id_pages_test(const struct id_pages *p, uint64_t id)
{
    uint64_t index;
    if (id & ((1u << ID_STEP_SHIFT) - 1))
        return -1;
    if (!idmap_get(&p->page_of, (id >> ID_PAGE_SHIFT) + 1, &index))
        return p->n_pages == p->max_pages ? -1 : 0; /* full: its page may not be made */
    uint64_t bit = (id >> ID_STEP_SHIFT) & ((1u << (ID_PAGE_SHIFT - ID_STEP_SHIFT)) - 1);
    return (int)(p->pages[index][bit >> 6] >> (bit & 63) & 1);
}

/* The word and mask of `id`'s bit, its page made if need be.  @return 0,
 * -1 when the pages do not hold it, or HPROF_ERR_NOMEM. */
static int locate(struct id_pages *p, uint64_t id, uint64_t **word, uint64_t *mask)
{
    if (id & ((1u << ID_STEP_SHIFT) - 1))
        return -1;
    uint64_t key = id >> ID_PAGE_SHIFT;
    if (!p->last_valid || key != p->last_key) {
        uint64_t *page = page_for(p, key);
        if (page == MAKE_FAILED)
            return HPROF_ERR_NOMEM;
        p->last_key = key;
        p->last_page = page;
        p->last_valid = 1;
    }
    if (p->last_page == NULL)
        return -1;
    uint64_t bit = (id >> ID_STEP_SHIFT) & ((1u << (ID_PAGE_SHIFT - ID_STEP_SHIFT)) - 1);
    *word = &p->last_page[bit >> 6];
    *mask = 1ull << (bit & 63);
    return 0;
}

int id_pages_test_and_set(struct id_pages *p, uint64_t id)
{
    uint64_t *word, mask;
    int rc = locate(p, id, &word, &mask);
    if (rc != 0)
        return rc;
    int seen = (*word & mask) != 0;
    *word |= mask;
    return seen;
}

unsigned id_pages_set_batch(struct id_pages *p, uint64_t *ids, unsigned n)
{
    uint64_t *words[IDFILTER_BATCH], masks[IDFILTER_BATCH];
    unsigned held = 0, left = 0;
    for (unsigned i = 0; i < n; i++) {
        if (held < IDFILTER_BATCH && locate(p, ids[i], &words[held], &masks[held]) == 0)
            __builtin_prefetch(words[held++], 1);
        else
            ids[left++] = ids[i];
    }
    for (unsigned i = 0; i < held; i++)
        *words[i] |= masks[i];
    return left;
}
