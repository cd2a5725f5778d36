/*
 * collect.c - the collect passes (see collect.h): every record of pass 1,
 * and every kept object of the resolution, goes to the rewrites that need
 * it, in one fixed order.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "collect.h"
#include "layout.h"

/* Bounds the offsets put aside (8 bytes each): past it, pass 2 runs. */
#define MAX_DEFERRED (1u << 20)

static int nomem(const struct collect *c)
{
    return rewrite_nomem(c->ctx);
}

static const struct hprof_visitor_ops pass_1_ops, resolve_ops, graph_ops;

void collect_init(struct collect *c, const struct rewrite_ctx *ctx, struct rewrites *rw,
                  struct objcheck *ids_seen)
{
    *c = (struct collect){ .ctx = ctx, .rw = rw, .ids_seen = ids_seen };
    c->pass_1.ops = &pass_1_ops;
    c->resolve.ops = &resolve_ops;
    c->graph.ops = &graph_ops;
    idlist_init(&c->deferred);
}

void collect_free(struct collect *c)
{
    idlist_free(&c->deferred);
}

struct hprof_visitor *collect_pass_1(struct collect *c)
{
    return &c->pass_1;
}

struct hprof_visitor *collect_resolve(struct collect *c)
{
    return &c->resolve;
}

static struct collect *from_pass_1(struct hprof_visitor *v)
{
    return (struct collect *)((char *)v - offsetof(struct collect, pass_1));
}

static struct collect *from_resolve(struct hprof_visitor *v)
{
    return (struct collect *)((char *)v - offsetof(struct collect, resolve));
}

static void abandon_eager(struct collect *c)
{
    c->eager = EAGER_ABANDONED;
}

/* ---- Resolving a kept object ------------------------------------------------- */

/* A walk over an instance's reference fields, which skips a Bitmap's own
 * buffer slot where pins are concerned. */
struct field_walk {
    struct rewrites *rw;
    int64_t bitmap_slot;    /* offset of mBuffer in this instance, or -1 */
};

/* A kept instance's reference may make a stand-in, and is one that the
 * digest pass would pin with. */
static int walk_field(void *ctx, uint32_t at, uint64_t name_id, uint64_t ref)
{
    struct field_walk *w = ctx;
    (void)name_id;
    int rc = (int64_t)at != w->bitmap_slot ? bitmaps_track_ref(&w->rw->bitmaps, ref) : HPROF_OK;
    if (rc == HPROF_OK && system_heaps_refer(&w->rw->system, ref) != HPROF_OK)
        rc = HPROF_ERR_NOMEM;
    return rc;
}

/* Every reference of a kept instance, as walk_field() takes them: from its
 * class's list when it has one, in a loop of its own (a call per reference
 * through classes_each_ref(), and one more to system_heaps_refer() in a
 * dump without system objects, cost more than the tracking itself). */
static int walk_refs(struct collect *c, const struct hprof_instance *o, struct class_info *ci,
                     struct field_walk *walk)
{
    struct rewrites *rw = c->rw;
    const struct class_ref *refs;
    uint32_t n;
    if (!classes_listed_refs(&rw->model.classes, ci, &refs, &n))
        return classes_each_ref(&rw->model.classes, ci, o->values, o->length, walk_field, walk);
    const unsigned ids = c->ctx->ids;
    const int refer = rw->system.objects.count > 0;
    int rc = HPROF_OK;
    for (uint32_t i = 0; rc == HPROF_OK && i < n && refs[i].offset + ids <= o->length; i++) {
        uint64_t ref = get_id(o->values + refs[i].offset, ids);
        if ((int64_t)refs[i].offset != walk->bitmap_slot)
            rc = bitmaps_track_ref(&rw->bitmaps, ref);
        if (rc == HPROF_OK && refer && system_heaps_refer(&rw->system, ref) != HPROF_OK)
            rc = HPROF_ERR_NOMEM;
    }
    return rc;
}

/* Instance `o` of class `ci`, whose layout it has been checked against,
 * known not to be a system object. */
