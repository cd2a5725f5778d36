/*
 * secrets.c - hprof-synth --secrets: unique secrets in each kind of place
 * an Android heap holds data, and a manifest of them for tests/hprof-secrets.c (see there for its format):
 * "gone" what --redact --redact-fields must remove, "stays" what leak
 * analysis needs (LeakCanary's keys and names, the runtime's thread names,
 * the device's Build strings).  The generator of the secrets is its own,
 * so the rest of the dump is the same with or without them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth.h"

static const struct {
    const char *name;
    uint8_t type;
} boxed_classes[N_BOXED] = {
    { "java.lang.Integer", HPROF_TYPE_INT }, { "java.lang.Long", HPROF_TYPE_LONG },
    { "java.lang.Double", HPROF_TYPE_DOUBLE }, { "java.lang.Float", HPROF_TYPE_FLOAT },
    { "java.lang.Character", HPROF_TYPE_CHAR }, { "java.lang.Short", HPROF_TYPE_SHORT },
    { "java.lang.Byte", HPROF_TYPE_BYTE },
};

void load_secret_classes(struct synth *s)
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
    /* A name nothing refers to, such as a writer other than ART may leave
     * (a literal, a key): the names nothing uses are dropped, and under
     * --redact no shrink may write its text.  Its text is not drawn from
     * the secrets' generator, so that the other secrets stay as they were. */
    static const char unused_name[] = "jdbc:sqlite:/data/data/com.example/app.db?key=PunusedqName7";
    fprintf(sec->manifest, "gone unused-name text %s\n", unused_name);
    string_id(s, unused_name);
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

/* Texts: compressed (byte[]) and UTF-16 (char[]); hash caches */
static void plant_texts(struct synth *s, const struct model *m)
{
    struct secrets *sec = s->secrets;
    unsigned ids = s->ids;
    char t[64];
    struct values v = { .n = 0 };
    char t2[16];
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
}

/* Statics and the device's Build strings (made first: the class dumps
 * name them) */
static void plant_statics(struct synth *s, const struct model *m)
{
    struct secrets *sec = s->secrets;
    char t[64];
    uint64_t manufacturer = string_object(s, m, 'A', "Synthetic Devices Inc");
    fprintf(sec->manifest, "stays Build.MANUFACTURER text Synthetic Devices Inc\n");
    uint64_t model = string_object(s, m, 'A', "Synthphone Model 7");
    fprintf(sec->manifest, "stays Build.MODEL text Synthphone Model 7\n");
    uint64_t vault_text = string_object(s, m, 'A', secret_text(sec, "gone", "static-string", t));
    uint64_t vault_long = secret_number(sec, "static-long", NULL, secret_bits(sec), 8);
    uint32_t vault_int = (uint32_t)secret_number(sec, "static-int", NULL, secret_bits(sec), 4);
    secret_class_dumps(s, m, manufacturer, model, vault_text, vault_long, vault_int);
}

/* Boxed values and JDK value objects */
static void plant_boxed(struct synth *s)
{
    struct secrets *sec = s->secrets;
    unsigned ids = s->ids;
    struct values v = { .n = 0 };
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
}

/* An application class's fields of each type */
static void plant_fields(struct synth *s, const struct model *m)
{
    struct secrets *sec = s->secrets;
    unsigned ids = s->ids;
    char t[64];
    struct values v = { .n = 0 };
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
}

/* Arrays: a byte[] buffer, char[], int[], long[] */
static void plant_arrays(struct synth *s)
{
    struct secrets *sec = s->secrets;
    char t[64];
    struct values v = { .n = 0 };
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
}

/* Threads: one the app named, and the runtime's and LeakCanary's own */
static void plant_threads(struct synth *s, const struct model *m)
{
    struct secrets *sec = s->secrets;
    unsigned ids = s->ids;
    char t[64];
    struct values v = { .n = 0 };
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
}

/* LeakCanary's KeyedWeakReference, versions 2 and 1.x */
static void plant_leakcanary(struct synth *s, const struct model *m)
{
    struct secrets *sec = s->secrets;
    unsigned ids = s->ids;
    char t[64];
    struct values v = { .n = 0 };
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

void plant_secrets(struct synth *s, const struct model *m)
{
    plant_texts(s, m);
    plant_statics(s, m);
    plant_boxed(s);
    plant_fields(s, m);
    plant_arrays(s);
    plant_threads(s, m);
    plant_leakcanary(s, m);
}
