/*
 * check_redact.c - hprof-shrink --redact: no kept String or buffer still
 * holds its original bytes (every original String text of 6+ bytes is
 * searched for in the output), except the Strings a keep rule names and
 * texts that exist as STRING records (class, field and method names); while
 * lengths, types, instance counts and references stay as they were.
 */
#define _GNU_SOURCE /* memmem */
#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "facts.h"
#include "testlib.h"

#define fixtures tl_fixtures
#define N_FIXTURES TL_N_FIXTURES

static const char *const keep_title[] = { "android.app.Activity.mTitle" };

/* Is `t` in some STRING record, as it is or (a char[] of Latin-1 units,
 * such as an enum constant's name, a static field name there) narrowed? */
static int in_records(const struct facts *f, const struct text *t)
{
    uint8_t narrow[256];
    size_t n = 0;
    if (t->len % 2 == 0 && t->len / 2 <= sizeof narrow)
        for (; n < t->len / 2 && t->bytes[2 * n] == 0; n++)
            narrow[n] = t->bytes[2 * n + 1];
    int narrowed = n > 0 && n == t->len / 2;
    for (size_t i = 0; i < f->n_records; i++)
        if (memmem(f->records[i].bytes, f->records[i].len, t->bytes, t->len) != NULL ||
            (narrowed && memmem(f->records[i].bytes, f->records[i].len, narrow, n) != NULL))
            return 1;
    return 0;
}

/* The KeyedWeakReference's key (not its description), and the title with
 * the rule. */
static int is_kept_text(const struct text *t, int keep_title_rule)
{
    static const char key[] = "5b2f0c1e-77aa-4f3e-9d1a-0c4e6d2b9f10";
    if (t->len == strlen(key) && memcmp(t->bytes, key, t->len) == 0)
        return 1;
    return keep_title_rule && t->len == 23 && memcmp(t->bytes, "Secret account overview", 23) == 0;
}

/* The threads whose names keep their text (the man page's list). */
static int is_runtime_thread_name(const struct text *t)
{
    static const char *const names[] = {
        "main", "Finalizer", "FinalizerDaemon", "FinalizerWatchdogDaemon",
        "ReferenceQueueDaemon", "HeapTaskDaemon", "Reference Handler", "Signal Catcher",
        "Signal Dispatcher", "Common-Cleaner", "Attach Listener", "Notification Thread",
        "Service Thread", "Monitor Deflation Thread", "Profile Saver",
        "Jit thread pool worker thread 0", "LeakCanary-Heap-Dump",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (t->len == strlen(names[i]) && memcmp(t->bytes, names[i], t->len) == 0)
            return 1;
    return 0;
}

/* _i: fixture * 2 + (0: --redact, 1: --redact=strings with a keep rule) */
START_TEST(redact_leaves_no_original_string_text)
{
    int fixture = _i / 2, with_rule = _i % 2;
    if (!tl_fixture_available(fixture))
        return;
    struct hprof_shrink_options o = {
        .redact = with_rule ? HPROF_REDACT_STRINGS : HPROF_REDACT_ALL,
        .redact_keep = keep_title, .n_redact_keep = with_rule,
    };
    struct hprof_shrink_stats st;
    struct hprof_error err = { 0 };
    struct facts in;
    size_t len;
    uint8_t *out = tl_shrink_file(fixtures[fixture], &o, &len, &st);
    ck_assert_int_eq(facts_load(fixtures[fixture], &in, &err), HPROF_OK);
    size_t searched = 0, kept = 0;
    for (size_t i = 0; i < in.n_texts; i++) {
        const struct text *t = &in.texts[i];
        if (t->len < 6)
            continue;
        if (is_kept_text(t, with_rule) && fixture < 2) {
            ck_assert_msg(memmem(out, len, t->bytes, t->len) != NULL, "kept text lost: %.*s",
                          (int)t->len, t->bytes);
            kept++;
            continue;
        }
        if (in_records(&in, t) || is_runtime_thread_name(t))
            continue; /* also a class, field or method name, or the runtime's: not user data */
        searched++;
        ck_assert_msg(memmem(out, len, t->bytes, t->len) == NULL, "%s: text survives: %.*s",
                      fixtures[fixture], (int)(t->len > 60 ? 60 : t->len), t->bytes);
    }
    ck_assert_uint_gt(searched, 10);
    if (fixture < 2) { /* the generated dumps hold a KeyedWeakReference and an Activity */
        ck_assert_uint_eq(kept, 1 + with_rule);
        /* and the main thread's name */
        ck_assert_uint_eq(st.strings_kept_by_rule, 2 + with_rule);
    }
    facts_free(&in);
    free(out);
}
END_TEST

/* The classes whose instances' fields --redact changes: String (its hash)
 * and the hash-table nodes (their key's hash), into `out`. */
static void hash_cache_classes(const char *path, struct idmap *out)
{
    static const char *const names[] = { "java.lang.String", "java.util.HashMap$Node",
                                         "java.util.LinkedHashMap$Entry",
                                         "java.util.HashMap$TreeNode", "java.util.HashMap$Entry",
                                         "java.util.Hashtable$Entry",
                                         "java.util.concurrent.ConcurrentHashMap$HashEntry",
                                         "java.util.concurrent.ConcurrentHashMap$Node",
                                         "java.util.WeakHashMap$Entry" };
    ck_assert_int_eq(idmap_init(out, 0), HPROF_OK);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char slashed[64];
        snprintf(slashed, sizeof slashed, "%s", names[i]);
        for (char *c = slashed; *c; c++)
            if (*c == '.')
                *c = '/';
        uint64_t dotted = facts_class_id(path, names[i]), slash = facts_class_id(path, slashed);
        if (dotted != 0)
            idmap_put(out, dotted, 0);
        if (slash != 0)
            idmap_put(out, slash, 0);
    }
}

/* Everything but the bytes of texts (and pixels) and the hash caches is
 * as without --redact. */
