/*
 * info.c - hprof_info_analyze(): what a dump holds, for hprof-info.
 *
 *   pass 1  names (STRING offsets, LOAD_CLASS), class layouts, and top-level
 *           records by tag; array contents are skipped.  Object ids go
 *           through validate.h's objcheck, confirmed in pass 2, so that
 *           what hprof-verify rejects as dumped twice is rejected here too.
 *   pass 2  every heap sub-record: counts and bytes by kind, by heap, by
 *           class and by element type; roots by kind; String value ids;
 *           Bitmap fields; the elements of byte[][] arrays (DumpData).
 *   pass 3  only the arrays found in pass 2: text bytes of Strings, size and
 *           MD5 of bitmap buffers.
 *   then    buffers with the same type, size and MD5 are read back and
 *           compared byte for byte: an MD5 collision is two contents, as the
 *           shrink, which merges only confirmed copies, counts it.
 *
 * Memory: one offset per STRING record and per class, the String value ids
 * and the bitmaps - what the report needs, never the contents.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hprof_private.h"
#include "layout.h"
#include "names.h"
#include "reader_internal.h"
#include "deobfuscate.h"
#include "objcheck_pass.h"

#define MAX_BYTE_ARRAY_ELEMENTS (1u << 20)


struct counter {
    uint64_t id;
    struct hprof_count c;
};

struct analyzer {
    struct hprof_visitor base;
    struct hprof_info *info;
    struct hprof_reader *reader;
    struct hprof_error *err;
    unsigned ids;
    int pass;
    uint32_t heap;

    struct idmap string_at;     /* STRING id -> offset of its record */
    struct idmap names;         /* STRING id -> enum info_name */
    struct idmap class_name;    /* class id -> STRING id */
    struct classes classes;

    struct idmap by_class;      /* class id -> index in `counters` (instances) */
    struct idmap by_array_class;/* class id -> index in `counters` (object arrays) */
    struct counter *counters;
    size_t n_counters, cap_counters;

    struct idmap string_values; /* value array ids of Strings */
    struct idmap buffers;       /* bitmap buffer id -> index in info->bitmaps + 1 of
                                 * the last bitmap with that buffer */
    size_t *same_buffer;        /* per bitmap: index + 1 of the previous one with
                                 * its buffer, or 0 */
    size_t cap_bitmaps;
    uint64_t dump_buffers;      /* DumpData.buffers array id */
    uint64_t *byte_arrays;      /* (byte[][] id, element) pairs */
    size_t n_byte_arrays, cap_byte_arrays;

    struct digest *digest;
    struct objcheck objcheck;
    const struct deobf_plan *restored; /* --mapping, or NULL */
};

static const char *const heap_names[HPROF_INFO_HEAPS] = { "default", "app", "image", "zygote" };

const char *hprof_info_heap_name(int i)
{
    return i >= 0 && i < HPROF_INFO_HEAPS ? heap_names[i] : "unknown";
}

static int heap_index(uint32_t heap)
{
    return heap == HPROF_HEAP_APP ? 1 : heap == HPROF_HEAP_IMAGE ? 2 : heap == HPROF_HEAP_ZYGOTE ? 3 : 0;
}

static struct analyzer *self(struct hprof_visitor *v)
{
    return (struct analyzer *)v;
}

static int nomem(struct analyzer *a)
{
    return hprof_error_set(a->err, HPROF_ERR_NOMEM, "out of memory");
}

static void add(struct hprof_count *c, uint64_t bytes)
{
    c->count++;
    c->bytes += bytes;
}

/* ---- Pass 1 ------------------------------------------------------------------ */

/* The well-known name `s` holds, or NAME_NONE (src/common/names.c). */
static int name_code(const struct hprof_string *s)
{
    return known_name(s->utf8, s->length);
}

