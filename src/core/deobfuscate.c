/*
 * deobfuscate.c - the --mapping rewrite (see deobfuscate.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "deobfuscate.h"
#include "visitor_private.h"

#define MAX_NAME (64u << 10)    /* a STRING longer than this names nothing */

static int nomem(struct hprof_error *err)
{
    return hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
}

/* ---- Texts: "u32 length, bytes" records in one buffer -------------------- */

struct texts {
    char *buf;
    size_t len, cap;
};

static int text_add(struct texts *t, const void *s, uint32_t len, uint32_t *at)
{
    char *grown = grow_array(t->buf, &t->cap, t->len + 4 + len, 1);
    if (grown == NULL)
        return HPROF_ERR_NOMEM;
    t->buf = grown;
    *at = (uint32_t)t->len;
    memcpy(t->buf + t->len, &len, 4);
    memcpy(t->buf + t->len + 4, s, len);
    t->len += 4 + (size_t)len;
    return HPROF_OK;
}

static const char *text_at(const char *buf, uint32_t at, uint32_t *len)
{
    memcpy(len, buf + at, 4);
    return buf + at + 4;
}

/* ---- The plan -------------------------------------------------------------- */

int deobf_plan_init(struct deobf_plan *p)
{
    memset(p, 0, sizeof *p);
    if (idmap_init(&p->class_names, 1) || idmap_init(&p->field_classes, 1) ||
        idmap_init(&p->frames, 1))
        return HPROF_ERR_NOMEM;
    return HPROF_OK;
}

void deobf_plan_free(struct deobf_plan *p)
{
    idmap_free(&p->class_names);
    idmap_free(&p->field_classes);
    idmap_free(&p->frames);
    free(p->renames);
    free(p->string_at);
    free(p->text);
    memset(p, 0, sizeof *p);
}

static const char *plan_string(const struct deobf_plan *p, uint32_t k, uint32_t *len)
{
    return text_at(p->text, p->string_at[k], len);
}

const char *deobf_plan_text(const struct deobf_plan *p, uint64_t id, uint32_t *len)
{
    if (p == NULL || p->n_strings == 0 || id < p->base || id - p->base >= p->n_strings)
        return NULL;
    return plan_string(p, (uint32_t)(id - p->base), len);
}

/* ---- Pass 0 ---------------------------------------------------------------- */

struct deobf_collect {
    struct hprof_visitor base;
    const struct hprof_mapping *m;
    struct deobf_plan *plan;
    struct hprof_error *err;
    unsigned ids;
    char separator;             /* in class names without a package: the dump's */
    uint64_t max_id;            /* of every STRING */
    struct idmap names;         /* STRING id -> offset in `texts` (maybe obfuscated) */
    struct texts texts;
    struct idmap class_name;    /* class id -> STRING id (LOAD_CLASS) */
    struct idmap class_of_serial; /* class serial | 1 << 63 -> class id */
    struct idmap new_names;     /* hash of a restored name -> k + 1 (first of that hash) */
    char *scratch;              /* a restored class name */
    size_t scratch_cap;
};

static struct deobf_collect *collector(struct hprof_visitor *v)
{
    return (struct deobf_collect *)v;
}

static uint64_t hash_text(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h | 1;
}

/* Append restored name `s` to the plan; its index in *k. */
static int plan_add_string(struct deobf_plan *p, const char *s, uint32_t len, uint32_t *k)
{
    struct texts t = { p->text, p->text_len, p->text_cap };
    uint32_t off;
    uint32_t *grown = grow_array(p->string_at, &p->cap_strings, p->n_strings + 1, sizeof *grown);
    if (grown == NULL)
        return HPROF_ERR_NOMEM;
    p->string_at = grown;
    if (text_add(&t, s, len, &off) != HPROF_OK)
        return HPROF_ERR_NOMEM;
    p->text = t.buf;
    p->text_len = t.len;
    p->text_cap = t.cap;
    p->string_at[p->n_strings] = off;
    *k = (uint32_t)p->n_strings++;
    return HPROF_OK;
}

/* The index k of restored name `s`, added if new (probing past hashes
 * that another text holds).  @return HPROF_OK or HPROF_ERR_NOMEM. */
static int new_name(struct deobf_collect *c, const char *s, uint32_t len, uint32_t *k)
{
    struct deobf_plan *p = c->plan;
    uint64_t h = hash_text(s, len), at;
    for (; idmap_get(&c->new_names, h, &at); h = (h + 2) | 1) {
        uint32_t have_len;
        const char *have = plan_string(p, (uint32_t)at - 1, &have_len);
        if (have_len == len && memcmp(have, s, len) == 0) {
            *k = (uint32_t)at - 1;
            return HPROF_OK;
        }
    }
    int rc = plan_add_string(p, s, len, k);
    return rc == HPROF_OK ? idmap_put(&c->new_names, h, (uint64_t)*k + 1) : rc;
}

