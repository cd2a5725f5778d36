/*
 * one_pass_system.c - the zygote and image heaps in one pass.
 *
 * Which of their objects stay as stand-ins is known only when the heap
 * dump ends: a kept object read later may refer to one, and the graph
 * that keeps the application's dominators (system_heaps.c) needs every
 * system object's references.  So each system object is remembered as
 * the write needs it - an instance's field values, an object array's
 * elements, a primitive array's type and length (and the contents of a
 * short char[] or byte[], which may be the text of a String kept whole) -
 * and, when the dump ends, the graph is built from them, the stand-ins
 * chosen as the multi-pass shrink chooses them, and every one goes through
 * the chain, whose system-heap filter drops or hollows it as it does in
 * the write pass.  The roots wait too: those naming a dropped object go.
 * Memory: what the system heaps hold but their primitive arrays' contents.
 *
 * The rule: a system object read after an object of the application's
 * may be named by one already written, so it stays as a stand-in.
 */
#include <stdlib.h>
#include <string.h>

#include "one_pass_private.h"

#define SHORT_TEXT 4096u            /* contents kept of system char[] and byte[] up to this */
#define ZERO_CHUNK (64u << 10)

enum { SYS_INSTANCE, SYS_OBJECT_ARRAY, SYS_PRIMITIVE_ARRAY };

struct sys_object {
    uint64_t id, class_id;          /* class_id: the element type of a primitive array */
    uint64_t offset;                /* in the input, for messages */
    size_t data;                    /* where its bytes start in `bytes` */
    uint32_t length;                /* instance: bytes of values; arrays: elements */
    uint32_t data_bytes;            /* bytes kept in `bytes` */
    uint32_t heap;
    uint8_t kind, tag;
};

struct one_pass_system {
    struct system_heaps sh;
    struct sys_object *objs;
    size_t n_objs, cap_objs;
    uint8_t *bytes;
    size_t n_bytes, cap_bytes;
    struct hprof_root *roots;
    size_t n_roots, cap_roots;
    uint64_t *seeds;                /* what roots and class dumps name */
    size_t n_seeds, cap_seeds;
    int kept_written;               /* an application object went out */
    uint8_t *zeros;
};

static int nomem(struct one_pass *op)
{
    return rewrite_nomem(&op->ctx);
}

int one_pass_system_init(struct one_pass *op)
{
    if (op->opt.keep_system_heaps)
        return HPROF_OK;
    struct one_pass_system *s = calloc(1, sizeof *s);
    if (s == NULL || system_heaps_init(&s->sh, 1) != HPROF_OK) {
        free(s);
        return nomem(op);
    }
    op->system = s;
    return HPROF_OK;
}

static void forget_objects(struct one_pass_system *s)
{
    s->n_objs = s->n_bytes = s->n_roots = s->n_seeds = 0;
    s->kept_written = 0;
}

void one_pass_system_free(struct one_pass *op)
{
    struct one_pass_system *s = op->system;
    if (s == NULL)
        return;
    /* the plan read the module's sets */
    memset(&op->plan.system, 0, sizeof op->plan.system);
    system_heaps_free(&s->sh);
    free(s->objs);
    free(s->bytes);
    free(s->roots);
    free(s->seeds);
    free(s->zeros);
    free(s);
    op->system = NULL;
}

int one_pass_system_reset(struct one_pass *op)
{
    struct one_pass_system *s = op->system;
    if (s == NULL)
        return HPROF_OK;
    memset(&op->plan.system, 0, sizeof op->plan.system);
    system_heaps_free(&s->sh);
    forget_objects(s);
    return system_heaps_init(&s->sh, 1) == HPROF_OK ? HPROF_OK : nomem(op);
}

int one_pass_system_tracking(const struct one_pass *op)
{
    return op->system != NULL && op->system->sh.objects.count > 0;
}

int one_pass_system_pending(const struct one_pass *op)
{
    return op->system != NULL && (op->system->n_objs > 0 || op->system->n_roots > 0);
}

/* ---- Remembering them --------------------------------------------------------------- */

