/*
 * bitmaps.c - the bitmap rewrite (see bitmaps.h): candidates, digests and
 * merges in the collect passes, then the filter that drops the copies and
 * rewrites what named them.
 *
 * Digests: a large buffer whose size no other candidate shares cannot have
 * a duplicate and is not hashed.  When passes 1-2 saw where every other
 * candidate's contents are (after its Bitmap, just before it or its
 * byte[][], or a byte array of 4 KiB or more), those over 12 KiB are told
 * apart by a fingerprint of three sampled blocks first, the ones that may
 * still have a twin are hashed on every core with pread() (nothing stays
 * mapped) or compared with the earliest of their bunch as it is hashed,
 * and the digest pass runs only if two may be equal and what else
 * refers to the copies is not known: passes 1-2 pin what refers to a known
 * candidate and put every other reference into a Bloom filter, which
 * mostly rules the rest out.  The candidates that could not be located
 * (in a dump straight from the JVM, a small buffer whose Bitmap comes long
 * after it) are hashed by the digest pass, and only they.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bitmaps.h"
#include "filter.h"
#include "md5_lanes.h"
#include "system_heaps.h"

/* Byte arrays of at least this many elements (a bitmap of 32 x 32 pixels)
 * have their size and place remembered in pass 1 when the dump names
 * bitmaps that could merge (as for the recent arrays), at most MAX_LARGE
 * of them (32 bytes each in two maps): a buffer that no other could equal
 * need not be hashed, and one dumped before its Bitmap can be hashed with
 * pread() instead of in pass 4. */
#define LARGE_ARRAY (4u << 10)
#define MAX_LARGE (1u << 18)

/* The filter of references: a byte per 16 bytes of input (a dump holds at
 * most one reference per 4 bytes, typically one per 20-400), between
 * 256 KiB and 8 MiB - enough for a few million references before it says
 * maybe too often to spare pass 4. */
#define REFS_SEEN_MIN (256u << 10)
#define REFS_SEEN_MAX (8u << 20)

/* At most this many byte[][] elements are remembered in pass 2 (16 bytes
 * each); past it, DumpData.buffers are expanded by a pass of their own. */
#define MAX_BYTE_ARRAY_ELEMENTS (1u << 20)

#define RECENT_ARRAYS_BITS 12 /* 4096 of them, direct-mapped by id */

#define COMPARE_BUFFER (1u << 20)

static size_t refs_seen_bytes(uint64_t input_bytes)
{
    uint64_t want = input_bytes / 16;
    return want < REFS_SEEN_MIN ? REFS_SEEN_MIN : want > REFS_SEEN_MAX ? REFS_SEEN_MAX : (size_t)want;
}

static int nomem(const struct bitmaps *b)
{
    return rewrite_nomem(b->ctx);
}

static const struct hprof_visitor_ops expand_ops, digest_ops;

int bitmaps_init(struct bitmaps *b, const struct rewrite_ctx *ctx, struct dump_model *model,
                 const struct system_heaps *system)
{
    memset(b, 0, sizeof *b);
    b->ctx = ctx;
    b->model = model;
    b->system = system;
    b->expand = (struct module_visitor){ { &expand_ops, NULL }, b };
    b->digest_pass = (struct module_visitor){ { &digest_ops, NULL }, b };
    idlist_init(&b->natives);
    if (idmap_init(&b->large, 1) || idmap_init(&b->large_at, 1) ||
        idmap_init(&b->candidates, 1) || idmap_init(&b->dump_buffers, 0) ||
        idmap_init(&b->pinned, 0) || idmap_init(&b->remap, 1) || idmap_init(&b->dropped, 0))
        return HPROF_ERR_NOMEM;
    return HPROF_OK; /* the digest is made when needed: OpenSSL's set-up is not free */
}

void bitmaps_free(struct bitmaps *b)
{
    idlist_free(&b->natives);
    idmap_free(&b->large);
    idmap_free(&b->large_at);
    free(b->recent);
    idfilter_free(&b->refs_seen);
    idmap_free(&b->candidates);
    free(b->cand);
    idmap_free(&b->dump_buffers);
    free(b->byte_arrays);
    idmap_free(&b->pinned);
    idmap_free(&b->remap);
    idmap_free(&b->dropped);
    digest_free(b->digest);
}

/* ---- Pass 1 ------------------------------------------------------------------- */

/* Bitmaps whose buffers could merge: a Bitmap.mBuffer field (before
 * Android 8) or the DumpData holder (Android 10 and later). */
static int tracks_refs(const struct bitmaps *b)
{
    unsigned seen = b->model->names_seen, mbuffer = 1u << NAME_CLASS_BITMAP | 1u << NAME_FIELD_BUFFER;
    return (seen & mbuffer) == mbuffer || (seen & 1u << NAME_CLASS_DUMP_DATA) != 0;
}

void bitmaps_note_name(struct bitmaps *b)
{
    if (b->heap_started && b->refs_seen.words == NULL && tracks_refs(b))
        b->refs_incomplete = 1;
}

int bitmaps_heap_begin(struct bitmaps *b)
{
    if (!b->heap_started && tracks_refs(b)) {
        if (idfilter_init(&b->refs_seen, refs_seen_bytes(hprof_reader_size(b->ctx->reader))) !=
                HPROF_OK ||
            (b->recent = calloc((size_t)1 << RECENT_ARRAYS_BITS, sizeof *b->recent)) == NULL)
            return nomem(b);
        /* Every reference goes in: a cache miss each, a quarter of the
         * first pass on the Android-style bench dump.  Another core takes
         * them; without one, they are applied here. */
        if (b->ctx->helper_threads)
            (void)idfilter_use_thread(&b->refs_seen);
    }
    b->heap_started = 1;
    return HPROF_OK;
}

/* The digest pass would pin what a root names. */
void bitmaps_note_root(struct bitmaps *b, uint64_t id)
{
    if (b->refs_seen.words != NULL && id != 0)
        idfilter_add(&b->refs_seen, id);
}

void bitmaps_note_class_dump(struct bitmaps *b, const struct hprof_class_dump *c)
{
    for (unsigned i = 0; b->refs_seen.words != NULL && i < c->n_statics; i++)
        if (c->statics[i].type == HPROF_TYPE_OBJECT && c->statics[i].value != 0)
            idfilter_add(&b->refs_seen, c->statics[i].value); /* as the digest pass pins */
}

static struct recent_array *recent_slot(const struct bitmaps *b, uint64_t id)
{
    return &b->recent[(id * 0x9E3779B97F4A7C15ull) >> (64 - RECENT_ARRAYS_BITS)];
}

void bitmaps_note_recent(struct bitmaps *b, const struct hprof_primitive_array *a)
{
    if (b->recent == NULL || a->type != HPROF_TYPE_BYTE ||
        a->tag != HPROF_PRIMITIVE_ARRAY_DUMP || a->first != 0)
        return;
    struct recent_array *r = recent_slot(b, a->id);
    if (r->id != a->id)
        *r = (struct recent_array){ a->id, a->data_offset, a->count };
}

/* Where byte array `id` is, if it was seen lately.  @return it or NULL. */
static const struct recent_array *find_recent(const struct bitmaps *b, uint64_t id)
{
    const struct recent_array *r = b->recent ? recent_slot(b, id) : NULL;
    return r != NULL && r->id == id && id != 0 ? r : NULL;
}

static int remember_large(struct bitmaps *b, uint64_t id, uint64_t count, uint64_t data_offset)
{
    if (idmap_put(&b->large, id, count) != HPROF_OK ||
        idmap_put(&b->large_at, id, data_offset) != HPROF_OK)
        return nomem(b);
    return HPROF_OK;
}