START_TEST(redact_keeps_shapes_counts_and_references)
{
    int fixture = _i;
    if (!tl_fixture_available(fixture))
        return;
    struct hprof_shrink_options plain = { 0 }, redacted = { .redact = HPROF_REDACT_ALL };
    struct hprof_shrink_stats st;
    struct hprof_error err = { 0 };
    struct facts a, b;
    size_t alen, blen;
    uint8_t *pa = tl_shrink_file(fixtures[fixture], &plain, &alen, &st);
    uint8_t *pb = tl_shrink_file(fixtures[fixture], &redacted, &blen, &st);
    ck_assert_uint_eq(alen, blen); /* same sizes: nothing added or removed */
    ck_assert_int_eq(facts_load_memory(pa, alen, &a, &err), HPROF_OK);
    ck_assert_int_eq(facts_load_memory(pb, blen, &b, &err), HPROF_OK);
    ck_assert_uint_eq(a.arrays.count, b.arrays.count);
    for (size_t i = 0; i <= a.arrays.mask; i++) {
        uint64_t shape;
        if (a.arrays.keys[i] == 0)
            continue;
        ck_assert(idmap_get(&b.arrays, a.arrays.keys[i], &shape));
        ck_assert_uint_eq(shape, a.arrays.values[i]);
    }
    ck_assert_uint_eq(a.class_counts.count, b.class_counts.count);
    ck_assert_uint_eq(a.dangling.count, b.dangling.count);
    /* other instances are untouched (only arrays are filled) */
    struct idmap hashing;
    hash_cache_classes(fixtures[fixture], &hashing);
    size_t compared = 0;
    for (size_t i = 0; i <= a.instance_hash.mask; i++) {
        uint64_t h, cls = 0;
        if (a.instance_hash.keys[i] == 0)
            continue;
        idmap_get(&a.instance_class, a.instance_hash.keys[i], &cls);
        if (idmap_has(&hashing, cls))
            continue;
        compared++;
        ck_assert(idmap_get(&b.instance_hash, a.instance_hash.keys[i], &h));
        ck_assert_uint_eq(h, a.instance_hash.values[i]);
    }
    ck_assert_uint_gt(compared, 0);
    ck_assert_uint_gt(hashing.count, 0);
    idmap_free(&hashing);
    /* with pixels redacted, no bitmap shows its original pixels */
    for (size_t i = 0; i <= a.bitmaps.mask; i++) {
        uint64_t h;
        if (a.bitmaps.keys[i] == 0 || a.bitmaps.values[i] == 1)
            continue;
        ck_assert(idmap_get(&b.bitmaps, a.bitmaps.keys[i], &h));
        ck_assert_uint_ne(h, a.bitmaps.values[i]);
    }
    struct hprof_verify_report rep;
    ck_assert_int_eq(tl_verify_memory(pb, blen, &rep, &err), HPROF_OK);
    facts_free(&a);
    facts_free(&b);
    free(pa);
    free(pb);
}
END_TEST

/* --redact-fields: MainActivity.counter (an app int) is zeroed; the boolean
 * Activity.mDestroyed and the reference Activity.mTitle are not. */
START_TEST(redact_fields_zeroes_numbers_but_not_booleans_or_references)
{
    const char *path = fixtures[_i];
    const char *main_name = _i ? "com/example/MainActivity" : "com.example.MainActivity";
    uint64_t main_class = facts_class_id(path, main_name);
    ck_assert_uint_ne(main_class, 0);
    struct hprof_shrink_options o = { .redact = HPROF_REDACT_STRINGS, .redact_fields = 1 };
    struct hprof_shrink_stats st;
    struct hprof_error err = { 0 };
    size_t len;
    uint8_t *out = tl_shrink_file(path, &o, &len, &st);
    struct facts in, after;
    ck_assert_int_eq(facts_load(path, &in, &err), HPROF_OK);
    ck_assert_int_eq(facts_load_memory(out, len, &after, &err), HPROF_OK);
    ck_assert_uint_gt(st.fields_zeroed, 0);
    int mains = 0;
    for (size_t i = 0; i <= in.instance_class.mask; i++) {
        uint64_t id = in.instance_class.keys[i], before, now;
        if (id == 0 || idmap_has(&in.system, id) || !idmap_get(&after.instance_hash, id, &now))
            continue; /* dropped, or a hollow stand-in */
        ck_assert(idmap_get(&in.instance_hash, id, &before));
        if (in.instance_class.values[i] == main_class) {
            ck_assert_uint_ne(before, now);
            mains++;
        }
    }
    ck_assert_int_eq(mains, 1);
    /* the instance itself: counter 0, mTitle and mDestroyed as they were */
    unsigned ids = _i ? 8 : 4;
    uint8_t expect[4 + 8 + 1] = { 0 };
    const uint8_t *hit = NULL;
    size_t want = 4 + ids + 1;
    /* find "MainActivity" instance bytes by its class id in the output */
    uint8_t cls[8];
    for (unsigned k = 0; k < ids; k++)
        cls[k] = (uint8_t)(main_class >> (8 * (ids - 1 - k)));
    for (size_t at = 0; at + 1 + 2 * ids + 8 + want <= len && hit == NULL; at++)
        if (out[at] == HPROF_INSTANCE_DUMP && memcmp(out + at + 1 + ids + 4, cls, ids) == 0 &&
            out[at + 1 + 2 * ids + 7] == want)
            hit = out + at + 1 + 2 * ids + 8;
    ck_assert_ptr_nonnull(hit);
    ck_assert_mem_eq(hit, expect, 4);       /* counter zeroed */
    ck_assert_uint_eq(hit[4 + ids], 1);     /* mDestroyed still true */
    facts_free(&in);
    facts_free(&after);
    free(out);
}
END_TEST

/* The first instance redaction sees has no field bytes (a plain Object:
 * ZGC dumps open with one): it goes out as it is and the next instance is
 * redacted (loop: multi-pass, one pass). */
START_TEST(redact_fields_takes_an_instance_without_field_bytes)
{
    static const uint8_t one_int[] = { HPROF_TYPE_INT };
    struct tbuf b;
    tb_init(&b, 8);
    tb_header(&b, "JAVA PROFILE 1.0.2");
    tb_string(&b, 0x10, "java/lang/Object");
    tb_string(&b, 0x11, "com/example/Counter");
    tb_load_class(&b, 1, 0x100, 0x10);
    tb_load_class(&b, 2, 0x200, 0x11);
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&b, 0x100, 0, NULL, 0);
    tb_class(&b, 0x200, 0x100, one_int, 1);
    tb_instance(&b, 0x1000, 0x100, NULL, 0);
    tb_instance(&b, 0x2000, 0x200, "\x12\x34\x56\x78", 4);
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    char *path = tl_temp_file(b.data, b.len, ".hprof");
    struct hprof_shrink_options o = { .redact = HPROF_REDACT_ALL, .redact_fields = 1 };
    struct hprof_shrink_stats st;
    size_t len;
    uint8_t *out =
        tl_shrink_file_by(_i ? hprof_shrink_one_pass : hprof_shrink, path, &o, &len, &st, 0);
    ck_assert_uint_eq(st.instances_out.count, 2);
    ck_assert_uint_eq(st.fields_zeroed, 1);
    ck_assert_ptr_null(memmem(out, len, "\x12\x34\x56\x78", 4));
    free(out);
    unlink(path);
    free(path);
    tb_free(&b);
}
END_TEST

