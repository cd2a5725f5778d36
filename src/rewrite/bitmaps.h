/*
 * bitmaps.h - the bitmap rewrite: pixel buffers of android.graphics.Bitmap
 * (Bitmap.mBuffer before Android 8, Bitmap$DumpData.buffers from Android
 * 10) keep their contents, and byte-identical buffers are merged into the
 * earliest one: the copies' records go and the Bitmap fields and
 * DumpData.buffers elements that named them name the kept one instead.
 * DumpData.natives is kept as it is.  Identity is decided by type, length
 * and MD5, then confirmed byte for byte; an MD5 match alone never merges.
 *
 * What it learns in the collect passes:
 *   pass 1     where large byte arrays are, and which arrays came just
 *              before (a Bitmap or byte[][] usually follows its buffers),
 *              and - when the dump names bitmaps that could merge - every
 *              reference, into a Bloom filter (which says when nothing but
 *              a Bitmap slot can refer to a buffer that merges);
 *   resolve    the candidates (Bitmap.mBuffer, DumpData.buffers elements)
 *              and what refers to them;
 *   expand     (only when pass 2 could not remember every byte[][])
 *              the elements of each DumpData.buffers array;
 *   digest     (only when candidates may have a twin and were not all
 *              located, or what refers to them is not known) MD5 of the
 *              unlocated candidates and what refers to any; located ones
 *              are fingerprinted and hashed without a pass.
 */
#ifndef HPROF_REWRITE_BITMAPS_H
#define HPROF_REWRITE_BITMAPS_H

#include "rewrite.h"

/* A bitmap buffer to deduplicate. */
struct candidate {
    uint64_t id;
    uint64_t data_offset;   /* input offset of the contents */
    uint64_t bytes;
    uint32_t count;
    uint8_t type;
    uint8_t digested;
    uint8_t unique_size;    /* no other candidate has its size: no digest */
    uint8_t has_copies;     /* other candidates were merged into this one */
    uint8_t located;        /* type, count, bytes, data_offset known before pass 4 */
    uint8_t unique_print;   /* no other candidate has its size and fingerprint: no digest */
    uint8_t md5[16];
    uint64_t fingerprint;   /* of a few sampled blocks (large located candidates) */
    uint64_t equal_to;      /* the data_offset of an earlier candidate whose
                               bytes it was found equal to while hashing, or 0 */
    /* What the merge found byte for byte: */
    uint8_t differs_from_first;       /* not equal to its group's first */
    struct candidate *merges_into;    /* the earlier candidate it merges into, or NULL */
};

/* A byte array seen lately: a Bitmap or a byte[][] usually comes right
 * after the buffers it names, which are then located without pass 4. */
struct recent_array {
    uint64_t id;
    uint64_t data_offset;
    uint32_t count;
};

/* Where a large byte array is, remembered in pass 1. */
struct large_array {
    uint64_t count;
    uint64_t data_offset;   /* input offset of the contents */
};

/* An element of a byte[][] seen in pass 2. */
struct byte_array_element {
    uint64_t array;         /* the byte[][] */
    uint64_t element;       /* the byte[] it names */
};

struct system_heaps;

/* The candidates' bits: 64 Kib (8 KiB, in cache), under 1% set by a few
 * hundred candidates. */
#define CAND_BITS_SHIFT 16
#define CAND_BITS (1u << CAND_BITS_SHIFT)

struct bitmaps {
    const struct rewrite_ctx *ctx;
    struct dump_model *model;
    const struct system_heaps *system; /* what the digest pass skips */
    struct idlist natives;      /* DumpData.natives arrays */
    struct idmap large;         /* byte[] of LARGE_ARRAY+ elements, or one a
                                   byte[][] names just after it -> index + 1
                                   into large_arrays */
    struct large_array *large_arrays;
    struct recent_array *recent;/* byte arrays seen last, by id (or NULL) */
    struct idfilter refs_seen;  /* words NULL: not tracked (no bitmap names) */
    int heap_started;           /* pass 1 reached the first heap segment */
    int refs_incomplete;        /* tracking began after some references */
    struct idmap candidates;    /* buffer id -> index into `cand` + 1 */
    struct candidate *cand;
    size_t n_cand, cap_cand;
    uint64_t *cand_bits;        /* CAND_BITS bits, one set per candidate's hash
                                   (allocated just before refs_seen) */
    struct idmap dump_buffers;  /* DumpData.buffers object-array ids */
    struct byte_array_element *byte_arrays; /* seen in pass 2 */
    size_t n_byte_arrays, cap_byte_arrays;
    int byte_arrays_overflow;   /* too many to remember: run the expand pass */
    struct idmap pinned;        /* candidates referenced from other slots */
    struct idmap remap;         /* duplicate buffer id -> kept buffer id */
    struct idmap dropped;       /* duplicates whose record goes */
    struct digest *digest;
    struct module_visitor expand, digest_pass;
};

