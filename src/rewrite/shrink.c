/*
 * shrink.c - hprof_shrink(): the passes over the input and the decisions
 * they lead to.  The write pass itself is filter_shrink.c.
 *
 *   1. collect  names of the classes and fields we need (STRING,
 *               LOAD_CLASS), every class layout, and which objects live in
 *               the zygote and image heaps.  Class dumps may come after
 *               instances of the class, hence a pass of their own - but
 *               when the names come before the objects and zygote and image
 *               objects (if any) before the application's (HotSpot writes
 *               names first, and so does ART), pass 1 does pass 2's work
 *               as it goes, putting aside instances whose class is not
 *               dumped yet, and pass 2 is not run.
 *   2. resolve  walks every kept object: String.value arrays are kept,
 *               Bitmap.mBuffer and DumpData.buffers are dedupe candidates,
 *               DumpData.natives is kept, and system objects that a kept
 *               object refers to become hollow stand-ins.
 *   3. expand   (only with Bitmap$DumpData, and only when pass 2 could not
 *               remember every byte[][] it saw) the elements of each buffers
 *               array become candidates; the array may precede its holder.
 *   4. digest   (only with candidates that may have a twin) MD5 of each
 *               candidate's contents, once each, and which candidates other
 *               objects refer to.  A large buffer whose size no other
 *               candidate shares cannot have a duplicate and is not hashed.
 *               Candidates are then grouped by (type, length, MD5) and every
 *               merge is confirmed byte for byte with pread().  When passes
 *               1-2 saw where every such candidate's contents are (after
 *               its Bitmap, just before it or its byte[][], or a byte array
 *               of 4 KiB or more), they are hashed with pread() instead,
 *               and the pass runs only if two may be equal and what else
 *               refers to the copies is not known: passes 1-2 pin what
 *               refers to a known candidate and put every other reference
 *               into a Bloom filter, which mostly rules the rest out.
 *   5. write    filter_shrink.c in front of the writer.
 *
 * Passes 1-3 skip array contents entirely (the reader seeks over them), so
 * they cost about one read of the metadata.  Memory grows with what must be
 * remembered - class layouts, system-heap ids, kept array ids, candidates -
 * never with the size of the input.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shrink_private.h"

/* Byte arrays of at least this many elements (a bitmap of 32 x 32 pixels)
 * have their size and place remembered in pass 1 when the dump names
 * bitmaps that could merge (as for the recent arrays), at most MAX_LARGE
 * of them (32 bytes each in two maps): a buffer that no other could equal
 * need not be hashed, and one dumped before its Bitmap can be hashed with
 * pread() instead of in pass 4. */
#define LARGE_ARRAY (4u << 10)
#define MAX_LARGE (1u << 18)

/* The filter of references (see struct shrink): a byte per 16 bytes of
 * input (a dump holds at most one reference per 4 bytes, typically one per
 * 20-400), between 256 KiB and 8 MiB - enough for a few million references
 * before it says maybe too often to spare pass 4. */
#define REFS_SEEN_MIN (256u << 10)
#define REFS_SEEN_MAX (8u << 20)

static size_t refs_seen_bytes(uint64_t input_bytes)
{
    uint64_t want = input_bytes / 16;
    return want < REFS_SEEN_MIN ? REFS_SEEN_MIN : want > REFS_SEEN_MAX ? REFS_SEEN_MAX : (size_t)want;
}

/* At most this many byte[][] elements are remembered in pass 2 (16 bytes
 * each); past it, DumpData.buffers are expanded by a pass of their own. */
#define MAX_BYTE_ARRAY_ELEMENTS (1u << 20)

/* A visitor whose state is the shared struct shrink. */
struct pass_visitor {
    struct hprof_visitor base;
    struct shrink *sh;
};

static struct shrink *self(struct hprof_visitor *v)
{
    return ((struct pass_visitor *)v)->sh;
}

static int nomem(struct shrink *sh)
{
    return hprof_error_set(sh->err, HPROF_ERR_NOMEM, "out of memory");
}

/* ---- Class kinds and redaction layouts ------------------------------------- */

struct name_match {
    const struct shrink *sh;
    int code;
};

static int match_name(void *ctx, uint64_t name_id)
{
    struct name_match *m = ctx;
    uint64_t code;
    return idmap_get(&m->sh->names, name_id, &code) && (int)code == m->code;
}

static int64_t field_at(struct shrink *sh, const struct class_info *ci, int code, uint8_t type)
{
    struct name_match m = { sh, code };
    return classes_field_offset(&sh->classes, ci, match_name, &m, type);
}

/* Which of String, Bitmap, DumpData and byte[][] class `ci` is (if any),
 * and where their fields sit in an instance.  Its layout is resolved. */
static int resolve_kind(struct shrink *sh, const struct class_info *ci)
{
    uint64_t name_id, code;
    if (!idmap_get(&sh->class_names, ci->id, &name_id) || !idmap_get(&sh->names, name_id, &code) ||
        code < NAME_CLASS_STRING || code > NAME_CLASS_BYTE_ARRAYS)
        return HPROF_OK;
    struct kind_layout *grown = realloc(sh->layouts, (sh->n_layouts + 1) * sizeof *grown);
    if (grown == NULL)
        return nomem(sh);
    sh->layouts = grown;
    struct kind_layout *k = &sh->layouts[sh->n_layouts];
    *k = (struct kind_layout){ .class_id = ci->id, .kind = (int)code, .field = { -1, -1 } };
    if (code == NAME_CLASS_STRING) {
        k->field[0] = field_at(sh, ci, NAME_FIELD_VALUE, HPROF_TYPE_OBJECT);
        k->field[1] = field_at(sh, ci, NAME_FIELD_CODER, HPROF_TYPE_BYTE);
    } else if (code == NAME_CLASS_BITMAP) {
        k->field[0] = field_at(sh, ci, NAME_FIELD_BUFFER, HPROF_TYPE_OBJECT);
    } else if (code == NAME_CLASS_DUMP_DATA) {
        k->field[0] = field_at(sh, ci, NAME_FIELD_BUFFERS, HPROF_TYPE_OBJECT);
        k->field[1] = field_at(sh, ci, NAME_FIELD_NATIVES, HPROF_TYPE_OBJECT);
    }
    return idmap_put(&sh->kinds, ci->id, sh->n_layouts++) == HPROF_OK ? HPROF_OK : nomem(sh);
}

/* After pass 1: the kind of every class. */
static int resolve_kinds(struct shrink *sh)
{
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && i < sh->classes.n_info; i++)
        rc = resolve_kind(sh, &sh->classes.info[i]);
    return rc;
}

/* For --redact: where instances of `ci` hold a field a keep rule names
 * (declared in the rule's class, anywhere up the chain), and whether `ci` is
 * one of the application's classes. */
static int resolve_class_redaction(struct shrink *sh, const struct class_info *ci)
{
    if (sh->n_rules > 0) {
        size_t start = sh->n_exempt_at, steps = 0;
        uint64_t at = 0;
        for (const struct class_info *k = ci; k != NULL && steps <= sh->classes.n_info; steps++) {
            uint64_t name, class_bits = 0;
            if (idmap_get(&sh->class_names, k->id, &name))
                idmap_get(&sh->rule_names, name, &class_bits);
            for (unsigned f = 0; f < k->n_fields; f++) {
                const struct class_field *fl = &sh->classes.fields[k->first_field + f];
                uint64_t field_bits = 0;
                idmap_get(&sh->rule_names, fl->name_id, &field_bits);
                /* rule i matches when bit 2i (class) and bit 2i+1 (field) are set */
                if (fl->type == HPROF_TYPE_OBJECT &&
                    (class_bits & (field_bits >> 1) & 0x5555555555555555ull) != 0) {
                    int64_t *grown = realloc(sh->exempt_at, (sh->n_exempt_at + 1) * sizeof *grown);
                    if (grown == NULL)
                        return nomem(sh);
                    sh->exempt_at = grown;
                    sh->exempt_at[sh->n_exempt_at++] = (int64_t)at;
                }
                at += type_size(fl->type, sh->ids);
            }
            k = k->super_id ? classes_find(&sh->classes, k->super_id) : NULL;
        }
        size_t count = sh->n_exempt_at - start;
        if (count > 0 && idmap_put(&sh->exempt_fields, ci->id, start << 16 | count) != HPROF_OK)
            return nomem(sh);
    }
    uint64_t name;
    if (sh->opt.redact_fields && idmap_get(&sh->class_names, ci->id, &name) &&
        !idmap_has(&sh->system_names, name) && idmap_put(&sh->app_classes, ci->id, 0) != HPROF_OK)
        return nomem(sh);
    return HPROF_OK;
}

