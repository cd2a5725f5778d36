/*
 * verify.c - strict structural check of a dump, in two passes.
 *
 * Pass 1 parses every record (the reader already rejects anything that does
 * not frame correctly), counts them, remembers each class layout and the id
 * of every dumped object, and rejects an id dumped twice; then every class's
 * superclass chain must resolve.  What "valid" means is validate.h's, the
 * same for every tool; verify keeps an exact set of object ids, which it
 * needs anyway to count dangling references.  Pass 2 checks
 * every instance's field bytes against its class layout including
 * superclasses, and counts references to ids that are not in the dump
 * (dangling) by kind of referrer.  Dangling references are reported, not
 * rejected: real runtimes write some (roots of objects outside the dump).
 *
 * The ids dumped are those of the object set and those of the class
 * layouts' index: a class id is not put in the set as well, which cost 16
 * bytes a class (a dump may hold a million classes); an object's id is
 * looked up in both, a lookup in a small index that is cached.
 */
#include <inttypes.h>
#include <string.h>

#include "reader_internal.h"
#include "validate.h"

struct verifier {
    struct hprof_visitor base;
    struct hprof_verify_report *report;
    struct hprof_error *err;
    struct classes classes;
    struct idmap objects;       /* every dumped id but the classes' */
    unsigned id_size;
    int pass;
};

static struct verifier *self(struct hprof_visitor *v)
{
    return (struct verifier *)v;
}

static inline int dumped(const struct verifier *vf, uint64_t id)
{
    return idmap_has(&vf->objects, id) || classes_find(&vf->classes, id) != NULL;
}

/* An object other than a class (classes_add() keeps those). */
static int add_object(struct verifier *vf, uint64_t id, uint64_t offset, uint8_t subtag)
{
    int rc = valid_object_id(id, offset, subtag, vf->err);
    if (rc != HPROF_OK)
        return rc;
    if (dumped(vf, id))
        return object_dumped_twice(id, offset, subtag, vf->err);
    if (idmap_put(&vf->objects, id, 0) != HPROF_OK)
        return hprof_error_set(vf->err, HPROF_ERR_NOMEM, "out of memory for the object set");
    return HPROF_OK;
}

static void check_ref(struct verifier *vf, uint64_t id, int kind)
{
    if (id != 0 && !dumped(vf, id)) {
        vf->report->dangling++;
        vf->report->dangling_by_kind[kind]++;
    }
}

static int on_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct verifier *vf = self(v);
    (void)s;
    if (vf->pass == 1) {
        vf->report->records++;
        vf->report->strings++;
    }
    return HPROF_OK;
}

static int on_load_class(struct hprof_visitor *v, const struct hprof_load_class *c)
{
    struct verifier *vf = self(v);
    (void)c;
    if (vf->pass == 1) {
        vf->report->records++;
        vf->report->load_classes++;
    }
    return HPROF_OK;
}

static int on_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    struct verifier *vf = self(v);
    if (vf->pass == 1) {
        vf->report->records++;
        if (!hprof_tag_known(r->tag))
            vf->report->unknown_records++;
    }
    return HPROF_OK;
}

static int on_heap_begin(struct hprof_visitor *v, const struct hprof_segment *s)
{
    struct verifier *vf = self(v);
    (void)s;
    if (vf->pass == 1) {
        vf->report->records++;
        vf->report->segments++;
    }
    return HPROF_OK;
}

static int on_root(struct hprof_visitor *v, const struct hprof_root *r)
{
    struct verifier *vf = self(v);
    if (vf->pass == 1)
        vf->report->roots++;
    else
        check_ref(vf, r->id, HPROF_REF_ROOT);
    return HPROF_OK;
}

static int on_heap_info(struct hprof_visitor *v, const struct hprof_heap_info *i)
{
    struct verifier *vf = self(v);
    (void)i;
    if (vf->pass == 1)
        vf->report->heap_infos++;
    return HPROF_OK;
}