int bitmaps_note_primitive_array(struct bitmaps *b, const struct hprof_primitive_array *a)
{
    bitmaps_note_recent(b, a);
    if (a->type == HPROF_TYPE_BYTE && a->count >= LARGE_ARRAY &&
        a->tag == HPROF_PRIMITIVE_ARRAY_DUMP && b->recent != NULL && b->large.count < MAX_LARGE &&
        !idmap_has(&b->large, a->id))
        return remember_large(b, a->id, a->count, a->data_offset);
    return HPROF_OK;
}

/* ---- Resolution ------------------------------------------------------------------ */

static struct candidate *candidate_of(const struct bitmaps *b, uint64_t id)
{
    uint64_t at;
    return idmap_get(&b->candidates, id, &at) ? &b->cand[at - 1] : NULL;
}

static int add_candidate(struct bitmaps *b, uint64_t id)
{
    if (id == 0 || idmap_has(&b->candidates, id))
        return HPROF_OK;
    if (b->n_cand == b->cap_cand) {
        size_t cap = b->cap_cand ? b->cap_cand * 2 : 64;
        struct candidate *grown = realloc(b->cand, cap * sizeof *grown);
        if (grown == NULL)
            return nomem(b);
        b->cand = grown;
        b->cap_cand = cap;
    }
    b->cand[b->n_cand] = (struct candidate){ .id = id };
    if (idmap_put(&b->candidates, id, ++b->n_cand) != HPROF_OK)
        return nomem(b);
    return HPROF_OK;
}

/* Where candidate `c`'s contents are, learnt before the digest pass. */
static void locate(struct candidate *c, uint8_t type, uint32_t count, uint64_t bytes,
                   uint64_t data_offset)
{
    c->type = type;
    c->count = count;
    c->bytes = bytes;
    c->data_offset = data_offset;
    c->located = 1;
}

/* A Bitmap's buffer dumped just before it: located already. */
static void locate_recent_candidate(struct bitmaps *b, uint64_t id)
{
    const struct recent_array *r = find_recent(b, id);
    struct candidate *c = r ? candidate_of(b, id) : NULL;
    if (c == NULL || c->located)
        return;
    locate(c, HPROF_TYPE_BYTE, r->count, r->count, r->data_offset);
}

/* A candidate's array after the Bitmap that named it: where its contents
 * are, so that the digest pass may not be needed to hash them (the first
 * dump of an id counts, as in the digest pass). */
int bitmaps_locate(struct bitmaps *b, const struct hprof_primitive_array *a)
{
    struct candidate *c = b->n_cand > 0 ? candidate_of(b, a->id) : NULL;
    if (c == NULL || c->located || a->tag != HPROF_PRIMITIVE_ARRAY_DUMP)
        return HPROF_OK;
    locate(c, a->type, a->count, (uint64_t)a->count * type_size(a->type, b->ctx->ids),
           a->data_offset);
    return HPROF_OK;
}

int bitmaps_resolve_instance(struct bitmaps *b, int kind, const struct kind_layout *k,
                             const struct hprof_instance *o, int64_t *bitmap_slot)
{
    const unsigned ids = b->ctx->ids;
    int rc = HPROF_OK;
    *bitmap_slot = -1;
    if (kind == NAME_CLASS_BITMAP) {
        uint64_t buffer = model_field_id(ids, o, k->field[0]);
        rc = add_candidate(b, buffer);
        if (rc == HPROF_OK)
            locate_recent_candidate(b, buffer);
        *bitmap_slot = k->field[0];
    } else if (kind == NAME_CLASS_DUMP_DATA) {
        uint64_t buffers = model_field_id(ids, o, k->field[0]);
        if (buffers != 0 && idmap_put(&b->dump_buffers, buffers, 0) != HPROF_OK)
            return nomem(b);
        rc = idlist_add(&b->natives, model_field_id(ids, o, k->field[1])) == HPROF_OK ? HPROF_OK
                                                                                     : nomem(b);
    }
    return rc;
}

/* A reference the digest pass would pin with: to a known candidate it is a
 * pin now; to anything else it goes into the filter, since it may name a
 * buffer whose Bitmap comes later. */
int bitmaps_track_ref(struct bitmaps *b, uint64_t ref)
{
    if (b->refs_seen.words == NULL || ref == 0)
        return HPROF_OK;
    if (b->n_cand > 0 && idmap_has(&b->candidates, ref))
        return idmap_put(&b->pinned, ref, 0) == HPROF_OK ? HPROF_OK : nomem(b);
    idfilter_add(&b->refs_seen, ref);
    return HPROF_OK;
}

/* Remember a byte[][]'s elements: it may be a DumpData.buffers whose holder
 * comes later, and remembering spares the expand pass in the usual case. */
int bitmaps_resolve_byte_arrays(struct bitmaps *b, const struct hprof_object_array *a)
{
    const unsigned ids = b->ctx->ids;
    if (b->byte_arrays_overflow)
        return HPROF_OK;
    if (b->n_byte_arrays + 2 * (size_t)a->n > 2 * (size_t)MAX_BYTE_ARRAY_ELEMENTS) {
        b->byte_arrays_overflow = 1;
        return HPROF_OK;
    }
    if (b->n_byte_arrays + 2 * (size_t)a->n > b->cap_byte_arrays) {
        size_t cap = b->cap_byte_arrays ? b->cap_byte_arrays : 256;
        while (cap < b->n_byte_arrays + 2 * (size_t)a->n)
            cap *= 2;
        uint64_t *grown = realloc(b->byte_arrays, cap * sizeof *grown);
        if (grown == NULL)
            return nomem(b);
        b->byte_arrays = grown;
        b->cap_byte_arrays = cap;
    }
    for (uint32_t i = 0; i < a->n; i++) {
        uint64_t element = get_id(a->elements + (size_t)i * ids, ids);
        const struct recent_array *r = find_recent(b, element);
        b->byte_arrays[b->n_byte_arrays++] = a->id;
        b->byte_arrays[b->n_byte_arrays++] = element;
        /* a DumpData buffer dumped just before: where it is, for its digest */
        if (r != NULL && b->large.count < MAX_LARGE && !idmap_has(&b->large, element) &&
            remember_large(b, element, r->count, r->data_offset) != HPROF_OK)
            return HPROF_ERR_NOMEM;
    }
    return HPROF_OK;
}

int bitmaps_forget(struct bitmaps *b)
{
    b->n_cand = 0;
    b->n_byte_arrays = 0;
    b->byte_arrays_overflow = 0;
    idlist_clear(&b->natives);
    if (idmap_reset(&b->candidates) || idmap_reset(&b->dump_buffers) ||
        idmap_reset(&b->pinned))
        return nomem(b);
    return HPROF_OK;
}

/* ---- Expand: DumpData.buffers ------------------------------------------------------ */

void bitmaps_settle(struct bitmaps *b)
{
    idfilter_settle(&b->refs_seen); /* no more references; threads copy the state */
}

int bitmaps_expand_remembered(struct bitmaps *b, int *expand_pass)
{
    *expand_pass = 0;
    if (b->dump_buffers.count == 0)
        return HPROF_OK;
    if (b->byte_arrays_overflow) {
        *expand_pass = 1;
        return HPROF_OK;
    }
    for (size_t i = 0; i < b->n_byte_arrays; i += 2)
        if (idmap_has(&b->dump_buffers, b->byte_arrays[i])) {
            int rc = add_candidate(b, b->byte_arrays[i + 1]);
            if (rc != HPROF_OK)
                return rc;
        }
    return HPROF_OK;
}

