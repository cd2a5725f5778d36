/*
 * check_names.c - the "names in use" rewrite (src/rewrite/names.c): the
 * collect visitor finds every kind of reference to a STRING, the filter
 * drops exactly the others, and after it no remaining record refers to a
 * name that is gone, on hand-made and generated dumps and every fixture.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "used_names.h"
#include "testlib.h"

/* Collect over `len` bytes of dump into `plan` (initialised here). */
static int collect(const uint8_t *data, size_t len, struct names_plan *plan,
                   struct hprof_error *err)
{
    struct hprof_reader *r;
    struct names_collect col;
    ck_assert_int_eq(names_plan_init(plan), HPROF_OK);
    names_collect_init(&col, plan, err);
    int rc = hprof_reader_open_memory(&r, data, len, err);
    if (rc == HPROF_OK)
        rc = hprof_reader_run(r, &col.base);
    hprof_reader_free(r);
    return rc;
}

/* The write pass: reader -> names filter -> writer, into memory. */
static uint8_t *filter(const uint8_t *data, size_t len, const struct names_plan *plan,
                       struct names_filter *f, size_t *out_len)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    struct hprof_sink *sink = hprof_sink_new_memory(&err);
    struct hprof_writer *w = hprof_writer_new(sink, &err);
    names_filter_init(f, plan);
    f->base.next = hprof_writer_visitor(w);
    ck_assert_int_eq(hprof_reader_open_memory(&r, data, len, &err), HPROF_OK);
    ck_assert_msg(hprof_reader_run(r, &f->base) == HPROF_OK, "%s", err.message);
    ck_assert_int_eq(hprof_sink_finish(sink), HPROF_OK);
    const uint8_t *d = hprof_sink_memory_data(sink, out_len);
    uint8_t *out = malloc(*out_len);
    memcpy(out, d, *out_len);
    hprof_reader_free(r);
    hprof_writer_free(w);
    hprof_sink_free(sink);
    return out;
}

/* Every STRING id of a dump, and their count. */
struct string_ids {
    struct hprof_visitor base;
    struct idmap ids;
    uint64_t count, bytes;
};

static int on_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct string_ids *x = (struct string_ids *)v;
    x->count++;
    x->bytes += s->length;
    ck_assert_int_eq(idmap_put(&x->ids, s->id, 0), HPROF_OK);
    return HPROF_OK;
}

static const struct hprof_visitor_ops string_ops = { .string = on_string };

static void string_ids(const uint8_t *data, size_t len, struct string_ids *x)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    memset(x, 0, sizeof *x);
    x->base.ops = &string_ops;
    ck_assert_int_eq(idmap_init(&x->ids, 0), HPROF_OK);
    ck_assert_int_eq(hprof_reader_open_memory(&r, data, len, &err), HPROF_OK);
    ck_assert_int_eq(hprof_reader_run(r, &x->base), HPROF_OK);
    hprof_reader_free(r);
}

/* The properties of one filtered dump: what was kept is what is in use,
 * the counts add up, and every name a record of the output refers to is
 * in the output.  @return the filter's counts in *f. */
static void check_filtered(const uint8_t *in, size_t len, struct names_filter *f,
                           struct names_plan *plan, size_t *out_len_p)
{
    struct hprof_error err = { 0 };
    ck_assert_msg(collect(in, len, plan, &err) == HPROF_OK, "%s", err.message);
    size_t out_len;
    uint8_t *out = filter(in, len, plan, f, &out_len);
    struct string_ids before, after;
    string_ids(in, len, &before);
    string_ids(out, out_len, &after);
    ck_assert_uint_eq(f->kept.count + f->dropped.count, before.count);
    ck_assert_uint_eq(f->kept.bytes + f->dropped.bytes, before.bytes);
    ck_assert_uint_eq(after.count, f->kept.count);
    /* the writer alone drops empty segments (ART): compare with its output */
    uint8_t *plain;
    size_t plain_len;
    ck_assert_int_eq(tl_roundtrip_memory(in, len, 0, &plain, &plain_len, &err), HPROF_OK);
    ck_assert_uint_eq(out_len + f->dropped_record_bytes, plain_len);
    free(plain);
    /* no name in use is gone: every id a remaining record refers to ... */
    struct names_plan used_after;
    ck_assert_int_eq(collect(out, out_len, &used_after, &err), HPROF_OK);
    ck_assert_uint_eq(used_after.references, plan->references);
    for (size_t s = 0; s <= used_after.used.mask; s++) {
        uint64_t id = used_after.used.keys[s];
        if (id == 0)
            continue;
        /* ... has its STRING in the output if it had one in the input */
        if (idmap_has(&before.ids, id))
            ck_assert_msg(idmap_has(&after.ids, id), "name 0x%llx dropped but in use",
                          (unsigned long long)id);
    }
    /* and no STRING left is unused */
    for (size_t s = 0; s <= after.ids.mask; s++)
        if (after.ids.keys[s] != 0)
            ck_assert(names_plan_in_use(plan, after.ids.keys[s]));
    names_plan_free(&used_after);
    idmap_free(&before.ids);
    idmap_free(&after.ids);
    free(out);
    *out_len_p = out_len;
}