static int on_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct analyzer *a = self(v);
    if (a->pass != 1)
        return HPROF_OK;
    add(&a->info->records[HPROF_TAG_STRING], a->ids + (uint64_t)s->length);
    int code = name_code(s);
    if (idmap_put(&a->string_at, s->id, s->offset) != HPROF_OK ||
        (code != NAME_NONE && idmap_put(&a->names, s->id, (uint64_t)code) != HPROF_OK))
        return nomem(a);
    return HPROF_OK;
}

static int on_load_class(struct hprof_visitor *v, const struct hprof_load_class *c)
{
    struct analyzer *a = self(v);
    if (a->pass != 1)
        return HPROF_OK;
    add(&a->info->records[HPROF_TAG_LOAD_CLASS], 8 + 2 * (uint64_t)a->ids);
    return idmap_put(&a->class_name, c->class_id, c->name_id) == HPROF_OK ? HPROF_OK : nomem(a);
}

static int on_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    struct analyzer *a = self(v);
    if (a->pass == 1)
        add(&a->info->records[r->tag], r->length);
    return HPROF_OK;
}

static int on_heap_begin(struct hprof_visitor *v, const struct hprof_segment *s)
{
    struct analyzer *a = self(v);
    a->heap = HPROF_HEAP_DEFAULT;
    if (a->pass == 1)
        add(&a->info->records[s->tag], s->length);
    return HPROF_OK;
}

static int on_heap_info(struct hprof_visitor *v, const struct hprof_heap_info *i)
{
    struct analyzer *a = self(v);
    a->heap = i->heap_id;
    if (a->pass == 2)
        add(&a->info->sub_records[HPROF_HEAP_DUMP_INFO], 5 + (uint64_t)a->ids);
    return HPROF_OK;
}

static int on_root(struct hprof_visitor *v, const struct hprof_root *r)
{
    struct analyzer *a = self(v);
    if (a->pass != 2)
        return HPROF_OK;
    add(&a->info->sub_records[r->tag], 1 + (uint64_t)root_body_size(r->tag, a->ids));
    a->info->roots[r->tag]++;
    return HPROF_OK;
}

static int on_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    struct analyzer *a = self(v);
    if (a->pass == 1)
        return classes_add(&a->classes, c, a->err);
    if (a->pass == 2) {
        add(&a->info->sub_records[HPROF_CLASS_DUMP], class_dump_size(c, a->ids));
    }
    return HPROF_OK;
}

/* ---- Pass 2 ------------------------------------------------------------------ */

static int count_in(struct analyzer *a, struct idmap *map, uint64_t class_id, uint64_t bytes)
{
    uint64_t at;
    if (!idmap_get(map, class_id, &at)) {
        struct counter *grown = grow_array(a->counters, &a->cap_counters, a->n_counters + 1,
                                     sizeof *a->counters);
        if (grown == NULL)
            return nomem(a);
        a->counters = grown;
        at = a->n_counters++;
        a->counters[at] = (struct counter){ .id = class_id };
        if (idmap_put(map, class_id, at) != HPROF_OK)
            return nomem(a);
    }
    add(&a->counters[at].c, bytes);
    return HPROF_OK;
}

static int class_code(struct analyzer *a, uint64_t class_id)
{
    uint64_t name, code;
    if (!idmap_get(&a->class_name, class_id, &name) || !idmap_get(&a->names, name, &code))
        return NAME_NONE;
    return (int)code;
}

struct match {
    struct analyzer *a;
    int code;
};

static int match_name(void *ctx, uint64_t name_id)
{
    struct match *m = ctx;
    uint64_t code;
    return idmap_get(&m->a->names, name_id, &code) && (int)code == m->code;
}

/* The value of the field named `code` of type `type`, or 0. */
static uint64_t field(struct analyzer *a, struct class_info *ci, const struct hprof_instance *o,
                      int code, uint8_t type)
{
    struct match m = { a, code };
    int64_t at = classes_field_offset(&a->classes, ci, match_name, &m, type);
    unsigned size = type_size(type, a->ids);
    if (at < 0 || (uint64_t)at + size > o->length)
        return 0;
    return get_value(o->values + at, size);
}

