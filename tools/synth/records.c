/*
 * records.c - hprof-synth's ids and records: STRINGs and LOAD_CLASSes
 * written once each, heap dump segments cut as ART cuts them, and the
 * sub-records of every kind.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth.h"

uint64_t next_random(struct synth *s)
{
    /* xorshift64: deterministic across platforms */
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return s->rng;
}

uint64_t new_object_id(struct synth *s)
{
    uint64_t id = s->next_object;
    s->next_object += s->android ? 8 : 16;
    return id;
}

uint64_t string_id(struct synth *s, const char *text)
{
    for (int i = 0; i < s->n_texts; i++)
        if (strcmp(s->texts[i], text) == 0)
            return s->text_ids[i];
    if (s->n_texts == MAX_STRINGS) {
        s->rc = HPROF_ERR_USAGE;
        return 0;
    }
    struct hprof_string rec = { .id = s->next_string, .length = (uint32_t)strlen(text),
                                .utf8 = (const uint8_t *)text };
    s->next_string += s->android ? 4 : 8;
    s->texts[s->n_texts] = text;
    s->text_ids[s->n_texts++] = rec.id;
    if (s->rc >= 0)
        s->rc = hprof_visit_string(s->out, &rec);
    return rec.id;
}

/* "java.lang.String" in Android dumps, "java/lang/String" in HotSpot ones. */
const char *class_name(struct synth *s, const char *android, const char *hotspot)
{
    return s->android ? android : hotspot;
}

uint64_t load_class(struct synth *s, const char *name)
{
    uint64_t name_id = string_id(s, name);
    struct hprof_load_class c = { .class_serial = ++s->next_serial, .class_id = new_object_id(s),
                                  .stack_serial = 1, .name_id = name_id };
    if (s->rc >= 0)
        s->rc = hprof_visit_load_class(s->out, &c);
    return c.class_id;
}

/* ---- Segments and heaps ---------------------------------------------------- */

void end_segment(struct synth *s)
{
    if (s->seg_open && s->rc >= 0) {
        struct hprof_segment seg = { .tag = s->seg_tag };
        s->rc = hprof_visit_heap_end(s->out, &seg);
    }
    s->seg_open = 0;
}

/* Before each sub-record of `bytes` bytes: ART starts a new segment after
 * 128 objects or once the segment's body has reached 4096 bytes (so a big
 * array ends the segment it joins), and then the heap is the default one
 * until a HEAP_DUMP_INFO says otherwise. */
void place(struct synth *s, uint32_t heap, uint64_t bytes)
{
    if (s->seg_open && (s->seg_objects >= s->seg_limit || s->seg_bytes >= s->seg_byte_limit))
        end_segment(s);
    if (!s->seg_open && s->rc >= 0) {
        struct hprof_segment seg = { .tag = s->seg_tag };
        s->rc = hprof_visit_heap_begin(s->out, &seg);
        s->seg_open = 1;
        s->seg_objects = 0;
        s->seg_bytes = 0;
        s->seg_heap = ~0u;
    }
    s->seg_objects++;
    s->seg_bytes += bytes;
    s->records_placed++;
    if (s->android && heap != ~0u && heap != s->seg_heap && s->rc >= 0) {
        const char *name = heap == 'Z' ? "zygote" : heap == 'I' ? "image" : "app";
        struct hprof_heap_info info = { .heap_id = heap, .name_id = string_id(s, name) };
        s->rc = hprof_visit_heap_info(s->out, &info);
        s->seg_heap = heap;
        s->seg_bytes += 1 + 4 + s->ids;
    }
}

static int is_system(uint32_t heap)
{
    return heap == 'Z' || heap == 'I';
}

/* ---- Sub-records ------------------------------------------------------------ */

void root(struct synth *s, uint8_t tag, uint64_t id, uint32_t thread, uint32_t frame)
{
    place(s, ~0u, 1 + s->ids);
    struct hprof_root r = { .tag = tag, .id = id, .thread_serial = thread, .frame = frame };
    if (tag == HPROF_ROOT_JNI_GLOBAL)
        r.jni_ref = 0x70000000 + id;
    s->roots++;
    if (s->rc >= 0)
        s->rc = hprof_visit_root(s->out, &r);
}