/* The text of STRING `id` if it may be an obfuscated name. */
static const char *name_text(const struct deobf_collect *c, uint64_t id, uint32_t *len)
{
    uint64_t at;
    if (!idmap_get(&c->names, id, &at))
        return NULL;
    return text_at(c->texts.buf, (uint32_t)at, len);
}

/* The obfuscated name of class `class_id`, if the mapping knows the class. */
static const char *class_text(const struct deobf_collect *c, uint64_t class_id, uint32_t *len)
{
    uint64_t name_id;
    if (!idmap_get(&c->class_name, class_id, &name_id))
        return NULL;
    const char *s = name_text(c, name_id, len);
    return s != NULL && mapping_class(c->m, s, *len) != NULL ? s : NULL;
}

static int collect_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct deobf_collect *c = collector(v);
    const char *text = (const char *)s->utf8;
    if (s->id > c->max_id)
        c->max_id = s->id;
    if (s->length > MAX_NAME || idmap_has(&c->names, s->id))
        return HPROF_OK;
    char probe[1];
    if (mapping_class_name(c->m, text, s->length, c->separator, probe, 0) == 0 &&
        !mapping_maybe_member(c->m, text, s->length))
        return HPROF_OK;
    uint32_t at;
    if (text_add(&c->texts, text, s->length, &at) != HPROF_OK ||
        idmap_put(&c->names, s->id, at) != HPROF_OK)
        return nomem(c->err);
    return HPROF_OK;
}

static int collect_load_class(struct hprof_visitor *v, const struct hprof_load_class *lc)
{
    struct deobf_collect *c = collector(v);
    struct deobf_plan *p = c->plan;
    if (idmap_put(&c->class_name, lc->class_id, lc->name_id) != HPROF_OK ||
        idmap_put(&c->class_of_serial, (uint64_t)lc->class_serial | 1ull << 63, lc->class_id) !=
            HPROF_OK)
        return nomem(c->err);
    uint32_t len;
    const char *obf = name_text(c, lc->name_id, &len);
    if (obf == NULL || idmap_has(&p->class_names, lc->name_id))
        return HPROF_OK;
    size_t n = mapping_class_name(c->m, obf, len, c->separator, NULL, 0);
    if (n == 0)
        return HPROF_OK;
    char *grown = grow_array(c->scratch, &c->scratch_cap, n + 1, 1);
    if (grown == NULL)
        return nomem(c->err);
    c->scratch = grown;
    mapping_class_name(c->m, obf, len, c->separator, c->scratch, n + 1);
    if (n == len && memcmp(c->scratch, obf, len) == 0)
        return HPROF_OK; /* kept its name */
    uint32_t k;
    if (new_name(c, c->scratch, (uint32_t)n, &k) != HPROF_OK ||
        idmap_put(&p->class_names, lc->name_id, (uint64_t)k + 1) != HPROF_OK)
        return nomem(c->err);
    p->classes++;
    return HPROF_OK;
}

/* Field `name_id` of the class named `cls`: renamed into p->renames. */
static int rename_field(struct deobf_collect *c, const char *cls, uint32_t cls_len, uint64_t name_id)
{
    struct deobf_plan *p = c->plan;
    uint32_t len;
    const char *obf = name_text(c, name_id, &len);
    const char *orig = obf ? mapping_field(c->m, cls, cls_len, obf, len) : NULL;
    if (orig == NULL || (strlen(orig) == len && memcmp(orig, obf, len) == 0))
        return HPROF_OK;
    uint32_t k;
    struct deobf_rename *grown = grow_array(p->renames, &p->cap_renames, p->n_renames + 1, sizeof *grown);
    if (grown == NULL)
        return HPROF_ERR_NOMEM;
    p->renames = grown;
    if (new_name(c, orig, (uint32_t)strlen(orig), &k) != HPROF_OK)
        return HPROF_ERR_NOMEM;
    p->renames[p->n_renames++] = (struct deobf_rename){ name_id, k };
    p->fields++;
    return HPROF_OK;
}

static int by_old_id(const void *a, const void *b)
{
    const struct deobf_rename *x = a, *y = b;
    return (x->old_id > y->old_id) - (x->old_id < y->old_id);
}

