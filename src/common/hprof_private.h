/*
 * hprof_private.h - declarations shared by libhprof's source files and not
 * part of the public API: byte order helpers, the id set, class layouts and
 * the walk over an object's references.
 */
#ifndef HPROF_PRIVATE_H
#define HPROF_PRIVATE_H

#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

#include "hprof.h"

/* ---- Big-endian access -------------------------------------------------- */

static inline uint16_t get_u2(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

static inline uint32_t get_u4(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t get_u8(const uint8_t *p)
{
    return ((uint64_t)get_u4(p) << 32) | get_u4(p + 4);
}

/* An identifier of 4 or 8 bytes. */
static inline uint64_t get_id(const uint8_t *p, unsigned id_size)
{
    return id_size == 4 ? get_u4(p) : get_u8(p);
}

/* A value of `size` bytes (1, 2, 4 or 8), right-aligned. */
static inline uint64_t get_value(const uint8_t *p, unsigned size)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < size; i++)
        v = (v << 8) | p[i];
    return v;
}

static inline uint8_t *put_u1(uint8_t *p, uint8_t v)
{
    *p = v;
    return p + 1;
}

static inline uint8_t *put_u2(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
    return p + 2;
}

/* put_u4() and put_u8() store the value once, byte-swapped, rather than
 * byte by byte: GCC did not merge the byte stores in the writer's headers
 * (a uint8_t store may alias the record being written, so each field was
 * read and shifted apart), which cost it about 90 instructions per
 * instance. */
static inline uint8_t *put_u4(uint8_t *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    __builtin_memcpy(p, &v, 4);
    return p + 4;
}

static inline uint8_t *put_u8(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    __builtin_memcpy(p, &v, 8);
    return p + 8;
}

static inline uint8_t *put_value(uint8_t *p, uint64_t v, unsigned size)
{
    for (unsigned i = size; i > 0; i--) {
        p[i - 1] = (uint8_t)v;
        v >>= 8;
    }
    return p + size;
}

/* An identifier of 4 or 8 bytes (what readers and writers accept), as
 * get_id() reads it: put_value()'s loop over an unknown size cost the
 * writer about 35 instructions per 8-byte id, and ids are in every record. */
static inline uint8_t *put_id(uint8_t *p, uint64_t id, unsigned id_size)
{
    return id_size == 4 ? put_u4(p, (uint32_t)id) : put_u8(p, id);
}

/* hprof_type_size(), inline for the per-field and per-array paths. */
static inline unsigned type_size(uint8_t type, unsigned id_size)
{
    switch (type) {
    case HPROF_TYPE_OBJECT: return id_size;
    case HPROF_TYPE_BOOLEAN: case HPROF_TYPE_BYTE: return 1;
    case HPROF_TYPE_CHAR: case HPROF_TYPE_SHORT: return 2;
    case HPROF_TYPE_FLOAT: case HPROF_TYPE_INT: return 4;
    case HPROF_TYPE_DOUBLE: case HPROF_TYPE_LONG: return 8;
    default: return 0;
    }
}

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
 * rate grows with the ids added. */

#define IDFILTER_BATCH 32

struct idfilter_thread;

