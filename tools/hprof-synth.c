/*
 * hprof-synth - write a deterministic heap dump for tests and benchmarks.
 *
 * --android (default) models ART's writer (art/runtime/hprof/hprof.cc):
 * JAVA PROFILE 1.0.3, 4-byte ids, STRING/LOAD_CLASS/STACK_TRACE before the
 * heap, small HEAP_DUMP_SEGMENTs (at most 128 objects, ended once past 4 KiB)
 * each switching heaps
 * with HEAP_DUMP_INFO, roots first, the image ('I'), zygote ('Z') and app
 * ('A') heaps, java.lang.String with the synthetic `value` field and its
 * char[]/byte[] right after the instance, android.graphics.Bitmap with
 * mBuffer (shared, duplicated, null and recycled cases) and the Android 10+
 * Bitmap$DumpData holder, every root kind, statics of every type, a
 * superclass chain and non-ASCII (modified UTF-8) STRING records.
 *
 * --hotspot models a 64-bit HotSpot dump: 1.0.2, 8-byte ids, slash class
 * names, String.value byte[] with coder, class dumps first, large segments.
 *
 * It writes through libhprof's writer: the generator drives the visitor API
 * like a reader would.  --manifest FILE writes what was generated (counts the
 * tests check tools against), one "key value" per line.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

enum { MAX_STRINGS = 256, MAX_FIELDS = 16 };

struct synth {
    struct hprof_visitor *out;
    int android;
    unsigned ids;
    uint64_t next_object;
    uint64_t next_string;
    uint32_t next_serial;
    uint64_t rng;
    int rc;

    /* STRING ids already written, by text. */
    const char *texts[MAX_STRINGS];
    uint64_t text_ids[MAX_STRINGS];
    int n_texts;

    /* The open segment. */
    int seg_open;
    unsigned seg_objects, seg_limit;
    uint64_t seg_bytes, seg_byte_limit; /* the body so far; ART's limit */
    uint32_t seg_heap;              /* heap of the last HEAP_DUMP_INFO, ~0 none */
    uint8_t seg_tag;                /* HEAP_DUMP_SEGMENT, or HEAP_DUMP (--whole-dumps) */

    /* Bookkeeping for --manifest. */
    uint64_t instances[2], object_arrays[2], primitive_arrays[2]; /* [system, app] */
    uint64_t class_dumps, roots, roots_to_system_dropped;
    uint64_t string_instances_app, bitmaps, bitmap_slots;
    uint64_t dedupe_groups, dedupe_merged, dedupe_dropped;
    uint64_t standins;
    int system_links;               /* --system-links */

    struct secrets *secrets;    /* --secrets: plant them, NULL otherwise */
};

/* Ids of the classes and of named objects the heap refers to. */
struct model {
    uint64_t object, string, object_array, byte_array_array, thread;
    uint64_t bitmap, dump_data, base, derived, leaf, statics;
    uint64_t dump_data_instance;
    uint64_t primitive_array_classes[8];
    uint64_t keyed_ref, activity, main_activity;
    uint64_t build, build_version, reference, references[4], klass; /* --system-links */
    uint32_t thread_serial, stack_serial;
};

#define CHECK(s) do { if ((s)->rc < 0) return; } while (0)

static uint64_t next_random(struct synth *s)
{
    /* xorshift64: deterministic across platforms */
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return s->rng;
}

static uint64_t new_object_id(struct synth *s)
{
    uint64_t id = s->next_object;
    s->next_object += s->android ? 8 : 16;
    return id;
}

static uint64_t string_id(struct synth *s, const char *text)
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
static const char *class_name(struct synth *s, const char *android, const char *hotspot)
{
    return s->android ? android : hotspot;
}

static uint64_t load_class(struct synth *s, const char *name)
{
    uint64_t name_id = string_id(s, name);
    struct hprof_load_class c = { .class_serial = ++s->next_serial, .class_id = new_object_id(s),
                                  .stack_serial = 1, .name_id = name_id };
    if (s->rc >= 0)
        s->rc = hprof_visit_load_class(s->out, &c);
    return c.class_id;
}

/* ---- Segments and heaps ---------------------------------------------------- */

static void end_segment(struct synth *s)
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
static void place(struct synth *s, uint32_t heap, uint64_t bytes)
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

static void root(struct synth *s, uint8_t tag, uint64_t id, uint32_t thread, uint32_t frame)
{
    place(s, ~0u, 1 + s->ids);
    struct hprof_root r = { .tag = tag, .id = id, .thread_serial = thread, .frame = frame };
    if (tag == HPROF_ROOT_JNI_GLOBAL)
        r.jni_ref = 0x70000000 + id;
    s->roots++;
    if (s->rc >= 0)
        s->rc = hprof_visit_root(s->out, &r);
}

struct fdef {
    const char *name;
    uint8_t type;
};

