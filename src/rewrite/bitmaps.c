/*
 * bitmaps.c - the bitmap rewrite (see bitmaps.h): finding the candidates
 * and where their contents are (pass 1, the resolution, the expand pass),
 * the digest pass, handing the decisions to the plan, and the filter that
 * drops the copies and rewrites what named them.  Hashing is in
 * bitmaps_hash.c, the merge in bitmaps_merge.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bitmaps_private.h"
#include "filter.h"
#include "system_heaps.h"
#include "visitor_private.h"

/* Byte arrays of at least this many elements (a bitmap of 32 x 32 pixels)
 * have their size and place remembered in pass 1 when the dump names
 * bitmaps that could merge (as for the recent arrays), at most MAX_LARGE
 * of them (32 bytes each in two maps): a buffer that no other could equal
 * need not be hashed, and one dumped before its Bitmap can be hashed with
 * pread() instead of in pass 4. */
#define LARGE_ARRAY (4u << 10)
#define MAX_LARGE (1u << 18)

/* The filter of references: a byte per 64 bytes of input, between 256 KiB
 * and 32 MiB: 32 bits per object of an object-rich dump (four records per
 * KB), of which some are referenced.  A maybe for any copy of a buffer
 * costs the digest pass, a whole read of the input: at 8 MiB, a 2 GB
 * object-rich dump (12M objects) said maybe for 7 of its 98 copies, and
 * that pass was a third of the shrink; at 32 MiB, about 1 id in 400 is a
 * false maybe.  Larger costs more than it saves: the kernel zeroes every
 * page of it. */
#define REFS_SEEN_MIN (256u << 10)
#define REFS_SEEN_MAX (32u << 20)

/* At most this many byte[][] elements are remembered in pass 2 (16 bytes
 * each); past it, DumpData.buffers are expanded by a pass of their own. */
#define MAX_BYTE_ARRAY_ELEMENTS (1u << 20)

#define RECENT_ARRAYS_BITS 12 /* 4096 of them, direct-mapped by id */

static size_t refs_seen_bytes(uint64_t input_bytes)
{
    uint64_t want = input_bytes / 64;
    return want < REFS_SEEN_MIN ? REFS_SEEN_MIN : want > REFS_SEEN_MAX ? REFS_SEEN_MAX : (size_t)want;
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
    if (idmap_init(&b->large, 1) ||
        idmap_init(&b->candidates, 1) || idmap_init(&b->dump_buffers, 0) ||
        idmap_init(&b->pinned, 0) || idmap_init(&b->remap, 1) || idmap_init(&b->dropped, 0))
        return HPROF_ERR_NOMEM;
    return HPROF_OK; /* the digest is made when needed: OpenSSL's set-up is not free */
}

void bitmaps_free(struct bitmaps *b)
{
    idlist_free(&b->natives);
    idmap_free(&b->large);
    free(b->large_arrays);
    free(b->recent);
    free(b->cand_bits);
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
        /* the bits first: a filter (what bitmaps_track_ref() tests) has them */
        if ((b->cand_bits = calloc(CAND_BITS / 64, sizeof *b->cand_bits)) == NULL ||
            idfilter_init(&b->refs_seen, refs_seen_bytes(hprof_reader_size(b->ctx->reader))) !=
                HPROF_OK ||
            (b->recent = calloc((size_t)1 << RECENT_ARRAYS_BITS, sizeof *b->recent)) == NULL)
            return nomem(b);
        /* Heap addresses are kept exactly: the filter's maybe for a copy
         * costs a digest pass over the whole dump to find out (a third of
         * the shrink of a 2 GB dump of small objects), and exact bits
         * near each other stay in cache where the filter's do not. */
        (void)idfilter_use_exact(&b->refs_seen, ID_PAGES_4GIB_HEAP);
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

/* At most MAX_LARGE of them (checked by the callers): room for all is
 * made with the first. */
static int remember_large(struct bitmaps *b, uint64_t id, uint64_t count, uint64_t data_offset)
{
    if (b->large_arrays == NULL &&
        (b->large_arrays = malloc(MAX_LARGE * sizeof *b->large_arrays)) == NULL)
        return nomem(b);
    b->large_arrays[b->large.count] = (struct large_array){ count, data_offset };
    if (idmap_put(&b->large, id, b->large.count + 1) != HPROF_OK)
        return nomem(b);
    return HPROF_OK;
}

const struct large_array *large_of(const struct bitmaps *b, uint64_t id)
{
    uint64_t at;
    return idmap_get(&b->large, id, &at) ? &b->large_arrays[at - 1] : NULL;
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

struct candidate *candidate_of(const struct bitmaps *b, uint64_t id)
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
    if (b->cand_bits != NULL) {
        uint32_t bit = bitmaps_cand_bit(id);
        b->cand_bits[bit / 64] |= 1ull << (bit % 64);
    }
    if (idmap_put(&b->candidates, id, ++b->n_cand) != HPROF_OK)
        return nomem(b);
    return HPROF_OK;
}

void locate(struct candidate *c, uint8_t type, uint32_t count, uint64_t bytes,
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
    int maybe = b->n_cand > 0 && (b->cand_bits == NULL || bitmaps_cand_bit_set(b, a->id));
    struct candidate *c = maybe ? candidate_of(b, a->id) : NULL;
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

int bitmaps_track_maybe_candidate(struct bitmaps *b, uint64_t ref)
{
    if (idmap_has(&b->candidates, ref))
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
    if (b->n_byte_arrays + (size_t)a->n > (size_t)MAX_BYTE_ARRAY_ELEMENTS) {
        b->byte_arrays_overflow = 1;
        return HPROF_OK;
    }
    if (b->n_byte_arrays + (size_t)a->n > b->cap_byte_arrays) {
        size_t cap = b->cap_byte_arrays ? b->cap_byte_arrays : 128;
        while (cap < b->n_byte_arrays + (size_t)a->n)
            cap *= 2;
        struct byte_array_element *grown = realloc(b->byte_arrays, cap * sizeof *grown);
        if (grown == NULL)
            return nomem(b);
        b->byte_arrays = grown;
        b->cap_byte_arrays = cap;
    }
    for (uint32_t i = 0; i < a->n; i++) {
        uint64_t element = get_id(a->elements + (size_t)i * ids, ids);
        const struct recent_array *r = find_recent(b, element);
        b->byte_arrays[b->n_byte_arrays++] = (struct byte_array_element){ a->id, element };
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
    if (b->cand_bits != NULL)
        memset(b->cand_bits, 0, CAND_BITS / 8);
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
    for (size_t i = 0; i < b->n_byte_arrays; i++)
        if (idmap_has(&b->dump_buffers, b->byte_arrays[i].array)) {
            int rc = add_candidate(b, b->byte_arrays[i].element);
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

void mark_hashed(struct bitmaps *b, struct candidate *c)
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
