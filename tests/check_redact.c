/*
 * check_redact.c - hprof-shrink --redact: no kept String or buffer still
 * holds its original bytes (every original String text of 6+ bytes is
 * searched for in the output), except the Strings a keep rule names and
 * texts that exist as STRING records (class, field and method names); while
 * lengths, types, instance counts and references stay as they were.
 */
#define _GNU_SOURCE /* memmem */
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

static int in_records(const struct facts *f, const struct text *t)
{
    for (size_t i = 0; i < f->n_records; i++)
        if (memmem(f->records[i].bytes, f->records[i].len, t->bytes, t->len) != NULL)
            return 1;
    return 0;
}

static int is_kept_text(const struct text *t, int keep_title_rule)
{
    static const char *const kept[] = { "5b2f0c1e-77aa-4f3e-9d1a-0c4e6d2b9f10",
                                        "com.example.MainActivity received onDestroy" };
    for (size_t i = 0; i < 2; i++)
        if (t->len == strlen(kept[i]) && memcmp(t->bytes, kept[i], t->len) == 0)
            return 1;
    return keep_title_rule && t->len == 23 && memcmp(t->bytes, "Secret account overview", 23) == 0;
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
        if (in_records(&in, t))
            continue; /* also a class, field or method name: not user data */
        searched++;
        ck_assert_msg(memmem(out, len, t->bytes, t->len) == NULL, "%s: text survives: %.*s",
                      fixtures[fixture], (int)(t->len > 60 ? 60 : t->len), t->bytes);
    }
    ck_assert_uint_gt(searched, 10);
    if (fixture < 2) { /* the generated dumps hold a KeyedWeakReference and an Activity */
        ck_assert_uint_eq(kept, 2 + with_rule);
        ck_assert_uint_eq(st.strings_kept_by_rule, 2 + with_rule);
    }
    facts_free(&in);
    free(out);
}
END_TEST

/* Everything but the bytes of texts (and pixels) is as without --redact. */
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
    /* instances are untouched (only arrays are filled) */
    for (size_t i = 0; i <= a.instance_hash.mask; i++) {
        uint64_t h;
        if (a.instance_hash.keys[i] == 0)
            continue;
        ck_assert(idmap_get(&b.instance_hash, a.instance_hash.keys[i], &h));
        ck_assert_uint_eq(h, a.instance_hash.values[i]);
    }
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
 * Activity.mDestroyed and the reference Activity.mTitle are not; Strings (a
 * JDK class) keep their ints. */
START_TEST(redact_fields_zeroes_numbers_of_application_classes_only)
{
    const char *path = fixtures[_i];
    const char *main_name = _i ? "com/example/MainActivity" : "com.example.MainActivity";
    const char *string_name = _i ? "java/lang/String" : "java.lang.String";
    uint64_t main_class = facts_class_id(path, main_name);
    uint64_t string_class = facts_class_id(path, string_name);
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
    int mains = 0, strings = 0;
    for (size_t i = 0; i <= in.instance_class.mask; i++) {
        uint64_t id = in.instance_class.keys[i], before, now;
        if (id == 0 || idmap_has(&in.system, id) || !idmap_get(&after.instance_hash, id, &now))
            continue; /* dropped, or a hollow stand-in */
        ck_assert(idmap_get(&in.instance_hash, id, &before));
        if (in.instance_class.values[i] == main_class) {
            ck_assert_uint_ne(before, now);
            mains++;
        } else if (in.instance_class.values[i] == string_class) {
            ck_assert_uint_eq(before, now);
            strings++;
        }
    }
    ck_assert_int_eq(mains, 1);
    ck_assert_int_gt(strings, 10);
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

/* A hierarchy 100k classes deep, each with a field, listed leaf first:
 * redaction works out each class's exempt fields once per class (the keep
 * rules' classes up its chain are memoised), where a walk of the whole
 * chain for every class grew with the square of the depth (this suite took
 * 43 s with it, 25 s without, on the development VM). */
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
    uint8_t *out = tl_shrink_file(path, &o, &len, &st);
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

/* The String that X's `key` names keeps its text, as when W comes before
 * the instance (the rule's field used to be looked for W's bytes too far
 * into the instance, past it: X's offset of Keep's fields was taken from
 * Keep's running sum, which missed W). */
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

static Suite *redact_suite(void)
{
    Suite *s = suite_create("redact");
    TCase *t = tcase_create("redact");
    tcase_set_timeout(t, 300);
    tcase_add_loop_test(t, redact_leaves_no_original_string_text, 0, 2 * N_FIXTURES);
    tcase_add_loop_test(t, redact_keeps_shapes_counts_and_references, 0, N_FIXTURES);
    tcase_add_loop_test(t, redact_fields_zeroes_numbers_of_application_classes_only, 0, 2);
    tcase_add_test(t, redact_resolves_a_deep_hierarchy_once_per_class);
    tcase_add_test(t, redact_keep_rule_finds_its_field_when_the_chain_completes_late);
    tcase_add_test(t, redact_keep_rule_never_exempts_a_field_it_does_not_name);
    tcase_add_test(t, redact_keep_rule_still_applies_to_the_rule_class_itself);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(redact_suite());
}
