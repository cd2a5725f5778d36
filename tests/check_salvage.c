/*
 * check_salvage.c - hprof_reader_set_salvage(): a dump cut short is read up
 * to its last complete record or sub-record, the heap is closed, what is
 * delivered is a valid dump, and the report says what was lost.  Cuts in
 * a record header, a record body, a segment header and a sub-record of a
 * hand-made dump; every prefix of it; and cuts of every fixture, spread
 * over the file and just inside or after record and sub-record headers,
 * shrunk on one and on several threads.
 */
#include <check.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hprof_private.h"
#include "testlib.h"

/* Where things are in the dump made by small_dump(). */
struct layout {
    size_t header_end, string_at, load_class_at, segment_at, root_at, class_at, instance_at,
        array_at, segment_end, end_at, total;
};

/* tb_small_dump()'s content with every offset noted, and an instance of
 * a class dumped after it (allowed, as ART does). */
static void small_dump(struct tbuf *b, unsigned ids, struct layout *l)
{
    static const uint8_t types[] = { HPROF_TYPE_INT, HPROF_TYPE_OBJECT };
    uint8_t values[12] = { 0, 0, 0, 42 };
    tb_init(b, ids);
    tb_header(b, ids == 4 ? "JAVA PROFILE 1.0.3" : "JAVA PROFILE 1.0.2");
    l->header_end = l->string_at = b->len;
    tb_string(b, 0x10, "Thing");
    l->load_class_at = b->len;
    tb_load_class(b, 1, 0x100, 0x10);
    l->segment_at = b->len;
    tb_segment_begin(b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    l->root_at = b->len;
    tb_u1(b, HPROF_ROOT_STICKY_CLASS);
    tb_id(b, 0x100);
    l->class_at = b->len;
    tb_class(b, 0x100, 0, types, 2);
    values[4 + ids - 1] = 0x20; /* field 2 -> array 0x200 */
    values[4 + ids - 2] = 0x02;
    l->instance_at = b->len;
    tb_instance(b, 0x110, 0x100, values, 4 + ids);
    l->array_at = b->len;
    tb_prim_array(b, 0x200, HPROF_TYPE_CHAR, 3, "\0a\0b\0c");
    tb_segment_end(b);
    l->segment_end = l->end_at = b->len;
    tb_record(b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    l->total = b->len;
}

/* A salvaging run over the first `len` bytes of `b`, strict (as the tools
 * run) unless `lax` is set. */
static int lax;

static int salvage_run(const struct tbuf *b, size_t len, struct tl_counter *s,
                       struct hprof_salvage_report *rep, struct hprof_error *err)
{
    struct hprof_reader *r = NULL;
    tl_counter_init(s);
    memset(err, 0, sizeof *err);
    int rc = hprof_reader_open_memory(&r, b->data, len, err);
    if (rc == HPROF_OK) {
        hprof_reader_set_salvage(r, 1);
        hprof_reader_set_strict(r, !lax);
        rc = hprof_reader_run(r, &s->base);
        *rep = *hprof_reader_salvage_report(r);
    }
    hprof_reader_free(r);
    return rc;
}

/* The first `len` bytes of `b` through a salvaging reader and a writer:
 * @return the output, which must verify strictly without salvage. */
static void salvaged_output_verifies(const uint8_t *data, size_t len)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct hprof_sink *sink = hprof_sink_new_memory(&err);
    struct hprof_writer *w = hprof_writer_new(sink, &err);
    ck_assert_int_eq(hprof_reader_open_memory(&r, data, len, &err), HPROF_OK);
    hprof_reader_set_salvage(r, 1);
    hprof_reader_set_strict(r, 1);
    ck_assert_msg(hprof_reader_run(r, hprof_writer_visitor(w)) == HPROF_OK, "cut at %zu: %s",
                  len, err.message);
    ck_assert_int_eq(hprof_sink_finish(sink), HPROF_OK);
    size_t out_len;
    const uint8_t *out = hprof_sink_memory_data(sink, &out_len);
    struct hprof_verify_report rep;
    ck_assert_msg(tl_verify_memory(out, out_len, &rep, &err) == HPROF_OK,
                  "cut at %zu: the output does not verify: %s", len, err.message);
    hprof_reader_free(r);
    hprof_writer_free(w);
    hprof_sink_free(sink);
}

/* A salvaging run over the first `len` bytes of `b` fails: there is
 * nothing to salvage. */
static void assert_nothing_to_salvage(const struct tbuf *b, size_t len)
{
    struct tl_counter s;
    struct hprof_salvage_report rep;
    struct hprof_error err;
    ck_assert_int_eq(salvage_run(b, len, &s, &rep, &err), HPROF_ERR_FORMAT);
    ck_assert_msg(strstr(err.message, "nothing to salvage") != NULL, "%s", err.message);
}

/* Without salvage, the first `len` bytes of `b` fail to verify as an
 * input cut short, which salvage reads, with an error that says `what`
 * (and no option: the tools that have one add it). */
static void assert_unsalvaged_error_says(const struct tbuf *b, size_t len, const char *what)
{
    struct hprof_verify_report vr;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(tl_verify_memory(b->data, len, &vr, &err), HPROF_ERR_TRUNCATED);
    ck_assert_msg(strstr(err.message, what) != NULL && strstr(err.message, "salvage") == NULL,
                  "%s", err.message);
}

/* hprof_verify() of the first `len` bytes of `b` read with salvage;
 * it must succeed. */
static void verify_salvaged(const struct tbuf *b, size_t len, struct hprof_verify_report *vr)
{
    struct hprof_reader *r = NULL;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(hprof_reader_open_memory(&r, b->data, len, &err), HPROF_OK);
    hprof_reader_set_salvage(r, 1);
    ck_assert_msg(hprof_verify(r, vr, &err) == HPROF_OK, "%s", err.message);
    hprof_reader_free(r);
}

START_TEST(salvage_cut_inside_a_record_header_drops_the_record)
{
    struct tbuf b;
    struct layout l;
    struct tl_counter s;
    struct hprof_salvage_report rep;
    struct hprof_error err;
    small_dump(&b, _i ? 8 : 4, &l);
    size_t cut = l.load_class_at + 4; /* tag, time: no length */
    /* before the heap: strict runs have nothing to salvage */
    assert_nothing_to_salvage(&b, cut);
    lax = 1;
    ck_assert_int_eq(salvage_run(&b, cut, &s, &rep, &err), HPROF_OK);
    lax = 0;
    ck_assert_int_eq(s.strings, 1);
    ck_assert_int_eq(s.load_classes, 0);
    ck_assert_int_eq(rep.cut, 1);
    ck_assert_uint_eq(rep.input_end, cut);
    ck_assert_uint_eq(rep.kept_end, l.load_class_at);
    ck_assert_uint_eq(rep.bytes_lost, 4);
    ck_assert_uint_eq(rep.record_offset, l.load_class_at);
    ck_assert_uint_eq(rep.record_tag, HPROF_TAG_LOAD_CLASS);
    ck_assert_uint_eq(rep.records_lost, 1);
    ck_assert_uint_eq(rep.record_missing, 0);
    ck_assert_uint_eq(rep.unclosed_run, 0);
    /* without salvage: an error that says what to do */
    assert_unsalvaged_error_says(&b, cut, "record header: truncated");
    tb_free(&b);
}
END_TEST

START_TEST(salvage_cut_inside_a_record_body_drops_the_record)
{
    struct tbuf b;
    struct layout l;
    struct tl_counter s;
    struct hprof_salvage_report rep;
    struct hprof_error err;
    small_dump(&b, _i ? 8 : 4, &l);
    size_t cut = l.load_class_at + 9 + 3;
    lax = 1;
    ck_assert_int_eq(salvage_run(&b, cut, &s, &rep, &err), HPROF_OK);
    lax = 0;
    ck_assert_int_eq(s.strings, 1);
    ck_assert_int_eq(s.load_classes, 0);
    ck_assert_uint_eq(rep.kept_end, l.load_class_at);
    ck_assert_uint_eq(rep.bytes_lost, 12);
    ck_assert_uint_eq(rep.record_tag, HPROF_TAG_LOAD_CLASS);
    ck_assert_uint_eq(rep.records_lost, 1);
    ck_assert_uint_eq(rep.record_missing, l.segment_at - cut);
    assert_unsalvaged_error_says(&b, cut, "runs past the end of the file");
    tb_free(&b);
}
END_TEST

START_TEST(salvage_cut_inside_a_segment_header_drops_the_segment)
{
    struct tbuf b;
    struct layout l;
    struct tl_counter s;
    struct hprof_salvage_report rep;
    struct hprof_error err;
    small_dump(&b, _i ? 8 : 4, &l);
    size_t cut = l.segment_at + 6;
    lax = 1;
    ck_assert_int_eq(salvage_run(&b, cut, &s, &rep, &err), HPROF_OK);
    ck_assert_int_eq(s.segments, 0);
    ck_assert_int_eq(s.load_classes, 1);
    ck_assert_uint_eq(rep.record_offset, l.segment_at);
    ck_assert_uint_eq(rep.record_tag, HPROF_TAG_HEAP_DUMP_SEGMENT);
    ck_assert_uint_eq(rep.records_lost, 1);
    ck_assert_uint_eq(rep.bytes_lost, 6);
    /* a segment header whole, and nothing of its body */
    cut = l.segment_at + 9;
    ck_assert_int_eq(salvage_run(&b, cut, &s, &rep, &err), HPROF_OK);
    ck_assert_int_eq(s.segments, 1);
    ck_assert_int_eq(s.segment_ends, 1);
    ck_assert_uint_eq(s.last_segment_length, 0);
    ck_assert_uint_eq(rep.bytes_lost, 0);
    ck_assert_uint_eq(rep.sub_records_kept, 0);
    ck_assert_uint_eq(rep.unclosed_run, l.segment_at);
    lax = 0;
    /* an empty heap is no heap: analyzers refuse a dump without one */
    assert_nothing_to_salvage(&b, cut);
    tb_free(&b);
}
END_TEST

START_TEST(salvage_cut_inside_a_sub_record_keeps_those_before_it)
{
    struct tbuf b;
    struct layout l;
    struct tl_counter s;
    struct hprof_salvage_report rep;
    struct hprof_error err;
    small_dump(&b, _i ? 8 : 4, &l);
    for (size_t cut = l.array_at + 1; cut < l.segment_end; cut++) {
        ck_assert_int_eq(salvage_run(&b, cut, &s, &rep, &err), HPROF_OK);
        ck_assert_int_eq(s.segments, 1);
        ck_assert_int_eq(s.segment_ends, 1);      /* the heap is closed for the visitors */
        ck_assert_int_eq(s.sub_records, 3);      /* root, class, instance */
        ck_assert_uint_eq(s.last_segment_length, l.array_at - l.segment_at - 9);
        ck_assert_uint_eq(rep.kept_end, l.array_at);
        ck_assert_uint_eq(rep.bytes_lost, cut - l.array_at);
        ck_assert_uint_eq(rep.sub_records_kept, 3);
        ck_assert_uint_eq(rep.sub_records_lost, 1);
        ck_assert_uint_eq(rep.sub_tag, HPROF_PRIMITIVE_ARRAY_DUMP);
        ck_assert_uint_eq(rep.record_missing, l.segment_end - cut);
        ck_assert_uint_eq(rep.unclosed_run, l.segment_at);
        salvaged_output_verifies(b.data, cut);
    }
    /* exactly after a sub-record: nothing lost but the rest of the dump */
    ck_assert_int_eq(salvage_run(&b, l.array_at, &s, &rep, &err), HPROF_OK);
    ck_assert_uint_eq(rep.bytes_lost, 0);
    ck_assert_uint_eq(rep.sub_records_lost, 0);
    ck_assert_uint_eq(rep.sub_records_kept, 3);
    tb_free(&b);
}
END_TEST

START_TEST(salvage_between_records_closes_an_open_heap)
{
    struct tbuf b;
    struct layout l;
    struct tl_counter s;
    struct hprof_salvage_report rep;
    struct hprof_error err;
    small_dump(&b, _i ? 8 : 4, &l);
    assert_unsalvaged_error_says(&b, l.end_at, "not closed by HEAP_DUMP_END (truncated?)");
    ck_assert_int_eq(salvage_run(&b, l.end_at, &s, &rep, &err), HPROF_OK);
    ck_assert_int_eq(rep.cut, 1);
    ck_assert_uint_eq(rep.bytes_lost, 0);
    ck_assert_uint_eq(rep.record_offset, 0);
    ck_assert_uint_eq(rep.unclosed_run, l.segment_at);
    ck_assert_int_eq(s.sub_records, 4);
    salvaged_output_verifies(b.data, l.end_at);
    /* a complete dump: nothing to report, same as without salvage */
    ck_assert_int_eq(salvage_run(&b, b.len, &s, &rep, &err), HPROF_OK);
    ck_assert_int_eq(rep.cut, 0);
    ck_assert_int_eq(s.sub_records, 4);
    tb_free(&b);
}
END_TEST

START_TEST(salvage_keeps_nothing_when_no_record_is_complete)
{
    struct tbuf b;
    struct layout l;
    small_dump(&b, _i ? 8 : 4, &l);
    assert_nothing_to_salvage(&b, l.string_at + 5);
    tb_free(&b);
}
END_TEST

/* Cut between two records before the heap dump (after the STRING, after
 * the LOAD_CLASS): what is left is what runtimes write before a heap dump,
 * and no heap dump.  Read without salvage it passes for a complete dump;
 * a salvaging reader knows it for a cut there, with nothing
 * lost but the heap: strict, nothing to salvage, said at the cut. */
START_TEST(salvage_cut_between_records_before_any_heap_dump_has_nothing_to_salvage)
{
    struct tbuf b;
    struct layout l;
    struct tl_counter s;
    struct hprof_salvage_report rep;
    struct hprof_error err;
    struct hprof_verify_report vr;
    small_dump(&b, _i ? 8 : 4, &l);
    const size_t cuts[] = { l.load_class_at, l.segment_at };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        size_t cut = cuts[i];
        memset(&err, 0, sizeof err);
        ck_assert_msg(tl_verify_memory(b.data, cut, &vr, &err) == HPROF_OK, "%s", err.message);
        ck_assert_int_eq(salvage_run(&b, cut, &s, &rep, &err), HPROF_ERR_FORMAT);
        char want[128];
        snprintf(want, sizeof want, "offset 0x%zx: end of file: cut before any complete heap "
                 "sub-record: nothing to salvage", cut);
        ck_assert_str_eq(err.message, want);
        lax = 1;
        ck_assert_int_eq(salvage_run(&b, cut, &s, &rep, &err), HPROF_OK);
        lax = 0;
        ck_assert_int_eq(s.strings, 1);
        ck_assert_int_eq(s.load_classes, i);
        ck_assert_int_eq(rep.cut, 1);
        ck_assert_uint_eq(rep.input_end, cut);
        ck_assert_uint_eq(rep.kept_end, cut);
        ck_assert_uint_eq(rep.bytes_lost, 0);
        ck_assert_uint_eq(rep.records_lost, 0);
        ck_assert_uint_eq(rep.record_offset, 0);
    }
    tb_free(&b);
}
END_TEST

