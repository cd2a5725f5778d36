/*
 * check_jvm.c - the --jvm filter (src/rewrite/jvm.c): Android records come
 * out in the standard 1.0.2 form, byte for byte as specified, with the same
 * records as AOSP hprof-conv writes (canonical digest) on generated Android
 * dumps and the ART fixture, and a HotSpot dump passes unchanged.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jvm.h"
#include "testlib.h"

#define HPROF_CONV "/usr/lib/android-sdk/platform-tools/hprof-conv"

/* reader -> [jvm filter] -> writer, into memory. */
static uint8_t *through(const uint8_t *in, size_t len, int jvm, struct jvm_counts *counts,
                        size_t *out_len)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    struct hprof_sink *sink = hprof_sink_new_memory(&err);
    struct hprof_writer *w = hprof_writer_new(sink, &err);
    struct jvm_filter f;
    jvm_filter_init(&f);
    f.base.next = hprof_writer_visitor(w);
    ck_assert_int_eq(hprof_reader_open_memory(&r, in, len, &err), HPROF_OK);
    ck_assert_msg(hprof_reader_run(r, jvm ? &f.base : hprof_writer_visitor(w)) == HPROF_OK, "%s",
                  err.message);
    ck_assert_int_eq(hprof_sink_finish(sink), HPROF_OK);
    const uint8_t *d = hprof_sink_memory_data(sink, out_len);
    uint8_t *out = malloc(*out_len + 1);
    memcpy(out, d, *out_len);
    if (counts)
        *counts = f.counts;
    hprof_reader_free(r);
    hprof_writer_free(w);
    hprof_sink_free(sink);
    return out;
}

static const uint8_t simple[] = { HPROF_ROOT_INTERNED_STRING, HPROF_ROOT_FINALIZING,
                                  HPROF_ROOT_DEBUGGER, HPROF_ROOT_REFERENCE_CLEANUP,
                                  HPROF_ROOT_VM_INTERNAL, HPROF_UNREACHABLE };

/* Every Android-only sub-record once, between standard ones (the NODATA
 * array only if `nodata`), and what --jvm must make of it. */