static int resolve_kept(struct collect *c, const struct hprof_instance *o, struct class_info *ci)
{
    struct rewrites *rw = c->rw;
    const struct kind_layout *k;
    struct field_walk walk = { rw, -1 };
    int rc = redact_resolve_instance(&rw->redact, o);
    int kind = rc == HPROF_OK ? model_kind(&rw->model, o->class_id, &k) : NAME_NONE;
    if (kind == NAME_CLASS_STRING &&
        strings_resolve_instance(&rw->strings, k, o, c->ctx->ids) != HPROF_OK)
        return nomem(c);
    if (kind == NAME_CLASS_BITMAP || kind == NAME_CLASS_DUMP_DATA)
        rc = bitmaps_resolve_instance(&rw->bitmaps, kind, k, o, &walk.bitmap_slot);
    if (rc != HPROF_OK || (rw->system.objects.count == 0 && !bitmaps_tracking(&rw->bitmaps)))
        return rc;
    rc = walk_refs(c, o, ci, &walk);
    return rc == HPROF_ERR_NOMEM ? nomem(c) : rc;
}

/* The same for any instance. */
static int resolve_checked(struct collect *c, const struct hprof_instance *o, struct class_info *ci)
{
    if (system_heaps_has(&c->rw->system, o->id))
        return HPROF_OK; /* dropped or hollow: what it refers to does not matter */
    return resolve_kept(c, o, ci);
}

static int resolve_object_array(struct collect *c, const struct hprof_object_array *a)
{
    struct rewrites *rw = c->rw;
    const unsigned ids = c->ctx->ids;
    const struct kind_layout *k;
    if (system_heaps_has(&rw->system, a->id))
        return HPROF_SKIP;
    int byte_arrays = model_kind(&rw->model, a->class_id, &k) == NAME_CLASS_BYTE_ARRAYS;
    /* a byte[][]'s elements are remembered instead: a DumpData.buffers one
     * does not pin them, and its holder may come later */
    int track = bitmaps_tracking(&rw->bitmaps) && !byte_arrays;
    int refer = rw->system.objects.count > 0;
    if (!byte_arrays && !refer && !track)
        return HPROF_SKIP;
    int rc = byte_arrays ? bitmaps_resolve_byte_arrays(&rw->bitmaps, a) : HPROF_OK;
    for (uint32_t i = 0; rc == HPROF_OK && (refer || track) && i < a->n; i++) {
        uint64_t ref = get_id(a->elements + (size_t)i * ids, ids);
        rc = track ? bitmaps_track_ref(&rw->bitmaps, ref) : HPROF_OK;
        if (rc == HPROF_OK && refer && system_heaps_refer(&rw->system, ref) != HPROF_OK)
            rc = nomem(c);
    }
    return rc;
}

/* ---- Pass 1 ----------------------------------------------------------------- */

/* Object `id`, dumped at `offset` by a sub-record `subtag`, into the
 * duplicate check (see collect_init()). */
static inline int add_object_id(struct collect *c, uint64_t id, uint64_t offset, uint8_t subtag)
{
    return objcheck_add_fast(c->ids_seen, id, offset, subtag, c->ctx->err);
}

static int collect_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct collect *c = from_pass_1(v);
    struct rewrites *rw = c->rw;
    int code = model_note_string(&rw->model, s);
    int redaction =
        code < 0 || !redact_notes_strings(&rw->redact) ? 0 : redact_note_string(&rw->redact, s);
    if (code < 0)
        return nomem(c);
    if (redaction < 0)
        return redaction;
    if (c->eager == EAGER_ON && (code != NAME_NONE || redaction))
        abandon_eager(c); /* a name that could change a kind already decided */
    bitmaps_note_name(&rw->bitmaps);
    return HPROF_OK;
}

static int collect_load_class(struct hprof_visitor *v, const struct hprof_load_class *lc)
{
    struct collect *c = from_pass_1(v);
    if (c->eager == EAGER_ON)
        abandon_eager(c);
    return model_note_load_class(&c->rw->model, lc) == HPROF_OK ? HPROF_OK : nomem(c);
}

static int collect_heap_begin(struct hprof_visitor *v, const struct hprof_segment *s)
{
    struct collect *c = from_pass_1(v);
    (void)s;
    c->heap = HPROF_HEAP_DEFAULT; /* readers start each segment in the default heap */
    return bitmaps_heap_begin(&c->rw->bitmaps);
}

static int collect_root(struct hprof_visitor *v, const struct hprof_root *r)
{
    bitmaps_note_root(&from_pass_1(v)->rw->bitmaps, r->id);
    return HPROF_OK;
}