/* A dump with no heap dump that is no cut one: the hprof agent's profiles
 * (CPU samples, allocation sites) start with CONTROL_SETTINGS, which no
 * heap dumper writes.  Salvaged, it reads as complete, as without salvage;
 * so do the same records after the end of a heap dump. */
START_TEST(salvage_reads_a_dump_without_a_heap_dump_as_complete)
{
    static const uint8_t settings[6] = { 0, 0, 0, 2, 0, 4 }; /* CPU sampling, depth 4 */
    struct tbuf b;
    struct tl_counter s;
    struct hprof_salvage_report rep;
    struct hprof_error err;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.2");
    tb_record(&b, HPROF_TAG_CONTROL_SETTINGS, settings, sizeof settings);
    tb_string(&b, 0x10, "Thing");
    tb_load_class(&b, 1, 0x100, 0x10);
    ck_assert_msg(salvage_run(&b, b.len, &s, &rep, &err) == HPROF_OK, "%s", err.message);
    ck_assert_int_eq(s.strings, 1);
    ck_assert_int_eq(s.load_classes, 1);
    ck_assert_int_eq(rep.cut, 0);
    tb_free(&b);
    struct layout l;
    small_dump(&b, 4, &l);
    tb_string(&b, 0x20, "after the heap");
    ck_assert_msg(salvage_run(&b, b.len, &s, &rep, &err) == HPROF_OK, "%s", err.message);
    ck_assert_int_eq(rep.cut, 0);
    tb_free(&b);
}
END_TEST