/* A hierarchy 100k classes deep, each with a field, listed leaf first:
 * redaction works out each class's exempt fields once per class (the keep
 * rules' classes up its chain are memoised), where a walk of the whole
 * chain for every class grew with the square of the depth (this suite took
 * 43 s with it, 25 s without, on the development VM).  The same in one
 * pass (_i 1), which also looks up the chain for names not read yet (none
 * of these is ever read). */
#define DEEP 100000u

START_TEST(redact_resolves_a_deep_hierarchy_once_per_class)
{
    static const uint8_t one_int[1] = { HPROF_TYPE_INT };
    struct tbuf b;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.2");
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    for (unsigned i = DEEP; i-- > 0;)
        tb_class(&b, 0x100000 + i, i ? 0x100000 + i - 1 : 0, one_int, 1);
    uint8_t *values = calloc(DEEP, 4);
    tb_instance(&b, 0x900000, 0x100000 + DEEP - 1, values, DEEP * 4);
    free(values);
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    char *path = tl_temp_file(b.data, b.len, ".hprof");
    struct hprof_shrink_options o = { .redact = HPROF_REDACT_ALL, .redact_fields = 1 };
    struct hprof_shrink_stats st;
    size_t len;
    uint8_t *out = tl_shrink_file_by(_i ? hprof_shrink_one_pass : hprof_shrink, path, &o, &len,
                                     &st, 0);
    struct hprof_verify_report rep;
    struct hprof_error err = { 0 };
    ck_assert_msg(tl_verify_memory(out, len, &rep, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(rep.class_dumps, DEEP);
    ck_assert_uint_eq(rep.instances, 1);
    unlink(path);
    free(path);
    free(out);
    tb_free(&b);
}
END_TEST

/* Hand-made dumps for the keep rules (4-byte ids, every name first): class
 * X extends Keep extends Z extends W, each with one int field but Keep,
 * which has `key` and, with keep_fields 2, `other` (both Object).  X, Keep
 * and Z are dumped subclass first, then an instance of X (its Keep fields
 * refer to Strings 0 and 1), with `keep_instance` an instance of Keep (its
 * `key` refers to String 2), and only then W: resolving X on W's arrival
 * jumps over Keep and Z, whose span was learnt while W was missing. */
static const char *const keep_texts[] = { "text-the-rule-keeps", "text-nobody-keeps",
                                          "text-the-rule-keeps-in-Keep" };
#define N_KEEP_TEXTS (sizeof keep_texts / sizeof keep_texts[0])
static const char *const keep_key[] = { "Keep.key" };

enum {
    N_STRING = 0x10, N_X, N_KEEP, N_Z, N_W, N_VALUE, N_KEY, N_OTHER, N_PAD,
    C_STRING = 0x100, C_X = 0x110, C_KEEP = 0x120, C_Z = 0x130, C_W = 0x140,
    O_X = 0x500, O_KEEP = 0x510, O_STRING = 0x600, O_CHARS = 0x700,
};

static void put_id4(uint8_t *at, uint32_t id)
{
    for (int k = 0; k < 4; k++)
        at[k] = (uint8_t)(id >> (24 - 8 * k));
}

/* `text` as an hprof char[] holds it: big-endian UTF-16. */
static size_t utf16be(const char *text, uint8_t *out)
{
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = 0;
        out[2 * i + 1] = (uint8_t)text[i];
    }
    return 2 * n;
}

static char *keep_rule_dump(unsigned keep_fields, int keep_instance)
{
    static const uint8_t an_int[1] = { HPROF_TYPE_INT };
    static const uint8_t objects[2] = { HPROF_TYPE_OBJECT, HPROF_TYPE_OBJECT };
    static const uint64_t pad[1] = { N_PAD };
    static const uint64_t keep_names[2] = { N_KEY, N_OTHER };
    static const uint64_t value_name[1] = { N_VALUE };
    static const char *const names[] = { "java.lang.String", "X", "Keep", "Z", "W",
                                         "value", "key", "other", "pad" };
    static const uint64_t classes[][2] = { { C_STRING, N_STRING }, { C_X, N_X },
                                           { C_KEEP, N_KEEP }, { C_Z, N_Z }, { C_W, N_W } };
    uint8_t values[4 + 2 * 4 + 4 + 4] = { 0 };
    uint8_t chars[64];
    struct tbuf b;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        tb_string(&b, N_STRING + i, names[i]);
    for (unsigned i = 0; i < sizeof classes / sizeof classes[0]; i++)
        tb_load_class(&b, i + 1, classes[i][0], classes[i][1]);
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class_named(&b, C_STRING, 0, value_name, objects, 1);
    tb_class_named(&b, C_X, C_KEEP, pad, an_int, 1);
    tb_class_named(&b, C_KEEP, C_Z, keep_names, objects, keep_fields);
    tb_class_named(&b, C_Z, C_W, pad, an_int, 1);
    /* X's int, Keep's fields, Z's int, W's int */
    for (unsigned i = 0; i < keep_fields; i++)
        put_id4(values + 4 + 4 * i, O_STRING + 16 * i);
    tb_instance(&b, O_X, C_X, values, 4 + 4 * keep_fields + 4 + 4);
    if (keep_instance) { /* Keep's fields, Z's int, W's int */
        memset(values, 0, sizeof values);
        put_id4(values, O_STRING + 16 * 2);
        tb_instance(&b, O_KEEP, C_KEEP, values, 4 * keep_fields + 4 + 4);
    }
    tb_class_named(&b, C_W, 0, pad, an_int, 1);
    for (unsigned i = 0; i < N_KEEP_TEXTS; i++) {
        uint8_t ref[4];
        put_id4(ref, O_CHARS + 16 * i);
        size_t n = utf16be(keep_texts[i], chars);
        tb_instance(&b, O_STRING + 16 * i, C_STRING, ref, 4);
        tb_prim_array(&b, O_CHARS + 16 * i, HPROF_TYPE_CHAR, (uint32_t)(n / 2), chars);
    }
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    char *path = tl_temp_file(b.data, b.len, ".hprof");
    tb_free(&b);
    return path;
}

/* Shrink keep_rule_dump(keep_fields, keep_instance) with --redact
 * --redact-keep=Keep.key: which of keep_texts are still in the output, a
 * bit each. */
static unsigned texts_left_by_keep_rule(unsigned keep_fields, int keep_instance)
{
    struct hprof_shrink_options o = { .redact = HPROF_REDACT_ALL, .redact_keep = keep_key,
                                      .n_redact_keep = 1 };
    struct hprof_shrink_stats st;
    size_t len;
    uint8_t chars[64];
    unsigned left = 0;
    char *path = keep_rule_dump(keep_fields, keep_instance);
    uint8_t *out = tl_shrink_file(path, &o, &len, &st);
    for (unsigned i = 0; i < N_KEEP_TEXTS; i++)
        if (memmem(out, len, chars, utf16be(keep_texts[i], chars)) != NULL)
            left |= 1u << i;
    unlink(path);
    free(path);
    free(out);
    return left;
}

/* A Java 6 or Dalvik dump: Strings of value, offset and count.  Keep's
 * `key` names a String that holds `count` chars from `offset` of a char[]
 * with `text`, which a second String holds whole. */
static void put_be(uint8_t *at, uint64_t v, unsigned n);

static char *shared_value_dump_with(uint32_t offset, uint32_t count, uint32_t other_offset,
                                    uint32_t other_count, const char *text)
{
    static const uint8_t string_types[3] = { HPROF_TYPE_OBJECT, HPROF_TYPE_INT, HPROF_TYPE_INT };
    static const uint64_t string_fields[3] = { N_VALUE, N_VALUE + 10, N_VALUE + 11 };
    static const uint8_t an_object[1] = { HPROF_TYPE_OBJECT };
    static const uint64_t key_name[1] = { N_KEY };
    uint8_t values[12], chars[128];
    size_t n = utf16be(text, chars);
    struct tbuf b;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_string(&b, N_STRING, "java.lang.String");
    tb_string(&b, N_KEEP, "Keep");
    tb_string(&b, N_VALUE, "value");
    tb_string(&b, N_KEY, "key");
    tb_string(&b, N_VALUE + 10, "offset");
    tb_string(&b, N_VALUE + 11, "count");
    tb_load_class(&b, 1, C_STRING, N_STRING);
    tb_load_class(&b, 2, C_KEEP, N_KEEP);
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class_named(&b, C_STRING, 0, string_fields, string_types, 3);
    tb_class_named(&b, C_KEEP, 0, key_name, an_object, 1);
    put_id4(values, O_STRING);
    tb_instance(&b, O_KEEP, C_KEEP, values, 4);
    put_id4(values, O_CHARS);
    put_be(values + 4, offset, 4);
    put_be(values + 8, count, 4);
    tb_instance(&b, O_STRING, C_STRING, values, 12); /* the key */
    put_be(values + 4, other_offset, 4);
    put_be(values + 8, other_count, 4);
    tb_instance(&b, O_STRING + 16, C_STRING, values, 12); /* another String of it */
    tb_prim_array(&b, O_CHARS, HPROF_TYPE_CHAR, (uint32_t)(n / 2), chars);
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    char *path = tl_temp_file(b.data, b.len, ".hprof");
    tb_free(&b);
    return path;
}

/* The other String holds all of the text. */
static char *shared_value_dump(uint32_t offset, uint32_t count, const char *text)
{
    return shared_value_dump_with(offset, count, 0, (uint32_t)strlen(text), text);
}

/* Whether `text` is in shared_value_dump()'s shrink with --redact
 * --redact-keep=Keep.key, by the multi-pass shrink or the one pass. */
static int shared_value_left(uint32_t offset, uint32_t count, const char *text, int one_pass)
{
    struct hprof_shrink_options o = { .redact = HPROF_REDACT_ALL, .redact_keep = keep_key,
                                      .n_redact_keep = 1 };
    struct hprof_shrink_stats st;
    size_t len;
    uint8_t chars[128];
    char *path = shared_value_dump(offset, count, text);
    uint8_t *out = tl_shrink_file_by(one_pass ? hprof_shrink_one_pass : hprof_shrink, path, &o,
                                     &len, &st, 0);
    int left = memmem(out, len, chars, utf16be(text, chars)) != NULL;
    unlink(path);
    free(path);
    free(out);
    return left;
}

/* A key that holds all of its array keeps its text though a String read
 * after it holds part of the same array (loop: multi-pass, one pass). */
START_TEST(redact_keep_rule_keeps_a_whole_array_a_later_substring_shares)
{
    const char *text = "KEEPSHARED_j";
    struct hprof_shrink_options o = { .redact = HPROF_REDACT_ALL, .redact_keep = keep_key,
                                      .n_redact_keep = 1 };
    struct hprof_shrink_stats st;
    size_t len;
    uint8_t chars[128];
    char *path = shared_value_dump_with(0, (uint32_t)strlen(text), 4, 6, text);
    uint8_t *out = tl_shrink_file_by(_i ? hprof_shrink_one_pass : hprof_shrink, path, &o, &len,
                                     &st, 0);
    ck_assert_ptr_nonnull(memmem(out, len, chars, utf16be(text, chars)));
    unlink(path);
    free(path);
    free(out);
}
END_TEST

/* A key that is a substring of a shared array keeps nothing of it: the
 * rest of the text is not the key's (loop: multi-pass, one pass). */
START_TEST(redact_keep_rule_keeps_no_text_of_an_array_its_substring_shares)
{
    const char *text = "key=0a1b2c3d;password=SharedArraySecret";
    ck_assert(!shared_value_left(4, 8, text, _i));
    ck_assert(!shared_value_left(0, 12, text, _i)); /* from the first char, not to the last */
    ck_assert(shared_value_left(0, (uint32_t)strlen(text), text, _i)); /* the whole: kept */
}
END_TEST

/* The String that X's `key` names keeps its text, as when W comes before
 * the instance: the offset of Keep's fields within X must count W's
 * bytes, which Keep's own running sum of its fields does not hold. */
START_TEST(redact_keep_rule_finds_its_field_when_the_chain_completes_late)
{
    ck_assert_msg(texts_left_by_keep_rule(1, 0) & 1, "the String X's Keep.key names was redacted");
}
END_TEST

/* With `other` just past `key` in Keep, only key's String keeps its text
 * (the offset off by W's bytes exempted other's instead: a leak). */
START_TEST(redact_keep_rule_never_exempts_a_field_it_does_not_name)
{
    unsigned left = texts_left_by_keep_rule(2, 0);
    ck_assert_msg(!(left & 2), "the String of X's Keep.other kept its text");
    ck_assert_msg(left & 1, "the String X's Keep.key names was redacted");
}
END_TEST

/* Finishing Keep's layout for X's sake leaves Keep to be worked out on its
 * own: an instance of Keep itself keeps the String its `key` names too
 * (taking Keep's `resolved` mark then made the eager pass 1 skip Keep's
 * exempt fields). */
START_TEST(redact_keep_rule_still_applies_to_the_rule_class_itself)
{
    unsigned left = texts_left_by_keep_rule(1, 1);
    ck_assert_msg(left & 4, "the String Keep's own key names was redacted");
    ck_assert_msg(left & 1, "the String X's Keep.key names was redacted");
}
END_TEST

/* A HotSpot-style dump (slash names, 4-byte ids) of the JDK and LeakCanary
 * classes whose fields redaction treats apart: Strings with their hash
 * caches, hash-table nodes, a box, a list, both KeyedWeakReferences and
 * threads, the runtime's and the application's. */
enum {
    M_STRING = 1, M_NODE, M_CHM_NODE, M_INTEGER, M_LIST, M_KWR2, M_KWR1, M_THREAD, M_WORKER,
    M_N_CLASSES,
};
enum { F_OBJ = HPROF_TYPE_OBJECT, F_INT = HPROF_TYPE_INT, F_LONG = HPROF_TYPE_LONG,
       F_BYTE = HPROF_TYPE_BYTE, F_BOOL = HPROF_TYPE_BOOLEAN };

struct model_class {
    const char *name;
    unsigned super;
    const char *fields[4];
    uint8_t types[4];
};

static const struct model_class model_classes[M_N_CLASSES] = {
    [M_STRING] = { "java/lang/String", 0, { "value", "coder", "hash", "hashIsZero" },
                   { F_OBJ, F_BYTE, F_INT, F_BOOL } },
    [M_NODE] = { "java/util/HashMap$Node", 0, { "hash", "key" }, { F_INT, F_OBJ } },
    [M_CHM_NODE] = { "java/util/concurrent/ConcurrentHashMap$Node", 0, { "hash", "key" },
                     { F_INT, F_OBJ } },
    [M_INTEGER] = { "java/lang/Integer", 0, { "value" }, { F_INT } },
    [M_LIST] = { "java/util/ArrayList", 0, { "size", "elementData" }, { F_INT, F_OBJ } },
    [M_KWR2] = { "leakcanary/KeyedWeakReference", 0,
                 { "key", "description", "watchUptimeMillis", "retainedUptimeMillis" },
                 { F_OBJ, F_OBJ, F_LONG, F_LONG } },
    [M_KWR1] = { "com/squareup/leakcanary/KeyedWeakReference", 0, { "key", "name" },
                 { F_OBJ, F_OBJ } },
    [M_THREAD] = { "java/lang/Thread", 0, { "name", "priority" }, { F_OBJ, F_INT } },
    [M_WORKER] = { "com/example/Worker", M_THREAD, { NULL }, { 0 } },
};

/* The model dump's Strings: texts, hashes as the JVM caches them. */
enum { S_PIN, S_HASH_ZERO, S_KEY2, S_DESCRIPTION, S_KEY1, S_NAME1, S_MAIN, S_WORKER, S_N };
static const struct { const char *text; uint32_t hash; uint8_t hash_is_zero; } model_strings[S_N] = {
    [S_PIN] = { "PIN-4711", 0x1C2D3E4F, 0 },
    [S_HASH_ZERO] = { "hashes-to-zero", 0, 1 },
    [S_KEY2] = { "key-of-leakcanary-2", 0x11111111, 0 },
    [S_DESCRIPTION] = { "description-with-a-secret", 0x22222222, 0 },
    [S_KEY1] = { "key-of-leakcanary-1", 0x33333333, 0 },
    [S_NAME1] = { "name-of-leakcanary-1", 0x44444444, 0 },
    [S_MAIN] = { "main", 0x55555555, 0 },
    [S_WORKER] = { "upload-secret-worker", 0x66666666, 0 },
};

/* Object ids: classes 0x100 + class, Strings 0x200 + 16 * string (their
 * byte[] one more), the other instances from 0x400. */
#define M_CLASS(c) (0x100u + (c))
#define M_STR(i) (0x200u + 16u * (i))
enum { O_NODE = 0x400, O_CHM_KEY, O_CHM_MARK, O_INTEGER, O_LIST, O_KWR2, O_KWR1, O_MAIN,
       O_WORKER };
#define NAME_ID(i) (0x20u + (i))

static void put_be(uint8_t *at, uint64_t v, unsigned n)
{
    for (unsigned k = 0; k < n; k++)
        at[k] = (uint8_t)(v >> (8 * (n - 1 - k)));
}

/* One instance of `cls` from its fields' values, in declared order (own
 * fields first, then the superclass's). */
static void model_instance(struct tbuf *b, uint32_t id, unsigned cls, const uint64_t *v)
{
    uint8_t values[64];
    size_t n = 0, f = 0;
    for (unsigned c = cls; c != 0; c = model_classes[c].super)
        for (unsigned i = 0; i < 4 && model_classes[c].fields[i] != NULL; i++, f++) {
            unsigned size = type_size(model_classes[c].types[i], 4);
            put_be(values + n, v[f], size);
            n += size;
        }
    tb_instance(b, id, M_CLASS(cls), values, (uint32_t)n);
}

/* Classes with static fields: Build.VERSION (Android's SDK level and
 * another number) and Shark's KeyedWeakReference (the dump's uptime and a
 * counter).  The field names are STRING ids 0x80 + i. */
#define N_STATIC_CLASSES 2
static const struct {
    const char *name;
    const char *statics[2];
    uint8_t types[2];
    uint64_t values[2];
} static_classes[N_STATIC_CLASSES] = {
    { "android/os/Build$VERSION", { "SDK_INT", "SECRET_NUMBER" }, { F_INT, F_INT }, { 33, 0x1234 } },
    { "shark/KeyedWeakReference", { "heapDumpUptimeMillis", "counter" }, { F_LONG, F_LONG },
      { 5000, 77 } },
};
#define STATIC_CLASS(i) (0x1F0u + (i))

static void static_class_dumps(struct tbuf *b)
{
    for (unsigned c = 0; c < N_STATIC_CLASSES; c++) {
        tb_u1(b, HPROF_CLASS_DUMP);
        tb_id(b, STATIC_CLASS(c));
        tb_u4(b, 1);
        for (int i = 0; i < 6; i++) /* super, loader, signers, domain, 2 reserved */
            tb_id(b, 0);
        tb_u4(b, 0);
        tb_u2(b, 0); /* constants */
        tb_u2(b, 2);
        for (unsigned i = 0; i < 2; i++) {
            tb_id(b, 0x80 + 2 * c + i);
            tb_u1(b, static_classes[c].types[i]);
            if (static_classes[c].types[i] == F_LONG)
                tb_u8(b, static_classes[c].values[i]);
            else
                tb_u4(b, (uint32_t)static_classes[c].values[i]);
        }
        tb_u2(b, 0); /* instance fields */
    }
}

/* `names_last`: every STRING record after the heap dump, as a writer
 * that names things once it is done may write them. */
static char *model_dump(int names_last)
{
    const char *names[64];
    unsigned n_names = 0;
    struct tbuf b, strings;
    tb_init(&b, 4);
    tb_init(&strings, 4);
    tb_header(&b, "JAVA PROFILE 1.0.2");
    uint64_t field_names[M_N_CLASSES][4] = { { 0 } };
    for (unsigned c = 1; c < M_N_CLASSES; c++) {
        tb_string(&strings, NAME_ID(n_names), model_classes[c].name);
        tb_load_class(&b, c, M_CLASS(c), NAME_ID(n_names));
        names[n_names++] = model_classes[c].name;
        for (unsigned i = 0; i < 4 && model_classes[c].fields[i] != NULL; i++) {
            unsigned k = 0;
            while (k < n_names && strcmp(names[k], model_classes[c].fields[i]) != 0)
                k++;
            if (k == n_names) {
                tb_string(&strings, NAME_ID(n_names), model_classes[c].fields[i]);
                names[n_names++] = model_classes[c].fields[i];
            }
            field_names[c][i] = NAME_ID(k);
        }
    }
    for (unsigned c = 0; c < N_STATIC_CLASSES; c++) {
        tb_string(&strings, 0x70 + c, static_classes[c].name);
        tb_load_class(&b, 0x70 + c, STATIC_CLASS(c), 0x70 + c);
        for (unsigned i = 0; i < 2; i++)
            tb_string(&strings, 0x80 + 2 * c + i, static_classes[c].statics[i]);
    }
    if (!names_last)
        tb_bytes(&b, strings.data, strings.len);
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    static_class_dumps(&b);
    for (unsigned c = 1; c < M_N_CLASSES; c++) {
        unsigned n = 0;
        while (n < 4 && model_classes[c].fields[n] != NULL)
            n++;
        tb_class_named(&b, M_CLASS(c), model_classes[c].super ? M_CLASS(model_classes[c].super) : 0,
                       field_names[c], model_classes[c].types, n);
    }
    for (unsigned i = 0; i < S_N; i++) {
        const char *t = model_strings[i].text;
        uint64_t v[4] = { M_STR(i) + 1, 0, model_strings[i].hash, model_strings[i].hash_is_zero };
        model_instance(&b, M_STR(i), M_STRING, v);
        tb_prim_array(&b, M_STR(i) + 1, HPROF_TYPE_BYTE, (uint32_t)strlen(t), t);
    }
    model_instance(&b, O_NODE, M_NODE, (uint64_t[]){ model_strings[S_PIN].hash, M_STR(S_PIN) });
    model_instance(&b, O_CHM_KEY, M_CHM_NODE, (uint64_t[]){ 0x1C2D3E4F, M_STR(S_PIN) });
    model_instance(&b, O_CHM_MARK, M_CHM_NODE, (uint64_t[]){ 0xFFFFFFFF, 0 }); /* MOVED */
    model_instance(&b, O_INTEGER, M_INTEGER, (uint64_t[]){ 0x0BADBEEF });
    model_instance(&b, O_LIST, M_LIST, (uint64_t[]){ 7, 0 });
    model_instance(&b, O_KWR2, M_KWR2,
                   (uint64_t[]){ M_STR(S_KEY2), M_STR(S_DESCRIPTION), 1000, 2000 });
    model_instance(&b, O_KWR1, M_KWR1, (uint64_t[]){ M_STR(S_KEY1), M_STR(S_NAME1) });
    model_instance(&b, O_MAIN, M_THREAD, (uint64_t[]){ M_STR(S_MAIN), 5 });
    model_instance(&b, O_WORKER, M_WORKER, (uint64_t[]){ M_STR(S_WORKER), 5 });
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    if (names_last)
        tb_bytes(&b, strings.data, strings.len);
    char *path = tl_temp_file(b.data, b.len, ".hprof");
    tb_free(&b);
    tb_free(&strings);
    return path;
}

/* What the model dump becomes: the field bytes of every instance, and the
 * contents of every primitive array, by id. */
struct model_out {
    struct hprof_visitor base;
    uint8_t values[0x500][32];
    uint64_t class_of[0x500];
    uint8_t arrays[S_N][32];
    size_t array_len[S_N];
    uint64_t statics[N_STATIC_CLASSES][2];
};

static int model_out_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    struct model_out *m = (struct model_out *)v;
    unsigned i = (unsigned)(c->id - STATIC_CLASS(0));
    if (i < N_STATIC_CLASSES) {
        ck_assert_uint_eq(c->n_statics, 2);
        m->statics[i][0] = c->statics[0].value;
        m->statics[i][1] = c->statics[1].value;
    }
    return HPROF_OK;
}