/* A dump with one name used by each kind of reference (ids 1-11) and three
 * that nothing uses (0x21-0x23), one of them after the records. */
static void dump_with_every_reference(struct tbuf *b, unsigned ids)
{
    tb_init(b, ids);
    tb_header(b, "JAVA PROFILE 1.0.3");
    static const char *const used[] = { "com.example.Thing", "CONSTANT", "count", "run",
                                        "()V", "Thing.java", "main", "system", "",
                                        "zygote", "app" };
    for (unsigned i = 0; i < 11; i++)
        tb_string(b, i + 1, used[i]);
    tb_string(b, 0x21, "SELECT * FROM accounts");
    tb_string(b, 0x22, "https://example.com/secret");
    tb_load_class(b, 1, 0x100, 1);
    /* STACK_FRAME: frame, method, signature, source, class serial, line */
    uint8_t frame[4 * 8 + 8];
    struct tbuf fb;
    tb_init(&fb, ids);
    tb_id(&fb, 0x500);
    tb_id(&fb, 4);
    tb_id(&fb, 5);
    tb_id(&fb, 6);
    tb_u4(&fb, 1);
    tb_u4(&fb, 12);
    memcpy(frame, fb.data, fb.len);
    tb_record(b, HPROF_TAG_STACK_FRAME, frame, (uint32_t)fb.len);
    tb_free(&fb);
    /* START_THREAD: serial, thread, stack serial, name, group, parent */
    tb_init(&fb, ids);
    tb_u4(&fb, 1);
    tb_id(&fb, 0x600);
    tb_u4(&fb, 1);
    tb_id(&fb, 7);
    tb_id(&fb, 8);
    tb_id(&fb, 9);
    tb_record(b, HPROF_TAG_START_THREAD, fb.data, (uint32_t)fb.len);
    tb_free(&fb);
    tb_segment_begin(b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_u1(b, HPROF_HEAP_DUMP_INFO);
    tb_u4(b, 'Z');
    tb_id(b, 10);
    tb_u1(b, HPROF_ROOT_UNKNOWN);   /* an info with nothing after it is not written */
    tb_id(b, 0x100);
    tb_u1(b, HPROF_HEAP_DUMP_INFO);
    tb_u4(b, 'A');
    tb_id(b, 11);
    /* CLASS_DUMP with one static (name 2) and one instance field (name 3) */
    tb_u1(b, HPROF_CLASS_DUMP);
    tb_id(b, 0x100);
    tb_u4(b, 0);
    for (int i = 0; i < 6; i++)
        tb_id(b, 0);
    tb_u4(b, 4);
    tb_u2(b, 0);            /* constants */
    tb_u2(b, 1);            /* statics */
    tb_id(b, 2);
    tb_u1(b, HPROF_TYPE_INT);
    tb_u4(b, 42);
    tb_u2(b, 1);            /* instance fields */
    tb_id(b, 3);
    tb_u1(b, HPROF_TYPE_INT);
    tb_segment_end(b);
    tb_record(b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    tb_string(b, 0x23, "an unused name after the heap");
}

/* Loop: 4- and 8-byte ids. */
START_TEST(names_keeps_each_kind_of_reference_and_drops_the_rest)
{
    unsigned ids = _i ? 8 : 4;
    struct tbuf b;
    struct names_plan plan;
    struct names_filter f;
    size_t out_len;
    dump_with_every_reference(&b, ids);
    check_filtered(b.data, b.len, &f, &plan, &out_len);
    ck_assert_uint_eq(names_plan_count(&plan), 11);
    ck_assert_uint_eq(plan.references, 11);
    for (uint64_t id = 1; id <= 11; id++)
        ck_assert_msg(names_plan_in_use(&plan, id), "name %llu not in use", (unsigned long long)id);
    ck_assert(!names_plan_in_use(&plan, 0x21));
    ck_assert(!names_plan_in_use(&plan, 0));
    ck_assert_uint_eq(f.kept.count, 11);
    ck_assert_uint_eq(f.dropped.count, 3);
    ck_assert_uint_eq(f.dropped.bytes, strlen("SELECT * FROM accounts") +
                                       strlen("https://example.com/secret") +
                                       strlen("an unused name after the heap"));
    ck_assert_uint_eq(f.dropped_record_bytes, 3 * (9 + ids) + f.dropped.bytes);
    ck_assert_uint_eq(out_len, b.len - f.dropped_record_bytes);
    names_plan_free(&plan);
    tb_free(&b);
}
END_TEST

/* The collect visitor forwards what it sees: a chain behind it gets every
 * record (here a STRING counter behind it counts them all). */
START_TEST(names_collect_passes_every_record_on)
{
    struct tbuf b;
    struct names_plan plan;
    struct names_collect col;
    struct string_ids x;
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    dump_with_every_reference(&b, 4);
    memset(&x, 0, sizeof x);
    x.base.ops = &string_ops;
    ck_assert_int_eq(idmap_init(&x.ids, 0), HPROF_OK);
    ck_assert_int_eq(names_plan_init(&plan), HPROF_OK);
    names_collect_init(&col, &plan, &err);
    col.base.next = &x.base;
    ck_assert_int_eq(hprof_reader_open_memory(&r, b.data, b.len, &err), HPROF_OK);
    ck_assert_int_eq(hprof_reader_run(r, &col.base), HPROF_OK);
    ck_assert_uint_eq(x.count, 14);
    ck_assert_uint_eq(names_plan_count(&plan), 11);
    hprof_reader_free(r);
    idmap_free(&x.ids);
    names_plan_free(&plan);
    tb_free(&b);
}
END_TEST

/* A STACK_FRAME or START_THREAD of the wrong length is an error naming
 * the record, not a read past its body. */
START_TEST(names_rejects_a_frame_or_thread_record_of_the_wrong_length)
{
    uint8_t tag = _i ? HPROF_TAG_START_THREAD : HPROF_TAG_STACK_FRAME;
    uint8_t body[20] = { 0 };
    struct tbuf b;
    struct names_plan plan;
    struct hprof_error err = { 0 };
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_record(&b, tag, body, sizeof body);  /* 24 expected with 4-byte ids */
    ck_assert_int_eq(collect(b.data, b.len, &plan, &err), HPROF_ERR_FORMAT);
    char want[96];
    snprintf(want, sizeof want, "offset 0x1f: %s: length 20, expected 24",
             _i ? "START_THREAD" : "STACK_FRAME");
    ck_assert_msg(strstr(err.message, want) != NULL, "%s", err.message);
    names_plan_free(&plan);
    tb_free(&b);
}
END_TEST

/* Generated dumps (hprof-synth) in each mode. */
START_TEST(names_filter_leaves_no_reference_to_a_dropped_name_in_generated_dumps)
{
    static const char *const modes[] = { "--android", "--hotspot", "--android --scale 3" };
    char *path = tl_temp_path(".hprof");
    char *tool = tl_tool("hprof-synth");
    ck_assert_int_eq(tl_system("%s %s -f %s", tool, modes[_i], path), 0);
    size_t len, out_len;
    uint8_t *in = tl_read_file(path, &len);
    struct names_plan plan;
    struct names_filter f;
    check_filtered(in, len, &f, &plan, &out_len);
    ck_assert_uint_gt(names_plan_count(&plan), 10);
    names_plan_free(&plan);
    free(in);
    unlink(path);
    free(path);
    free(tool);
}
END_TEST

/* Every fixture: the same properties, and the measure of what would go.
 * HotSpot dumps carry the whole symbol table: most names go; ART writes
 * only the names it uses. */
START_TEST(names_filter_leaves_no_reference_to_a_dropped_name_in_fixtures)
{
    if (!tl_fixture_available(_i))
        return;
    size_t len, out_len;
    uint8_t *in = tl_read_dump(tl_fixtures[_i], &len);
    struct names_plan plan;
    struct names_filter f;
    check_filtered(in, len, &f, &plan, &out_len);
    printf("names: %s: %llu of %llu STRING records unused (%llu bytes of text, %llu in the "
           "file), %zu -> %zu bytes (%.1f%%)\n",
           tl_fixtures[_i], (unsigned long long)f.dropped.count,
           (unsigned long long)(f.dropped.count + f.kept.count),
           (unsigned long long)f.dropped.bytes, (unsigned long long)f.dropped_record_bytes, len,
           out_len, 100.0 * (double)f.dropped_record_bytes / (double)len);
    if (strstr(tl_fixtures[_i], "hotspot-fixture") != NULL ||
        strstr(tl_fixtures[_i], "hotspot-1.0.2") != NULL)
        ck_assert_uint_gt(f.dropped.count, f.kept.count); /* about 9 in 10 */
    if (strstr(tl_fixtures[_i], "art-ahat") != NULL)
        ck_assert_uint_eq(f.dropped.count, 0);
    names_plan_free(&plan);
    free(in);
}
END_TEST

/* The id size a dump's header declares. */
static unsigned header_id_size(const uint8_t *dump)
{
    return get_u4(dump + strlen((const char *)dump) + 1);
}

/* The rewrite in hprof_shrink(): by default the output holds exactly the
 * names its records use; --keep-names keeps every one. */
START_TEST(shrink_keeps_exactly_the_names_in_use_unless_asked)
{
    if (!tl_fixture_available(_i))
        return;
    struct hprof_shrink_options o = { 0 };
    struct hprof_shrink_stats st, kept_st;
    size_t len, out_len, kept_len;
    uint8_t *in = tl_read_dump(tl_fixtures[_i], &len);
    uint8_t *out = tl_shrink_file(tl_fixtures[_i], &o, &out_len, &st);
    o.keep_names = 1;
    uint8_t *kept = tl_shrink_file(tl_fixtures[_i], &o, &kept_len, &kept_st);
    struct string_ids in_ids, out_ids, kept_ids;
    string_ids(in, len, &in_ids);
    string_ids(out, out_len, &out_ids);
    string_ids(kept, kept_len, &kept_ids);
    ck_assert_uint_eq(kept_ids.count, in_ids.count);
    ck_assert_uint_eq(kept_st.names_dropped.count, 0);
    ck_assert_uint_eq(out_ids.count, st.strings.count);
    ck_assert_uint_eq(out_ids.count + st.names_dropped.count, in_ids.count);
    ck_assert_uint_eq(out_ids.bytes + st.names_dropped.bytes, in_ids.bytes);
    ck_assert_uint_eq(kept_len - out_len, st.names_dropped.count * (9 + header_id_size(in)) +
                                              st.names_dropped.bytes);
    /* every name the output uses is in it, and every name in it is used */
    struct hprof_error err = { 0 };
    struct names_plan used;
    ck_assert_int_eq(collect(out, out_len, &used, &err), HPROF_OK);
    for (size_t s = 0; s <= used.used.mask; s++)
        if (used.used.keys[s] != 0 && idmap_has(&in_ids.ids, used.used.keys[s]))
            ck_assert(idmap_has(&out_ids.ids, used.used.keys[s]));
    for (size_t s = 0; s <= out_ids.ids.mask; s++)
        if (out_ids.ids.keys[s] != 0)
            ck_assert(names_plan_in_use(&used, out_ids.ids.keys[s]));
    names_plan_free(&used);
    idmap_free(&in_ids.ids);
    idmap_free(&out_ids.ids);
    idmap_free(&kept_ids.ids);
    free(in);
    free(out);
    free(kept);
}
END_TEST

static Suite *names_suite(void)
{
    Suite *s = suite_create("names");
    TCase *t = tcase_create("names");
    tcase_set_timeout(t, 120);
    tcase_add_loop_test(t, names_keeps_each_kind_of_reference_and_drops_the_rest, 0, 2);
    tcase_add_test(t, names_collect_passes_every_record_on);
    tcase_add_loop_test(t, names_rejects_a_frame_or_thread_record_of_the_wrong_length, 0, 2);
    tcase_add_loop_test(t, names_filter_leaves_no_reference_to_a_dropped_name_in_generated_dumps,
                        0, 3);
    tcase_add_loop_test(t, names_filter_leaves_no_reference_to_a_dropped_name_in_fixtures, 0,
                        TL_N_FIXTURES);
    tcase_add_loop_test(t, shrink_keeps_exactly_the_names_in_use_unless_asked, 0, TL_N_FIXTURES);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(names_suite());
}
