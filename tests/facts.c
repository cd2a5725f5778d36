/*
 * facts.c - see facts.h.  Three passes: names and classes; objects and
 * array contents; then the fields of Strings, Bitmaps and DumpData and the
 * references of every object.  Written separately from src/shrink.c on
 * purpose: a test that reused the shrinker's own resolution would prove
 * nothing about it.
 */
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "facts.h"
#include "testlib.h"

enum { K_NONE, K_STRING, K_BITMAP, K_DUMP_DATA, K_NATIVES };

struct collector {
    struct hprof_visitor base;
    struct facts *f;
    int pass;
    uint32_t heap;
    struct classes classes;
    struct idmap text;          /* STRING id -> code for the names we need */
    struct idmap class_name;    /* class id -> STRING id */
    struct idmap special;       /* array id -> K_* for String values / natives */
    struct idmap bitmap_ids;    /* buffers Bitmap/DumpData point at */
    EVP_MD_CTX *md;
    uint64_t md_bytes;
    int md_nonzero;
};

static uint64_t finish_hash(struct collector *c)
{
    uint8_t out[16];
    unsigned len;
    EVP_DigestFinal_ex(c->md, out, &len);
    uint64_t h = get_u8(out);
    return h < 2 ? h + 2 : h; /* 0 and 1 have meanings */
}

static void add_text(struct text **list, size_t *n, const uint8_t *bytes, size_t len)
{
    if ((*n & (*n - 1)) == 0) /* 0, 1, 2, 4, ...: double the room */
        *list = realloc(*list, (*n ? 2 * *n : 1) * sizeof **list);
    (*list)[*n].bytes = malloc(len + 1);
    memcpy((*list)[*n].bytes, bytes, len);
    (*list)[*n].len = len;
    (*n)++;
}

static int on_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct collector *c = (struct collector *)v;
    if (c->pass == 1)
        add_text(&c->f->records, &c->f->n_records, s->utf8, s->length);
    static const char *const names[] = { "", "java.lang.String", "java/lang/String",
                                         "android.graphics.Bitmap", "android/graphics/Bitmap",
                                         "android.graphics.Bitmap$DumpData",
                                         "android/graphics/Bitmap$DumpData", "value", "mBuffer",
                                         "buffers", "natives" };
    if (c->pass != 1)
        return HPROF_OK;
    for (uint64_t i = 1; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == s->length && memcmp(names[i], s->utf8, s->length) == 0)
            idmap_put(&c->text, s->id, i);
    return HPROF_OK;
}

static int on_load_class(struct hprof_visitor *v, const struct hprof_load_class *l)
{
    struct collector *c = (struct collector *)v;
    if (c->pass == 1)
        idmap_put(&c->class_name, l->class_id, l->name_id);
    return HPROF_OK;
}

static int on_heap_begin(struct hprof_visitor *v, const struct hprof_segment *s)
{
    (void)s;
    ((struct collector *)v)->heap = 0;
    return HPROF_OK;
}

static int on_heap_info(struct hprof_visitor *v, const struct hprof_heap_info *i)
{
    ((struct collector *)v)->heap = i->heap_id;
    return HPROF_OK;
}

static int system_heap(const struct collector *c)
{
    return c->heap == 'Z' || c->heap == 'I';
}

static void note_object(struct collector *c, uint64_t id)
{
    idmap_put(&c->f->objects, id, 0);
    if (system_heap(c))
        idmap_put(&c->f->system, id, 0);
}

static void check_ref(struct collector *c, uint64_t ref)
{
    if (ref != 0 && !idmap_has(&c->f->objects, ref))
        idmap_put(&c->f->dangling, ref, 0);
}

static int on_root(struct hprof_visitor *v, const struct hprof_root *r)
{
    struct collector *c = (struct collector *)v;
    if (c->pass == 3)
        check_ref(c, r->id);
    return HPROF_OK;
}