/* Bytes in memory given to a stream reader, as a pipe gives them. */
struct memory_stream {
    const uint8_t *data;
    size_t len, at;
};

static int read_memory(void *ctx, void *buf, size_t len, size_t *got, struct hprof_error *err)
{
    struct memory_stream *m = ctx;
    (void)err;
    *got = len < m->len - m->at ? len : m->len - m->at;
    memcpy(buf, m->data + m->at, *got);
    m->at += *got;
    return HPROF_OK;
}

enum { BY_A_RUN, BY_THE_SHRINK, BY_THE_ONE_PASS_OF_A_STREAM, N_BY };

/* hprof_reader_ends_before_heap() after the first `len` bytes of `data`
 * are read without salvage, `by` a run of a reader of them, the
 * multi-pass shrink (whose passes read clones of it) or the one pass of a
 * stream; the read must succeed. */
static int ends_before_heap(const uint8_t *data, size_t len, int by)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct memory_stream m = { data, len, 0 };
    struct hprof_sink *sink = hprof_sink_new_memory(&err);
    struct tl_counter c;
    int rc;
    if (by == BY_THE_ONE_PASS_OF_A_STREAM)
        ck_assert_int_eq(hprof_reader_open_stream(&r, read_memory, &m, &err), HPROF_OK);
    else
        ck_assert_int_eq(hprof_reader_open_memory(&r, data, len, &err), HPROF_OK);
    if (by == BY_A_RUN) {
        tl_counter_init(&c);
        rc = hprof_reader_run(r, &c.base);
    } else {
        rc = by == BY_THE_SHRINK ? hprof_shrink(r, sink, NULL, NULL, &err)
                                 : hprof_shrink_one_pass(r, sink, NULL, NULL, &err);
    }
    ck_assert_msg(rc == HPROF_OK, "%zu bytes, read by %d: %s", len, by, err.message);
    int ends = hprof_reader_ends_before_heap(r);
    hprof_reader_free(r);
    hprof_sink_free(sink);
    return ends;
}

