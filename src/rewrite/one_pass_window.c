/*
 * one_pass_window.c - the records the one-pass shrink holds (see
 * one_pass.h): the window, oldest first, indexed by key.
 */
#include <stdlib.h>
#include <string.h>

#include "one_pass.h"

/* ---- A table of ids with deletion ------------------------------------------ */

static size_t home(uint64_t key, size_t mask)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32 ^ h) & mask;
}

static size_t slot_of(const struct id_table *t, uint64_t key)
{
    size_t s = home(key, t->mask);
    while (t->slots[s].key != 0 && t->slots[s].key != key)
        s = (s + 1) & t->mask;
    return s;
}

static int table_grow(struct id_table *t)
{
    size_t n = t->slots ? 2 * (t->mask + 1) : 1024;
    struct id_table grown = { calloc(n, sizeof *grown.slots), n - 1, t->count };
    if (grown.slots == NULL)
        return HPROF_ERR_NOMEM;
    for (size_t i = 0; t->slots && i <= t->mask; i++)
        if (t->slots[i].key != 0)
            grown.slots[slot_of(&grown, t->slots[i].key)] = t->slots[i];
    free(t->slots);
    *t = grown;
    return HPROF_OK;
}

void id_table_free(struct id_table *t)
{
    free(t->slots);
    memset(t, 0, sizeof *t);
}

uint64_t *id_table_find(const struct id_table *t, uint64_t key)
{
    if (t->count == 0 || key == 0)
        return NULL;
    size_t s = slot_of(t, key);
    return t->slots[s].key == key ? &t->slots[s].value : NULL;
}

int id_table_put(struct id_table *t, uint64_t key, uint64_t value)
{
    if (key == 0) /* the mark of a free slot */
        return HPROF_OK;
    if ((t->count + 1) * 2 > (t->slots ? t->mask + 1 : 0) && table_grow(t) != HPROF_OK)
        return HPROF_ERR_NOMEM;
    size_t s = slot_of(t, key);
    if (t->slots[s].key == 0) {
        t->slots[s].key = key;
        t->count++;
    }
    t->slots[s].value = value;
    return HPROF_OK;
}

/* Empties slot `s` and shifts back the probes that passed over it. */
static void delete_slot(struct id_table *t, size_t s)
{
    t->slots[s].key = 0;
    t->count--;
    for (size_t i = (s + 1) & t->mask; t->slots[i].key != 0; i = (i + 1) & t->mask) {
        size_t h = home(t->slots[i].key, t->mask);
        /* the entry at i stays when its home lies in (s, i], going round */
        if (s <= i ? (h > s && h <= i) : (h > s || h <= i))
            continue;
        t->slots[s] = t->slots[i];
        t->slots[i].key = 0;
        s = i;
    }
}

int id_table_take(struct id_table *t, uint64_t key, uint64_t *value)
{
    if (t->count == 0 || key == 0)
        return 0;
    size_t s = slot_of(t, key);
    if (t->slots[s].key != key)
        return 0;
    *value = t->slots[s].value;
    delete_slot(t, s);
    return 1;
}

/* ---- The window ------------------------------------------------------------- */

void wait_window_init(struct wait_window *w, uint64_t limit)
{
    memset(w, 0, sizeof *w);
    w->limit = limit;
}

static void free_list(struct held *h)
{
    for (struct held *next; h != NULL; h = next) {
        next = h->link[HELD_ALL].newer;
        free(h);
    }
}

void wait_window_free(struct wait_window *w)
{
    free_list(wait_window_oldest(w));
    free_list(w->spare);
    for (unsigned i = 0; i < HELD_SMALL_CLASSES; i++)
        free_list(w->small[i]);
    id_table_free(&w->index);
    id_table_free(&w->tails);
    memset(w, 0, sizeof *w);
}

/* Blocks from this size are recycled as large ones (the spare list).
 * malloc() maps each such block on its own and unmaps it when freed: the
 * kernel then zeroes fresh pages for the next one, and a bitmap-heavy
 * dump, whose pixel buffers wait one after another, spent more time in
 * page faults than in everything else. */
#define HELD_RECYCLE_MIN ((size_t)64 << 10)

static unsigned log2_floor(size_t n)
{
    return 63 - (unsigned)__builtin_clzll((unsigned long long)n);
}

/* `n` (at least 8) rounded up to a multiple of 2^-shift of the power of
 * two at or below it. */
static size_t round_in_octave(size_t n, unsigned shift)
{
    size_t step = (size_t)1 << (log2_floor(n) - shift);
    return (n + step - 1) & ~(step - 1);
}

/* `n` rounded up to a size class: a quarter of a power of two, so that a
 * block fits every size of its class and wastes at most a fifth. */