static int model_out_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct model_out *m = (struct model_out *)v;
    ck_assert_uint_lt(o->id, 0x500);
    ck_assert_uint_le(o->length, 32);
    memcpy(m->values[o->id], o->values, o->length);
    m->class_of[o->id] = o->class_id;
    return HPROF_OK;
}

static int model_out_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct model_out *m = (struct model_out *)v;
    unsigned i = (unsigned)(a->id - 0x201) / 16;
    ck_assert_uint_lt(i, S_N);
    ck_assert_uint_le(a->length, 32);
    memcpy(m->arrays[i], a->data, a->length);
    m->array_len[i] = a->length;
    return HPROF_OK;
}

static const struct hprof_visitor_ops model_out_ops = {
    .class_dump = model_out_class_dump,
    .instance = model_out_instance,
    .primitive_array = model_out_array,
};

/* The model dump (its names after the heap with `names_last`) shrunk with
 * `o`, in one pass with `one_pass`, whose stats go to *st. */
static struct model_out *shrink_model_with(const struct hprof_shrink_options *o, int names_last,
                                           int one_pass, struct hprof_shrink_stats *st)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    size_t len;
    char *path = model_dump(names_last);
    uint8_t *out = tl_shrink_file_by(one_pass ? hprof_shrink_one_pass : hprof_shrink, path, o,
                                     &len, st, 0);
    struct model_out *m = calloc(1, sizeof *m);
    m->base.ops = &model_out_ops;
    ck_assert_int_eq(hprof_reader_open_memory(&r, out, len, &err), HPROF_OK);
    ck_assert_msg(hprof_reader_run(r, &m->base) == HPROF_OK, "%s", err.message);
    hprof_reader_free(r);
    unlink(path);
    free(path);
    free(out);
    return m;
}