int one_pass_system_object(struct one_pass *op, uint64_t id)
{
    struct one_pass_system *s = op->system;
    if (s == NULL)
        return HPROF_OK;
    if (!system_heaps_drops(&s->sh, op->in_heap)) {
        s->kept_written = 1;
        return HPROF_OK;
    }
    if (system_heaps_add(&s->sh, id) != HPROF_OK)
        return nomem(op);
    if (s->kept_written) { /* the rule: it may be named already */
        op->st->window_by_rule.count++;
        op->st->window_late++; /* the multi-pass shrink may drop it */
        if (system_heaps_refer(&s->sh, id) != HPROF_OK)
            return nomem(op);
    }
    return ONE_PASS_DROPPED;
}

/* A new object of `data_bytes` bytes to keep; NULL for want of memory. */
static struct sys_object *remember(struct one_pass *op, uint64_t id, const void *data,
                                   size_t data_bytes)
{
    struct one_pass_system *s = op->system;
    struct sys_object *objs = grow_array(s->objs, &s->cap_objs, s->n_objs + 1, sizeof *objs);
    if (objs == NULL)
        return NULL;
    s->objs = objs;
    uint8_t *bytes = grow_array(s->bytes, &s->cap_bytes, s->n_bytes + data_bytes, 1);
    if (bytes == NULL)
        return NULL;
    s->bytes = bytes;
    if (data_bytes > 0)
        memcpy(s->bytes + s->n_bytes, data, data_bytes);
    struct sys_object *o = &s->objs[s->n_objs++];
    *o = (struct sys_object){ .id = id, .data = s->n_bytes, .data_bytes = (uint32_t)data_bytes,
                              .heap = op->in_heap };
    s->n_bytes += data_bytes;
    return o;
}

int one_pass_system_instance(struct one_pass *op, const struct hprof_instance *o)
{
    struct sys_object *so = remember(op, o->id, o->values, o->length);
    if (so == NULL)
        return nomem(op);
    so->kind = SYS_INSTANCE;
    so->class_id = o->class_id;
    so->length = o->length;
    so->offset = o->offset;
    return HPROF_OK;
}

int one_pass_system_object_array(struct one_pass *op, const struct hprof_object_array *a)
{
    struct one_pass_system *s = op->system;
    const size_t n = (size_t)a->n * op->ctx.ids;
    if (a->first != 0) { /* the next chunk of the last one */
        struct sys_object *so = &s->objs[s->n_objs - 1];
        uint8_t *bytes = grow_array(s->bytes, &s->cap_bytes, s->n_bytes + n, 1);
        if (bytes == NULL)
            return nomem(op);
        s->bytes = bytes;
        memcpy(s->bytes + s->n_bytes, a->elements, n);
        s->n_bytes += n;
        so->data_bytes += (uint32_t)n;
        return HPROF_OK;
    }
    struct sys_object *so = remember(op, a->id, a->elements, n);
    if (so == NULL)
        return nomem(op);
    so->kind = SYS_OBJECT_ARRAY;
    so->class_id = a->class_id;
    so->length = a->count;
    so->offset = a->offset;
    return HPROF_OK;
}

int one_pass_system_array(struct one_pass *op, const struct hprof_primitive_array *a)
{
    uint64_t bytes = (uint64_t)a->count * type_size(a->type, op->ctx.ids);
    int text = (a->type == HPROF_TYPE_CHAR || a->type == HPROF_TYPE_BYTE) &&
               a->tag != HPROF_PRIMITIVE_ARRAY_NODATA && bytes <= SHORT_TEXT &&
               a->length == bytes;
    struct sys_object *so = remember(op, a->id, a->data, text ? (size_t)bytes : 0);
    if (so == NULL)
        return nomem(op);
    so->kind = SYS_PRIMITIVE_ARRAY;
    so->tag = a->tag;
    so->class_id = a->type;
    so->length = a->count;
    so->offset = a->offset;
    return HPROF_SKIP; /* the rest of its contents is not needed */
}

int one_pass_system_refer(struct one_pass *op, uint64_t ref)
{
    struct one_pass_system *s = op->system;
    if (s == NULL || s->sh.objects.count == 0)
        return HPROF_OK;
    return system_heaps_refer(&s->sh, ref) == HPROF_OK ? HPROF_OK : nomem(op);
}

static int add_seed(struct one_pass *op, uint64_t id)
{
    struct one_pass_system *s = op->system;
    if (id == 0)
        return HPROF_OK;
    uint64_t *seeds = grow_array(s->seeds, &s->cap_seeds, s->n_seeds + 1, sizeof *seeds);
    if (seeds == NULL)
        return nomem(op);
    s->seeds = seeds;
    s->seeds[s->n_seeds++] = id;
    return HPROF_OK;
}