static int collect_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *cd)
{
    struct deobf_collect *c = collector(v);
    struct deobf_plan *p = c->plan;
    uint32_t cls_len;
    const char *cls = class_text(c, cd->id, &cls_len);
    if (cls == NULL || idmap_has(&p->field_classes, cd->id))
        return HPROF_OK;
    size_t start = p->n_renames;
    int rc = HPROF_OK;
    for (unsigned i = 0; rc == HPROF_OK && i < cd->n_statics; i++)
        rc = rename_field(c, cls, cls_len, cd->statics[i].name_id);
    for (unsigned i = 0; rc == HPROF_OK && i < cd->n_fields; i++)
        rc = rename_field(c, cls, cls_len, cd->fields[i].name_id);
    /* At most 2 x 65535 (statics and fields are two u2 counts); sorted by
     * old id for the filter's binary search. */
    size_t count = p->n_renames - start;
    if (rc == HPROF_OK && count > 0) {
        qsort(p->renames + start, count, sizeof *p->renames, by_old_id);
        if (idmap_put(&p->field_classes, cd->id, (uint64_t)start << RENAME_COUNT_BITS | count) !=
            HPROF_OK)
            rc = HPROF_ERR_NOMEM;
    }
    return rc == HPROF_OK ? HPROF_OK : nomem(c->err);
}

/* STACK_FRAME: ID frame, ID method name, ID signature, ID source file,
 * u4 class serial, i4 line. */
static int collect_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    struct deobf_collect *c = collector(v);
    struct deobf_plan *p = c->plan;
    const unsigned ids = c->ids;
    if (r->tag != HPROF_TAG_STACK_FRAME || r->length != 4 * ids + 8)
        return HPROF_OK;
    uint64_t frame = get_id(r->body, ids), method = get_id(r->body + ids, ids), class_id;
    uint32_t serial = get_u4(r->body + 4 * ids), cls_len, len;
    int32_t line = (int32_t)get_u4(r->body + 4 * ids + 4);
    if (!idmap_get(&c->class_of_serial, (uint64_t)serial | 1ull << 63, &class_id))
        return HPROF_OK;
    const char *cls = class_text(c, class_id, &cls_len), *obf = name_text(c, method, &len);
    const char *orig = cls && obf ? mapping_method(c->m, cls, cls_len, obf, len, line, NULL) : NULL;
    if (orig == NULL || (strlen(orig) == len && memcmp(orig, obf, len) == 0))
        return HPROF_OK;
    uint32_t k;
    if (new_name(c, orig, (uint32_t)strlen(orig), &k) != HPROF_OK ||
        idmap_put(&p->frames, frame, (uint64_t)k + 1) != HPROF_OK)
        return nomem(c->err);
    p->methods++;
    return HPROF_OK;
}

static int collect_header(struct hprof_visitor *v, const struct hprof_header *h)
{
    struct deobf_collect *c = collector(v);
    c->ids = h->id_size;
    /* ART writes 1.0.3 and dotted names; HotSpot 1.0.1 and 1.0.2, slashed. */
    c->separator = strcmp(h->version, "JAVA PROFILE 1.0.3") == 0 ? '.' : '/';
    return HPROF_OK;
}

static const struct hprof_visitor_ops collect_ops = {
    .header = collect_header,
    .string = collect_string,
    .load_class = collect_load_class,
    .record = collect_record,
    .class_dump = collect_class_dump,
    .instance = visit_ignore_instance,
    .object_array = visit_skip_object_array,
    .primitive_array = visit_skip_primitive_array,
};

int deobf_collect_new(struct deobf_collect **out, const struct hprof_mapping *m,
                      struct deobf_plan *plan, struct hprof_error *err)
{
    struct deobf_collect *c = calloc(1, sizeof *c);
    *out = c;
    if (c == NULL)
        return nomem(err);
    c->base.ops = &collect_ops;
    c->m = m;
    c->plan = plan;
    c->err = err;
    c->ids = 4;
    c->separator = '/';
    if (idmap_init(&c->names, 1) || idmap_init(&c->class_name, 1) ||
        idmap_init(&c->class_of_serial, 1) || idmap_init(&c->new_names, 1))
        return nomem(err);
    return HPROF_OK;
}

struct hprof_visitor *deobf_collect_visitor(struct deobf_collect *c)
{
    return &c->base;
}

int deobf_collect_finish(struct deobf_collect *c)
{
    uint64_t limit = c->ids == 4 ? UINT32_MAX : UINT64_MAX;
    if (c->plan->n_strings > limit - c->max_id)
        return hprof_error_set(c->err, HPROF_ERR_FORMAT,
                               "mapping: no room above STRING id 0x%" PRIx64
                               " for %zu restored names", c->max_id, c->plan->n_strings);
    c->plan->base = c->max_id + 1;
    return HPROF_OK;
}

void deobf_collect_free(struct deobf_collect *c)
{
    if (c == NULL)
        return;
    idmap_free(&c->names);
    idmap_free(&c->class_name);
    idmap_free(&c->class_of_serial);
    idmap_free(&c->new_names);
    free(c->texts.buf);
    free(c->scratch);
    free(c);
}