static int add_bitmap(struct analyzer *a, const struct hprof_info_bitmap *b)
{
    /* A dump may hold a million (DumpData's buffers): grown by doubling, and
     * the bitmaps of one buffer chained, so that pass 3 finds them without
     * looking at every other bitmap for every buffer. */
    struct hprof_info *info = a->info;
    size_t cap = a->cap_bitmaps;
    struct hprof_info_bitmap *grown = grow_array(info->bitmaps, &cap, info->n_bitmaps + 1,
                                           sizeof *grown);
    if (grown == NULL)
        return nomem(a);
    info->bitmaps = grown;
    size_t *same = grow_array(a->same_buffer, &a->cap_bitmaps, info->n_bitmaps + 1, sizeof *same);
    if (same == NULL)
        return nomem(a);
    a->same_buffer = same;
    uint64_t previous = 0;
    if (b->buffer_id != 0)
        idmap_get(&a->buffers, b->buffer_id, &previous);
    a->same_buffer[info->n_bitmaps] = (size_t)previous;
    info->bitmaps[info->n_bitmaps++] = *b;
    if (b->buffer_id != 0 && idmap_put(&a->buffers, b->buffer_id, info->n_bitmaps) != HPROF_OK)
        return nomem(a);
    return HPROF_OK;
}

static int on_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct analyzer *a = self(v);
    if (a->pass != 2)
        return HPROF_OK;
    struct class_info *ci;
    int rc = classes_check_instance(&a->classes, o, &ci, a->err);
    if (rc != HPROF_OK)
        return rc;
    add(&a->info->sub_records[HPROF_INSTANCE_DUMP],
        1 + instance_head_size(a->ids) + (uint64_t)o->length);
    add(&a->info->heaps[heap_index(a->heap)], o->length);
    if ((rc = count_in(a, &a->by_class, o->class_id, o->length)) != HPROF_OK)
        return rc;
    switch (class_code(a, o->class_id)) {
    case NAME_CLASS_STRING: {
        uint64_t value = field(a, ci, o, NAME_FIELD_VALUE, HPROF_TYPE_OBJECT);
        a->info->strings.count++;
        if (value != 0 && idmap_put(&a->string_values, value, 0) != HPROF_OK)
            return nomem(a);
        break;
    }
    case NAME_CLASS_BITMAP: {
        struct hprof_info_bitmap b = {
            .id = o->id,
            .width = (uint32_t)field(a, ci, o, NAME_FIELD_WIDTH, HPROF_TYPE_INT),
            .height = (uint32_t)field(a, ci, o, NAME_FIELD_HEIGHT, HPROF_TYPE_INT),
            .recycled = field(a, ci, o, NAME_FIELD_RECYCLED, HPROF_TYPE_BOOLEAN) != 0,
            .buffer_id = field(a, ci, o, NAME_FIELD_BUFFER, HPROF_TYPE_OBJECT),
        };
        return add_bitmap(a, &b);
    }
    case NAME_CLASS_DUMP_DATA:
        a->dump_buffers = field(a, ci, o, NAME_FIELD_BUFFERS, HPROF_TYPE_OBJECT);
        break;
    default:
        break;
    }
    return HPROF_OK;
}

