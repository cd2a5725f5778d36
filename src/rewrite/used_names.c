/*
 * used_names.c - the "names in use" rewrite: a collect visitor that records
 * which STRING ids the dump refers to, and a write-pass filter that drops
 * the other STRING records (see names.h for the rule and the call order).
 *
 * STACK_FRAME and START_THREAD have no callback of their own: the reader
 * hands them over as raw records, so their layouts (FORMAT.md) are read
 * here; the lengths are checked first, as the reader does for LOAD_CLASS.
 * The set is a hash set (16 bytes a slot, at most half full): the names in
 * use are a few per class and frame, and the filter looks them up in the
 * order of the STRING records, which is no order of ids.
 */
#include <inttypes.h>

#include "used_names.h"

int names_plan_init(struct names_plan *p)
{
    p->references = 0;
    return idmap_init(&p->used, 0);
}

void names_plan_free(struct names_plan *p)
{
    idmap_free(&p->used);
}

/* ---- Collect ---------------------------------------------------------------- */

static struct names_collect *collector(struct hprof_visitor *v)
{
    return (struct names_collect *)v;
}

static int use(struct names_collect *c, uint64_t id)
{
    if (id == 0)
        return HPROF_OK;
    c->plan->references++;
    if (idmap_has(&c->plan->used, id))
        return HPROF_OK;
    if (idmap_put(&c->plan->used, id, 0) != HPROF_OK)
        return hprof_error_set(c->err, HPROF_ERR_NOMEM, "names: out of memory");
    return HPROF_OK;
}

static int collect_header(struct hprof_visitor *v, const struct hprof_header *h)
{
    collector(v)->id_size = h->id_size;
    return hprof_visit_header(v->next, h);
}

static int collect_load_class(struct hprof_visitor *v, const struct hprof_load_class *lc)
{
    int rc = use(collector(v), lc->name_id);
    return rc == HPROF_OK ? hprof_visit_load_class(v->next, lc) : rc;
}

int names_of_record(const struct hprof_record *r, unsigned ids, uint64_t out[3], unsigned *n,
                    struct hprof_error *err)
{
    unsigned at[3];
    *n = 0;
    if (r->tag == HPROF_TAG_STACK_FRAME) {
        /* ID frame, ID method name, ID signature, ID source file, u4 class
         * serial, u4 line */
        at[0] = ids, at[1] = 2 * ids, at[2] = 3 * ids;
    } else if (r->tag == HPROF_TAG_START_THREAD) {
        /* u4 serial, ID thread, u4 stack serial, ID name, ID group name,
         * ID parent group name */
        at[0] = 8 + ids, at[1] = 8 + 2 * ids, at[2] = 8 + 3 * ids;
    } else {
        return HPROF_OK;
    }
    uint32_t want = 4 * ids + 4 * 2;
    if (r->length != want)
        return hprof_error_set(err, HPROF_ERR_FORMAT,
                               "offset 0x%" PRIx64 ": %s: length %" PRIu32 ", expected %" PRIu32,
                               r->offset, hprof_tag_name(r->tag), r->length, want);
    for (unsigned i = 0; i < 3; i++)
        out[i] = get_id(r->body + at[i], ids);
    *n = 3;
    return HPROF_OK;
}

static int collect_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    struct names_collect *c = collector(v);
    uint64_t names[3];
    unsigned n;
    int rc = names_of_record(r, c->id_size, names, &n, c->err);
    for (unsigned i = 0; rc == HPROF_OK && i < n; i++)
        rc = use(c, names[i]);
    return rc == HPROF_OK ? hprof_visit_record(v->next, r) : rc;
}

static int collect_heap_info(struct hprof_visitor *v, const struct hprof_heap_info *i)
{
    int rc = collector(v)->heap_infos_dropped ? HPROF_OK : use(collector(v), i->name_id);
    return rc == HPROF_OK ? hprof_visit_heap_info(v->next, i) : rc;
}

static int collect_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *cd)
{
    struct names_collect *c = collector(v);
    int rc = HPROF_OK;
    for (unsigned i = 0; rc == HPROF_OK && i < cd->n_statics; i++)
        rc = use(c, cd->statics[i].name_id);
    for (unsigned i = 0; rc == HPROF_OK && i < cd->n_fields; i++)
        rc = use(c, cd->fields[i].name_id);
    return rc == HPROF_OK ? hprof_visit_class_dump(v->next, cd) : rc;
}

static const struct hprof_visitor_ops collect_ops = {
    .header = collect_header,
    .load_class = collect_load_class,
    .record = collect_record,
    .heap_info = collect_heap_info,
    .class_dump = collect_class_dump,
};

void names_collect_init(struct names_collect *c, struct names_plan *plan, struct hprof_error *err)
{
    c->base.ops = &collect_ops;
    c->base.next = NULL;
    c->plan = plan;
    c->err = err;
    c->id_size = 4;
    c->heap_infos_dropped = 0;
}

/* ---- Filter ------------------------------------------------------------------ */

static int filter_header(struct hprof_visitor *v, const struct hprof_header *h)
{
    ((struct names_filter *)v)->id_size = h->id_size;
    return hprof_visit_header(v->next, h);
}

static int filter_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct names_filter *f = (struct names_filter *)v;
    if (!names_plan_in_use(f->plan, s->id)) {
        f->dropped.count++;
        f->dropped.bytes += s->length;
        f->dropped_record_bytes += 9 + (uint64_t)f->id_size + s->length;
        if (f->report != NULL) {
            f->report->names_dropped.count++;
            f->report->names_dropped.bytes += s->length;
        }
        return HPROF_OK;
    }
    f->kept.count++;
    f->kept.bytes += s->length;
    return hprof_visit_string(v->next, s);
}

static const struct hprof_visitor_ops filter_ops = {
    .header = filter_header,
    .string = filter_string,
};

void names_filter_init(struct names_filter *f, const struct names_plan *plan)
{
    f->base.ops = &filter_ops;
    f->base.next = NULL;
    f->plan = plan;
    f->id_size = 4;
    f->dropped = (struct hprof_count){ 0, 0 };
    f->dropped_record_bytes = 0;
    f->kept = (struct hprof_count){ 0, 0 };
    f->report = NULL;
}
