/*
 * validate.c - the checks that make a dump valid beyond its framing, shared
 * by hprof-verify, hprof-info (and hprof-bitmaps) and the shrink, so that
 * no tool accepts what another rejects: object ids (never 0, never dumped
 * twice) here, class layouts in classes.c.  See validate.h for the rules
 * and for the bounded-memory duplicate check, objcheck; objcheck_pass.c
 * (in core) runs it over a reader.
 *
 * objcheck tries an exact page first because a Bloom filter costs a cache
 * miss per object wherever the id lands, where a bit beside the last id's
 * costs nothing.  The filter is a blocked Bloom filter like idset.c's
 * idfilter, but it tests and sets in one step (is this id maybe there
 * already? add it): one cache line per object.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "validate.h"

#define MIN_FILTER (64u << 10)
#define MAX_FILTER (32u << 20)

int valid_object_id(uint64_t id, uint64_t offset, uint8_t subtag, struct hprof_error *err)
{
    if (id != 0)
        return HPROF_OK;
    return hprof_error_set(err, HPROF_ERR_FORMAT, "offset 0x%" PRIx64 ": %s: object id is 0",
                           offset, hprof_subtag_name(subtag));
}

int object_dumped_twice(uint64_t id, uint64_t offset, uint8_t subtag, struct hprof_error *err)
{
    return hprof_error_set(err, HPROF_ERR_FORMAT,
                           "offset 0x%" PRIx64 ": %s: object 0x%" PRIx64 " is dumped twice",
                           offset, hprof_subtag_name(subtag), id);
}

static int nomem(struct hprof_error *err)
{
    return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory for the object id check");
}

size_t objcheck_filter_bytes(uint64_t input_bytes)
{
    uint64_t want = input_bytes / 32;
    size_t bytes = MIN_FILTER;
    while (bytes < want && bytes < MAX_FILTER)
        bytes *= 2;
    return bytes;
}

int objcheck_init(struct objcheck *oc, size_t budget)
{
    memset(oc, 0, sizeof *oc);
    if (idmap_init(&oc->met, 1) != HPROF_OK)
        return HPROF_ERR_NOMEM;
    if (id_pages_init(&oc->exact, budget / ID_PAGE_BYTES) != HPROF_OK) {
        idmap_free(&oc->met);
        return HPROF_ERR_NOMEM;
    }
    oc->budget = budget;
    idlist_init(&oc->suspects);
    return HPROF_OK;
}

/* The filter, once an id needs it. */
static int filter_init(struct objcheck *oc)
{
    size_t blocks = 1;
    while (blocks * 2 * 64 <= oc->budget)
        blocks *= 2;
    oc->words_bytes = blocks * 8 * sizeof *oc->words;
    oc->words = filter_words_alloc(oc->words_bytes);
    oc->block_mask = blocks - 1;
    return oc->words != NULL ? HPROF_OK : HPROF_ERR_NOMEM;
}

void objcheck_free(struct objcheck *oc)
{
    filter_words_free(oc->words, oc->words_bytes);
    id_pages_free(&oc->exact);
    idlist_free(&oc->suspects);
    idmap_free(&oc->met);
    memset(oc, 0, sizeof *oc);
}

static uint64_t id_hash(uint64_t id)
{
    uint64_t h = id * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return h;
}

static uint64_t *block_of(const struct objcheck *oc, uint64_t h)
{
    return oc->words + (size_t)(h & oc->block_mask) * 8;
}

/* Set the id's three bits; @return 1 when all three were set already. */
static int test_and_set(struct objcheck *oc, uint64_t id)
{
    uint64_t h = id_hash(id);
    uint64_t *block = block_of(oc, h);
    unsigned bits[3] = { (unsigned)(h >> 23) & 511, (unsigned)(h >> 32) & 511,
                         (unsigned)(h >> 41) & 511 };
    int seen = 1;
    for (int i = 0; i < 3; i++) {
        uint64_t mask = 1ull << (bits[i] & 63);
        seen &= (block[bits[i] >> 6] & mask) != 0;
        block[bits[i] >> 6] |= mask;
    }
    return seen;
}

/* Test and set the queued ids, in order, their lines fetched first. */
static int flush(struct objcheck *oc, struct hprof_error *err)
{
    if (oc->n_queued == 0)
        return HPROF_OK;
    if (oc->words == NULL && filter_init(oc) != HPROF_OK)
        return nomem(err);
    for (unsigned i = 0; i < oc->n_queued; i++)
        __builtin_prefetch(block_of(oc, id_hash(oc->queued[i])), 1);
    int rc = HPROF_OK;
    for (unsigned i = 0; i < oc->n_queued; i++)
        if (test_and_set(oc, oc->queued[i]) && idlist_add(&oc->suspects, oc->queued[i]) != HPROF_OK)
            rc = nomem(err);
    oc->n_queued = 0;
    return rc;
}

int objcheck_add(struct objcheck *oc, uint64_t id, uint64_t offset, uint8_t subtag,
                 struct hprof_error *err)
{
    int rc = valid_object_id(id, offset, subtag, err);
    if (rc != HPROF_OK)
        return rc;
    int seen = id_pages_test_and_set(&oc->exact, id);
    if (seen == HPROF_ERR_NOMEM)
        return nomem(err);
    if (seen > 0) /* a suspect like the filter's: reported in file order */
        return idlist_add(&oc->suspects, id) == HPROF_OK ? HPROF_OK : nomem(err);
    if (seen == 0)
        return HPROF_OK;
    oc->queued[oc->n_queued++] = id;
    return oc->n_queued == OBJCHECK_BATCH ? flush(oc, err) : HPROF_OK;
}

int objcheck_seal(struct objcheck *oc, struct hprof_error *err)
{
    int rc = flush(oc, err);
    oc->sealed = 1;
    if (rc == HPROF_OK && idlist_seal(&oc->suspects) != HPROF_OK)
        rc = nomem(err);
    return rc;
}

size_t objcheck_pending(const struct objcheck *oc)
{
    return oc->suspects.n;
}

int objcheck_confirm(struct objcheck *oc, uint64_t id, uint64_t offset, uint8_t subtag,
                     struct hprof_error *err)
{
    if (oc->suspects.n == 0 || !idlist_has(&oc->suspects, id))
        return HPROF_OK;
    if (idmap_has(&oc->met, id))
        return object_dumped_twice(id, offset, subtag, err);
    return idmap_put(&oc->met, id, offset) == HPROF_OK ? HPROF_OK : nomem(err);
}