/* Cut between two records before its heap dump (after the STRING, after
 * the LOAD_CLASS), a dump passes for complete without salvage, but its
 * reader says after a run that it ended before any heap dump, holding
 * only what runtimes write before one: the caller may warn.  The whole
 * dump, one with names after its heap, and a profile without a heap dump
 * (CONTROL_SETTINGS first) did not. */
START_TEST(reader_says_when_a_dump_ended_before_its_heap_dump)
{
    static const uint8_t settings[6] = { 0, 0, 0, 2, 0, 4 };
    struct tbuf b, after, profile;
    struct layout l;
    small_dump(&b, 4, &l);
    small_dump(&after, 4, &l);
    tb_string(&after, 0x20, "after the heap");
    tb_init(&profile, 4);
    tb_header(&profile, "JAVA PROFILE 1.0.2");
    tb_record(&profile, HPROF_TAG_CONTROL_SETTINGS, settings, sizeof settings);
    tb_string(&profile, 0x10, "Thing");
    tb_load_class(&profile, 1, 0x100, 0x10);
    for (int by = 0; by < N_BY; by++) {
        ck_assert_int_eq(ends_before_heap(b.data, l.load_class_at, by), 1);
        ck_assert_int_eq(ends_before_heap(b.data, l.segment_at, by), 1);
        ck_assert_int_eq(ends_before_heap(b.data, b.len, by), 0);
        ck_assert_int_eq(ends_before_heap(after.data, after.len, by), 0);
        ck_assert_int_eq(ends_before_heap(profile.data, profile.len, by), 0);
    }
    tb_free(&b);
    tb_free(&after);
    tb_free(&profile);
}
END_TEST

/* Each class after the cut takes its subclasses and their instances:
 * 0x300 extends 0x310 which is dumped after the cut; 0x320's instance
 * 0x330 comes before its class, which is after the cut too. */
START_TEST(salvage_drops_classes_and_instances_whose_class_never_arrived)
{
    static const uint8_t one_int[] = { HPROF_TYPE_INT };
    uint8_t values[4] = { 0 };
    struct tbuf b;
    struct tl_counter s;
    struct hprof_salvage_report rep;
    struct hprof_error err;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&b, 0x100, 0, one_int, 1);
    tb_instance(&b, 0x101, 0x100, values, 4);       /* kept */
    tb_class(&b, 0x300, 0x310, NULL, 0);            /* superclass after the cut */
    tb_instance(&b, 0x301, 0x300, values, 4);       /* its class is dropped */
    tb_instance(&b, 0x330, 0x320, values, 4);       /* its class is after the cut */
    tb_u1(&b, HPROF_ROOT_UNKNOWN);
    tb_id(&b, 0x330);                               /* dangles after salvage */
    size_t cut = b.len + 3;
    tb_class(&b, 0x310, 0, NULL, 0);
    tb_class(&b, 0x320, 0, one_int, 1);
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    ck_assert_int_eq(salvage_run(&b, cut, &s, &rep, &err), HPROF_OK);
    ck_assert_int_eq(s.classes, 1);
    ck_assert_int_eq(s.instances, 1);
    ck_assert_uint_eq(rep.classes_dropped, 1);
    ck_assert_uint_eq(rep.instances_dropped, 2);
    ck_assert_uint_eq(rep.sub_records_kept, 6);
    salvaged_output_verifies(b.data, cut);
    /* hprof_verify() of the salvaged part counts the dangling root */
    struct hprof_verify_report vr;
    verify_salvaged(&b, cut, &vr);
    ck_assert_uint_eq(vr.dangling_by_kind[HPROF_REF_ROOT], 1);
    ck_assert_uint_eq(vr.instances, 1);
    /* the whole dump drops nothing */
    ck_assert_int_eq(salvage_run(&b, b.len, &s, &rep, &err), HPROF_OK);
    ck_assert_int_eq(s.instances, 3);
    ck_assert_uint_eq(rep.instances_dropped, 0);
    tb_free(&b);
}
END_TEST

/* ART dumps the class of byte[] among the objects: a cut before it would
 * leave byte arrays (String contents) with no class for analyzers to find
 * by name.  It is rebuilt first in the first heap record, from LOAD_CLASS;
 * char[], named too but with no array left, is not. */
START_TEST(salvage_rebuilds_a_primitive_array_class_that_never_arrived)
{
    struct tbuf b;
    struct tl_counter s;
    struct hprof_salvage_report rep;
    struct hprof_error err;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_string(&b, 0x10, "java.lang.Object");
    tb_string(&b, 0x11, "byte[]");
    tb_string(&b, 0x12, "char[]");
    tb_load_class(&b, 1, 0x100, 0x10);
    tb_load_class(&b, 2, 0x400, 0x11);
    tb_load_class(&b, 3, 0x500, 0x12);
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&b, 0x100, 0, NULL, 0);
    tb_prim_array(&b, 0x200, HPROF_TYPE_BYTE, 3, "abc");
    size_t cut = b.len + 2;
    tb_class(&b, 0x400, 0x100, NULL, 0);
    tb_class(&b, 0x500, 0x100, NULL, 0);
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    ck_assert_int_eq(salvage_run(&b, cut, &s, &rep, &err), HPROF_OK);
    ck_assert_uint_eq(rep.array_classes_rebuilt, 1);
    ck_assert_uint_eq(rep.arrays_dropped, 0);
    ck_assert_int_eq(s.classes, 2);
    ck_assert_int_eq(s.sub_records, 3);
    salvaged_output_verifies(b.data, cut);
    struct hprof_verify_report vr;
    verify_salvaged(&b, cut, &vr);
    ck_assert_uint_eq(vr.class_dumps, 2);
    ck_assert_uint_eq(vr.primitive_arrays, 1);
    tb_free(&b);
}
END_TEST

