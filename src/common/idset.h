/*
 * idset.h - sets of object ids (idset.c): a hash map, a Bloom filter for
 * streams too long to keep, a sorted list searched in file order, and
 * exact bits for the aligned ids of an address range.
 */
#ifndef HPROF_IDSET_H
#define HPROF_IDSET_H

#include <stdint.h>
#include <stddef.h>

#include "hprof.h"

/* ---- Id map: open addressing, linear probing ---------------------------
 * Keys are object ids; 0 (the null id) marks an empty slot, so it cannot be
 * stored.  Values are optional (a set has none).  Grows at half full. */

struct idmap {
    uint64_t *keys;
    uint64_t *values;       /* NULL for a set */
    size_t mask;            /* capacity - 1; capacity is a power of two */
    size_t count;
};

int idmap_init(struct idmap *m, int with_values);
void idmap_free(struct idmap *m);
/* Forget every key (values kept as a map has them or not), to fill the
 * map again.  @return HPROF_OK or HPROF_ERR_NOMEM. */
int idmap_reset(struct idmap *m);
/* Insert or overwrite.  @return HPROF_OK or HPROF_ERR_NOMEM. */
int idmap_put(struct idmap *m, uint64_t key, uint64_t value);
/* @return 1 and *value (if not NULL) when present, else 0.  Inline: it runs
 * for nearly every object of every pass. */
static inline int idmap_get(const struct idmap *m, uint64_t key, uint64_t *value)
{
    if (key == 0 || m->count == 0)
        return 0;
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t s = (size_t)(h >> 32 ^ h) & m->mask;
    while (m->keys[s] != 0) {
        if (m->keys[s] == key) {
            if (value)
                *value = m->values ? m->values[s] : 0;
            return 1;
        }
        s = (s + 1) & m->mask;
    }
    return 0;
}
static inline int idmap_has(const struct idmap *m, uint64_t key)
{
    return idmap_get(m, key, NULL);
}

/* ---- Id filter: a blocked Bloom filter ------------------------------------
 * Remembers a stream of ids too long to keep (every reference in a dump) in
 * a fixed size, and answers "was this id added?" with a sure no or a maybe.
 * Each id sets three bits of one 64-byte block, so an add or a test touches
 * one cache line; adds are queued and applied in batches whose lines are
 * prefetched together, so that their cache misses overlap.  With 8 MiB and
 * 5 million ids, about 1 test in 100 says maybe for an id never added; the
 * rate grows with the ids added.  With idfilter_use_exact(), the ids that
 * id pages (below) hold are kept exactly, and only the others (not 8-byte
 * aligned, or past the pages' budget) go to the filter's bits. */

#define IDFILTER_BATCH 32

struct idfilter_thread;
struct id_pages;

struct idfilter {
    uint64_t *words;        /* 8 per block */
    size_t block_mask;      /* blocks - 1; blocks is a power of two */
    uint64_t queued[IDFILTER_BATCH];
    unsigned n_queued;
    struct idfilter_thread *thread; /* idfilter_use_thread(), or NULL */
    struct id_pages *exact;         /* idfilter_use_exact(), or NULL */
};

/* `bytes` zeroed for a filter's words (mmap: freed with
 * filter_words_free() and the same `bytes`), or NULL. */
uint64_t *filter_words_alloc(size_t bytes);
void filter_words_free(uint64_t *words, size_t bytes);

/* `bytes` is rounded down to a power of two, at least 64.
 * @return HPROF_OK or HPROF_ERR_NOMEM. */
int idfilter_init(struct idfilter *f, size_t bytes);
/* Settles (below) first. */
void idfilter_free(struct idfilter *f);
/* Apply the queued adds (idfilter_maybe() does), or hand them to the thread. */
void idfilter_flush(struct idfilter *f);
/* Settles first. */
int idfilter_maybe(struct idfilter *f, uint64_t id);
/* The same while adds go on: waits for the thread to apply those before,
 * and leaves it running. */
int idfilter_maybe_now(struct idfilter *f, uint64_t id);
/* From now on, batches of adds are applied by a pool worker of their own:
 * their cache misses (an add touches a random line of the filter) then
 * cost the caller nothing.  The bits set are the same.  Fails only for want
 * of memory or of a thread, and adds are then applied in place. */
int idfilter_use_thread(struct idfilter *f);
/* Wait until every add is applied, and stop the thread (if any). */
void idfilter_settle(struct idfilter *f);
/* From now on, ids that id pages of up to `max_pages` hold are kept
 * there, exactly: a test of such an id says maybe wrongly only as often as
 * the bits do for the few ids they still get (added before, not aligned,
 * or past the pages' budget).  Fails for want of memory, or
 * (HPROF_ERR_USAGE) after idfilter_use_thread(), whose thread applies the
 * adds; the filter then goes on as it was. */
int idfilter_use_exact(struct idfilter *f, size_t max_pages);

static inline void idfilter_add(struct idfilter *f, uint64_t id)
{
    f->queued[f->n_queued++] = id;
    if (f->n_queued == IDFILTER_BATCH)
        idfilter_flush(f);
}

/* ---- Sorted id list --------------------------------------------------------
 * Ids remembered in one pass and looked up in a later one, in about the
 * order the input holds them (dumps are written in address order, and a
 * String's value array lies next to it).  Appended unsorted at 8 bytes per
 * id with sequential writes, sorted once, then searched by galloping from
 * the previous hit: a lookup in file order costs a few comparisons on
 * cached lines, where a hash probe into a table of millions of ids costs a
 * cache miss each time.  A random lookup costs at most ~2 log2(n) steps. */

