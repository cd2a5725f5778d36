/*
 * jvm.c - the --jvm filter: Android-only records written in the standard
 * 1.0.2 form, the mapping AOSP hprof-conv applies (see jvm.h for the table
 * and where the filter goes).  Each callback changes one kind of record and
 * forwards a modified copy; the records the filter does not name pass by
 * untouched (their slots are NULL).
 */
#include <string.h>

#include "jvm.h"
#include "visitor_private.h"

static const char android_version[] = "JAVA PROFILE 1.0.3";
static const char standard_version[] = "JAVA PROFILE 1.0.2";

static struct jvm_filter *self(struct hprof_visitor *v)
{
    return (struct jvm_filter *)v;
}

uint8_t jvm_root_kind(uint8_t tag)
{
    switch (tag) {
    case HPROF_ROOT_INTERNED_STRING: case HPROF_ROOT_FINALIZING: case HPROF_ROOT_DEBUGGER:
    case HPROF_ROOT_REFERENCE_CLEANUP: case HPROF_ROOT_VM_INTERNAL: case HPROF_ROOT_JNI_MONITOR:
    case HPROF_UNREACHABLE:
        return HPROF_ROOT_UNKNOWN;
    default:
        return tag;
    }
}

static int on_header(struct hprof_visitor *v, const struct hprof_header *h)
{
    if (strcmp(h->version, android_version) != 0)
        return hprof_visit_header(v->next, h);
    struct hprof_header standard = *h;
    memcpy(standard.version, standard_version, sizeof standard_version);
    self(v)->counts.header_converted = 1;
    return hprof_visit_header(v->next, &standard);
}

/* ROOT_UNKNOWN is an id alone: a JNI monitor's thread and frame go. */
static int on_root(struct hprof_visitor *v, const struct hprof_root *r)
{
    uint8_t kind = jvm_root_kind(r->tag);
    if (kind == r->tag)
        return hprof_visit_root(v->next, r);
    struct hprof_root standard = { .offset = r->offset, .tag = kind, .id = r->id };
    self(v)->counts.roots_converted++;
    if (self(v)->report != NULL)
        self(v)->report->jvm_roots_converted++;
    return hprof_visit_root(v->next, &standard);
}

static int on_heap_info(struct hprof_visitor *v, const struct hprof_heap_info *i)
{
    (void)i;
    self(v)->counts.heap_infos_dropped++;
    if (self(v)->report != NULL)
        self(v)->report->jvm_heap_infos_dropped++;
    return HPROF_OK;
}

static int on_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    if (a->tag != HPROF_PRIMITIVE_ARRAY_NODATA)
        return hprof_visit_primitive_array(v->next, a);
    struct hprof_primitive_array empty = primitive_array_emptied(a);
    self(v)->counts.nodata_arrays++;
    if (self(v)->report != NULL)
        self(v)->report->jvm_nodata_arrays++;
    return hprof_visit_primitive_array(v->next, &empty);
}

static const struct hprof_visitor_ops jvm_ops = {
    .header = on_header,
    .root = on_root,
    .heap_info = on_heap_info,
    .primitive_array = on_primitive_array,
};

void jvm_filter_init(struct jvm_filter *f)
{
    memset(f, 0, sizeof *f);
    f->base.ops = &jvm_ops;
}