START_TEST(salvage_still_reports_a_corrupt_sub_record_before_the_cut)
{
    struct tbuf b;
    struct tl_counter s;
    struct hprof_salvage_report rep;
    struct hprof_error err;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_u1(&b, HPROF_ROOT_UNKNOWN);
    tb_id(&b, 0x100);
    tb_u1(&b, 0x77); /* no such sub-record */
    tb_id(&b, 0x100);
    tb_u1(&b, HPROF_ROOT_UNKNOWN);
    tb_id(&b, 0x100);
    tb_segment_end(&b);
    ck_assert_int_eq(salvage_run(&b, b.len - 2, &s, &rep, &err), HPROF_ERR_FORMAT);
    ck_assert_msg(strstr(err.message, "unknown sub-record tag 0x77") != NULL, "%s", err.message);
    tb_free(&b);
}
END_TEST

/* Every prefix of the small dump: with salvage, a valid dump comes out
 * of every one that holds a complete record; without, an error unless
 * the prefix is itself a complete dump. */
START_TEST(salvage_every_prefix_of_a_small_dump)
{
    struct tbuf b;
    struct layout l;
    struct tl_counter s;
    struct hprof_salvage_report rep;
    struct hprof_error err;
    struct hprof_verify_report vr;
    small_dump(&b, _i ? 8 : 4, &l);
    for (size_t cut = l.header_end; cut <= b.len; cut++) {
        int whole = cut == l.load_class_at || cut == l.segment_at || cut == b.len;
        memset(&err, 0, sizeof err);
        int rc = tl_verify_memory(b.data, cut, &vr, &err);
        if (whole) {
            ck_assert_msg(rc == HPROF_OK, "cut at %zu: %s", cut, err.message);
            continue;
        }
        /* a header alone holds nothing salvage could keep */
        ck_assert_msg(rc == (cut == l.header_end ? HPROF_ERR_FORMAT : HPROF_ERR_TRUNCATED),
                      "cut at %zu: %d: %s", cut, rc, err.message);
        ck_assert_msg(strstr(err.message, "salvage") == NULL, "cut at %zu: %s", cut,
                      err.message);
        rc = salvage_run(&b, cut, &s, &rep, &err);
        if (cut < l.class_at) { /* not one heap sub-record complete */
            ck_assert_int_eq(rc, HPROF_ERR_FORMAT);
            continue;
        }
        ck_assert_msg(rc == HPROF_OK, "cut at %zu: %s", cut, err.message);
        ck_assert_int_eq(rep.cut, 1);
        ck_assert_uint_eq(rep.input_end, cut);
        ck_assert_uint_eq(rep.bytes_lost, cut - rep.kept_end);
        salvaged_output_verifies(b.data, cut);
    }
    tb_free(&b);
}
END_TEST

/* ---- Fixtures --------------------------------------------------------------- */

/* Offsets of records and sub-records, to cut just inside and after them. */
struct marks {
    struct hprof_visitor base;
    uint64_t records[64], subs[64];
    size_t n_records, n_subs, seen_records, seen_subs;
};

/* Keep every k-th offset seen, with k growing so that at most 64 stay. */
static void mark(uint64_t *list, size_t *n, size_t *seen, uint64_t offset)
{
    (*seen)++;
    if (*n < 64)
        list[(*n)++] = offset;
    else if (*seen % 97 == 0)
        list[(*seen / 97) % 64] = offset;
}

static int mark_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct marks *m = (struct marks *)v;
    mark(m->records, &m->n_records, &m->seen_records, s->offset);
    return HPROF_OK;
}

static int mark_segment(struct hprof_visitor *v, const struct hprof_segment *s)
{
    struct marks *m = (struct marks *)v;
    mark(m->records, &m->n_records, &m->seen_records, s->offset);
    return HPROF_OK;
}

static int mark_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    struct marks *m = (struct marks *)v;
    mark(m->subs, &m->n_subs, &m->seen_subs, o->offset);
    return HPROF_OK;
}

static int mark_class(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    struct marks *m = (struct marks *)v;
    mark(m->subs, &m->n_subs, &m->seen_subs, c->offset);
    return HPROF_OK;
}

static int mark_array(struct hprof_visitor *v, const struct hprof_primitive_array *a)
{
    struct marks *m = (struct marks *)v;
    if (a->first == 0)
        mark(m->subs, &m->n_subs, &m->seen_subs, a->offset);
    return HPROF_SKIP;
}

static const struct hprof_visitor_ops mark_ops = {
    .string = mark_string,
    .heap_begin = mark_segment,
    .instance = mark_instance,
    .class_dump = mark_class,
    .primitive_array = mark_array,
};

/* A fixture, whole, in memory. */
static uint8_t *load_fixture(int i, size_t *len)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    int fd = -1;
    ck_assert_msg(tl_open_reader(tl_fixtures[i], &fd, &r, &err) == HPROF_OK, "%s",
                  err.message);
    *len = (size_t)hprof_reader_size(r);
    uint8_t *data = malloc(*len);
    ck_assert_ptr_nonnull(data);
    ck_assert_int_eq(hprof_reader_pread(r, 0, data, *len), HPROF_OK);
    tl_close_reader(fd, r);
    return data;
}

