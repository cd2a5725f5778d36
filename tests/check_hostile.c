/*
 * check_hostile.c - dumps that are cut short, corrupted or malicious.  Each
 * must give HPROF_ERR_FORMAT (HPROF_ERR_TRUNCATED when cut short) from
 * hprof_verify(), hprof_info_analyze() and hprof_shrink(), with a one-line
 * message that names the byte offset and the record, and
 * nothing worse (ASan and UBSan watch the sanitizer run).  With
 * HPROF_HOSTILE_OUT=DIR each case is also saved there, for the CLI tests
 * to replay through the tools under a memory limit.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

typedef void (*build_fn)(struct tbuf *b);

static uint32_t get_be4(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

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

/* Nothing passes through unexamined. */
static void segment_tag_flipped(struct tbuf *b)
{
    tb_small_dump(b, 4);
    for (size_t at = 31; at < b->len; at += 9 + get_be4(b->data + at + 5))
        if (b->data[at] == HPROF_TAG_HEAP_DUMP_SEGMENT)
            b->data[at] ^= 1; /* 0x1C -> 0x1D: an opaque record, Strings and all */
}

static void unload_class_wrong_length(struct tbuf *b)
{
    tb_small_dump(b, 4);
    tb_record(b, HPROF_TAG_UNLOAD_CLASS, "\0\0\0\1\0", 5);
}

static void stack_trace_frames_disagree(struct tbuf *b)
{
    static const uint8_t trace[] = { 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 9 };
    tb_init(b, 4);
    tb_header(b, "JAVA PROFILE 1.0.3");
    tb_record(b, HPROF_TAG_STACK_TRACE, trace, sizeof trace); /* 2 frames, room for 1 */
}

static void heap_subtag_at_top_level(struct tbuf *b)
{
    tb_init(b, 4);
    tb_header(b, "JAVA PROFILE 1.0.3");
    tb_record(b, HPROF_OBJECT_ARRAY_DUMP, "\0\0\0\1\0\0\0\0\0\0\0\0\0\0\0\2", 16);
}

static void heap_summary_wrong_length(struct tbuf *b)
{
    static const uint8_t zeros[20];
    tb_init(b, 8);
    tb_header(b, "JAVA PROFILE 1.0.2");
    tb_record(b, HPROF_TAG_HEAP_SUMMARY, zeros, sizeof zeros);
}

static void cpu_samples_count_disagrees(struct tbuf *b)
{
    static const uint8_t samples[] = { 0, 0, 0, 5, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0, 1 };
    tb_init(b, 8);
    tb_header(b, "JAVA PROFILE 1.0.2");
    tb_record(b, HPROF_TAG_CPU_SAMPLES, samples, sizeof samples);
}

static void zeros_after_a_header(struct tbuf *b)
{
    static const uint8_t zeros[4096];
    tb_init(b, 4);
    tb_header(b, "JAVA PROFILE 1.0.3");
    tb_bytes(b, zeros, sizeof zeros); /* what a gzip bomb of zeros inflates to */
}

/* Item 2: one idea of valid.  A class chain that does not end is invalid
 * even without instances (the shrink and hprof-info need every class's
 * layout); an id dumped twice is invalid whatever dumps it. */
static void class_is_its_own_superclass(struct tbuf *b)
{
    start(b, 4);
    tb_class(b, 0x100, 0x100, NULL, 0);
    finish(b);
}

static void superclass_not_dumped_no_instances(struct tbuf *b)
{
    start(b, 4);
    tb_class(b, 0x100, 0x999, NULL, 0);
    finish(b);
}

static void instance_dumped_twice(struct tbuf *b)
{
    start(b, 8);
    tb_class(b, 0x100, 0, NULL, 0);
    tb_instance(b, 0x200, 0x100, NULL, 0);
    tb_instance(b, 0x200, 0x100, NULL, 0);
    finish(b);
}