static int collect_heap_info(struct hprof_visitor *v, const struct hprof_heap_info *i)
{
    from_pass_1(v)->heap = i->heap_id;
    return HPROF_OK;
}

/* Eager resolution looks into an instance only once its class's layout is
 * complete (the whole superclass chain dumped); the first time it is, the
 * class's kind and redaction fields are worked out.  While eager, a class
 * is `resolved` exactly when that has been done.
 * @return 1 when `ci` is ready, 0 when not yet (or on error, in *rc). */
static int eager_prepare(struct collect *c, struct class_info *ci, int *rc)
{
    struct hprof_error not_yet = { 0 };
    if (classes_resolve(&c->rw->model.classes, ci, &not_yet) != HPROF_OK)
        return 0;
    *rc = model_resolve_kind(&c->rw->model, ci, c->ctx->err);
    if (*rc == HPROF_OK)
        *rc = redact_resolve_class(&c->rw->redact, ci);
    return *rc == HPROF_OK;
}

static inline int eager_ready(struct collect *c, struct class_info *ci, int *rc)
{
    *rc = HPROF_OK;
    return ci->resolved || eager_prepare(c, ci, rc);
}

static int collect_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *cd)
{
    struct collect *c = from_pass_1(v);
    struct rewrites *rw = c->rw;
    int rc = add_object_id(c, cd->id, cd->offset, HPROF_CLASS_DUMP);
    if (rc != HPROF_OK)
        return rc;
    rc = classes_add(&rw->model.classes, cd, c->ctx->err);
    bitmaps_note_class_dump(&rw->bitmaps, cd);
    if (rc == HPROF_OK &&
        system_heaps_note_class_dump(&rw->system, cd, model_class_name_code(&rw->model, cd->id),
                                     &rw->model.names))
        return nomem(c);
    if (rc != HPROF_OK || c->eager == EAGER_ABANDONED)
        return rc;
    /* a kept class dump's references decide stand-ins, which need every
     * system object known: they are looked at when pass 1 ends */
    if (system_heaps_defer_class_dump(&rw->system, cd) != HPROF_OK)
        return nomem(c);
    if (c->eager == EAGER_ON)
        eager_ready(c, classes_find(&rw->model.classes, cd->id), &rc);
    return rc;
}

/* The first object: from here on pass 1 resolves what it can. */
static int start_eager(struct collect *c)
{
    struct classes *classes = &c->rw->model.classes;
    int rc = HPROF_OK;
    c->eager = EAGER_ON;
    for (size_t i = 0; rc == HPROF_OK && i < classes->n_info; i++)
        eager_ready(c, &classes->info[i], &rc);
    return rc;
}

/* Objects of the zygote and image heaps are dropped unless asked not to.
 * A kept object that refers to one makes it a stand-in, so every such
 * object must be known before a kept object's references are looked at:
 * one that comes after a kept object ends eager resolution.  Inline in
 * each callback, start_eager() out of line: called for every object, on
 * its own it needed a frame for start_eager()'s loop, half its cost. */
static inline int note_heap(struct collect *c, uint64_t id)
{
    struct system_heaps *system = &c->rw->system;
    if (system_heaps_drops(system, c->heap)) {
        if (c->kept_object_seen)
            abandon_eager(c);
        if (system_heaps_add(system, id) != HPROF_OK)
            return nomem(c);
    } else {
        c->kept_object_seen = 1;
    }
    return c->eager == EAGER_WAITING ? start_eager(c) : HPROF_OK;
}

static int collect_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct collect *c = from_pass_1(v);
    int rc = add_object_id(c, o->id, o->offset, HPROF_INSTANCE_DUMP);
    if (rc == HPROF_OK)
        rc = note_heap(c, o->id);
    /* a system object is dropped or hollowed, but checked as any other:
     * its class must be dumped and fit it (what hprof-verify checks), or
     * its stand-in would name a class the output lacks */
    if (rc != HPROF_OK || c->eager != EAGER_ON)
        return rc;
    struct class_info *ci = classes_find(&c->rw->model.classes, o->class_id);
    if (ci == NULL || !eager_ready(c, ci, &rc)) {
        if (rc != HPROF_OK)
            return rc;
        if (c->deferred.n >= MAX_DEFERRED)
            abandon_eager(c);
        else if (idlist_add(&c->deferred, o->offset) != HPROF_OK)
            return nomem(c);
        return HPROF_OK;
    }
    if (ci->total_bytes != o->length) { /* what classes_check_instance() checks */
        abandon_eager(c); /* pass 2 will say what is wrong */
        return HPROF_OK;
    }
    return resolve_checked(c, o, ci);
}