void class_dump(struct synth *s, uint32_t heap, uint64_t id, uint64_t super_id,
                const struct fdef *fields, unsigned n_fields,
                const struct hprof_static_field *statics, unsigned n_statics,
                const struct hprof_constant *constants, unsigned n_constants,
                uint32_t instance_size)
{
    struct hprof_field f[MAX_FIELDS];
    for (unsigned i = 0; i < n_fields; i++)
        f[i] = (struct hprof_field){ string_id(s, fields[i].name), fields[i].type };
    uint64_t bytes = 1 + 7 * (uint64_t)s->ids + 4 + 4 + 2 + 2 + 2 + n_fields * (s->ids + 1u);
    for (unsigned i = 0; i < n_constants; i++)
        bytes += 2 + 1 + hprof_type_size(constants[i].type, s->ids);
    for (unsigned i = 0; i < n_statics; i++)
        bytes += s->ids + 1 + hprof_type_size(statics[i].type, s->ids);
    place(s, heap, bytes);
    struct hprof_class_dump cd = {
        .id = id, .stack_serial = 1, .super_id = super_id, .instance_size = instance_size,
        .n_constants = (uint16_t)n_constants, .constants = constants,
        .n_statics = (uint16_t)n_statics, .statics = statics,
        .n_fields = (uint16_t)n_fields, .fields = f,
    };
    s->class_dumps++;
    if (s->rc >= 0)
        s->rc = hprof_visit_class_dump(s->out, &cd);
}

void put(struct values *v, uint64_t x, unsigned size)
{
    for (unsigned i = size; i > 0; i--)
        v->b[v->n + i - 1] = (uint8_t)x, x >>= 8;
    v->n += size;
}

/* An app String or Bitmap held back by --late-referrers. */
static int hold_late(struct synth *s, uint32_t heap, uint64_t id, uint64_t class_id,
                     const struct values *v)
{
    if (s->late_after == 0 || s->releasing || is_system(heap) ||
        (class_id != s->late_classes[0] && class_id != s->late_classes[1]))
        return 0;
    if (s->n_late == s->cap_late) {
        size_t cap = s->cap_late ? 2 * s->cap_late : 256;
        struct late_instance *grown = realloc(s->late, cap * sizeof *grown);
        if (grown == NULL) {
            s->rc = HPROF_ERR_NOMEM;
            return 1;
        }
        s->late = grown;
        s->cap_late = cap;
    }
    s->late[s->n_late++] = (struct late_instance){ s->records_placed + s->late_after, heap, id,
                                                   class_id, *v };
    return 1;
}

void release_late(struct synth *s, int all)
{
    if (s->releasing)
        return;
    s->releasing = 1;
    while (s->first_late < s->n_late && s->rc >= 0 &&
           (all || s->late[s->first_late].due <= s->records_placed)) {
        struct late_instance *l = &s->late[s->first_late++];
        instance(s, l->heap, l->id, l->class_id, &l->v);
    }
    if (s->first_late == s->n_late)
        s->first_late = s->n_late = 0;
    s->releasing = 0;
    if (all) {
        free(s->late);
        s->late = NULL;
        s->cap_late = 0;
    }
}

void instance(struct synth *s, uint32_t heap, uint64_t id, uint64_t class_id,
              const struct values *v)
{
    if (hold_late(s, heap, id, class_id, v))
        return;
    place(s, heap, 1 + 2 * s->ids + 8 + v->n);
    struct hprof_instance o = { .id = id, .stack_serial = 1, .class_id = class_id,
                                .length = (uint32_t)v->n, .values = v->b };
    s->instances[!is_system(heap)]++;
    if (s->rc >= 0)
        s->rc = hprof_visit_instance(s->out, &o);
    release_late(s, 0);
}