/* The shrink of the first `len` bytes with salvage, on `threads`. */
static uint8_t *shrink_cut(const uint8_t *data, size_t len, unsigned threads, size_t *out_len)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct hprof_shrink_options o = { .threads = threads };
    struct hprof_sink *sink = hprof_sink_new_memory(&err);
    ck_assert_int_eq(hprof_reader_open_memory(&r, data, len, &err), HPROF_OK);
    hprof_reader_set_salvage(r, 1);
    int rc = hprof_shrink(r, sink, &o, NULL, &err);
    if (rc == HPROF_ERR_FORMAT && strstr(err.message, "nothing to salvage") != NULL) {
        hprof_reader_free(r);
        hprof_sink_free(sink);
        return NULL;
    }
    ck_assert_msg(rc == HPROF_OK, "cut at %zu, %u threads: %s", len, threads, err.message);
    ck_assert_int_eq(hprof_sink_finish(sink), HPROF_OK);
    const uint8_t *out = hprof_sink_memory_data(sink, out_len);
    uint8_t *copy = malloc(*out_len);
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, out, *out_len);
    hprof_reader_free(r);
    hprof_sink_free(sink);
    return copy;
}

static void cut_and_check(const uint8_t *data, size_t len, size_t cut, int threaded)
{
    struct hprof_error err = { 0 };
    struct hprof_verify_report vr;
    size_t n1, n2;
    uint8_t *one = shrink_cut(data, cut, 1, &n1);
    if (one == NULL)
        return;
    ck_assert_msg(tl_verify_memory(one, n1, &vr, &err) == HPROF_OK,
                  "cut at %zu of %zu: the output does not verify: %s", cut, len, err.message);
    if (threaded) { /* workers, the cut segment among their jobs */
        uint8_t *two = shrink_cut(data, cut, 3, &n2);
        ck_assert_msg(n1 == n2 && memcmp(one, two, n1) == 0,
                      "cut at %zu: 1 and 3 threads differ", cut);
        free(two);
    }
    free(one);
}

START_TEST(salvage_fixture_cuts_shrink_to_valid_dumps)
{
    if (!tl_fixture_available(_i))
        return;
    size_t len;
    uint8_t *data = load_fixture(_i, &len);
    struct marks m = { .base = { &mark_ops, NULL } };
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    ck_assert_int_eq(hprof_reader_open_memory(&r, data, len, &err), HPROF_OK);
    ck_assert_int_eq(hprof_reader_run(r, &m.base), HPROF_OK);
    hprof_reader_free(r);
    /* spread over the file */
    for (int k = 1; k <= 12; k++)
        cut_and_check(data, len, len / 13 * (size_t)k + (size_t)k, k % 4 == 0);
    /* at, just inside and just after record and sub-record headers */
    for (size_t k = 0; k < 6 && m.n_records > 0; k++) {
        size_t at = (size_t)m.records[(k * 7 + 3) % m.n_records];
        static const size_t d[] = { 0, 1, 8, 9, 10 };
        for (size_t j = 0; j < sizeof d / sizeof *d; j++)
            if (at + d[j] < len)
                cut_and_check(data, len, at + d[j], 0);
    }
    for (size_t k = 0; k < 6 && m.n_subs > 0; k++) {
        size_t at = (size_t)m.subs[(k * 11 + 5) % m.n_subs];
        static const size_t d[] = { 0, 1, 5, 20 };
        for (size_t j = 0; j < sizeof d / sizeof *d; j++)
            if (at + d[j] < len)
                cut_and_check(data, len, at + d[j], j == 1);
    }
    free(data);
}
END_TEST

/* A cut file read through a mapping and a read-ahead thread, as the tools
 * read: the same output as from memory. */
START_TEST(salvage_mapped_file_gives_the_same_output)
{
    size_t len, n1, n2;
    uint8_t *data = load_fixture(0, &len);
    size_t cut = len / 3 * 2 + 7;
    uint8_t *expect = shrink_cut(data, cut, 1, &n1);
    char *path = tl_temp_file(data, cut, ".hprof");
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct hprof_shrink_options o = { .threads = 2 };
    struct hprof_sink *sink = hprof_sink_new_memory(&err);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(hprof_reader_open_fd(&r, fd, &err), HPROF_OK);
    ck_assert_int_eq(hprof_reader_map(r), HPROF_OK);
    hprof_reader_set_salvage(r, 1);
    ck_assert_msg(hprof_shrink(r, sink, &o, NULL, &err) == HPROF_OK, "%s", err.message);
    ck_assert_int_eq(hprof_sink_finish(sink), HPROF_OK);
    const uint8_t *got = hprof_sink_memory_data(sink, &n2);
    ck_assert_msg(n1 == n2 && memcmp(expect, got, n1) == 0, "mapped and memory differ");
    ck_assert_int_eq(hprof_reader_salvage_report(r)->cut, 1);
    hprof_reader_free(r);
    hprof_sink_free(sink);
    close(fd);
    unlink(path);
    free(path);
    free(expect);
    free(data);
}
END_TEST

/* A compressed input cut at nine tenths of it: with HPROF_INPUT_SALVAGE,
 * what it decompressed to (a prefix of the dump; a zstd block cut in two
 * is lost whole, so the fixture has a few of 128 KiB) and where it
 * stopped; without, an error that says it is cut short (the code salvage
 * answers). */
static const struct cut_format {
    const char *compress, *suffix, *truncated;
} cut_formats[] = {
    { "gzip", ".hprof.gz", "(compressed): gzip input is truncated" },
    { "zstd -q", ".hprof.zst", "(compressed): zstd input is truncated" },
};

static void cut_where(const struct hprof_input_info *info, int format, int *cut, uint64_t *at)
{
    *cut = format == 0 ? info->gzip_cut : info->zstd_cut;
    *at = format == 0 ? info->gzip_cut_offset : info->zstd_cut_offset;
    /* the other format's fields say nothing */
    ck_assert_int_eq(format == 0 ? info->zstd_cut : info->gzip_cut, 0);
}