static struct bitmaps *self(struct hprof_visitor *v)
{
    return ((struct module_visitor *)v)->state;
}

static int expand_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct bitmaps *b = self(v);
    const unsigned ids = b->ctx->ids;
    if (!idmap_has(&b->dump_buffers, a->id))
        return HPROF_SKIP;
    for (uint32_t i = 0; i < a->n; i++) {
        int rc = add_candidate(b, get_id(a->elements + (size_t)i * ids, ids));
        if (rc != HPROF_OK)
            return rc;
    }
    return HPROF_OK;
}

static const struct hprof_visitor_ops expand_ops = {
    .object_array = expand_object_array,
    .primitive_array = visit_skip_primitive_array,
};

struct hprof_visitor *bitmaps_expand_visitor(struct bitmaps *b)
{
    return &b->expand.base;
}

/* ---- Digest ------------------------------------------------------------------------ */

/* A candidate referred to from anywhere but a bitmap slot must survive as
 * an array of its own even when its contents are merged. */
static int pin(struct bitmaps *b, uint64_t ref)
{
    if (ref == 0 || candidate_of(b, ref) == NULL)
        return HPROF_OK;
    return idmap_put(&b->pinned, ref, 0) == HPROF_OK ? HPROF_OK : nomem(b);
}

struct pin_walk {
    struct bitmaps *b;
    int64_t bitmap_slot;    /* offset of mBuffer in this instance, or -1 */
};

static int pin_field(void *ctx, uint32_t at, uint64_t name_id, uint64_t ref)
{
    struct pin_walk *w = ctx;
    (void)name_id;
    return (int64_t)at == w->bitmap_slot ? HPROF_OK : pin(w->b, ref);
}

static int digest_root(struct hprof_visitor *v, const struct hprof_root *r)
{
    return pin(self(v), r->id);
}

static int digest_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    struct bitmaps *b = self(v);
    int rc = HPROF_OK;
    for (unsigned i = 0; rc == HPROF_OK && i < c->n_statics; i++)
        if (c->statics[i].type == HPROF_TYPE_OBJECT)
            rc = pin(b, c->statics[i].value);
    return rc;
}

static int digest_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct bitmaps *b = self(v);
    const struct kind_layout *k;
    struct pin_walk walk = { b, -1 };
    if (system_heaps_has(b->system, o->id))
        return HPROF_OK;
    if (model_kind(b->model, o->class_id, &k) == NAME_CLASS_BITMAP)
        walk.bitmap_slot = k->field[0];
    struct classes *classes = &b->model->classes;
    struct class_info *ci = classes_find(classes, o->class_id);
    return ci ? classes_each_ref(classes, ci, o->values, o->length, pin_field, &walk) : HPROF_OK;
}

static int digest_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct bitmaps *b = self(v);
    const unsigned ids = b->ctx->ids;
    if (idmap_has(&b->dump_buffers, a->id) || system_heaps_has(b->system, a->id))
        return HPROF_SKIP;
    for (uint32_t i = 0; i < a->n; i++) {
        int rc = pin(b, get_id(a->elements + (size_t)i * ids, ids));
        if (rc != HPROF_OK)
            return rc;
    }
    return HPROF_OK;
}

/* Candidate `c` has its key (by the digest pass or the lanes): counted. */
static void mark_hashed(struct bitmaps *b, struct candidate *c)
{
    c->digested = 1;
    b->ctx->stats->bitmap_digested++;
    b->ctx->stats->bitmap_bytes_hashed += c->bytes;
}

static int digest_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct bitmaps *b = self(v);
    struct candidate *c = candidate_of(b, a->id);
    /* a located candidate was hashed, or left alone as unique, before */
    if (c == NULL || a->tag != HPROF_PRIMITIVE_ARRAY_DUMP || c->located)
        return HPROF_SKIP;
    int rc = HPROF_OK;
    if (a->first == 0) {
        if (c->digested) /* a second dump of the same id: leave it alone */
            return HPROF_SKIP;
        c->type = a->type;
        c->count = a->count;
        c->bytes = (uint64_t)a->count * type_size(a->type, b->ctx->ids);
        c->data_offset = a->data_offset;
        rc = digest_pieces_begin(b->digest, c->bytes);
    }
    if (rc == HPROF_OK)
        rc = digest_pieces_update(b->digest, a->data, a->length);
    if (rc == HPROF_OK && a->first + a->length == c->bytes) {
        rc = digest_pieces_final(b->digest, c->md5);
        mark_hashed(b, c);
    }
    return rc;
}

static const struct hprof_visitor_ops digest_ops = {
    .root = digest_root,
    .class_dump = digest_class_dump,
    .instance = digest_instance,
    .object_array = digest_object_array,
    .primitive_array = digest_primitive_array,
};

struct hprof_visitor *bitmaps_digest_visitor(struct bitmaps *b)
{
    return &b->digest_pass.base;
}

/* Candidates whose size is known (large byte arrays, pass 1) and shared by
 * no other candidate need no digest.  @return how many still need one. */
static size_t mark_unique_sizes(struct bitmaps *b)
{
    struct idmap sizes; /* count -> candidates of that count */
    size_t need = 0;
    if (idmap_init(&sizes, 1) != HPROF_OK)
        return b->n_cand;
    for (size_t i = 0; i < b->n_cand; i++) {
        uint64_t count, seen = 0;
        if (idmap_get(&b->large, b->cand[i].id, &count)) {
            idmap_get(&sizes, count, &seen);
            if (idmap_put(&sizes, count, seen + 1) != HPROF_OK) {
                idmap_free(&sizes);
                return b->n_cand;
            }
        }
    }
    for (size_t i = 0; i < b->n_cand; i++) {
        uint64_t count, seen = 0;
        b->cand[i].unique_size = idmap_get(&b->large, b->cand[i].id, &count) &&
                                 idmap_get(&sizes, count, &seen) && seen == 1;
        need += !b->cand[i].unique_size;
    }
    idmap_free(&sizes);
    return need;
}

/* Order candidates so that equal contents are adjacent, earliest first. */
static int compare_candidates(const void *pa, const void *pb)
{
    const struct candidate *a = pa, *b = pb;
    if (a->digested != b->digested)
        return a->digested ? -1 : 1;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    if (a->count != b->count)
        return a->count < b->count ? -1 : 1;
    int c = memcmp(a->md5, b->md5, 16);
    if (c != 0)
        return c;
    return a->data_offset < b->data_offset ? -1 : a->data_offset > b->data_offset;
}

static int same_key(const struct candidate *a, const struct candidate *b)
{
    return a->digested && b->digested && a->type == b->type && a->count == b->count &&
           memcmp(a->md5, b->md5, 16) == 0;
}

/* ---- Hashing located candidates ----------------------------------------------------

 * A fingerprint of FP_BLOCKS blocks of FP_BLOCK bytes (the first, the middle
 * and the last) tells apart most same-length buffers for 12 KiB of reading
 * each: MD5 then runs only on those that still share type, length and
 * fingerprint with another.  Smaller buffers are hashed whole at once.
 * A fingerprint only ever rules a twin out; MD5 and the byte comparison
 * still decide every merge. */
#define FP_BLOCK (4u << 10)
#define FP_BLOCKS 3

static uint64_t mix64(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    }
    return h;
}