/* After pass 1: the same for every class. */
static int resolve_redaction(struct shrink *sh)
{
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && i < sh->classes.n_info; i++)
        rc = resolve_class_redaction(sh, &sh->classes.info[i]);
    return rc;
}

/* ---- Pass 1: collect --------------------------------------------------------- */

/* The names the shrink looks for (X-macro: one list, two tables). */
#define SHRINK_NAMES(X)                                          \
    X("java.lang.String", NAME_CLASS_STRING)                     \
    X("java/lang/String", NAME_CLASS_STRING)                     \
    X("android.graphics.Bitmap", NAME_CLASS_BITMAP)              \
    X("android/graphics/Bitmap", NAME_CLASS_BITMAP)              \
    X("android.graphics.Bitmap$DumpData", NAME_CLASS_DUMP_DATA)  \
    X("android/graphics/Bitmap$DumpData", NAME_CLASS_DUMP_DATA)  \
    X("byte[][]", NAME_CLASS_BYTE_ARRAYS)                        \
    X("[[B", NAME_CLASS_BYTE_ARRAYS)                             \
    X("value", NAME_FIELD_VALUE)                                 \
    X("mBuffer", NAME_FIELD_BUFFER)                              \
    X("buffers", NAME_FIELD_BUFFERS)                             \
    X("natives", NAME_FIELD_NATIVES)                             \
    X("coder", NAME_FIELD_CODER)
#define NAME_ENTRY(text, code) { text, sizeof text - 1, code },
#define NAME_LENGTH_BIT(text, code) 1ull << (sizeof text - 1) |

static int name_code(const struct hprof_string *s)
{
    static const struct {
        const char *text;
        size_t length;
        int code;
    } names[] = { SHRINK_NAMES(NAME_ENTRY) };
    /* Every STRING record comes here (hundreds of thousands in a dump), so
     * first a bit per length that some name has (all are under 64). */
    static const uint64_t lengths = SHRINK_NAMES(NAME_LENGTH_BIT) 0;
    if (s->length >= 64 || !(lengths >> s->length & 1))
        return NAME_NONE;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].length == s->length && memcmp(names[i].text, s->utf8, s->length) == 0)
            return names[i].code;
    return NAME_NONE;
}

/* Does `text` name `want`, where a '.' in `want` matches '.' or '/' (so a
 * rule written with Java names works on HotSpot's slash names)? */
static int same_name(const uint8_t *text, size_t len, const char *want, size_t want_len)
{
    if (len != want_len)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (text[i] != (uint8_t)want[i] && !(want[i] == '.' && text[i] == '/'))
            return 0;
    return 1;
}

/* Packages whose classes are not the application's (--redact-fields). */
static int system_name(const struct hprof_string *s)
{
    static const char *const prefixes[] = {
        "java.", "javax.", "jdk.", "sun.", "com.sun.", "android.", "androidx.", "dalvik.",
        "libcore.", "com.android.", "kotlin.", "kotlinx.", "org.apache.harmony.", "[",
    };
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t n = strlen(prefixes[i]);
        if (s->length >= n && same_name(s->utf8, n, prefixes[i], n))
            return 1;
    }
    return 0;
}

/* Bitmaps whose buffers could merge: a Bitmap.mBuffer field (before
 * Android 8) or the DumpData holder (Android 10 and later). */
static int tracks_refs(const struct shrink *sh)
{
    unsigned mbuffer = 1u << NAME_CLASS_BITMAP | 1u << NAME_FIELD_BUFFER;
    return (sh->names_seen & mbuffer) == mbuffer ||
           (sh->names_seen & 1u << NAME_CLASS_DUMP_DATA) != 0;
}

static void abandon_eager(struct shrink *sh)
{
    sh->eager = EAGER_ABANDONED;
}

static int collect_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct shrink *sh = self(v);
    int code = name_code(s), system = sh->opt.redact_fields && system_name(s);
    uint64_t bits = 0;
    for (size_t i = 0; i < sh->n_rules; i++) {
        const struct redact_rule *r = &sh->rules[i];
        if (same_name(s->utf8, s->length, r->cls, r->cls_len))
            bits |= 1ull << (2 * i);
        if (same_name(s->utf8, s->length, r->field, r->field_len))
            bits |= 1ull << (2 * i + 1);
    }
    if (sh->eager == EAGER_ON && (code != NAME_NONE || bits != 0 || system))
        abandon_eager(sh); /* a name that could change a kind already decided */
    sh->names_seen |= 1u << code;
    if (sh->heap_started && sh->refs_seen.words == NULL && tracks_refs(sh))
        sh->refs_incomplete = 1;
    if ((code != NAME_NONE && idmap_put(&sh->names, s->id, (uint64_t)code) != HPROF_OK) ||
        (bits != 0 && idmap_put(&sh->rule_names, s->id, bits) != HPROF_OK) ||
        (system && idmap_put(&sh->system_names, s->id, 0) != HPROF_OK))
        return nomem(sh);
    return HPROF_OK;
}

static int collect_load_class(struct hprof_visitor *v, const struct hprof_load_class *c)
{
    struct shrink *sh = self(v);
    if (sh->eager == EAGER_ON)
        abandon_eager(sh);
    return idmap_put(&sh->class_names, c->class_id, c->name_id) == HPROF_OK ? HPROF_OK
                                                                           : nomem(sh);
}

#define AUTO_MIN_INPUT (32u << 20)

unsigned shrink_threads(const struct shrink *sh)
{
    if (sh->opt.threads != 0)
        return sh->opt.threads;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 1 && hprof_reader_size(sh->reader) >= AUTO_MIN_INPUT ? (unsigned)cores : 1;
}

/* Work that can leave the passes' thread for another core (references
 * to a filter thread, page faults to a read-ahead thread): not with one
 * thread, nor on one core. */
static int may_use_threads(const struct shrink *sh)
{
    return shrink_threads(sh) > 1 && sysconf(_SC_NPROCESSORS_ONLN) > 1;
}

static int track_heap_begin(struct hprof_visitor *v, const struct hprof_segment *s)
{
    struct shrink *sh = self(v);
    (void)s;
    sh->heap = HPROF_HEAP_DEFAULT; /* readers start each segment in the default heap */
    if (!sh->heap_started && tracks_refs(sh)) {
        if (idfilter_init(&sh->refs_seen, refs_seen_bytes(hprof_reader_size(sh->reader))) !=
                HPROF_OK ||
            (sh->recent = calloc((size_t)1 << RECENT_ARRAYS_BITS, sizeof *sh->recent)) == NULL)
            return nomem(sh);
        /* Every reference goes in: a cache miss each, a quarter of the
         * first pass on the Android-style bench dump.  Another core takes
         * them; without one, they are applied here. */
        if (may_use_threads(sh))
            (void)idfilter_use_thread(&sh->refs_seen);
    }
    sh->heap_started = 1;
    return HPROF_OK;
}

