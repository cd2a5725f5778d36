/*
 * check_shrink.c - hprof_shrink() on every fixture and every --arrays mode:
 * the output is valid and tells the same story (instances per class, String
 * texts, Bitmap pixels, DumpData buffers), holds no other array contents,
 * adds no dangling reference, and matches the generator's bookkeeping.
 */
#define _GNU_SOURCE /* memmem */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "facts.h"
#include "md5_lanes.h"
#include "segment_runs.h"
#include "shrink_stats.h"
#include "write_pass.h"
#include "testlib.h"

#define N_FIXTURES TL_N_FIXTURES
#define N_MODES 3
#define fixtures tl_fixtures
#define available tl_fixture_available

struct run {
    struct facts in, out;
    struct hprof_shrink_stats stats;
    struct hprof_verify_report verified;
    uint8_t *data;
    size_t len;
    int mode;
};

static void run(struct run *x, int fixture, int mode, int keep_system)
{
    struct hprof_error err = { 0 };
    struct hprof_shrink_options o = { .arrays = mode, .keep_system_heaps = keep_system };
    x->mode = mode;
    x->data = tl_shrink_file(fixtures[fixture], &o, &x->len, &x->stats);
    ck_assert_int_eq(facts_load(fixtures[fixture], &x->in, &err), HPROF_OK);
    ck_assert_int_eq(facts_load_memory(x->data, x->len, &x->out, &err), HPROF_OK);
    ck_assert_msg(tl_verify_memory(x->data, x->len, &x->verified, &err) == HPROF_OK, "verify: %s",
                  err.message);
}

/* Loop case `i` of a test over every fixture and mode (fixture i / N_MODES,
 * --arrays mode i % N_MODES) shrunk into `x`; 0, and `x` untouched, when
 * its fixture is absent. */
static int run_case(struct run *x, int i)
{
    if (!available(i / N_MODES))
        return 0;
    run(x, i / N_MODES, i % N_MODES, 0);
    return 1;
}

static void done(struct run *x)
{
    facts_free(&x->in);
    facts_free(&x->out);
    free(x->data);
}

/* Every key of `a` maps to the same value in `b`, and they have as many. */
static void assert_same_map(const struct idmap *a, const struct idmap *b, const char *what)
{
    ck_assert_msg(a->count == b->count, "%s: %zu before, %zu after", what, a->count, b->count);
    for (size_t i = 0; i <= a->mask; i++) {
        uint64_t v;
        if (a->keys[i] == 0)
            continue;
        ck_assert_msg(idmap_get(b, a->keys[i], &v), "%s: 0x%llx is gone", what,
                      (unsigned long long)a->keys[i]);
        ck_assert_msg(v == a->values[i], "%s: 0x%llx changed", what,
                      (unsigned long long)a->keys[i]);
    }
}

/* The dump in `d` written to a temporary file (*path) and shrunk with the
 * default options. */
static uint8_t *shrink_dump(const struct tbuf *d, char **path, size_t *len,
                            struct hprof_shrink_stats *st)
{
    struct hprof_shrink_options o = { 0 };
    *path = tl_temp_file(d->data, d->len, ".hprof");
    return tl_shrink_file(*path, &o, len, st);
}