int bitmaps_init(struct bitmaps *b, const struct rewrite_ctx *ctx, struct dump_model *model,
                 const struct system_heaps *system);
void bitmaps_free(struct bitmaps *b);

/* ---- Pass 1 ---- */
/* After a STRING record: a name may make references worth tracking. */
void bitmaps_note_name(struct bitmaps *b);
int bitmaps_heap_begin(struct bitmaps *b);
void bitmaps_note_root(struct bitmaps *b, uint64_t id);
void bitmaps_note_class_dump(struct bitmaps *b, const struct hprof_class_dump *c);
int bitmaps_note_primitive_array(struct bitmaps *b, const struct hprof_primitive_array *a);

/* ---- Resolution (eager in pass 1, or pass 2) ---- */
/* Whether references are tracked (a dump naming bitmaps that can merge). */
static inline int bitmaps_tracking(const struct bitmaps *b)
{
    return b->refs_seen.words != NULL;
}
/* A Bitmap or DumpData instance.  *bitmap_slot: the offset of its own
 * buffer field (not a pin), or -1. */
int bitmaps_resolve_instance(struct bitmaps *b, int kind, const struct kind_layout *k,
                             const struct hprof_instance *o, int64_t *bitmap_slot);
/* The bit of candidate `id` in cand_bits. */
static inline uint32_t bitmaps_cand_bit(uint64_t id)
{
    return (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> (64 - CAND_BITS_SHIFT));
}
/* 0 when `id` is surely no candidate (cand_bits allocated). */
static inline int bitmaps_cand_bit_set(const struct bitmaps *b, uint64_t id)
{
    uint32_t bit = bitmaps_cand_bit(id);
    return (int)(b->cand_bits[bit / 64] >> (bit % 64) & 1);
}
/* A reference to an id whose bit is set (see bitmaps_track_ref()). */
int bitmaps_track_maybe_candidate(struct bitmaps *b, uint64_t ref);

/* A reference from a kept object (not a Bitmap's own buffer slot): a pin
 * when it names a known candidate, else an add to the filter, since it may
 * name a buffer whose Bitmap comes later.  Inline, with a bit per hash of
 * the candidates' ids tested before their map: it runs for every reference
 * of pass 1, and a few hundred candidates leave nearly every bit clear,
 * where a probe of their map costs a hash and a loop of unpredictable
 * length. */
static inline int bitmaps_track_ref(struct bitmaps *b, uint64_t ref)
{
    if (b->refs_seen.words == NULL || ref == 0)
        return HPROF_OK;
    if (bitmaps_cand_bit_set(b, ref))
        return bitmaps_track_maybe_candidate(b, ref);
    idfilter_add(&b->refs_seen, ref);
    return HPROF_OK;
}
/* A byte[][]: its elements are remembered. */
int bitmaps_resolve_byte_arrays(struct bitmaps *b, const struct hprof_object_array *a);
/* A primitive array met while resolving: where a candidate is. */
int bitmaps_locate(struct bitmaps *b, const struct hprof_primitive_array *a);
void bitmaps_note_recent(struct bitmaps *b, const struct hprof_primitive_array *a);
/* Forget what was resolved, to resolve again. */
int bitmaps_forget(struct bitmaps *b);

/* ---- After the resolution ---- */
/* No more references: the filter's thread stops. */
void bitmaps_settle(struct bitmaps *b);
/* The remembered elements of DumpData.buffers become candidates;
 * *expand_pass says the expand pass is needed for the rest. */
int bitmaps_expand_remembered(struct bitmaps *b, int *expand_pass);
struct hprof_visitor *bitmaps_expand_visitor(struct bitmaps *b);
/* Hash what can be hashed without a pass; *digest_pass says whether the
 * digest pass must run before bitmaps_merge(), *merge whether a merge is
 * possible at all. */
int bitmaps_digest_located(struct bitmaps *b, int *digest_pass, int *merge);
struct hprof_visitor *bitmaps_digest_visitor(struct bitmaps *b);
/* After the digest pass: the located candidates left unhashed as unique
 * that share a type and length with one the pass hashed are hashed. */
int bitmaps_digest_finish(struct bitmaps *b);
/* Group the digested candidates and merge the identical ones. */
int bitmaps_merge(struct bitmaps *b);
/* Hand the decisions to the plan.  @return HPROF_OK or HPROF_ERR_NOMEM. */
int bitmaps_publish(struct bitmaps *b, struct bitmaps_plan *plan);

#endif