/* The model dump shrunk with --redact (and --redact-fields); with
 * `names_last`, its names after the heap, in one pass, whose stats go to
 * *late_st. */
static struct model_out *shrink_model_as(int redact_fields, int names_last,
                                         struct hprof_shrink_stats *late_st)
{
    struct hprof_shrink_options o = { .redact = HPROF_REDACT_ALL, .redact_fields = redact_fields };
    struct hprof_shrink_stats st;
    return shrink_model_with(&o, names_last, names_last, names_last ? late_st : &st);
}

static struct model_out *shrink_model(int redact_fields)
{
    return shrink_model_as(redact_fields, 0, NULL);
}

static uint64_t field_at(const struct model_out *m, uint32_t id, unsigned at, unsigned size)
{
    uint64_t v = 0;
    for (unsigned k = 0; k < size; k++)
        v = v << 8 | m->values[id][at + k];
    return v;
}

static int text_kept(const struct model_out *m, unsigned i)
{
    const char *t = model_strings[i].text;
    return m->array_len[i] == strlen(t) && memcmp(m->arrays[i], t, strlen(t)) == 0;
}

/* String: value at 0, coder at 4, hash at 5, hashIsZero at 9. */
START_TEST(redact_clears_the_hash_of_a_redacted_string)
{
    struct model_out *m = shrink_model(0);
    ck_assert(!text_kept(m, S_PIN));
    ck_assert_uint_eq(field_at(m, M_STR(S_PIN), 5, 4), 0);
    ck_assert_uint_eq(field_at(m, M_STR(S_HASH_ZERO), 9, 1), 0); /* "hashes to 0" goes too */
    ck_assert_uint_eq(field_at(m, M_STR(S_PIN), 0, 4), M_STR(S_PIN) + 1);
    free(m);
}
END_TEST