/* Pass 4 would pin what a root names. */
static int collect_root(struct hprof_visitor *v, const struct hprof_root *r)
{
    struct shrink *sh = self(v);
    if (sh->refs_seen.words != NULL && r->id != 0)
        idfilter_add(&sh->refs_seen, r->id);
    return HPROF_OK;
}

static int track_heap_info(struct hprof_visitor *v, const struct hprof_heap_info *i)
{
    self(v)->heap = i->heap_id;
    return HPROF_OK;
}

/* Eager resolution looks into an instance only once its class's layout is
 * complete (the whole superclass chain dumped); the first time it is, the
 * class's kind and redaction fields are worked out.  While eager, a class
 * is resolved (state 2) exactly when that has been done.
 * @return 1 when `ci` is ready, 0 when not yet (or on error, in *rc). */
static int eager_prepare(struct shrink *sh, struct class_info *ci, int *rc)
{
    struct hprof_error not_yet = { 0 };
    if (classes_resolve(&sh->classes, ci, &not_yet) != HPROF_OK)
        return 0;
    *rc = resolve_kind(sh, ci);
    if (*rc == HPROF_OK)
        *rc = resolve_class_redaction(sh, ci);
    return *rc == HPROF_OK;
}

static inline int eager_ready(struct shrink *sh, struct class_info *ci, int *rc)
{
    *rc = HPROF_OK;
    return ci->state == 2 || eager_prepare(sh, ci, rc);
}

/* A kept class dump's references decide stand-ins, which need every system
 * object known: they are looked at when pass 1 ends. */
static int defer_class_refs(struct shrink *sh, const struct hprof_class_dump *c)
{
    int rc = idlist_add(&sh->class_refs, c->loader_id);
    for (unsigned i = 0; rc == HPROF_OK && i < c->n_statics; i++)
        if (c->statics[i].type == HPROF_TYPE_OBJECT)
            rc = idlist_add(&sh->class_refs, c->statics[i].value);
    for (unsigned i = 0; rc == HPROF_OK && i < c->n_constants; i++)
        if (c->constants[i].type == HPROF_TYPE_OBJECT)
            rc = idlist_add(&sh->class_refs, c->constants[i].value);
    return rc == HPROF_OK ? HPROF_OK : nomem(sh);
}

static int collect_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    struct shrink *sh = self(v);
    int rc = classes_add(&sh->classes, c, sh->err);
    for (unsigned i = 0; sh->refs_seen.words != NULL && i < c->n_statics; i++)
        if (c->statics[i].type == HPROF_TYPE_OBJECT && c->statics[i].value != 0)
            idfilter_add(&sh->refs_seen, c->statics[i].value); /* as pass 4 pins */
    if (rc != HPROF_OK || sh->eager == EAGER_ABANDONED)
        return rc;
    rc = defer_class_refs(sh, c);
    if (rc == HPROF_OK && sh->eager == EAGER_ON)
        eager_ready(sh, classes_find(&sh->classes, c->id), &rc);
    return rc;
}

/* The first object: from here on pass 1 resolves what it can. */
static int start_eager(struct shrink *sh)
{
    int rc = HPROF_OK;
    sh->eager = EAGER_ON;
    for (size_t i = 0; rc == HPROF_OK && i < sh->classes.n_info; i++)
        eager_ready(sh, &sh->classes.info[i], &rc);
    return rc;
}

/* Objects of the zygote and image heaps are dropped unless asked not to.
 * A kept object that refers to one makes it a stand-in, so every such
 * object must be known before a kept object's references are looked at:
 * one that comes after a kept object ends eager resolution. */
static int note_heap(struct shrink *sh, uint64_t id)
{
    int rc = HPROF_OK;
    if (!sh->opt.keep_system_heaps &&
        (sh->heap == HPROF_HEAP_ZYGOTE || sh->heap == HPROF_HEAP_IMAGE)) {
        if (sh->kept_object_seen)
            abandon_eager(sh);
        if (idmap_put(&sh->system, id, 0) != HPROF_OK)
            return nomem(sh);
    } else {
        sh->kept_object_seen = 1;
    }
    if (sh->eager == EAGER_WAITING)
        rc = start_eager(sh);
    return rc;
}

/* Bounds the offsets put aside (8 bytes each): past it, pass 2 runs. */
#define MAX_DEFERRED (1u << 20)

static int resolve_checked(struct shrink *sh, const struct hprof_instance *o, struct class_info *ci);
static int resolve_object_array(struct hprof_visitor *v, const struct hprof_object_array *a);

static int collect_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct shrink *sh = self(v);
    int rc = note_heap(sh, o->id);
    if (rc != HPROF_OK || sh->eager != EAGER_ON || shrink_in_system(sh, o->id))
        return rc;
    struct class_info *ci = classes_find(&sh->classes, o->class_id);
    if (ci == NULL || !eager_ready(sh, ci, &rc)) {
        if (rc != HPROF_OK)
            return rc;
        if (sh->deferred.n >= MAX_DEFERRED)
            abandon_eager(sh);
        else if (idlist_add(&sh->deferred, o->offset) != HPROF_OK)
            return nomem(sh);
        return HPROF_OK;
    }
    if (ci->total_bytes != o->length) { /* what classes_check_instance() checks */
        abandon_eager(sh); /* pass 2 will say what is wrong */
        return HPROF_OK;
    }
    return resolve_checked(sh, o, ci);
}

static int collect_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct shrink *sh = self(v);
    int rc = a->first == 0 ? note_heap(sh, a->id) : HPROF_OK;
    if (rc != HPROF_OK)
        return rc;
    return sh->eager == EAGER_ON ? resolve_object_array(v, a) : HPROF_SKIP;
}

static int locate_candidate(struct shrink *sh, const struct hprof_primitive_array *a);

static struct recent_array *recent_slot(const struct shrink *sh, uint64_t id)
{
    return &sh->recent[(id * 0x9E3779B97F4A7C15ull) >> (64 - RECENT_ARRAYS_BITS)];
}

/* Remember where byte array `a` is while it is recent (its first dump). */
static void note_recent(struct shrink *sh, const struct hprof_primitive_array *a)
{
    if (sh->recent == NULL || a->type != HPROF_TYPE_BYTE ||
        a->tag != HPROF_PRIMITIVE_ARRAY_DUMP || a->first != 0)
        return;
    struct recent_array *r = recent_slot(sh, a->id);
    if (r->id != a->id)
        *r = (struct recent_array){ a->id, a->data_offset, a->count };
}

/* Where byte array `id` is, if it was seen lately.  @return it or NULL. */
static const struct recent_array *find_recent(const struct shrink *sh, uint64_t id)
{
    const struct recent_array *r = sh->recent ? recent_slot(sh, id) : NULL;
    return r != NULL && r->id == id && id != 0 ? r : NULL;
}

static int collect_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct shrink *sh = self(v);
    int rc = note_heap(sh, a->id);
    note_recent(sh, a);
    if (rc == HPROF_OK && a->type == HPROF_TYPE_BYTE && a->count >= LARGE_ARRAY &&
        a->tag == HPROF_PRIMITIVE_ARRAY_DUMP && sh->recent != NULL && sh->large.count < MAX_LARGE &&
        !idmap_has(&sh->large, a->id) &&
        (idmap_put(&sh->large, a->id, a->count) != HPROF_OK ||
         idmap_put(&sh->large_at, a->id, a->data_offset) != HPROF_OK))
        rc = nomem(sh);
    if (rc == HPROF_OK && sh->eager == EAGER_ON)
        rc = locate_candidate(sh, a);
    return rc == HPROF_OK ? HPROF_SKIP : rc;
}