static size_t held_class(size_t n)
{
    return n < HELD_RECYCLE_MIN ? n : round_in_octave(n, 2);
}

/* Smaller blocks are recycled too, by size class: a dump of small arrays
 * has them come and go by the million, first in first out, and malloc()'s
 * free() of blocks that size cost more than the rest of the window's
 * work.  A class is a multiple of 16 bytes up to 1 KiB (most are a
 * String's few bytes), an eighth of a power of two above, so that a block
 * wastes little beside what it counts in the window (what it holds, as
 * when it had the size asked).  Above HELD_SMALL_MAX the class would be
 * HELD_RECYCLE_MIN: such a block is a large one. */
#define HELD_SMALL_FINE ((size_t)1 << 10)
#define HELD_SMALL_MAX (HELD_RECYCLE_MIN - HELD_RECYCLE_MIN / 16)

/* The class of `n` (at most HELD_SMALL_MAX) and its index in w->small:
 * 0-63 the fine classes, then eight a power of two from 1 KiB (the first
 * of which, 1 KiB itself, is fine). */
static size_t small_class(size_t n, unsigned *index)
{
    if (n <= HELD_SMALL_FINE) {
        size_t c = n == 0 ? 16 : (n + 15) & ~(size_t)15;
        *index = (unsigned)(c / 16 - 1);
        return c;
    }
    size_t c = round_in_octave(n, 3);
    unsigned top = log2_floor(c);
    *index = 64 + (top - 10) * 8 + (unsigned)(c >> (top - 3)) - 8;
    return c;
}

/* The spare small blocks are kept up to an eighth of the window, counted
 * whole (a 16-byte class's block is mostly its header). */
static uint64_t small_limit(const struct wait_window *w)
{
    return w->limit / 8;
}

/* The spare block of exactly `capacity`, taken off the list, or NULL. */
static struct held *take_spare(struct wait_window *w, size_t capacity)
{
    for (struct held **at = &w->spare; *at != NULL; at = &(*at)->link[HELD_ALL].newer)
        if ((*at)->capacity == capacity) {
            struct held *h = *at;
            *at = h->link[HELD_ALL].newer;
            w->spare_bytes -= capacity;
            return h;
        }
    return NULL;
}

/* A spare small block of class `index`, taken off its list, or NULL. */
static struct held *take_small(struct wait_window *w, unsigned index)
{
    struct held *h = w->small[index];
    if (h != NULL) {
        w->small[index] = h->link[HELD_ALL].newer;
        w->small_bytes -= sizeof *h + h->capacity;
    }
    return h;
}

struct held *held_new(struct wait_window *w, uint8_t kind, size_t data_bytes)
{
    unsigned index;
    size_t capacity;
    struct held *h;
    if (data_bytes > SIZE_MAX / 2) /* no such record; and classes would wrap */
        return NULL;
    if (data_bytes <= HELD_SMALL_MAX) {
        capacity = small_class(data_bytes, &index);
        h = take_small(w, index);
    } else {
        capacity = held_class(data_bytes > HELD_RECYCLE_MIN ? data_bytes : HELD_RECYCLE_MIN);
        h = take_spare(w, capacity);
    }
    if (h == NULL && (h = malloc(sizeof *h + capacity)) == NULL)
        return NULL;
    memset(h, 0, sizeof *h);
    h->kind = kind;
    /* what it counts in the window: what it holds, a large one its class */
    h->bytes = sizeof *h + held_class(data_bytes);
    h->capacity = capacity;
    return h;
}

/* Give back a small block: kept for its class while the spares are under
 * their limit. */
static void small_free(struct wait_window *w, struct held *h)
{
    unsigned i;
    (void)small_class(h->capacity, &i);
    if (w->small_bytes + sizeof *h + h->capacity > small_limit(w)) {
        free(h);
        return;
    }
    h->link[HELD_ALL].newer = w->small[i];
    w->small[i] = h;
    w->small_bytes += sizeof *h + h->capacity;
}

/* Large spare blocks are kept up to half the window: the memory of records
 * that left, bounded as the window is, and room for the largest pixel
 * buffers (a 1440x2560 one is 14 MiB). */
static uint64_t spare_limit(const struct wait_window *w)
{
    return w->limit / 2;
}

void held_free(struct wait_window *w, struct held *h)
{
    if (h != NULL && h->capacity < HELD_RECYCLE_MIN) {
        small_free(w, h);
        return;
    }
    if (h == NULL || h->capacity > spare_limit(w)) {
        free(h);
        return;
    }
    h->link[HELD_ALL].newer = w->spare;
    w->spare = h;
    w->spare_bytes += h->capacity;
    struct held **at = &w->spare; /* over the limit: the least recently given back go */
    uint64_t kept = 0;
    while (*at != NULL && kept + (*at)->capacity <= spare_limit(w)) {
        kept += (*at)->capacity;
        at = &(*at)->link[HELD_ALL].newer;
    }
    free_list(*at);
    *at = NULL;
    w->spare_bytes = kept;
}