static int on_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *d)
{
    struct collector *c = (struct collector *)v;
    if (c->pass == 1) {
        idmap_put(&c->f->objects, d->id, 0);
        return classes_add(&c->classes, d, NULL);
    }
    if (c->pass == 3)
        for (unsigned i = 0; i < d->n_statics; i++)
            if (d->statics[i].type == HPROF_TYPE_OBJECT)
                check_ref(c, d->statics[i].value);
    return HPROF_OK;
}

/* Class kind: K_STRING, K_BITMAP, K_DUMP_DATA or K_NONE. */
static int kind_of(struct collector *c, uint64_t class_id)
{
    uint64_t name, code;
    if (!idmap_get(&c->class_name, class_id, &name) || !idmap_get(&c->text, name, &code))
        return K_NONE;
    return code <= 2 ? K_STRING : code <= 4 ? K_BITMAP : code <= 6 ? K_DUMP_DATA : K_NONE;
}

static int64_t field(struct collector *c, uint64_t class_id, uint64_t code)
{
    struct class_info *ci = classes_find(&c->classes, class_id);
    for (uint64_t at = 0; ci != NULL;) {
        const struct class_field *fl = ci->n_fields ? c->classes.fields + ci->first_field : NULL;
        for (unsigned i = 0; i < ci->n_fields; i++) {
            uint64_t got;
            if (fl[i].type == HPROF_TYPE_OBJECT && idmap_get(&c->text, fl[i].name_id, &got) &&
                got == code)
                return (int64_t)at;
            at += hprof_type_size(fl[i].type, c->f->ids);
        }
        ci = ci->super_id ? classes_find(&c->classes, ci->super_id) : NULL;
    }
    return -1;
}

static uint64_t id_at(struct collector *c, const struct hprof_instance *o, int64_t at)
{
    if (at < 0 || (uint64_t)at + c->f->ids > o->length)
        return 0;
    return get_id(o->values + at, c->f->ids);
}

static int ref_field(void *ctx, uint32_t at, uint64_t name, uint64_t ref)
{
    (void)at;
    (void)name;
    check_ref(ctx, ref);
    return 0;
}

static uint64_t content_of(struct collector *c, uint64_t array)
{
    uint64_t h;
    return idmap_get(&c->f->contents, array, &h) ? h : 0;
}

static int on_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct collector *c = (struct collector *)v;
    struct facts *f = c->f;
    uint64_t n;
    if (c->pass == 2) {
        note_object(c, o->id);
        n = 0;
        idmap_get(&f->all_counts, o->class_id, &n);
        idmap_put(&f->all_counts, o->class_id, n + 1);
        if (!system_heap(c)) {
            n = 0;
            idmap_get(&f->class_counts, o->class_id, &n);
            idmap_put(&f->class_counts, o->class_id, n + 1);
        }
        int kind = kind_of(c, o->class_id);
        uint64_t a = 0;
        if (kind == K_STRING && (a = id_at(c, o, field(c, o->class_id, 7))))
            idmap_put(&c->special, a, K_STRING);
        if (kind == K_BITMAP && (a = id_at(c, o, field(c, o->class_id, 8))))
            idmap_put(&c->bitmap_ids, a, 0);
        if (kind == K_DUMP_DATA && (a = id_at(c, o, field(c, o->class_id, 10))))
            idmap_put(&c->special, a, K_NATIVES);
        if (kind == K_DUMP_DATA && (a = id_at(c, o, field(c, o->class_id, 9))))
            idmap_put(&c->special, a, K_DUMP_DATA);
        return HPROF_OK;
    }
    if (c->pass != 3)
        return HPROF_OK;
    EVP_DigestInit_ex(c->md, EVP_md5(), NULL);
    EVP_DigestUpdate(c->md, o->values, o->length);
    idmap_put(&f->instance_hash, o->id, finish_hash(c));
    idmap_put(&f->instance_class, o->id, o->class_id);
    struct class_info *ci = classes_find(&c->classes, o->class_id);
    if (ci)
        classes_each_ref(&c->classes, ci, o->values, o->length, ref_field, c);
    if (system_heap(c))
        return HPROF_OK;
    int kind = kind_of(c, o->class_id);
    if (kind == K_STRING)
        idmap_put(&f->strings, o->id, content_of(c, id_at(c, o, field(c, o->class_id, 7))));
    if (kind == K_BITMAP) {
        uint64_t buffer = id_at(c, o, field(c, o->class_id, 8));
        idmap_put(&f->bitmaps, o->id, buffer ? content_of(c, buffer) : 1);
    }
    return HPROF_OK;
}