struct idfilter {
    uint64_t *words;        /* 8 per block */
    size_t block_mask;      /* blocks - 1; blocks is a power of two */
    uint64_t queued[IDFILTER_BATCH];
    unsigned n_queued;
    struct idfilter_thread *thread; /* idfilter_use_thread(), or NULL */
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
/* From now on, batches of adds are applied by a thread of their own: their
 * cache misses (an add touches a random line of the filter) then cost the
 * caller nothing.  The bits set are the same.  Fails only for want of
 * memory or of a thread, and adds are then applied in place as before. */
int idfilter_use_thread(struct idfilter *f);
/* Wait until every add is applied, and stop the thread (if any). */
void idfilter_settle(struct idfilter *f);

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

/* ---- Class layouts -------------------------------------------------------
 * What is needed to find a field in an instance: each class's superclass and
 * own instance fields.  Filled from CLASS_DUMPs in one pass, used in later
 * ones (class dumps may come after instances of the class). */

struct class_field {
    uint64_t name_id;
    uint8_t type;
};

/* One per class, so packed: 56 bytes on LP64 (a dump may hold millions). */
struct class_info {
    uint64_t id;
    uint64_t offset;            /* of its CLASS_DUMP, for messages */
    uint64_t super_id;
    /* Field bytes of an instance, all superclasses' included, once the
     * layout is resolved; until then classes.c's running sum over the
     * classes from this one up to `blocked` (see classes_resolve()). */
    uint64_t total_bytes;
    uint32_t first_field;       /* index into classes.fields */
    /* classes.c's memo of the chain above (see classes_resolve()): */
    uint32_t up_fields;         /* 1 + index of the nearest superclass with fields, or 0 */
    uint32_t blocked;           /* index of the class where the known chain stops */
    uint32_t first_ref, n_refs; /* its reference fields in classes.refs, once listed */
    uint16_t n_fields;
    uint8_t layout;             /* LAYOUT_PARTIAL, _BUSY, _DONE, _BROKEN */
    unsigned resolved : 1;      /* classes_resolve(this class) succeeded */
    unsigned refs_listed : 2;   /* REFS_UNLISTED, REFS_LISTED or REFS_WALKED */
};

/* A reference field of an instance, superclasses' included, by offset. */
struct class_ref {
    uint32_t offset;
    uint64_t name_id;
};

struct classes {
    /* class id -> position in `info`: open addressing, at most half full,
     * a slot holding 32 bits of the id's hash and the position + 1 (0: a
     * free slot), the id itself being in `info` (classes.c) */
    uint64_t *index;
    size_t index_mask;          /* slots - 1; slots is a power of two */
    struct class_info *info;
    size_t n_info, cap_info;
    struct class_field *fields;
    size_t n_fields, cap_fields;
    struct class_ref *refs;     /* per class with instances, listed once */
    size_t n_refs, cap_refs;
    uint32_t *path;             /* classes_resolve()'s walk, reused */
    size_t cap_path;
    unsigned id_size;
};

int classes_init(struct classes *c, unsigned id_size);
void classes_free(struct classes *c);
/* Record a class dump.  A second dump of the same id is an error. */
int classes_add(struct classes *c, const struct hprof_class_dump *cd, struct hprof_error *err);

/* The index's hash (idmap_get()'s) and the slot a probe starts from. */
static inline uint64_t class_id_hash(uint64_t id)
{
    return id * 0x9E3779B97F4A7C15ull;
}

static inline size_t class_home_slot(uint64_t hash, size_t mask)
{
    return (size_t)(hash >> 32 ^ hash) & mask;
}

/* The class of id `class_id`, or NULL.  Inline: it runs for nearly every
 * object of every pass. */
static inline struct class_info *classes_find(const struct classes *c, uint64_t class_id)
{
    if (c->n_info == 0) /* also after classes_free() */
        return NULL;
    uint64_t hash = class_id_hash(class_id);
    uint32_t bits = (uint32_t)(hash >> 32);
    for (size_t s = class_home_slot(hash, c->index_mask); c->index[s] != 0;
         s = (s + 1) & c->index_mask) {
        uint64_t slot = c->index[s];
        if ((uint32_t)(slot >> 32) == bits && c->info[(uint32_t)slot - 1].id == class_id)
            return &c->info[(uint32_t)slot - 1];
    }
    return NULL;
}
/* Total field bytes of an instance of `ci`, superclasses included; checks
 * that the chain ends and has no cycle.  Each class's chain is walked once
 * in all (what a walk learns is kept for every class it passes), so
 * resolving every class costs time linear in the classes, in any order.
 * A missing superclass may be dumped later: the walk is then taken up again
 * from where it stopped.  @return HPROF_OK or a format error (and the
 * class is `resolved` from its first success on). */
int classes_resolve(struct classes *c, struct class_info *ci, struct hprof_error *err);
/* classes_resolve() without the `resolved` mark: makes ci's layout final
 * (total_bytes, and classes_up() jumping over classes without fields).
 * A class up the chain of a resolved one may still hold a running sum,
 * since a walk jumps over the middle of the spans learnt while the chain
 * was incomplete: who reads such a class's total_bytes finishes its layout
 * first, and leaves `resolved` to the eager pass 1, which marks with it
 * the classes whose kind and exempt fields it has worked out. */
int classes_finish_layout(struct classes *c, struct class_info *ci, struct hprof_error *err);

/* The next class up from `k` whose fields an instance holds: once k's
 * layout is resolved, the nearest superclass with fields (those without
 * any are jumped over, so that a walk over an instance's fields costs what
 * its fields cost, however deep the chain); before, the superclass, or
 * NULL when it is not dumped.  Walk with `k = classes_up(c, k)` where
 * `k = classes_find(c, k->super_id)` would walk every class of the chain. */
struct class_info *classes_up(const struct classes *c, const struct class_info *k);

/* Resolve every class: rejects superclass cycles and missing superclasses,
 * after which walks up any chain are bounded by its length. */
int classes_resolve_all(struct classes *c, struct hprof_error *err);

/* The class of instance `o`, checked: dumped, and `o` holds exactly the
 * field bytes its layout needs.  @return HPROF_OK and *out, or an error
 * naming the instance's offset. */
int classes_check_instance(struct classes *c, const struct hprof_instance *o,
                           struct class_info **out, struct hprof_error *err);

/* Calls fn(ctx, slot_offset, ref) for every object-typed field of an
 * instance of class `ci` (whose values are `values`, `length` bytes, already
 * checked against the layout), walking up the superclass chain.  A non-zero
 * return from fn stops the walk and is returned. */
typedef int (*field_ref_fn)(void *ctx, uint32_t slot_offset, uint64_t name_id, uint64_t ref);
int classes_each_ref(struct classes *c, struct class_info *ci,
                     const uint8_t *values, uint32_t length, field_ref_fn fn, void *ctx);

/* Byte offset in instances of `ci` of the first field of type `type` whose
 * name id satisfies match(ctx, name_id), searching the class, then its
 * superclasses.  (A name is matched by predicate because a dump may hold
 * several STRING records with the same text.)  @return the offset, or -1. */
typedef int (*field_match_fn)(void *ctx, uint64_t name_id);
int64_t classes_field_offset(const struct classes *c, const struct class_info *ci,
                             field_match_fn match, void *ctx, uint8_t type);

/* ---- MD5 of array contents (OpenSSL EVP) --------------------------------- */

struct digest;
struct digest *digest_new(struct hprof_error *err);
int digest_begin(struct digest *d);
int digest_update(struct digest *d, const void *data, size_t len);
int digest_final(struct digest *d, uint8_t out[16]);
void digest_free(struct digest *d);

/* A key for contents of `bytes` bytes: their MD5 up to DIGEST_PIECE bytes,
 * beyond that the MD5 of the MD5s of each DIGEST_PIECE bytes in order (the
 * last piece shorter), so that the pieces of one buffer can be hashed at
 * once.  Contents come by digest_pieces_update(), or a piece at a time as
 * its MD5 by digest_pieces_add(), hashed elsewhere; not both in one key. */
#define DIGEST_PIECE ((uint64_t)1 << 20)
int digest_pieces_begin(struct digest *d, uint64_t bytes);
int digest_pieces_update(struct digest *d, const void *data, size_t len);
int digest_pieces_add(struct digest *d, const uint8_t md5[16]);
int digest_pieces_final(struct digest *d, uint8_t out[16]);

/* `array` (of *cap elements of `size` bytes) grown by doubling, from 64, to
 * hold at least `need`.  @return it (perhaps moved), or NULL when out of
 * memory (`array` is then unchanged). */
static inline void *grow_array(void *array, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return array;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *grown = realloc(array, n * size);
    if (grown != NULL)
        *cap = n;
    return grown;
}

/* The first chunk of array `a` as a zero-length array of the same id and
 * element type (a NODATA record becomes a plain one). */
static inline struct hprof_primitive_array primitive_array_emptied(
    const struct hprof_primitive_array *a)
{
    struct hprof_primitive_array empty = *a;
    empty.tag = HPROF_PRIMITIVE_ARRAY_DUMP;
    empty.count = 0;
    empty.first = 0;
    empty.length = 0;
    empty.data = NULL;
    return empty;
}

/* Visitor slots for passes that want no array contents (HPROF_SKIP: the
 * reader seeks over them) or no instances (visitor.c). */
int visit_skip_object_array(struct hprof_visitor *v, const struct hprof_object_array *a);
int visit_skip_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a);
int visit_ignore_instance(struct hprof_visitor *v, const struct hprof_instance *o);