static int fingerprint(const struct bitmaps *b, struct candidate *c, uint8_t *buf)
{
    uint64_t at[FP_BLOCKS] = { 0, (c->bytes / 2) & ~(uint64_t)(FP_BLOCK - 1), c->bytes - FP_BLOCK };
    uint64_t h = c->bytes;
    for (unsigned i = 0; i < FP_BLOCKS; i++) {
        int rc = reader_pread_unmapped(b->ctx->reader, c->data_offset + at[i], buf, FP_BLOCK,
                                       b->ctx->err);
        if (rc != HPROF_OK)
            return rc;
        h = mix64(h, buf, FP_BLOCK);
    }
    c->fingerprint = h;
    return HPROF_OK;
}

static int compare_prints(const void *pa, const void *pb)
{
    const struct candidate *a = *(const struct candidate *const *)pa;
    const struct candidate *b = *(const struct candidate *const *)pb;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    if (a->count != b->count)
        return a->count < b->count ? -1 : 1;
    return a->fingerprint < b->fingerprint ? -1 : a->fingerprint > b->fingerprint;
}

/* Fingerprint every located candidate larger than the blocks and mark
 * those alone with their type, length and fingerprint (unique_print).
 * @return HPROF_OK or an error. */
static int fingerprint_candidates(struct bitmaps *b)
{
    struct hprof_shrink_stats *st = b->ctx->stats;
    struct candidate **by = malloc(b->n_cand * sizeof *by + 1);
    uint8_t *buf = malloc(FP_BLOCK);
    size_t n = 0;
    int rc = by != NULL && buf != NULL ? HPROF_OK : nomem(b);
    for (size_t i = 0; rc == HPROF_OK && i < b->n_cand; i++) {
        struct candidate *c = &b->cand[i];
        if (!c->located || c->unique_size || c->bytes <= (uint64_t)FP_BLOCKS * FP_BLOCK)
            continue;
        rc = fingerprint(b, c, buf);
        by[n++] = c;
        st->bitmap_fingerprinted++;
        st->bitmap_bytes_fingerprinted += (uint64_t)FP_BLOCKS * FP_BLOCK;
    }
    if (rc == HPROF_OK) {
        qsort(by, n, sizeof *by, compare_prints);
        for (size_t i = 0; i < n; i++)
            by[i]->unique_print = (i == 0 || compare_prints(&by[i - 1], &by[i]) != 0) &&
                                  (i + 1 == n || compare_prints(&by[i], &by[i + 1]) != 0);
    }
    free(buf);
    free(by);
    return rc;
}

/* How many threads (the caller one of them) for a step that reads `bytes`:
 * up to ctx->threads, one for at least every 4 MiB (starting one costs
 * more), and at most `most` (what there is to share out). */
static unsigned threads_for(const struct bitmaps *b, uint64_t bytes, size_t most)
{
    uint64_t n = b->ctx->threads ? b->ctx->threads : 1;
    if (bytes / (4u << 20) + 1 < n)
        n = bytes / (4u << 20) + 1;
    if (most < n)
        n = most > 0 ? most : 1;
    return (unsigned)n;
}

/* MD5 of located candidates on every core, many at once on each
 * (md5_lanes.h).  Reads go through pread(), so that no page of a mapped
 * input stays resident (a 2 GB dump's hashing held 585 MB): hashing in
 * the mapping and giving pages back behind each lane still held 60-100 MB,
 * as the kernel maps the page cache's large folios whole.
 *
 * The candidates that may be twins come in bunches of equal type, length
 * and fingerprint, and in a bunch most are usually copies of its first
 * (earliest in the file).  So a bunch's first is hashed, and as each of
 * its chunks is read, the same chunk of every other member is read and
 * compared with it: a member equal all through has the first's MD5 and is
 * confirmed byte for byte, without MD5 running over it or the merge
 * reading it again.  Only the members found different are hashed, after.
 * (Hashing every member, then comparing each group, read every copy twice
 * and ran MD5 over it: 861 MB hashed and 550 MB compared on the 2 GB
 * bitmap bench dump, against 492 MB hashed and every byte read once.) */
struct bunch {
    size_t first_peer;      /* into hash_round.peers */
    size_t n_peers;         /* the other members (0: none, or not a first) */
};

struct hash_round {
    const struct bitmaps *b;
    struct bunch *bunch;        /* per candidate: its peers, if a bunch's first */
    size_t *peers;              /* candidate indexes by bunch, each first before its peers */
    uint8_t *differs;           /* per candidate: a peer found unequal to its first */
    uint8_t *hash_now;          /* per candidate: hashed in the round under way */
    int has_peers;              /* the round compares (its threads need a peer room) */
    /* Per job (a piece), per peer of its buffer: found unequal in the piece,
     * so not read on.  Only the lane that views a piece looks at its own,
     * so what is read and counted does not depend on the threads' timing. */
    const struct md5_job *jobs;
    size_t *piece_base;         /* per job: where its flags start */
    uint8_t *piece_differs;
    atomic_uint_least64_t compared; /* bytes of peers read */
};

struct hash_worker {
    struct md5_queue *q;
    pthread_t thread;
    int started, rc;
    struct hprof_error err;
};

/* Where a hashing thread reads a peer's chunk.  The lanes' views run on
 * the thread that runs the queue, so each thread has its own, which
 * hash_main() allocates before the queue runs and frees after. */
#define PEER_ROOM (128u << 10)
static _Thread_local uint8_t *peer_room;

/* Compare `len` bytes of `peer` at `at` into its contents with `chunk`;
 * *differs is set if they are not equal. */
static int compare_peer(struct hash_round *hr, size_t peer, uint64_t at, const uint8_t *chunk,
                        size_t len, uint8_t *differs, struct hprof_error *err)
{
    const struct candidate *c = &hr->b->cand[peer];
    for (size_t done = 0; done < len;) {
        size_t n = len - done < PEER_ROOM ? len - done : PEER_ROOM;
        int rc = reader_pread_unmapped(hr->b->ctx->reader, c->data_offset + at + done, peer_room,
                                       n, err);
        if (rc != HPROF_OK)
            return rc;
        atomic_fetch_add_explicit(&hr->compared, n, memory_order_relaxed);
        if (memcmp(chunk + done, peer_room, n) != 0) {
            *differs = 1;
            break;
        }
        done += n;
    }
    return HPROF_OK;
}

/* The lanes' view: the chunk read, then compared with the same chunk of
 * each peer of its buffer that has not differed yet. */
static int view_and_compare(void *arg, const struct md5_job *job, uint64_t offset, size_t len,
                            uint8_t *buf, const uint8_t **p, struct hprof_error *err)
{
    struct hash_round *hr = arg;
    const struct bunch *bn = &hr->bunch[job->tag];
    uint8_t *differs = hr->piece_differs + hr->piece_base[job - hr->jobs];
    uint64_t at = offset - hr->b->cand[job->tag].data_offset;
    *p = buf;
    int rc = reader_pread_unmapped(hr->b->ctx->reader, offset, buf, len, err);
    for (size_t k = 0; rc == HPROF_OK && k < bn->n_peers; k++)
        if (!differs[k])
            rc = compare_peer(hr, hr->peers[bn->first_peer + k], at, buf, len, &differs[k], err);
    return rc;
}