static int on_object_array(struct hprof_visitor *v, const struct hprof_object_array *arr)
{
    struct analyzer *a = self(v);
    if (a->pass != 2)
        return HPROF_SKIP;
    uint64_t bytes = (uint64_t)arr->count * a->ids;
    if (arr->first == 0) {
        add(&a->info->sub_records[HPROF_OBJECT_ARRAY_DUMP],
            1 + object_array_head_size(a->ids) + bytes);
        add(&a->info->heaps[heap_index(a->heap)], bytes);
        int rc = count_in(a, &a->by_array_class, arr->class_id, bytes);
        if (rc != HPROF_OK)
            return rc;
        if (class_code(a, arr->class_id) != NAME_CLASS_BYTE_ARRAYS)
            return HPROF_SKIP;
    }
    if (a->n_byte_arrays + 2 * (size_t)arr->n > 2 * (size_t)MAX_BYTE_ARRAY_ELEMENTS)
        return HPROF_SKIP; /* a report of bitmaps, not a promise: stop remembering */
    uint64_t *grown = grow_array(a->byte_arrays, &a->cap_byte_arrays,
                           a->n_byte_arrays + 2 * (size_t)arr->n, sizeof *a->byte_arrays);
    if (grown == NULL)
        return nomem(a);
    a->byte_arrays = grown;
    for (uint32_t i = 0; i < arr->n; i++) {
        a->byte_arrays[a->n_byte_arrays++] = arr->id;
        a->byte_arrays[a->n_byte_arrays++] = get_id(arr->elements + (size_t)i * a->ids, a->ids);
    }
    return HPROF_OK;
}

static int on_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *p)
{
    struct analyzer *a = self(v);
    uint64_t bytes = p->tag == HPROF_PRIMITIVE_ARRAY_NODATA
        ? 0 : (uint64_t)p->count * type_size(p->type, a->ids);
    if (a->pass == 2) {
        add(&a->info->sub_records[p->tag], 1 + primitive_array_head_size(a->ids) + bytes);
        add(&a->info->heaps[heap_index(a->heap)], bytes);
        add(&a->info->primitive[p->type], bytes);
        return HPROF_SKIP;
    }
    if (a->pass != 3)
        return HPROF_SKIP;
    uint64_t at;
    if (p->first == 0 && idmap_has(&a->string_values, p->id))
        a->info->strings.bytes += bytes;
    if (!idmap_get(&a->buffers, p->id, &at))
        return HPROF_SKIP;
    int rc = HPROF_OK;
    if (p->first == 0)
        rc = digest_begin(a->digest);
    if (rc == HPROF_OK)
        rc = digest_update(a->digest, p->data, p->length);
    if (rc == HPROF_OK && p->first + p->length == bytes) {
        uint8_t md5[16];
        rc = digest_final(a->digest, md5);
        /* every bitmap sharing this buffer object gets its size and digest */
        for (size_t j = (size_t)at; rc == HPROF_OK && j != 0; j = a->same_buffer[j - 1]) {
            struct hprof_info_bitmap *bm = &a->info->bitmaps[j - 1];
            bm->buffer_bytes = bytes;
            bm->buffer_offset = p->data_offset;
            bm->buffer_type = p->type;
            memcpy(bm->md5, md5, 16);
        }
    }
    return rc;
}

static const struct hprof_visitor_ops analyzer_ops = {
    .string = on_string, .load_class = on_load_class, .record = on_record,
    .heap_begin = on_heap_begin, .heap_info = on_heap_info, .root = on_root,
    .class_dump = on_class_dump, .instance = on_instance, .object_array = on_object_array,
    .primitive_array = on_primitive_array,
};

/* ---- Between passes and after --------------------------------------------- */

/* DumpData.buffers elements become bitmaps of their own (no dimensions). */
static int add_dump_data_buffers(struct analyzer *a)
{
    for (size_t i = 0; a->dump_buffers && i < a->n_byte_arrays; i += 2) {
        if (a->byte_arrays[i] != a->dump_buffers || a->byte_arrays[i + 1] == 0)
            continue;
        struct hprof_info_bitmap b = { .id = a->dump_buffers, .buffer_id = a->byte_arrays[i + 1] };
        int rc = add_bitmap(a, &b);
        if (rc != HPROF_OK)
            return rc;
    }
    return HPROF_OK;
}

