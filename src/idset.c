/*
 * idset.c - a map from object id to a 64-bit value, or a plain set of ids.
 *
 * Workload: millions of inserts of distinct, aligned ids during one pass,
 * then lookups.  Open addressing with linear probing keeps it to two flat
 * arrays (16 bytes per slot with values, 8 without; at most half full, so
 * 16-32 bytes per remembered id); a multiply-shift hash spreads ids whose
 * low bits are always zero.  Id 0 is the null reference and marks a free
 * slot, so it is never stored.
 */
#include <stdlib.h>
#include <string.h>

#include "hprof_private.h"

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