/* What a class dump names is a seed of the graph and makes stand-ins:
 * every class dump is kept. */
int one_pass_system_class_dump(struct one_pass *op, const struct hprof_class_dump *cd)
{
    struct one_pass_system *s = op->system;
    if (s == NULL)
        return HPROF_OK;
    if (system_heaps_note_class_dump(&s->sh, cd, model_class_name_code(&op->model, cd->id),
                                     &op->model.names) != HPROF_OK ||
        system_heaps_defer_class_dump(&s->sh, cd) != HPROF_OK)
        return nomem(op);
    int rc = add_seed(op, cd->loader_id);
    for (unsigned i = 0; rc == HPROF_OK && i < cd->n_statics; i++)
        if (cd->statics[i].type == HPROF_TYPE_OBJECT)
            rc = add_seed(op, cd->statics[i].value);
    for (unsigned i = 0; rc == HPROF_OK && i < cd->n_constants; i++)
        if (cd->constants[i].type == HPROF_TYPE_OBJECT)
            rc = add_seed(op, cd->constants[i].value);
    return rc;
}

int one_pass_system_root(struct one_pass *op, const struct hprof_root *r)
{
    struct one_pass_system *s = op->system;
    if (s == NULL)
        return hprof_visit_root(op->head, r);
    struct hprof_root *roots = grow_array(s->roots, &s->cap_roots, s->n_roots + 1, sizeof *roots);
    if (roots == NULL)
        return nomem(op);
    s->roots = roots;
    s->roots[s->n_roots++] = *r;
    return add_seed(op, r->id);
}

/* ---- When the dump ends ------------------------------------------------------------------- */

static int graph_edge(void *ctx, uint32_t at, uint64_t name_id, uint64_t ref)
{
    struct one_pass *op = ctx;
    (void)at;
    (void)name_id;
    if (ref == 0 || classes_find(&op->model.classes, ref) != NULL)
        return HPROF_OK;
    return system_heaps_graph_edge(&op->system->sh, ref);
}

/* The graph of system objects, from what was remembered of them. */
static int build_graph(struct one_pass *op)
{
    struct one_pass_system *s = op->system;
    const unsigned ids = op->ctx.ids;
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && i < s->n_seeds; i++)
        rc = system_heaps_graph_seed(&s->sh, s->seeds[i]);
    for (size_t i = 0; rc == HPROF_OK && i < s->n_objs; i++) {
        const struct sys_object *so = &s->objs[i];
        const uint8_t *data = s->bytes + so->data;
        rc = system_heaps_graph_node(&s->sh, so->id);
        if (rc != HPROF_OK || so->kind == SYS_PRIMITIVE_ARRAY)
            continue;
        if (so->kind == SYS_OBJECT_ARRAY) {
            for (uint32_t e = 0; rc == HPROF_OK && e < so->data_bytes / ids; e++) {
                uint64_t ref = get_id(data + (size_t)e * ids, ids);
                rc = ref == 0 ? HPROF_OK : graph_edge(op, 0, 0, ref);
            }
            continue;
        }
        struct class_info *ci = classes_find(&op->model.classes, so->class_id);
        int ready = ci != NULL && one_pass_class_ready(op, ci, &rc);
        if (ready && ci->total_bytes == so->length)
            rc = classes_each_ref(&op->model.classes, ci, data, so->length, graph_edge, op);
    }
    return rc == HPROF_ERR_NOMEM ? nomem(op) : rc;
}

/* The device's Strings keep their values whole (and their text). */
static int claim_device_values(struct one_pass *op)
{
    struct one_pass_system *s = op->system;
    int rc = HPROF_OK;
    for (size_t i = 0; rc == HPROF_OK && i < s->n_objs; i++) {
        const struct sys_object *so = &s->objs[i];
        const struct kind_layout *k;
        if (so->kind != SYS_INSTANCE || !system_heaps_is_device(&s->sh, so->id) ||
            model_kind(&op->model, so->class_id, &k) != NAME_CLASS_STRING)
            continue;
        struct hprof_instance o = { .id = so->id, .class_id = so->class_id,
                                    .length = so->length, .values = s->bytes + so->data };
        uint64_t value = model_field_id(op->ctx.ids, &o, k->field[0]);
        if (value != 0 && id_table_put(&op->claims, value, ARRAY_STRING_VALUE) != HPROF_OK)
            return nomem(op);
        rc = redact_keep_device_text(&op->redact, value);
    }
    return rc;
}