static void array_dumped_twice(struct tbuf *b)
{
    start(b, 4);
    tb_prim_array(b, 0x300, HPROF_TYPE_INT, 1, "abcd");
    tb_segment_end(b);
    tb_segment_begin(b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_prim_array(b, 0x300, HPROF_TYPE_BYTE, 2, "ab");
    finish(b);
}

static void instance_id_is_a_class_id(struct tbuf *b)
{
    start(b, 4);
    tb_class(b, 0x100, 0, NULL, 0);
    tb_instance(b, 0x100, 0x100, NULL, 0);
    finish(b);
}

/* The other way round: the class comes last (hprof-verify keeps class ids
 * apart from its object set, and must still see this). */
static void class_id_is_an_array_id(struct tbuf *b)
{
    start(b, 4);
    tb_prim_array(b, 0x300, HPROF_TYPE_INT, 1, "abcd");
    tb_class(b, 0x300, 0, NULL, 0);
    finish(b);
}

static const struct {
    const char *name;
    build_fn build;
    const char *message; /* a part of the expected message */
    int cut;             /* cut short (HPROF_ERR_TRUNCATED), else HPROF_ERR_FORMAT */
} cases[] = {
    { "segment-past-eof", segment_past_eof, "runs past the end of the file", 1 },
    { "object-array-count-overflow", object_array_count_overflow,
      "OBJECT_ARRAY_DUMP: 4294967295 elements (34359738360 bytes) run past the end", 0 },
    { "class-with-65535-fields", class_with_65535_fields, "CLASS_DUMP: sub-record runs past", 0 },
    { "superclass-cycle", superclass_cycle, "has a cycle", 0 },
    { "missing-superclass", missing_superclass, "superclass 0x999 which is not dumped", 0 },
    { "duplicate-class", duplicate_class, "0x100 is dumped twice", 0 },
    { "instance-bytes-disagree", instance_bytes_disagree,
      "INSTANCE_DUMP: object 0x200 has 4 field bytes, its class layout needs 8", 0 },
    { "instance-of-undumped-class", instance_of_undumped_class,
      "class 0x300 which is not dumped", 0 },
    { "heap-dump-inside-segment", heap_dump_inside_segment, "unknown sub-record tag 0x0c", 0 },
    { "missing-heap-dump-end", missing_heap_dump_end, "not closed by HEAP_DUMP_END", 1 },
    { "only-a-header", only_a_header, "no record after the header", 0 },
    { "identifier-size-16", identifier_size_16, "identifier size 16", 0 },
    { "short-string-record", short_string_record, "STRING: length 3 is shorter than an id", 0 },
    { "load-class-wrong-length", load_class_wrong_length, "LOAD_CLASS: length 10, expected 16", 0 },
    { "invalid-field-type", invalid_field_type, "invalid basic type 12", 0 },
    { "truncated-mid-record", truncated_mid_record, "runs past the end", 1 },
    { "segment-tag-flipped", segment_tag_flipped, ": tag 0x1d: unknown record tag", 0 },
    { "unload-class-wrong-length", unload_class_wrong_length,
      "UNLOAD_CLASS: length 5, expected 4", 0 },
    { "stack-trace-frames-disagree", stack_trace_frames_disagree,
      "STACK_TRACE: length 16 does not hold its 2 frames (20 bytes)", 0 },
    { "heap-subtag-at-top-level", heap_subtag_at_top_level,
      "offset 0x1f: tag 0x22: heap sub-record OBJECT_ARRAY_DUMP outside a heap dump", 0 },
    { "heap-summary-wrong-length", heap_summary_wrong_length,
      "HEAP_SUMMARY: length 20, expected 24", 0 },
    { "cpu-samples-count-disagrees", cpu_samples_count_disagrees,
      "CPU_SAMPLES: length 16 does not hold its 3 samples (32 bytes)", 0 },
    { "zeros-after-a-header", zeros_after_a_header,
      "offset 0x1f: zero bytes where a record should start", 1 },
    { "class-is-its-own-superclass", class_is_its_own_superclass,
      "superclass chain of class 0x100 has a cycle", 0 },
    { "superclass-not-dumped-no-instances", superclass_not_dumped_no_instances,
      "class 0x100 has superclass 0x999 which is not dumped", 0 },
    { "instance-dumped-twice", instance_dumped_twice,
      "INSTANCE_DUMP: object 0x200 is dumped twice", 0 },
    { "array-dumped-twice", array_dumped_twice,
      "PRIMITIVE_ARRAY_DUMP: object 0x300 is dumped twice", 0 },
    { "instance-id-is-a-class-id", instance_id_is_a_class_id,
      "INSTANCE_DUMP: object 0x100 is dumped twice", 0 },
    { "class-id-is-an-array-id", class_id_is_an_array_id,
      "CLASS_DUMP: object 0x300 is dumped twice", 0 },
};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

static void save(const char *name, const struct tbuf *b)
{
    const char *dir = getenv("HPROF_HOSTILE_OUT");
    char path[4096];
    if (dir == NULL) /* the CLI tests run the shrink on them */
        return;
    snprintf(path, sizeof path, "%s/%s.hprof", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b->data, 1, b->len, f), b->len);
    fclose(f);
}