/* The top-level record tags the format defines, with their names: one
 * list for hprof_tag_name() and hprof_tag_known(). */
#define HPROF_TAGS(X)                                                          \
    X(HPROF_TAG_STRING, "STRING")                                              \
    X(HPROF_TAG_LOAD_CLASS, "LOAD_CLASS")                                      \
    X(HPROF_TAG_UNLOAD_CLASS, "UNLOAD_CLASS")                                  \
    X(HPROF_TAG_STACK_FRAME, "STACK_FRAME")                                    \
    X(HPROF_TAG_STACK_TRACE, "STACK_TRACE")                                    \
    X(HPROF_TAG_ALLOC_SITES, "ALLOC_SITES")                                    \
    X(HPROF_TAG_HEAP_SUMMARY, "HEAP_SUMMARY")                                  \
    X(HPROF_TAG_START_THREAD, "START_THREAD")                                  \
    X(HPROF_TAG_END_THREAD, "END_THREAD")                                      \
    X(HPROF_TAG_HEAP_DUMP, "HEAP_DUMP")                                        \
    X(HPROF_TAG_CPU_SAMPLES, "CPU_SAMPLES")                                    \
    X(HPROF_TAG_CONTROL_SETTINGS, "CONTROL_SETTINGS")                          \
    X(HPROF_TAG_HEAP_DUMP_SEGMENT, "HEAP_DUMP_SEGMENT")                        \
    X(HPROF_TAG_HEAP_DUMP_END, "HEAP_DUMP_END")

