/*
 * check_hostile.c - dumps that are cut short, corrupted or malicious.  Each
 * must give HPROF_ERR_FORMAT from both hprof_verify() and hprof_shrink(),
 * with a one-line message that names the byte offset and the record, and
 * nothing worse (ASan and UBSan watch the sanitizer run).  With
 * HPROF_HOSTILE_OUT=DIR each case is also saved there, for the CLI tests
 * to replay through the tools under a memory limit.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

typedef void (*build_fn)(struct tbuf *b);

static void start(struct tbuf *b, unsigned ids)
{
    tb_init(b, ids);
    tb_header(b, ids == 4 ? "JAVA PROFILE 1.0.3" : "JAVA PROFILE 1.0.2");
    tb_segment_begin(b, HPROF_TAG_HEAP_DUMP_SEGMENT);
}

static void finish(struct tbuf *b)
{
    tb_segment_end(b);
    tb_record(b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
}

static void segment_past_eof(struct tbuf *b)
{
    start(b, 8);
    tb_prim_array(b, 0x10, HPROF_TYPE_INT, 1, "abcd");
    tb_segment_end(b);
    b->data[b->segment_at] = 0xFF; /* claims ~4 GiB */
}

static void object_array_count_overflow(struct tbuf *b)
{
    start(b, 8);
    tb_u1(b, HPROF_OBJECT_ARRAY_DUMP);
    tb_id(b, 0x10);
    tb_u4(b, 0);
    tb_u4(b, 0xFFFFFFFFu); /* 32 GiB of ids */
    tb_id(b, 0x20);
    finish(b);
}

static void class_with_65535_fields(struct tbuf *b)
{
    start(b, 4);
    tb_class(b, 0x100, 0, NULL, 0);
    b->data[b->len - 2] = 0xFF; /* field count 65535, no fields follow */
    b->data[b->len - 1] = 0xFF;
    finish(b);
}

static void superclass_cycle(struct tbuf *b)
{
    start(b, 4);
    tb_class(b, 0x100, 0x110, NULL, 0);
    tb_class(b, 0x110, 0x100, NULL, 0);
    tb_instance(b, 0x200, 0x100, NULL, 0);
    finish(b);
}

static void missing_superclass(struct tbuf *b)
{
    start(b, 4);
    tb_class(b, 0x100, 0x999, NULL, 0);
    tb_instance(b, 0x200, 0x100, NULL, 0);
    finish(b);
}

static void duplicate_class(struct tbuf *b)
{
    start(b, 4);
    tb_class(b, 0x100, 0, NULL, 0);
    tb_class(b, 0x100, 0, NULL, 0);
    finish(b);
}

static void instance_bytes_disagree(struct tbuf *b)
{
    static const uint8_t types[] = { HPROF_TYPE_LONG };
    start(b, 4);
    tb_class(b, 0x100, 0, types, 1);
    tb_instance(b, 0x200, 0x100, "1234", 4); /* a long needs 8 */
    finish(b);
}

static void instance_of_undumped_class(struct tbuf *b)
{
    start(b, 4);
    tb_instance(b, 0x200, 0x300, NULL, 0);
    finish(b);
}

static void heap_dump_inside_segment(struct tbuf *b)
{
    start(b, 4);
    tb_u1(b, HPROF_TAG_HEAP_DUMP);
    tb_u4(b, 0);
    tb_u4(b, 0);
    finish(b);
}

static void missing_heap_dump_end(struct tbuf *b)
{
    start(b, 4);
    tb_class(b, 0x100, 0, NULL, 0);
    tb_segment_end(b);
}

static void only_a_header(struct tbuf *b)
{
    tb_init(b, 4);
    tb_header(b, "JAVA PROFILE 1.0.3");
}