static int collect_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct collect *c = from_pass_1(v);
    int rc = HPROF_OK;
    if (a->first == 0 &&
        (rc = add_object_id(c, a->id, a->offset, HPROF_OBJECT_ARRAY_DUMP)) == HPROF_OK)
        rc = note_heap(c, a->id);
    if (rc != HPROF_OK)
        return rc;
    return c->eager == EAGER_ON ? resolve_object_array(c, a) : HPROF_SKIP;
}

static int collect_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct collect *c = from_pass_1(v);
    int rc = add_object_id(c, a->id, a->offset, a->tag); /* the first chunk: the rest is skipped */
    if (rc == HPROF_OK)
        rc = note_heap(c, a->id);
    if (rc == HPROF_OK)
        rc = bitmaps_note_primitive_array(&c->rw->bitmaps, a);
    if (rc == HPROF_OK && c->eager == EAGER_ON)
        rc = bitmaps_locate(&c->rw->bitmaps, a);
    return rc == HPROF_OK ? HPROF_SKIP : rc;
}

static const struct hprof_visitor_ops pass_1_ops = {
    .string = collect_string,
    .load_class = collect_load_class,
    .heap_begin = collect_heap_begin,
    .root = collect_root,
    .heap_info = collect_heap_info,
    .class_dump = collect_class_dump,
    .instance = collect_instance,
    .object_array = collect_object_array,
    .primitive_array = collect_primitive_array,
};

/* ---- The end of an eager pass 1 ------------------------------------------------ */

/* The instances an eager pass 1 put aside, read back in file order through
 * one window (they are a small share of the input, often close together). */
struct deferred_window {
    uint8_t *buf;
    size_t cap, len;
    uint64_t start;
};

static int window_at(struct collect *c, struct deferred_window *w, uint64_t at, size_t n,
                     const uint8_t **p)
{
    struct hprof_reader *reader = c->ctx->reader;
    uint64_t size = hprof_reader_size(reader);
    if (at < w->start || at + n > w->start + w->len) {
        size_t want = n > HPROF_READ_BUFFER ? n : HPROF_READ_BUFFER;
        if (at > size || n > size - at)
            return hprof_error_set(c->ctx->err, HPROF_ERR_IO,
                                   "offset 0x%" PRIx64 ": INSTANCE_DUMP: input changed while "
                                   "reading", at);
        if (want > size - at)
            want = (size_t)(size - at);
        if (want > w->cap) {
            uint8_t *grown = realloc(w->buf, want);
            if (grown == NULL)
                return nomem(c);
            w->buf = grown;
            w->cap = want;
        }
        int rc = hprof_reader_pread(reader, at, w->buf, want);
        if (rc != HPROF_OK)
            return rc;
        w->start = at;
        w->len = want;
    }
    *p = w->buf + (at - w->start);
    return HPROF_OK;
}

static int resolve_deferred(struct collect *c)
{
    struct deferred_window w = { 0 };
    const unsigned ids = c->ctx->ids;
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && c->eager == EAGER_ON && i < c->deferred.n; i++) {
        struct hprof_instance o = { .offset = c->deferred.ids[i] };
        struct hprof_error not_yet = { 0 };
        struct class_info *ci;
        const uint8_t *p;
        const size_t head = 1 + instance_head_size(ids);
        if ((rc = window_at(c, &w, o.offset, head, &p)) != HPROF_OK)
            break;
        instance_head_get(p + 1, ids, &o);
        if (p[0] != HPROF_INSTANCE_DUMP || o.length > HPROF_MAX_RECORD) {
            rc = hprof_error_set(c->ctx->err, HPROF_ERR_IO, "offset 0x%" PRIx64 ": INSTANCE_DUMP: "
                                 "input changed while reading", o.offset);
            break;
        }
        if ((rc = window_at(c, &w, o.offset, head + o.length, &p)) != HPROF_OK)
            break;
        o.values = p + head;
        if (classes_check_instance(&c->rw->model.classes, &o, &ci, &not_yet) != HPROF_OK)
            abandon_eager(c); /* pass 2 will say what is wrong */
        else
            rc = resolve_checked(c, &o, ci);
    }
    free(w.buf);
    return rc;
}