/* The code of case `i`, and its message: the offset, the record, what is
 * wrong, on one line.  The library offers no option: a cut dump's message
 * says nothing of salvage, which only a program can offer. */
static void assert_error(int rc, const struct hprof_error *err, int i)
{
    ck_assert_msg(rc == (cases[i].cut ? HPROF_ERR_TRUNCATED : HPROF_ERR_FORMAT), "%s: rc %d",
                  cases[i].name, rc);
    ck_assert_msg(strstr(err->message, "salvage") == NULL, "%s: %s", cases[i].name,
                  err->message);
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
    assert_error(rc, &err, _i);
    tb_free(&b);
}
END_TEST

START_TEST(info_rejects_hostile_input_with_offset_and_record)
{
    struct tbuf b = { 0 };
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct hprof_info info;
    cases[_i].build(&b);
    int rc = hprof_reader_open_memory(&r, b.data, b.len, &err);
    if (rc == HPROF_OK)
        rc = hprof_info_analyze(r, &info, &err);
    assert_error(rc, &err, _i);
    hprof_reader_free(r);
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
    assert_error(rc, &err, _i);
    hprof_reader_free(r);
    hprof_sink_free(sink);
    tb_free(&b);
}
END_TEST

/* ---- Flipping tags and lengths of a valid dump, record by record ----------
 * Every mutant must either be rejected (HPROF_ERR_FORMAT, or
 * HPROF_ERR_TRUNCATED for a length that runs past the end) or shrink with
 * --redact into an output that hprof_verify() accepts and that holds no run
 * of more than 64 bytes of any primitive array of the input (all of them
 * are emptied or redacted).  The input's arrays are first filled with
 * pseudo-random bytes, so that no filler can match them by chance.  A run
 * of 65 bytes always holds a 33-byte window starting at a multiple of 32 of
 * its array: those windows are what is looked for, by their first 8 bytes. */

struct secret {
    uint64_t key;           /* the window's first 8 bytes */
    size_t at;              /* its offset in the input */
};

struct array_finder {
    struct hprof_visitor base;
    uint8_t *data;          /* the input, in memory, filled as we go */
    struct secret *secrets;
    size_t n, cap;
    uint64_t x;             /* xorshift state */
};

static uint64_t get_be8(const uint8_t *p)
{
    return (uint64_t)get_be4(p) << 32 | get_be4(p + 4);
}

static int fill_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct array_finder *f = (struct array_finder *)v;
    uint64_t len = (uint64_t)a->count * hprof_type_size(a->type, 4);
    if (a->tag != HPROF_PRIMITIVE_ARRAY_DUMP || a->first != 0 || len <= 64)
        return HPROF_SKIP;
    uint8_t *d = f->data + a->data_offset;
    for (uint64_t i = 0; i < len; i++) {
        f->x ^= f->x << 13, f->x ^= f->x >> 7, f->x ^= f->x << 17;
        d[i] = (uint8_t)(f->x >> 24);
    }
    for (uint64_t w = 0; w + 33 <= len; w += 32) {
        if (f->n == f->cap) {
            f->cap = f->cap ? 2 * f->cap : 1024;
            f->secrets = realloc(f->secrets, f->cap * sizeof *f->secrets);
            ck_assert_ptr_nonnull(f->secrets);
        }
        f->secrets[f->n++] = (struct secret){ get_be8(d + w), (size_t)(a->data_offset + w) };
    }
    return HPROF_SKIP;
}

static int by_key(const void *a, const void *b)
{
    uint64_t x = ((const struct secret *)a)->key, y = ((const struct secret *)b)->key;
    return x < y ? -1 : x > y;
}