/* The same, after ending the dump's segment and the heap dump. */
static uint8_t *end_and_shrink_dump(struct tbuf *d, char **path, size_t *len,
                                    struct hprof_shrink_stats *st)
{
    tb_segment_end(d);
    tb_record(d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    return shrink_dump(d, path, len, st);
}

/* An Android dump up to its first segment's class android.graphics.Bitmap
 * (id 0x100) with one field, mBuffer, at offset 0. */
static void begin_bitmap_dump(struct tbuf *d)
{
    static const uint8_t bitmap_fields[] = { HPROF_TYPE_OBJECT };
    tb_init(d, 4);
    tb_header(d, "JAVA PROFILE 1.0.3");
    tb_string(d, 0x10, "android.graphics.Bitmap");
    tb_string(d, 0x900, "mBuffer"); /* tb_class names field i 0x900 + i */
    tb_load_class(d, 1, 0x100, 0x10);
    tb_segment_begin(d, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(d, 0x100, 0, bitmap_fields, 1);
}

/* An Android dump whose first byte array (0x1000, `bytes` of `first`)
 * comes before the names that say which class is a Bitmap, so that passes
 * 1-2 cannot locate it; then the class Bitmap (0x100, field mBuffer) in a
 * segment left open. */
static void begin_dump_with_an_unlocated_buffer(struct tbuf *d, const uint8_t *first,
                                                uint32_t bytes)
{
    static const uint8_t bitmap_fields[] = { HPROF_TYPE_OBJECT };
    tb_init(d, 4);
    tb_header(d, "JAVA PROFILE 1.0.3");
    tb_segment_begin(d, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_prim_array(d, 0x1000, HPROF_TYPE_BYTE, bytes, first);
    tb_segment_end(d);
    tb_string(d, 0x10, "android.graphics.Bitmap");
    tb_string(d, 0x900, "mBuffer");
    tb_load_class(d, 1, 0x100, 0x10);
    tb_segment_begin(d, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(d, 0x100, 0, bitmap_fields, 1);
}

/* `out` is a valid dump. */
static void assert_verifies(const uint8_t *out, size_t len)
{
    struct hprof_verify_report rep;
    struct hprof_error err = { 0 };
    ck_assert_msg(tl_verify_memory(out, len, &rep, &err) == HPROF_OK, "verify: %s", err.message);
}

/* Every Bitmap of the dump at `path` shows the same pixels in `out`. */
static void assert_same_bitmap_pixels(const char *path, const uint8_t *out, size_t len)
{
    struct facts in, after;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(facts_load(path, &in, &err), HPROF_OK);
    ck_assert_int_eq(facts_load_memory(out, len, &after, &err), HPROF_OK);
    assert_same_map(&in.bitmaps, &after.bitmaps, "Bitmap pixels");
    facts_free(&in);
    facts_free(&after);
}

/* `out`, shrunk from the dump at `path` that `d` built, shows its Bitmaps'
 * pixels and verifies; then all three go, and the file. */
static void assert_bitmaps_shrunk_then_free(char *path, uint8_t *out, size_t len, struct tbuf *d)
{
    assert_same_bitmap_pixels(path, out, len);
    assert_verifies(out, len);
    free(out);
    unlink(path);
    free(path);
    tb_free(d);
}

START_TEST(system_heaps_keep_instances_per_class_outside_dropped_heaps)
{
    struct run x;
    if (!run_case(&x, _i))
        return;
    assert_same_map(&x.in.class_counts, &x.out.class_counts, "app instances per class");
    done(&x);
}
END_TEST

START_TEST(strings_keep_every_string_text)
{
    struct run x;
    if (!run_case(&x, _i))
        return;
    ck_assert_uint_gt(x.in.strings.count, 0);
    assert_same_map(&x.in.strings, &x.out.strings, "String texts");
    ck_assert_uint_eq(x.stats.string_values_kept.count, x.out.string_value_ids_kept);
    done(&x);
}
END_TEST

START_TEST(bitmaps_keep_every_bitmap_and_dump_data_buffer)
{
    struct run x;
    if (!run_case(&x, _i))
        return;
    assert_same_map(&x.in.bitmaps, &x.out.bitmaps, "Bitmap pixels");
    assert_same_map(&x.in.dump_buffers, &x.out.dump_buffers, "DumpData buffers");
    done(&x);
}
END_TEST

START_TEST(arrays_leave_no_other_array_contents)
{
    struct run x;
    if (!run_case(&x, _i))
        return;
    ck_assert_uint_gt(x.in.arrays_with_contents, 0);
    ck_assert_uint_eq(x.out.arrays_with_contents, 0);
    done(&x);
}
END_TEST

/* empty and zero add no dangling reference; remove only to removed arrays. */
START_TEST(shrink_adds_no_dangling_reference)
{
    struct run x;
    if (!run_case(&x, _i))
        return;
    const struct idmap *d = &x.out.dangling;
    for (size_t i = 0; i <= d->mask; i++) {
        uint64_t id = d->keys[i];
        if (id == 0 || idmap_has(&x.in.dangling, id))
            continue;
        ck_assert_msg(x.mode == HPROF_ARRAYS_REMOVE && idmap_has(&x.in.arrays, id),
                      "new dangling reference to 0x%llx", (unsigned long long)id);
    }
    done(&x);
}
END_TEST

/* zero keeps every surviving array's length and type; empty its type. */
START_TEST(arrays_keep_types_and_zero_mode_keeps_lengths)
{
    struct run x;
    if (!run_case(&x, _i))
        return;
    const struct idmap *a = &x.out.arrays;
    for (size_t i = 0; i <= a->mask; i++) {
        uint64_t before;
        if (a->keys[i] == 0)
            continue;
        ck_assert(idmap_get(&x.in.arrays, a->keys[i], &before));
        ck_assert_uint_eq(before & 0xFF, a->values[i] & 0xFF);
        if (x.mode == HPROF_ARRAYS_ZERO && !idmap_has(&x.in.system, a->keys[i]))
            ck_assert_uint_eq(before, a->values[i]);
    }
    done(&x);
}
END_TEST

START_TEST(shrink_matches_the_generators_bookkeeping)
{
    struct run x;
    const char *m = "fixtures/android-synth.manifest";
    run(&x, 0, _i, 0);
    ck_assert_uint_eq(x.stats.bitmap_groups, (uint64_t)tl_manifest(m, "bitmap_groups"));
    ck_assert_uint_eq(x.stats.bitmap_duplicates.count, (uint64_t)tl_manifest(m, "bitmap_merged"));
    ck_assert_uint_eq(x.stats.system_standins.count, (uint64_t)tl_manifest(m, "system_standins"));
    ck_assert_uint_eq(x.stats.system_standins.count + x.stats.system_dropped.count,
                      (uint64_t)tl_manifest(m, "system_objects"));
    ck_assert_uint_eq(x.stats.roots_dropped, (uint64_t)tl_manifest(m, "roots_dropped"));
    ck_assert_uint_eq(x.stats.instances_in.count, (uint64_t)tl_manifest(m, "instances"));
    /* merged copies are gone unless something else refers to them; those
     * stay as --arrays says, counted as duplicates alone (so --arrays=remove
     * removes them uncounted) */
    uint64_t arrays = (uint64_t)tl_manifest(m, "primitive_arrays");
    uint64_t named_twins = (uint64_t)tl_manifest(m, "bitmap_merged") -
                           (uint64_t)tl_manifest(m, "bitmap_dropped");
    uint64_t removed =
        _i == HPROF_ARRAYS_REMOVE ? x.stats.arrays_removed.count + named_twins : 0;
    uint64_t dropped_system = 0;
    for (size_t i = 0; i <= x.in.system.mask; i++)
        if (x.in.system.keys[i] && idmap_has(&x.in.arrays, x.in.system.keys[i]) &&
            !idmap_has(&x.out.objects, x.in.system.keys[i]))
            dropped_system++;
    ck_assert_uint_eq(x.verified.primitive_arrays,
                      arrays - (uint64_t)tl_manifest(m, "bitmap_dropped") - removed -
                          dropped_system);
    ck_assert_uint_eq(x.stats.bitmap_buffers_kept.count + x.stats.bitmap_duplicates.count,
                      x.stats.bitmap_candidates);
    /* the 2.5 MiB buffer has no twin of its size, nor has the third DumpData
     * buffer (whose size is known: dumped just before its byte[][]): found,
     * never hashed */
    ck_assert_uint_eq(x.stats.bitmap_candidates, 8);
    ck_assert_uint_eq(x.stats.bitmap_digested, 6);
    done(&x);
}
END_TEST

/* Stand-ins keep their id and class; the synth's primitive one is emptied. */
START_TEST(system_heaps_keep_referenced_objects_as_hollow_stand_ins)
{
    struct run x;
    run(&x, 0, HPROF_ARRAYS_EMPTY, 0);
    uint64_t standins = 0;
    for (size_t i = 0; i <= x.out.system.mask; i++) {
        uint64_t id = x.out.system.keys[i], shape;
        if (id == 0)
            continue;
        standins++;
        if (idmap_get(&x.out.arrays, id, &shape))
            ck_assert_uint_eq(shape >> 8, 0);
    }
    ck_assert_uint_eq(standins, (uint64_t)tl_manifest("fixtures/android-synth.manifest",
                                                      "system_standins"));
    ck_assert_uint_eq(x.in.dangling.count, x.out.dangling.count);
    done(&x);
}
END_TEST

/* An Android dump's start: class java.lang.String (0x100, its value field
 * named 0x900) and class android.os.Build (0x200) whose object statics are
 * `names[i]` = `values[i]` (Strings 0x2000 + 0x100 i, say), then an open
 * segment in the zygote heap for the caller's objects. */
static void tb_device_dump(struct tbuf *d, const char *const *names, const uint64_t *values,
                           unsigned n)
{
    static const uint8_t string_fields[] = { HPROF_TYPE_OBJECT };
    tb_init(d, 4);
    tb_header(d, "JAVA PROFILE 1.0.3");
    tb_string(d, 0x10, "java.lang.String");
    tb_string(d, 0x20, "android.os.Build");
    for (unsigned i = 0; i < n; i++)
        tb_string(d, 0x30 + i, names[i]);
    tb_string(d, 0x900, "value"); /* tb_class names field i 0x900 + i */
    tb_load_class(d, 1, 0x100, 0x10);
    tb_load_class(d, 2, 0x200, 0x20);
    tb_segment_begin(d, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(d, 0x100, 0, string_fields, 1);
    tb_u1(d, HPROF_CLASS_DUMP);
    tb_id(d, 0x200);
    tb_u4(d, 1);
    for (int i = 0; i < 6; i++)
        tb_id(d, 0);
    tb_u4(d, 0);
    tb_u2(d, 0);
    tb_u2(d, (uint16_t)n);
    for (unsigned i = 0; i < n; i++) {
        tb_id(d, 0x30 + i);
        tb_u1(d, HPROF_TYPE_OBJECT);
        tb_id(d, values[i]);
    }
    tb_u2(d, 0);
    tb_u1(d, HPROF_HEAP_DUMP_INFO);
    tb_u4(d, HPROF_HEAP_ZYGOTE);
    tb_id(d, 0x10);
}

/* android.os.Build.MANUFACTURER, a String of the zygote heap, keeps its
 * text and its value (a hollow stand-in read "" to Shark), with and
 * without --redact: it describes the device, not its user.  An app String
 * beside it is redacted as ever. */
START_TEST(system_heaps_keep_the_text_of_builds_strings)
{
    static const char maker[] = "samsung-maker", secret[] = "secret-of-user";
    static const char *const names[] = { "MANUFACTURER" };
    static const uint64_t values[] = { 0x2000 };
    const uint8_t maker_ref[4] = { 0, 0, 0x10, 0 }, secret_ref[4] = { 0, 0, 0x11, 0 };
    struct tbuf d;
    tb_device_dump(&d, names, values, 1);
    tb_instance(&d, 0x2000, 0x100, maker_ref, 4);
    tb_prim_array(&d, 0x1000, HPROF_TYPE_BYTE, sizeof maker - 1, maker);
    tb_u1(&d, HPROF_HEAP_DUMP_INFO);
    tb_u4(&d, HPROF_HEAP_APP);
    tb_id(&d, 0x10);
    tb_instance(&d, 0x2100, 0x100, secret_ref, 4);
    tb_prim_array(&d, 0x1100, HPROF_TYPE_BYTE, sizeof secret - 1, secret);
    tb_segment_end(&d);
    tb_record(&d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    char *path = tl_temp_file(d.data, d.len, ".hprof");
    for (int redact = 0; redact <= 1; redact++) {
        struct hprof_shrink_options o = { .redact = redact ? HPROF_REDACT_ALL : HPROF_REDACT_NONE };
        struct hprof_shrink_stats st;
        size_t len;
        uint8_t *out = tl_shrink_file(path, &o, &len, &st);
        ck_assert_ptr_nonnull(memmem(out, len, maker, sizeof maker - 1));
        /* the String still names its value: 0x2000's instance record whole */
        static const uint8_t whole[] = { HPROF_INSTANCE_DUMP, 0, 0, 0x20, 0, 0, 0, 0, 1,
                                         0, 0, 1, 0, 0, 0, 0, 4, 0, 0, 0x10, 0 };
        ck_assert_ptr_nonnull(memmem(out, len, whole, sizeof whole));
        ck_assert_uint_eq(memmem(out, len, secret, sizeof secret - 1) == NULL, redact);
        assert_verifies(out, len);
        free(out);
    }
    unlink(path);
    free(path);
    tb_free(&d);
}
END_TEST

/* The records of `d` (a dump with 4-byte ids) with its STRING records
 * moved after everything else, as a writer that names things once it is
 * done may write them. */
static void move_names_last(struct tbuf *d)
{
    size_t at = strlen((const char *)d->data) + 1 + 4 + 8;
    struct tbuf rest, names;
    tb_init(&rest, 4);
    tb_init(&names, 4);
    tb_bytes(&rest, d->data, at);
    while (at < d->len) {
        size_t n = 9 + ((size_t)d->data[at + 5] << 24 | (size_t)d->data[at + 6] << 16 |
                        (size_t)d->data[at + 7] << 8 | d->data[at + 8]);
        tb_bytes(d->data[at] == HPROF_TAG_STRING ? &names : &rest, d->data + at, n);
        at += n;
    }
    tb_bytes(&rest, names.data, names.len);
    tb_free(d);
    tb_free(&names);
    *d = rest;
}

/* The multi-pass shrink reads the whole dump before it decides: with
 * the names after the heap, android.os.Build.MANUFACTURER keeps its text
 * under --redact as it does with them first. */
START_TEST(system_heaps_keep_the_text_of_builds_strings_named_after_the_heap)
{
    static const char maker[] = "samsung-maker";
    static const char *const names[] = { "MANUFACTURER" };
    static const uint64_t values[] = { 0x2000 };
    const uint8_t maker_ref[4] = { 0, 0, 0x10, 0 };
    struct tbuf d;
    tb_device_dump(&d, names, values, 1);
    tb_instance(&d, 0x2000, 0x100, maker_ref, 4);
    tb_prim_array(&d, 0x1000, HPROF_TYPE_BYTE, sizeof maker - 1, maker);
    tb_segment_end(&d);
    tb_record(&d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    move_names_last(&d);
    char *path = tl_temp_file(d.data, d.len, ".hprof");
    for (int keep = 0; keep <= 1; keep++) {
        struct hprof_shrink_options o = { .redact = HPROF_REDACT_ALL, .keep_system_heaps = keep };
        struct hprof_shrink_stats st;
        size_t len;
        uint8_t *out = tl_shrink_file(path, &o, &len, &st);
        ck_assert_int_eq(st.resolved_in_pass_1, 0);
        ck_assert_ptr_nonnull(memmem(out, len, maker, sizeof maker - 1));
        free(out);
    }
    unlink(path);
    free(path);
    tb_free(&d);
}
END_TEST

/* Only the statics that say what the device is keep their Strings:
 * Build.SERIAL (a persistent identifier on old Android) is redacted under
 * --redact, and hollowed like any zygote String when the heap is dropped. */
START_TEST(system_heaps_keep_builds_device_text_but_not_its_serial)
{
    static const char maker[] = "samsung-maker", serial[] = "R58M123456X";
    static const char *const names[] = { "MANUFACTURER", "SERIAL" };
    static const uint64_t values[] = { 0x2000, 0x2100 };
    const uint8_t maker_ref[4] = { 0, 0, 0x10, 0 }, serial_ref[4] = { 0, 0, 0x11, 0 };
    struct tbuf d;
    tb_device_dump(&d, names, values, 2);
    tb_instance(&d, 0x2000, 0x100, maker_ref, 4);
    tb_prim_array(&d, 0x1000, HPROF_TYPE_BYTE, sizeof maker - 1, maker);
    tb_instance(&d, 0x2100, 0x100, serial_ref, 4);
    tb_prim_array(&d, 0x1100, HPROF_TYPE_BYTE, sizeof serial - 1, serial);
    tb_segment_end(&d);
    tb_record(&d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    char *path = tl_temp_file(d.data, d.len, ".hprof");
    for (int keep = 0; keep <= 1; keep++) {
        struct hprof_shrink_options o = { .redact = HPROF_REDACT_ALL, .keep_system_heaps = keep };
        struct hprof_shrink_stats st;
        size_t len;
        uint8_t *out = tl_shrink_file(path, &o, &len, &st);
        ck_assert_ptr_nonnull(memmem(out, len, maker, sizeof maker - 1));
        ck_assert_ptr_null(memmem(out, len, serial, sizeof serial - 1));
        assert_verifies(out, len);
        free(out);
    }
    unlink(path);
    free(path);
    tb_free(&d);
}
END_TEST

/* A zygote object is dropped (or kept as a stand-in) but checked as an app
 * object is: one whose class is not dumped fails the shrink, as it fails
 * hprof-verify, with or without the app object that refers to it.  Before,
 * the stand-in was written naming the missing class. */
START_TEST(system_heaps_refuse_an_object_whose_class_is_not_dumped)
{
    const int referred = _i;
    uint8_t ref[4] = { 0, 0, 0x20, 0 }; /* the app object's field: 0x2000 */
    struct tbuf d;
    tb_init(&d, 4);
    tb_header(&d, "JAVA PROFILE 1.0.3");
    tb_string(&d, 0x10, "Holder");
    tb_load_class(&d, 1, 0x100, 0x10);
    tb_segment_begin(&d, HPROF_TAG_HEAP_DUMP_SEGMENT);
    static const uint8_t holder_fields[] = { HPROF_TYPE_OBJECT };
    tb_class(&d, 0x100, 0, holder_fields, 1);
    tb_u1(&d, HPROF_HEAP_DUMP_INFO);
    tb_u4(&d, HPROF_HEAP_ZYGOTE);
    tb_id(&d, 0x10);
    tb_instance(&d, 0x2000, 0x300, NULL, 0); /* class 0x300: never dumped */
    tb_u1(&d, HPROF_HEAP_DUMP_INFO);
    tb_u4(&d, HPROF_HEAP_APP);
    tb_id(&d, 0x10);
    if (referred)
        tb_instance(&d, 0x2100, 0x100, ref, 4);
    tb_segment_end(&d);
    tb_record(&d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    for (unsigned threads = 1; threads <= 2; threads++) {
        struct hprof_error err = { 0 };
        struct hprof_reader *r = NULL;
        struct hprof_sink *out = hprof_sink_new_memory(&err);
        struct hprof_shrink_options o = { .threads = threads };
        ck_assert_int_eq(hprof_reader_open_memory(&r, d.data, d.len, &err), HPROF_OK);
        ck_assert_int_eq(hprof_shrink(r, out, &o, NULL, &err), HPROF_ERR_FORMAT);
        ck_assert_msg(strstr(err.message, "object 0x2000 has class 0x300 which is not dumped"),
                      "%s", err.message);
        hprof_reader_free(r);
        hprof_sink_free(out);
    }
    tb_free(&d);
}
END_TEST

START_TEST(system_heaps_keep_every_object_when_asked)
{
    struct run x;
    run(&x, 0, HPROF_ARRAYS_EMPTY, 1);
    assert_same_map(&x.in.all_counts, &x.out.all_counts, "instances per class, all heaps");
    ck_assert_uint_eq(x.stats.system_dropped.count + x.stats.system_standins.count, 0);
    ck_assert_uint_eq(x.stats.roots_dropped, 0);
    done(&x);
}
END_TEST

START_TEST(shrink_is_deterministic)
{
    struct hprof_shrink_options o = { .arrays = _i };
    struct hprof_shrink_stats s1, s2;
    uint8_t *a, *b;
    size_t alen, blen;
    a = tl_shrink_file(fixtures[0], &o, &alen, &s1);
    b = tl_shrink_file(fixtures[0], &o, &blen, &s2);
    ck_assert_uint_eq(alen, blen);
    ck_assert_mem_eq(a, b, alen);
    free(a);
    free(b);
}
END_TEST

/* No options are the defaults, in both shrinks; no reader or no sink is a
 * usage error, never a crash. */
START_TEST(shrink_takes_no_options_for_the_defaults_and_refuses_no_sink)
{
    static const struct hprof_shrink_options defaults;
    tl_shrink_fn *const shrinks[] = { hprof_shrink, hprof_shrink_one_pass };
    for (int i = 0; i < 2; i++) {
        size_t want_len, len;
        struct hprof_shrink_stats st;
        uint8_t *want = tl_shrink_file_by(shrinks[i], fixtures[0], &defaults, &want_len, &st, 0);
        uint8_t *got = tl_shrink_file_by(shrinks[i], fixtures[0], NULL, &len, &st, 0);
        ck_assert_uint_eq(len, want_len);
        ck_assert_mem_eq(got, want, len);
        free(want);
        free(got);
        struct hprof_error err = { 0 };
        struct hprof_reader *r;
        int fd;
        ck_assert_int_eq(tl_open_reader(fixtures[0], &fd, &r, &err), HPROF_OK);
        ck_assert_int_eq(shrinks[i](r, NULL, NULL, NULL, &err), HPROF_ERR_USAGE);
        ck_assert_str_eq(err.message, "shrink: no sink");
        tl_close_reader(fd, r);
        struct hprof_sink *sink = hprof_sink_new_null(&err);
        ck_assert_int_eq(shrinks[i](NULL, sink, NULL, NULL, &err), HPROF_ERR_USAGE);
        hprof_sink_free(sink);
    }
    struct hprof_error err = { 0 };
    struct hprof_shrink_push *p;
    ck_assert_int_eq(hprof_shrink_push_new(&p, NULL, NULL, &err), HPROF_ERR_USAGE);
    ck_assert_ptr_null(p);
    ck_assert_ptr_null(hprof_writer_new(NULL, &err));
}
END_TEST

/* PRIMITIVE_ARRAY_NODATA never reaches the output; in zero mode it becomes
 * an array of zeros of its length. */
START_TEST(arrays_never_write_primitive_array_nodata)
{
    char *path = tl_temp_path(".hprof");
    char *tool = tl_tool("hprof-synth");
    ck_assert_int_eq(tl_system("%s --nodata -f %s", tool, path), 0);
    struct hprof_shrink_options o = { .arrays = _i };
    struct hprof_shrink_stats st;
    uint8_t *out;
    size_t len;
    out = tl_shrink_file(path, &o, &len, &st);
    struct facts in, after;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(facts_load(path, &in, &err), HPROF_OK);
    ck_assert_int_eq(facts_load_memory(out, len, &after, &err), HPROF_OK);
    /* the NODATA array is the last id allocated; find it by shape */
    int found = 0;
    for (size_t i = 0; i <= in.arrays.mask; i++) {
        if (in.arrays.values && in.arrays.keys[i] && in.arrays.values[i] == (1000u << 8 | 10)) {
            uint64_t shape;
            found = 1;
            if (_i == HPROF_ARRAYS_REMOVE) {
                ck_assert(!idmap_has(&after.arrays, in.arrays.keys[i]));
            } else {
                ck_assert(idmap_get(&after.arrays, in.arrays.keys[i], &shape));
                ck_assert_uint_eq(shape, _i == HPROF_ARRAYS_ZERO ? (1000u << 8 | 10) : 10);
            }
        }
    }
    ck_assert(found);
    struct hprof_verify_report rep;
    ck_assert_int_eq(tl_verify_memory(out, len, &rep, &err), HPROF_OK);
    ck_assert_uint_eq(rep.primitive_arrays, after.arrays.count);
    ck_assert_uint_eq(in.nodata_arrays, 1);
    ck_assert_uint_eq(after.nodata_arrays, 0);
    facts_free(&in);
    facts_free(&after);
    free(out);
    unlink(path);
    free(path);
    free(tool);
}
END_TEST

/* A NODATA record's count is all there is of it: one of 2^29 + 1 longs
 * is 4 GiB and 8 bytes of zeros, more than a heap segment holds.  Both
 * shrinks refuse it as invalid input, with its offset and kind, before
 * writing any of it (the writer found it first, as a misuse of the API). */
START_TEST(a_nodata_array_too_large_to_zero_is_refused_with_its_offset)
{
    struct tbuf d;
    tb_init(&d, 4);
    tb_header(&d, "JAVA PROFILE 1.0.3");
    tb_segment_begin(&d, HPROF_TAG_HEAP_DUMP_SEGMENT);
    size_t at = d.len;
    tb_u1(&d, HPROF_PRIMITIVE_ARRAY_NODATA);
    tb_id(&d, 0x1000);
    tb_u4(&d, 0);
    tb_u4(&d, (1u << 29) + 1);
    tb_u1(&d, HPROF_TYPE_LONG);
    tb_segment_end(&d);
    tb_record(&d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    char where[64];
    snprintf(where, sizeof where, "offset 0x%zx: PRIMITIVE_ARRAY_NODATA:", at);
    for (int one_pass = 0; one_pass <= 1; one_pass++) {
        struct hprof_error err = { 0 };
        struct hprof_reader *r = NULL;
        struct hprof_sink *out = hprof_sink_new_memory(&err);
        struct hprof_shrink_options o = { .arrays = HPROF_ARRAYS_ZERO };
        ck_assert_int_eq(hprof_reader_open_memory(&r, d.data, d.len, &err), HPROF_OK);
        int rc = one_pass ? hprof_shrink_one_pass(r, out, &o, NULL, &err)
                          : hprof_shrink(r, out, &o, NULL, &err);
        ck_assert_msg(rc == HPROF_ERR_FORMAT, "%d: %s", rc, err.message);
        ck_assert_msg(strstr(err.message, where) != NULL, "%s", err.message);
        size_t written;
        (void)hprof_sink_memory_data(out, &written);
        ck_assert_uint_lt(written, 1u << 20);
        hprof_reader_free(r);
        hprof_sink_free(out);
    }
    tb_free(&d);
}
END_TEST

/* Two different 128-byte blocks with the same MD5 (Wang and Yu, 2004, the
 * collision published with "How to Break MD5"). */
static const char COLLIDING_A[] =
    "d131dd02c5e6eec4693d9a0698aff95c2fcab58712467eab4004583eb8fb7f89"
    "55ad340609f4b30283e488832571415a085125e8f7cdc99fd91dbdf280373c5b"
    "d8823e3156348f5bae6dacd436c919c6dd53e2b487da03fd02396306d248cda0"
    "e99f33420f577ee8ce54b67080a80d1ec69821bcb6a8839396f9652b6ff72a70";
static const char COLLIDING_B[] =
    "d131dd02c5e6eec4693d9a0698aff95c2fcab50712467eab4004583eb8fb7f89"
    "55ad340609f4b30283e4888325f1415a085125e8f7cdc99fd91dbd7280373c5b"
    "d8823e3156348f5bae6dacd436c919c6dd53e23487da03fd02396306d248cda0"
    "e99f33420f577ee8ce54b67080280d1ec69821bcb6a8839396f965ab6ff72a70";

static void unhex(const char *hex, uint8_t *out)
{
    for (size_t i = 0; hex[2 * i]; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
}

/* A dump of one Bitmap per letter of `order`, its 128 pixel bytes
 * COLLIDING_A for 'a' and COLLIDING_B for 'b' (arrays 0x1000, 0x1010, ...),
 * shrunk. */
struct colliding {
    uint8_t a[128], b[128];
    char *path;             /* the input */
    uint8_t *out;
    size_t len;
    struct hprof_shrink_stats st;
};

static void shrink_colliding_bitmaps(const char *order, struct colliding *c)
{
    unhex(COLLIDING_A, c->a);
    unhex(COLLIDING_B, c->b);
    ck_assert(memcmp(c->a, c->b, 128) != 0);
    struct tbuf d;
    begin_bitmap_dump(&d);
    uint8_t ref[4] = { 0, 0, 0x10, 0 };
    for (int i = 0; order[i]; i++) {
        ref[3] = (uint8_t)(0x10 * i);
        tb_prim_array(&d, 0x1000 + 0x10 * (uint64_t)i, HPROF_TYPE_BYTE, 128,
                      order[i] == 'b' ? c->b : c->a);
        tb_instance(&d, 0x2000 + 0x10 * (uint64_t)i, 0x100, ref, 4);
    }
    c->out = end_and_shrink_dump(&d, &c->path, &c->len, &c->st);
    tb_free(&d);
    assert_same_bitmap_pixels(c->path, c->out, c->len);
}

static void colliding_free(struct colliding *c)
{
    free(c->out);
    unlink(c->path);
    free(c->path);
}

/* The id of the primitive array whose contents start at `data`: before
 * them come id, stack serial, count and type (4 + 4 + 4 + 1 bytes). */
static uint32_t array_id_before(const uint8_t *data)
{
    const uint8_t *id = data - 13;
    return (uint32_t)id[0] << 24 | (uint32_t)id[1] << 16 | (uint32_t)id[2] << 8 | id[3];
}

/* Bitmaps a, b, a: only the true copy merges. */
START_TEST(bitmaps_never_merge_buffers_that_only_share_an_md5)
{
    struct colliding c;
    shrink_colliding_bitmaps("aba", &c);
    ck_assert_uint_eq(c.st.bitmap_candidates, 3);
    ck_assert_uint_eq(c.st.bitmap_digested, 3);
    ck_assert_uint_eq(c.st.bitmap_groups, 1);            /* a and its true copy */
    ck_assert_uint_eq(c.st.bitmap_duplicates.count, 1);
    ck_assert_uint_eq(c.st.bitmap_buffers_kept.count, 2); /* a, and b despite its MD5 */
    ck_assert_ptr_nonnull(memmem(c.out, c.len, c.a, 128));
    ck_assert_ptr_nonnull(memmem(c.out, c.len, c.b, 128));
    colliding_free(&c);
}
END_TEST

/* b first: a and its copies all differ from the group's first member, and
 * are then compared with each other.  Of b, a, a, b, a the copies merge
 * into the earliest equal buffer: two into a, one into b. */
START_TEST(bitmaps_merge_copies_that_differ_from_their_groups_first_member)
{
    struct colliding c;
    shrink_colliding_bitmaps("baaba", &c);
    ck_assert_uint_eq(c.st.bitmap_digested, 5);
    ck_assert_uint_eq(c.st.bitmap_groups, 2);
    ck_assert_uint_eq(c.st.bitmap_duplicates.count, 3);
    ck_assert_uint_eq(c.st.bitmap_buffers_kept.count, 2);
    /* each content once, in the first array that held it */
    const uint8_t *end = c.out + c.len;
    const uint8_t *at_a = memmem(c.out, c.len, c.a, 128), *at_b = memmem(c.out, c.len, c.b, 128);
    ck_assert_ptr_nonnull(at_a);
    ck_assert_ptr_nonnull(at_b);
    ck_assert_ptr_null(memmem(at_a + 1, (size_t)(end - at_a - 1), c.a, 128));
    ck_assert_ptr_null(memmem(at_b + 1, (size_t)(end - at_b - 1), c.b, 128));
    ck_assert_uint_eq(array_id_before(at_b), 0x1000);
    ck_assert_uint_eq(array_id_before(at_a), 0x1010);
    colliding_free(&c);
}
END_TEST

/* hprof-info and hprof-bitmaps decide identity as the shrink does: of b,
 * a, a, b, a (two contents that share an MD5), the same groups and copies
 * as the shrink merges, and each bitmap's content is the first with
 * equal bytes, not the first with its MD5. */
START_TEST(info_tells_md5_colliding_buffers_apart_as_the_shrink_does)
{
    struct colliding c;
    shrink_colliding_bitmaps("baaba", &c);
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    struct hprof_info info;
    int fd;
    ck_assert_int_eq(tl_open_reader(c.path, &fd, &r, &err), HPROF_OK);
    ck_assert_msg(hprof_info_analyze(r, &info, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(info.n_bitmaps, 5);
    ck_assert_uint_eq(info.bitmap_groups, c.st.bitmap_groups);
    ck_assert_uint_eq(info.bitmap_duplicates.count, c.st.bitmap_duplicates.count);
    ck_assert_uint_eq(info.bitmap_duplicates.bytes, c.st.bitmap_duplicates.bytes);
    ck_assert_uint_eq(info.bitmap_buffers.count, 5);
    static const size_t same_as[5] = { 0, 1, 1, 0, 1 };
    for (size_t i = 0; i < 5; i++) {
        ck_assert_mem_eq(info.bitmaps[i].md5, info.bitmaps[0].md5, 16);
        ck_assert_uint_eq(info.bitmaps[i].same_as, same_as[i]);
    }
    hprof_info_free(&info);
    tl_close_reader(fd, r);
    colliding_free(&c);
}
END_TEST

/* Pass 1 resolves as it goes (one pass fewer) only while nothing can come
 * too late for a decision it took; otherwise pass 2 runs.  An instance
 * whose class (or a superclass) is dumped later is put aside until pass 1
 * ends, which is not too late.  Either way the String keeps its text and
 * the other array loses its contents. */
enum late { LATE_NOTHING, LATE_STRING_CLASS, LATE_RESOLVABLE_CLASS, LATE_SUPERCLASS,
            LATE_LOAD_CLASS, LATE_FIELD_NAME, LATE_ZYGOTE_OBJECT, EARLY_ZYGOTE_OBJECT, N_LATE };

START_TEST(collect_resolves_in_pass_1_only_when_nothing_comes_too_late)
{
    static const uint8_t string_fields[] = { HPROF_TYPE_OBJECT };
    static const char text[] = "a String text that must survive";
    static const char other[] = "contents that must not survive";
    const int eager_expected = _i != LATE_LOAD_CLASS && _i != LATE_FIELD_NAME &&
                               _i != LATE_ZYGOTE_OBJECT;
    uint8_t ref[4] = { 0, 0, 0x10, 0 }; /* String.value = 0x1000 */
    struct tbuf d;
    tb_init(&d, 4);
    tb_header(&d, "JAVA PROFILE 1.0.3");
    tb_string(&d, 0x10, "java.lang.String");
    if (_i != LATE_FIELD_NAME)
        tb_string(&d, 0x900, "value"); /* tb_class names field i 0x900 + i */
    if (_i != LATE_LOAD_CLASS)
        tb_load_class(&d, 1, 0x100, 0x10);
    tb_segment_begin(&d, HPROF_TAG_HEAP_DUMP_SEGMENT);
    if (_i == EARLY_ZYGOTE_OBJECT) {
        tb_u1(&d, HPROF_HEAP_DUMP_INFO);
        tb_u4(&d, HPROF_HEAP_ZYGOTE);
        tb_id(&d, 0x10);
        tb_prim_array(&d, 0x1020, HPROF_TYPE_INT, 1, "\0\0\0\1");
        tb_u1(&d, HPROF_HEAP_DUMP_INFO);
        tb_u4(&d, HPROF_HEAP_APP);
        tb_id(&d, 0x10);
    }
    if (_i != LATE_STRING_CLASS)
        tb_class(&d, 0x100, 0, string_fields, 1);
    if (_i == LATE_SUPERCLASS)
        tb_instance(&d, 0x2100, 0x300, NULL, 0); /* put aside: no layout yet */
    tb_prim_array(&d, 0x1000, HPROF_TYPE_BYTE, sizeof text - 1, text);
    tb_instance(&d, 0x2000, 0x100, ref, 4);
    tb_prim_array(&d, 0x1010, HPROF_TYPE_BYTE, sizeof other - 1, other);
    if (_i == LATE_STRING_CLASS)
        tb_class(&d, 0x100, 0, string_fields, 1);
    if (_i == LATE_RESOLVABLE_CLASS)
        tb_class(&d, 0x300, 0x100, NULL, 0);
    if (_i == LATE_SUPERCLASS) {
        tb_class(&d, 0x300, 0x310, NULL, 0);
        tb_class(&d, 0x310, 0, NULL, 0);
    }
    if (_i == LATE_ZYGOTE_OBJECT) {
        tb_u1(&d, HPROF_HEAP_DUMP_INFO);
        tb_u4(&d, HPROF_HEAP_ZYGOTE);
        tb_id(&d, 0x10);
        tb_prim_array(&d, 0x1020, HPROF_TYPE_INT, 1, "\0\0\0\1");
    }
    tb_segment_end(&d);
    if (_i == LATE_LOAD_CLASS)
        tb_load_class(&d, 1, 0x100, 0x10);
    if (_i == LATE_FIELD_NAME)
        tb_string(&d, 0x900, "value");
    tb_record(&d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    char *path;
    struct hprof_shrink_stats st;
    size_t len;
    uint8_t *out = shrink_dump(&d, &path, &len, &st);
    ck_assert_int_eq(st.resolved_in_pass_1, eager_expected);
    /* dropped system objects add the pass over their references */
    int graph = _i == LATE_ZYGOTE_OBJECT || _i == EARLY_ZYGOTE_OBJECT;
    ck_assert_int_eq(st.passes, (eager_expected ? 2 : 3) + graph);
    /* each pass named, in the order they ran */
    int k = 0;
    ck_assert_int_eq(st.pass_kinds[k++], HPROF_PASS_COLLECT);
    if (!eager_expected)
        ck_assert_int_eq(st.pass_kinds[k++], HPROF_PASS_RESOLVE);
    if (graph)
        ck_assert_int_eq(st.pass_kinds[k++], HPROF_PASS_GRAPH);
    ck_assert_int_eq(st.pass_kinds[k++], HPROF_PASS_WRITE);
    ck_assert_str_eq(hprof_shrink_pass_name(st.pass_kinds[k - 1]), "write");
    ck_assert_uint_eq(st.string_values_kept.count, 1);
    ck_assert_uint_eq(st.system_dropped.count, _i == LATE_ZYGOTE_OBJECT || _i == EARLY_ZYGOTE_OBJECT);
    ck_assert_ptr_nonnull(memmem(out, len, text, sizeof text - 1));
    ck_assert_ptr_null(memmem(out, len, other, sizeof other - 1));
    assert_verifies(out, len);
    free(out);
    unlink(path);
    free(path);
    tb_free(&d);
}
END_TEST

/* HotSpot and ART write names first (the ART fixture has no zygote or image
 * heap, the Android synth has them before the application's): two passes
 * suffice, the synth's merged bitmap buffers too, since what else names
 * them comes after their Bitmaps; a third reads the references of the
 * system objects the synth drops. */
START_TEST(collect_reads_dumps_twice_when_names_come_first)
{
    if (!tl_fixture_available(_i))
        return;
    struct hprof_shrink_options o = { 0 };
    struct hprof_shrink_stats st;
    size_t len;
    free(tl_shrink_file(fixtures[_i], &o, &len, &st));
    ck_assert_int_eq(st.resolved_in_pass_1, 1);
    ck_assert_int_eq(st.passes, 2 + (st.system_dropped.count + st.system_standins.count > 0));
}
END_TEST

/* Reading through a mapping changes speed, never the output. */
START_TEST(shrink_through_a_mapping_writes_the_same_bytes)
{
    int fixture = _i / N_MODES;
    struct hprof_shrink_options o = { .arrays = _i % N_MODES };
    struct hprof_shrink_stats s1, s2;
    size_t alen, blen;
    if (!available(fixture))
        return;
    uint8_t *a = tl_shrink_file_via(fixtures[fixture], &o, &alen, &s1, 0);
    uint8_t *b = tl_shrink_file_via(fixtures[fixture], &o, &blen, &s2, 1);
    ck_assert_uint_eq(alen, blen);
    ck_assert_mem_eq(a, b, alen);
    free(a);
    free(b);
}
END_TEST

/* Into a file, kept array contents go from the input's file by the kernel
 * (copy_file_range): the bytes must be those written into memory, where
 * nothing is copied so, in every mode that changes contents on their way
 * (--arrays=zero, --redact: a copy of the input's bytes there would leak
 * what was to be hidden), on one thread and on several. */
START_TEST(shrink_into_a_file_writes_the_bytes_it_writes_into_memory)
{
    static const struct hprof_shrink_options modes[] = {
        { .threads = 1 },
        { .threads = 2 },
        { .threads = 1, .arrays = HPROF_ARRAYS_ZERO },
        { .threads = 2, .redact = HPROF_REDACT_ALL },
        { .threads = 1, .redact = HPROF_REDACT_ALL, .keep_duplicates = 1 },
    };
    /* pixels in big arrays: 64 KiB and more, in and out of big segments */
    char *dump = tl_temp_path(".hprof"), *tool = tl_tool("hprof-synth");
    ck_assert_int_eq(tl_system("%s --scale 4 --big-bitmap 6000000 --pixels 12000000 -f %s", tool,
                               dump), 0);
    struct hprof_shrink_stats s1, s2;
    size_t alen, blen;
    uint8_t *a = tl_shrink_file_via(dump, &modes[_i], &alen, &s1, 1);
    uint8_t *b = tl_shrink_file_into_file(dump, &modes[_i], &blen, &s2);
    ck_assert_uint_gt(s1.bitmap_buffers_kept.bytes, 6000000);
    ck_assert_uint_eq(alen, blen);
    ck_assert_mem_eq(a, b, alen);
    unlink(dump);
    free(dump);
    free(tool);
    free(a);
    free(b);
}
END_TEST

/* The first pass's shortcut changes nothing but time.  A LOAD_CLASS repeated
 * after the heap (same class, same name) makes the shrink give up the
 * shortcut and run the separate pass; the record itself passes through, so
 * the output must be the shortcut's output followed by that record. */
START_TEST(collect_resolving_in_pass_1_writes_what_pass_2_writes)
{
    int fixture = _i;
    if (!tl_fixture_available(fixture))
        return;
    char *plain = tl_temp_path(".hprof"), *late = tl_temp_path(".hprof");
    ck_assert_int_eq(tl_system("gzip -dcf %s > %s", fixtures[fixture], plain), 0);
    size_t len;
    uint8_t *data = tl_read_file(plain, &len);
    /* the first LOAD_CLASS record */
    size_t at = strlen((const char *)data) + 1 + 12, rec = 0, rec_len = 0;
    while (at + 9 <= len && rec_len == 0) {
        uint32_t body = (uint32_t)data[at + 5] << 24 | (uint32_t)data[at + 6] << 16 |
                        (uint32_t)data[at + 7] << 8 | data[at + 8];
        if (data[at] == HPROF_TAG_LOAD_CLASS) {
            rec = at;
            rec_len = 9 + (size_t)body;
        }
        at += 9 + (size_t)body;
    }
    ck_assert_uint_gt(rec_len, 0);
    uint8_t *with_late = malloc(len + rec_len);
    memcpy(with_late, data, len);
    memcpy(with_late + len, data + rec, rec_len);
    free(late);
    late = tl_temp_file(with_late, len + rec_len, ".hprof");

    struct hprof_shrink_options o = { 0 };
    struct hprof_shrink_stats fast, slow;
    size_t fast_len, slow_len;
    uint8_t *a = tl_shrink_file(plain, &o, &fast_len, &fast);
    uint8_t *b = tl_shrink_file(late, &o, &slow_len, &slow);
    ck_assert_int_eq(fast.resolved_in_pass_1, 1);
    ck_assert_int_eq(slow.resolved_in_pass_1, 0);
    ck_assert_int_eq(slow.passes, fast.passes + 1);
    ck_assert_uint_eq(slow_len, fast_len + rec_len);
    ck_assert_mem_eq(b, a, fast_len);
    ck_assert_mem_eq(b + fast_len, data + rec, rec_len);
    free(a);
    free(b);
    free(with_late);
    free(data);
    unlink(plain);
    unlink(late);
    free(plain);
    free(late);
}
END_TEST

/* Pass 4 hashes a bitmap buffer only when passes 1-2 could not see where
 * it is, and looks for what else refers to buffers only when two may merge
 * and passes 1-2 cannot rule such a reference out.  Two buffers A and B,
 * A dumped before its Bitmap, B after; then, by case: */
enum digest_case {
    DIFFERENT_BUFFERS,      /* located (A as a recent array), hashed by pread */
    EQUAL_BUFFERS,          /* B merges and goes: nothing else names it */
    A_LONG_BEFORE,          /* 40,000 arrays between A and its Bitmap: pass 4 hashes */
    B_NAMED_AFTER_BITMAP,   /* a later object names B: a pin seen as such, B stays */
    B_NAMED_BEFORE_BITMAP,  /* an earlier object names B: pass 4 must look, B stays */
    B_NAMED_BY_ROOT,        /* so does a root (roots come first) */
    N_DIGEST_CASES
};

START_TEST(bitmaps_run_the_digest_pass_only_when_they_must)
{
    static const uint8_t holder_fields[] = { HPROF_TYPE_OBJECT };
    const uint32_t size = 2048; /* too small for pass 1 to note where every such array is */
    const int equal = _i != DIFFERENT_BUFFERS && _i != A_LONG_BEFORE;
    const int pass_4 = _i == A_LONG_BEFORE || _i == B_NAMED_BEFORE_BITMAP || _i == B_NAMED_BY_ROOT;
    const int b_stays = _i == B_NAMED_AFTER_BITMAP || _i == B_NAMED_BEFORE_BITMAP ||
                        _i == B_NAMED_BY_ROOT;
    uint8_t *a = malloc(size), *b = malloc(size);
    for (uint32_t i = 0; i < size; i++) {
        a[i] = (uint8_t)(i * 7);
        b[i] = equal ? a[i] : (uint8_t)(i * 13 + 1);
    }
    struct tbuf d;
    begin_bitmap_dump(&d);
    tb_class(&d, 0x200, 0, holder_fields, 1);
    uint8_t ref_a[4] = { 0, 0, 0x10, 0x00 }, ref_b[4] = { 0, 0, 0x10, 0x10 };
    if (_i == B_NAMED_BY_ROOT) {
        tb_u1(&d, HPROF_ROOT_JNI_GLOBAL);
        tb_id(&d, 0x1010);
        tb_id(&d, 0);
    }
    if (_i == B_NAMED_BEFORE_BITMAP)
        tb_instance(&d, 0x3000, 0x200, ref_b, 4);
    tb_prim_array(&d, 0x1000, HPROF_TYPE_BYTE, size, a);
    for (uint32_t i = 0; _i == A_LONG_BEFORE && i < 40000; i++)
        tb_prim_array(&d, 0x100000 + 0x10 * (uint64_t)i, HPROF_TYPE_BYTE, 1, "x");
    tb_instance(&d, 0x2000, 0x100, ref_a, 4);
    tb_instance(&d, 0x2010, 0x100, ref_b, 4);
    tb_prim_array(&d, 0x1010, HPROF_TYPE_BYTE, size, b);
    if (_i == B_NAMED_AFTER_BITMAP)
        tb_instance(&d, 0x3000, 0x200, ref_b, 4);
    char *path;
    struct hprof_shrink_stats st;
    size_t len;
    uint8_t *out = end_and_shrink_dump(&d, &path, &len, &st);
    ck_assert_int_eq(st.resolved_in_pass_1, 1);
    ck_assert_int_eq(st.passes, 2 + pass_4);
    ck_assert_uint_eq(st.bitmap_candidates, 2);
    ck_assert_uint_eq(st.bitmap_digested, 2);
    ck_assert_uint_eq(st.bitmap_groups, equal);
    ck_assert_uint_eq(st.bitmap_duplicates.count, equal);
    ck_assert_ptr_nonnull(memmem(out, len, a, size));
    if (!equal)
        ck_assert_ptr_nonnull(memmem(out, len, b, size));
    /* B's own record (PRIMITIVE_ARRAY_DUMP, id 0x1010) stays only when named */
    int b_record = memmem(out, len, "\x23\0\0\x10\x10", 5) != NULL;
    ck_assert_int_eq(b_record, !equal || b_stays);
    assert_bitmaps_shrunk_then_free(path, out, len, &d);
    free(a);
    free(b);
}
END_TEST

/* Whether anything but its Bitmap names a copy is known exactly for ids
 * that are heap addresses (8-byte aligned), however many references the
 * dump holds: eight pairs of equal buffers behind 1.5 million references
 * to other objects, which a filter of bits alone answers "maybe" for, and
 * the copies merge without a digest pass to look for their referrers. */
START_TEST(bitmaps_rule_out_referrers_of_heap_addresses_exactly)
{
    enum { PAIRS = 8, SIZE = 2048 };
    const uint32_t others = 1500000;
    struct tbuf d;
    begin_bitmap_dump(&d);
    tb_class(&d, 0x300, 0, NULL, 0);
    for (uint32_t pair = 0; pair < PAIRS; pair++) {
        uint8_t pixels[SIZE];
        for (uint32_t i = 0; i < SIZE; i++)
            pixels[i] = (uint8_t)(i * 7 + pair);
        for (uint32_t copy = 0; copy < 2; copy++) {
            uint32_t buffer = 0x1000 + 0x20 * pair + 0x10 * copy;
            uint8_t ref[4] = { 0, 0, (uint8_t)(buffer >> 8), (uint8_t)buffer };
            tb_prim_array(&d, buffer, HPROF_TYPE_BYTE, SIZE, pixels);
            tb_instance(&d, 0x2000 + 0x20 * pair + 0x10 * copy, 0x100, ref, 4);
        }
    }
    tb_u1(&d, HPROF_OBJECT_ARRAY_DUMP);
    tb_id(&d, 0x4000);
    tb_u4(&d, 0);
    tb_u4(&d, others);
    tb_id(&d, 0x300);
    for (uint32_t i = 0; i < others; i++)
        tb_id(&d, 0x1000000 + 8 * (uint64_t)i);
    char *path;
    struct hprof_shrink_stats st;
    size_t len;
    uint8_t *out = end_and_shrink_dump(&d, &path, &len, &st);
    ck_assert_uint_eq(st.bitmap_duplicates.count, PAIRS);
    ck_assert_int_eq(st.passes, 2);
    for (uint32_t pair = 0; pair < PAIRS; pair++) {
        uint32_t copy = 0x1010 + 0x20 * pair;
        const uint8_t record[5] = { HPROF_PRIMITIVE_ARRAY_DUMP, 0, 0, (uint8_t)(copy >> 8),
                                    (uint8_t)copy };
        ck_assert_ptr_null(memmem(out, len, record, sizeof record));
    }
    assert_bitmaps_shrunk_then_free(path, out, len, &d);
}
END_TEST

/* Same-length buffers are told apart by a fingerprint (the first, middle
 * and last 4 KiB) before any MD5: of four 64 KiB buffers A, A2 (a copy of
 * A), N (A but for one byte outside those blocks) and U (another first
 * block), only A, A2 and N may be twins.  A is hashed, A2 and N compared
 * with it as it is read: A2 equal (A's MD5, merged without reading it
 * again), N not (hashed itself).  A 48 KiB buffer no other shares the
 * size of is neither fingerprinted nor hashed. */
START_TEST(bitmaps_hash_only_buffers_whose_fingerprint_has_a_twin)
{
    const uint32_t size = 64u << 10, other = 48u << 10;
    uint8_t *a = malloc(size), *n = malloc(size), *u = malloc(size), *x = malloc(other);
    for (uint32_t i = 0; i < size; i++)
        a[i] = n[i] = u[i] = (uint8_t)(i * 7 + i / 251);
    n[20000] ^= 1;
    u[100] ^= 1;
    memset(x, 0x5a, other);
    struct tbuf d;
    begin_bitmap_dump(&d);
    const uint8_t *pixels[5] = { a, a, n, u, x };
    for (int i = 0; i < 5; i++) {
        uint8_t ref[4] = { 0, 0, 0x10, (uint8_t)(0x10 * i) };
        tb_prim_array(&d, 0x1000 + 0x10 * (uint64_t)i, HPROF_TYPE_BYTE, i == 4 ? other : size,
                      pixels[i]);
        tb_instance(&d, 0x2000 + 0x10 * (uint64_t)i, 0x100, ref, 4);
    }
    char *path;
    struct hprof_shrink_stats st;
    size_t len;
    uint8_t *out = end_and_shrink_dump(&d, &path, &len, &st);
    ck_assert_int_eq(st.passes, 2);
    ck_assert_uint_eq(st.bitmap_candidates, 5);
    ck_assert_uint_eq(st.bitmap_fingerprinted, 4);
    ck_assert_uint_eq(st.bitmap_bytes_fingerprinted, 4 * 3 * 4096);
    ck_assert_uint_eq(st.bitmap_digested, 3);
    ck_assert_uint_eq(st.bitmap_bytes_hashed, 2 * (uint64_t)size);
    ck_assert_uint_eq(st.bitmap_bytes_compared, 2 * (uint64_t)size);
    ck_assert_uint_eq(st.bitmap_groups, 1);
    ck_assert_uint_eq(st.bitmap_duplicates.count, 1);
    ck_assert_uint_eq(st.bitmap_duplicates.bytes, size);
    ck_assert_uint_eq(st.bitmap_buffers_kept.count + st.bitmap_duplicates.count,
                      st.bitmap_candidates);
    ck_assert_uint_eq(st.bitmap_buffers_kept.bytes, 3 * (uint64_t)size + other);
    /* N and U share A's fingerprint or MD5 group no more than their bytes */
    ck_assert_ptr_nonnull(memmem(out, len, a, size));
    ck_assert_ptr_nonnull(memmem(out, len, n, size));
    ck_assert_ptr_nonnull(memmem(out, len, u, size));
    ck_assert_ptr_null(memmem(out, len, "\x23\0\0\x10\x10", 5)); /* A2's record went */
    assert_bitmaps_shrunk_then_free(path, out, len, &d);
    free(a);
    free(n);
    free(u);
    free(x);
}
END_TEST

/* A buffer passes 1-2 cannot locate (here A, dumped before the names that
 * say which class is a Bitmap) is hashed by the digest pass, and only it:
 * the located ones are fingerprinted first as ever.  B and C share A's
 * length but not each other's fingerprint, so only A's hash says they may
 * be its twins: they are hashed after the pass, and B, a copy of A,
 * merges.  E and F, another length, are never hashed.  Over 1 MiB, the
 * pass's key (streamed) meets the lanes' (pieces). */
START_TEST(bitmaps_hash_in_the_digest_pass_only_what_could_not_be_located)
{
    const uint32_t size = _i ? (2u << 20) + 1 : 16u << 10, other = size + 8192;
    uint8_t *a = malloc(size), *c = malloc(size), *e = malloc(other), *f = malloc(other);
    for (uint32_t i = 0; i < size; i++)
        a[i] = c[i] = (uint8_t)(i * 7 + i / 251);
    c[0] ^= 1;
    memset(e, 0x5a, other);
    memset(f, 0xa5, other);
    struct tbuf d;
    begin_dump_with_an_unlocated_buffer(&d, a, size);
    const uint8_t *pixels[5] = { a, a, c, e, f };
    for (int i = 0; i < 5; i++) {
        uint8_t ref[4] = { 0, 0, 0x10, (uint8_t)(0x10 * i) };
        tb_instance(&d, 0x2000 + 0x10 * (uint64_t)i, 0x100, ref, 4);
        if (i > 0) /* after its Bitmap: located */
            tb_prim_array(&d, 0x1000 + 0x10 * (uint64_t)i, HPROF_TYPE_BYTE,
                          i < 3 ? size : other, pixels[i]);
    }
    char *path;
    struct hprof_shrink_stats st;
    size_t len;
    uint8_t *out = end_and_shrink_dump(&d, &path, &len, &st);
    ck_assert_int_eq(st.passes, st.resolved_in_pass_1 ? 3 : 4); /* with the digest pass */
    ck_assert_uint_eq(st.bitmap_candidates, 5);
    ck_assert_uint_eq(st.bitmap_fingerprinted, 4);
    ck_assert_uint_eq(st.bitmap_digested, 3);
    ck_assert_uint_eq(st.bitmap_bytes_hashed, 3 * (uint64_t)size);
    ck_assert_uint_eq(st.bitmap_bytes_compared, 2 * (uint64_t)size); /* A and B by the merge */
    ck_assert_uint_eq(st.bitmap_groups, 1);
    ck_assert_uint_eq(st.bitmap_duplicates.count, 1);
    ck_assert_uint_eq(st.bitmap_duplicates.bytes, size);
    ck_assert_ptr_null(memmem(out, len, "\x23\0\0\x10\x10", 5)); /* B's record went */
    ck_assert_ptr_nonnull(memmem(out, len, c, size));
    assert_bitmaps_shrunk_then_free(path, out, len, &d);
    free(a);
    free(c);
    free(e);
    free(f);
}
END_TEST

/* A dump that needs every pass but the restore: an unlocated Bitmap buffer
 * with a twin (digest), a subclass dumped before its superclass (resolve),
 * a zygote object dropped (graph), a DumpData whose byte[][] holds more
 * elements than are remembered (expand), and a String a keep rule names
 * (exempt).  Every pass reports its kind and its time, in order. */
START_TEST(shrink_reports_every_pass_of_seven_in_order)
{
    enum { N_BITMAP = 0x10, N_MBUFFER = 0x900, N_STRING = 0x20, N_VALUE, N_KEEP, N_KEY,
           N_DUMP_DATA, N_BUFFERS, N_NATIVES, N_BYTE_ARRAYS, N_SUB, N_SUPER };
    static const char *const names[] = { "java.lang.String", "value", "Keep", "key",
                                         "android.graphics.Bitmap$DumpData", "buffers",
                                         "natives", "byte[][]", "Sub", "Super" };
    static const uint8_t one_object[] = { HPROF_TYPE_OBJECT };
    static const uint8_t two_objects[] = { HPROF_TYPE_OBJECT, HPROF_TYPE_OBJECT };
    static const uint64_t value_name[] = { N_VALUE }, key_name[] = { N_KEY };
    static const uint64_t dump_data_names[] = { N_BUFFERS, N_NATIVES };
    const uint32_t size = 16u << 10, elements = (1u << 20) + 1;
    uint8_t *a = malloc(size);
    for (uint32_t i = 0; i < size; i++)
        a[i] = (uint8_t)(i * 7 + i / 251);
    struct tbuf d;
    begin_dump_with_an_unlocated_buffer(&d, a, size);
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
        tb_segment_end(&d);
        tb_string(&d, N_STRING + i, names[i]);
        tb_load_class(&d, 10 + i, 0x200 + 0x10 * (uint64_t)i, N_STRING + i);
        tb_segment_begin(&d, HPROF_TAG_HEAP_DUMP_SEGMENT);
    }
    /* the Bitmaps of A and of B, its copy located after its Bitmap */
    for (int i = 0; i < 2; i++) {
        uint8_t ref[4] = { 0, 0, 0x10, (uint8_t)(0x10 * i) };
        tb_instance(&d, 0x2000 + 0x10 * (uint64_t)i, 0x100, ref, 4);
    }
    tb_prim_array(&d, 0x1010, HPROF_TYPE_BYTE, size, a);
    /* a String, and Keep.key naming it */
    const uint64_t string_class = 0x200, keep_class = 0x220, dump_data_class = 0x240,
                   byte_arrays_class = 0x270, sub_class = 0x280, super_class = 0x290;
    tb_class_named(&d, string_class, 0, value_name, one_object, 1);
    tb_class_named(&d, keep_class, 0, key_name, one_object, 1);
    tb_prim_array(&d, 0x3000, HPROF_TYPE_CHAR, 2, "\0o\0k");
    tb_instance(&d, 0x3010, string_class, "\0\0\x30\x00", 4);
    tb_instance(&d, 0x3020, keep_class, "\0\0\x30\x10", 4);
    /* an instance of Sub before Super */
    tb_class(&d, sub_class, super_class, NULL, 0);
    tb_instance(&d, 0x3030, sub_class, NULL, 0);
    tb_class(&d, super_class, 0, NULL, 0);
    /* byte[][] of more elements than are remembered, and its DumpData */
    tb_class(&d, byte_arrays_class, 0, NULL, 0);
    tb_class_named(&d, dump_data_class, 0, dump_data_names, two_objects, 2);
    tb_segment_end(&d);
    tb_segment_begin(&d, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_u1(&d, HPROF_OBJECT_ARRAY_DUMP);
    tb_id(&d, 0x4000);
    tb_u4(&d, 0);
    tb_u4(&d, elements);
    tb_id(&d, byte_arrays_class);
    for (uint32_t i = 0; i < elements; i++)
        tb_id(&d, i == 0 ? 0x1010 : 0);
    tb_instance(&d, 0x4010, dump_data_class, "\0\0\x40\x00\0\0\0\0", 8);
    /* a zygote object */
    tb_u1(&d, HPROF_HEAP_DUMP_INFO);
    tb_u4(&d, HPROF_HEAP_ZYGOTE);
    tb_id(&d, 0x10);
    tb_prim_array(&d, 0x5000, HPROF_TYPE_INT, 1, "\0\0\0\1");
    static const char *const keep_key[] = { "Keep.key" };
    struct hprof_shrink_options o = { .redact = HPROF_REDACT_ALL, .redact_keep = keep_key,
                                      .n_redact_keep = 1 };
    tb_segment_end(&d);
    tb_record(&d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    char *path = tl_temp_file(d.data, d.len, ".hprof");
    struct hprof_shrink_stats st;
    size_t len;
    uint8_t *out = tl_shrink_file(path, &o, &len, &st);
    static const enum hprof_shrink_pass order[] = {
        HPROF_PASS_COLLECT, HPROF_PASS_RESOLVE, HPROF_PASS_GRAPH, HPROF_PASS_EXPAND,
        HPROF_PASS_EXEMPT,  HPROF_PASS_DIGEST,  HPROF_PASS_WRITE,
    };
    ck_assert_int_eq(st.passes, 7);
    for (int i = 0; i < 7; i++) {
        ck_assert_msg(st.pass_kinds[i] == order[i], "pass %d is %s, not %s", i + 1,
                      hprof_shrink_pass_name(st.pass_kinds[i]), hprof_shrink_pass_name(order[i]));
        ck_assert(st.pass_seconds[i] > 0);
    }
    ck_assert_uint_eq(st.bitmap_duplicates.count, 1);
    assert_verifies(out, len);
    unlink(path);
    free(path);
    free(out);
    free(a);
    tb_free(&d);
}
END_TEST

/* A copy confirmed equal to its bunch's first while hashing merges into
 * it without being read again, but only into it: here B (unlocated, so
 * hashed by the digest pass) comes first in the file and has the MD5 of
 * A and of A's copy (a published collision), so it heads their MD5 group.
 * The copy, confirmed against A, must still be compared with B, and
 * merges into A. */
START_TEST(bitmaps_merge_a_confirmed_copy_only_into_the_buffer_it_matched)
{
    uint8_t a[128], b[128];
    unhex(COLLIDING_A, a);
    unhex(COLLIDING_B, b);
    struct tbuf d;
    begin_dump_with_an_unlocated_buffer(&d, b, 128);
    for (int i = 0; i < 3; i++) {
        uint8_t ref[4] = { 0, 0, 0x10, (uint8_t)(0x10 * i) };
        tb_instance(&d, 0x2000 + 0x10 * (uint64_t)i, 0x100, ref, 4);
        if (i > 0) /* after its Bitmap: located */
            tb_prim_array(&d, 0x1000 + 0x10 * (uint64_t)i, HPROF_TYPE_BYTE, 128, a);
    }
    char *path;
    struct hprof_shrink_stats st;
    size_t len;
    uint8_t *out = end_and_shrink_dump(&d, &path, &len, &st);
    ck_assert_uint_eq(st.bitmap_digested, 3);
    ck_assert_uint_eq(st.bitmap_bytes_hashed, 2 * 128); /* B by the pass, A by the lanes */
    ck_assert_uint_eq(st.bitmap_groups, 1);
    ck_assert_uint_eq(st.bitmap_duplicates.count, 1);
    ck_assert_ptr_nonnull(memmem(out, len, a, 128));
    ck_assert_ptr_nonnull(memmem(out, len, b, 128));
    ck_assert_ptr_null(memmem(out, len, "\x23\0\0\x10\x20", 5)); /* the copy's record went */
    assert_bitmaps_shrunk_then_free(path, out, len, &d);
}
END_TEST

/* Over 1 MiB a bunch's first is hashed in 1 MiB pieces, and each piece
 * compared with the same piece of the others as it is viewed: of A, A2
 * (a copy) and Z (A but for a byte in the middle of the second piece,
 * outside the fingerprint's blocks), A2 merges, read once and never
 * hashed; Z is read up to the view that holds its difference in that
 * piece (all of the other three, which are equal), then hashed.  What is
 * read and counted is the same on one thread as on two (the comparisons
 * make it worth two here). */
START_TEST(bitmaps_compare_a_bunch_piece_by_piece_up_to_a_difference)
{
    const uint32_t size = (3u << 20) + 1, differs_at = (3u << 20) / 2 + (256u << 10);
    const uint32_t in_piece = differs_at - (1u << 20); /* the second piece's */
    const uint64_t z_read = size - (1u << 20) + (in_piece / MD5_VIEW_MAX + 1) * MD5_VIEW_MAX;
    uint8_t *a = malloc(size), *z = malloc(size);
    for (uint32_t i = 0; i < size; i++)
        a[i] = z[i] = (uint8_t)(i * 7 + i / 251);
    z[differs_at] ^= 1;
    struct tbuf d;
    begin_bitmap_dump(&d);
    const uint8_t *pixels[3] = { a, a, z };
    for (int i = 0; i < 3; i++) {
        uint8_t ref[4] = { 0, 0, 0x10, (uint8_t)(0x10 * i) };
        tb_prim_array(&d, 0x1000 + 0x10 * (uint64_t)i, HPROF_TYPE_BYTE, size, pixels[i]);
        tb_instance(&d, 0x2000 + 0x10 * (uint64_t)i, 0x100, ref, 4);
    }
    tb_segment_end(&d);
    tb_record(&d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    char *path = tl_temp_file(d.data, d.len, ".hprof");
    struct hprof_shrink_stats st[2];
    size_t len[2];
    uint8_t *out[2];
    for (int t = 0; t < 2; t++) {
        struct hprof_shrink_options o = { .threads = (unsigned)t + 1 };
        out[t] = tl_shrink_file(path, &o, &len[t], &st[t]);
        ck_assert_uint_eq(st[t].bitmap_fingerprinted, 3);
        ck_assert_uint_eq(st[t].bitmap_digested, 3);
        ck_assert_uint_eq(st[t].bitmap_bytes_hashed, 2 * (uint64_t)size); /* A and Z */
        /* A2 whole; Z's first, third and fourth pieces whole, its second in part */
        ck_assert_uint_eq(st[t].bitmap_bytes_compared, size + z_read);
        ck_assert_uint_eq(st[t].bitmap_duplicates.count, 1);
        ck_assert_ptr_nonnull(memmem(out[t], len[t], z, size));
        ck_assert_ptr_null(memmem(out[t], len[t], "\x23\0\0\x10\x10", 5)); /* A2's record went */
    }
    ck_assert_uint_eq(st[0].bitmap_bytes_compared, st[1].bitmap_bytes_compared);
    ck_assert_uint_eq(len[0], len[1]);
    ck_assert_mem_eq(out[0], out[1], len[0]);
    free(out[1]);
    assert_bitmaps_shrunk_then_free(path, out[0], len[0], &d);
    free(a);
    free(z);
}
END_TEST

/* The lanes take pieces costliest first, not in the candidates' order: a
 * small bunch (S and its copy) before a large one (A, and Z, which
 * differs from A in its first piece only) in the file still merges just
 * the true copy, and Z keeps its bytes. */
START_TEST(bitmaps_keep_each_pieces_comparison_with_its_own_bunch)
{
    const uint32_t small = 64u << 10, size = (3u << 20) + 1;
    uint8_t *s = malloc(small), *a = malloc(size), *z = malloc(size);
    for (uint32_t i = 0; i < small; i++)
        s[i] = (uint8_t)(i * 13 + i / 509);
    for (uint32_t i = 0; i < size; i++)
        a[i] = z[i] = (uint8_t)(i * 7 + i / 251);
    z[3u << 18] ^= 1; /* in its first piece, outside the fingerprint's blocks */
    struct tbuf d;
    begin_bitmap_dump(&d);
    const uint8_t *pixels[4] = { s, s, a, z };
    for (int i = 0; i < 4; i++) {
        uint8_t ref[4] = { 0, 0, 0x10, (uint8_t)(0x10 * i) };
        tb_prim_array(&d, 0x1000 + 0x10 * (uint64_t)i, HPROF_TYPE_BYTE, i < 2 ? small : size,
                      pixels[i]);
        tb_instance(&d, 0x2000 + 0x10 * (uint64_t)i, 0x100, ref, 4);
    }
    char *path;
    struct hprof_shrink_stats st;
    size_t len;
    uint8_t *out = end_and_shrink_dump(&d, &path, &len, &st);
    ck_assert_uint_eq(st.bitmap_duplicates.count, 1);
    ck_assert_uint_eq(st.bitmap_duplicates.bytes, small);
    ck_assert_ptr_nonnull(memmem(out, len, z, size));
    ck_assert_ptr_nonnull(memmem(out, len, a, size));
    assert_bitmaps_shrunk_then_free(path, out, len, &d);
    free(s);
    free(a);
    free(z);
}
END_TEST

struct rss_sampler {
    pthread_t thread;
    atomic_int stop;
    long most;                  /* KiB */
};

static void *sample_rss_file(void *arg)
{
    struct rss_sampler *s = arg;
    while (!atomic_load(&s->stop)) {
        long kib = tl_rss_file_kib();
        if (kib > s->most)
            s->most = kib;
        usleep(500);
    }
    return NULL;
}

/* A mapped 256 MiB dump of 32 buffers of 8 MiB in 16 identical pairs: each
 * pair's first is hashed and the other compared with it as it is read,
 * and the file's resident pages stay under
 * 48 MiB throughout (the readers' 8 MiB steps, read-ahead, slack); hashing
 * through the mapping kept every page it read, 256 MiB and more. */
START_TEST(bitmaps_hash_a_mapped_dump_with_bounded_resident_pages)
{
    const uint32_t size = 8u << 20;
    const int n = 32;
    uint8_t *px = malloc(size);
    struct tbuf d;
    begin_bitmap_dump(&d);
    for (int i = 0; i < n; i++) {
        for (uint32_t k = 0; k < size; k += 4096)
            memset(px + k, (i / 2 * 31 + (int)(k >> 12)) & 0xff, 4096);
        uint8_t ref[4] = { 0, 0x10, (uint8_t)(i >> 8), (uint8_t)i };
        tb_prim_array(&d, 0x100000 + (uint64_t)i, HPROF_TYPE_BYTE, size, px);
        tb_instance(&d, 0x200000 + 0x10 * (uint64_t)i, 0x100, ref, 4);
    }
    tb_segment_end(&d);
    tb_record(&d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    free(px);
    char *path = tl_temp_file(d.data, d.len, ".hprof");
    tb_free(&d);

    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    int fd;
    ck_assert_int_eq(tl_open_reader(path, &fd, &r, &err), HPROF_OK);
    ck_assert_int_eq(hprof_reader_map(r), HPROF_OK);
    struct hprof_sink *sink = hprof_sink_new_null(&err);
    struct hprof_shrink_options o = { .threads = 2 };
    struct hprof_shrink_stats st;
    struct rss_sampler s = { .most = tl_rss_file_kib() };
    long first = s.most;
    ck_assert_int_ge(first, 0);
    atomic_init(&s.stop, 0);
    ck_assert_int_eq(pthread_create(&s.thread, NULL, sample_rss_file, &s), 0);
    ck_assert_msg(hprof_shrink(r, sink, &o, &st, &err) == HPROF_OK, "%s", err.message);
    atomic_store(&s.stop, 1);
    pthread_join(s.thread, NULL);
    ck_assert_uint_eq(st.bitmap_candidates, (uint64_t)n);
    ck_assert_uint_eq(st.bitmap_bytes_hashed, (uint64_t)n / 2 * size);
    ck_assert_uint_eq(st.bitmap_bytes_compared, (uint64_t)n / 2 * size);
    ck_assert_uint_eq(st.bitmap_groups, (uint64_t)n / 2);
    ck_assert_uint_eq(st.bitmap_duplicates.count, (uint64_t)n / 2);
    ck_assert_msg(s.most - first < 48 << 10, "RssFile grew by %ld KiB", s.most - first);
    hprof_sink_free(sink);
    tl_close_reader(fd, r);
    unlink(path);
    free(path);
}
END_TEST

/* ---- The write pass on several threads -------------------------------------- */

/* The write pass's limits of the shrinks below. */
static struct write_pass_limits limits_of_test = WRITE_PASS_LIMITS_DEFAULT;

static int shrink_within_limits_of_test(struct hprof_reader *r, struct hprof_sink *sink,
                                        const struct hprof_shrink_options *o,
                                        struct hprof_shrink_stats *stats, struct hprof_error *err)
{
    return shrink_with_limits(r, sink, o, limits_of_test, stats, err);
}

static uint8_t *shrink_with_threads(int fixture, int mode, unsigned threads, size_t *len,
                                    struct hprof_shrink_stats *st)
{
    struct hprof_shrink_options o = { .arrays = mode, .threads = threads,
                                      .redact = mode == HPROF_ARRAYS_ZERO ? HPROF_REDACT_ALL : 0 };
    uint8_t *out = tl_shrink_file_by(shrink_within_limits_of_test, fixtures[fixture], &o, len, st, 0);
    memset(st->pass_seconds, 0, sizeof st->pass_seconds);
    return out;
}

static void assert_same_as_one_thread(int fixture, int mode, unsigned threads)
{
    struct hprof_shrink_stats one, many;
    size_t one_len, many_len;
    uint8_t *a = shrink_with_threads(fixture, mode, 1, &one_len, &one);
    uint8_t *b = shrink_with_threads(fixture, mode, threads, &many_len, &many);
    ck_assert_msg(one_len == many_len && memcmp(a, b, one_len) == 0,
                  "%s, mode %d: %u threads write other bytes", fixtures[fixture], mode, threads);
    ck_assert_msg(memcmp(&one, &many, sizeof one) == 0, "%s, mode %d: %u threads count otherwise",
                  fixtures[fixture], mode, threads);
    free(a);
    free(b);
}

START_TEST(write_pass_writes_and_counts_the_same_for_every_thread_count)
{
    int fixture = _i / N_MODES, mode = _i % N_MODES;
    if (!available(fixture))
        return;
    assert_same_as_one_thread(fixture, mode, 2);
    assert_same_as_one_thread(fixture, mode, 5);
}
END_TEST

/* Every counter of the stats' table (HPROF_SHRINK_COUNTERS) is added up,
 * the write pass's workers' and the heap dumps' alike, each once: a counter
 * added to the table needs no sum of its own. */
START_TEST(stats_add_up_every_counter_of_the_table)
{
    struct hprof_shrink_stats from, to;
    memset(&from, 0, sizeof from);
    memset(&to, 0, sizeof to);
    uint64_t n = 1;
#define SET_COUNT(f) from.f.count = n++; from.f.bytes = n++;
#define SET_U64(f) from.f = n++;
#define SET(kind, field, ...) SET_##kind(field)
    HPROF_SHRINK_COUNTERS(SET)
    shrink_stats_add_counters(&to, &from);
    shrink_stats_add_dump(&to, &from);
    n = 1;
#define TWICE_COUNT(f) ck_assert_uint_eq(to.f.count, 2 * n++); ck_assert_uint_eq(to.f.bytes, 2 * n++);
#define TWICE_U64(f) ck_assert_uint_eq(to.f, 2 * n++);
#define TWICE(kind, field, ...) TWICE_##kind(field)
    HPROF_SHRINK_COUNTERS(TWICE)
    ck_assert_uint_gt(n, 40);
}
END_TEST

/* A file of several heap dumps counts each dump once: what the collect
 * passes count (Bitmaps found, Strings a keep rule names) is the sum of
 * the dumps' counts, as in the one-pass shrink, though the first run over
 * the file stops at the second dump and its counts are not written. */
START_TEST(stats_of_several_heap_dumps_count_each_dump_once)
{
    char *path = tl_temp_path(".hprof");
    char *tool = tl_tool("hprof-synth");
    ck_assert_int_eq(tl_system("%s --dumps 3 -f %s", tool, path), 0);
    struct hprof_shrink_options o = { .redact = HPROF_REDACT_ALL };
    struct hprof_shrink_stats whole, one_pass, dump;
    uint64_t candidates = 0, kept_by_rule = 0, digested = 0;
    size_t len;
    free(tl_shrink_file(path, &o, &len, &whole));
    ck_assert_uint_eq(whole.dumps, 3);
    for (unsigned n = 1; n <= 3; n++) {
        o.dump = n;
        free(tl_shrink_file(path, &o, &len, &dump));
        candidates += dump.bitmap_candidates;
        kept_by_rule += dump.strings_kept_by_rule;
        digested += dump.bitmap_digested;
    }
    o.dump = 0;
    free(tl_shrink_file_by(hprof_shrink_one_pass, path, &o, &len, &one_pass, 0));
    ck_assert_uint_gt(candidates, 0);
    ck_assert_uint_gt(kept_by_rule, 0);
    ck_assert_uint_eq(whole.bitmap_candidates, candidates);
    ck_assert_uint_eq(whole.strings_kept_by_rule, kept_by_rule);
    ck_assert_uint_eq(whole.bitmap_digested, digested);
    ck_assert_uint_eq(one_pass.bitmap_candidates, candidates);
    ck_assert_uint_eq(one_pass.strings_kept_by_rule, kept_by_rule);
    unlink(path);
    free(path);
    free(tool);
}
END_TEST

/* A dump of about 13 MB makes a dozen jobs of about 1 MiB: with two workers
 * (four slots) the ring of jobs wraps three times, so every slot, its
 * offsets and its output buffer are used again (the fixtures make fewer
 * jobs than slots). */
START_TEST(write_pass_reuses_its_job_slots_and_writes_the_same)
{
    char *path = tl_temp_path(".hprof");
    char *tool = tl_tool("hprof-synth");
    ck_assert_int_eq(tl_system("%s --scale 120 -f %s", tool, path), 0);
    struct hprof_shrink_options one = { .threads = 1 }, two = { .threads = 2 };
    struct hprof_shrink_stats s1, s2;
    size_t len1, len2;
    uint8_t *a = tl_shrink_file(path, &one, &len1, &s1);
    uint8_t *b = tl_shrink_file_via(path, &two, &len2, &s2, 1);
    ck_assert_uint_gt(s1.bytes_in, 10u << 20);
    ck_assert_uint_eq(len1, len2);
    ck_assert_mem_eq(a, b, len1);
    free(a);
    free(b);
    unlink(path);
    free(path);
    free(tool);
}
END_TEST

static unsigned threads_now(void)
{
    unsigned n = 0;
    DIR *tasks = opendir("/proc/self/task");
    ck_assert_ptr_nonnull(tasks);
    for (struct dirent *e; (e = readdir(tasks)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(tasks);
    return n;
}

static void count_threads(void *ctx, int pass, int passes, uint64_t done, uint64_t total)
{
    unsigned *most = ctx, n = threads_now();
    (void)pass, (void)passes, (void)done, (void)total;
    if (n > *most)
        *most = n;
}

/* How many more threads than before the progress callback saw while a
 * mapped dump of about 3 MB was shrunk with `threads` (a sanitizer's own
 * thread is there before and after). */
static unsigned helpers_seen_shrinking_a_small_dump(unsigned threads)
{
    char *path = tl_temp_path(".hprof");
    char *tool = tl_tool("hprof-synth");
    ck_assert_int_eq(tl_system("%s --scale 30 -f %s", tool, path), 0);
    unsigned before = threads_now(), most = 0;
    struct hprof_shrink_options o = { .threads = threads, .progress = count_threads,
                                      .progress_ctx = &most };
    size_t len;
    free(tl_shrink_file_via(path, &o, &len, NULL, 1));
    unlink(path);
    free(path);
    free(tool);
    ck_assert_uint_ge(most, before);
    return most - before;
}

/* With the default of one thread per core, a small input gets no helper
 * thread: starting one costs more than it saves there. */
START_TEST(default_threads_start_no_helper_for_a_small_input)
{
    ck_assert_uint_eq(helpers_seen_shrinking_a_small_dump(0), 0);
    if (sysconf(_SC_NPROCESSORS_ONLN) > 1) /* and the count does see helpers */
        ck_assert_uint_gt(helpers_seen_shrinking_a_small_dump(2), 0);
}
END_TEST

/* Segments too big for a worker, and jobs whose output grows too big, are
 * written by the calling thread between the workers' jobs. */
START_TEST(write_pass_writes_big_segments_itself_in_their_place)
{
    int fixture = _i / N_MODES, mode = _i % N_MODES;
    if (!available(fixture))
        return;
    limits_of_test = (struct write_pass_limits){ .segment_max = 3000, .output_max = 6000 };
    assert_same_as_one_thread(fixture, mode, 3);
    limits_of_test = (struct write_pass_limits)WRITE_PASS_LIMITS_DEFAULT;
}
END_TEST

/* Pass 1 as segment_runs sees it: segment records of `lengths` bytes of
 * body, one after the other from offset 100 (0: a STRING of 20 bytes
 * there instead, not a segment; a negative length: a HEAP_DUMP of that
 * many bytes), through the visitor and into the runs. */
static void note_segments(struct segment_runs *sr, const long *lengths, size_t n)
{
    struct hprof_visitor *v = segment_runs_visitor(sr, NULL);
    uint64_t at = 100;
    for (size_t i = 0; i < n; i++) {
        if (lengths[i] == 0) {
            at += 9 + 20;
            continue;
        }
        struct hprof_segment seg = { .offset = at, .tag = HPROF_TAG_HEAP_DUMP_SEGMENT,
                                     .length = (uint32_t)labs(lengths[i]) };
        if (lengths[i] < 0)
            seg.tag = HPROF_TAG_HEAP_DUMP;
        ck_assert_int_eq(hprof_visit_heap_begin(v, &seg), HPROF_OK);
        at += 9 + seg.length;
    }
    segment_runs_finish(sr);
}

/* Consecutive segments small enough for a worker make a run, cut once it
 * holds a job's bytes; the run says where it starts, ends and how many
 * segments it holds. */
START_TEST(segment_runs_join_consecutive_small_segments_a_jobs_worth_at_a_time)
{
    struct segment_runs sr;
    segment_runs_init(&sr, 1000, 2000);
    const long lengths[] = { 491, 491, 491, 491, 491, 491 }; /* 500 bytes a record */
    note_segments(&sr, lengths, 6);
    ck_assert_uint_eq(sr.n, 2);
    ck_assert_uint_eq(sr.runs[0].start, 100);
    ck_assert_uint_eq(sr.runs[0].end, 2100);
    ck_assert_uint_eq(sr.runs[0].segments, 4);
    ck_assert_uint_eq(sr.runs[1].start, 2100);
    ck_assert_uint_eq(sr.runs[1].end, 3100);
    ck_assert_uint_eq(sr.runs[1].segments, 2);
    segment_runs_free(&sr);
}
END_TEST

/* A run ends at any other record between segments (the walk must see it),
 * at a segment too big for a worker and at a HEAP_DUMP; a run of a single
 * segment is not kept, as it saves the walk nothing. */
START_TEST(segment_runs_end_at_other_records_big_segments_and_heap_dumps)
{
    struct segment_runs sr;
    segment_runs_init(&sr, 1000, 1u << 20);
    const long lengths[] = { 91, 91, 0, 91, 91, 5000, 91, 91, -91, 91, 0, 91 };
    note_segments(&sr, lengths, sizeof lengths / sizeof *lengths);
    ck_assert_uint_eq(sr.n, 3);
    ck_assert_uint_eq(sr.runs[0].start, 100);
    ck_assert_uint_eq(sr.runs[0].segments, 2);
    ck_assert_uint_eq(sr.runs[1].start, 100 + 200 + 29);
    ck_assert_uint_eq(sr.runs[1].end, 100 + 400 + 29);
    ck_assert_uint_eq(sr.runs[2].start, 100 + 400 + 29 + 5009);
    ck_assert_uint_eq(sr.runs[2].segments, 2);
    segment_runs_free(&sr);
}
END_TEST

/* The write pass asks in file order; only a run's first segment names it. */
START_TEST(segment_runs_are_found_by_their_first_segment_in_file_order)
{
    struct segment_runs sr;
    segment_runs_init(&sr, 1000, 1000);
    const long lengths[] = { 491, 491, 491, 0, 491, 491 };
    note_segments(&sr, lengths, 6);
    ck_assert_uint_eq(sr.n, 2);
    ck_assert_ptr_null(segment_runs_at(&sr, 50));
    ck_assert_ptr_eq(segment_runs_at(&sr, 100), &sr.runs[0]);
    ck_assert_ptr_null(segment_runs_at(&sr, 600)); /* inside the first run */
    ck_assert_ptr_null(segment_runs_at(&sr, 1100)); /* a run of one */
    ck_assert_ptr_eq(segment_runs_at(&sr, 1629), &sr.runs[1]);
    ck_assert_ptr_null(segment_runs_at(&sr, 5000));
    segment_runs_free(&sr);
}
END_TEST

/* The input changes under the write pass: an early segment gets a bad
 * sub-record and the file loses its last byte.  Workers see the first,
 * the calling thread the second, sooner; the first in file order is still
 * the one reported, as with one thread. */
struct change_under_pass {
    const char *path;
    uint64_t bad_tag_at, new_size;
    int done;
};

static void change_input(void *ctx, int pass, int passes, uint64_t done, uint64_t total)
{
    struct change_under_pass *c = ctx;
    (void)done;
    (void)total;
    if (c->done || pass != passes)
        return;
    int fd = open(c->path, O_WRONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, "\x77", 1, (off_t)c->bad_tag_at), 1);
    ck_assert_int_eq(ftruncate(fd, (off_t)c->new_size), 0);
    close(fd);
    c->done = 1;
}

static int shrink_changing(const uint8_t *data, size_t len, uint64_t bad_at, unsigned threads,
                           struct hprof_error *err)
{
    char *path = tl_temp_file(data, len, ".hprof");
    struct change_under_pass c = { path, bad_at, len - 1, 0 };
    struct hprof_shrink_options o = { .threads = threads, .progress = change_input,
                                      .progress_ctx = &c };
    struct hprof_reader *r;
    int fd;
    struct hprof_sink *sink = hprof_sink_new_memory(err);
    ck_assert_int_eq(tl_open_reader(path, &fd, &r, err), HPROF_OK);
    int rc = hprof_shrink(r, sink, &o, NULL, err);
    ck_assert_int_eq(c.done, 1);
    hprof_sink_free(sink);
    tl_close_reader(fd, r);
    unlink(path);
    free(path);
    return rc;
}

START_TEST(write_pass_reports_the_first_error_in_file_order)
{
    char *plain = tl_temp_path(".hprof");
    ck_assert_int_eq(tl_system("gzip -dc %s > %s", fixtures[2], plain), 0); /* HotSpot: 3 segments */
    size_t len;
    uint8_t *data = tl_read_file(plain, &len);
    /* the first sub-record of the first heap segment past 512 KiB, which
     * one thread has not read yet when the pass starts */
    size_t at = strlen((const char *)data) + 1 + 12, bad_at = 0;
    while (at + 9 <= len && bad_at == 0) {
        uint32_t body = (uint32_t)data[at + 5] << 24 | (uint32_t)data[at + 6] << 16 |
                        (uint32_t)data[at + 7] << 8 | data[at + 8];
        if (data[at] == HPROF_TAG_HEAP_DUMP_SEGMENT && at >= (512u << 10) && body > 0)
            bad_at = at + 9;
        at += 9 + (size_t)body;
    }
    ck_assert_uint_gt(bad_at, 0);
    ck_assert_uint_lt(bad_at, len - (256u << 10));
    struct hprof_error one = { 0 }, many = { 0 };
    ck_assert_int_eq(shrink_changing(data, len, bad_at, 1, &one), HPROF_ERR_FORMAT);
    ck_assert_int_eq(shrink_changing(data, len, bad_at, 4, &many), HPROF_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(one.message, "unknown sub-record tag 0x77"));
    ck_assert_str_eq(many.message, one.message);
    free(data);
    unlink(plain);
    free(plain);
}
END_TEST

/* One test case per rewrite (and for the collect passes, the write pass
 * and the shrink as a whole), named after it. */
static TCase *test_case(Suite *s, const char *name)
{
    TCase *t = tcase_create(name);
    tcase_set_timeout(t, 300);
    suite_add_tcase(s, t);
    return t;
}

static Suite *shrink_suite(void)
{
    Suite *s = suite_create("shrink");
    int n = N_FIXTURES * N_MODES;
    TCase *t = test_case(s, "strings");
    tcase_add_loop_test(t, strings_keep_every_string_text, 0, n);

    t = test_case(s, "bitmaps");
    tcase_add_loop_test(t, bitmaps_keep_every_bitmap_and_dump_data_buffer, 0, n);
    tcase_add_test(t, bitmaps_never_merge_buffers_that_only_share_an_md5);
    tcase_add_test(t, bitmaps_merge_copies_that_differ_from_their_groups_first_member);
    tcase_add_test(t, info_tells_md5_colliding_buffers_apart_as_the_shrink_does);
    tcase_add_loop_test(t, bitmaps_run_the_digest_pass_only_when_they_must, 0, N_DIGEST_CASES);
    tcase_add_test(t, bitmaps_rule_out_referrers_of_heap_addresses_exactly);
    tcase_add_test(t, bitmaps_hash_only_buffers_whose_fingerprint_has_a_twin);
    tcase_add_loop_test(t, bitmaps_hash_in_the_digest_pass_only_what_could_not_be_located, 0, 2);
    tcase_add_test(t, bitmaps_compare_a_bunch_piece_by_piece_up_to_a_difference);
    tcase_add_test(t, bitmaps_merge_a_confirmed_copy_only_into_the_buffer_it_matched);
    tcase_add_test(t, bitmaps_keep_each_pieces_comparison_with_its_own_bunch);
    tcase_add_test(t, bitmaps_hash_a_mapped_dump_with_bounded_resident_pages);

    t = test_case(s, "system_heaps");
    tcase_add_loop_test(t, system_heaps_keep_instances_per_class_outside_dropped_heaps, 0, n);
    tcase_add_test(t, system_heaps_keep_referenced_objects_as_hollow_stand_ins);
    tcase_add_test(t, system_heaps_keep_the_text_of_builds_strings);
    tcase_add_test(t, system_heaps_keep_the_text_of_builds_strings_named_after_the_heap);
    tcase_add_test(t, system_heaps_keep_builds_device_text_but_not_its_serial);
    tcase_add_test(t, system_heaps_keep_every_object_when_asked);
    tcase_add_loop_test(t, system_heaps_refuse_an_object_whose_class_is_not_dumped, 0, 2);

    t = test_case(s, "arrays");
    tcase_add_loop_test(t, arrays_leave_no_other_array_contents, 0, n);
    tcase_add_loop_test(t, arrays_keep_types_and_zero_mode_keeps_lengths, 0, n);
    tcase_add_loop_test(t, arrays_never_write_primitive_array_nodata, 0, N_MODES);
    tcase_add_test(t, a_nodata_array_too_large_to_zero_is_refused_with_its_offset);

    t = test_case(s, "collect");
    tcase_add_loop_test(t, collect_resolving_in_pass_1_writes_what_pass_2_writes, 0, N_FIXTURES);
    tcase_add_loop_test(t, collect_resolves_in_pass_1_only_when_nothing_comes_too_late, 0, N_LATE);
    tcase_add_loop_test(t, collect_reads_dumps_twice_when_names_come_first, 0, N_FIXTURES);

    t = test_case(s, "write_pass");
    tcase_add_test(t, stats_add_up_every_counter_of_the_table);
    tcase_add_test(t, stats_of_several_heap_dumps_count_each_dump_once);
    tcase_add_loop_test(t, write_pass_writes_and_counts_the_same_for_every_thread_count, 0, n);
    tcase_add_loop_test(t, write_pass_writes_big_segments_itself_in_their_place, 0, n);
    tcase_add_test(t, write_pass_reuses_its_job_slots_and_writes_the_same);
    tcase_add_test(t, segment_runs_join_consecutive_small_segments_a_jobs_worth_at_a_time);
    tcase_add_test(t, segment_runs_end_at_other_records_big_segments_and_heap_dumps);
    tcase_add_test(t, segment_runs_are_found_by_their_first_segment_in_file_order);
    tcase_add_test(t, default_threads_start_no_helper_for_a_small_input);
    tcase_add_test(t, write_pass_reports_the_first_error_in_file_order);

    t = test_case(s, "shrink");
    tcase_add_test(t, shrink_reports_every_pass_of_seven_in_order);
    tcase_add_loop_test(t, shrink_adds_no_dangling_reference, 0, n);
    tcase_add_loop_test(t, shrink_matches_the_generators_bookkeeping, 0, N_MODES);
    tcase_add_loop_test(t, shrink_is_deterministic, 0, N_MODES);
    tcase_add_test(t, shrink_takes_no_options_for_the_defaults_and_refuses_no_sink);
    tcase_add_loop_test(t, shrink_through_a_mapping_writes_the_same_bytes, 0, n);
    tcase_add_loop_test(t, shrink_into_a_file_writes_the_bytes_it_writes_into_memory, 0, 5);
    return s;
}

int main(void)
{
    return tl_run_suite(shrink_suite());
}