/* The text of STRING `id` (read back from the input), or NULL. */
static char *string_text(struct analyzer *a, uint64_t id)
{
    uint64_t at;
    uint8_t head[9];
    uint32_t restored_len;
    const char *restored = deobf_plan_text(a->restored, id, &restored_len);
    if (restored != NULL) /* a name --mapping restored: not in the file */
        return strndup(restored, restored_len);
    if (!idmap_get(&a->string_at, id, &at) ||
        hprof_reader_pread(a->reader, at, head, sizeof head) != HPROF_OK)
        return NULL;
    uint32_t len = get_u4(head + 5) - a->ids;
    char *text = malloc((size_t)len + 1);
    if (text != NULL && hprof_reader_pread(a->reader, at + 9 + a->ids, text, len) != HPROF_OK) {
        free(text);
        return NULL;
    }
    if (text != NULL)
        text[len] = '\0';
    return text;
}

static char *copy(const char *s)
{
    char *c = malloc(strlen(s) + 1);
    if (c != NULL)
        strcpy(c, s);
    return c;
}

/* A class name in Java source form, as ahat and MAT show it, whatever the
 * dump wrote: HotSpot's "java/lang/String" and "[Ljava/lang/Object;" and
 * "[[I" become "java.lang.String", "java.lang.Object[]" and "int[][]";
 * ART already writes that form.  Takes `name` (freed) and @return the
 * result, or NULL when out of memory. */
static char *source_form(char *name)
{
    static const struct { char code; const char *name; } prims[] = {
        { 'Z', "boolean" }, { 'C', "char" }, { 'F', "float" }, { 'D', "double" },
        { 'B', "byte" }, { 'S', "short" }, { 'I', "int" }, { 'J', "long" },
    };
    size_t dims = 0, len = strlen(name);
    while (name[dims] == '[')
        dims++;
    const char *elem = name + dims;
    size_t elen = len - dims;
    if (dims > 0) {
        if (elen >= 2 && elem[0] == 'L' && elem[elen - 1] == ';') {
            elem++;
            elen -= 2;
        } else if (elen == 1) {
            const char *p = NULL;
            for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++)
                if (prims[i].code == elem[0])
                    p = prims[i].name;
            if (p == NULL)
                return name;        /* not a descriptor: as written */
            elem = p;
            elen = strlen(p);
        } else {
            return name;
        }
    }
    char *out = malloc(elen + 2 * dims + 1);
    if (out == NULL) {
        free(name);
        return NULL;
    }
    for (size_t i = 0; i < elen; i++)
        out[i] = elem[i] == '/' ? '.' : elem[i];
    for (size_t i = 0; i < dims; i++)
        memcpy(out + elen + 2 * i, "[]", 2);
    out[elen + 2 * dims] = '\0';
    free(name);
    return out;
}

static int build_classes(struct analyzer *a)
{
    static const char *const prim_names[12] = { [HPROF_TYPE_BOOLEAN] = "boolean[]",
        [HPROF_TYPE_CHAR] = "char[]", [HPROF_TYPE_FLOAT] = "float[]",
        [HPROF_TYPE_DOUBLE] = "double[]", [HPROF_TYPE_BYTE] = "byte[]",
        [HPROF_TYPE_SHORT] = "short[]", [HPROF_TYPE_INT] = "int[]", [HPROF_TYPE_LONG] = "long[]" };
    struct hprof_info *info = a->info;
    info->classes = calloc(a->n_counters + 12, sizeof *info->classes);
    if (info->classes == NULL)
        return nomem(a);
    for (size_t i = 0; i < a->n_counters; i++) {
        struct hprof_info_class *c = &info->classes[info->n_classes++];
        uint64_t name_id;
        c->id = a->counters[i].id;
        c->objects = a->counters[i].c;
        c->name = idmap_get(&a->class_name, c->id, &name_id) ? string_text(a, name_id) : NULL;
        if (c->name != NULL && (c->name = source_form(c->name)) == NULL)
            return nomem(a);
        if (c->name == NULL) {
            char fallback[40];
            snprintf(fallback, sizeof fallback, "class@0x%" PRIx64, c->id);
            c->name = copy(fallback);
        }
        if (c->name == NULL)
            return nomem(a);
    }
    for (int t = 0; t < 12; t++) {
        if (prim_names[t] == NULL || info->primitive[t].count == 0)
            continue;
        struct hprof_info_class *c = &info->classes[info->n_classes++];
        c->objects = info->primitive[t];
        if ((c->name = copy(prim_names[t])) == NULL)
            return nomem(a);
    }
    return HPROF_OK;
}