/* A primitive array remembered, through the chain: its contents if they
 * were kept, else zeros in chunks (the filter empties or drops it unless
 * --arrays=zero keeps its size). */
static int send_array(struct one_pass *op, const struct sys_object *so)
{
    struct one_pass_system *s = op->system;
    uint64_t claim = ARRAY_NOT_KEPT;
    id_table_take(&op->claims, so->id, &claim);
    enum array_keep keep = (enum array_keep)(claim & CLAIM_KEEP);
    unsigned esize = type_size((uint8_t)so->class_id, op->ctx.ids);
    uint64_t bytes = so->tag == HPROF_PRIMITIVE_ARRAY_NODATA ? 0 : (uint64_t)so->length * esize;
    struct hprof_primitive_array a = { .offset = so->offset, .tag = so->tag, .id = so->id,
                                       .count = so->length, .type = (uint8_t)so->class_id,
                                       .data_offset = so->offset };
    if (so->data_bytes == bytes) {
        a.length = (size_t)bytes;
        a.data = s->bytes + so->data;
        return one_pass_send_array(op, &a, so->heap, keep);
    }
    if (s->zeros == NULL && (s->zeros = calloc(1, ZERO_CHUNK)) == NULL)
        return nomem(op);
    int rc = one_pass_switch_heap(op, so->heap);
    const uint64_t chunk = ZERO_CHUNK - ZERO_CHUNK % esize;
    a.data = s->zeros;
    if (rc == HPROF_OK)
        rc = one_pass_give_verdict(op, &a, keep);
    for (uint64_t at = 0; rc == HPROF_OK && (at < bytes || at == 0); at += chunk) {
        a.first = at;
        a.length = (size_t)(bytes - at < chunk ? bytes - at : chunk);
        rc = hprof_visit_primitive_array(op->head, &a);
    }
    return rc == HPROF_SKIP ? HPROF_OK : rc; /* the chain took what it needed */
}

static int send_object(struct one_pass *op, const struct sys_object *so)
{
    struct one_pass_system *s = op->system;
    const uint8_t *data = s->bytes + so->data;
    if (so->kind == SYS_INSTANCE) {
        struct hprof_instance o = { .offset = so->offset, .id = so->id,
                                    .class_id = so->class_id, .length = so->length,
                                    .values = data };
        return one_pass_send_instance(op, &o, so->heap);
    }
    if (so->kind == SYS_PRIMITIVE_ARRAY)
        return send_array(op, so);
    struct hprof_object_array a = { .offset = so->offset, .id = so->id, .count = so->length,
                                    .class_id = so->class_id, .n = so->length,
                                    .elements = data };
    int rc = one_pass_switch_heap(op, so->heap);
    rc = rc == HPROF_OK ? hprof_visit_object_array(op->head, &a) : rc;
    return rc == HPROF_SKIP ? HPROF_OK : rc;
}

int one_pass_system_flush(struct one_pass *op)
{
    struct one_pass_system *s = op->system;
    if (s == NULL || (s->n_objs == 0 && s->n_roots == 0))
        return HPROF_OK;
    int rc = system_heaps_refer_deferred(&s->sh) == HPROF_OK ? HPROF_OK : nomem(op);
    if (rc == HPROF_OK && system_heaps_wants_graph(&s->sh)) {
        rc = build_graph(op);
        if (rc == HPROF_OK && system_heaps_settle(&s->sh) != HPROF_OK)
            rc = nomem(op);
    }
    if (rc == HPROF_OK)
        rc = claim_device_values(op);
    op->plan.system.objects = s->sh.objects;
    op->plan.system.standins = s->sh.standins;
    op->plan.system.device = s->sh.device;
    for (size_t i = 0; rc == HPROF_OK && i < s->n_roots; i++)
        rc = hprof_visit_root(op->head, &s->roots[i]);
    for (size_t i = 0; rc == HPROF_OK && i < s->n_objs; i++)
        rc = send_object(op, &s->objs[i]);
    forget_objects(s);
    return rc;
}