/* @return the output offset of a secret window found in `out`, or -1. */
static long find_secret(const struct array_finder *f, const uint8_t *in, const uint8_t *out,
                        size_t len)
{
    for (size_t i = 0; i + 33 <= len; i++) {
        struct secret key = { get_be8(out + i), 0 };
        const struct secret *s = bsearch(&key, f->secrets, f->n, sizeof key, by_key);
        if (s == NULL)
            continue;
        while (s > f->secrets && s[-1].key == key.key)
            s--;
        for (; s < f->secrets + f->n && s->key == key.key; s++)
            if (memcmp(in + s->at, out + i, 33) == 0)
                return (long)i;
    }
    return -1;
}

/* Shrink with --redact; @return its code, and when HPROF_OK check the output. */
static int shrink_mutant(const struct array_finder *f, const uint8_t *in, const uint8_t *mutant,
                         size_t len, const char *what)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct hprof_sink *sink = hprof_sink_new_memory(&err);
    struct hprof_shrink_options o = { .arrays = HPROF_ARRAYS_EMPTY, .redact = HPROF_REDACT_ALL,
                                      .threads = 1 };
    int rc = hprof_reader_open_memory(&r, mutant, len, &err);
    if (rc == HPROF_OK)
        rc = hprof_shrink(r, sink, &o, NULL, &err);
    ck_assert_msg(rc == HPROF_OK || rc == HPROF_ERR_FORMAT || rc == HPROF_ERR_TRUNCATED,
                  "%s: rc %d: %s", what, rc, err.message);
    if (rc == HPROF_OK) {
        size_t out_len;
        const uint8_t *out = hprof_sink_memory_data(sink, &out_len);
        struct hprof_verify_report rep;
        struct hprof_error verr = { 0 };
        ck_assert_msg(tl_verify_memory(out, out_len, &rep, &verr) == HPROF_OK,
                      "%s: the shrink wrote an output hprof_verify() rejects: %s", what,
                      verr.message);
        long at = find_secret(f, in, out, out_len);
        ck_assert_msg(at < 0, "%s: array bytes of the input survive at output offset 0x%lx",
                      what, at);
    }
    hprof_reader_free(r);
    hprof_sink_free(sink);
    return rc;
}

START_TEST(flipped_tags_and_lengths_are_rejected_or_leak_nothing)
{
    static const struct hprof_visitor_ops finder_ops = { .primitive_array = fill_array };
    char *path = tl_temp_path(".hprof");
    char *tool = tl_tool("hprof-synth");
    ck_assert_int_eq(tl_system("%s --scale 1 --big-bitmap 4096 -f %s", tool, path), 0);
    size_t len;
    uint8_t *in = tl_read_file(path, &len);
    ck_assert_ptr_nonnull(in);
    struct array_finder f = { .base = { &finder_ops, NULL }, .data = in,
                              .x = 0x9E3779B97F4A7C15ull };
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    ck_assert_int_eq(hprof_reader_open_memory(&r, in, len, &err), HPROF_OK);
    ck_assert_int_eq(hprof_reader_run(r, &f.base), HPROF_OK);
    hprof_reader_free(r);
    ck_assert_uint_gt(f.n, 100);
    qsort(f.secrets, f.n, sizeof *f.secrets, by_key);
    /* The unmutated input shrinks, leaking nothing: the check can pass. */
    ck_assert_int_eq(shrink_mutant(&f, in, in, len, "unmutated"), HPROF_OK);

    static const uint8_t tag_flips[] = { 0x01, 0x02, 0x10, 0x20, 0x3E };
    static const int64_t length_deltas[] = { 1, -1, 4, -4, 8, 0x100, -0x100 };
    uint8_t *mutant = malloc(len);
    unsigned records = 0, rejected = 0, runs = 0;
    size_t at = 31; /* after the 1.0.3 header */
    ck_assert_int_eq(memcmp(in, "JAVA PROFILE 1.0.3", 19), 0);
    while (at + 9 <= len) {
        uint32_t length = get_be4(in + at + 5);
        char what[96];
        for (size_t i = 0; i < sizeof tag_flips; i++) {
            memcpy(mutant, in, len);
            mutant[at] ^= tag_flips[i];
            snprintf(what, sizeof what, "record at 0x%zx, tag 0x%02x -> 0x%02x", at, in[at],
                     mutant[at]);
            rejected += shrink_mutant(&f, in, mutant, len, what) != HPROF_OK;
            runs++;
        }
        for (size_t i = 0; i < sizeof length_deltas / sizeof length_deltas[0]; i++) {
            if ((int64_t)length + length_deltas[i] < 0)
                continue;
            memcpy(mutant, in, len);
            uint32_t l = (uint32_t)((int64_t)length + length_deltas[i]);
            mutant[at + 5] = (uint8_t)(l >> 24), mutant[at + 6] = (uint8_t)(l >> 16);
            mutant[at + 7] = (uint8_t)(l >> 8), mutant[at + 8] = (uint8_t)l;
            snprintf(what, sizeof what, "record at 0x%zx (tag 0x%02x), length %u -> %u", at,
                     in[at], length, l);
            rejected += shrink_mutant(&f, in, mutant, len, what) != HPROF_OK;
            runs++;
        }
        records++;
        at += 9 + (size_t)length;
    }
    ck_assert_uint_eq(at, len);
    printf("flipped %u records: %u of %u mutants rejected, the rest leak nothing\n", records,
           rejected, runs);
    free(mutant);
    free(f.secrets);
    free(in);
    unlink(path);
    free(path);
    free(tool);
}
END_TEST

