/*
 * one_pass.h - the one-pass shrink's parts: the window of records that
 * wait for what decides them (one_pass_window.c), the names held until
 * the end (one_pass_window.c), and the driver (one_pass.c).
 *
 * A record waits under a key: its own id (an array waiting for a String,
 * a Bitmap or DumpData to claim it), a class id (an instance waiting for
 * its class layout), or a buffer id (a Bitmap waiting for its buffer to be
 * merged or kept).  Several records may wait under one key; a record
 * waits under one key only.  The window keeps them oldest first and owns
 * their bytes: a copy of each record's variable part.
 */
#ifndef HPROF_REWRITE_ONE_PASS_H
#define HPROF_REWRITE_ONE_PASS_H

#include "hprof_private.h"

enum held_wait {
    WAIT_CLAIM,             /* an array: for its String, Bitmap or DumpData */
    WAIT_CLASS,             /* an instance: for its class layout */
    WAIT_BUFFER,            /* a Bitmap: for its buffer's verdict */
    WAIT_DECIDE,            /* a buffer a Bitmap claims: merged or kept as it leaves */
    WAIT_EXEMPT             /* a String's value, redacted: unless a keep rule's field
                               names its String before it leaves */
};

enum held_kind { HELD_INSTANCE, HELD_PRIMITIVE_ARRAY, HELD_OBJECT_ARRAY };

/* The window's lists, oldest first: every record held, and the WAIT_DECIDE
 * ones among them, decided first when room is needed. */
enum held_list_id { HELD_ALL, HELD_BUFFERS, HELD_LISTS };

struct held_links {
    struct held *older, *newer;
};

struct held_list {
    struct held *oldest, *newest;
};

struct held {
    struct held_links link[HELD_LISTS]; /* a spare block: newer in link[HELD_ALL] */
    struct held *next_same;     /* the others waiting under `key` */
    uint64_t key;
    uint64_t bytes;             /* what it counts in the window */
    size_t capacity;            /* bytes `data` has room for */
    uint32_t heap;              /* the heap it was read in (HEAP_DUMP_INFO) */
    uint8_t kind, wait;
    uint8_t pinned;             /* a buffer that stays: something else names it */
    uint8_t keep;               /* WAIT_EXEMPT: the verdict (enum array_keep) */
    union {
        struct hprof_instance instance;
        struct hprof_primitive_array array;
        struct hprof_object_array objects;
    } rec;                      /* pointers into `data` */
    uint8_t data[];
};

/* Ids to values, open addressing with deletion (backward shift): the
 * ids waited for come and go by the million in a dump, and idmap keeps
 * every key it was given. */
struct id_slot {
    uint64_t key, value;        /* key 0: free */
};

struct id_table {
    struct id_slot *slots;      /* key and value side by side: one cache line a probe */
    size_t mask, count;
};

void id_table_free(struct id_table *t);
/* The value of `key`, or NULL. */
uint64_t *id_table_find(const struct id_table *t, uint64_t key);
/* Key 0 (null, no object) is never stored: find and take say it is not
 * there.  @return HPROF_OK or HPROF_ERR_NOMEM. */
int id_table_put(struct id_table *t, uint64_t key, uint64_t value);
/* Remove `key`: @return 1 and its value in *value, or 0. */
int id_table_take(struct id_table *t, uint64_t key, uint64_t *value);

/* Lists of the small blocks the window recycles, one per size class
 * (small_class() in one_pass_window.c gives the index). */
#define HELD_SMALL_CLASSES 112

struct wait_window {
    struct held_list list[HELD_LISTS];
    struct id_table index;      /* key -> the first held under it */
    /* key -> the last held under it, once two were (every Bitmap of a
     * shared buffer waits under its id): appended to at once, and not
     * counted in what each record holds */
    struct id_table tails;
    uint64_t bytes, limit, peak;
    uint64_t waited, waited_bytes;
    struct held *spare;         /* large blocks given back, newest first (held_free()) */
    uint64_t spare_bytes;
    struct held *small[HELD_SMALL_CLASSES]; /* small blocks given back, by size class */
    uint64_t small_bytes;       /* theirs, headers included */
};

void wait_window_init(struct wait_window *w, uint64_t limit);
/* Frees every record still held. */
void wait_window_free(struct wait_window *w);
/* A record of `data_bytes` bytes of data to fill, or NULL. */
struct held *held_new(struct wait_window *w, uint8_t kind, size_t data_bytes);
/* Give `h` back: kept for the next record of its size class while the
 * spares are within their limits, else freed. */
void held_free(struct wait_window *w, struct held *h);
/* Hold `h` under `key`.  @return HPROF_OK or HPROF_ERR_NOMEM (h freed). */
int wait_window_hold(struct wait_window *w, struct held *h, uint64_t key, uint8_t wait);
/* The first held under `key` (others by next_same), left in; or NULL. */
struct held *wait_window_first(const struct wait_window *w, uint64_t key);
/* Is anything held under `key`? */
int wait_window_has(const struct wait_window *w, uint64_t key);
/* Take out everything held under `key` (a list by next_same, oldest
 * first; the caller frees each), or NULL. */
struct held *wait_window_take(struct wait_window *w, uint64_t key);
/* Take out the oldest record (and only it), or NULL. */
struct held *wait_window_take_oldest(struct wait_window *w);
/* The oldest record held, or NULL. */
static inline struct held *wait_window_oldest(const struct wait_window *w)
{
    return w->list[HELD_ALL].oldest;
}

/* The oldest WAIT_DECIDE record held, or NULL. */
static inline struct held *wait_window_oldest_buffer(const struct wait_window *w)
{
    return w->list[HELD_BUFFERS].oldest;
}

/* Would `bytes` more pass the limit (with something to make room)? */
static inline int wait_window_full(const struct wait_window *w, uint64_t bytes)
{
    return wait_window_oldest(w) != NULL && w->bytes + bytes > w->limit;
}

#endif