/* In one pass, the names of a class may come after its instances (a
 * writer that names things once done): which of its fields are hash
 * caches is not known when they go out, so under --redact every number
 * of theirs goes, as --redact-fields takes it, counted late; references,
 * the heap's structure, stay. */
START_TEST(redact_in_one_pass_clears_the_hashes_of_classes_named_after_the_heap)
{
    struct hprof_shrink_stats st;
    struct model_out *m = shrink_model_as(0, 1, &st);
    ck_assert(!text_kept(m, S_PIN));
    ck_assert_uint_eq(field_at(m, M_STR(S_PIN), 5, 4), 0);
    ck_assert_uint_eq(field_at(m, O_NODE, 0, 4), 0);
    ck_assert_uint_eq(field_at(m, O_CHM_KEY, 0, 4), 0);
    ck_assert_uint_eq(field_at(m, M_STR(S_PIN), 0, 4), M_STR(S_PIN) + 1);
    ck_assert_uint_eq(field_at(m, O_NODE, 4, 4), M_STR(S_PIN));
    ck_assert_uint_ge(st.window_late, M_N_CLASSES - 1);
    free(m);
}
END_TEST

/* --keep-names writes every name as it comes, yet in one pass the names
 * of a class that come after its instances are no more known when they
 * go out: every number the multi-pass --redact --keep-names zeroes, the
 * hash caches among them, is zero in the one pass's output too. */