static const struct hprof_visitor_ops collect_ops = {
    .string = collect_string,
    .load_class = collect_load_class,
    .heap_begin = track_heap_begin,
    .root = collect_root,
    .heap_info = track_heap_info,
    .class_dump = collect_class_dump,
    .instance = collect_instance,
    .object_array = collect_object_array,
    .primitive_array = collect_primitive_array,
};

/* ---- Pass 2: resolve ------------------------------------------------------- */

static int add_candidate(struct shrink *sh, uint64_t id)
{
    if (id == 0 || idmap_has(&sh->candidates, id))
        return HPROF_OK;
    if (sh->n_cand == sh->cap_cand) {
        size_t cap = sh->cap_cand ? sh->cap_cand * 2 : 64;
        struct candidate *grown = realloc(sh->cand, cap * sizeof *grown);
        if (grown == NULL)
            return nomem(sh);
        sh->cand = grown;
        sh->cap_cand = cap;
    }
    sh->cand[sh->n_cand] = (struct candidate){ .id = id };
    if (idmap_put(&sh->candidates, id, ++sh->n_cand) != HPROF_OK)
        return nomem(sh);
    return HPROF_OK;
}

/* A reference pass 4 would pin with: to a known candidate it is a pin now;
 * to anything else it goes into the filter, since it may name a buffer
 * whose Bitmap comes later. */
static int track_ref(struct shrink *sh, uint64_t ref)
{
    if (sh->refs_seen.words == NULL || ref == 0)
        return HPROF_OK;
    if (sh->n_cand > 0 && idmap_has(&sh->candidates, ref))
        return idmap_put(&sh->pinned, ref, 0) == HPROF_OK ? HPROF_OK : nomem(sh);
    idfilter_add(&sh->refs_seen, ref);
    return HPROF_OK;
}

static struct candidate *candidate_of(const struct shrink *sh, uint64_t id);

/* Where candidate `c`'s contents are, learnt before pass 4. */
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
static void locate_recent_candidate(struct shrink *sh, uint64_t id)
{
    const struct recent_array *r = find_recent(sh, id);
    struct candidate *c = r ? candidate_of(sh, id) : NULL;
    if (c == NULL || c->located)
        return;
    locate(c, HPROF_TYPE_BYTE, r->count, r->count, r->data_offset);
}

/* A kept object refers to `ref`: a system object there becomes a stand-in. */
static int refer(struct shrink *sh, uint64_t ref)
{
    if (!shrink_in_system(sh, ref) || idmap_has(&sh->standins, ref))
        return HPROF_OK;
    return idmap_put(&sh->standins, ref, 0) == HPROF_OK ? HPROF_OK : nomem(sh);
}

/* A walk over an instance's reference fields, which skips a Bitmap's own
 * buffer slot where pins are concerned (here, and in pass 4). */
struct field_walk {
    struct shrink *sh;
    int64_t bitmap_slot;    /* offset of mBuffer in this instance, or -1 */
};

/* Passes 1-2: a kept instance's reference may make a stand-in, and is one
 * that pass 4 would pin with. */
static int walk_field(void *ctx, uint32_t at, uint64_t name_id, uint64_t ref)
{
    struct field_walk *w = ctx;
    (void)name_id;
    int rc = (int64_t)at != w->bitmap_slot ? track_ref(w->sh, ref) : HPROF_OK;
    return rc == HPROF_OK ? refer(w->sh, ref) : rc;
}

static int resolve_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    struct shrink *sh = self(v);
    int rc = refer(sh, c->loader_id);
    for (unsigned i = 0; rc == HPROF_OK && i < c->n_statics; i++)
        if (c->statics[i].type == HPROF_TYPE_OBJECT)
            rc = refer(sh, c->statics[i].value);
    for (unsigned i = 0; rc == HPROF_OK && i < c->n_constants; i++)
        if (c->constants[i].type == HPROF_TYPE_OBJECT)
            rc = refer(sh, c->constants[i].value);
    return rc;
}

static int keep_array(struct shrink *sh, uint64_t id, enum keep_reason why)
{
    if (id == 0)
        return HPROF_OK;
    return idlist_add(&sh->keep[why], id) == HPROF_OK ? HPROF_OK : nomem(sh);
}

/* Instance `o` of class `ci`, whose layout it has been checked against. */
static int resolve_checked(struct shrink *sh, const struct hprof_instance *o, struct class_info *ci)
{
    const struct kind_layout *k;
    struct field_walk walk = { sh, -1 };
    int rc = HPROF_OK;
    if (shrink_in_system(sh, o->id))
        return rc; /* dropped or hollow: what it refers to does not matter */
    uint64_t exempt;
    if (sh->exempt_fields.count > 0 && idmap_get(&sh->exempt_fields, o->class_id, &exempt))
        for (uint64_t i = exempt >> 16; rc == HPROF_OK && i < (exempt >> 16) + (exempt & 0xFFFF); i++) {
            uint64_t str = shrink_field_id(sh, o, sh->exempt_at[i]);
            if (str != 0 && idmap_put(&sh->exempt_strings, str, 0) != HPROF_OK)
                rc = nomem(sh);
        }
    switch (shrink_kind(sh, o->class_id, &k)) {
    case NAME_CLASS_STRING: {
        int64_t coder = k->field[1];
        int utf16 = coder >= 0 && (uint64_t)coder < o->length && o->values[coder] == 1;
        rc = keep_array(sh, shrink_field_id(sh, o, k->field[0]),
                        utf16 ? KEEP_STRING_UTF16 : KEEP_STRING_VALUE);
        break;
    }
    case NAME_CLASS_BITMAP:
        rc = add_candidate(sh, shrink_field_id(sh, o, k->field[0]));
        if (rc == HPROF_OK)
            locate_recent_candidate(sh, shrink_field_id(sh, o, k->field[0]));
        walk.bitmap_slot = k->field[0];
        break;
    case NAME_CLASS_DUMP_DATA: {
        uint64_t buffers = shrink_field_id(sh, o, k->field[0]);
        if (buffers != 0 && idmap_put(&sh->dump_buffers, buffers, 0) != HPROF_OK)
            return nomem(sh);
        rc = keep_array(sh, shrink_field_id(sh, o, k->field[1]), KEEP_NATIVES);
        break;
    }
    default:
        break;
    }
    if (rc != HPROF_OK || (sh->system.count == 0 && sh->refs_seen.words == NULL))
        return rc;
    return classes_each_ref(&sh->classes, ci, o->values, o->length, walk_field, &walk);
}

static int resolve_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct shrink *sh = self(v);
    struct class_info *ci;
    int rc = classes_check_instance(&sh->classes, o, &ci, sh->err);
    return rc == HPROF_OK ? resolve_checked(sh, o, ci) : rc;
}

/* Remember a byte[][]'s elements: it may be a DumpData.buffers whose holder
 * comes later, and remembering spares pass 3 in the usual case. */
static int remember_byte_arrays(struct shrink *sh, const struct hprof_object_array *a)
{
    if (sh->n_byte_arrays + 2 * (size_t)a->n > 2 * (size_t)MAX_BYTE_ARRAY_ELEMENTS) {
        sh->byte_arrays_overflow = 1;
        return HPROF_OK;
    }
    if (sh->n_byte_arrays + 2 * (size_t)a->n > sh->cap_byte_arrays) {
        size_t cap = sh->cap_byte_arrays ? sh->cap_byte_arrays : 256;
        while (cap < sh->n_byte_arrays + 2 * (size_t)a->n)
            cap *= 2;
        uint64_t *grown = realloc(sh->byte_arrays, cap * sizeof *grown);
        if (grown == NULL)
            return nomem(sh);
        sh->byte_arrays = grown;
        sh->cap_byte_arrays = cap;
    }
    for (uint32_t i = 0; i < a->n; i++) {
        uint64_t element = get_id(a->elements + (size_t)i * sh->ids, sh->ids);
        const struct recent_array *r = find_recent(sh, element);
        sh->byte_arrays[sh->n_byte_arrays++] = a->id;
        sh->byte_arrays[sh->n_byte_arrays++] = element;
        /* a DumpData buffer dumped just before: where it is, for its digest */
        if (r != NULL && sh->large.count < MAX_LARGE && !idmap_has(&sh->large, element) &&
            (idmap_put(&sh->large, element, r->count) != HPROF_OK ||
             idmap_put(&sh->large_at, element, r->data_offset) != HPROF_OK))
            return nomem(sh);
    }
    return HPROF_OK;
}