/* Is `tag` a top-level record tag the format defines (what
 * hprof_tag_name() names)?  Asked of every record: a switch, not a
 * string compare. */
static inline int hprof_tag_known(uint8_t tag)
{
#define HPROF_TAG_CASE(tag, name) case tag:
    switch (tag) {
    HPROF_TAGS(HPROF_TAG_CASE)
        return 1;
    default:
        return 0;
    }
#undef HPROF_TAG_CASE
}

/* Monotonic seconds, for the passes' timings. */
double hprof_now(void);

/* ---- For the shrink's own readers and the parallel write pass --------------- */

/* A second reader of the same input (file or memory), as strict as `r`. */
int reader_clone(const struct hprof_reader *r, struct hprof_reader **out, struct hprof_error *err);
/* What the runs of `from` (a clone) found of a cut input, as `to`'s own:
 * a caller asks its reader, not the clones a shrink reads through. */
void reader_copy_salvage_report(struct hprof_reader *to, const struct hprof_reader *from);
/* Read the top-level records (HEAP_DUMPs or segments) from `start`, one at
 * least, until one ends at or past `end`. */
int reader_run_segments(struct hprof_reader *r, uint64_t start, uint64_t end,
                        struct hprof_visitor *v);
/* A second heap dump fails the run (hprof_reader_dumps() then says 2):
 * what a pass that gathers object ids across the whole run needs. */
void reader_set_one_dump(struct hprof_reader *r, int on);
/* Did the last run stop so?  (The file holds several heap dumps.) */
int reader_stopped_at_second_dump(const struct hprof_reader *r);
/* Where the last record of the dump hprof_reader_set_dump() selected
 * ended, in the last run. */