START_TEST(redact_keep_names_in_one_pass_zeroes_what_the_multi_pass_zeroes_of_classes_named_after_the_heap)
{
    struct hprof_shrink_options o = { .redact = HPROF_REDACT_ALL, .keep_names = 1 };
    struct hprof_shrink_stats one_st, multi_st;
    struct model_out *one = shrink_model_with(&o, 1, 1, &one_st);
    struct model_out *multi = shrink_model_with(&o, 1, 0, &multi_st);
    ck_assert_uint_eq(field_at(multi, M_STR(S_PIN), 5, 4), 0);
    ck_assert_uint_eq(field_at(multi, O_NODE, 0, 4), 0);
    for (unsigned id = 0; id < 0x500; id++) {
        unsigned at = 0;
        for (unsigned c = (unsigned)(one->class_of[id] - M_CLASS(0)); one->class_of[id] != 0 && c != 0;
             c = model_classes[c].super)
            for (unsigned i = 0; i < 4 && model_classes[c].fields[i] != NULL; i++) {
                uint8_t type = model_classes[c].types[i];
                unsigned size = type_size(type, 4);
                if (type != F_OBJ && type != F_BOOL && field_at(multi, id, at, size) == 0)
                    ck_assert_msg(field_at(one, id, at, size) == 0,
                                  "%s.%s of 0x%x kept, which the multi-pass shrink zeroes",
                                  model_classes[c].name, model_classes[c].fields[i], id);
                at += size;
            }
    }
    for (unsigned c = 0; c < N_STATIC_CLASSES; c++)
        for (unsigned i = 0; i < 2; i++)
            ck_assert(multi->statics[c][i] != 0 || one->statics[c][i] == 0);
    ck_assert_uint_eq(field_at(one, O_NODE, 4, 4), M_STR(S_PIN)); /* references stay */
    ck_assert_uint_ge(one_st.window_late, M_N_CLASSES - 1);
    free(one);
    free(multi);
}
END_TEST

/* Android 5 and 6 name String's hash cache hashCode (after value, offset
 * and count): a redacted PIN's goes too, or the PIN would come back from
 * it by trying 10^4 candidates. */