static int resolve_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct shrink *sh = self(v);
    const struct kind_layout *k;
    if (shrink_in_system(sh, a->id))
        return HPROF_SKIP;
    int byte_arrays = shrink_kind(sh, a->class_id, &k) == NAME_CLASS_BYTE_ARRAYS;
    /* a byte[][]'s elements are remembered instead: a DumpData.buffers one
     * does not pin them, and its holder may come later */
    int track = sh->refs_seen.words != NULL && !byte_arrays;
    if (!byte_arrays && sh->system.count == 0 && !track)
        return HPROF_SKIP;
    int rc = byte_arrays && !sh->byte_arrays_overflow ? remember_byte_arrays(sh, a) : HPROF_OK;
    for (uint32_t i = 0; rc == HPROF_OK && (sh->system.count > 0 || track) && i < a->n; i++) {
        uint64_t ref = get_id(a->elements + (size_t)i * sh->ids, sh->ids);
        rc = track ? track_ref(sh, ref) : HPROF_OK;
        if (rc == HPROF_OK)
            rc = refer(sh, ref);
    }
    return rc;
}

/* After pass 2: the remembered elements of DumpData.buffers arrays become
 * candidates.  @return 1 when that covered every buffers array. */
static int expand_remembered(struct shrink *sh, int *covered)
{
    *covered = !sh->byte_arrays_overflow;
    for (size_t i = 0; *covered && i < sh->n_byte_arrays; i += 2)
        if (idmap_has(&sh->dump_buffers, sh->byte_arrays[i])) {
            int rc = add_candidate(sh, sh->byte_arrays[i + 1]);
            if (rc != HPROF_OK)
                return rc;
        }
    return HPROF_OK;
}

/* Candidates whose size is known (large byte arrays, pass 1) and shared by
 * no other candidate need no digest.  @return how many still need one. */
static size_t mark_unique_sizes(struct shrink *sh)
{
    struct idmap sizes; /* count -> candidates of that count */
    size_t need = 0;
    if (idmap_init(&sizes, 1) != HPROF_OK)
        return sh->n_cand;
    for (size_t i = 0; i < sh->n_cand; i++) {
        uint64_t count, seen = 0;
        if (idmap_get(&sh->large, sh->cand[i].id, &count)) {
            idmap_get(&sizes, count, &seen);
            if (idmap_put(&sizes, count, seen + 1) != HPROF_OK) {
                idmap_free(&sizes);
                return sh->n_cand;
            }
        }
    }
    for (size_t i = 0; i < sh->n_cand; i++) {
        uint64_t count, seen = 0;
        sh->cand[i].unique_size = idmap_get(&sh->large, sh->cand[i].id, &count) &&
                                  idmap_get(&sizes, count, &seen) && seen == 1;
        need += !sh->cand[i].unique_size;
    }
    idmap_free(&sizes);
    return need;
}

static int skip_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    (void)v;
    (void)a;
    return HPROF_SKIP;
}

static int skip_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    (void)v;
    (void)a;
    return HPROF_SKIP;
}

static struct candidate *candidate_of(const struct shrink *sh, uint64_t id)
{
    uint64_t at;
    return idmap_get(&sh->candidates, id, &at) ? &sh->cand[at - 1] : NULL;
}

/* A candidate's array after the Bitmap that named it: where its contents
 * are, so that pass 4 may not be needed to hash them (the first dump of an
 * id counts, as in pass 4). */
static int locate_candidate(struct shrink *sh, const struct hprof_primitive_array *a)
{
    struct candidate *c = sh->n_cand > 0 ? candidate_of(sh, a->id) : NULL;
    if (c == NULL || c->located || a->tag != HPROF_PRIMITIVE_ARRAY_DUMP)
        return HPROF_OK;
    locate(c, a->type, a->count, (uint64_t)a->count * type_size(a->type, sh->ids),
           a->data_offset);
    return HPROF_OK;
}

static int resolve_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    note_recent(self(v), a);
    int rc = locate_candidate(self(v), a);
    return rc == HPROF_OK ? HPROF_SKIP : rc;
}

static const struct hprof_visitor_ops resolve_ops = {
    .class_dump = resolve_class_dump,
    .instance = resolve_instance,
    .object_array = resolve_object_array,
    .primitive_array = resolve_primitive_array,
};

/* ---- Pass 3: expand DumpData.buffers -------------------------------------- */

static int expand_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct shrink *sh = self(v);
    if (!idmap_has(&sh->dump_buffers, a->id))
        return HPROF_SKIP;
    for (uint32_t i = 0; i < a->n; i++) {
        int rc = add_candidate(sh, get_id(a->elements + (size_t)i * sh->ids, sh->ids));
        if (rc != HPROF_OK)
            return rc;
    }
    return HPROF_OK;
}

static const struct hprof_visitor_ops expand_ops = {
    .object_array = expand_object_array,
    .primitive_array = skip_primitive_array,
};

/* ---- Pass 3b: the value arrays of Strings a keep rule names ---------------- */

static int exempt_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct shrink *sh = self(v);
    const struct kind_layout *k;
    if (!idmap_has(&sh->exempt_strings, o->id) || shrink_kind(sh, o->class_id, &k) != NAME_CLASS_STRING)
        return HPROF_OK;
    uint64_t value = shrink_field_id(sh, o, k->field[0]);
    return value == 0 || idmap_put(&sh->exempt_values, value, 0) == HPROF_OK ? HPROF_OK : nomem(sh);
}

static const struct hprof_visitor_ops exempt_ops = {
    .instance = exempt_instance,
    .object_array = skip_object_array,
    .primitive_array = skip_primitive_array,
};

/* ---- Pass 4: digest ---------------------------------------------------------- */

/* A candidate referred to from anywhere but a bitmap slot must survive as
 * an array of its own even when its contents are merged. */
static int pin(struct shrink *sh, uint64_t ref)
{
    if (ref == 0 || candidate_of(sh, ref) == NULL)
        return HPROF_OK;
    return idmap_put(&sh->pinned, ref, 0) == HPROF_OK ? HPROF_OK : nomem(sh);
}

static int pin_field(void *ctx, uint32_t at, uint64_t name_id, uint64_t ref)
{
    struct field_walk *w = ctx;
    (void)name_id;
    return (int64_t)at == w->bitmap_slot ? HPROF_OK : pin(w->sh, ref);
}

static int digest_root(struct hprof_visitor *v, const struct hprof_root *r)
{
    return pin(self(v), r->id);
}

static int digest_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    struct shrink *sh = self(v);
    int rc = HPROF_OK;
    for (unsigned i = 0; rc == HPROF_OK && i < c->n_statics; i++)
        if (c->statics[i].type == HPROF_TYPE_OBJECT)
            rc = pin(sh, c->statics[i].value);
    return rc;
}

static int digest_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct shrink *sh = self(v);
    const struct kind_layout *k;
    struct field_walk walk = { sh, -1 };
    if (shrink_in_system(sh, o->id))
        return HPROF_OK;
    if (shrink_kind(sh, o->class_id, &k) == NAME_CLASS_BITMAP)
        walk.bitmap_slot = k->field[0];
    struct class_info *ci = classes_find(&sh->classes, o->class_id);
    return ci ? classes_each_ref(&sh->classes, ci, o->values, o->length, pin_field, &walk)
              : HPROF_OK;
}

