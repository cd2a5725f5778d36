/*
 * model.c - the heap hprof-synth models: its classes, stack records, the
 * app population, bitmaps, and what ties the system heaps to the app's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth.h"

/* ---- The model ---------------------------------------------------------------- */

void define_classes(struct synth *s, struct model *m)
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

void stack_records(struct synth *s, struct model *m)
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

void system_classes(struct synth *s, const struct model *m)
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

void app_classes(struct synth *s, const struct model *m, uint64_t static_string)
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
void leak_candidates(struct synth *s, const struct model *m)
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
void base_values(struct synth *s, struct values *v, uint32_t id, uint64_t name)
{
    put(v, id, 4);
    put(v, name, s->ids);
}

/* Derived fields (own first), then Base's. */
void derived_values(struct synth *s, struct values *v, uint64_t payload, uint64_t next,
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
uint64_t population(struct synth *s, const struct model *m, unsigned round,
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

void bitmap(struct synth *s, const struct model *m, uint64_t buffer, uint32_t width,
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
void bitmaps(struct synth *s, const struct model *m, size_t big_bytes)
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
void pixel_bitmaps(struct synth *s, const struct model *m, uint64_t budget)
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
void system_links_zygote(struct synth *s, const struct model *m, struct links *l)
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

void system_links_app(struct synth *s, const struct model *m, const struct links *l)
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

void system_links_roots(struct synth *s, const struct links *l)
{
    root(s, HPROF_ROOT_VM_INTERNAL, l->chain, 0, 0);
    root(s, HPROF_ROOT_VM_INTERNAL, l->named_by, 0, 0);
    root(s, HPROF_ROOT_JNI_GLOBAL, l->leak, 0, 0);
}