static int on_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    struct verifier *vf = self(v);
    if (vf->pass == 1) {
        vf->report->class_dumps++;
        /* classes_add() rejects id 0 and a class dumped twice */
        if (idmap_has(&vf->objects, c->id))
            return object_dumped_twice(c->id, c->offset, HPROF_CLASS_DUMP, vf->err);
        return classes_add(&vf->classes, c, vf->err);
    }
    uint64_t refs[] = { c->super_id, c->loader_id, c->signers_id, c->protection_domain_id };
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++)
        check_ref(vf, refs[i], HPROF_REF_CLASS);
    for (unsigned i = 0; i < c->n_statics; i++)
        if (c->statics[i].type == HPROF_TYPE_OBJECT)
            check_ref(vf, c->statics[i].value, HPROF_REF_STATIC_FIELD);
    for (unsigned i = 0; i < c->n_constants; i++)
        if (c->constants[i].type == HPROF_TYPE_OBJECT)
            check_ref(vf, c->constants[i].value, HPROF_REF_STATIC_FIELD);
    return HPROF_OK;
}

static int count_ref(void *ctx, uint32_t at, uint64_t name_id, uint64_t ref)
{
    (void)at;
    (void)name_id;
    check_ref(ctx, ref, HPROF_REF_INSTANCE_FIELD);
    return 0;
}

static int on_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct verifier *vf = self(v);
    if (vf->pass == 1) {
        vf->report->instances++;
        return add_object(vf, o->id, o->offset, HPROF_INSTANCE_DUMP);
    }
    struct class_info *ci;
    int rc = classes_check_instance(&vf->classes, o, &ci, vf->err);
    if (rc != HPROF_OK)
        return rc;
    classes_each_ref(&vf->classes, ci, o->values, o->length, count_ref, vf);
    return HPROF_OK;
}

static int on_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct verifier *vf = self(v);
    if (vf->pass == 1) {
        if (a->first != 0)
            return HPROF_SKIP;
        vf->report->object_arrays++;
        int rc = add_object(vf, a->id, a->offset, HPROF_OBJECT_ARRAY_DUMP);
        return rc == HPROF_OK ? HPROF_SKIP : rc;
    }
    if (a->first == 0)
        check_ref(vf, a->class_id, HPROF_REF_CLASS);
    for (uint32_t i = 0; i < a->n; i++)
        check_ref(vf, get_id(a->elements + (size_t)i * vf->id_size, vf->id_size),
                  HPROF_REF_ARRAY_ELEMENT);
    return HPROF_OK;
}

static int on_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct verifier *vf = self(v);
    if (vf->pass == 1) {
        vf->report->primitive_arrays++;
        vf->report->primitive_bytes += a->tag == HPROF_PRIMITIVE_ARRAY_NODATA
            ? 0 : (uint64_t)a->count * type_size(a->type, vf->id_size);
        int rc = add_object(vf, a->id, a->offset, a->tag);
        if (rc != HPROF_OK)
            return rc;
    }
    return HPROF_SKIP;
}

static const struct hprof_visitor_ops verifier_ops = {
    .string = on_string,
    .load_class = on_load_class,
    .record = on_record,
    .heap_begin = on_heap_begin,
    .root = on_root,
    .heap_info = on_heap_info,
    .class_dump = on_class_dump,
    .instance = on_instance,
    .object_array = on_object_array,
    .primitive_array = on_primitive_array,
};

int hprof_verify(struct hprof_reader *r, struct hprof_verify_report *report,
                 struct hprof_error *err)
{
    struct verifier vf = { .base = { &verifier_ops, NULL }, .report = report, .err = err };
    int rc;
    memset(report, 0, sizeof *report);
    vf.id_size = hprof_reader_header(r)->id_size;
    if (classes_init(&vf.classes, vf.id_size) != HPROF_OK ||
        idmap_init(&vf.objects, 0) != HPROF_OK) {
        rc = hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
        goto out;
    }
    hprof_reader_set_strict(r, 1);
    reader_set_one_dump(r, 1); /* object ids are unique within one heap dump only */
    vf.pass = 1;
    if ((rc = hprof_reader_run(r, &vf.base)) != HPROF_OK)
        goto out;
    /* Every class's chain, instances or not: what the other tools need. */
    if ((rc = classes_resolve_all(&vf.classes, err)) != HPROF_OK)
        goto out;
    vf.pass = 2;
    rc = hprof_reader_run(r, &vf.base);
out:
    hprof_reader_set_strict(r, 0);
    reader_set_one_dump(r, 0);
    classes_free(&vf.classes);
    idmap_free(&vf.objects);
    return rc;
}