/* ---- The filter ------------------------------------------------------------------ */

static struct deobf_filter *filter(struct hprof_visitor *v)
{
    return (struct deobf_filter *)v;
}

static int filter_header(struct hprof_visitor *v, const struct hprof_header *h)
{
    filter(v)->ids = h->id_size;
    return hprof_visit_header(v->next, h);
}

/* The restored names first, then the dump's own. */
static int filter_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct deobf_filter *f = filter(v);
    const struct deobf_plan *p = f->plan;
    for (; !f->emitted && f->emitted < 1; f->emitted = 1)
        for (size_t k = 0; k < p->n_strings; k++) {
            uint32_t len;
            const char *text = plan_string(p, (uint32_t)k, &len);
            struct hprof_string added = { .offset = s->offset, .time = s->time,
                                          .id = p->base + k, .length = len,
                                          .utf8 = (const uint8_t *)text };
            int rc = hprof_visit_string(v->next, &added);
            if (rc != HPROF_OK)
                return rc;
        }
    return hprof_visit_string(v->next, s);
}

static int filter_load_class(struct hprof_visitor *v, const struct hprof_load_class *lc)
{
    struct deobf_filter *f = filter(v);
    uint64_t k;
    if (!idmap_get(&f->plan->class_names, lc->name_id, &k))
        return hprof_visit_load_class(v->next, lc);
    struct hprof_load_class restored = *lc;
    restored.name_id = f->plan->base + k - 1;
    return hprof_visit_load_class(v->next, &restored);
}

/* The new id of field name `name_id` in the class whose renames `at`
 * locates, or `name_id`: a binary search of the class's sorted renames. */
static uint64_t renamed(const struct deobf_plan *p, uint64_t at, uint64_t name_id)
{
    const struct deobf_rename *r = p->renames + (at >> RENAME_COUNT_BITS);
    size_t lo = 0, hi = at & ((1u << RENAME_COUNT_BITS) - 1);
    while (lo < hi) {
        mapping_lookup_steps++;
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].old_id == name_id)
            return p->base + r[mid].k;
        if (r[mid].old_id < name_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return name_id;
}

static int filter_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *cd)
{
    struct deobf_filter *f = filter(v);
    const struct deobf_plan *p = f->plan;
    uint64_t at;
    if (!idmap_get(&p->field_classes, cd->id, &at))
        return hprof_visit_class_dump(v->next, cd);
    struct hprof_field *fields = realloc(f->fields, (cd->n_fields + 1u) * sizeof *fields);
    if (fields != NULL)
        f->fields = fields;
    struct hprof_static_field *statics = realloc(f->statics, (cd->n_statics + 1u) * sizeof *statics);
    if (statics != NULL)
        f->statics = statics;
    if (fields == NULL || statics == NULL)
        return HPROF_ERR_NOMEM;
    for (unsigned i = 0; i < cd->n_fields; i++) {
        fields[i] = cd->fields[i];
        fields[i].name_id = renamed(p, at, cd->fields[i].name_id);
    }
    for (unsigned i = 0; i < cd->n_statics; i++) {
        statics[i] = cd->statics[i];
        statics[i].name_id = renamed(p, at, cd->statics[i].name_id);
    }
    struct hprof_class_dump restored = *cd;
    restored.fields = fields;
    restored.statics = statics;
    return hprof_visit_class_dump(v->next, &restored);
}

static int filter_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    struct deobf_filter *f = filter(v);
    const unsigned ids = f->ids;
    uint64_t k;
    if (r->tag != HPROF_TAG_STACK_FRAME || r->length != 4 * ids + 8 ||
        !idmap_get(&f->plan->frames, get_id(r->body, ids), &k))
        return hprof_visit_record(v->next, r);
    memcpy(f->frame, r->body, r->length);
    put_id(f->frame + ids, f->plan->base + k - 1, ids);
    struct hprof_record restored = *r;
    restored.body = f->frame;
    return hprof_visit_record(v->next, &restored);
}

static const struct hprof_visitor_ops filter_ops = {
    .header = filter_header,
    .string = filter_string,
    .load_class = filter_load_class,
    .class_dump = filter_class_dump,
    .record = filter_record,
};

void deobf_filter_init(struct deobf_filter *f, const struct deobf_plan *plan, unsigned ids)
{
    memset(f, 0, sizeof *f);
    f->base.ops = &filter_ops;
    f->plan = plan;
    f->ids = ids;
}

void deobf_filter_release(struct deobf_filter *f)
{
    free(f->fields);
    free(f->statics);
    f->fields = NULL;
    f->statics = NULL;
}