static int on_object_array(struct hprof_visitor *v, const struct hprof_object_array *a)
{
    struct collector *c = (struct collector *)v;
    uint64_t kind = 0;
    if (c->pass == 2 && a->first == 0) {
        note_object(c, a->id);
        uint64_t n = 0;
        idmap_get(&c->f->all_counts, a->class_id, &n);
        idmap_put(&c->f->all_counts, a->class_id, n + 1);
        if (!system_heap(c)) {
            n = 0;
            idmap_get(&c->f->class_counts, a->class_id, &n);
            idmap_put(&c->f->class_counts, a->class_id, n + 1);
        }
    }
    if (c->pass != 3)
        return HPROF_OK;
    int dump_buffers = idmap_get(&c->special, a->id, &kind) && kind == K_DUMP_DATA;
    for (uint32_t i = 0; i < a->n; i++) {
        uint64_t el = get_id(a->elements + (size_t)i * c->f->ids, c->f->ids);
        check_ref(c, el);
        if (dump_buffers) {
            idmap_put(&c->f->dump_buffers, a->first + i + 1, content_of(c, el));
            idmap_put(&c->bitmap_ids, el, 0);
        }
    }
    return HPROF_OK;
}

/* Pass 2 hashes every array's contents (type and bytes). */
static int on_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct collector *c = (struct collector *)v;
    if (c->pass == 1)
        return HPROF_SKIP;
    if (c->pass == 3) {
        uint64_t kind = 0;
        if (idmap_get(&c->special, a->id, &kind) && kind == K_STRING) {
            if (a->first == 0)
                add_text(&c->f->texts, &c->f->n_texts, a->data, a->length);
            else { /* a later chunk: append */
                struct text *t = &c->f->texts[c->f->n_texts - 1];
                t->bytes = realloc(t->bytes, t->len + a->length);
                memcpy(t->bytes + t->len, a->data, a->length);
                t->len += a->length;
            }
            return HPROF_OK;
        }
        return HPROF_SKIP;
    }
    if (a->first == 0) {
        note_object(c, a->id);
        idmap_put(&c->f->arrays, a->id, (uint64_t)a->count << 8 | a->type);
        c->f->nodata_arrays += a->tag == HPROF_PRIMITIVE_ARRAY_NODATA;
        EVP_DigestInit_ex(c->md, EVP_md5(), NULL);
        EVP_DigestUpdate(c->md, &a->type, 1);
        c->md_bytes = 0;
        c->md_nonzero = 0;
    }
    EVP_DigestUpdate(c->md, a->data, a->length);
    for (size_t i = 0; i < a->length && !c->md_nonzero; i++)
        c->md_nonzero = a->data[i] != 0;
    c->md_bytes += a->length;
    uint64_t total = a->tag == HPROF_PRIMITIVE_ARRAY_NODATA
        ? 0 : (uint64_t)a->count * hprof_type_size(a->type, c->f->ids);
    if (c->md_bytes == total) {
        uint64_t h = finish_hash(c);
        idmap_put(&c->f->contents, a->id, c->md_nonzero ? h : 0);
    }
    return HPROF_OK;
}

static const struct hprof_visitor_ops collector_ops = {
    .string = on_string, .load_class = on_load_class, .heap_begin = on_heap_begin,
    .heap_info = on_heap_info, .root = on_root, .class_dump = on_class_dump,
    .instance = on_instance, .object_array = on_object_array,
    .primitive_array = on_primitive_array,
};

