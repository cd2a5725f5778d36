/*
 * plan.h - what the collect passes decided, for the write pass to apply.
 *
 * Each rewrite publishes its part when the collect passes end; from then on
 * the plan is only read (`const`), by as many write-pass workers as there
 * are threads.  What a worker moves while it reads - the cursors of the
 * sorted id lists, the verdict on the array it is looking at - is in its
 * own struct plan_cursor.
 */
#ifndef HPROF_REWRITE_PLAN_H
#define HPROF_REWRITE_PLAN_H

#include "deobfuscate.h"
#include "model.h"
#include "used_names.h"

/* strings.c: the value arrays of java.lang.String (sealed lists). */
struct strings_plan {
    struct idlist values;       /* char[], or Latin-1 byte[] */
    struct idlist utf16;        /* HotSpot byte[] with coder 1 */
};

/* bitmaps.c: pixel buffers kept, merged or dropped. */
struct bitmaps_plan {
    struct idlist natives;      /* DumpData.natives: kept as they are */
    struct idmap candidates;    /* buffers Bitmaps refer to: kept unless merged */
    struct idmap remap;         /* merged buffer id -> the buffer kept */
    struct idmap dropped;       /* merged buffers whose record goes */
    struct idmap dump_buffers;  /* DumpData.buffers arrays, whose elements are remapped */
};

/* system_heaps.c: zygote and image objects, dropped unless referred to. */
struct system_plan {
    struct idmap objects;       /* every object of those heaps */
    struct idmap standins;      /* those kept hollow: a kept object refers to them */
    struct idmap device;        /* Strings android.os.Build statics name: kept whole */
};

/* redact.c: what --redact and --redact-fields change. */
struct redact_plan {
    enum hprof_redact mode;
    int fields;                 /* --redact-fields */
    struct idmap exempt_values; /* String values a keep rule names -> exempt_entry() (redact.h) */
    struct idmap field_classes; /* class id -> 1 + its first field-table entry */
    struct idmap field_names;   /* STRING id -> 1 + an entry of the field table of that name */
    struct idmap clearing;      /* classes whose instances hold a field --redact clears */
    struct idmap blind;         /* classes whose every number goes (redact.h) */
};

struct shrink_plan {
    unsigned ids;
    enum hprof_arrays_mode arrays; /* arrays.c: the other primitive arrays */
    int drop_names;             /* used_names.c: only the names in use stay */
    struct names_plan names;
    int jvm;                    /* jvm.c: the standard form, for MAT */
    int deobfuscate;            /* deobfuscate.c (--mapping): restored names */
    struct deobf_plan deobf;
    const struct dump_model *model;
    struct strings_plan strings;
    struct bitmaps_plan bitmaps;
    struct system_plan system;
    struct redact_plan redact;
    /* hprof_shrink_one_pass(): the plan grows as the input is read, so
     * the chain has the filters these may need from the start */
    int one_pass_system, one_pass_merges;
};

/* @return HPROF_OK or HPROF_ERR_NOMEM. */
int plan_init(struct shrink_plan *p);
void plan_free(struct shrink_plan *p);

/* Why a primitive array keeps its contents, as the write pass sees it. */
enum array_keep {
    ARRAY_NOT_KEPT,         /* --arrays decides, or the system heaps */
    ARRAY_DUPLICATE,        /* a merged bitmap buffer: the record goes */
    ARRAY_STRING_VALUE,
    ARRAY_NATIVES,
    ARRAY_STRING_UTF16,
    ARRAY_BITMAP            /* a distinct bitmap buffer */
};

/* A worker's place in the plan's lists, and the verdict on the array it
 * looks at (each filter of the chain asks about the same record). */
struct plan_cursor {
    size_t values, natives, utf16;
    uint64_t array_id, array_offset;
    enum array_keep array_keep;
};

static inline int plan_in_system(const struct shrink_plan *p, uint64_t id)
{
    return p->system.objects.count > 0 && idmap_has(&p->system.objects, id);
}

static inline int plan_is_standin(const struct shrink_plan *p, uint64_t id)
{
    return idmap_has(&p->system.standins, id);
}

/* Is array `id` kept for a String or DumpData? */
static inline enum array_keep plan_kept_by_reason(const struct shrink_plan *p,
                                                  struct plan_cursor *c, uint64_t id)
{
    if (idlist_find(&p->strings.values, &c->values, id))
        return ARRAY_STRING_VALUE;
    if (idlist_find(&p->bitmaps.natives, &c->natives, id))
        return ARRAY_NATIVES;
    if (idlist_find(&p->strings.utf16, &c->utf16, id))
        return ARRAY_STRING_UTF16;
    return ARRAY_NOT_KEPT;
}

/* Whether the contents of array `a` (its first chunk) are kept, and why.
 * A PRIMITIVE_ARRAY_NODATA record has no contents to keep. */
static inline enum array_keep plan_array_keep(const struct shrink_plan *p, struct plan_cursor *c,
                                              const struct hprof_primitive_array *a)
{
    if (a->id == c->array_id && a->data_offset == c->array_offset)
        return c->array_keep;
    enum array_keep keep = ARRAY_NOT_KEPT;
    if (idmap_has(&p->bitmaps.dropped, a->id))
        keep = ARRAY_DUPLICATE;
    else if (a->tag != HPROF_PRIMITIVE_ARRAY_NODATA) {
        keep = plan_kept_by_reason(p, c, a->id);
        if (keep == ARRAY_NOT_KEPT && idmap_has(&p->bitmaps.candidates, a->id) &&
            !idmap_has(&p->bitmaps.remap, a->id))
            keep = ARRAY_BITMAP;
    }
    c->array_id = a->id;
    c->array_offset = a->data_offset;
    c->array_keep = keep;
    return keep;
}

#endif