struct idlist {
    uint64_t *ids;
    size_t n, cap;
    size_t cursor;          /* where the previous lookup ended */
    int sorted;
};

void idlist_init(struct idlist *l);
void idlist_free(struct idlist *l);
/* Forget every id, keeping the storage. */
void idlist_clear(struct idlist *l);
/* Append (0 is ignored).  @return HPROF_OK or HPROF_ERR_NOMEM. */
int idlist_add(struct idlist *l, uint64_t id);
/* Sort and drop duplicates; needed once before lookups.  @return HPROF_OK
 * or HPROF_ERR_NOMEM (sorting needs a scratch copy). */
int idlist_seal(struct idlist *l);
/* @return 1 when `id` is in the (sealed) list.  Moves the cursor. */
int idlist_has(struct idlist *l, uint64_t id);
/* The same with a cursor of the caller's, so that a sealed list can be
 * shared read-only by threads that each search from their own place. */
int idlist_find(const struct idlist *l, size_t *cursor, uint64_t id);

/* ---- Id log ---------------------------------------------------------------
 * Ids noted as a pass goes and asked about once, at its end: which of a few
 * ids were noted.  Each is kept as the varint of its distance from the one
 * before (zigzag, so either direction), 1-3 bytes in the near-address order
 * of a dump, where exact pages would cost a bit per 8 bytes of the whole
 * heap and a filter's bits say maybe wrongly once millions are in. */

struct idlog {
    uint8_t *bytes;
    size_t n, cap;
    uint64_t last;          /* the id noted last (0 before the first) */
};

void idlog_init(struct idlog *l);
void idlog_free(struct idlog *l);
/* Forget every id, keeping the storage. */
void idlog_clear(struct idlog *l);
/* @return HPROF_OK or HPROF_ERR_NOMEM. */
int idlog_add(struct idlog *l, uint64_t id);
/* fn(ctx, id) for every id noted, in the order noted. */
void idlog_each(const struct idlog *l, void (*fn)(void *ctx, uint64_t id), void *ctx);

/* ---- Id pages: exact bits for the ids in a range of addresses -------------
 * Object ids are addresses, 8-byte aligned and packed: a bit per 8 bytes of
 * id space, in pages of 4 KiB (2^18 bytes of id space) made as ids land in
 * them, holds any number of objects in a 64th of the range they span (32
 * MiB for a 2 GiB heap).  Ids spread on purpose would cost a page each:
 * past `max_pages`, no page is made, and the ids it would hold are not held
 * (the caller checks them another way, or not at all). */

#define ID_PAGE_SHIFT 18
#define ID_STEP_SHIFT 3
#define ID_PAGE_BYTES 4096u
/* A budget of pages for the references of a heap of up to 4 GiB (64 MiB);
 * the pages are made only where ids land. */
#define ID_PAGES_4GIB_HEAP ((size_t)(64u << 20) / ID_PAGE_BYTES)

struct id_pages {
    struct idmap page_of;       /* (id >> ID_PAGE_SHIFT) + 1 -> index in `pages` */
    uint64_t **pages;
    size_t n_pages, cap_pages, max_pages;
    uint64_t last_key;          /* the page of the last id, looked up once */
    uint64_t *last_page;        /* NULL: that key has no page (max_pages made) */
    int last_valid;
};

/* @return HPROF_OK or HPROF_ERR_NOMEM (nothing to free then). */
int id_pages_init(struct id_pages *p, size_t max_pages);
void id_pages_free(struct id_pages *p);
/* Test and set `id`.  @return 1 when it was set already, 0 when not, -1
 * when the pages do not hold it (not 8-byte aligned, or no page for it),
 * or HPROF_ERR_NOMEM. */
int id_pages_test_and_set(struct id_pages *p, uint64_t id);
/* Set the bits of the ids among `ids` (at most IDFILTER_BATCH) that the
 * pages hold, their cache misses overlapped; the others (not aligned, no
 * page for them, or none to be had for want of memory: a maybe is never
 * lost) are moved to the front of `ids`.  @return how many those are. */
unsigned id_pages_set_batch(struct id_pages *p, uint64_t *ids, unsigned n);
/* Test `id` alone.  @return 1 when it is set, 0 when not, -1 when the
 * pages cannot tell (not 8-byte aligned, or past `max_pages`). */
int id_pages_test(const struct id_pages *p, uint64_t id);

/* Set aligned `id`'s bit in its `page`.  @return 1 when it was set. */
static inline int id_page_test_and_set(uint64_t *page, uint64_t id)
{
    uint64_t bit = (id >> ID_STEP_SHIFT) & ((1u << (ID_PAGE_SHIFT - ID_STEP_SHIFT)) - 1);
    uint64_t *word = &page[bit >> 6], mask = 1ull << (bit & 63);
    int seen = (*word & mask) != 0;
    *word |= mask;
    return seen;
}

/* id_pages_test_and_set() inline for the usual id: aligned, in the page of
 * the last one, not seen before.  @return 0 then, else -2 (call it). */
static inline int id_pages_fast(struct id_pages *p, uint64_t id)
{
    if (id != 0 && (id & ((1u << ID_STEP_SHIFT) - 1)) == 0 && p->last_page != NULL &&
        id >> ID_PAGE_SHIFT == p->last_key && !id_page_test_and_set(p->last_page, id))
        return 0;
    return -2;
}

#endif