static void *hash_main(void *arg)
{
    struct hash_worker *w = arg;
    const struct hash_round *hr = w->q->source;
    if (hr->has_peers && (peer_room = malloc(PEER_ROOM)) == NULL) {
        w->rc = hprof_error_set(&w->err, HPROF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    w->rc = md5_queue_run(w->q, &w->err);
    free(peer_room);
    peer_room = NULL;
    return NULL;
}

/* A candidate's pieces together, in order. */
static int by_candidate(const void *pa, const void *pb)
{
    const struct md5_job *a = pa, *b = pb;
    if (a->tag != b->tag)
        return a->tag < b->tag ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

static int needs_hash(const struct candidate *c)
{
    return c->located && !c->digested && !c->unique_size && !c->unique_print;
}

/* A job and what it reads: its piece, and the same piece of each peer. */
struct costed_job {
    uint64_t cost;
    struct md5_job job;
};

/* Costliest first: the lanes then finish close together. */
static int costlier_first(const void *pa, const void *pb)
{
    const struct costed_job *a = pa, *b = pb;
    if (a->cost != b->cost)
        return a->cost > b->cost ? -1 : 1;
    return a->job.offset < b->job.offset ? -1 : a->job.offset > b->job.offset;
}

/* The candidates hr->hash_now names as jobs of a piece each (see
 * digest_pieces_begin()), costliest first, or NULL when memory is short;
 * *cost the bytes they read in all. */
static struct md5_job *piece_jobs(const struct hash_round *hr, size_t *n_jobs, uint64_t *cost)
{
    const struct bitmaps *b = hr->b;
    uint64_t n = 0;
    for (size_t i = 0; i < b->n_cand; i++)
        n += hr->hash_now[i] ? b->cand[i].bytes / DIGEST_PIECE + 1 : 0;
    *n_jobs = 0;
    if (n >= PTRDIFF_MAX / sizeof(struct costed_job))
        return NULL;
    struct costed_job *by_cost = malloc((size_t)n * sizeof *by_cost + 1);
    struct md5_job *jobs = malloc((size_t)n * sizeof *jobs + 1);
    *cost = 0;
    for (size_t i = 0; by_cost != NULL && jobs != NULL && i < b->n_cand; i++) {
        const struct candidate *c = &b->cand[i];
        uint64_t at = 0;
        if (hr->hash_now[i])
            do {
                uint64_t len = c->bytes - at < DIGEST_PIECE ? c->bytes - at : DIGEST_PIECE;
                by_cost[*n_jobs] = (struct costed_job){
                    .cost = len * (1 + hr->bunch[i].n_peers),
                    .job = { .offset = c->data_offset + at, .bytes = len, .tag = i },
                };
                *cost += by_cost[(*n_jobs)++].cost;
                at += len;
            } while (at < c->bytes);
    }
    if (by_cost != NULL && jobs != NULL) {
        qsort(by_cost, *n_jobs, sizeof *by_cost, costlier_first);
        for (size_t j = 0; j < *n_jobs; j++)
            jobs[j] = by_cost[j].job;
    } else {
        free(jobs);
        jobs = NULL;
    }
    free(by_cost);
    return jobs;
}

/* Each job's flags for the peers of its buffer, cleared.  @return
 * HPROF_OK or an error. */
static int piece_flags_new(struct hash_round *hr, const struct md5_job *jobs, size_t n_jobs)
{
    size_t flags = 0;
    hr->jobs = jobs;
    hr->piece_base = malloc((n_jobs + 1) * sizeof *hr->piece_base);
    for (size_t j = 0; hr->piece_base != NULL && j < n_jobs; j++) {
        hr->piece_base[j] = flags;
        flags += hr->bunch[jobs[j].tag].n_peers;
    }
    hr->piece_differs = calloc(flags + 1, 1);
    return hr->piece_base && hr->piece_differs ? HPROF_OK : nomem(hr->b);
}

/* The pieces' flags into each peer's: unequal in any piece, unequal. */
static void piece_flags_free(struct hash_round *hr, size_t n_jobs)
{
    for (size_t j = 0; hr->piece_differs != NULL && hr->piece_base != NULL && j < n_jobs; j++) {
        const struct bunch *bn = &hr->bunch[hr->jobs[j].tag];
        for (size_t k = 0; k < bn->n_peers; k++)
            hr->differs[hr->peers[bn->first_peer + k]] |= hr->piece_differs[hr->piece_base[j] + k];
    }
    free(hr->piece_base);
    free(hr->piece_differs);
    hr->jobs = NULL;
    hr->piece_base = NULL;
    hr->piece_differs = NULL;
}

/* Each hashed candidate's key from its pieces' MD5s. */
static int join_pieces(struct bitmaps *b, struct md5_job *jobs, size_t n_jobs)
{
    qsort(jobs, n_jobs, sizeof *jobs, by_candidate);
    for (size_t i = 0; i < n_jobs;) {
        size_t tag = jobs[i].tag;
        struct candidate *c = &b->cand[tag];
        int rc = digest_pieces_begin(b->digest, c->bytes);
        for (; rc == HPROF_OK && i < n_jobs && jobs[i].tag == tag; i++)
            rc = digest_pieces_add(b->digest, jobs[i].md5);
        if (rc == HPROF_OK)
            rc = digest_pieces_final(b->digest, c->md5);
        if (rc != HPROF_OK)
            return rc;
        mark_hashed(b, c);
    }
    return HPROF_OK;
}

/* Hash the candidates hr->hash_now names (comparing the peers of those
 * that are a bunch's first), with up to ctx->threads threads (the caller
 * is one).  @return HPROF_OK or an error. */
static int hash_round_run(struct bitmaps *b, struct hash_round *hr)
{
    struct md5_queue q = { .view = view_and_compare, .source = hr };
    uint64_t cost;
    struct md5_job *jobs = piece_jobs(hr, &q.n_jobs, &cost);
    if (jobs == NULL)
        return nomem(b);
    q.jobs = jobs;
    atomic_init(&q.next, 0);
    /* Hashing alone, a thread is worth it for a lane-full of jobs; a job
     * that compares has its own work on any thread. */
    size_t most = hr->has_peers ? q.n_jobs : q.n_jobs / md5_queue_width(&q) + 1;
    unsigned n = threads_for(b, cost, most);
    struct hash_worker *w = calloc(n, sizeof *w);
    int rc = w != NULL ? piece_flags_new(hr, jobs, q.n_jobs) : nomem(b);
    for (unsigned i = 0; rc == HPROF_OK && i < n; i++) {
        w[i].q = &q;
        w[i].started = i > 0 && pthread_create(&w[i].thread, NULL, hash_main, &w[i]) == 0;
    }
    if (rc == HPROF_OK)
        hash_main(&w[0]); /* the caller hashes too; unstarted threads' share falls to it */
    for (unsigned i = 0; w != NULL && i < n; i++) { /* every thread, even after an error */
        if (w[i].started)
            pthread_join(w[i].thread, NULL);
        if (w[i].rc != HPROF_OK && rc == HPROF_OK)
            rc = hprof_error_set(b->ctx->err, w[i].rc, "%s", w[i].err.message);
    }
    piece_flags_free(hr, q.n_jobs); /* before join_pieces() reorders the jobs */
    if (rc == HPROF_OK)
        rc = join_pieces(b, jobs, q.n_jobs);
    free(w);
    free(jobs);
    return rc;
}

/* Bunches: candidates that may have a twin, by type, length, fingerprint
 * and place. */
static int by_bunch(const void *pa, const void *pb)
{
    const struct candidate *a = *(const struct candidate *const *)pa;
    const struct candidate *b = *(const struct candidate *const *)pb;
    int c = compare_prints(pa, pb);
    if (c != 0)
        return c;
    return a->data_offset < b->data_offset ? -1 : a->data_offset > b->data_offset;
}

/* Sort the candidates that may have a twin into bunches: each bunch's
 * first is to be hashed now (hash_now), its other members are its peers. */
static int form_bunches(struct bitmaps *b, struct hash_round *hr)
{
    struct candidate **by = malloc(b->n_cand * sizeof *by + 1);
    size_t n = 0;
    if (by == NULL)
        return nomem(b);
    for (size_t i = 0; i < b->n_cand; i++)
        if (needs_hash(&b->cand[i]))
            by[n++] = &b->cand[i];
    qsort(by, n, sizeof *by, by_bunch);
    for (size_t i = 0, first = 0; i < n; i++) {
        size_t at = (size_t)(by[i] - b->cand);
        hr->peers[i] = at;
        if (i > 0 && compare_prints(&by[i - 1], &by[i]) == 0) {
            hr->bunch[first].n_peers++;
            hr->has_peers = 1;
        } else {
            first = at;
            hr->bunch[first].first_peer = i + 1;
            hr->hash_now[first] = 1;
        }
    }
    free(by);
    return HPROF_OK;
}

/* After the firsts are hashed: a peer equal to its first takes its key and
 * is confirmed (equal_to); the others are to be hashed next (hash_now).
 * @return whether any is. */
static int settle_peers(struct bitmaps *b, struct hash_round *hr)
{
    int more = 0;
    memset(hr->hash_now, 0, b->n_cand);
    for (size_t f = 0; f < b->n_cand; f++) {
        struct bunch *bn = &hr->bunch[f];
        for (size_t k = 0; k < bn->n_peers; k++) {
            size_t peer = hr->peers[bn->first_peer + k];
            struct candidate *c = &b->cand[peer];
            if (hr->differs[peer]) {
                hr->hash_now[peer] = 1;
                more = 1;
                continue;
            }
            memcpy(c->md5, b->cand[f].md5, sizeof c->md5);
            c->digested = 1;
            c->equal_to = b->cand[f].data_offset;
            b->ctx->stats->bitmap_digested++;
        }
        bn->n_peers = 0; /* the next round compares nothing */
    }
    hr->has_peers = 0;
    return more;
}

/* Hash the located candidates that may have a twin: each bunch's first,
 * its peers compared with it as it is read, then the peers that differ.
 * @return HPROF_OK or an error. */
static int hash_candidates(struct bitmaps *b)
{
    struct hash_round hr = { .b = b };
    hr.bunch = calloc(b->n_cand + 1, sizeof *hr.bunch);
    hr.peers = malloc((b->n_cand + 1) * sizeof *hr.peers);
    hr.differs = calloc(b->n_cand + 1, sizeof *hr.differs);
    hr.hash_now = calloc(b->n_cand + 1, 1);
    atomic_init(&hr.compared, 0);
    int rc = hr.bunch && hr.peers && hr.differs && hr.hash_now ? form_bunches(b, &hr) : nomem(b);
    if (rc == HPROF_OK)
        rc = hash_round_run(b, &hr);
    if (rc == HPROF_OK && settle_peers(b, &hr))
        rc = hash_round_run(b, &hr);
    b->ctx->stats->bitmap_bytes_compared += atomic_load(&hr.compared);
    free(hr.bunch);
    free(hr.peers);
    free(hr.differs);
    free(hr.hash_now);
    return rc;
}

/* Candidates whose arrays came before their Bitmap in pass 2 are located
 * from pass 1 when large; the located ones are fingerprinted and those
 * that may still have a twin hashed, without a pass.  *all_located says
 * whether every candidate that needs a digest was; the digest pass hashes
 * the others (a small buffer whose Bitmap comes long after it, in a dump
 * straight from the JVM), and bitmaps_digest_finish() what they may equal. */
static int digest_located(struct bitmaps *b, int *all_located)
{
    size_t unlocated = 0;
    for (size_t i = 0; i < b->n_cand; i++) {
        struct candidate *c = &b->cand[i];
        uint64_t count, at;
        if (!c->located && idmap_get(&b->large, c->id, &count) &&
            idmap_get(&b->large_at, c->id, &at))
            locate(c, HPROF_TYPE_BYTE, (uint32_t)count, count, at);
        unlocated += !c->unique_size && !c->located;
    }
    *all_located = unlocated == 0;
    int rc = fingerprint_candidates(b);
    return rc == HPROF_OK ? hash_candidates(b) : rc;
}

/* A candidate's type and length as one key (never 0, idmap's empty slot:
 * no type is 0). */
static uint64_t size_key(const struct candidate *c)
{
    return (uint64_t)c->count << 8 | c->type;
}

int bitmaps_digest_finish(struct bitmaps *b)
{
    struct idmap sizes; /* of the candidates the digest pass hashed */
    size_t twins = 0;
    if (idmap_init(&sizes, 0) != HPROF_OK)
        return nomem(b);
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && i < b->n_cand; i++)
        if (!b->cand[i].located && b->cand[i].digested)
            rc = idmap_put(&sizes, size_key(&b->cand[i]), 0);
    for (size_t i = 0; rc == HPROF_OK && i < b->n_cand; i++) {
        struct candidate *c = &b->cand[i];
        if (c->located && !c->digested && idmap_has(&sizes, size_key(c))) {
            c->unique_size = c->unique_print = 0; /* unique only among the located */
            twins++;
        }
    }
    idmap_free(&sizes);
    if (rc != HPROF_OK)
        return nomem(b);
    return twins > 0 ? hash_candidates(b) : HPROF_OK;
}

/* The candidates in merge order (equal contents adjacent), as a copy the
 * caller frees; NULL when memory is short. */
static struct candidate *sorted_candidates(const struct bitmaps *b)
{
    struct candidate *sorted = malloc(b->n_cand * sizeof *sorted);
    if (sorted != NULL) {
        memcpy(sorted, b->cand, b->n_cand * sizeof *sorted);
        qsort(sorted, b->n_cand, sizeof *sorted, compare_candidates);
    }
    return sorted;
}

/* Do two digested candidates share type, length and MD5? */
static int may_share_contents(const struct bitmaps *b)
{
    struct candidate *sorted = sorted_candidates(b);
    if (sorted == NULL)
        return 1; /* the digest pass and the merge decide, as they would anyway */
    int shared = 0;
    for (size_t i = 1; i < b->n_cand && !shared; i++)
        shared = same_key(&sorted[i - 1], &sorted[i]);
    free(sorted);
    return shared;
}

/* Can passes 1-2 vouch that nothing but a bitmap slot refers to any buffer
 * that may merge into another (every member of a group of equal type,
 * length and MD5 but its earliest)?  Then the digest pass has no pin to
 * find. */
static int pins_ruled_out(struct bitmaps *b)
{
    if (b->refs_seen.words == NULL || b->refs_incomplete || b->byte_arrays_overflow)
        return 0;
    struct candidate *sorted = sorted_candidates(b);
    struct idmap copies;
    if (sorted == NULL || idmap_init(&copies, 0) != HPROF_OK) {
        free(sorted);
        return 0;
    }
    int ruled_out = 1;
    for (size_t i = 1; ruled_out && i < b->n_cand; i++)
        if (same_key(&sorted[i - 1], &sorted[i]))
            ruled_out = !idfilter_maybe(&b->refs_seen, sorted[i].id) &&
                        idmap_put(&copies, sorted[i].id, 0) == HPROF_OK;
    /* an element of a byte[][] other than DumpData.buffers is a pin */
    for (size_t i = 0; ruled_out && i < b->n_byte_arrays; i += 2)
        if (idmap_has(&copies, b->byte_arrays[i + 1]) &&
            !idmap_has(&b->dump_buffers, b->byte_arrays[i]))
            ruled_out = idmap_put(&b->pinned, b->byte_arrays[i + 1], 0) == HPROF_OK;
    idmap_free(&copies);
    free(sorted);
    return ruled_out;
}

int bitmaps_digest_located(struct bitmaps *b, int *digest_pass, int *merge)
{
    *digest_pass = *merge = 0;
    b->ctx->stats->bitmap_candidates = b->n_cand;
    if (mark_unique_sizes(b) == 0)
        return HPROF_OK;
    int all_located = 0;
    b->digest = digest_new(b->ctx->err);
    int rc = b->digest ? digest_located(b, &all_located) : b->ctx->err->code;
    /* the digest pass hashes what could not be located, and finds the pins
     * when some contents may be shared (unless passes 1-2 rule them out);
     * otherwise there is nothing to merge */
    if (rc == HPROF_OK && (!all_located || may_share_contents(b))) {
        *merge = 1;
        *digest_pass = !all_located || !pins_ruled_out(b);
    }
    return rc;
}

/* Byte-for-byte comparison of two candidates' contents in the input (with
 * pread(), so that no page stays mapped). */
static int same_contents(const struct hprof_reader *r, const struct candidate *x,
                         const struct candidate *y, uint8_t *buf_x, uint8_t *buf_y, int *same,
                         atomic_uint_least64_t *compared, struct hprof_error *err)
{
    *same = 1;
    for (uint64_t at = 0; at < x->bytes; at += COMPARE_BUFFER) {
        size_t n = x->bytes - at < COMPARE_BUFFER ? (size_t)(x->bytes - at) : COMPARE_BUFFER;
        int rc = reader_pread_unmapped(r, x->data_offset + at, buf_x, n, err);
        if (rc == HPROF_OK)
            rc = reader_pread_unmapped(r, y->data_offset + at, buf_y, n, err);
        if (rc != HPROF_OK)
            return rc;
        atomic_fetch_add_explicit(compared, 2 * n, memory_order_relaxed);
        if (memcmp(buf_x, buf_y, n) != 0) {
            *same = 0;
            return HPROF_OK;
        }
    }
    return HPROF_OK;
}

/* The merge's comparisons, a group (same type, length, MD5) at a time on
 * every thread; what each candidate merges into is applied in order after,
 * so the plan and the counts are those of one thread. */
struct merge_work {
    struct bitmaps *b;
    size_t *groups;         /* [start, end) pairs of groups of two or more */
    size_t n_groups;
    size_t *original;       /* per candidate: the index + 1 it merges into, or 0 */
    uint8_t *differs;       /* per candidate: not equal to its group's first */
    atomic_size_t next;
    atomic_uint_least64_t compared; /* bytes read to compare */
};

struct merge_worker {
    struct merge_work *mw;
    pthread_t thread;
    int started, rc;
    size_t failed;          /* the group it failed on */
    struct hprof_error err;
};

/* Was member m found equal to the group's first while hashing? */
static int confirmed(const struct candidate *cand, size_t start, size_t m)
{
    return cand[m].equal_to != 0 && cand[m].equal_to == cand[start].data_offset;
}

/* How many buffers of the group [start, end) the merge reads: the members
 * not confirmed while hashing, and the first if there is any. */
static size_t to_compare(const struct candidate *cand, size_t start, size_t end)
{
    size_t n = 0;
    for (size_t m = start + 1; m < end; m++)
        n += !confirmed(cand, start, m);
    return n > 0 ? n + 1 : 0;
}

/* Every other member of the group compared with its first, a chunk at a
 * time: the first's chunk is read once for all of them, where comparing
 * them in pairs would read it once for each (a group of g reads g
 * buffers instead of 2(g - 1)).  A member confirmed while hashing is not
 * read again.  differs[m] says a member is not equal. */
static int compare_with_first(struct merge_work *mw, size_t start, size_t end, uint8_t *buf_x,
                              uint8_t *buf_y, struct hprof_error *err)
{
    const struct hprof_reader *r = mw->b->ctx->reader;
    const struct candidate *cand = mw->b->cand;
    const uint64_t bytes = cand[start].bytes;
    int alike = to_compare(cand, start, end) > 0; /* some member to compare, equal so far */
    for (uint64_t at = 0; alike && at < bytes; at += COMPARE_BUFFER) {
        size_t n = bytes - at < COMPARE_BUFFER ? (size_t)(bytes - at) : COMPARE_BUFFER;
        int rc = reader_pread_unmapped(r, cand[start].data_offset + at, buf_x, n, err);
        atomic_fetch_add_explicit(&mw->compared, n, memory_order_relaxed);
        alike = 0;
        for (size_t m = start + 1; rc == HPROF_OK && m < end; m++) {
            if (mw->differs[m] || confirmed(cand, start, m))
                continue;
            rc = reader_pread_unmapped(r, cand[m].data_offset + at, buf_y, n, err);
            atomic_fetch_add_explicit(&mw->compared, n, memory_order_relaxed);
            if (rc == HPROF_OK && memcmp(buf_x, buf_y, n) != 0)
                mw->differs[m] = 1;
            alike |= !mw->differs[m];
        }
        if (rc != HPROF_OK)
            return rc;
    }
    return HPROF_OK;
}

/* Each member merges into the first earlier member with equal bytes that
 * did not merge itself, which is the earliest in the file with that
 * content: most into the group's first, compared with all at once; the
 * rare one that differs from it (an MD5 collision) then with the group's
 * other distinct contents, a pair at a time. */
static int merge_group(struct merge_work *mw, size_t start, size_t end, uint8_t *buf_x,
                       uint8_t *buf_y, struct hprof_error *err)
{
    const struct candidate *cand = mw->b->cand;
    int rc = compare_with_first(mw, start, end, buf_x, buf_y, err);
    for (size_t m = start + 1; rc == HPROF_OK && m < end; m++) {
        if (!mw->differs[m]) {
            mw->original[m] = start + 1;
            continue;
        }
        for (size_t k = start + 1; k < m; k++) {
            int same = 0;
            if (mw->original[k] != 0)
                continue; /* merged itself: not a distinct content */
            rc = same_contents(mw->b->ctx->reader, &cand[k], &cand[m], buf_x, buf_y, &same,
                               &mw->compared, err);
            if (rc != HPROF_OK)
                break;
            if (same) {
                mw->original[m] = k + 1;
                break;
            }
        }
    }
    return rc;
}

static void *merge_main(void *arg)
{
    struct merge_worker *w = arg;
    struct merge_work *mw = w->mw;
    uint8_t *buf_x = malloc(COMPARE_BUFFER), *buf_y = malloc(COMPARE_BUFFER);
    w->rc = buf_x && buf_y ? HPROF_OK : hprof_error_set(&w->err, HPROF_ERR_NOMEM, "out of memory");
    w->failed = SIZE_MAX;
    while (w->rc == HPROF_OK) {
        size_t g = atomic_fetch_add_explicit(&mw->next, 1, memory_order_relaxed);
        if (g >= mw->n_groups)
            break;
        w->rc = merge_group(mw, mw->groups[2 * g], mw->groups[2 * g + 1], buf_x, buf_y, &w->err);
        if (w->rc != HPROF_OK)
            w->failed = g;
    }
    /* the others take no new group; those before this one are all taken,
     * so the first failure in file order is among the workers' */
    if (w->rc != HPROF_OK)
        atomic_store_explicit(&mw->next, mw->n_groups, memory_order_relaxed);
    free(buf_x);
    free(buf_y);
    return NULL;
}

/* Run the comparisons of mw on up to ctx->threads threads (the caller is
 * one). */
static int compare_groups(struct bitmaps *b, struct merge_work *mw, uint64_t bytes)
{
    unsigned n = threads_for(b, bytes, mw->n_groups);
    struct merge_worker *w = calloc(n, sizeof *w);
    if (w == NULL)
        return nomem(b);
    atomic_init(&mw->next, 0);
    atomic_init(&mw->compared, 0);
    for (unsigned i = 0; i < n; i++) {
        w[i].mw = mw;
        w[i].started = i > 0 && pthread_create(&w[i].thread, NULL, merge_main, &w[i]) == 0;
    }
    merge_main(&w[0]); /* the caller compares too; unstarted threads' share falls to it */
    struct merge_worker *first = NULL;
    for (unsigned i = 0; i < n; i++) {
        if (w[i].started)
            pthread_join(w[i].thread, NULL);
        if (w[i].rc != HPROF_OK && (first == NULL || w[i].failed < first->failed))
            first = &w[i];
    }
    int rc = first ? hprof_error_set(b->ctx->err, first->rc, "%s", first->err.message) : HPROF_OK;
    b->ctx->stats->bitmap_bytes_compared += atomic_load(&mw->compared);
    free(w);
    return rc;
}

/* Group digested candidates by type, length and MD5; within a group each
 * member merges into the first earlier one with equal bytes.  An MD5 match
 * alone never merges. */
int bitmaps_merge(struct bitmaps *b)
{
    struct hprof_shrink_stats *st = b->ctx->stats;
    struct merge_work mw = { .b = b };
    uint64_t bytes = 0;
    qsort(b->cand, b->n_cand, sizeof *b->cand, compare_candidates);
    mw.groups = malloc(b->n_cand * sizeof *mw.groups + 1);
    mw.original = calloc(b->n_cand + 1, sizeof *mw.original);
    mw.differs = calloc(b->n_cand + 1, 1);
    int rc = mw.groups && mw.original && mw.differs ? HPROF_OK : nomem(b);
    for (size_t i = 0; rc == HPROF_OK && i < b->n_cand; i++)
        if (idmap_put(&b->candidates, b->cand[i].id, i + 1) != HPROF_OK)
            rc = nomem(b);
    for (size_t start = 0, end; rc == HPROF_OK && start < b->n_cand; start = end) {
        for (end = start + 1; end < b->n_cand && same_key(&b->cand[start], &b->cand[end]);)
            end++;
        if (end - start > 1) { /* at most n_cand / 2 groups: two slots each fit */
            mw.groups[2 * mw.n_groups] = start;
            mw.groups[2 * mw.n_groups++ + 1] = end;
            bytes += to_compare(b->cand, start, end) * b->cand[start].bytes;
        }
    }
    if (rc == HPROF_OK && mw.n_groups > 0)
        rc = compare_groups(b, &mw, bytes);
    for (size_t m = 0; rc == HPROF_OK && m < b->n_cand; m++) {
        if (mw.original[m] == 0)
            continue;
        struct candidate *copy = &b->cand[m], *original = &b->cand[mw.original[m] - 1];
        if (idmap_put(&b->remap, copy->id, original->id) != HPROF_OK ||
            (!idmap_has(&b->pinned, copy->id) && idmap_put(&b->dropped, copy->id, 0) != HPROF_OK)) {
            rc = nomem(b);
            break;
        }
        if (!original->has_copies)
            st->bitmap_groups++;
        original->has_copies = 1;
        st->bitmap_duplicates.count++;
        st->bitmap_duplicates.bytes += copy->bytes;
    }
    free(mw.groups);
    free(mw.original);
    free(mw.differs);
    return rc;
}

int bitmaps_publish(struct bitmaps *b, struct bitmaps_plan *plan)
{
    if (idlist_seal(&b->natives) != HPROF_OK)
        return nomem(b);
    plan->natives = b->natives;
    plan->candidates = b->candidates;
    plan->remap = b->remap;
    plan->dropped = b->dropped;
    plan->dump_buffers = b->dump_buffers;
    /* the plan owns them now */
    idlist_init(&b->natives);
    memset(&b->candidates, 0, sizeof b->candidates);
    memset(&b->remap, 0, sizeof b->remap);
    memset(&b->dropped, 0, sizeof b->dropped);
    memset(&b->dump_buffers, 0, sizeof b->dump_buffers);
    return HPROF_OK;
}

/* ---- The write-pass filter --------------------------------------------------------- */

#define ELEMENT_CHUNK 8192u

struct bitmaps_filter {
    struct rewrite_filter f;
    uint8_t *scratch;       /* a modified copy of instance values or elements */
    size_t scratch_cap;
};

/* A Bitmap whose buffer merged names the kept one. */
static int filter_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct bitmaps_filter *bf = (struct bitmaps_filter *)v;
    const struct shrink_plan *p = bf->f.plan;
    const struct kind_layout *k;
    uint64_t kept = 0;
    if (model_kind(p->model, o->class_id, &k) != NAME_CLASS_BITMAP ||
        !idmap_get(&p->bitmaps.remap, model_field_id(p->ids, o, k->field[0]), &kept))
        return forward_instance(&bf->f, o);
    struct hprof_instance changed = *o;
    uint8_t *values = filter_scratch(&bf->scratch, &bf->scratch_cap, o->length, bf->f.err);
    if (values == NULL)
        return HPROF_ERR_NOMEM;
    memcpy(values, o->values, o->length);
    put_id(values + k->field[0], kept, p->ids);
    changed.values = values;
    return forward_instance(&bf->f, &changed);
}

/* DumpData.buffers: elements that name a merged buffer now name the kept one. */
static int rewrite_elements(struct bitmaps_filter *bf, const struct hprof_object_array *a)
{
    const struct shrink_plan *p = bf->f.plan;
    const unsigned ids = p->ids;
    struct hprof_object_array part = *a;
    for (uint32_t done = 0; done < a->n;) {
        uint32_t n = a->n - done < ELEMENT_CHUNK ? a->n - done : ELEMENT_CHUNK;
        uint8_t *el = filter_scratch(&bf->scratch, &bf->scratch_cap, (size_t)n * ids, bf->f.err);
        if (el == NULL)
            return HPROF_ERR_NOMEM;
        memcpy(el, a->elements + (size_t)done * ids, (size_t)n * ids);
        for (uint32_t i = 0; i < n; i++) {
            uint64_t kept;
            if (idmap_get(&p->bitmaps.remap, get_id(el + (size_t)i * ids, ids), &kept))
                put_id(el + (size_t)i * ids, kept, ids);
        }
        part.first = a->first + done;
        part.n = n;
        part.elements = el;
        int rc = forward_object_array(&bf->f, &part);
        if (rc != HPROF_OK)
            return rc;
        done += n;
    }
    return HPROF_OK;
}

static int filter_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct bitmaps_filter *bf = (struct bitmaps_filter *)v;
    if (a->n > 0 && idmap_has(&bf->f.plan->bitmaps.dump_buffers, a->id))
        return rewrite_elements(bf, a);
    return forward_object_array(&bf->f, a);
}

/* A merged copy goes (counted as bitmap_duplicates when decided). */
static int filter_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct rewrite_filter *f = (struct rewrite_filter *)v;
    if (a->first == 0 && plan_array_keep(f->plan, f->cursor, a) == ARRAY_DUPLICATE)
        return HPROF_SKIP;
    return forward_primitive_array(f, a);
}

static const struct hprof_visitor_ops bitmaps_filter_ops = {
    .instance = filter_instance,
    .object_array = filter_object_array,
    .primitive_array = filter_primitive_array,
};

static void bitmaps_filter_free(struct rewrite_filter *f)
{
    free(((struct bitmaps_filter *)f)->scratch);
    free(f);
}

struct rewrite_filter *bitmaps_filter_new(const struct filter_args *a)
{
    struct bitmaps_filter *bf = calloc(1, sizeof *bf);
    if (bf != NULL)
        filter_init(&bf->f, &bitmaps_filter_ops, a, bitmaps_filter_free);
    return bf ? &bf->f : NULL;
}