static void identifier_size_16(struct tbuf *b)
{
    tb_init(b, 16);
    tb_header(b, "JAVA PROFILE 1.0.2");
    tb_record(b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
}

static void short_string_record(struct tbuf *b)
{
    tb_init(b, 8);
    tb_header(b, "JAVA PROFILE 1.0.2");
    tb_record(b, HPROF_TAG_STRING, "abc", 3);
}

static void load_class_wrong_length(struct tbuf *b)
{
    tb_init(b, 4);
    tb_header(b, "JAVA PROFILE 1.0.3");
    tb_record(b, HPROF_TAG_LOAD_CLASS, "0123456789", 10);
}

static void invalid_field_type(struct tbuf *b)
{
    static const uint8_t types[] = { 12 };
    start(b, 4);
    tb_class(b, 0x100, 0, types, 1);
    finish(b);
}

static void truncated_mid_record(struct tbuf *b)
{
    tb_small_dump(b, 8);
    b->len -= 20;
}

static const struct {
    const char *name;
    build_fn build;
    const char *message; /* a part of the expected message */
} cases[] = {
    { "segment-past-eof", segment_past_eof, "runs past the end of the file" },
    { "object-array-count-overflow", object_array_count_overflow,
      "OBJECT_ARRAY_DUMP: 4294967295 elements (34359738360 bytes) run past the end" },
    { "class-with-65535-fields", class_with_65535_fields, "CLASS_DUMP: sub-record runs past" },
    { "superclass-cycle", superclass_cycle, "has a cycle" },
    { "missing-superclass", missing_superclass, "superclass 0x999 which is not dumped" },
    { "duplicate-class", duplicate_class, "0x100 is dumped twice" },
    { "instance-bytes-disagree", instance_bytes_disagree,
      "INSTANCE_DUMP: object 0x200 has 4 field bytes, its class layout needs 8" },
    { "instance-of-undumped-class", instance_of_undumped_class,
      "class 0x300 which is not dumped" },
    { "heap-dump-inside-segment", heap_dump_inside_segment, "unknown sub-record tag 0x0c" },
    { "missing-heap-dump-end", missing_heap_dump_end, "not closed by HEAP_DUMP_END" },
    { "only-a-header", only_a_header, "no record after the header" },
    { "identifier-size-16", identifier_size_16, "identifier size 16" },
    { "short-string-record", short_string_record, "STRING: length 3 is shorter than an id" },
    { "load-class-wrong-length", load_class_wrong_length, "LOAD_CLASS: length 10, expected 16" },
    { "invalid-field-type", invalid_field_type, "invalid basic type 12" },
    { "truncated-mid-record", truncated_mid_record, "runs past the end" },
};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

static void save(const char *name, const struct tbuf *b)
{
    const char *dir = getenv("HPROF_HOSTILE_OUT");
    char path[4096];
    if (dir == NULL)
        return;
    snprintf(path, sizeof path, "%s/%s.hprof", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b->data, 1, b->len, f), b->len);
    fclose(f);
}

static void assert_message(const struct hprof_error *err, int i)
{
    ck_assert_msg(strncmp(err->message, "offset 0x", 9) == 0, "%s: %s", cases[i].name,
                  err->message);
    ck_assert_msg(strstr(err->message, cases[i].message) != NULL, "%s: %s", cases[i].name,
                  err->message);
    ck_assert_msg(strchr(err->message, '\n') == NULL, "%s: not one line", cases[i].name);
}

START_TEST(verify_rejects_hostile_input_with_offset_and_record)
{
    struct tbuf b = { 0 };
    struct hprof_error err = { 0 };
    struct hprof_verify_report rep;
    cases[_i].build(&b);
    save(cases[_i].name, &b);
    int rc = tl_verify_memory(b.data, b.len, &rep, &err);
    ck_assert_msg(rc == HPROF_ERR_FORMAT, "%s: rc %d", cases[_i].name, rc);
    assert_message(&err, _i);
    tb_free(&b);
}
END_TEST

START_TEST(shrink_rejects_hostile_input_with_offset_and_record)
{
    struct tbuf b = { 0 };
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct hprof_sink *sink = hprof_sink_new_memory(&err);
    struct hprof_shrink_options o = { .arrays = HPROF_ARRAYS_EMPTY };
    cases[_i].build(&b);
    int rc = hprof_reader_open_memory(&r, b.data, b.len, &err);
    if (rc == HPROF_OK)
        rc = hprof_shrink(r, sink, &o, NULL, &err);
    ck_assert_msg(rc == HPROF_ERR_FORMAT, "%s: rc %d", cases[_i].name, rc);
    assert_message(&err, _i);
    hprof_reader_free(r);
    hprof_sink_free(sink);
    tb_free(&b);
}
END_TEST

static Suite *hostile_suite(void)
{
    Suite *s = suite_create("hostile");
    TCase *t = tcase_create("hostile");
    tcase_add_loop_test(t, verify_rejects_hostile_input_with_offset_and_record, 0, N_CASES);
    tcase_add_loop_test(t, shrink_rejects_hostile_input_with_offset_and_record, 0, N_CASES);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(hostile_suite());
}