static int digest_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct shrink *sh = self(v);
    if (idmap_has(&sh->dump_buffers, a->id) || shrink_in_system(sh, a->id))
        return HPROF_SKIP;
    for (uint32_t i = 0; i < a->n; i++) {
        int rc = pin(sh, get_id(a->elements + (size_t)i * sh->ids, sh->ids));
        if (rc != HPROF_OK)
            return rc;
    }
    return HPROF_OK;
}

static int digest_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct shrink *sh = self(v);
    struct candidate *c = candidate_of(sh, a->id);
    if (c == NULL || a->tag != HPROF_PRIMITIVE_ARRAY_DUMP || c->unique_size)
        return HPROF_SKIP;
    int rc = HPROF_OK;
    if (a->first == 0) {
        if (c->digested) /* a second dump of the same id: leave it alone */
            return HPROF_SKIP;
        c->type = a->type;
        c->count = a->count;
        c->bytes = (uint64_t)a->count * type_size(a->type, sh->ids);
        c->data_offset = a->data_offset;
        rc = digest_begin(sh->digest);
    }
    if (rc == HPROF_OK)
        rc = digest_update(sh->digest, a->data, a->length);
    if (rc == HPROF_OK && a->first + a->length == c->bytes) {
        rc = digest_final(sh->digest, c->md5);
        c->digested = 1;
        sh->stats->bitmap_digested++;
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

/* Byte-for-byte comparison of two candidates' contents in the input. */
static int same_contents(struct shrink *sh, const struct candidate *a, const struct candidate *b,
                         uint8_t *buf_a, uint8_t *buf_b, size_t buf_len, int *same)
{
    *same = 1;
    for (uint64_t at = 0; at < a->bytes; at += buf_len) {
        size_t n = a->bytes - at < buf_len ? (size_t)(a->bytes - at) : buf_len;
        int rc = hprof_reader_pread(sh->reader, a->data_offset + at, buf_a, n);
        if (rc == HPROF_OK)
            rc = hprof_reader_pread(sh->reader, b->data_offset + at, buf_b, n);
        if (rc != HPROF_OK)
            return rc;
        if (memcmp(buf_a, buf_b, n) != 0) {
            *same = 0;
            return HPROF_OK;
        }
    }
    return HPROF_OK;
}

static int same_key(const struct candidate *a, const struct candidate *b)
{
    return a->digested && b->digested && a->type == b->type && a->count == b->count &&
           memcmp(a->md5, b->md5, 16) == 0;
}

/* Group digested candidates; within a group (same type, length, MD5) each
 * member is compared with the group's distinct contents so far and merged
 * into the first equal one, which is the earliest in the file.  An MD5
 * match alone never merges. */
static int decide_merges(struct shrink *sh)
{
    const size_t buf_len = 1u << 20;
    uint8_t *buf_a = malloc(buf_len), *buf_b = malloc(buf_len);
    int rc = buf_a && buf_b ? HPROF_OK : nomem(sh);
    qsort(sh->cand, sh->n_cand, sizeof *sh->cand, compare_candidates);
    for (size_t i = 0; rc == HPROF_OK && i < sh->n_cand; i++)
        if (idmap_put(&sh->candidates, sh->cand[i].id, i + 1) != HPROF_OK)
            rc = nomem(sh);
    for (size_t start = 0, end; rc == HPROF_OK && start < sh->n_cand; start = end) {
        for (end = start + 1; end < sh->n_cand && same_key(&sh->cand[start], &sh->cand[end]);)
            end++;
        for (size_t m = start + 1; rc == HPROF_OK && m < end; m++) {
            struct candidate *copy = &sh->cand[m], *original = NULL;
            for (size_t k = start; k < m && rc == HPROF_OK && original == NULL; k++) {
                int same = 0;
                if (idmap_has(&sh->remap, sh->cand[k].id))
                    continue; /* merged itself: not a distinct content */
                rc = same_contents(sh, &sh->cand[k], copy, buf_a, buf_b, buf_len, &same);
                if (same)
                    original = &sh->cand[k];
            }
            if (rc != HPROF_OK || original == NULL)
                continue;
            if (idmap_put(&sh->remap, copy->id, original->id) != HPROF_OK ||
                (!idmap_has(&sh->pinned, copy->id) &&
                 idmap_put(&sh->dropped, copy->id, 0) != HPROF_OK)) {
                rc = nomem(sh);
                break;
            }
            if (!original->has_copies)
                sh->stats->bitmap_groups++;
            original->has_copies = 1;
            sh->stats->bitmap_duplicates.count++;
            sh->stats->bitmap_duplicates.bytes += copy->bytes;
        }
    }
    free(buf_a);
    free(buf_b);
    return rc;
}

/* ---- Digests without pass 4 --------------------------------------------------- */

/* Candidates whose arrays came before their Bitmap in pass 2 are located
 * from pass 1 when large; then, when every candidate that needs a digest
 * is located, their MD5s come from pread(), once each.  *all_located says
 * whether that was the case (nothing is hashed otherwise: pass 4 will). */
static int digest_located(struct shrink *sh, int *all_located)
{
    *all_located = 0;
    for (size_t i = 0; i < sh->n_cand; i++) {
        struct candidate *c = &sh->cand[i];
        uint64_t count, at;
        if (!c->located && idmap_get(&sh->large, c->id, &count) &&
            idmap_get(&sh->large_at, c->id, &at))
            locate(c, HPROF_TYPE_BYTE, (uint32_t)count, count, at);
        if (!c->unique_size && !c->located)
            return HPROF_OK;
    }
    const size_t buf_len = 1u << 20;
    uint8_t *buf = malloc(buf_len);
    int rc = buf ? HPROF_OK : nomem(sh);
    for (size_t i = 0; rc == HPROF_OK && i < sh->n_cand; i++) {
        struct candidate *c = &sh->cand[i];
        if (c->unique_size)
            continue;
        rc = digest_begin(sh->digest);
        for (uint64_t done = 0; rc == HPROF_OK && done < c->bytes; done += buf_len) {
            size_t n = c->bytes - done < buf_len ? (size_t)(c->bytes - done) : buf_len;
            rc = hprof_reader_pread(sh->reader, c->data_offset + done, buf, n);
            if (rc == HPROF_OK)
                rc = digest_update(sh->digest, buf, n);
        }
        if (rc == HPROF_OK)
            rc = digest_final(sh->digest, c->md5);
        c->digested = 1;
        sh->stats->bitmap_digested++;
    }
    free(buf);
    *all_located = rc == HPROF_OK;
    return rc;
}

/* The candidates in merge order (equal contents adjacent), as a copy the
 * caller frees; NULL when memory is short. */
static struct candidate *sorted_candidates(const struct shrink *sh)
{
    struct candidate *sorted = malloc(sh->n_cand * sizeof *sorted);
    if (sorted != NULL) {
        memcpy(sorted, sh->cand, sh->n_cand * sizeof *sorted);
        qsort(sorted, sh->n_cand, sizeof *sorted, compare_candidates);
    }
    return sorted;
}

/* Do two digested candidates share type, length and MD5? */
static int may_share_contents(const struct shrink *sh)
{
    struct candidate *sorted = sorted_candidates(sh);
    if (sorted == NULL)
        return 1; /* pass 4 and the merge decide, as they would anyway */
    int shared = 0;
    for (size_t i = 1; i < sh->n_cand && !shared; i++)
        shared = same_key(&sorted[i - 1], &sorted[i]);
    free(sorted);
    return shared;
}

/* Can passes 1-2 vouch that nothing but a bitmap slot refers to any buffer
 * that may merge into another (every member of a group of equal type,
 * length and MD5 but its earliest)?  Then pass 4 has no pin to find. */
static int pins_ruled_out(struct shrink *sh)
{
    if (sh->refs_seen.words == NULL || sh->refs_incomplete || sh->byte_arrays_overflow)
        return 0;
    struct candidate *sorted = sorted_candidates(sh);
    struct idmap copies;
    if (sorted == NULL || idmap_init(&copies, 0) != HPROF_OK) {
        free(sorted);
        return 0;
    }
    int ruled_out = 1;
    for (size_t i = 1; ruled_out && i < sh->n_cand; i++)
        if (same_key(&sorted[i - 1], &sorted[i]))
            ruled_out = !idfilter_maybe(&sh->refs_seen, sorted[i].id) &&
                        idmap_put(&copies, sorted[i].id, 0) == HPROF_OK;
    /* an element of a byte[][] other than DumpData.buffers is a pin */
    for (size_t i = 0; ruled_out && i < sh->n_byte_arrays; i += 2)
        if (idmap_has(&copies, sh->byte_arrays[i + 1]) &&
            !idmap_has(&sh->dump_buffers, sh->byte_arrays[i]))
            ruled_out = idmap_put(&sh->pinned, sh->byte_arrays[i + 1], 0) == HPROF_OK;
    idmap_free(&copies);
    free(sorted);
    return ruled_out;
}

/* ---- Driver ----------------------------------------------------------------- */

static void progress(void *ctx, uint64_t done, uint64_t total)
{
    struct shrink *sh = ctx;
    sh->opt.progress(sh->opt.progress_ctx, sh->pass, sh->passes, done, total);
}

static int run_pass(struct shrink *sh, const struct hprof_visitor_ops *ops,
                    struct hprof_visitor *chain)
{
    struct pass_visitor pv = { { ops, NULL }, sh };
    double start = hprof_now();
    sh->pass++;
    int rc = hprof_reader_run(sh->reader, chain ? chain : &pv.base);
    if (sh->pass <= HPROF_SHRINK_MAX_PASSES)
        sh->stats->pass_seconds[sh->pass - 1] = hprof_now() - start;
    sh->stats->passes = sh->pass;
    return rc;
}

int shrink_run_pass(struct shrink *sh, struct hprof_visitor *chain)
{
    return run_pass(sh, NULL, chain);
}

static int reset_map(struct idmap *m, int with_values)
{
    idmap_free(m);
    return idmap_init(m, with_values);
}

/* Drop what pass 1 resolved before it had to stop, so pass 2 starts clean. */
static int forget_resolved(struct shrink *sh)
{
    sh->n_layouts = 0;
    sh->n_exempt_at = 0;
    sh->n_cand = 0;
    sh->n_byte_arrays = 0;
    sh->byte_arrays_overflow = 0;
    for (int i = 0; i < 4; i++)
        idlist_clear(&sh->keep[i]);
    if (reset_map(&sh->kinds, 1) || reset_map(&sh->exempt_fields, 1) ||
        reset_map(&sh->app_classes, 0) || reset_map(&sh->candidates, 1) ||
        reset_map(&sh->dump_buffers, 0) || reset_map(&sh->standins, 0) ||
        reset_map(&sh->exempt_strings, 0) || reset_map(&sh->pinned, 0))
        return nomem(sh);
    return HPROF_OK;
}

/* The instances an eager pass 1 put aside, read back in file order through
 * one window (they are a small share of the input, often close together). */
struct deferred_window {
    uint8_t *buf;
    size_t cap, len;
    uint64_t start;
};

static int window_at(struct shrink *sh, struct deferred_window *w, uint64_t at, size_t n,
                     const uint8_t **p)
{
    uint64_t size = hprof_reader_size(sh->reader);
    if (at < w->start || at + n > w->start + w->len) {
        size_t want = n > HPROF_READ_BUFFER ? n : HPROF_READ_BUFFER;
        if (at > size || n > size - at)
            return hprof_error_set(sh->err, HPROF_ERR_IO,
                                   "offset 0x%" PRIx64 ": INSTANCE_DUMP: input changed while "
                                   "reading", at);
        if (want > size - at)
            want = (size_t)(size - at);
        if (want > w->cap) {
            uint8_t *grown = realloc(w->buf, want);
            if (grown == NULL)
                return nomem(sh);
            w->buf = grown;
            w->cap = want;
        }
        int rc = hprof_reader_pread(sh->reader, at, w->buf, want);
        if (rc != HPROF_OK)
            return rc;
        w->start = at;
        w->len = want;
    }
    *p = w->buf + (at - w->start);
    return HPROF_OK;
}

static int resolve_deferred(struct shrink *sh)
{
    struct deferred_window w = { 0 };
    const unsigned ids = sh->ids, head = 1 + 2 * ids + 8;
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && sh->eager == EAGER_ON && i < sh->deferred.n; i++) {
        struct hprof_instance o = { .offset = sh->deferred.ids[i] };
        struct hprof_error not_yet = { 0 };
        struct class_info *ci;
        const uint8_t *p;
        if ((rc = window_at(sh, &w, o.offset, head, &p)) != HPROF_OK)
            break;
        o.id = get_id(p + 1, ids);
        o.stack_serial = get_u4(p + 1 + ids);
        o.class_id = get_id(p + 5 + ids, ids);
        o.length = get_u4(p + 5 + 2 * ids);
        if (p[0] != HPROF_INSTANCE_DUMP || o.length > HPROF_MAX_RECORD) {
            rc = hprof_error_set(sh->err, HPROF_ERR_IO, "offset 0x%" PRIx64 ": INSTANCE_DUMP: "
                                 "input changed while reading", o.offset);
            break;
        }
        if ((rc = window_at(sh, &w, o.offset, head + o.length, &p)) != HPROF_OK)
            break;
        o.values = p + head;
        if (classes_check_instance(&sh->classes, &o, &ci, &not_yet) != HPROF_OK)
            abandon_eager(sh); /* pass 2 will say what is wrong */
        else
            rc = resolve_checked(sh, &o, ci);
    }
    free(w.buf);
    return rc;
}