/* Classes still unfinished, the instances put aside for them, then the
 * class dumps' references (every system object is known now).  What is
 * wrong with the input is left to pass 2 to report. */
static int finish_eager(struct collect *c)
{
    struct classes *classes = &c->rw->model.classes;
    int rc = HPROF_OK;
    for (size_t i = 0; i < classes->n_info; i++)
        if (!eager_ready(c, &classes->info[i], &rc)) {
            if (rc == HPROF_OK)
                abandon_eager(c);
            return rc;
        }
    rc = resolve_deferred(c);
    if (rc == HPROF_OK && c->eager == EAGER_ON &&
        system_heaps_refer_deferred(&c->rw->system) != HPROF_OK)
        rc = nomem(c);
    return rc;
}

int collect_finish_pass_1(struct collect *c, int *resolved)
{
    int rc = c->eager == EAGER_ON ? finish_eager(c) : HPROF_OK;
    if (rc == HPROF_OK)
        rc = classes_resolve_all(&c->rw->model.classes, c->ctx->err);
    *resolved = rc == HPROF_OK && c->eager == EAGER_ON;
    return rc;
}

/* ---- Pass 2: resolve --------------------------------------------------------------- */

int collect_prepare_resolve(struct collect *c)
{
    struct rewrites *rw = c->rw;
    /* drop what pass 1 resolved before it had to stop */
    strings_forget(&rw->strings);
    int rc = model_forget_kinds(&rw->model, c->ctx->err);
    if (rc == HPROF_OK)
        rc = bitmaps_forget(&rw->bitmaps);
    if (rc == HPROF_OK)
        rc = redact_forget(&rw->redact);
    if (rc == HPROF_OK && system_heaps_forget(&rw->system) != HPROF_OK)
        rc = nomem(c);
    if (rc == HPROF_OK)
        rc = model_resolve_kinds(&rw->model, c->ctx->err);
    if (rc == HPROF_OK)
        rc = redact_resolve_classes(&rw->redact);
    return rc;
}

static int resolve_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *cd)
{
    struct collect *c = from_resolve(v);
    struct rewrites *rw = c->rw;
    /* pass 1 met android.os.Build before its names when they come after
     * the heap: now that every name is known, its device texts are found */
    if (system_heaps_note_class_dump(&rw->system, cd, model_class_name_code(&rw->model, cd->id),
                                     &rw->model.names) != HPROF_OK)
        return nomem(c);
    return system_heaps_refer_class_dump(&rw->system, cd) == HPROF_OK ? HPROF_OK : nomem(c);
}

static int resolve_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct collect *c = from_resolve(v);
    struct class_info *ci;
    int rc = classes_check_instance(&c->rw->model.classes, o, &ci, c->ctx->err);
    return rc == HPROF_OK ? resolve_checked(c, o, ci) : rc;
}

static int resolve_object_array_visit(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    return resolve_object_array(from_resolve(v), a);
}

static int resolve_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct bitmaps *b = &from_resolve(v)->rw->bitmaps;
    bitmaps_note_recent(b, a);
    int rc = bitmaps_locate(b, a);
    return rc == HPROF_OK ? HPROF_SKIP : rc;
}

static const struct hprof_visitor_ops resolve_ops = {
    .class_dump = resolve_class_dump,
    .instance = resolve_instance,
    .object_array = resolve_object_array_visit,
    .primitive_array = resolve_primitive_array,
};

/* ---- The graph pass ------------------------------------------------------------------ */

static struct collect *from_graph(struct hprof_visitor *v)
{
    return (struct collect *)((char *)v - offsetof(struct collect, graph));
}

int collect_wants_graph(const struct collect *c)
{
    const struct system_heaps *s = &c->rw->system;
    return system_heaps_wants_graph(s) ||
           (s->device.count > 0 && c->ctx->opt->redact != HPROF_REDACT_NONE);
}

struct hprof_visitor *collect_graph(struct collect *c)
{
    return &c->graph;
}

int collect_finish_graph(struct collect *c)
{
    struct system_heaps *s = &c->rw->system;
    return system_heaps_wants_graph(s) && system_heaps_settle(s) != HPROF_OK ? nomem(c) : HPROF_OK;
}