START_TEST(redact_clears_the_hash_code_of_an_android_6_string)
{
    static const uint8_t string_fields[] = { HPROF_TYPE_OBJECT, HPROF_TYPE_INT, HPROF_TYPE_INT,
                                             HPROF_TYPE_INT };
    static const uint64_t names[] = { 0x900, 0x901, 0x902, 0x903 };
    /* value 0x1000, offset 0, count 4, hashCode 0x0017_8a4f */
    const uint8_t values[16] = { 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0x17, 0x8a, 0x4f };
    const uint16_t utf16[4] = { htons('4'), htons('7'), htons('1'), htons('1') };
    struct tbuf d;
    tb_init(&d, 4);
    tb_header(&d, "JAVA PROFILE 1.0.3");
    tb_string(&d, 0x10, "java.lang.String");
    tb_string(&d, 0x900, "value");
    tb_string(&d, 0x901, "offset");
    tb_string(&d, 0x902, "count");
    tb_string(&d, 0x903, "hashCode");
    tb_load_class(&d, 1, 0x100, 0x10);
    tb_segment_begin(&d, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class_named(&d, 0x100, 0, names, string_fields, 4);
    tb_instance(&d, 0x2000, 0x100, values, sizeof values);
    tb_prim_array(&d, 0x1000, HPROF_TYPE_CHAR, 4, utf16);
    tb_segment_end(&d);
    tb_record(&d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    char *path = tl_temp_file(d.data, d.len, ".hprof");
    struct hprof_shrink_options o = { .redact = HPROF_REDACT_ALL };
    struct hprof_shrink_stats st;
    size_t len;
    uint8_t *out = tl_shrink_file(path, &o, &len, &st);
    static const uint8_t hash[4] = { 0, 0x17, 0x8a, 0x4f };
    ck_assert_ptr_null(memmem(out, len, hash, sizeof hash));
    ck_assert_ptr_null(memmem(out, len, utf16, sizeof utf16));
    free(out);
    unlink(path);
    free(path);
    tb_free(&d);
}
END_TEST

/* Node: hash at 0, key at 4.  ConcurrentHashMap's negative hash is a
 * marker of the node's kind, not a key's hash. */
START_TEST(redact_clears_the_hash_a_hash_map_node_keeps_of_its_key)
{
    struct model_out *m = shrink_model(0);
    ck_assert_uint_eq(field_at(m, O_NODE, 0, 4), 0);
    ck_assert_uint_eq(field_at(m, O_NODE, 4, 4), M_STR(S_PIN));
    ck_assert_uint_eq(field_at(m, O_CHM_KEY, 0, 4), 0);
    ck_assert_uint_eq(field_at(m, O_CHM_MARK, 0, 4), 0xFFFFFFFF);
    ck_assert_uint_eq(field_at(m, O_INTEGER, 0, 4), 0x0BADBEEF); /* not a hash: --redact-fields' */
    free(m);
}
END_TEST

START_TEST(redact_fields_zeroes_the_numbers_of_jdk_classes)
{
    struct model_out *m = shrink_model(1);
    ck_assert_uint_eq(field_at(m, O_INTEGER, 0, 4), 0);
    free(m);
}
END_TEST

/* ArrayList.size, String.coder, and what Shark reads to tell that a
 * KeyedWeakReference is retained (key, description, watch, retained). */
START_TEST(redact_fields_keeps_the_allowlisted_structural_fields)
{
    struct model_out *m = shrink_model(1);
    ck_assert_uint_eq(field_at(m, O_LIST, 0, 4), 7);
    ck_assert_uint_eq(field_at(m, O_KWR2, 8, 8), 1000);
    ck_assert_uint_eq(field_at(m, O_KWR2, 16, 8), 2000);
    ck_assert_uint_eq(field_at(m, O_MAIN, 4, 4), 5); /* Thread.priority */
    free(m);
}
END_TEST

/* Statics: SDK_INT, which Shark's known-leak rules match on, and the
 * uptime it measures retained references against stay; other numbers of
 * the JDK's, Android's and LeakCanary's classes go. */
START_TEST(redact_fields_zeroes_static_numbers_but_the_allowlisted)
{
    struct model_out *m = shrink_model(1);
    ck_assert_uint_eq(m->statics[0][0], 33);
    ck_assert_uint_eq(m->statics[0][1], 0);
    ck_assert_uint_eq(m->statics[1][0], 5000);
    ck_assert_uint_eq(m->statics[1][1], 0);
    free(m);
}
END_TEST

START_TEST(redact_keeps_the_key_and_name_of_both_keyed_weak_references)
{
    struct model_out *m = shrink_model(1);
    ck_assert_msg(text_kept(m, S_KEY2), "leakcanary.KeyedWeakReference.key redacted");
    ck_assert_msg(text_kept(m, S_KEY1), "com.squareup.leakcanary.KeyedWeakReference.key redacted");
    ck_assert_msg(text_kept(m, S_NAME1), "com.squareup.leakcanary.KeyedWeakReference.name redacted");
    free(m);
}
END_TEST

START_TEST(redact_blanks_a_keyed_weak_reference_description)
{
    struct model_out *m = shrink_model(1);
    ck_assert_uint_eq(m->array_len[S_DESCRIPTION], strlen(model_strings[S_DESCRIPTION].text));
    ck_assert_msg(!text_kept(m, S_DESCRIPTION), "the description kept its text");
    free(m);
}
END_TEST

/* The main thread is a java.lang.Thread, the application's a subclass. */
START_TEST(redact_keeps_the_main_thread_name_and_blanks_an_application_thread_name)
{
    struct model_out *m = shrink_model(0);
    ck_assert_msg(text_kept(m, S_MAIN), "the main thread's name was redacted");
    ck_assert_msg(!text_kept(m, S_WORKER), "the application thread's name kept its text");
    free(m);
}
END_TEST

static Suite *redact_suite(void)
{
    Suite *s = suite_create("redact");
    TCase *t = tcase_create("redact");
    tcase_set_timeout(t, 300);
    tcase_add_loop_test(t, redact_leaves_no_original_string_text, 0, 2 * N_FIXTURES);
    tcase_add_loop_test(t, redact_keeps_shapes_counts_and_references, 0, N_FIXTURES);
    tcase_add_loop_test(t, redact_fields_zeroes_numbers_but_not_booleans_or_references, 0, 2);
    tcase_add_loop_test(t, redact_resolves_a_deep_hierarchy_once_per_class, 0, 2);
    tcase_add_test(t, redact_keep_rule_finds_its_field_when_the_chain_completes_late);
    tcase_add_test(t, redact_keep_rule_never_exempts_a_field_it_does_not_name);
    tcase_add_loop_test(t, redact_keep_rule_keeps_no_text_of_an_array_its_substring_shares, 0, 2);
    tcase_add_loop_test(t, redact_keep_rule_keeps_a_whole_array_a_later_substring_shares, 0, 2);
    tcase_add_loop_test(t, redact_fields_takes_an_instance_without_field_bytes, 0, 2);
    tcase_add_test(t, redact_keep_rule_still_applies_to_the_rule_class_itself);
    tcase_add_test(t, redact_clears_the_hash_of_a_redacted_string);
    tcase_add_test(t, redact_in_one_pass_clears_the_hashes_of_classes_named_after_the_heap);
    tcase_add_test(t, redact_keep_names_in_one_pass_zeroes_what_the_multi_pass_zeroes_of_classes_named_after_the_heap);
    tcase_add_test(t, redact_clears_the_hash_code_of_an_android_6_string);
    tcase_add_test(t, redact_clears_the_hash_a_hash_map_node_keeps_of_its_key);
    tcase_add_test(t, redact_fields_zeroes_the_numbers_of_jdk_classes);
    tcase_add_test(t, redact_fields_keeps_the_allowlisted_structural_fields);
    tcase_add_test(t, redact_fields_zeroes_static_numbers_but_the_allowlisted);
    tcase_add_test(t, redact_keeps_the_key_and_name_of_both_keyed_weak_references);
    tcase_add_test(t, redact_blanks_a_keyed_weak_reference_description);
    tcase_add_test(t, redact_keeps_the_main_thread_name_and_blanks_an_application_thread_name);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(redact_suite());
}