/* The end of an eager pass 1: classes still unfinished, the instances put
 * aside for them, then the class dumps' references (every system object is
 * known now).  What is wrong with the input is left to pass 2 to report. */
static int finish_eager(struct shrink *sh)
{
    int rc = HPROF_OK;
    for (size_t i = 0; i < sh->classes.n_info; i++)
        if (!eager_ready(sh, &sh->classes.info[i], &rc)) {
            if (rc == HPROF_OK)
                abandon_eager(sh);
            return rc;
        }
    rc = resolve_deferred(sh);
    for (size_t i = 0; rc == HPROF_OK && sh->eager == EAGER_ON && i < sh->class_refs.n; i++)
        rc = refer(sh, sh->class_refs.ids[i]);
    return rc;
}

/* Pass 2, for dumps that pass 1 could not resolve as it went. */
static int resolve_in_pass_2(struct shrink *sh)
{
    int rc = forget_resolved(sh);
    if (rc == HPROF_OK)
        rc = resolve_kinds(sh);
    if (rc == HPROF_OK)
        rc = resolve_redaction(sh);
    return rc == HPROF_OK ? run_pass(sh, &resolve_ops, NULL) : rc;
}

static int init(struct shrink *sh)
{
    for (int i = 0; i < 4; i++)
        idlist_init(&sh->keep[i]);
    idlist_init(&sh->deferred);
    idlist_init(&sh->class_refs);
    if (idmap_init(&sh->names, 1) || idmap_init(&sh->class_names, 1) ||
        classes_init(&sh->classes, sh->ids) || idmap_init(&sh->kinds, 1) ||
        idmap_init(&sh->system, 0) || idmap_init(&sh->large, 1) ||
        idmap_init(&sh->large_at, 1) ||
        idmap_init(&sh->candidates, 1) || idmap_init(&sh->dump_buffers, 0) ||
        idmap_init(&sh->standins, 0) || idmap_init(&sh->pinned, 0) ||
        idmap_init(&sh->remap, 1) || idmap_init(&sh->dropped, 0) ||
        idmap_init(&sh->rule_names, 1) || idmap_init(&sh->exempt_fields, 1) ||
        idmap_init(&sh->exempt_strings, 0) || idmap_init(&sh->exempt_values, 0) ||
        idmap_init(&sh->system_names, 0) || idmap_init(&sh->app_classes, 0))
        return nomem(sh);
    return HPROF_OK; /* the digest is made when a pass needs it: OpenSSL's set-up is not free */
}