static int graph_root(struct hprof_visitor *v, const struct hprof_root *r)
{
    struct collect *c = from_graph(v);
    return system_heaps_graph_seed(&c->rw->system, r->id) == HPROF_OK ? HPROF_OK : nomem(c);
}

/* A reference a system object holds: to another, or out of the system
 * heaps (a class is neither: class dumps are all kept). */
static int graph_edge(struct collect *c, uint64_t ref)
{
    if (ref == 0 || classes_find(&c->rw->model.classes, ref) != NULL)
        return HPROF_OK;
    return system_heaps_graph_edge(&c->rw->system, ref) == HPROF_OK ? HPROF_OK : nomem(c);
}

static int seed_class_ref(struct collect *c, uint64_t ref)
{
    return system_heaps_graph_seed(&c->rw->system, ref) == HPROF_OK ? HPROF_OK : nomem(c);
}

/* Class dumps are roots to the analyzers (their statics hold what they
 * name), as the stand-ins' references already treat them. */
static int graph_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *cd)
{
    struct collect *c = from_graph(v);
    int rc = seed_class_ref(c, cd->loader_id);
    for (unsigned i = 0; rc == HPROF_OK && i < cd->n_statics; i++)
        if (cd->statics[i].type == HPROF_TYPE_OBJECT)
            rc = seed_class_ref(c, cd->statics[i].value);
    for (unsigned i = 0; rc == HPROF_OK && i < cd->n_constants; i++)
        if (cd->constants[i].type == HPROF_TYPE_OBJECT)
            rc = seed_class_ref(c, cd->constants[i].value);
    return rc;
}

static int graph_field(void *ctx, uint32_t at, uint64_t name_id, uint64_t ref)
{
    (void)at;
    (void)name_id;
    return graph_edge(ctx, ref);
}

/* A String that android.os.Build names keeps its value, unredacted. */
static int keep_device_string(struct collect *c, const struct hprof_instance *o)
{
    struct rewrites *rw = c->rw;
    const struct kind_layout *k;
    if (model_kind(&rw->model, o->class_id, &k) != NAME_CLASS_STRING)
        return HPROF_OK;
    if (strings_resolve_instance(&rw->strings, k, o, c->ctx->ids) != HPROF_OK)
        return nomem(c);
    return redact_keep_device_text(&rw->redact, model_field_id(c->ctx->ids, o, k->field[0]));
}

static int graph_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct collect *c = from_graph(v);
    struct system_heaps *s = &c->rw->system;
    int rc = system_heaps_is_device(s, o->id) ? keep_device_string(c, o) : HPROF_OK;
    if (rc != HPROF_OK || !system_heaps_wants_graph(s) || !system_heaps_has(s, o->id))
        return rc;
    if (system_heaps_graph_node(s, o->id) != HPROF_OK)
        return nomem(c);
    struct class_info *ci = classes_find(&c->rw->model.classes, o->class_id);
    return ci ? classes_each_ref(&c->rw->model.classes, ci, o->values, o->length, graph_field, c)
              : HPROF_OK;
}

static int graph_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct collect *c = from_graph(v);
    struct system_heaps *s = &c->rw->system;
    if (!system_heaps_wants_graph(s) || !system_heaps_has(s, a->id))
        return HPROF_SKIP;
    if (a->first == 0 && system_heaps_graph_node(s, a->id) != HPROF_OK)
        return nomem(c);
    int rc = HPROF_OK;
    for (uint32_t i = 0; rc == HPROF_OK && i < a->n; i++)
        rc = graph_edge(c, get_id(a->elements + (size_t)i * c->ctx->ids, c->ctx->ids));
    return rc;
}

/* Primitive arrays are nodes without references: a stand-in may be one. */
static int graph_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct collect *c = from_graph(v);
    struct system_heaps *s = &c->rw->system;
    if (system_heaps_wants_graph(s) && system_heaps_has(s, a->id) &&
        system_heaps_graph_node(s, a->id) != HPROF_OK)
        return nomem(c);
    return HPROF_SKIP;
}

static const struct hprof_visitor_ops graph_ops = {
    .root = graph_root,
    .class_dump = graph_class_dump,
    .instance = graph_instance,
    .object_array = graph_object_array,
    .primitive_array = graph_primitive_array,
};