/* Item 3, beyond classes: hprof-info matched every bitmap buffer against
 * every bitmap (20 s for this 3.6 MB dump); now each buffer finds its own. */
START_TEST(info_links_100k_bitmaps_to_their_buffers)
{
    static const uint8_t types[] = { HPROF_TYPE_OBJECT };
    enum { N = 100000 };
    struct tbuf b;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_string(&b, 0x10, "android.graphics.Bitmap");
    tb_string(&b, 0x900, "mBuffer");
    tb_load_class(&b, 1, 0x100, 0x10);
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&b, 0x100, 0, types, 1);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t id = 0x1000000 + 16 * i, buffer = id + 8;
        uint8_t v[4] = { (uint8_t)(buffer >> 24), (uint8_t)(buffer >> 16), (uint8_t)(buffer >> 8),
                         (uint8_t)buffer };
        uint8_t pixel = (uint8_t)i;
        tb_instance(&b, id, 0x100, v, 4);
        tb_prim_array(&b, buffer, HPROF_TYPE_BYTE, 1, &pixel);
    }
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    struct hprof_info info;
    ck_assert_int_eq(hprof_reader_open_memory(&r, b.data, b.len, &err), HPROF_OK);
    ck_assert_msg(hprof_info_analyze(r, &info, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(info.n_bitmaps, N);
    for (size_t i = 0; i < N; i++) {
        ck_assert_uint_eq(info.bitmaps[i].buffer_id, info.bitmaps[i].id + 8);
        ck_assert_uint_eq(info.bitmaps[i].buffer_bytes, 1);
    }
    hprof_info_free(&info);
    hprof_reader_free(r);
    /* hprof-bitmaps groups them by content in n log n: 256 contents, one
     * line each (it compared every bitmap with every other, twice over) */
    char *path = tl_temp_file(b.data, b.len, ".hprof"), *dir = tl_temp_path(".d");
    char *tool = tl_tool("hprof-bitmaps");
    ck_assert_int_eq(tl_system("%s %s %s", tool, path, dir), 0);
    char index[4096];
    snprintf(index, sizeof index, "%s/index.tsv", dir);
    FILE *f = fopen(index, "r");
    ck_assert_ptr_nonnull(f);
    int lines = 0, c;
    while ((c = fgetc(f)) != EOF)
        lines += c == '\n';
    fclose(f);
    ck_assert_int_eq(lines, 1 + 256);
    ck_assert_int_eq(tl_system("rm -rf %s %s", path, dir), 0);
    free(path);
    free(dir);
    free(tool);
    tb_free(&b);
}
END_TEST

static Suite *hostile_suite(void)
{
    Suite *s = suite_create("hostile");
    TCase *t = tcase_create("hostile");
    tcase_add_loop_test(t, verify_rejects_hostile_input_with_offset_and_record, 0, N_CASES);
    tcase_add_loop_test(t, info_rejects_hostile_input_with_offset_and_record, 0, N_CASES);
    tcase_add_loop_test(t, shrink_rejects_hostile_input_with_offset_and_record, 0, N_CASES);
    tcase_add_test(t, flipped_tags_and_lengths_are_rejected_or_leak_nothing);
    tcase_add_test(t, info_links_100k_bitmaps_to_their_buffers);
    tcase_set_timeout(t, 600);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(hostile_suite());
}