static void release(struct shrink *sh)
{
    idmap_free(&sh->names);
    idmap_free(&sh->class_names);
    classes_free(&sh->classes);
    idmap_free(&sh->kinds);
    free(sh->layouts);
    idmap_free(&sh->system);
    idmap_free(&sh->large);
    idmap_free(&sh->large_at);
    free(sh->byte_arrays);
    for (int i = 0; i < 4; i++)
        idlist_free(&sh->keep[i]);
    idlist_free(&sh->deferred);
    idlist_free(&sh->class_refs);
    idmap_free(&sh->candidates);
    free(sh->cand);
    idmap_free(&sh->dump_buffers);
    idmap_free(&sh->standins);
    digest_free(sh->digest);
    idmap_free(&sh->pinned);
    idfilter_free(&sh->refs_seen);
    free(sh->recent);
    idmap_free(&sh->remap);
    idmap_free(&sh->dropped);
    idmap_free(&sh->rule_names);
    idmap_free(&sh->exempt_fields);
    free(sh->exempt_at);
    idmap_free(&sh->exempt_strings);
    idmap_free(&sh->exempt_values);
    idmap_free(&sh->system_names);
    idmap_free(&sh->app_classes);
}

/* "CLASS.FIELD" -> a rule; LeakCanary's own come first. */
static int parse_rules(struct shrink *sh)
{
    static const char *const builtin[] = {
        "shark.KeyedWeakReference.key", "shark.KeyedWeakReference.description",
        "leakcanary.KeyedWeakReference.key", "leakcanary.KeyedWeakReference.description",
    };
    if (sh->opt.redact == HPROF_REDACT_NONE)
        return HPROF_OK;
    if (sh->opt.n_redact_keep > HPROF_REDACT_MAX_RULES)
        return hprof_error_set(sh->err, HPROF_ERR_USAGE, "at most %d --redact-keep rules",
                               HPROF_REDACT_MAX_RULES);
    for (size_t i = 0; i < 4 + sh->opt.n_redact_keep; i++) {
        const char *text = i < 4 ? builtin[i] : sh->opt.redact_keep[i - 4];
        const char *dot = strrchr(text, '.');
        if (dot == NULL || dot == text || dot[1] == '\0')
            return hprof_error_set(sh->err, HPROF_ERR_USAGE,
                                   "--redact-keep=%s: expected CLASS.FIELD", text);
        sh->rules[sh->n_rules++] = (struct redact_rule){ text, dot + 1, (size_t)(dot - text),
                                                         strlen(dot + 1) };
    }
    return HPROF_OK;
}

int hprof_shrink(struct hprof_reader *r, struct hprof_sink *sink,
                 const struct hprof_shrink_options *options, struct hprof_shrink_stats *stats,
                 struct hprof_error *err)
{
    struct hprof_shrink_stats scratch_stats;
    struct shrink sh;
    struct hprof_writer *w = NULL;
    struct shrink_filter *f = NULL;
    memset(&sh, 0, sizeof sh);
    sh.reader = r;
    sh.err = err;
    sh.opt = *options;
    sh.stats = stats ? stats : &scratch_stats;
    memset(sh.stats, 0, sizeof *sh.stats);
    sh.ids = hprof_reader_header(r)->id_size;
    if (sh.opt.arrays < HPROF_ARRAYS_EMPTY || sh.opt.arrays > HPROF_ARRAYS_REMOVE)
        return hprof_error_set(err, HPROF_ERR_USAGE, "unknown arrays mode %d", sh.opt.arrays);
    if (sh.opt.progress)
        hprof_reader_set_progress(r, progress, &sh);
    hprof_reader_set_strict(r, 1);
    /* every pass but a parallel write pass reads every record */
    int read_ahead_was = reader_readahead_thread(r);
    hprof_reader_set_readahead_thread(r, may_use_threads(&sh));

    int rc = init(&sh);
    if (rc == HPROF_OK)
        rc = parse_rules(&sh);
    sh.passes = 5;
    if (rc == HPROF_OK && (rc = run_pass(&sh, &collect_ops, NULL)) == HPROF_OK &&
        sh.eager == EAGER_ON)
        rc = finish_eager(&sh);
    if (rc == HPROF_OK)
        rc = classes_resolve_all(&sh.classes, err);
    sh.stats->resolved_in_pass_1 = rc == HPROF_OK && sh.eager == EAGER_ON;
    if (rc == HPROF_OK && sh.eager != EAGER_ON)
        rc = resolve_in_pass_2(&sh);
    idfilter_settle(&sh.refs_seen); /* no more references; threads copy the state */
    int expanded = 1;
    if (rc == HPROF_OK && sh.dump_buffers.count > 0)
        rc = expand_remembered(&sh, &expanded);
    sh.passes = sh.pass + 2 + !expanded; /* for progress; may overstate by the digest */
    if (rc == HPROF_OK && !expanded)
        rc = run_pass(&sh, &expand_ops, NULL);
    sh.stats->strings_kept_by_rule = sh.exempt_strings.count;
    if (rc == HPROF_OK && sh.exempt_strings.count > 0)
        rc = run_pass(&sh, &exempt_ops, NULL);
    sh.stats->bitmap_candidates = sh.n_cand;
    if (rc == HPROF_OK && mark_unique_sizes(&sh) > 0) {
        int all_located = 0;
        sh.digest = digest_new(err);
        rc = sh.digest ? digest_located(&sh, &all_located) : err->code;
        /* pass 4 hashes what could not be located, and finds the pins when
         * some contents may be shared (unless passes 1-2 rule them out);
         * otherwise there is nothing to merge */
        if (rc == HPROF_OK && (!all_located || may_share_contents(&sh))) {
            if (!all_located || !pins_ruled_out(&sh))
                rc = run_pass(&sh, &digest_ops, NULL);
            if (rc == HPROF_OK)
                rc = decide_merges(&sh);
        }
    }
    sh.passes = sh.pass + 1;
    for (int i = 0; rc == HPROF_OK && i < 4; i++)
        if (idlist_seal(&sh.keep[i]) != HPROF_OK)
            rc = nomem(&sh);
    if (rc == HPROF_OK) {
        w = hprof_writer_new(sink, err);
        rc = w ? HPROF_OK : err->code;
    }
    if (rc == HPROF_OK && sh.opt.segment_limit)
        rc = hprof_writer_set_segment_limit(w, sh.opt.segment_limit);
    if (rc == HPROF_OK) {
        f = shrink_filter_new(&sh, hprof_writer_visitor(w));
        rc = f ? HPROF_OK : nomem(&sh);
    }
    if (rc == HPROF_OK)
        rc = shrink_write_pass(&sh, w, f);
    if (rc == HPROF_OK) {
        sh.stats->bytes_in = hprof_reader_size(r);
        sh.stats->bytes_out = hprof_sink_bytes(sink);
    }
    hprof_reader_set_progress(r, NULL, NULL);
    hprof_reader_set_strict(r, 0);
    hprof_reader_set_readahead_thread(r, read_ahead_was);
    shrink_filter_free(f);
    hprof_writer_free(w);
    release(&sh);
    return rc;
}