START_TEST(salvage_keeps_what_a_cut_compressed_input_decompressed_to)
{
    const struct cut_format *f = &cut_formats[_i];
    size_t len;
    uint8_t *data = load_fixture(2, &len);
    char *plain = tl_temp_file(data, len, ".hprof");
    char *cut = tl_temp_path(f->suffix);
    ck_assert_int_eq(tl_system("%s -c '%s' > '%s.all' && head -c $(($(wc -c < '%s.all') * 9 / 10)) "
                               "'%s.all' > '%s'; rm -f '%s.all'",
                               f->compress, plain, cut, cut, cut, cut, cut), 0);
    struct hprof_error err = { 0 };
    struct hprof_input_info info;
    int fd = -1, was_cut;
    uint64_t at;
    ck_assert_int_eq(hprof_input_open_flags(cut, 0, &fd, &info, &err), HPROF_ERR_TRUNCATED);
    ck_assert_msg(strstr(err.message, f->truncated) != NULL, "%s", err.message);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(hprof_input_open_flags(cut, HPROF_INPUT_SALVAGE, &fd, &info, &err),
                     HPROF_OK);
    cut_where(&info, _i, &was_cut, &at);
    ck_assert_int_eq(was_cut, 1);
    ck_assert_int_eq(info.spooled, 1);
    struct stat st;
    ck_assert_int_eq(stat(cut, &st), 0);
    ck_assert_uint_le(at, (uint64_t)st.st_size);
    off_t n = lseek(fd, 0, SEEK_END);
    ck_assert_int_gt(n, 0);
    ck_assert_int_lt(n, (off_t)len);
    uint8_t *got = malloc((size_t)n);
    ck_assert_ptr_nonnull(got);
    ck_assert_int_eq(pread(fd, got, (size_t)n, 0), n);
    ck_assert_msg(memcmp(got, data, (size_t)n) == 0, "not a prefix of the dump");
    close(fd);
    unlink(plain);
    unlink(cut);
    free(got);
    free(plain);
    free(cut);
    free(data);
}
END_TEST

/* ---- A zero-filled tail, however the input comes ---------------------------- */

/* The ways an input reaches the tools: the file itself, gzip- or
 * zstd-compressed, or any of these through a FIFO, read once as a pipe is
 * (a plain one copied as it comes). */
enum { FROM_FILE, FROM_GZIP, FROM_ZSTD, FROM_FIFO, FROM_GZIP_FIFO, FROM_ZSTD_FIFO, N_FROM };
static const char *const from_names[N_FROM] = { "file", ".gz", ".zst", "pipe", ".gz pipe",
                                                ".zst pipe" };

/* What a tool gets from an input: the first failure's code and message,
 * the salvage report, and the size of what the reader reads. */
struct outcome {
    int rc;
    char message[sizeof ((struct hprof_error *)0)->message];
    struct hprof_salvage_report rep;
    uint64_t size;
};

/* `path` opened as the tools open it (hprof_input_open_flags()), read by
 * a reader that salvages when `flags` says so, through hprof_verify(). */
static void read_as_the_tools_do(const char *path, unsigned flags, struct outcome *o)
{
    struct hprof_error err = { 0 };
    struct hprof_input_info info;
    struct hprof_reader *r = NULL;
    struct hprof_verify_report vr;
    int fd = -1;
    memset(o, 0, sizeof *o);
    o->rc = hprof_input_open_flags(path, flags, &fd, &info, &err);
    if (o->rc == HPROF_OK)
        o->rc = hprof_reader_open_fd(&r, fd, &err);
    if (o->rc == HPROF_OK) {
        o->size = hprof_reader_size(r);
        hprof_reader_set_salvage(r, (flags & HPROF_INPUT_SALVAGE) != 0);
        o->rc = hprof_verify(r, &vr, &err);
        o->rep = *hprof_reader_salvage_report(r);
    }
    snprintf(o->message, sizeof o->message, "%s", err.message);
    hprof_reader_free(r);
    if (fd >= 0)
        close(fd);
}

/* read_as_the_tools_do() on the bytes of `path` written into a FIFO by a
 * child, which stops when the reader stops reading. */
static void read_through_a_fifo(const char *path, unsigned flags, struct outcome *o)
{
    char *fifo = tl_temp_path(".fifo");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        signal(SIGPIPE, SIG_IGN);
        int in = open(path, O_RDONLY), out = open(fifo, O_WRONLY);
        char buf[65536];
        ssize_t n;
        while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0 &&
               write(out, buf, (size_t)n) == n)
            ;
        _exit(0);
    }
    read_as_the_tools_do(fifo, flags, o);
    waitpid(child, NULL, 0);
    unlink(fifo);
    free(fifo);
}

/* The input `plain` read as it comes from `from`, with `flags`, must give
 * what the file gives (`want`): the code and message, and when it reads,
 * the same bytes and salvage report.  Unless `exact`, a failure without
 * salvage need only be one: the copy stops where the framing meets zeros
 * (a cut input, which salvage reads), where the reader of the file may
 * fail earlier, on the zeros inside the record the cut went through. */
static void same_as_the_file(const char *plain, int from, unsigned flags,
                             const struct outcome *want, const char *what, int exact)
{
    static const char *const suffix[] = { "", ".gz", ".zst" };
    char *path = tl_temp_path(suffix[from % 3]);
    if (from % 3 != FROM_FILE)
        ck_assert_int_eq(tl_system("%s -c '%s' > '%s'", from % 3 == FROM_GZIP ? "gzip" : "zstd -q",
                                   plain, path), 0);
    const char *input = from % 3 == FROM_FILE ? plain : path;
    struct outcome o;
    if (from >= FROM_FIFO)
        read_through_a_fifo(input, flags, &o);
    else
        read_as_the_tools_do(input, flags, &o);
    if (!exact && !flags && want->rc != HPROF_OK)
        ck_assert_msg(o.rc == HPROF_ERR_TRUNCATED &&
                          strstr(o.message, "zero bytes where a record should start") != NULL,
                      "%s from a %s: %d \"%s\"", what, from_names[from], o.rc, o.message);
    else
        ck_assert_msg(o.rc == want->rc && strcmp(o.message, want->message) == 0,
                      "%s from a %s%s: %d \"%s\"; from the file: %d \"%s\"", what,
                      from_names[from], flags ? ", salvaging" : "", o.rc, o.message, want->rc,
                      want->message);
    if (o.rc == HPROF_OK) {
        ck_assert_uint_eq(o.size, want->size);
        ck_assert_uint_eq(o.rep.zero_tail, want->rep.zero_tail);
        ck_assert_uint_eq(o.rep.input_end, want->rep.input_end);
        ck_assert_int_eq(o.rep.cut, want->rep.cut);
        ck_assert_uint_eq(o.rep.kept_end, want->rep.kept_end);
        ck_assert_uint_eq(o.rep.sub_records_kept, want->rep.sub_records_kept);
    }
    unlink(path);
    free(path);
}