static void class_dump(struct synth *s, uint32_t heap, uint64_t id, uint64_t super_id,
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

/* Field values are assembled big-endian, own class first. */
struct values {
    uint8_t b[128];
    size_t n;
};

static void put(struct values *v, uint64_t x, unsigned size)
{
    for (unsigned i = size; i > 0; i--)
        v->b[v->n + i - 1] = (uint8_t)x, x >>= 8;
    v->n += size;
}

static void instance(struct synth *s, uint32_t heap, uint64_t id, uint64_t class_id,
                     const struct values *v)
{
    place(s, heap, 1 + 2 * s->ids + 8 + v->n);
    struct hprof_instance o = { .id = id, .stack_serial = 1, .class_id = class_id,
                                .length = (uint32_t)v->n, .values = v->b };
    s->instances[!is_system(heap)]++;
    if (s->rc >= 0)
        s->rc = hprof_visit_instance(s->out, &o);
}

static void object_array(struct synth *s, uint32_t heap, uint64_t id, uint64_t class_id,
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
}

static void primitive_array(struct synth *s, uint32_t heap, uint64_t id, uint8_t type,
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
}

/* Bytes from the generator's stream, or a pattern derived from `seed` (the
 * same seed gives byte-identical contents: the duplicates to find). */
static uint8_t *pattern(uint64_t seed, size_t len)
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
static uint64_t string_object_hashed(struct synth *s, const struct model *m, uint32_t heap,
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
static uint64_t string_object(struct synth *s, const struct model *m, uint32_t heap,
                              const char *text)
{
    return string_object_hashed(s, m, heap, text, 0);
}

/* ---- Planted secrets (--secrets) ----------------------------------------------
 * Unique secrets in each kind of place an Android heap holds data, and a
 * manifest of them for tests/hprof-secrets.c (see there for its format):
 * "gone" what --redact --redact-fields must remove, "stays" what leak
 * analysis needs (LeakCanary's keys and names, the runtime's thread names,
 * the device's Build strings).  The generator of the secrets is its own,
 * so the rest of the dump is the same with or without them. */

enum { BOXED_INT, BOXED_LONG, BOXED_DOUBLE, BOXED_FLOAT, BOXED_CHAR, BOXED_SHORT, BOXED_BYTE,
       N_BOXED };

struct secrets {
    FILE *manifest;
    uint64_t rng;
    uint64_t boxed[N_BOXED], uuid, date, node, location, build, account, byte_holder, vault,
        keyed_ref_1x;
};

static const struct {
    const char *name;
    uint8_t type;
} boxed_classes[N_BOXED] = {
    { "java.lang.Integer", HPROF_TYPE_INT }, { "java.lang.Long", HPROF_TYPE_LONG },
    { "java.lang.Double", HPROF_TYPE_DOUBLE }, { "java.lang.Float", HPROF_TYPE_FLOAT },
    { "java.lang.Character", HPROF_TYPE_CHAR }, { "java.lang.Short", HPROF_TYPE_SHORT },
    { "java.lang.Byte", HPROF_TYPE_BYTE },
};

static void load_secret_classes(struct synth *s)
{
    struct secrets *sec = s->secrets;
    for (int i = 0; i < N_BOXED; i++)
        sec->boxed[i] = load_class(s, boxed_classes[i].name);
    sec->uuid = load_class(s, "java.util.UUID");
    sec->date = load_class(s, "java.util.Date");
    sec->node = load_class(s, "java.util.HashMap$Node");
    sec->location = load_class(s, "android.location.Location");
    sec->build = load_class(s, "android.os.Build");
    sec->account = load_class(s, "com.example.Account");
    sec->byte_holder = load_class(s, "com.example.ByteHolder");
    sec->vault = load_class(s, "com.example.Vault");
    sec->keyed_ref_1x = load_class(s, "com.squareup.leakcanary.KeyedWeakReference");
    static const char *const names[] = {
        "mostSigBits", "leastSigBits", "fastTime", "mLatitude", "mLongitude", "MANUFACTURER",
        "MODEL", "iban", "balance", "rate", "ratio", "initial", "code", "sLong", "sInt", "sText",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        string_id(s, names[i]);
}

static uint64_t secret_random(struct secrets *sec)
{
    sec->rng ^= sec->rng << 13;
    sec->rng ^= sec->rng >> 7;
    sec->rng ^= sec->rng << 17;
    return sec->rng;
}

/* A value with no zero byte (zeros are everywhere in a dump). */
static uint64_t secret_bits(struct secrets *sec)
{
    uint64_t v = secret_random(sec);
    for (int k = 0; k < 8; k++)
        if ((v >> (8 * k) & 0xFF) == 0)
            v |= 0x5Aull << (8 * k);
    return v;
}

static void base36(uint64_t v, char *out)
{
    char digits[16];
    int n = 0;
    do {
        digits[n++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
        v /= 36;
    } while (v != 0 && n < 13);
    while (n > 0)
        *out++ = digits[--n];
    *out = '\0';
}

/* A unique text, "P" and letters and digits, in `out` (64 bytes). */
static const char *secret_text(struct secrets *sec, const char *expect, const char *kind, char *out)
{
    out[0] = 'P';
    base36(secret_random(sec) >> 2, out + 1);
    strcat(out, "q");
    base36(secret_random(sec) >> 2, out + strlen(out));
    fprintf(sec->manifest, "%s %s text %s\n", expect, kind, out);
    return out;
}

/* A number of `size` bytes: searched for in the whole file when it has 4
 * or 8 bytes, and in the instances of `class` (if any) in any case. */
static uint64_t secret_number(struct secrets *sec, const char *kind, const char *class,
                              uint64_t bits, unsigned size)
{
    if (size < 8)
        bits &= (1ull << (8 * size)) - 1;
    if (size == 4 || size == 8)
        fprintf(sec->manifest, "gone %s i%u %0*" PRIx64 "\n", kind, 8 * size, 2 * size, bits);
    if (class != NULL)
        fprintf(sec->manifest, "gone %s field %s %0*" PRIx64 "\n", kind, class, 2 * size, bits);
    return bits;
}

/* The hash String.hashCode() caches: over the UTF-16 code units. */
static uint32_t java_hash(const char *text)
{
    uint32_t h = 0;
    for (const uint8_t *p = (const uint8_t *)text; *p;) {
        uint32_t unit;
        if (*p < 0x80) {
            unit = *p++;
        } else if ((*p & 0xE0) == 0xC0) {
            unit = (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
            p += 2;
        } else {
            unit = (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
            p += 3;
        }
        h = 31 * h + unit;
    }
    return h;
}

static void secret_class_dumps(struct synth *s, const struct model *m, uint64_t manufacturer,
                               uint64_t model, uint64_t vault_text, uint64_t vault_long,
                               uint32_t vault_int)
{
    struct secrets *sec = s->secrets;
    unsigned ids = s->ids;
    for (int i = 0; i < N_BOXED; i++) {
        struct fdef value = { "value", boxed_classes[i].type };
        class_dump(s, 'I', sec->boxed[i], m->object, &value, 1, NULL, 0, NULL, 0,
                   hprof_type_size(value.type, ids));
    }
    static const struct fdef uuid_fields[] = { { "mostSigBits", HPROF_TYPE_LONG },
                                               { "leastSigBits", HPROF_TYPE_LONG } };
    class_dump(s, 'I', sec->uuid, m->object, uuid_fields, 2, NULL, 0, NULL, 0, 16);
    static const struct fdef date_fields[] = { { "fastTime", HPROF_TYPE_LONG } };
    class_dump(s, 'I', sec->date, m->object, date_fields, 1, NULL, 0, NULL, 0, 8);
    static const struct fdef node_fields[] = { { "hash", HPROF_TYPE_INT }, { "key", HPROF_TYPE_OBJECT },
                                               { "value", HPROF_TYPE_OBJECT }, { "next", HPROF_TYPE_OBJECT } };
    class_dump(s, 'I', sec->node, m->object, node_fields, 4, NULL, 0, NULL, 0, 4 + 3 * ids);
    static const struct fdef location_fields[] = { { "mLatitude", HPROF_TYPE_DOUBLE },
                                                   { "mLongitude", HPROF_TYPE_DOUBLE } };
    class_dump(s, 'I', sec->location, m->object, location_fields, 2, NULL, 0, NULL, 0, 16);
    struct hprof_static_field build[] = {
        { string_id(s, "MANUFACTURER"), HPROF_TYPE_OBJECT, manufacturer },
        { string_id(s, "MODEL"), HPROF_TYPE_OBJECT, model },
    };
    class_dump(s, 'I', sec->build, m->object, NULL, 0, build, 2, NULL, 0, 0);
    static const struct fdef account_fields[] = {
        { "iban", HPROF_TYPE_OBJECT }, { "balance", HPROF_TYPE_LONG }, { "rate", HPROF_TYPE_DOUBLE },
        { "ratio", HPROF_TYPE_FLOAT }, { "code", HPROF_TYPE_INT }, { "sh", HPROF_TYPE_SHORT },
        { "initial", HPROF_TYPE_CHAR },
    };
    class_dump(s, 'A', sec->account, m->object, account_fields, 7, NULL, 0, NULL, 0,
               ids + 8 + 8 + 4 + 4 + 2 + 2);
    static const struct fdef byte_fields[] = { { "b", HPROF_TYPE_BYTE } };
    class_dump(s, 'A', sec->byte_holder, m->object, byte_fields, 1, NULL, 0, NULL, 0, 1);
    struct hprof_static_field vault[] = {
        { string_id(s, "sLong"), HPROF_TYPE_LONG, vault_long },
        { string_id(s, "sInt"), HPROF_TYPE_INT, vault_int },
        { string_id(s, "sText"), HPROF_TYPE_OBJECT, vault_text },
    };
    class_dump(s, 'A', sec->vault, m->object, NULL, 0, vault, 3, NULL, 0, 0);
    static const struct fdef keyed_fields[] = { { "key", HPROF_TYPE_OBJECT }, { "name", HPROF_TYPE_OBJECT } };
    class_dump(s, 'A', sec->keyed_ref_1x, m->object, keyed_fields, 2, NULL, 0, NULL, 0, 2 * ids);
}

/* An instance of a class of one field of `size` bytes. */
static void one_field_instance(struct synth *s, uint64_t class_id, uint64_t bits, unsigned size)
{
    struct values v = { .n = 0 };
    put(&v, bits, size);
    instance(s, 'A', new_object_id(s), class_id, &v);
}

static void plant_secrets(struct synth *s, const struct model *m)
{
    struct secrets *sec = s->secrets;
    unsigned ids = s->ids;
    char t[64], t2[16];
    struct values v = { .n = 0 };

    /* Texts: compressed (byte[]) and UTF-16 (char[]); hash caches */
    string_object(s, m, 'A', secret_text(sec, "gone", "string-latin1", t));
    base36(secret_random(sec) >> 2, t2);
    snprintf(t, sizeof t, "Z\xC3\xBCrich-\xCE\xA9-%s", t2);
    fprintf(sec->manifest, "gone string-utf16 text %s\n", t);
    string_object(s, m, 'A', t);
    secret_text(sec, "gone", "string-hash-text", t);
    string_object_hashed(s, m, 'A', t, (uint32_t)secret_number(sec, "string-hash", "java.lang.String",
                                                               java_hash(t), 4));
    snprintf(t, sizeof t, "%04u", (unsigned)(secret_random(sec) % 10000));
    uint32_t h = java_hash(t);
    secret_number(sec, "pin-string-hash", "java.lang.String", h, 4);
    uint64_t pin = string_object_hashed(s, m, 'A', t, h);
    put(&v, secret_number(sec, "pin-hashmap-node-hash", "java.util.HashMap$Node", h ^ h >> 16, 4), 4);
    put(&v, pin, ids);
    put(&v, 0, ids);
    put(&v, 0, ids);
    instance(s, 'A', new_object_id(s), sec->node, &v);

    /* Statics and the device's Build strings (made first: the class dumps name them) */
    uint64_t manufacturer = string_object(s, m, 'A', "Synthetic Devices Inc");
    fprintf(sec->manifest, "stays Build.MANUFACTURER text Synthetic Devices Inc\n");
    uint64_t model = string_object(s, m, 'A', "Synthphone Model 7");
    fprintf(sec->manifest, "stays Build.MODEL text Synthphone Model 7\n");
    uint64_t vault_text = string_object(s, m, 'A', secret_text(sec, "gone", "static-string", t));
    uint64_t vault_long = secret_number(sec, "static-long", NULL, secret_bits(sec), 8);
    uint32_t vault_int = (uint32_t)secret_number(sec, "static-int", NULL, secret_bits(sec), 4);
    secret_class_dumps(s, m, manufacturer, model, vault_text, vault_long, vault_int);

    /* Boxed values */
    static const char *const kinds[N_BOXED] = { "Integer", "Long", "Double", "Float",
                                                "Character", "Short", "Byte" };
    for (int i = 0; i < N_BOXED; i++) {
        unsigned size = hprof_type_size(boxed_classes[i].type, ids);
        one_field_instance(s, sec->boxed[i], secret_number(sec, kinds[i], boxed_classes[i].name,
                                                           secret_bits(sec), size), size);
    }
    /* JDK value objects */
    v.n = 0;
    put(&v, secret_number(sec, "UUID", "java.util.UUID", secret_bits(sec), 8), 8);
    put(&v, secret_number(sec, "UUID", "java.util.UUID", secret_bits(sec), 8), 8);
    instance(s, 'A', new_object_id(s), sec->uuid, &v);
    uint64_t millis = 1500000000000ull + secret_random(sec) % 100000000000ull;
    one_field_instance(s, sec->date, secret_number(sec, "Date.fastTime", "java.util.Date", millis, 8), 8);
    v.n = 0;
    put(&v, secret_number(sec, "Location", "android.location.Location",
                          0x4048000000000000ull | (secret_bits(sec) >> 16), 8), 8);
    put(&v, secret_number(sec, "Location", "android.location.Location",
                          0x4000000000000000ull | (secret_bits(sec) >> 16), 8), 8);
    instance(s, 'A', new_object_id(s), sec->location, &v);

    /* An application class's fields of each type */
    uint64_t iban = string_object(s, m, 'A', secret_text(sec, "gone", "field-string", t));
    v.n = 0;
    put(&v, iban, ids);
    put(&v, secret_number(sec, "field-long", "com.example.Account", secret_bits(sec), 8), 8);
    put(&v, secret_number(sec, "field-double", "com.example.Account",
                          0x4090000000000000ull | (secret_bits(sec) >> 16), 8), 8);
    put(&v, secret_number(sec, "field-float", "com.example.Account",
                          0x44800000u | (secret_bits(sec) & 0x7FFFFF), 4), 4);
    put(&v, secret_number(sec, "field-int", "com.example.Account", secret_bits(sec), 4), 4);
    put(&v, secret_number(sec, "field-short", "com.example.Account", secret_bits(sec), 2), 2);
    put(&v, secret_number(sec, "field-char", "com.example.Account", secret_bits(sec), 2), 2);
    instance(s, 'A', new_object_id(s), sec->account, &v);
    one_field_instance(s, sec->byte_holder,
                       secret_number(sec, "field-byte", "com.example.ByteHolder", secret_bits(sec), 1), 1);

    /* Arrays: a byte[] buffer, char[], int[], long[] */
    secret_text(sec, "gone", "byte[]", t);
    primitive_array(s, 'A', new_object_id(s), HPROF_TYPE_BYTE, t, (uint32_t)strlen(t));
    secret_text(sec, "gone", "char[]", t);
    uint8_t chars[128];
    for (size_t i = 0; t[i]; i++)
        chars[2 * i] = 0, chars[2 * i + 1] = (uint8_t)t[i];
    primitive_array(s, 'A', new_object_id(s), HPROF_TYPE_CHAR, chars, (uint32_t)strlen(t));
    v.n = 0;
    put(&v, 7, 4);
    put(&v, secret_number(sec, "int[]", NULL, secret_bits(sec), 4), 4);
    primitive_array(s, 'A', new_object_id(s), HPROF_TYPE_INT, v.b, 2);
    v.n = 0;
    put(&v, 7, 8);
    put(&v, secret_number(sec, "long[]", NULL, secret_bits(sec), 8), 8);
    primitive_array(s, 'A', new_object_id(s), HPROF_TYPE_LONG, v.b, 2);

    /* Threads: one the app named, and the runtime's and LeakCanary's own */
    static const struct { const char *expect, *kind, *name; } threads[] = {
        { "gone", "thread-name", NULL },
        { "stays", "thread-FinalizerDaemon", "FinalizerDaemon" },
        { "stays", "thread-ReferenceQueueDaemon", "ReferenceQueueDaemon" },
        { "stays", "thread-LeakCanary-Heap-Dump", "LeakCanary-Heap-Dump" },
    };
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
        const char *name = threads[i].name;
        if (name == NULL)
            name = secret_text(sec, threads[i].expect, threads[i].kind, t);
        else
            fprintf(sec->manifest, "%s %s text %s\n", threads[i].expect, threads[i].kind, name);
        v.n = 0;
        put(&v, string_object(s, m, 'A', name), ids);
        instance(s, 'A', new_object_id(s), m->thread, &v);
    }

    /* LeakCanary 2: the key stays, the description is the app's text */
    uint64_t key = string_object(s, m, 'A', "0f3c9a7e-5d21-4b8e-a6c4-91e2d7b05a38");
    fprintf(sec->manifest, "stays KeyedWeakReference.key text 0f3c9a7e-5d21-4b8e-a6c4-91e2d7b05a38\n");
    uint64_t description = string_object(s, m, 'A',
                                         secret_text(sec, "gone", "KeyedWeakReference.description", t));
    v.n = 0;
    put(&v, key, ids);
    put(&v, description, ids);
    put(&v, 987654321, 8);
    instance(s, 'A', new_object_id(s), m->keyed_ref, &v);
    /* LeakCanary 1.x: key and name stay */
    key = string_object(s, m, 'A', "7d4e2b19-c3a0-4f6d-8e15-b9a2c0d3e4f7");
    fprintf(sec->manifest, "stays KeyedWeakReference-1.x.key text 7d4e2b19-c3a0-4f6d-8e15-b9a2c0d3e4f7\n");
    uint64_t name = string_object(s, m, 'A', "com.example.SettingsActivity");
    fprintf(sec->manifest, "stays KeyedWeakReference-1.x.name text com.example.SettingsActivity\n");
    v.n = 0;
    put(&v, key, ids);
    put(&v, name, ids);
    instance(s, 'A', new_object_id(s), sec->keyed_ref_1x, &v);
}

/* ---- The model ---------------------------------------------------------------- */

static void define_classes(struct synth *s, struct model *m)
{
    m->object = load_class(s, class_name(s, "java.lang.Object", "java/lang/Object"));
    m->string = load_class(s, class_name(s, "java.lang.String", "java/lang/String"));
    m->object_array = load_class(s, class_name(s, "java.lang.Object[]", "[Ljava/lang/Object;"));
    m->byte_array_array = load_class(s, class_name(s, "byte[][]", "[[B"));
    m->thread = load_class(s, class_name(s, "java.lang.Thread", "java/lang/Thread"));
    if (s->android) {
        m->bitmap = load_class(s, "android.graphics.Bitmap");
        m->dump_data = load_class(s, "android.graphics.Bitmap$DumpData");
    }
    m->base = load_class(s, class_name(s, "com.example.Base", "com/example/Base"));
    m->derived = load_class(s, class_name(s, "com.example.Derived", "com/example/Derived"));
    m->leaf = load_class(s, class_name(s, "com.example.Leaf", "com/example/Leaf"));
    m->statics = load_class(s, class_name(s, "com.example.Statics", "com/example/Statics"));
    /* What leak analysis reads: LeakCanary's watched references, and an
     * Activity whose title a --redact-keep rule can name. */
    m->keyed_ref = load_class(s, class_name(s, "leakcanary.KeyedWeakReference",
                                            "leakcanary/KeyedWeakReference"));
    m->activity = load_class(s, class_name(s, "android.app.Activity", "android/app/Activity"));
    m->main_activity = load_class(s, class_name(s, "com.example.MainActivity",
                                                "com/example/MainActivity"));
    /* Primitive array classes: analyzers (VisualVM) look them up by type. */
    static const char *const android_arrays[] = { "boolean[]", "char[]", "float[]", "double[]",
                                                  "byte[]", "short[]", "int[]", "long[]" };
    static const char *const hotspot_arrays[] = { "[Z", "[C", "[F", "[D", "[B", "[S", "[I", "[J" };
    for (int i = 0; i < 8; i++)
        m->primitive_array_classes[i] = load_class(s, class_name(s, android_arrays[i],
                                                                 hotspot_arrays[i]));
    /* Names used later, so that every STRING precedes the heap, as in ART. */
    static const char *const names[] = {
        "count", "hash", "value", "coder", "hashIsZero", "name", "mBuffer", "mWidth", "mHeight",
        "mRecycled", "mNativePtr", "dumpData", "format", "natives", "buffers", "id", "payload",
        "score", "flag", "ch", "sh", "b", "f", "l", "next", "tag", "sObject", "sBoolean",
        "sChar", "sFloat", "sDouble", "sByte", "sShort", "sInt", "sLong", "zygote", "image",
        "app", "main", "run", "()V", "Main.java", "key", "description", "watchUptimeMillis",
        "mTitle", "mDestroyed", "counter",
        /* modified UTF-8: U+00EF U+00E9, U+2615, U+1D11E as a surrogate pair, and NUL */
        "na\xC3\xAFve caf\xC3\xA9 \xE2\x98\x95 \xED\xA0\xB4\xED\xB4\x9E \xC0\x80 end",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        string_id(s, names[i]);
    if (s->system_links) {
        m->build = load_class(s, "android.os.Build");
        m->build_version = load_class(s, "android.os.Build$VERSION");
        /* VisualVM computes no retained size without these */
        m->reference = load_class(s, "java.lang.ref.Reference");
        m->klass = load_class(s, "java.lang.Class");
        static const char *const kinds[4] = {
            "java.lang.ref.WeakReference", "java.lang.ref.SoftReference",
            "java.lang.ref.FinalReference", "java.lang.ref.PhantomReference",
        };
        for (int i = 0; i < 4; i++)
            m->references[i] = load_class(s, kinds[i]);
        static const char *const link_names[] = {
            "MANUFACTURER", "BRAND", "MODEL", "FINGERPRINT", "SDK_INT", "RELEASE", "referent",
        };
        for (size_t i = 0; i < sizeof link_names / sizeof link_names[0]; i++)
            string_id(s, link_names[i]);
    }
    if (s->secrets)
        load_secret_classes(s);
}

static void stack_records(struct synth *s, struct model *m)
{
    uint8_t frame[4 * 8 + 8], trace[12 + 8], *p;
    unsigned ids = s->ids;
    uint64_t frame_id = 0x100;
    /* STACK_FRAME: frame, method, signature, source, class serial, line */
    p = frame;
    uint64_t refs[4] = { frame_id, string_id(s, "run"), string_id(s, "()V"),
                         string_id(s, "Main.java") };
    for (int i = 0; i < 4; i++)
        for (unsigned k = 0; k < ids; k++)
            *p++ = (uint8_t)(refs[i] >> (8 * (ids - 1 - k)));
    memcpy(p, "\0\0\0\1\0\0\0\x2a", 8);
    p += 8;
    struct hprof_record fr = { .tag = HPROF_TAG_STACK_FRAME, .length = (uint32_t)(p - frame),
                               .body = frame };
    /* STACK_TRACE serial 1, thread 1, one frame */
    p = trace;
    memcpy(p, "\0\0\0\1\0\0\0\1\0\0\0\1", 12);
    p += 12;
    for (unsigned k = 0; k < ids; k++)
        *p++ = (uint8_t)(frame_id >> (8 * (ids - 1 - k)));
    struct hprof_record tr = { .tag = HPROF_TAG_STACK_TRACE, .length = (uint32_t)(p - trace),
                               .body = trace };
    if (s->rc >= 0)
        s->rc = hprof_visit_record(s->out, &fr);
    if (s->rc >= 0)
        s->rc = hprof_visit_record(s->out, &tr);
    m->thread_serial = 1;
    m->stack_serial = 1;
}

static void system_classes(struct synth *s, const struct model *m)
{
    uint32_t heap = 'I';
    unsigned ids = s->ids;
    class_dump(s, heap, m->object, 0, NULL, 0, NULL, 0, NULL, 0, 0);
    if (s->android) {
        static const struct fdef string_fields[] = {
            { "count", HPROF_TYPE_INT }, { "hash", HPROF_TYPE_INT }, { "value", HPROF_TYPE_OBJECT },
        };
        class_dump(s, heap, m->string, m->object, string_fields, 3, NULL, 0, NULL, 0, 8 + ids);
    } else {
        static const struct fdef string_fields[] = {
            { "value", HPROF_TYPE_OBJECT }, { "coder", HPROF_TYPE_BYTE },
            { "hash", HPROF_TYPE_INT }, { "hashIsZero", HPROF_TYPE_BOOLEAN },
        };
        class_dump(s, heap, m->string, m->object, string_fields, 4, NULL, 0, NULL, 0, 6 + ids);
    }
    class_dump(s, heap, m->object_array, m->object, NULL, 0, NULL, 0, NULL, 0, 0);
    class_dump(s, heap, m->byte_array_array, m->object, NULL, 0, NULL, 0, NULL, 0, 0);
    for (int i = 0; i < 8; i++)
        class_dump(s, heap, m->primitive_array_classes[i], m->object, NULL, 0, NULL, 0, NULL, 0, 0);
    static const struct fdef thread_fields[] = { { "name", HPROF_TYPE_OBJECT } };
    class_dump(s, heap, m->thread, m->object, thread_fields, 1, NULL, 0, NULL, 0, ids);
    if (s->android) {
        static const struct fdef bitmap_fields[] = {
            { "mBuffer", HPROF_TYPE_OBJECT }, { "mWidth", HPROF_TYPE_INT },
            { "mHeight", HPROF_TYPE_INT }, { "mRecycled", HPROF_TYPE_BOOLEAN },
            { "mNativePtr", HPROF_TYPE_LONG },
        };
        struct hprof_static_field dump_data = { string_id(s, "dumpData"), HPROF_TYPE_OBJECT,
                                                m->dump_data_instance };
        class_dump(s, heap, m->bitmap, m->object, bitmap_fields, 5, &dump_data, 1, NULL, 0,
                   ids + 17);
        static const struct fdef dump_fields[] = {
            { "count", HPROF_TYPE_INT }, { "format", HPROF_TYPE_INT },
            { "natives", HPROF_TYPE_OBJECT }, { "buffers", HPROF_TYPE_OBJECT },
        };
        class_dump(s, heap, m->dump_data, m->object, dump_fields, 4, NULL, 0, NULL, 0,
                   8 + 2 * ids);
    }
}

static void app_classes(struct synth *s, const struct model *m, uint64_t static_string)
{
    uint32_t heap = 'A';
    unsigned ids = s->ids;
    static const struct fdef base_fields[] = {
        { "id", HPROF_TYPE_INT }, { "name", HPROF_TYPE_OBJECT },
    };
    static const struct fdef derived_fields[] = {
        { "payload", HPROF_TYPE_OBJECT }, { "score", HPROF_TYPE_DOUBLE },
        { "flag", HPROF_TYPE_BOOLEAN }, { "ch", HPROF_TYPE_CHAR }, { "sh", HPROF_TYPE_SHORT },
        { "b", HPROF_TYPE_BYTE }, { "f", HPROF_TYPE_FLOAT }, { "l", HPROF_TYPE_LONG },
        { "next", HPROF_TYPE_OBJECT },
    };
    static const struct fdef leaf_fields[] = { { "tag", HPROF_TYPE_OBJECT } };
    class_dump(s, heap, m->base, m->object, base_fields, 2, NULL, 0, NULL, 0, 4 + ids);
    class_dump(s, heap, m->derived, m->base, derived_fields, 9, NULL, 0, NULL, 0,
               4 + ids + 2 * ids + 8 + 1 + 2 + 2 + 1 + 4 + 8);
    class_dump(s, heap, m->leaf, m->derived, leaf_fields, 1, NULL, 0, NULL, 0, 0);
    /* One static of every basic type, and a constant-pool entry. */
    struct hprof_static_field statics[] = {
        { string_id(s, "sObject"), HPROF_TYPE_OBJECT, static_string },
        { string_id(s, "sBoolean"), HPROF_TYPE_BOOLEAN, 1 },
        { string_id(s, "sChar"), HPROF_TYPE_CHAR, 0x263A },
        { string_id(s, "sFloat"), HPROF_TYPE_FLOAT, 0x3FC00000 },
        { string_id(s, "sDouble"), HPROF_TYPE_DOUBLE, 0x400921FB54442D18ull },
        { string_id(s, "sByte"), HPROF_TYPE_BYTE, 0x7F },
        { string_id(s, "sShort"), HPROF_TYPE_SHORT, 0x1234 },
        { string_id(s, "sInt"), HPROF_TYPE_INT, 0xCAFEBABE },
        { string_id(s, "sLong"), HPROF_TYPE_LONG, 0x0123456789ABCDEFull },
    };
    struct hprof_constant constant = { 7, HPROF_TYPE_INT, 42 };
    class_dump(s, heap, m->statics, m->object, NULL, 0, statics, 9, &constant, 1, 0);
    static const struct fdef keyed_fields[] = {
        { "key", HPROF_TYPE_OBJECT }, { "description", HPROF_TYPE_OBJECT },
        { "watchUptimeMillis", HPROF_TYPE_LONG },
    };
    static const struct fdef activity_fields[] = {
        { "mTitle", HPROF_TYPE_OBJECT }, { "mDestroyed", HPROF_TYPE_BOOLEAN },
    };
    static const struct fdef main_fields[] = { { "counter", HPROF_TYPE_INT } };
    class_dump(s, heap, m->keyed_ref, m->object, keyed_fields, 3, NULL, 0, NULL, 0, 2 * ids + 8);
    class_dump(s, heap, m->activity, m->object, activity_fields, 2, NULL, 0, NULL, 0, ids + 1);
    class_dump(s, heap, m->main_activity, m->activity, main_fields, 1, NULL, 0, NULL, 0, 4);
}

/* A destroyed MainActivity watched by LeakCanary: the reference's key and
 * description and the activity's title are Strings that leak reports need. */
static void leak_candidates(struct synth *s, const struct model *m)
{
    struct values v = { .n = 0 };
    uint64_t activity = new_object_id(s);
    uint64_t title = string_object(s, m, 'A', "Secret account overview");
    put(&v, 0x2a, 4);                           /* MainActivity.counter */
    put(&v, title, s->ids);                     /* Activity.mTitle */
    put(&v, 1, 1);                              /* Activity.mDestroyed */
    instance(s, 'A', activity, m->main_activity, &v);
    uint64_t key = string_object(s, m, 'A', "5b2f0c1e-77aa-4f3e-9d1a-0c4e6d2b9f10");
    uint64_t description = string_object(s, m, 'A', "com.example.MainActivity received onDestroy");
    v.n = 0;
    put(&v, key, s->ids);
    put(&v, description, s->ids);
    put(&v, 123456789, 8);
    instance(s, 'A', new_object_id(s), m->keyed_ref, &v);
    (void)activity;
}

/* Base fields: id, name. */
static void base_values(struct synth *s, struct values *v, uint32_t id, uint64_t name)
{
    put(v, id, 4);
    put(v, name, s->ids);
}

/* Derived fields (own first), then Base's. */
static void derived_values(struct synth *s, struct values *v, uint64_t payload, uint64_t next,
                           uint32_t id, uint64_t name)
{
    put(v, payload, s->ids);
    put(v, 0x3FF0000000000000ull + (next_random(s) & 0xFFFF), 8);
    put(v, next_random(s) & 1, 1);
    put(v, 'a' + next_random(s) % 26, 2);
    put(v, next_random(s) & 0xFFFF, 2);
    put(v, next_random(s) & 0xFF, 1);
    put(v, 0x40490FDB, 4);
    put(v, next_random(s), 8);
    put(v, next, s->ids);
    base_values(s, v, id, name);
}

/* The app's ordinary population: a chain of Derived/Leaf objects with
 * byte[] payloads and names, and arrays of every primitive type. */
static uint64_t population(struct synth *s, const struct model *m, unsigned round,
                           unsigned objects, size_t payload_bytes)
{
    uint64_t next = 0, first = 0;
    for (unsigned i = 0; i < objects && s->rc >= 0; i++) {
        char text[64];
        snprintf(text, sizeof text, "object-%u-%u", round, i);
        uint64_t name = string_object(s, m, 'A', text);
        uint64_t payload = new_object_id(s);
        size_t len = payload_bytes / 2 + (size_t)(next_random(s) % (payload_bytes + 1));
        uint8_t *bytes = pattern(next_random(s), len);
        if (bytes == NULL) {
            s->rc = HPROF_ERR_NOMEM;
            break;
        }
        primitive_array(s, 'A', payload, HPROF_TYPE_BYTE, bytes, (uint32_t)len);
        free(bytes);
        uint64_t id = new_object_id(s);
        struct values v = { .n = 0 };
        if (i % 3 == 2) {
            put(&v, 0, s->ids); /* Leaf.tag */
            derived_values(s, &v, payload, next, i, name);
            instance(s, 'A', id, m->leaf, &v);
        } else {
            derived_values(s, &v, payload, next, i, name);
            instance(s, 'A', id, m->derived, &v);
        }
        next = id;
        if (first == 0)
            first = id;
    }
    /* One array of every primitive type. */
    static const uint8_t types[] = { HPROF_TYPE_BOOLEAN, HPROF_TYPE_CHAR, HPROF_TYPE_FLOAT,
                                     HPROF_TYPE_DOUBLE, HPROF_TYPE_BYTE, HPROF_TYPE_SHORT,
                                     HPROF_TYPE_INT, HPROF_TYPE_LONG };
    for (size_t t = 0; t < sizeof types; t++) {
        uint32_t count = 1 + (uint32_t)(next_random(s) % 200);
        uint8_t *data = pattern(round * 16 + t + 1000, (size_t)count * 8);
        if (data == NULL) {
            s->rc = HPROF_ERR_NOMEM;
            break;
        }
        primitive_array(s, 'A', new_object_id(s), types[t], data, count);
        free(data);
    }
    return next ? next : first;
}

static void bitmap(struct synth *s, const struct model *m, uint64_t buffer, uint32_t width,
                   uint32_t height, int recycled)
{
    struct values v = { .n = 0 };
    put(&v, buffer, s->ids);
    put(&v, width, 4);
    put(&v, height, 4);
    put(&v, recycled, 1);
    put(&v, 0x7f000000 + s->bitmaps * 64, 8);
    instance(s, 'A', new_object_id(s), m->bitmap, &v);
    s->bitmaps++;
    if (buffer != 0)
        s->bitmap_slots++;
}

/* Pixels that look like an image (smooth gradients, a little noise), so
 * that fixtures compress as real dumps do. */
static void pixel_buffer(struct synth *s, uint64_t id, uint64_t seed, size_t bytes)
{
    uint8_t *px = malloc(bytes ? bytes : 1);
    if (px == NULL) {
        s->rc = HPROF_ERR_NOMEM;
        return;
    }
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < bytes; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t pixel = i / 4;
        unsigned channel = i % 4;
        px[i] = channel == 3 ? 0xFF
                             : (uint8_t)(pixel / 64 * (channel + 1) + seed * 40 +
                                         ((x & 0xF0) == 0 ? x >> 62 : 0));
    }
    primitive_array(s, 'A', id, HPROF_TYPE_BYTE, px, (uint32_t)bytes);
    free(px);
}

/* Bitmaps before Android 8 (mBuffer): A and B hold identical pixels, bm3
 * shares A's buffer object, bm4 has none, bm5 is recycled; C and D are
 * identical too but D is also referenced by a Leaf (so it must survive as an
 * ordinary array); E is large (several read chunks) and unique.  Android 10+
 * DumpData: three encoded buffers, the first two identical. */
static void bitmaps(struct synth *s, const struct model *m, size_t big_bytes)
{
    const uint32_t w = 64, h = 32;
    const size_t small = (size_t)w * h * 4;
    uint64_t a = new_object_id(s), b = new_object_id(s), c = new_object_id(s);
    uint64_t d = new_object_id(s), e = new_object_id(s);
    pixel_buffer(s, a, 1, small);
    bitmap(s, m, a, w, h, 0);
    pixel_buffer(s, b, 1, small);
    bitmap(s, m, b, w, h, 0);
    bitmap(s, m, a, w, h, 0);
    bitmap(s, m, 0, w, h, 0);
    pixel_buffer(s, c, 2, small);
    bitmap(s, m, c, w, h, 1);
    bitmap(s, m, d, w, h, 0);       /* before its buffer: order must not matter */
    pixel_buffer(s, d, 2, small);
    struct values leaf = { .n = 0 };
    put(&leaf, d, s->ids);
    derived_values(s, &leaf, 0, 0, 99, 0);
    instance(s, 'A', new_object_id(s), m->leaf, &leaf);
    pixel_buffer(s, e, 3, big_bytes);
    bitmap(s, m, e, 1024, (uint32_t)(big_bytes / 4096), 0);
    s->dedupe_groups += 2;          /* {A,B}, {C,D} */
    s->dedupe_merged += 2;          /* B and D */
    s->dedupe_dropped += 1;         /* B; D stays for the Leaf */

    /* Bitmap$DumpData: natives[i] pairs with buffers[i]. */
    uint64_t natives = new_object_id(s), buffers = new_object_id(s);
    uint64_t png[3] = { new_object_id(s), new_object_id(s), new_object_id(s) };
    for (int i = 0; i < 3; i++) {
        size_t len = 300 + (size_t)(i == 2) * 77;
        uint8_t *bytes = pattern(i == 1 ? 10 : 10 + (uint64_t)i, len);
        if (bytes == NULL) {
            s->rc = HPROF_ERR_NOMEM;
            return;
        }
        memcpy(bytes, "\x89PNG\r\n\x1a\n", 8);
        primitive_array(s, 'A', png[i], HPROF_TYPE_BYTE, bytes, (uint32_t)len);
        free(bytes);
    }
    object_array(s, 'A', buffers, m->byte_array_array, png, 3);
    uint8_t nat[24];
    for (int i = 0; i < 24; i++)
        nat[i] = (uint8_t)(i % 8 == 7 ? 0x40 + i : 0x7f * (i % 8 == 0));
    primitive_array(s, 'A', natives, HPROF_TYPE_LONG, nat, 3);
    struct values dd = { .n = 0 };
    put(&dd, 3, 4);
    put(&dd, 1, 4);
    put(&dd, natives, s->ids);
    put(&dd, buffers, s->ids);
    instance(s, 'A', m->dump_data_instance, m->dump_data, &dd);
    s->bitmap_slots += 3;
    s->dedupe_groups += 1;
    s->dedupe_merged += 1;
    s->dedupe_dropped += 1;
}

/* --pixels: many pixel buffers, as on a screen-heavy app, in the sizes
 * bitmaps come in (so nearly every buffer shares its length with others),
 * about `budget` bytes of them, deterministic.  Of every ten Bitmaps: four
 * own unique pixels (one in four of those differs from an earlier one in a
 * single byte a third of the way in: same length and same first, middle
 * and last blocks, but not a duplicate), two a byte-identical copy in an
 * array of their own, one shares an earlier Bitmap's array, one has no
 * buffer, one is recycled, one is all zeros.  Buffers come before their
 * Bitmap, but every eighth after it. */
static void pixel_bitmaps(struct synth *s, const struct model *m, uint64_t budget)
{
    static const uint32_t dims[][2] = { { 1, 1 },       { 48, 48 },     { 96, 96 },
                                        { 256, 256 },   { 512, 384 },   { 1080, 1920 },
                                        { 1440, 2560 } };
    enum { SIZES = sizeof dims / sizeof dims[0] };
    uint64_t last_id[SIZES] = { 0 }, last_seed[SIZES] = { 0 }, seed = 1000, done = 0;
    for (uint64_t i = 0; done < budget && s->rc >= 0; i++) {
        /* mostly small ones by count, mostly large ones by bytes */
        uint64_t r = next_random(s) % 100;
        unsigned k = r < 5 ? 0 : r < 30 ? 1 : r < 50 ? 2 : r < 70 ? 3 : r < 85 ? 4 : r < 95 ? 5 : 6;
        uint32_t w = dims[k][0], h = dims[k][1];
        size_t bytes = (size_t)w * h * 4;
        unsigned kind = (unsigned)(i % 10);
        uint64_t id = new_object_id(s), px_seed = 0;
        int zeros = 0, flip = 0, recycled = 0;
        if (kind == 7) {
            bitmap(s, m, 0, w, h, 0);
            continue;
        }
        if (kind == 6 && last_id[k] != 0) {
            bitmap(s, m, last_id[k], w, h, 0);
            continue;
        }
        if ((kind == 4 || kind == 5) && last_id[k] != 0) {
            px_seed = last_seed[k];
        } else if (kind == 9) {
            zeros = 1;
        } else {
            recycled = kind == 8;
            flip = kind == 3 && last_id[k] != 0 && bytes >= 4096;
            px_seed = flip ? last_seed[k] : ++seed;
        }
        uint8_t *px = calloc(bytes, 1);
        if (px == NULL) {
            s->rc = HPROF_ERR_NOMEM;
            return;
        }
        uint64_t x = px_seed * 0x9E3779B97F4A7C15ull + 1;
        for (size_t p = 0; !zeros && p < bytes / 4; p++) {
            if (p % 16 == 0) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
            }
            size_t row = p / w, col = p % w;
            px[4 * p] = (uint8_t)(row * 255 / h + px_seed * 37 + (x >> (p % 16 * 4) & 3));
            px[4 * p + 1] = (uint8_t)(col * 255 / w + px_seed * 11);
            px[4 * p + 2] = (uint8_t)((row + col) / 3 + px_seed);
            px[4 * p + 3] = 0xFF;
        }
        if (flip)
            px[bytes / 3] ^= 0x01;
        int after = i % 8 == 7;
        if (after)
            bitmap(s, m, id, w, h, recycled);
        primitive_array(s, 'A', id, HPROF_TYPE_BYTE, px, (uint32_t)bytes);
        if (!after)
            bitmap(s, m, id, w, h, recycled);
        free(px);
        if (!zeros && px_seed != last_seed[k]) {
            last_id[k] = id;
            last_seed[k] = px_seed;
        }
        done += bytes;
    }
}

/* ---- --system-links ------------------------------------------------------------
 *
 * What ties the system heaps to the app's on a device, for the retained
 * sizes to be checked: android.os.Build and Build$VERSION, whose String
 * statics live in the zygote heap; a rooted zygote array whose element,
 * another zygote array, refers to an app object that a leak also holds
 * (so the leak does not retain it); a rooted zygote instance naming an app
 * object the leak holds too; and an unrooted zygote array that only the
 * leak reaches, through an app array, and that refers to an app object
 * (which the leak does retain).  The app objects' ids are taken in the
 * zygote part and their records written by system_links_app(). */
struct links {
    uint64_t shared, named, behind, behind_child, leak;   /* app */
    uint64_t chain, named_by, behind_zygote;               /* zygote */
};

static void system_links_zygote(struct synth *s, const struct model *m, struct links *l)
{
    static const char *const build[][2] = {
        { "MANUFACTURER", "samsung" }, { "BRAND", "samsung" }, { "MODEL", "SM-G991B" },
        { "FINGERPRINT", "samsung/o1sxeea/o1s:14/UP1A.231005.007/G991BXXS9FXA1:user/release-keys" },
    };
    static const struct fdef reference_fields[] = { { "referent", HPROF_TYPE_OBJECT } };
    class_dump(s, 'I', m->reference, m->object, reference_fields, 1, NULL, 0, NULL, 0, s->ids);
    for (int i = 0; i < 4; i++)
        class_dump(s, 'I', m->references[i], m->reference, NULL, 0, NULL, 0, NULL, 0, 0);
    class_dump(s, 'I', m->klass, m->object, NULL, 0, NULL, 0, NULL, 0, 0);
    struct hprof_static_field statics[4];
    for (int i = 0; i < 4; i++)
        statics[i] = (struct hprof_static_field){ string_id(s, build[i][0]), HPROF_TYPE_OBJECT,
                                                  string_object(s, m, 'Z', build[i][1]) };
    class_dump(s, 'Z', m->build, m->object, NULL, 0, statics, 4, NULL, 0, 0);
    struct hprof_static_field version[2] = {
        { string_id(s, "SDK_INT"), HPROF_TYPE_INT, 34 },
        { string_id(s, "RELEASE"), HPROF_TYPE_OBJECT, string_object(s, m, 'Z', "14") },
    };
    class_dump(s, 'Z', m->build_version, m->object, NULL, 0, version, 2, NULL, 0, 0);
    l->shared = new_object_id(s);
    l->named = new_object_id(s);
    l->behind = new_object_id(s);
    l->behind_child = new_object_id(s);
    l->leak = new_object_id(s);
    uint64_t middle = new_object_id(s);
    object_array(s, 'Z', middle, m->object_array, &l->shared, 1);
    l->chain = new_object_id(s);
    object_array(s, 'Z', l->chain, m->object_array, &middle, 1);
    struct values v = { .n = 0 };
    base_values(s, &v, 3, l->named);
    l->named_by = new_object_id(s);
    instance(s, 'Z', l->named_by, m->base, &v);
    l->behind_zygote = new_object_id(s);
    object_array(s, 'Z', l->behind_zygote, m->object_array, &l->behind_child, 1);
}

static void system_links_app(struct synth *s, const struct model *m, const struct links *l)
{
    struct values v = { .n = 0 };
    base_values(s, &v, 4, string_object(s, m, 'A', "held by the zygote and the leak"));
    instance(s, 'A', l->shared, m->base, &v);
    v.n = 0;
    base_values(s, &v, 5, string_object(s, m, 'A', "named by a zygote object"));
    instance(s, 'A', l->named, m->base, &v);
    v.n = 0;
    base_values(s, &v, 6, string_object(s, m, 'A', "behind a zygote array"));
    instance(s, 'A', l->behind_child, m->base, &v);
    object_array(s, 'A', l->behind, m->object_array, &l->behind_zygote, 1);
    uint64_t held[3] = { l->shared, l->named, l->behind };
    object_array(s, 'A', l->leak, m->object_array, held, 3);
}

static void system_links_roots(struct synth *s, const struct links *l)
{
    root(s, HPROF_ROOT_VM_INTERNAL, l->chain, 0, 0);
    root(s, HPROF_ROOT_VM_INTERNAL, l->named_by, 0, 0);
    root(s, HPROF_ROOT_JNI_GLOBAL, l->leak, 0, 0);
}

struct options {
    int android;
    unsigned scale;
    size_t big_bitmap;
    uint64_t pixels;
    int nodata;
    const char *manifest;
    const char *secrets;    /* --secrets FILE: plant them, list them there */
    unsigned class_chain;   /* --class-chain N: that dump instead */
    int system_links;
    int leaf_first;
    unsigned dumps;         /* --dumps N: heap dumps in the file, as the hprof agent appends them */
    int whole_dumps;        /* --whole-dumps: each a HEAP_DUMP record, not segments and an END */
};

/* In front of the writer while a later heap dump's classes and stack
 * records are made again (same ids): the names, LOAD_CLASSes and traces
 * are in the file already, as the hprof agent writes them once. */
static int drop_string(struct hprof_visitor *v, const struct hprof_string *r)
{
    (void)v;
    (void)r;
    return HPROF_OK;
}

static int drop_load_class(struct hprof_visitor *v, const struct hprof_load_class *r)
{
    (void)v;
    (void)r;
    return HPROF_OK;
}

static int drop_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    (void)v;
    (void)r;
    return HPROF_OK;
}

static const struct hprof_visitor_ops written_already_ops = {
    .string = drop_string, .load_class = drop_load_class, .record = drop_record,
};

/* Heap dump `dump` (1-based) of the file; every dump has the same object
 * ids, as the hprof agent's dumps of one JVM have. */
static void generate(struct synth *s, const struct options *o, unsigned dump)
{
    struct model m = { 0 };
    struct hprof_visitor *out = s->out;
    struct hprof_visitor written_already = { &written_already_ops, out };
    if (dump == 1) {
        struct hprof_header h = { .id_size = s->ids, .timestamp_ms = 1700000000000ull };
        snprintf(h.version, sizeof h.version, "JAVA PROFILE 1.0.%d", s->android ? 3 : 2);
        s->rc = hprof_visit_header(s->out, &h);
    } else {
        s->out = &written_already;
    }
    define_classes(s, &m);
    stack_records(s, &m);
    s->out = out;
    if (dump > 1) { /* a record between the dumps, as the agent's traces are */
        char name[32];
        snprintf(name, sizeof name, "heap dump %u", dump);
        (void)string_id(s, name);
    }
    CHECK(s);
    if (s->android)
        m.dump_data_instance = new_object_id(s);

    /* System objects first, so the app can refer to some of them. */
    uint64_t thread = new_object_id(s);
    uint64_t zygote_kept = new_object_id(s), zygote_lost = new_object_id(s);
    uint64_t zygote_bytes = new_object_id(s), zygote_array = new_object_id(s);
    uint64_t image_string = 0, zygote_string = 0;
    struct links links = { 0 };

    if (s->android) {
        system_classes(s, &m);
        image_string = string_object(s, &m, 'I', "interned boot string");
        zygote_string = string_object(s, &m, 'Z', "zygote string");
        struct values v = { .n = 0 };
        base_values(s, &v, 1, zygote_string);
        instance(s, 'Z', zygote_kept, m.base, &v);      /* referenced by the app */
        v.n = 0;
        base_values(s, &v, 2, 0);
        instance(s, 'Z', zygote_lost, m.base, &v);      /* referenced by nobody */
        uint8_t zb[100];
        memset(zb, 0x5A, sizeof zb);
        primitive_array(s, 'Z', zygote_bytes, HPROF_TYPE_BYTE, zb, sizeof zb);
        uint64_t zel[2] = { zygote_lost, image_string };
        object_array(s, 'Z', zygote_array, m.object_array, zel, 2);
        /* The app will refer to zygote_kept, zygote_bytes, zygote_array and
         * (from Statics.sObject) image_string: these stay as hollow stand-ins.
         * A stand-in refers to nothing, so zygote_string is not kept. */
        s->standins = 4;
        if (s->system_links)
            system_links_zygote(s, &m, &links);
    } else {
        system_classes(s, &m);
    }
    app_classes(s, &m, s->android ? image_string : 0);

    struct values tv = { .n = 0 };
    put(&tv, string_object(s, &m, 'A', "main"), s->ids);
    instance(s, 'A', thread, m.thread, &tv);

    uint64_t last = 0;
    /* later dumps hold more: the same ids, other objects behind some */
    for (unsigned round = 0; round < o->scale + dump - 1 && s->rc >= 0; round++)
        last = population(s, &m, round, 40, 2048);
    string_object(s, &m, 'A', "");
    string_object(s, &m, 'A', "na\xC3\xAFve caf\xC3\xA9 \xE2\x98\x95");
    uint64_t holder = new_object_id(s);
    uint64_t elems[4] = { last, thread, 0, s->android ? zygote_array : 0 };
    object_array(s, 'A', holder, m.object_array, elems, 4);
    if (s->android) {
        /* Leaf.tag -> a zygote object, Derived.payload -> a zygote byte[] */
        struct values v = { .n = 0 };
        put(&v, zygote_kept, s->ids);
        derived_values(s, &v, zygote_bytes, last, 7, 0);
        instance(s, 'A', new_object_id(s), m.leaf, &v);
        if (s->system_links)
            system_links_app(s, &m, &links);
        bitmaps(s, &m, o->big_bitmap);
        if (o->pixels)
            pixel_bitmaps(s, &m, o->pixels);
    }
    leak_candidates(s, &m);
    if (s->secrets)
        plant_secrets(s, &m);
    if (o->nodata) {
        place(s, 'A', 1 + s->ids + 9);
        struct hprof_primitive_array a = { .tag = HPROF_PRIMITIVE_ARRAY_NODATA,
                                           .id = new_object_id(s), .count = 1000,
                                           .type = HPROF_TYPE_INT };
        s->primitive_arrays[1]++;
        if (s->rc >= 0)
            s->rc = hprof_visit_primitive_array(s->out, &a);
    }
    if (!o->whole_dumps)
        end_segment(s);

    /* Roots in a segment of their own at the end keep the code simple; ART
     * puts them first, which the real ART fixture covers. */
    unsigned seg_limit = s->seg_limit;
    uint64_t seg_byte_limit = s->seg_byte_limit;
    s->seg_limit = ~0u;
    s->seg_byte_limit = UINT64_MAX;
    root(s, HPROF_ROOT_STICKY_CLASS, m.string, 0, 0);
    root(s, HPROF_ROOT_JNI_GLOBAL, holder, 0, 0);
    root(s, HPROF_ROOT_JNI_LOCAL, last, m.thread_serial, 0);
    root(s, HPROF_ROOT_JAVA_FRAME, last, m.thread_serial, 1);
    root(s, HPROF_ROOT_JAVA_FRAME, s->android ? 0xdead0 : 0xdead00, m.thread_serial, 2);
    root(s, HPROF_ROOT_NATIVE_STACK, holder, m.thread_serial, 0);
    root(s, HPROF_ROOT_THREAD_BLOCK, thread, m.thread_serial, 0);
    root(s, HPROF_ROOT_MONITOR_USED, holder, 0, 0);
    root(s, HPROF_ROOT_THREAD_OBJECT, thread, m.thread_serial, m.stack_serial);
    root(s, HPROF_ROOT_UNKNOWN, last, 0, 0);
    if (s->android) {
        root(s, HPROF_ROOT_INTERNED_STRING, image_string, 0, 0);
        root(s, HPROF_ROOT_FINALIZING, holder, 0, 0);
        root(s, HPROF_ROOT_DEBUGGER, holder, 0, 0);
        root(s, HPROF_ROOT_REFERENCE_CLEANUP, holder, 0, 0);
        root(s, HPROF_ROOT_VM_INTERNAL, zygote_lost, 0, 0);
        root(s, HPROF_ROOT_VM_INTERNAL, zygote_string, 0, 0);
        root(s, HPROF_ROOT_JNI_MONITOR, holder, m.thread_serial, 3);
        root(s, HPROF_UNREACHABLE, last, 0, 0);
        s->roots_to_system_dropped = 2;
        if (s->system_links)
            system_links_roots(s, &links);
    }
    end_segment(s);
    struct hprof_record end = { .tag = HPROF_TAG_HEAP_DUMP_END };
    if (s->rc >= 0 && !o->whole_dumps)
        s->rc = hprof_visit_record(s->out, &end);
    s->seg_limit = seg_limit;
    s->seg_byte_limit = seg_byte_limit;
    if (s->rc >= 0 && dump == o->dumps)
        s->rc = hprof_visit_end(s->out);
}

/* --class-chain N: N classes, each the superclass of the next, listed root
 * first or (--leaf-first) leaf first, and an instance of the leaf and one
 * of the root.  Every 1000th class has an int field, the others none.  A
 * dump of class layouts only, to show that resolving them costs time
 * linear in their number whatever their order (issue 20: leaf first used
 * to cost the square). */
static void generate_chain(struct synth *s, const struct options *o)
{
    static const struct fdef field = { "value", HPROF_TYPE_INT };
    unsigned n = o->class_chain;
    struct hprof_header h = { .id_size = s->ids, .timestamp_ms = 1700000000000ull };
    snprintf(h.version, sizeof h.version, "JAVA PROFILE 1.0.%d", s->android ? 3 : 2);
    s->rc = hprof_visit_header(s->out, &h);
    string_id(s, field.name); /* before the segment opens */
    uint64_t step = s->android ? 8 : 16, first = s->next_object;
    s->next_object += (uint64_t)n * step;
    s->seg_limit = 100000;
    s->seg_byte_limit = UINT64_MAX;
    for (unsigned k = 0; k < n && s->rc >= 0; k++) {
        unsigned i = o->leaf_first ? n - 1 - k : k;
        class_dump(s, ~0u, first + i * step, i ? first + (i - 1) * step : 0, &field,
                   i % 1000 == 0, NULL, 0, NULL, 0, 4 * (i / 1000 + 1));
    }
    size_t bytes = 4 * ((size_t)(n - 1) / 1000 + 1);
    uint8_t *values = calloc(1, bytes);
    if (values == NULL && s->rc >= 0)
        s->rc = HPROF_ERR_NOMEM;
    struct hprof_instance leaf = { .id = new_object_id(s), .stack_serial = 1,
                                   .class_id = first + (uint64_t)(n - 1) * step,
                                   .length = (uint32_t)bytes, .values = values };
    struct hprof_instance root = { .id = new_object_id(s), .stack_serial = 1,
                                   .class_id = first, .length = 4, .values = values };
    place(s, ~0u, 1 + 2 * s->ids + 8 + leaf.length);
    if (s->rc >= 0)
        s->rc = hprof_visit_instance(s->out, &leaf);
    place(s, ~0u, 1 + 2 * s->ids + 8 + root.length);
    if (s->rc >= 0)
        s->rc = hprof_visit_instance(s->out, &root);
    s->instances[1] += 2;
    free(values);
    end_segment(s);
    struct hprof_record end = { .tag = HPROF_TAG_HEAP_DUMP_END };
    if (s->rc >= 0)
        s->rc = hprof_visit_record(s->out, &end);
    if (s->rc >= 0)
        s->rc = hprof_visit_end(s->out);
}

static void print_manifest(const struct synth *s, FILE *f);

/* The manifest is written as the dump is: a temporary file renamed. */
static int write_manifest(const struct synth *s, const char *path, int force)
{
    struct cli_output out;
    int code = cli_output_open(&out, path, force, NULL);
    if (code != 0)
        return code;
    int copy = out.tmp != NULL ? dup(out.fd) : -1;
    FILE *f = copy >= 0 ? fdopen(copy, "w") : NULL;
    if (f == NULL) {
        if (copy >= 0)
            close(copy);
        cli_error("%s: cannot write it%s", path, out.tmp ? "" : " (not a regular file)");
        cli_output_abort(&out);
        return EXIT_IO;
    }
    print_manifest(s, f);
    int failed = fflush(f) != 0 || ferror(f);
    int error = errno;
    failed |= fclose(f) != 0;
    if (failed) {
        cli_error("%s: %s", path, strerror(error));
        cli_output_abort(&out);
        return EXIT_IO;
    }
    return cli_output_commit(&out);
}

static void print_manifest(const struct synth *s, FILE *f)
{
    fprintf(f, "id_size %u\n", s->ids);
    fprintf(f, "class_dumps %" PRIu64 "\n", s->class_dumps);
    fprintf(f, "roots %" PRIu64 "\n", s->roots);
    fprintf(f, "instances %" PRIu64 "\n", s->instances[0] + s->instances[1]);
    fprintf(f, "instances_app %" PRIu64 "\n", s->instances[1]);
    fprintf(f, "object_arrays %" PRIu64 "\n", s->object_arrays[0] + s->object_arrays[1]);
    fprintf(f, "object_arrays_app %" PRIu64 "\n", s->object_arrays[1]);
    fprintf(f, "primitive_arrays %" PRIu64 "\n", s->primitive_arrays[0] + s->primitive_arrays[1]);
    fprintf(f, "primitive_arrays_app %" PRIu64 "\n", s->primitive_arrays[1]);
    fprintf(f, "string_instances_app %" PRIu64 "\n", s->string_instances_app);
    fprintf(f, "strings %d\n", s->n_texts);
    fprintf(f, "bitmaps %" PRIu64 "\n", s->bitmaps);
    fprintf(f, "bitmap_groups %" PRIu64 "\n", s->dedupe_groups);
    fprintf(f, "bitmap_merged %" PRIu64 "\n", s->dedupe_merged);
    fprintf(f, "bitmap_dropped %" PRIu64 "\n", s->dedupe_dropped);
    fprintf(f, "system_standins %" PRIu64 "\n", s->standins);
    fprintf(f, "system_objects %" PRIu64 "\n",
            s->instances[0] + s->object_arrays[0] + s->primitive_arrays[0]);
    fprintf(f, "roots_dropped %" PRIu64 "\n", s->roots_to_system_dropped);
}

static void usage(FILE *out)
{
    fprintf(out,
            "Write a deterministic heap dump for tests and benchmarks.\n"
            "\n"
            "Usage: %s [options] OUT\n"
            "\n"
            "Options:\n"
            "  --android          ART-style dump: 1.0.3, 4-byte ids, heaps, bitmaps [Default]\n"
            "  --hotspot          HotSpot-style dump: 1.0.2, 8-byte ids\n"
            "  --scale N          repeat the app population N times [Default: 1]\n"
            "  --big-bitmap BYTES size of the large bitmap buffer [Default: 2621440]\n"
            "  --pixels BYTES     add about BYTES of pixel buffers in many Bitmaps, with\n"
            "                     duplicates, shared, null, recycled and zeroed ones\n"
            "  --nodata           add a PRIMITIVE_ARRAY_NODATA record\n"
            "  --system-links     add android.os.Build, zygote objects that refer to app\n"
            "                     objects and app objects only a zygote object leads to\n"
            "  --secrets FILE     (Android) plant unique secrets in every kind of place,\n"
            "                     listed in FILE for tests/hprof-secrets\n"
            "  --class-chain N    instead, N classes chained by superclass, root first\n"
            "  --leaf-first       with --class-chain: list the classes leaf first\n"
            "  --dumps N          N heap dumps in the file with the same object ids, as\n"
            "                     the JDK's hprof agent appends them [Default: 1]\n"
            "  --whole-dumps      each heap dump one HEAP_DUMP record (else segments\n"
            "                     closed by HEAP_DUMP_END)\n"
            "  --manifest FILE    write what was generated, \"key value\" per line\n"
            "  -f, --force        overwrite OUT\n"
            "  -h, --help         show this help and exit\n"
            "  -V, --version      show the version and exit\n",
            cli_progname);
}

int main(int argc, char **argv)
{
    static const struct option long_options[] = {
        { "android", no_argument, NULL, 'a' }, { "hotspot", no_argument, NULL, 's' },
        { "scale", required_argument, NULL, 'n' }, { "big-bitmap", required_argument, NULL, 'b' },
        { "pixels", required_argument, NULL, 'p' },
        { "nodata", no_argument, NULL, 'd' }, { "manifest", required_argument, NULL, 'm' },
        { "force", no_argument, NULL, 'f' }, { "help", no_argument, NULL, 'h' },
        { "class-chain", required_argument, NULL, 'c' },
        { "leaf-first", no_argument, NULL, 'l' },
        { "dumps", required_argument, NULL, 'D' },
        { "whole-dumps", no_argument, NULL, 'W' },
        { "system-links", no_argument, NULL, 'L' },
        { "secrets", required_argument, NULL, 'S' },
        { "version", no_argument, NULL, 'V' }, { NULL, 0, NULL, 0 },
    };
    struct options o = { .android = 1, .scale = 1, .big_bitmap = 2621440, .dumps = 1 };
    int c, force = 0;
    unsigned long long v;
    if (cli_init(argv[0]) != 0)
        return EXIT_USAGE;
    while ((c = getopt_long(argc, argv, "fhV", long_options, NULL)) != -1) {
        switch (c) {
        case 'a': o.android = 1; break;
        case 's': o.android = 0; break;
        case 'n':
            if (cli_parse_uint(optarg, 1000000, &v) != 0 || v == 0) {
                cli_error("--scale: expected 1-1000000, got '%s'", optarg);
                return EXIT_USAGE;
            }
            o.scale = (unsigned)v;
            break;
        case 'b':
            if (cli_parse_uint(optarg, 1u << 30, &v) != 0 || v < 4096) {
                cli_error("--big-bitmap: expected 4096-1073741824, got '%s'", optarg);
                return EXIT_USAGE;
            }
            o.big_bitmap = (size_t)v & ~(size_t)4095;
            break;
        case 'p':
            if (cli_parse_uint(optarg, 1ull << 40, &v) != 0) {
                cli_error("--pixels: expected 0-1099511627776, got '%s'", optarg);
                return EXIT_USAGE;
            }
            o.pixels = v;
            break;
        case 'd': o.nodata = 1; break;
        case 'c':
            if (cli_parse_uint(optarg, 100000000, &v) != 0 || v == 0) {
                cli_error("--class-chain: expected 1-100000000, got '%s'", optarg);
                return EXIT_USAGE;
            }
            o.class_chain = (unsigned)v;
            break;
        case 'l': o.leaf_first = 1; break;
        case 'D':
            if (cli_parse_uint(optarg, 1000, &v) != 0 || v == 0) {
                cli_error("--dumps: expected 1-1000, got '%s'", optarg);
                return EXIT_USAGE;
            }
            o.dumps = (unsigned)v;
            break;
        case 'W': o.whole_dumps = 1; break;
        case 'L': o.system_links = 1; break;
        case 'm': o.manifest = optarg; break;
        case 'S': o.secrets = optarg; break;
        case 'f': force = 1; break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': cli_version(); return EXIT_OK;
        default: usage(stderr); return EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (o.secrets && (!o.android || o.class_chain)) {
        cli_error("--secrets: only for the Android heap (not with --hotspot or --class-chain)");
        return EXIT_USAGE;
    }
    struct secrets secrets = { .rng = 0x5EC12E75EC12E7ull };
    if (o.secrets && (secrets.manifest = fopen(o.secrets, "w")) == NULL) {
        cli_error("%s: cannot create", o.secrets);
        return EXIT_IO;
    }
    cli_install_signal_handlers();
    struct cli_output out;
    int code = cli_output_open(&out, argv[optind], force, NULL);
    if (code != 0)
        return code;
    struct hprof_error err = { 0 };
    struct hprof_sink *sink = hprof_sink_new_fd(out.fd, &err);
    /* a fixture is made again at will: no fsync (no cli_output_sync()),
     * no writeback */
    if (sink != NULL && out.tmp != NULL)
        hprof_sink_set_preallocate(sink, CLI_PREALLOCATE_STEP);
    struct hprof_writer *w = sink ? hprof_writer_new(sink, &err) : NULL;
    struct synth s = {
        .android = o.android, .ids = o.android ? 4 : 8,
        .next_object = o.android ? 0x12c00000 : 0x7f0000000ull,
        .next_string = o.android ? 0x1000 : 0x7f00000000ull, .rng = 0x2545F4914F6CDD1Dull,
        .seg_limit = o.android ? 128 : 100000, .seg_heap = ~0u,
        .seg_byte_limit = o.android ? 4096 : UINT64_MAX,
        .seg_tag = o.whole_dumps ? HPROF_TAG_HEAP_DUMP : HPROF_TAG_HEAP_DUMP_SEGMENT,
        .system_links = o.system_links,
        .secrets = o.secrets ? &secrets : NULL,
    };
    if (o.whole_dumps) { /* one record holds the whole dump */
        s.seg_limit = ~0u;
        s.seg_byte_limit = UINT64_MAX;
    }
    if (w != NULL) {
        s.out = hprof_writer_visitor(w);
        if (o.class_chain > 0)
            generate_chain(&s, &o);
        else
            for (unsigned dump = 1; dump <= o.dumps && s.rc >= 0; dump++) {
                s.next_object = o.android ? 0x12c00000 : 0x7f0000000ull;
                s.next_serial = 0;
                generate(&s, &o, dump);
            }
        if (s.rc >= 0)
            s.rc = hprof_sink_finish(sink);
    } else {
        s.rc = err.code;
    }
    hprof_writer_free(w);
    hprof_sink_free(sink);
    if (secrets.manifest != NULL && fclose(secrets.manifest) != 0 && s.rc >= 0) {
        cli_error("%s: cannot write", o.secrets);
        s.rc = HPROF_ERR_IO;
    }
    if (s.rc < 0) {
        cli_error("%s: %s", argv[optind], err.message[0] ? err.message : "generation failed");
        cli_output_abort(&out);
        return cli_exit_code(s.rc);
    }
    if ((code = cli_output_commit(&out)) != 0)
        return code;
    return o.manifest ? write_manifest(&s, o.manifest, force) : EXIT_OK;
}