static void android_records(struct tbuf *ip, struct tbuf *wp, int nodata)
{
    struct tbuf in, want;
    tb_init(&in, 4);
    tb_header(&in, "JAVA PROFILE 1.0.3");
    tb_string(&in, 1, "app");
    tb_segment_begin(&in, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_u1(&in, HPROF_HEAP_DUMP_INFO);
    tb_u4(&in, 'A');
    tb_id(&in, 1);
    for (unsigned i = 0; i < sizeof simple; i++) {
        tb_u1(&in, simple[i]);
        tb_id(&in, 0x100 + i);
    }
    tb_u1(&in, HPROF_ROOT_JNI_MONITOR);
    tb_id(&in, 0x200);
    tb_u4(&in, 7);          /* thread serial */
    tb_u4(&in, 3);          /* frame */
    tb_u1(&in, HPROF_ROOT_JAVA_FRAME);
    tb_id(&in, 0x300);
    tb_u4(&in, 7);
    tb_u4(&in, 3);
    if (nodata) {
        tb_u1(&in, HPROF_PRIMITIVE_ARRAY_NODATA);
        tb_id(&in, 0x400);
        tb_u4(&in, 9);      /* stack serial */
        tb_u4(&in, 1000);   /* count, no data */
        tb_u1(&in, HPROF_TYPE_INT);
    }
    tb_prim_array(&in, 0x500, HPROF_TYPE_BYTE, 3, "abc");
    tb_segment_end(&in);
    tb_record(&in, HPROF_TAG_HEAP_DUMP_END, NULL, 0);

    tb_init(&want, 4);
    tb_header(&want, "JAVA PROFILE 1.0.2");
    tb_string(&want, 1, "app");
    tb_segment_begin(&want, HPROF_TAG_HEAP_DUMP_SEGMENT);
    for (unsigned i = 0; i < sizeof simple; i++) {
        tb_u1(&want, HPROF_ROOT_UNKNOWN);
        tb_id(&want, 0x100 + i);
    }
    tb_u1(&want, HPROF_ROOT_UNKNOWN);
    tb_id(&want, 0x200);
    tb_u1(&want, HPROF_ROOT_JAVA_FRAME);
    tb_id(&want, 0x300);
    tb_u4(&want, 7);
    tb_u4(&want, 3);
    if (nodata) {
        tb_u1(&want, HPROF_PRIMITIVE_ARRAY_DUMP);
        tb_id(&want, 0x400);
        tb_u4(&want, 9);
        tb_u4(&want, 0);
        tb_u1(&want, HPROF_TYPE_INT);
    }
    tb_prim_array(&want, 0x500, HPROF_TYPE_BYTE, 3, "abc");
    tb_segment_end(&want);
    tb_record(&want, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    *ip = in;
    *wp = want;
}

/* hprof-conv's output of `in` (NULL when it is not installed). */
static uint8_t *hprof_conv(const uint8_t *in, size_t len, size_t *out_len)
{
    if (access(HPROF_CONV, X_OK) != 0) {
        printf("note: %s absent, not compared with it\n", HPROF_CONV);
        return NULL;
    }
    char *src = tl_temp_file(in, len, ".hprof"), *dst = tl_temp_path(".hprof");
    ck_assert_int_eq(tl_system("%s %s %s", HPROF_CONV, src, dst), 0);
    uint8_t *conv = tl_read_file(dst, out_len);
    unlink(src);
    unlink(dst);
    free(src);
    free(dst);
    return conv;
}

/* Loop 0: without a NODATA array, byte for byte what hprof-conv writes;
 * 1: with one, an empty PRIMITIVE_ARRAY_DUMP (see the next test). */
START_TEST(jvm_writes_each_android_record_as_hprof_conv_does)
{
    struct tbuf in, want;
    android_records(&in, &want, _i);
    size_t out_len;
    struct jvm_counts c;
    uint8_t *out = through(in.data, in.len, 1, &c, &out_len);
    ck_assert_uint_eq(out_len, want.len);
    ck_assert_mem_eq(out, want.data, want.len);
    ck_assert_int_eq(c.header_converted, 1);
    ck_assert_uint_eq(c.roots_converted, 7);
    ck_assert_uint_eq(c.heap_infos_dropped, 1);
    ck_assert_uint_eq(c.nodata_arrays, (unsigned)_i);
    size_t conv_len;
    uint8_t *conv = _i ? NULL : hprof_conv(in.data, in.len, &conv_len);
    if (conv != NULL) {
        ck_assert_uint_eq(conv_len, want.len);
        ck_assert_mem_eq(conv, want.data, want.len);
        free(conv);
    }
    free(out);
    tb_free(&in);
    tb_free(&want);
}
END_TEST

/* Why a NODATA array does not come out as hprof-conv writes it, byte for
 * byte: hprof-conv (AOSP HprofConv.c, Debian 29.0.6) means to write an
 * empty PRIMITIVE_ARRAY_DUMP ("set array len to 0"), but the four bytes it
 * zeroes are the stack serial (with 4-byte ids the count is at 9-12): the
 * count stays, the data is absent, and its output does not read back. */
START_TEST(hprof_conv_writes_a_nodata_array_that_does_not_read_back)
{
    struct tbuf in, want;
    android_records(&in, &want, 1);
    size_t conv_len;
    uint8_t *conv = hprof_conv(in.data, in.len, &conv_len);
    if (conv != NULL) {
        struct tl_canon canon;
        struct hprof_error err = { 0 };
        ck_assert_int_eq(tl_canon_memory(conv, conv_len, &canon, &err), HPROF_ERR_FORMAT);
        ck_assert_msg(strstr(err.message, "PRIMITIVE_ARRAY_DUMP: 1000 elements (4000 bytes) run "
                                          "past the end of the segment") != NULL,
                      "%s", err.message);
        free(conv);
    }
    tb_free(&in);
    tb_free(&want);
}
END_TEST

/* HotSpot dumps have no Android record: the bytes a plain round trip
 * writes, header included. */
START_TEST(jvm_leaves_a_hotspot_dump_unchanged)
{
    static const int hotspot[] = { 1, 2, 4, 5 };   /* indexes into tl_fixtures */
    if (!tl_fixture_available(hotspot[_i]))
        return;
    size_t len, plain_len, out_len;
    uint8_t *in = tl_read_dump(tl_fixtures[hotspot[_i]], &len);
    struct jvm_counts c;
    uint8_t *plain = through(in, len, 0, NULL, &plain_len);
    uint8_t *out = through(in, len, 1, &c, &out_len);
    ck_assert_uint_eq(out_len, plain_len);
    ck_assert_mem_eq(out, plain, plain_len);
    ck_assert_uint_eq(c.roots_converted + c.heap_infos_dropped + c.nodata_arrays, 0);
    ck_assert_int_eq(c.header_converted, 0);
    free(in);
    free(plain);
    free(out);
}
END_TEST

/* What remains of the Android records in a dump: none, once converted. */
struct android_left {
    uint64_t android_roots, roots, heap_infos, nodata, arrays;
};

static struct android_left android_left(const uint8_t *d, size_t len)
{
    struct tl_counter c;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(tl_count_memory(d, len, &c, &err), HPROF_OK);
    struct android_left a = { .roots = c.roots, .heap_infos = c.heap_infos,
                              .nodata = c.nodata_arrays, .arrays = c.primitive_arrays };
    for (unsigned tag = 0; tag < 256; tag++)
        a.android_roots += jvm_root_kind((uint8_t)tag) != tag ? c.roots_of[tag] : 0;
    return a;
}

/* Android dumps (generated, with and without a NODATA array; the ART
 * fixture): no Android record is left, every root and array is still
 * there, the header says 1.0.2, and, where there is no NODATA array (see
 * above), the records are those hprof-conv writes: the same canonical
 * digest (records and sub-records in order, whatever the segments;
 * hprof-conv keeps ART's zero-length ones, the writer drops them). */
START_TEST(jvm_output_holds_the_records_hprof_conv_writes)
{
    size_t len, out_len;
    uint8_t *in;
    const char *what;
    if (_i < 2) {
        char *path = tl_temp_path(".hprof");
        char *tool = tl_tool("hprof-synth");
        what = _i ? "--android --scale 2" : "--android --nodata";
        ck_assert_int_eq(tl_system("%s %s -f %s", tool, what, path), 0);
        in = tl_read_file(path, &len);
        unlink(path);
        free(path);
        free(tool);
    } else {
        if (!tl_fixture_available(3))
            return;
        what = tl_fixtures[3];
        in = tl_read_dump(what, &len);
    }
    struct jvm_counts c;
    uint8_t *out = through(in, len, 1, &c, &out_len);
    ck_assert_mem_eq(out, "JAVA PROFILE 1.0.2", 19);
    struct android_left before = android_left(in, len), after = android_left(out, out_len);
    ck_assert_uint_gt(before.android_roots + before.heap_infos, 0);
    ck_assert_uint_eq(after.android_roots, 0);
    ck_assert_uint_eq(after.heap_infos, 0);
    ck_assert_uint_eq(after.nodata, 0);
    ck_assert_uint_eq(after.roots, before.roots);
    ck_assert_uint_eq(after.arrays, before.arrays);
    ck_assert_uint_eq(c.roots_converted, before.android_roots);
    ck_assert_uint_eq(c.heap_infos_dropped, before.heap_infos);
    ck_assert_uint_eq(c.nodata_arrays, before.nodata);
    ck_assert_uint_eq(c.nodata_arrays, _i == 0 ? 1 : 0);
    printf("jvm: %s: %llu roots converted, %llu heap infos dropped, %llu NODATA arrays\n", what,
           (unsigned long long)c.roots_converted, (unsigned long long)c.heap_infos_dropped,
           (unsigned long long)c.nodata_arrays);
    size_t conv_len;
    uint8_t *conv = c.nodata_arrays ? NULL : hprof_conv(in, len, &conv_len);
    if (conv != NULL) {
        struct tl_canon ours, theirs;
        struct hprof_error err = { 0 };
        ck_assert_int_eq(tl_canon_memory(out, out_len, &ours, &err), HPROF_OK);
        ck_assert_msg(tl_canon_memory(conv, conv_len, &theirs, &err) == HPROF_OK, "%s",
                      err.message);
        ck_assert_uint_eq(ours.records, theirs.records);
        ck_assert_uint_eq(ours.sub_records, theirs.sub_records);
        ck_assert_mem_eq(ours.md5, theirs.md5, 16);
        free(conv);
    }
    free(in);
    free(out);
}
END_TEST

/* --jvm drops HEAP_DUMP_INFO, so the heaps' names it alone used are
 * unused names, dropped in the same run: its output is what --jvm makes
 * of it again, byte for byte (the Android fixtures, and a file of two
 * dumps, whose names are collected over the whole file). */
START_TEST(jvm_output_is_what_jvm_makes_of_it_again)
{
    char *two = NULL, *tool = tl_tool("hprof-synth");
    const char *path = _i < 2 ? tl_fixtures[_i == 0 ? 0 : 3] : NULL;
    if (_i < 2 && !tl_fixture_available(_i == 0 ? 0 : 3)) {
        free(tool);
        return;
    }
    if (_i == 2) {
        two = tl_temp_path(".hprof");
        ck_assert_int_eq(tl_system("%s --dumps 2 -f %s", tool, two), 0);
        path = two;
    }
    struct hprof_shrink_options o = { .jvm = 1 };
    struct hprof_shrink_stats once_stats, again_stats;
    size_t once_len, again_len;
    uint8_t *once = tl_shrink_file(path, &o, &once_len, &once_stats);
    char *once_path = tl_temp_file(once, once_len, ".hprof");
    uint8_t *again = tl_shrink_file(once_path, &o, &again_len, &again_stats);
    ck_assert_uint_gt(once_stats.jvm_heap_infos_dropped, 0);
    ck_assert_uint_eq(again_stats.names_dropped.count, 0);
    ck_assert_uint_eq(again_len, once_len);
    ck_assert_mem_eq(again, once, once_len);
    unlink(once_path);
    if (two != NULL)
        unlink(two);
    free(once_path);
    free(two);
    free(tool);
    free(once);
    free(again);
}
END_TEST

static Suite *jvm_suite(void)
{
    Suite *s = suite_create("jvm");
    TCase *t = tcase_create("jvm");
    tcase_set_timeout(t, 120);
    tcase_add_loop_test(t, jvm_writes_each_android_record_as_hprof_conv_does, 0, 2);
    tcase_add_test(t, hprof_conv_writes_a_nodata_array_that_does_not_read_back);
    tcase_add_loop_test(t, jvm_leaves_a_hotspot_dump_unchanged, 0, 4);
    tcase_add_loop_test(t, jvm_output_holds_the_records_hprof_conv_writes, 0, 3);
    tcase_add_loop_test(t, jvm_output_is_what_jvm_makes_of_it_again, 0, 3);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(jvm_suite());
}