void object_array(struct synth *s, uint32_t heap, uint64_t id, uint64_t class_id,
                  const uint64_t *elements, uint32_t n)
{
    uint8_t *bytes = malloc((size_t)n * s->ids + 1);
    if (bytes == NULL) {
        s->rc = HPROF_ERR_NOMEM;
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        for (unsigned k = 0; k < s->ids; k++)
            bytes[(size_t)i * s->ids + k] = (uint8_t)(elements[i] >> (8 * (s->ids - 1 - k)));
    place(s, heap, 1 + 2 * s->ids + 8 + (uint64_t)n * s->ids);
    struct hprof_object_array a = { .id = id, .stack_serial = 1, .count = n,
                                    .class_id = class_id, .n = n, .elements = bytes };
    s->object_arrays[!is_system(heap)]++;
    if (s->rc >= 0)
        s->rc = hprof_visit_object_array(s->out, &a);
    free(bytes);
    release_late(s, 0);
}

void primitive_array(struct synth *s, uint32_t heap, uint64_t id, uint8_t type,
                     const void *data, uint32_t count)
{
    place(s, heap, 1 + s->ids + 9 + (uint64_t)count * hprof_type_size(type, s->ids));
    struct hprof_primitive_array a = {
        .tag = HPROF_PRIMITIVE_ARRAY_DUMP, .id = id, .stack_serial = 1, .count = count,
        .type = type, .length = (size_t)count * hprof_type_size(type, s->ids), .data = data,
    };
    s->primitive_arrays[!is_system(heap)]++;
    if (s->rc >= 0)
        s->rc = hprof_visit_primitive_array(s->out, &a);
    release_late(s, 0);
}

/* Bytes from the generator's stream, or a pattern derived from `seed` (the
 * same seed gives byte-identical contents: the duplicates to find). */
uint8_t *pattern(uint64_t seed, size_t len)
{
    uint8_t *b = malloc(len ? len : 1);
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; b != NULL && i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b[i] = (uint8_t)(x >> 24);
    }
    return b;
}

/* ---- Strings ------------------------------------------------------------------ */

/* A java.lang.String and its value array, in ART's order (array right after
 * the instance).  Latin-1 text is stored compressed as byte[] in Android
 * dumps, other text as char[]; HotSpot dumps use byte[] with coder. */
uint64_t string_object_hashed(struct synth *s, const struct model *m, uint32_t heap,
                              const char *text, uint32_t hash)
{
    uint16_t units[256];
    uint32_t n = 0;
    int latin1 = 1;
    /* Decode UTF-8 to UTF-16 (BMP only is enough for fixtures). */
    for (const uint8_t *p = (const uint8_t *)text; *p && n < 256; n++) {
        if (*p < 0x80) {
            units[n] = *p++;
        } else if ((*p & 0xE0) == 0xC0) {
            units[n] = (uint16_t)((p[0] & 0x1F) << 6 | (p[1] & 0x3F));
            p += 2;
        } else {
            units[n] = (uint16_t)((p[0] & 0x0F) << 12 | (p[1] & 0x3F) << 6 | (p[2] & 0x3F));
            p += 3;
        }
        if (units[n] > 0xFF)
            latin1 = 0;
    }
    uint64_t id = new_object_id(s), value = new_object_id(s);
    struct values v = { .n = 0 };
    uint8_t bytes[512];
    uint32_t count;
    uint8_t type;
    if (latin1) {
        for (uint32_t i = 0; i < n; i++)
            bytes[i] = (uint8_t)units[i];
        count = n;
        type = HPROF_TYPE_BYTE;
    } else if (s->android) {
        for (uint32_t i = 0; i < n; i++)
            bytes[2 * i] = (uint8_t)(units[i] >> 8), bytes[2 * i + 1] = (uint8_t)units[i];
        count = n;
        type = HPROF_TYPE_CHAR;
    } else { /* HotSpot UTF16 coder: a byte[] of twice the length */
        for (uint32_t i = 0; i < n; i++)
            bytes[2 * i] = (uint8_t)(units[i] >> 8), bytes[2 * i + 1] = (uint8_t)units[i];
        count = 2 * n;
        type = HPROF_TYPE_BYTE;
    }
    if (s->android) { /* count, hash, value */
        put(&v, n, 4);
        put(&v, hash, 4);
        put(&v, value, s->ids);
    } else {          /* value, coder, hash, hashIsZero */
        put(&v, value, s->ids);
        put(&v, latin1 ? 0 : 1, 1);
        put(&v, hash, 4);
        put(&v, hash == 0, 1);
    }
    instance(s, heap, id, m->string, &v);
    primitive_array(s, heap, value, type, bytes, count);
    if (!is_system(heap))
        s->string_instances_app++;
    return id;
}

/* A String whose hash has not been asked for yet (0, as the runtime leaves it). */
uint64_t string_object(struct synth *s, const struct model *m, uint32_t heap,
                       const char *text)
{
    return string_object_hashed(s, m, heap, text, 0);
}