uint64_t reader_dump_end(const struct hprof_reader *r);
/* Runs read the records from `start` (a record boundary; 0: the first)
 * until `end` (0: the end of the file). */
void reader_set_range(struct hprof_reader *r, uint64_t start, uint64_t end);
/* Called by a visitor's heap_begin that returns HPROF_SKIP: the run goes on
 * at `offset` (a record boundary past that segment) instead of right after
 * it.  The records in between are neither read nor counted. */
void reader_skip_to(struct hprof_reader *r, uint64_t offset);
/* Is `r` set to salvage a cut input (hprof_reader_set_salvage())? */
int reader_salvaging(const struct hprof_reader *r);
/* Copy `len` input bytes at `offset` into `buf` without mapping them:
 * pread() on the file even when `r` maps it, so that nothing stays
 * resident in this process (the page cache keeps the file), or memcpy()
 * from memory input.  Safe on several threads at once; errors go to `err`. */
int reader_pread_unmapped(const struct hprof_reader *r, uint64_t offset, void *buf, size_t len,
                          struct hprof_error *err);
/* Whether each run of a mapped reader has a thread read ahead of it (what
 * hprof_reader_set_threads() decides from its count); the shrink sets it
 * on the readers it clones for itself. */
void reader_set_readahead_thread(struct hprof_reader *r, int on);

/* The file a mapped reader maps, and where: *map and *size, and its fd
 * as the result; -1 when `r` does not map a file. */
int reader_mapped_file(const struct hprof_reader *r, const uint8_t **map, uint64_t *size);

/* hprof_writer_copy_input() :
 * Array contents that `w` gets straight from the mapping of `fd` (map,
 * size bytes: what reader_mapped_file() says of the reader in front of it)
 * go to a file sink read from `fd` (pread into the sink's buffer) instead
 * of from the mapping: pages of kept pixel buffers are then never faulted
 * in, and mapped pages stay bounded.  Contents a filter
 * changed are elsewhere in memory and written as usual.  fd -1 stops it.
 * @return whether contents will be copied so (the sink is a file). */
int writer_copy_input(struct hprof_writer *w, const uint8_t *map, uint64_t size, int fd);
/* With `on`, a file sink reads the next part of such an array on a
 * thread of its own while the calling thread writes the last one
 * (sink_copy_ahead()); without, that thread stops.  For callers that run
 * on several threads.  @return whether the sink reads ahead. */
int writer_copy_ahead(struct hprof_writer *w, int on);

/* A writer that will only see heap segments, into `sink`, with `id_size`. */
void writer_for_segments(struct hprof_writer *w, unsigned id_size, struct hprof_sink *sink);
/* Append what such a writer made of one input segment. */
/* Where a writer's run of segments stands: what a writer of one job of
 * segments leaves for the writer its bytes go to. */
struct writer_run {
    int in_run;                 /* segments written, HEAP_DUMP_END not yet */
    int closed_by_us;           /* an END written that the input has yet to send */
};
/* A job of segments starts with no run open, whatever the last job left:
 * its bytes then depend on its records alone, not on which worker ran it. */
void writer_begin_job(struct hprof_writer *w);
struct writer_run writer_run_state(const struct hprof_writer *w);
/* Append what such a writer made of `records` input heap records, ending
 * in state `after`, leaving this writer as if it had written them. */
int writer_put_segments(struct hprof_writer *w, const uint8_t *bytes, size_t len,
                        struct writer_run after, size_t records);

/* A memory sink refusing to hold more than `max` bytes (then
 * mem_sink_over() is 1).  mem_sink_swap() hands over what it holds (*data,
 * *len, *cap) and continues, empty and usable again, in the buffer passed
 * in (*data of *cap bytes, malloc()ed, or NULL), so that buffers go round
 * instead of being allocated for every use. */
struct hprof_sink *mem_sink_new_capped(size_t max, struct hprof_error *err);
int mem_sink_over(const struct hprof_sink *s);
void mem_sink_swap(struct hprof_sink *s, uint8_t **data, size_t *len, size_t *cap);

#endif /* HPROF_PRIVATE_H */