static int collect(struct hprof_reader *r, struct facts *f)
{
    struct collector c = { .base = { &collector_ops, NULL }, .f = f };
    int rc = HPROF_OK;
    memset(f, 0, sizeof *f);
    f->ids = hprof_reader_header(r)->id_size;
    struct idmap *maps[] = { &f->objects, &f->system, &f->class_counts, &f->all_counts,
                             &f->arrays, &f->contents, &f->strings, &f->bitmaps,
                             &f->dump_buffers, &f->dangling, &f->instance_hash,
                             &f->instance_class };
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
        idmap_init(maps[i], 1);
    classes_init(&c.classes, f->ids);
    idmap_init(&c.text, 1);
    idmap_init(&c.class_name, 1);
    idmap_init(&c.special, 1);
    idmap_init(&c.bitmap_ids, 0);
    c.md = EVP_MD_CTX_new();
    for (c.pass = 1; c.pass <= 3 && rc == HPROF_OK; c.pass++)
        rc = hprof_reader_run(r, &c.base);
    f->bitmap_buffer_objects = c.bitmap_ids.count;
    /* Which arrays still hold contents they should not: not a String value,
     * not pixels, not DumpData natives, yet not all zero. */
    for (size_t i = 0; i <= f->contents.mask; i++) {
        uint64_t id = f->contents.keys[i], kind = 0;
        if (id == 0)
            continue;
        idmap_get(&c.special, id, &kind);
        if (kind == K_STRING)
            f->string_value_ids_kept++;
        else if (kind != K_NATIVES && !idmap_has(&c.bitmap_ids, id) && f->contents.values[i])
            f->arrays_with_contents++;
    }
    EVP_MD_CTX_free(c.md);
    classes_free(&c.classes);
    idmap_free(&c.text);
    idmap_free(&c.class_name);
    idmap_free(&c.special);
    idmap_free(&c.bitmap_ids);
    return rc;
}

int facts_load(const char *path, struct facts *f, struct hprof_error *err)
{
    struct hprof_reader *r;
    int fd;
    int rc = tl_open_reader(path, &fd, &r, err);
    if (rc == HPROF_OK)
        rc = collect(r, f);
    tl_close_reader(fd, r);
    return rc;
}

int facts_load_memory(const void *data, size_t len, struct facts *f, struct hprof_error *err)
{
    struct hprof_reader *r = NULL;
    int rc = hprof_reader_open_memory(&r, data, len, err);
    if (rc == HPROF_OK)
        rc = collect(r, f);
    hprof_reader_free(r);
    return rc;
}

void facts_free(struct facts *f)
{
    struct idmap *maps[] = { &f->objects, &f->system, &f->class_counts, &f->all_counts,
                             &f->arrays, &f->contents, &f->strings, &f->bitmaps,
                             &f->dump_buffers, &f->dangling, &f->instance_hash,
                             &f->instance_class };
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
        idmap_free(maps[i]);
    for (size_t i = 0; i < f->n_texts; i++)
        free(f->texts[i].bytes);
    for (size_t i = 0; i < f->n_records; i++)
        free(f->records[i].bytes);
    free(f->texts);
    free(f->records);
}

struct class_finder {
    struct hprof_visitor base;
    const char *name;
    uint64_t name_id, class_id;
};

static int find_name(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct class_finder *cf = (struct class_finder *)v;
    if (strlen(cf->name) == s->length && memcmp(cf->name, s->utf8, s->length) == 0)
        cf->name_id = s->id;
    return HPROF_OK;
}

static int find_class(struct hprof_visitor *v, const struct hprof_load_class *l)
{
    struct class_finder *cf = (struct class_finder *)v;
    if (l->name_id == cf->name_id && cf->name_id != 0)
        cf->class_id = l->class_id;
    return HPROF_OK;
}

static int skip_heap(struct hprof_visitor *v, const struct hprof_segment *s)
{
    (void)v;
    (void)s;
    return HPROF_SKIP;
}

uint64_t facts_class_id(const char *path, const char *name)
{
    static const struct hprof_visitor_ops ops = { .string = find_name, .load_class = find_class,
                                                  .heap_begin = skip_heap };
    struct class_finder cf = { { &ops, NULL }, name, 0, 0 };
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    int fd;
    if (tl_open_reader(path, &fd, &r, &err) == HPROF_OK)
        hprof_reader_run(r, &cf.base);
    tl_close_reader(fd, r);
    return cf.class_id;
}