static struct held *as_held(uint64_t value)
{
    return (struct held *)(uintptr_t)value;
}

/* `h` becomes the newest of list `id`. */
static void list_append(struct wait_window *w, struct held *h, enum held_list_id id)
{
    struct held_list *l = &w->list[id];
    h->link[id] = (struct held_links){ l->newest, NULL };
    if (l->newest != NULL)
        l->newest->link[id].newer = h;
    else
        l->oldest = h;
    l->newest = h;
}

static void list_unlink(struct wait_window *w, struct held *h, enum held_list_id id)
{
    struct held_list *l = &w->list[id];
    struct held_links *k = &h->link[id];
    if (k->older != NULL)
        k->older->link[id].newer = k->newer;
    else
        l->oldest = k->newer;
    if (k->newer != NULL)
        k->newer->link[id].older = k->older;
    else
        l->newest = k->older;
    k->older = k->newer = NULL;
}

int wait_window_hold(struct wait_window *w, struct held *h, uint64_t key, uint8_t wait)
{
    uint64_t *head = id_table_find(&w->index, key);
    h->key = key;
    h->wait = wait;
    h->next_same = NULL;
    if (head != NULL) { /* last of those under the key: taken out oldest first */
        uint64_t *tail = id_table_find(&w->tails, key);
        struct held *last = as_held(tail != NULL ? *tail : *head);
        if (tail != NULL) {
            *tail = (uint64_t)(uintptr_t)h;
        } else if (id_table_put(&w->tails, key, (uint64_t)(uintptr_t)h) != HPROF_OK) {
            held_free(w, h);
            return HPROF_ERR_NOMEM;
        }
        last->next_same = h;
    } else if (id_table_put(&w->index, key, (uint64_t)(uintptr_t)h) != HPROF_OK) {
        held_free(w, h);
        return HPROF_ERR_NOMEM;
    }
    if (wait == WAIT_DECIDE)
        list_append(w, h, HELD_BUFFERS);
    list_append(w, h, HELD_ALL);
    w->bytes += h->bytes;
    if (w->bytes > w->peak)
        w->peak = w->bytes;
    w->waited++;
    w->waited_bytes += h->bytes;
    return HPROF_OK;
}

struct held *wait_window_first(const struct wait_window *w, uint64_t key)
{
    /* most often the record just read (a String's value before it), and an
     * array waiting for its claim is alone under its key */
    struct held *newest = w->list[HELD_ALL].newest;
    if (newest != NULL && newest->key == key && newest->wait == WAIT_CLAIM)
        return newest;
    uint64_t *head = id_table_find(&w->index, key);
    return head != NULL ? as_held(*head) : NULL;
}

int wait_window_has(const struct wait_window *w, uint64_t key)
{
    return id_table_find(&w->index, key) != NULL;
}

static void unlink_order(struct wait_window *w, struct held *h)
{
    list_unlink(w, h, HELD_ALL);
    if (h->wait == WAIT_DECIDE)
        list_unlink(w, h, HELD_BUFFERS);
    w->bytes -= h->bytes;
}

struct held *wait_window_take(struct wait_window *w, uint64_t key)
{
    uint64_t head, tail;
    if (!id_table_take(&w->index, key, &head))
        return NULL;
    if (w->tails.count > 0)
        (void)id_table_take(&w->tails, key, &tail);
    struct held *list = as_held(head);
    for (struct held *h = list; h != NULL; h = h->next_same)
        unlink_order(w, h);
    return list;
}

struct held *wait_window_take_oldest(struct wait_window *w)
{
    struct held *h = wait_window_oldest(w);
    if (h == NULL)
        return NULL;
    uint64_t *head = id_table_find(&w->index, h->key);
    uint64_t unused;
    if (as_held(*head) == h) { /* the oldest is the first under its key */
        if (h->next_same != NULL) {
            *head = (uint64_t)(uintptr_t)h->next_same;
        } else {
            id_table_take(&w->index, h->key, head);
            if (w->tails.count > 0)
                (void)id_table_take(&w->tails, h->key, &unused);
        }
    } else {
        struct held *p = as_held(*head);
        while (p->next_same != h)
            p = p->next_same;
        p->next_same = h->next_same;
        uint64_t *tail = p->next_same == NULL ? id_table_find(&w->tails, h->key) : NULL;
        if (tail != NULL)
            *tail = (uint64_t)(uintptr_t)p;
    }
    h->next_same = NULL;
    unlink_order(w, h);
    return h;
}