static int note_segment(struct hprof_visitor *v, const struct hprof_segment *s)
{
    struct marks *m = (struct marks *)v;
    if (m->n_records < 64)
        m->records[m->n_records++] = s->offset;
    return HPROF_OK;
}

/* A dump whose tail was zero-filled (a download preallocated, a writer
 * that crashed after fallocate()): whole with zeros after it, cut at the
 * start of a heap record or inside one and zero-filled past its size, and
 * zeros that are no tail (a byte follows them).  From a compressed file,
 * a pipe or both, salvaging, it reads as the file does: the copy holds the
 * zeros, which salvage takes for the end of the data alike, or it fails
 * with the file's code and message.  Without salvage it fails as a cut
 * input, with the file's message where the zeros start at a record. */
START_TEST(salvage_zero_filled_tail_reads_the_same_however_the_input_comes)
{
    if (!tl_fixture_available(_i))
        return;
    size_t len;
    uint8_t *data = load_fixture(_i, &len);
    struct marks m = { .base = { &(const struct hprof_visitor_ops){ .heap_begin = note_segment },
                                 NULL } };
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    ck_assert_int_eq(hprof_reader_open_memory(&r, data, len, &err), HPROF_OK);
    ck_assert_int_eq(hprof_reader_run(r, &m.base), HPROF_OK);
    hprof_reader_free(r);
    ck_assert_uint_gt(m.n_records, 0);
    const struct {
        const char *what;
        size_t keep, size;      /* bytes of the dump kept, and the size zero-filled to */
        int byte_after;         /* a byte that is not zero ends the file */
        int exact;              /* without salvage too, the file's message */
    } cases[] = {
        { "the whole dump and zeros", len, len + 100000, 0, 1 },
        { "a dump cut at a heap record, zero-filled", (size_t)m.records[m.n_records / 2],
          len + 4096, 0, 1 },
        { "a dump cut inside a record, zero-filled", len / 2 + 7, len + 4096, 0, 0 },
        { "zeros that a byte follows", len, len + 100000, 1, 1 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        uint8_t *bytes = calloc(1, cases[c].size + 1);
        ck_assert_ptr_nonnull(bytes);
        memcpy(bytes, data, cases[c].keep);
        size_t size = cases[c].size;
        if (cases[c].byte_after)
            bytes[size++] = 'x';
        char *plain = tl_temp_file(bytes, size, ".hprof");
        for (unsigned flags = 0; flags <= HPROF_INPUT_SALVAGE; flags += HPROF_INPUT_SALVAGE) {
            struct outcome want;
            read_as_the_tools_do(plain, flags, &want);
            if (flags && !cases[c].byte_after && want.rc == HPROF_OK)
                ck_assert_msg(want.rep.zero_tail > 0, "%s: no zero-filled tail", cases[c].what);
            for (int from = FROM_GZIP; from < N_FROM; from++)
                same_as_the_file(plain, from, flags, &want, cases[c].what, cases[c].exact);
        }
        unlink(plain);
        free(plain);
        free(bytes);
    }
    free(data);
}
END_TEST

static Suite *salvage_suite(void)
{
    Suite *s = suite_create("salvage");
    TCase *t = tcase_create("cuts");
    tcase_set_timeout(t, 120);
    tcase_add_loop_test(t, salvage_cut_inside_a_record_header_drops_the_record, 0, 2);
    tcase_add_loop_test(t, salvage_cut_inside_a_record_body_drops_the_record, 0, 2);
    tcase_add_loop_test(t, salvage_cut_inside_a_segment_header_drops_the_segment, 0, 2);
    tcase_add_loop_test(t, salvage_cut_inside_a_sub_record_keeps_those_before_it, 0, 2);
    tcase_add_loop_test(t, salvage_between_records_closes_an_open_heap, 0, 2);
    tcase_add_loop_test(t, salvage_keeps_nothing_when_no_record_is_complete, 0, 2);
    tcase_add_loop_test(t, salvage_cut_between_records_before_any_heap_dump_has_nothing_to_salvage,
                        0, 2);
    tcase_add_test(t, salvage_reads_a_dump_without_a_heap_dump_as_complete);
    tcase_add_test(t, reader_says_when_a_dump_ended_before_its_heap_dump);
    tcase_add_test(t, salvage_drops_classes_and_instances_whose_class_never_arrived);
    tcase_add_test(t, salvage_rebuilds_a_primitive_array_class_that_never_arrived);
    tcase_add_test(t, salvage_still_reports_a_corrupt_sub_record_before_the_cut);
    tcase_add_loop_test(t, salvage_every_prefix_of_a_small_dump, 0, 2);
    tcase_add_loop_test(t, salvage_fixture_cuts_shrink_to_valid_dumps, 0, TL_N_FIXTURES);
    tcase_add_test(t, salvage_mapped_file_gives_the_same_output);
    tcase_add_loop_test(t, salvage_keeps_what_a_cut_compressed_input_decompressed_to, 0, 2);
    tcase_add_loop_test(t, salvage_zero_filled_tail_reads_the_same_however_the_input_comes, 0,
                        TL_N_FIXTURES);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(salvage_suite());
}