/* ---- Identical buffers --------------------------------------------------------- */

#define COMPARE_CHUNK (1u << 20)

/* A bitmap's buffer as the grouping sorts it: candidates for equal bytes
 * are adjacent, the earliest bitmap first. */
struct buffer_key {
    uint64_t bytes;
    uint8_t md5[16];
    uint8_t type;
    size_t index;               /* in info->bitmaps */
};

static int by_type_size_md5_index(const void *pa, const void *pb)
{
    const struct buffer_key *a = pa, *b = pb;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? -1 : 1;
    int c = memcmp(a->md5, b->md5, 16);
    if (c != 0)
        return c;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Do the `len` bytes at offsets x and y of the input agree? */
static int same_bytes(struct analyzer *a, uint64_t x, uint64_t y, uint64_t len, uint8_t *bx,
                      uint8_t *by, int *same)
{
    *same = 1;
    for (uint64_t at = 0; *same && at < len; at += COMPARE_CHUNK) {
        size_t n = len - at < COMPARE_CHUNK ? (size_t)(len - at) : COMPARE_CHUNK;
        int rc = hprof_reader_pread(a->reader, x + at, bx, n);
        if (rc == HPROF_OK)
            rc = hprof_reader_pread(a->reader, y + at, by, n);
        if (rc != HPROF_OK)
            return hprof_error_set(a->err, rc, "offset 0x%" PRIx64 ": cannot read a bitmap "
                                   "buffer back to compare it", x + at);
        *same = memcmp(bx, by, n) == 0;
    }
    return HPROF_OK;
}

/* Within keys[from, to) (one type, size and MD5, in bitmap order), each
 * bitmap's same_as: the first earlier one whose buffer is the same object,
 * lies at the same offset or holds equal bytes; firsts[] is room for the
 * distinct contents met so far. */
static int split_by_bytes(struct analyzer *a, const struct buffer_key *keys, size_t from,
                          size_t to, size_t *firsts, uint8_t *bx, uint8_t *by)
{
    struct hprof_info_bitmap *bm = a->info->bitmaps;
    size_t n_firsts = 0;
    for (size_t k = from; k < to; k++) {
        struct hprof_info_bitmap *b = &bm[keys[k].index];
        int found = 0;
        for (size_t f = 0; !found && f < n_firsts; f++) {
            const struct hprof_info_bitmap *first = &bm[firsts[f]];
            found = first->buffer_id == b->buffer_id || first->buffer_offset == b->buffer_offset;
            int rc = found ? HPROF_OK
                           : same_bytes(a, first->buffer_offset, b->buffer_offset, b->buffer_bytes,
                                        bx, by, &found);
            if (rc != HPROF_OK)
                return rc;
            if (found)
                b->same_as = firsts[f];
        }
        if (!found)
            firsts[n_firsts++] = keys[k].index;
    }
    return HPROF_OK;
}

/* A buffer object and the first bitmap whose bytes it holds. */
struct buffer_owner {
    size_t same_as;
    uint64_t buffer_id;
};

static int by_same_as_then_buffer(const void *pa, const void *pb)
{
    const struct buffer_owner *a = pa, *b = pb;
    if (a->same_as != b->same_as)
        return a->same_as < b->same_as ? -1 : 1;
    return a->buffer_id < b->buffer_id ? -1 : a->buffer_id > b->buffer_id;
}

/* Distinct buffer objects, and the groups of those holding equal bytes,
 * counted as hprof_shrink() counts what it merges. */
static int count_groups(struct analyzer *a)
{
    struct hprof_info *info = a->info;
    struct buffer_owner *owners = malloc((info->n_bitmaps + 1) * sizeof *owners);
    if (owners == NULL)
        return nomem(a);
    size_t n = 0;
    for (size_t i = 0; i < info->n_bitmaps; i++)
        if (info->bitmaps[i].buffer_id != 0)
            owners[n++] = (struct buffer_owner){ info->bitmaps[i].same_as,
                                                 info->bitmaps[i].buffer_id };
    qsort(owners, n, sizeof *owners, by_same_as_then_buffer);
    for (size_t k = 0; k < n;) {
        size_t first = owners[k].same_as;
        uint64_t distinct = 0, bytes = info->bitmaps[first].buffer_bytes;
        for (size_t from = k; k < n && owners[k].same_as == first; k++)
            distinct += k == from || owners[k].buffer_id != owners[k - 1].buffer_id;
        info->bitmap_buffers.count += distinct;
        info->bitmap_buffers.bytes += distinct * bytes;
        if (distinct > 1 && bytes > 0) {
            info->bitmap_groups++;
            info->bitmap_duplicates.count += distinct - 1;
            info->bitmap_duplicates.bytes += (distinct - 1) * bytes;
        }
    }
    free(owners);
    return HPROF_OK;
}

static int group_identical_buffers(struct analyzer *a)
{
    struct hprof_info *info = a->info;
    struct buffer_key *keys = malloc((info->n_bitmaps + 1) * sizeof *keys);
    size_t *firsts = malloc((info->n_bitmaps + 1) * sizeof *firsts);
    uint8_t *bx = malloc(COMPARE_CHUNK), *by = malloc(COMPARE_CHUNK);
    int rc = keys && firsts && bx && by ? HPROF_OK : nomem(a);
    size_t n = 0;
    for (size_t i = 0; rc == HPROF_OK && i < info->n_bitmaps; i++) {
        struct hprof_info_bitmap *b = &info->bitmaps[i];
        b->same_as = i;
        if (b->buffer_id == 0)
            continue;
        keys[n] = (struct buffer_key){ .bytes = b->buffer_bytes, .type = b->buffer_type, .index = i };
        memcpy(keys[n++].md5, b->md5, 16);
    }
    if (rc == HPROF_OK)
        qsort(keys, n, sizeof *keys, by_type_size_md5_index);
    for (size_t from = 0, to; rc == HPROF_OK && from < n; from = to) {
        for (to = from + 1; to < n && keys[to].type == keys[from].type &&
                            keys[to].bytes == keys[from].bytes &&
                            memcmp(keys[to].md5, keys[from].md5, 16) == 0;)
            to++;
        if (to - from > 1)
            rc = split_by_bytes(a, keys, from, to, firsts, bx, by);
    }
    free(keys);
    free(firsts);
    free(bx);
    free(by);
    return rc == HPROF_OK ? count_groups(a) : rc;
}

static void release(struct analyzer *a)
{
    idmap_free(&a->string_at);
    idmap_free(&a->names);
    idmap_free(&a->class_name);
    classes_free(&a->classes);
    objcheck_free(&a->objcheck);
    idmap_free(&a->by_class);
    idmap_free(&a->by_array_class);
    free(a->counters);
    idmap_free(&a->string_values);
    idmap_free(&a->buffers);
    free(a->same_buffer);
    free(a->byte_arrays);
    digest_free(a->digest);
}

int hprof_info_analyze(struct hprof_reader *r, struct hprof_info *info, struct hprof_error *err)
{
    return hprof_info_analyze_mapped(r, NULL, info, err);
}

/* Pass 0 of the --mapping rewrite: what each obfuscated name restores to. */
static int restore_names(struct hprof_reader *r, const struct hprof_mapping *m,
                         struct deobf_plan *plan, struct hprof_error *err)
{
    struct deobf_collect *c;
    int rc = deobf_collect_new(&c, m, plan, err);
    if (rc == HPROF_OK)
        rc = hprof_reader_run(r, deobf_collect_visitor(c));
    if (rc == HPROF_OK)
        rc = deobf_collect_finish(c);
    deobf_collect_free(c);
    return rc;
}

int hprof_info_analyze_mapped(struct hprof_reader *r, const struct hprof_mapping *m,
                              struct hprof_info *info, struct hprof_error *err)
{
    struct deobf_plan plan;
    struct deobf_filter restore;
    int restoring = m != NULL;
    struct analyzer a = { .base = { &analyzer_ops, NULL }, .info = info, .reader = r, .err = err };
    memset(info, 0, sizeof *info);
    info->header = *hprof_reader_header(r);
    info->file_bytes = hprof_reader_size(r);
    a.ids = info->header.id_size;
    int rc = HPROF_OK;
    if (idmap_init(&a.string_at, 1) || idmap_init(&a.names, 1) || idmap_init(&a.class_name, 1) ||
        classes_init(&a.classes, a.ids) || idmap_init(&a.by_class, 1) ||
        idmap_init(&a.by_array_class, 1) || idmap_init(&a.string_values, 0) ||
        idmap_init(&a.buffers, 1) || (a.digest = digest_new(err)) == NULL)
        rc = nomem(&a);
    struct objcheck_visitor check;
    if (rc == HPROF_OK && objcheck_init(&a.objcheck, objcheck_filter_bytes(info->file_bytes)) !=
                              HPROF_OK)
        rc = nomem(&a);
    objcheck_visitor_init(&check, &a.objcheck, err, &a.base);
    hprof_reader_set_strict(r, 1);
    reader_set_one_dump(r, 1); /* object ids are unique within one heap dump only */
    memset(&restore, 0, sizeof restore);
    if (deobf_plan_init(&plan) != HPROF_OK && rc == HPROF_OK)
        rc = nomem(&a);
    if (rc == HPROF_OK && restoring)
        rc = restore_names(r, m, &plan, err);
    a.restored = restoring ? &plan : NULL;
    for (a.pass = 1; rc == HPROF_OK && a.pass <= 3; a.pass++) {
        check.mode = a.pass == 1 ? OBJCHECK_ADD : a.pass == 2 ? OBJCHECK_CONFIRM : OBJCHECK_OFF;
        struct hprof_visitor *head = &check.base;
        if (restoring) { /* each pass reads the dump with the names restored */
            deobf_filter_release(&restore);
            deobf_filter_init(&restore, &plan, a.ids);
            restore.base.next = head;
            head = &restore.base;
        }
        rc = hprof_reader_run(r, head);
        if (rc == HPROF_OK && a.pass == 1)
            rc = objcheck_seal(&a.objcheck, err);
        if (rc == HPROF_OK && a.pass == 1)
            rc = classes_resolve_all(&a.classes, err);
        if (rc == HPROF_OK && a.pass == 2)
            rc = add_dump_data_buffers(&a);
    }
    hprof_reader_set_strict(r, 0);
    reader_set_one_dump(r, 0);
    deobf_filter_release(&restore);
    if (rc == HPROF_OK)
        rc = build_classes(&a);
    if (rc == HPROF_OK)
        rc = group_identical_buffers(&a);
    deobf_plan_free(&plan);
    release(&a);
    if (rc != HPROF_OK)
        hprof_info_free(info);
    return rc;
}

void hprof_info_free(struct hprof_info *info)
{
    for (size_t i = 0; info->classes != NULL && i < info->n_classes; i++)
        free(info->classes[i].name);
    free(info->classes);
    free(info->bitmaps);
    info->classes = NULL;
    info->bitmaps = NULL;
    info->n_classes = info->n_bitmaps = 0;
}
