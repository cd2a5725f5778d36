/*
 * check_one_pass.c - hprof_shrink_one_pass(): what it writes against what
 * the multi-pass shrink writes, the order analyzers that read once need,
 * the window's report, and the id table the window is indexed by.
 */
#define _GNU_SOURCE /* memmem */
#include <check.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "facts.h"
#include "one_pass.h"
#include "testlib.h"

/* ---- Running both shrinks ------------------------------------------------------ */

struct shrunk {
    uint8_t *data;
    size_t len;
    struct hprof_shrink_stats stats;
};

/* The dump `in` shrunk into `sink`, finished. */
static int shrink_into(struct hprof_sink *sink, const uint8_t *in, size_t len,
                       const struct hprof_shrink_options *o, int one_pass,
                       struct hprof_shrink_stats *stats, struct hprof_error *err)
{
    struct hprof_reader *r;
    ck_assert_int_eq(hprof_reader_open_memory(&r, in, len, err), HPROF_OK);
    int rc = one_pass ? hprof_shrink_one_pass(r, sink, o, stats, err)
                      : hprof_shrink(r, sink, o, stats, err);
    if (rc == HPROF_OK)
        rc = hprof_sink_finish(sink);
    hprof_reader_free(r);
    return rc;
}

static int shrink_memory(const uint8_t *in, size_t len, const struct hprof_shrink_options *o,
                         int one_pass, struct shrunk *out, struct hprof_error *err)
{
    struct hprof_sink *sink = hprof_sink_new_memory(err);
    int rc = shrink_into(sink, in, len, o, one_pass, &out->stats, err);
    const uint8_t *d = hprof_sink_memory_data(sink, &out->len);
    out->data = malloc(out->len + 1);
    if (out->len > 0)
        memcpy(out->data, d, out->len);
    hprof_sink_free(sink);
    return rc;
}

/* The size target: what the one pass's order costs (segments, heap
 * infos, the unused names of an Android dump) stays under 1% of the
 * multi-pass output. */
static void assert_within_a_percent(const struct shrunk *one, const struct shrunk *multi)
{
    ck_assert_msg(one->len <= multi->len + multi->len / 100, "%zu against %zu", one->len,
                  multi->len);
}

/* The file `fd` that `sink` wrote, finished: the output and no more (any
 * scratch area cut off), read into `out`. */
static void read_output_file(int fd, const struct hprof_sink *sink, struct shrunk *out)
{
    out->len = (size_t)lseek(fd, 0, SEEK_END);
    ck_assert_uint_eq(out->len, hprof_sink_bytes(sink));
    out->data = malloc(out->len + 1);
    ck_assert_int_eq(pread(fd, out->data, out->len, 0), (ssize_t)out->len);
}

/* ---- The order of names ---------------------------------------------------------- */

/* Checks, reading once as ahat does, that every name is defined before a
 * record uses it and that nothing but segments comes between the segments
 * of one heap dump. */
struct order_check {
    struct hprof_visitor base;
    struct idmap names;
    unsigned ids;
    int in_dump;            /* segments begun, no HEAP_DUMP_END yet */
    int top_level_in_dump;  /* a record other than a segment came in one */
    uint64_t undefined;     /* uses of names not defined yet */
};

static void use(struct order_check *c, uint64_t id)
{
    if (id != 0 && !idmap_has(&c->names, id))
        c->undefined++;
}

static int oc_header(struct hprof_visitor *v, const struct hprof_header *h)
{
    ((struct order_check *)v)->ids = h->id_size;
    return HPROF_OK;
}

static int oc_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct order_check *c = (struct order_check *)v;
    c->top_level_in_dump |= c->in_dump;
    return idmap_put(&c->names, s->id, 0);
}

static int oc_load_class(struct hprof_visitor *v, const struct hprof_load_class *l)
{
    struct order_check *c = (struct order_check *)v;
    c->top_level_in_dump |= c->in_dump;
    use(c, l->name_id);
    return HPROF_OK;
}

static int oc_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    struct order_check *c = (struct order_check *)v;
    if (r->tag == HPROF_TAG_HEAP_DUMP_END)
        c->in_dump = 0;
    else
        c->top_level_in_dump |= c->in_dump;
    return HPROF_OK;
}

static int oc_heap_begin(struct hprof_visitor *v, const struct hprof_segment *s)
{
    ((struct order_check *)v)->in_dump = s->tag == HPROF_TAG_HEAP_DUMP_SEGMENT;
    return HPROF_OK;
}

static int oc_heap_info(struct hprof_visitor *v, const struct hprof_heap_info *i)
{
    use((struct order_check *)v, i->name_id);
    return HPROF_OK;
}

static int oc_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *cd)
{
    struct order_check *c = (struct order_check *)v;
    for (unsigned i = 0; i < cd->n_statics; i++)
        use(c, cd->statics[i].name_id);
    for (unsigned i = 0; i < cd->n_fields; i++)
        use(c, cd->fields[i].name_id);
    return HPROF_OK;
}

static const struct hprof_visitor_ops order_ops = {
    .header = oc_header, .string = oc_string, .load_class = oc_load_class,
    .record = oc_record, .heap_begin = oc_heap_begin, .heap_info = oc_heap_info,
    .class_dump = oc_class_dump,
};

static void check_order(const struct shrunk *s, struct order_check *c)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    memset(c, 0, sizeof *c);
    c->base.ops = &order_ops;
    ck_assert_int_eq(idmap_init(&c->names, 0), HPROF_OK);
    ck_assert_int_eq(hprof_reader_open_memory(&r, s->data, s->len, &err), HPROF_OK);
    ck_assert_msg(hprof_reader_run(r, &c->base) == HPROF_OK, "%s", err.message);
    hprof_reader_free(r);
    idmap_free(&c->names);
}

START_TEST(names_come_before_their_users_and_never_between_segments)
{
    if (!tl_fixture_available(_i))
        return;
    size_t len;
    uint8_t *in = tl_read_dump(tl_fixtures[_i], &len);
    struct hprof_error err = { 0 };
    struct hprof_shrink_options o = { 0 };
    struct shrunk one;
    struct order_check c;
    ck_assert_msg(shrink_memory(in, len, &o, 1, &one, &err) == HPROF_OK, "%s", err.message);
    check_order(&one, &c);
    ck_assert_uint_eq(c.undefined, 0);
    ck_assert_int_eq(c.top_level_in_dump, 0);
    ck_assert_uint_eq(one.stats.window_late, 0);
    free(one.data);
    free(in);
}
END_TEST

/* ---- Against the multi-pass shrink --------------------------------------------------- */

START_TEST(one_pass_counts_what_the_multi_pass_shrink_counts)
{
    if (!tl_fixture_available(_i))
        return;
    size_t len;
    uint8_t *in = tl_read_dump(tl_fixtures[_i], &len);
    struct hprof_error err = { 0 };
    static const struct hprof_shrink_options modes[] = {
        { .arrays = HPROF_ARRAYS_EMPTY },
        { .arrays = HPROF_ARRAYS_ZERO, .keep_system_heaps = 1 },
        { .arrays = HPROF_ARRAYS_REMOVE, .redact = HPROF_REDACT_ALL, .redact_fields = 1 },
        { .jvm = 1, .keep_duplicates = 1 },
    };
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        struct shrunk one, multi;
        ck_assert_msg(shrink_memory(in, len, &modes[m], 1, &one, &err) == HPROF_OK, "%s",
                      err.message);
        ck_assert_msg(shrink_memory(in, len, &modes[m], 0, &multi, &err) == HPROF_OK, "%s",
                      err.message);
        const struct hprof_shrink_stats *a = &one.stats, *b = &multi.stats;
        ck_assert_uint_eq(a->window_late, 0);
        ck_assert_uint_eq(a->instances_out.count, b->instances_out.count);
        ck_assert_uint_eq(a->instances_out.bytes, b->instances_out.bytes);
        ck_assert_uint_eq(a->object_arrays_out.count, b->object_arrays_out.count);
        ck_assert_uint_eq(a->string_values_kept.count, b->string_values_kept.count);
        ck_assert_uint_eq(a->string_values_kept.bytes, b->string_values_kept.bytes);
        ck_assert_uint_eq(a->bitmap_buffers_kept.bytes, b->bitmap_buffers_kept.bytes);
        ck_assert_uint_eq(a->bitmap_duplicates.count, b->bitmap_duplicates.count);
        ck_assert_uint_eq(a->arrays_emptied.count, b->arrays_emptied.count);
        ck_assert_uint_eq(a->arrays_removed.count, b->arrays_removed.count);
        ck_assert_uint_eq(a->system_dropped.count, b->system_dropped.count);
        ck_assert_uint_eq(a->system_standins.count, b->system_standins.count);
        ck_assert_uint_eq(a->strings_redacted.count, b->strings_redacted.count);
        ck_assert_uint_eq(a->fields_zeroed, b->fields_zeroed);
        assert_within_a_percent(&one, &multi);
        free(one.data);
        free(multi.data);
    }
    free(in);
}
END_TEST

/* The one pass into a file opened for reading too: the same bytes as into
 * memory (where a merge rests on SHA-256), each merge confirmed by reading
 * the kept copy back. */
static void shrink_to_readable_file_with(const uint8_t *in, size_t len,
                                         const struct hprof_shrink_options *o, struct shrunk *out)
{
    char path[] = "/tmp/check_one_pass.XXXXXX";
    int fd = mkstemp(path); /* O_RDWR */
    ck_assert_int_ge(fd, 0);
    unlink(path);
    struct hprof_error err = { 0 };
    struct hprof_sink *sink = hprof_sink_new_fd(fd, &err);
    ck_assert_msg(shrink_into(sink, in, len, o, 1, &out->stats, &err) == HPROF_OK, "%s",
                  err.message);
    read_output_file(fd, sink, out);
    hprof_sink_free(sink);
    close(fd);
}

static void shrink_to_readable_file(const uint8_t *in, size_t len, struct shrunk *out)
{
    struct hprof_shrink_options o = { .arrays = HPROF_ARRAYS_EMPTY };
    shrink_to_readable_file_with(in, len, &o, out);
}

START_TEST(a_merge_is_confirmed_byte_for_byte_where_the_output_can_be_read_back)
{
    if (!tl_fixture_available(_i))
        return;
    size_t len;
    uint8_t *in = tl_read_dump(tl_fixtures[_i], &len);
    struct hprof_error err = { 0 };
    struct hprof_shrink_options o = { .arrays = HPROF_ARRAYS_EMPTY };
    struct shrunk file, memory;
    shrink_to_readable_file(in, len, &file);
    ck_assert_msg(shrink_memory(in, len, &o, 1, &memory, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(file.len, memory.len);
    ck_assert(memcmp(file.data, memory.data, file.len) == 0);
    ck_assert_uint_eq(file.stats.bitmap_duplicates.count, memory.stats.bitmap_duplicates.count);
    ck_assert_uint_eq(file.stats.bitmap_bytes_compared, file.stats.bitmap_duplicates.bytes);
    ck_assert_uint_eq(memory.stats.bitmap_bytes_compared, 0);
    if (_i == 0) /* android-synth has twins */
        ck_assert_uint_gt(file.stats.bitmap_bytes_compared, 0);
    free(file.data);
    free(memory.data);
    free(in);
}
END_TEST

START_TEST(a_window_too_small_says_what_came_too_late)
{
    /* android-synth: a 2.6 MB Bitmap buffer comes before its Bitmap, and
     * cannot wait in a window of 1 MiB: decided as nobody's array, by the
     * rule; its Bitmap is counted late, and the pixels the multi-pass
     * shrink keeps are gone */
    size_t len;
    uint8_t *in = tl_read_dump(tl_fixtures[0], &len);
    struct hprof_error err = { 0 };
    struct hprof_shrink_options o = { .window = HPROF_WINDOW_MIN };
    struct shrunk one, multi;
    ck_assert_msg(shrink_memory(in, len, &o, 1, &one, &err) == HPROF_OK, "%s", err.message);
    ck_assert_msg(shrink_memory(in, len, &o, 0, &multi, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_gt(one.stats.window_by_rule.count, 0);
    ck_assert_uint_le(one.stats.window_peak_bytes, HPROF_WINDOW_MIN);
    ck_assert_uint_eq(one.stats.window_late, 1);
    ck_assert_uint_eq(one.stats.bitmap_buffers_kept.bytes + 2621440,
                      multi.stats.bitmap_buffers_kept.bytes);
    free(one.data);
    free(multi.data);
    free(in);
}
END_TEST

/* The dump `b` builds, its segment and heap dump ended: its bytes (the
 * caller's to free) and their length. */
static uint8_t *end_heap_dump(struct tbuf *b, size_t *len)
{
    tb_segment_end(b);
    tb_record(b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    *len = b->len;
    return b->data;
}

/* `n` STRING records of 1 KiB from id 0x200, `prefix`-N- then `fill`s:
 * names nothing uses. */
static void unused_names(struct tbuf *b, unsigned n, const char *prefix, char fill)
{
    char text[1024];
    for (unsigned i = 0; i < n; i++) {
        memset(text, fill, sizeof text - 1);
        text[snprintf(text, sizeof text - 1, "%s-%u-", prefix, i)] = fill;
        text[sizeof text - 1] = 0;
        tb_string(b, 0x200 + i, text);
    }
}

/* An Android dump whose instance of class 0x200 (a long and an int, their
 * bytes "LEAKLONG" and "LKIN") comes 1.25 MiB of byte arrays before the
 * class's dump: past a window of 1 MiB. */
static uint8_t *instance_before_its_class_dump(size_t *len)
{
    static const uint8_t types[] = { HPROF_TYPE_LONG, HPROF_TYPE_INT };
    struct tbuf b;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_string(&b, 0x900, "secretLong");
    tb_string(&b, 0x901, "secretInt");
    tb_string(&b, 0x910, "java.lang.Object");
    tb_string(&b, 0x911, "com.example.Secretive");
    tb_load_class(&b, 1, 0x100, 0x910);
    tb_load_class(&b, 2, 0x200, 0x911);
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&b, 0x100, 0, NULL, 0);
    tb_instance(&b, 0x500, 0x200, "LEAKLONGLKIN", 12);
    uint8_t *filler = calloc(1, 32u << 10);
    for (unsigned i = 0; i < 40; i++)
        tb_prim_array(&b, 0x1000 + i, HPROF_TYPE_BYTE, 32u << 10, filler);
    free(filler);
    tb_class(&b, 0x200, 0x100, types, 2);
    return end_heap_dump(&b, len);
}

/* Whose instance it is, and so what to keep or redact of it, is not known
 * when it must leave: it is late, and under redaction not one of its
 * bytes goes out as it came. */
START_TEST(an_instance_leaving_before_its_class_is_late_and_zeroed_under_redaction)
{
    size_t len;
    uint8_t *in = instance_before_its_class_dump(&len);
    struct hprof_error err = { 0 };
    const struct hprof_shrink_options plain = { .window = HPROF_WINDOW_MIN },
                                      fields = { .window = HPROF_WINDOW_MIN, .redact_fields = 1 },
                                      strings = { .window = HPROF_WINDOW_MIN,
                                                  .redact = HPROF_REDACT_STRINGS };
    const struct hprof_shrink_options *redacting[] = { &fields, &strings };
    struct shrunk one;
    ck_assert_msg(shrink_memory(in, len, &plain, 1, &one, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(one.stats.window_late, 1);
    ck_assert_ptr_nonnull(memmem(one.data, one.len, "LEAKLONGLKIN", 12)); /* the rule: as it is */
    size_t plain_len = one.len;
    free(one.data);
    for (size_t i = 0; i < 2; i++) {
        ck_assert_msg(shrink_memory(in, len, redacting[i], 1, &one, &err) == HPROF_OK, "%s",
                      err.message);
        ck_assert_uint_eq(one.stats.window_late, 1);
        ck_assert_ptr_null(memmem(one.data, one.len, "LEAK", 4));
        ck_assert_ptr_null(memmem(one.data, one.len, "LKIN", 4));
        ck_assert_uint_eq(one.len, plain_len); /* zeroed in place, not dropped */
        free(one.data);
    }
    free(in);
}
END_TEST

/* Bad input is refused with the multi-pass shrink's error, not written:
 * a class whose superclass is never dumped. */
START_TEST(a_class_whose_superclass_is_not_dumped_is_refused_as_by_the_multi_pass_shrink)
{
    static const uint8_t an_int[1] = { HPROF_TYPE_INT };
    struct tbuf b;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&b, 0x100, 0, NULL, 0);
    tb_class(&b, 0x200, 0x300, an_int, 1);
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    struct hprof_shrink_options o = { 0 };
    for (int one_pass = 0; one_pass < 2; one_pass++) {
        struct hprof_error err = { 0 };
        struct shrunk out;
        ck_assert_int_eq(shrink_memory(b.data, b.len, &o, one_pass, &out, &err),
                         HPROF_ERR_FORMAT);
        ck_assert_msg(strstr(err.message, "has superclass 0x300 which is not dumped") != NULL,
                      "%s", err.message);
        ck_assert_msg(strstr(err.message, "CLASS_DUMP") != NULL, "%s", err.message);
        free(out.data);
    }
    tb_free(&b);
}
END_TEST

/* ---- Names past the window ------------------------------------------------------------ */

#define NAMES_PAST_THE_LIMIT (66u << 10) /* names of 1 KiB: past the 64 MiB names may hold */

/* A HotSpot dump whose symbol table holds a secret literal nothing uses
 * and a field's name, then more than 64 MiB of unused names, then the
 * names of its one class and its other field. */
static uint8_t *symbol_table_dump(size_t *len)
{
    static const uint8_t types[] = { HPROF_TYPE_OBJECT, HPROF_TYPE_INT };
    static const uint64_t fields[] = { 0x9000001, 0x9000002 };
    struct tbuf b;
    tb_init(&b, 8);
    tb_header(&b, "JAVA PROFILE 1.0.2");
    tb_string(&b, 0x100, "jdbc:postgresql://db?password=SymbolTableSecret");
    tb_string(&b, 0x9000002, "hashField");
    unused_names(&b, NAMES_PAST_THE_LIMIT, "unused", 'x');
    tb_string(&b, 0x9000000, "java/lang/String");
    tb_string(&b, 0x9000001, "valueField");
    tb_load_class(&b, 1, 0x50, 0x9000000);
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class_named(&b, 0x50, 0, fields, types, 2);
    return end_heap_dump(&b, len);
}

/* Where the output file has room for them, names past the window wait
 * there: the unused ones are dropped, as by the multi-pass shrink, and
 * nothing is decided by the rule. */
START_TEST(names_past_the_window_wait_in_the_output_file)
{
    size_t len;
    uint8_t *in = symbol_table_dump(&len);
    struct hprof_error err = { 0 };
    struct hprof_shrink_options o = { .arrays = HPROF_ARRAYS_EMPTY };
    struct shrunk one, multi;
    shrink_to_readable_file_with(in, len, &o, &one);
    ck_assert_msg(shrink_memory(in, len, &o, 0, &multi, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(one.stats.window_by_rule.count, 0);
    ck_assert_uint_eq(one.stats.names_dropped.count, multi.stats.names_dropped.count);
    ck_assert_ptr_null(memmem(one.data, one.len, "SymbolTableSecret", 17));
    ck_assert_ptr_nonnull(memmem(one.data, one.len, "java/lang/String", 16));
    ck_assert_ptr_nonnull(memmem(one.data, one.len, "hashField", 9)); /* read back */
    ck_assert_ptr_nonnull(memmem(one.data, one.len, "valueField", 10));
    ck_assert_uint_le(one.len, multi.len + 200); /* a few bytes of segments and order */
    free(one.data);
    free(multi.data);
    free(in);
}
END_TEST

/* The `len` bytes of zstd frames at `z`, inflated into a new buffer. */
static uint8_t *unzstd(const uint8_t *z, size_t len, size_t *out_len)
{
    ZSTD_DCtx *d = ZSTD_createDCtx();
    size_t cap = 1 << 20, n = 0;
    uint8_t *out = malloc(cap);
    ZSTD_inBuffer in = { z, len, 0 };
    while (in.pos < in.size) {
        if (n == cap)
            ck_assert_ptr_nonnull(out = realloc(out, cap *= 2));
        ZSTD_outBuffer o = { out + n, cap - n, 0 };
        ck_assert(!ZSTD_isError(ZSTD_decompressStream(d, &o, &in)));
        n += o.pos;
    }
    ZSTD_freeDCtx(d);
    *out_len = n;
    return out;
}

/* The one pass into a gzip (`zstd` 0) or zstd file opened for reading
 * too, inflated again; the file must have been cut back to the output. */
static void shrink_to_compressed_file(const uint8_t *in, size_t len,
                                      const struct hprof_shrink_options *o, int zstd,
                                      struct shrunk *out)
{
    char path[] = "/tmp/check_one_pass.XXXXXX";
    int fd = mkstemp(path); /* O_RDWR */
    ck_assert_int_ge(fd, 0);
    struct hprof_error err = { 0 };
    struct hprof_sink *sink = zstd ? hprof_sink_new_zstd(fd, 1, 1, &err)
                                   : hprof_sink_new_gzip(fd, 1, 1, &err);
    ck_assert_msg(sink != NULL, "%s", err.message);
    ck_assert_msg(shrink_into(sink, in, len, o, 1, &out->stats, &err) == HPROF_OK, "%s",
                  err.message);
    uint64_t written = hprof_sink_file_bytes(sink);
    hprof_sink_free(sink);
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    ck_assert_uint_eq((uint64_t)st.st_size, written); /* nothing of the scratch area stays */
    close(fd);
    if (!zstd) {
        out->data = tl_read_dump(path, &out->len);
    } else {
        size_t z_len;
        uint8_t *z = tl_read_file(path, &z_len);
        out->data = unzstd(z, z_len, &out->len);
        free(z);
    }
    unlink(path);
}

/* A gzip or zstd output's file has the same room (the scratch area is the
 * file's, whatever the output's encoding): the names wait there as in a
 * plain file, under --redact too, where the rule would have written class
 * names as fillers that analyzers cannot read. */
START_TEST(names_past_the_window_wait_in_a_compressed_output_file)
{
    size_t len;
    uint8_t *in = symbol_table_dump(&len);
    struct hprof_shrink_options o = { .arrays = HPROF_ARRAYS_EMPTY,
                                      .redact = HPROF_REDACT_STRINGS };
    struct shrunk plain, packed;
    shrink_to_readable_file_with(in, len, &o, &plain);
    shrink_to_compressed_file(in, len, &o, _i, &packed);
    ck_assert_uint_eq(packed.stats.window_by_rule.count, 0);
    ck_assert_uint_eq(packed.stats.window_late, 0);
    ck_assert_uint_eq(packed.len, plain.len);
    ck_assert(memcmp(packed.data, plain.data, plain.len) == 0);
    ck_assert_ptr_null(memmem(packed.data, packed.len, "SymbolTableSecret", 17));
    ck_assert_ptr_nonnull(memmem(packed.data, packed.len, "java/lang/String", 16));
    ck_assert_ptr_nonnull(memmem(packed.data, packed.len, "hashField", 9));
    free(plain.data);
    free(packed.data);
    free(in);
}
END_TEST

/* A dump's opening with a String class (value) and a Keep class (key)
 * that keep rules name: the records up to its class dumps, in a heap dump
 * left open, of 4-byte ids. */
static void keep_rule_classes(struct tbuf *b)
{
    static const uint8_t object[1] = { HPROF_TYPE_OBJECT };
    static const uint64_t value_name[1] = { 0x12 }, key_name[1] = { 0x13 };
    tb_init(b, 4);
    tb_header(b, "JAVA PROFILE 1.0.3");
    tb_string(b, 0x10, "java.lang.String");
    tb_string(b, 0x11, "Keep");
    tb_string(b, 0x12, "value");
    tb_string(b, 0x13, "key");
    tb_load_class(b, 1, 0x100, 0x10);
    tb_load_class(b, 2, 0x110, 0x11);
    tb_segment_begin(b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class_named(b, 0x100, 0, value_name, object, 1);
    tb_class_named(b, 0x110, 0, key_name, object, 1);
}

/* A String, its char[] value, 1.5 MiB of arrays nothing claims yet, then
 * the holder a keep rule names the String by (Keep.key). */
static uint8_t *late_keep_rule_dump(const char *text, size_t *len)
{
    static uint8_t filler[32u << 10];
    uint8_t chars[128], ref[4] = { 0, 0, 0x07, 0 }; /* 0x700 */
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i++) {
        chars[2 * i] = 0;
        chars[2 * i + 1] = (uint8_t)text[i];
    }
    struct tbuf b;
    keep_rule_classes(&b);
    tb_instance(&b, 0x600, 0x100, ref, 4);
    tb_prim_array(&b, 0x700, HPROF_TYPE_CHAR, (uint32_t)n, chars);
    for (uint32_t i = 0; i < 48; i++)
        tb_prim_array(&b, 0x100000 + 0x10 * i, HPROF_TYPE_BYTE, sizeof filler, filler);
    ref[2] = 0x06; /* the String */
    tb_instance(&b, 0x510, 0x110, ref, 4);
    return end_heap_dump(&b, len);
}

/* The rule's holder comes after the String's value left a full window,
 * its text redacted (the multi-pass shrink keeps it): late, so that the
 * report and the warning say the views differ; a window that holds the
 * value keeps the text. */
START_TEST(a_keep_rule_after_its_strings_value_left_the_window_is_late)
{
    static const char *const keep_key[] = { "Keep.key" };
    const char *text = "LateHolderKeyText";
    uint8_t chars[128];
    size_t len, n = 0;
    for (const char *c = text; *c; c++, n += 2) {
        chars[n] = 0;
        chars[n + 1] = (uint8_t)*c;
    }
    uint8_t *in = late_keep_rule_dump(text, &len);
    struct hprof_error err = { 0 };
    struct hprof_shrink_options o = { .redact = HPROF_REDACT_ALL, .redact_keep = keep_key,
                                      .n_redact_keep = 1, .window = HPROF_WINDOW_MIN };
    struct shrunk small, roomy, multi;
    ck_assert_msg(shrink_memory(in, len, &o, 1, &small, &err) == HPROF_OK, "%s", err.message);
    ck_assert_ptr_null(memmem(small.data, small.len, chars, n));
    ck_assert_uint_eq(small.stats.window_late, 1);
    o.window = 0;
    ck_assert_msg(shrink_memory(in, len, &o, 1, &roomy, &err) == HPROF_OK, "%s", err.message);
    ck_assert_ptr_nonnull(memmem(roomy.data, roomy.len, chars, n));
    ck_assert_uint_eq(roomy.stats.window_late, 0);
    ck_assert_msg(shrink_memory(in, len, &o, 0, &multi, &err) == HPROF_OK, "%s", err.message);
    ck_assert_ptr_nonnull(memmem(multi.data, multi.len, chars, n));
    ck_assert_uint_eq(small.stats.strings_kept_by_rule, multi.stats.strings_kept_by_rule);
    ck_assert_uint_eq(roomy.stats.strings_kept_by_rule, 1);
    free(small.data);
    free(roomy.data);
    free(multi.data);
    free(in);
}
END_TEST

/* A String naming `value`, and a char[] value: 4-byte ids. */
static void a_string(struct tbuf *b, uint32_t string, uint32_t value)
{
    uint8_t ref[4] = { (uint8_t)(value >> 24), (uint8_t)(value >> 16), (uint8_t)(value >> 8),
                       (uint8_t)value };
    tb_instance(b, string, 0x100, ref, 4);
}

static void a_value(struct tbuf *b, uint32_t value)
{
    static const uint8_t chars[4] = { 0, 'o', 0, 'k' };
    tb_prim_array(b, value, HPROF_TYPE_CHAR, 2, chars);
}

/* A million Strings whose values go out kept in time, then values that
 * leave a full window before the Strings that claim them: every one of
 * those is late, however many ids were kept before. */
START_TEST(every_late_claim_is_counted_after_a_million_values_kept)
{
    enum { KEPT = 1000000, LATE = 3000, PER_SEGMENT = 50000 };
    static uint8_t filler[32u << 10];
    struct tbuf b;
    keep_rule_classes(&b);
    for (uint32_t i = 0; i < KEPT; i++) {
        if (i % PER_SEGMENT == 0) {
            tb_segment_end(&b);
            tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
        }
        a_string(&b, 0x10000000 + 16 * i, 0x10000008 + 16 * i);
        a_value(&b, 0x10000008 + 16 * i);
    }
    for (uint32_t i = 0; i < LATE; i++)
        a_value(&b, 0x40000000 + 16 * i);
    for (uint32_t i = 0; i < 48; i++) /* past a window of 1 MiB */
        tb_prim_array(&b, 0x50000000 + 0x10 * i, HPROF_TYPE_BYTE, sizeof filler, filler);
    for (uint32_t i = 0; i < LATE; i++)
        a_string(&b, 0x60000000 + 16 * i, 0x40000000 + 16 * i);
    size_t len;
    uint8_t *in = end_heap_dump(&b, &len);
    struct hprof_error err = { 0 };
    struct hprof_shrink_options o = { .window = HPROF_WINDOW_MIN };
    struct shrunk one;
    ck_assert_msg(shrink_memory(in, len, &o, 1, &one, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(one.stats.string_values_kept.count, KEPT);
    ck_assert_uint_eq(one.stats.window_late, LATE);
    free(one.data);
    free(in);
}
END_TEST

/* A JAVA PROFILE 1.0.2 dump in ART's order, as hprof-conv leaves one: the
 * class 0x200 it loaded is dumped after the first object, its field named
 * by a STRING read before the heap dump. */
static uint8_t *converted_art_order(size_t *len)
{
    static const uint8_t int_field[1] = { HPROF_TYPE_INT };
    static const uint64_t field_name[1] = { 0x12 };
    struct tbuf b;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.2");
    tb_string(&b, 0x10, "java.lang.Object");
    tb_string(&b, 0x11, "com.example.DumpedLate");
    tb_string(&b, 0x12, "fieldOfALateClass");
    tb_load_class(&b, 1, 0x100, 0x10);
    tb_load_class(&b, 2, 0x200, 0x11);
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&b, 0x100, 0, NULL, 0);
    tb_instance(&b, 0x500, 0x100, NULL, 0);
    tb_class_named(&b, 0x200, 0x100, field_name, int_field, 1);
    tb_instance(&b, 0x510, 0x200, "\0\0\0\7", 4);
    return end_heap_dump(&b, len);
}

/* Analyzers that read once (ahat) need every name before the heap dump
 * that uses it: a class dump after the first object, in a dump that
 * loaded that class, finds its field's name written before, not late. */
START_TEST(names_of_classes_dumped_among_objects_go_before_the_heap_dump)
{
    static const uint8_t instance_0x510[5] = { HPROF_INSTANCE_DUMP, 0, 0, 0x05, 0x10 };
    const char *name = "fieldOfALateClass";
    size_t len;
    uint8_t *in = converted_art_order(&len);
    struct hprof_error err = { 0 };
    struct hprof_shrink_options o = { 0 };
    struct shrunk one;
    ck_assert_msg(shrink_memory(in, len, &o, 1, &one, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(one.stats.window_late, 0);
    const uint8_t *at_name = memmem(one.data, one.len, name, strlen(name));
    const uint8_t *at_object = memmem(one.data, one.len, instance_0x510, sizeof instance_0x510);
    ck_assert_ptr_nonnull(at_name);
    ck_assert_ptr_nonnull(at_object);
    ck_assert(at_name < at_object);
    free(one.data);
    free(in);
}
END_TEST

/* A HotSpot-style dump (JAVA PROFILE 1.0.2, 8-byte ids): the records
 * `before_heap` writes, java.lang.Object (0x100, named by STRING 0x10)
 * loaded and dumped, and one instance of it. */
static uint8_t *one_object_dump(void (*before_heap)(struct tbuf *), size_t *len)
{
    struct tbuf b;
    tb_init(&b, 8);
    tb_header(&b, "JAVA PROFILE 1.0.2");
    before_heap(&b);
    tb_string(&b, 0x10, "java.lang.Object");
    tb_load_class(&b, 1, 0x100, 0x10);
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&b, 0x100, 0, NULL, 0);
    tb_instance(&b, 0x500, 0x100, NULL, 0);
    return end_heap_dump(&b, len);
}

/* `in` through both shrinks, default options. */
static void shrink_both(const uint8_t *in, size_t len, struct shrunk *one, struct shrunk *multi)
{
    struct hprof_error err = { 0 };
    struct hprof_shrink_options o = { 0 };
    ck_assert_msg(shrink_memory(in, len, &o, 1, one, &err) == HPROF_OK, "%s", err.message);
    ck_assert_msg(shrink_memory(in, len, &o, 0, multi, &err) == HPROF_OK, "%s", err.message);
}

static void a_class_never_dumped(struct tbuf *b)
{
    tb_string(b, 0x11, "com.example.NotLoadedYet");
    tb_string(b, 0x12, "a string literal nothing uses");
    tb_load_class(b, 2, 0x200, 0x11);
}

/* HotSpot writes LOAD_CLASS for classes it has not loaded yet and does
 * not dump (a dump taken while classes load): with 8-byte ids that is no
 * sign of class dumps to come, and the unused names go, as in the
 * multi-pass output (keeping them would keep a whole symbol table). */
START_TEST(a_hotspot_class_loaded_but_never_dumped_keeps_no_unused_name)
{
    size_t len;
    uint8_t *in = one_object_dump(a_class_never_dumped, &len);
    struct shrunk one, multi;
    shrink_both(in, len, &one, &multi);
    ck_assert_uint_eq(multi.stats.names_dropped.count, 1);
    ck_assert_uint_eq(one.stats.names_dropped.count, 1);
    ck_assert_ptr_null(memmem(one.data, one.len, "a string literal", 16));
    free(one.data);
    free(multi.data);
    free(in);
}
END_TEST

static void a_name_of_the_null_id(struct tbuf *b)
{
    tb_string(b, 0, "");
}

/* jhsdb (the Serviceability Agent's writer) writes an empty STRING of id
 * 0, which nothing can use: both shrinks drop it, and count it. */
START_TEST(a_name_of_the_null_id_is_dropped_and_counted_as_by_the_multi_pass_shrink)
{
    size_t len;
    uint8_t *in = one_object_dump(a_name_of_the_null_id, &len);
    struct shrunk one, multi;
    shrink_both(in, len, &one, &multi);
    ck_assert_uint_eq(multi.stats.names_dropped.count, 1);
    ck_assert_uint_eq(one.stats.names_dropped.count, multi.stats.names_dropped.count);
    ck_assert_uint_eq(one.len, multi.len);
    free(one.data);
    free(multi.data);
    free(in);
}
END_TEST

/* A dump that uses no name keeps them all (dropping every one could leave
 * no record), that of the null id too, in both shrinks. */
START_TEST(a_dump_of_names_alone_keeps_its_null_id_name_as_the_multi_pass_shrink_does)
{
    struct tbuf b;
    tb_init(&b, 8);
    tb_header(&b, "JAVA PROFILE 1.0.2");
    tb_string(&b, 0, "the null id's");
    tb_string(&b, 0x10, "another name");
    struct shrunk one, multi;
    shrink_both(b.data, b.len, &one, &multi);
    ck_assert_uint_eq(multi.stats.names_dropped.count, 0);
    ck_assert_uint_eq(one.stats.names_dropped.count, 0);
    ck_assert_uint_eq(one.len, multi.len);
    ck_assert_ptr_nonnull(memmem(one.data, one.len, "the null id's", 13));
    free(one.data);
    free(multi.data);
    tb_free(&b);
}
END_TEST

/* A String (0x600) and a Bitmap (0x610) whose value and buffer are
 * PRIMITIVE_ARRAY_NODATA records (an obsolete Android form) read before
 * them, in a window that holds everything. */
static uint8_t *nodata_before_its_holders(size_t *len)
{
    static const uint8_t object[1] = { HPROF_TYPE_OBJECT };
    static const uint64_t value_name[1] = { 0x12 }, buffer_name[1] = { 0x13 };
    uint8_t ref[4] = { 0, 0, 0x07, 0 }; /* 0x700 */
    struct tbuf b;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_string(&b, 0x10, "java.lang.String");
    tb_string(&b, 0x11, "android.graphics.Bitmap");
    tb_string(&b, 0x12, "value");
    tb_string(&b, 0x13, "mBuffer");
    tb_load_class(&b, 1, 0x100, 0x10);
    tb_load_class(&b, 2, 0x110, 0x11);
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class_named(&b, 0x100, 0, value_name, object, 1);
    tb_class_named(&b, 0x110, 0, buffer_name, object, 1);
    for (uint64_t id = 0x700; id <= 0x710; id += 0x10) {
        tb_u1(&b, HPROF_PRIMITIVE_ARRAY_NODATA);
        tb_id(&b, id);
        tb_u4(&b, 0);
        tb_u4(&b, 16);
        tb_u1(&b, id == 0x700 ? HPROF_TYPE_CHAR : HPROF_TYPE_BYTE);
    }
    tb_instance(&b, 0x600, 0x100, ref, 4);
    ref[3] = 0x10;
    tb_instance(&b, 0x610, 0x110, ref, 4);
    return end_heap_dump(&b, len);
}

/* Neither shrink keeps anything of a NODATA array, whoever claims it: a
 * String or Bitmap that comes after one is decided as by the multi-pass
 * shrink, and the one pass must not warn that it was not. */
START_TEST(a_holder_after_its_nodata_array_is_not_late)
{
    size_t len;
    uint8_t *in = nodata_before_its_holders(&len);
    struct hprof_error err = { 0 };
    const struct hprof_shrink_options o = { 0 };
    struct shrunk one, multi;
    ck_assert_msg(shrink_memory(in, len, &o, 1, &one, &err) == HPROF_OK, "%s", err.message);
    ck_assert_msg(shrink_memory(in, len, &o, 0, &multi, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(one.stats.window_late, 0);
    ck_assert_uint_eq(one.stats.arrays_emptied.count, 2);
    ck_assert_uint_eq(multi.stats.arrays_emptied.count, 2);
    ck_assert_uint_eq(one.stats.string_values_kept.count + one.stats.bitmap_buffers_kept.count,
                      0);
    free(one.data);
    free(multi.data);
    free(in);
}
END_TEST

/* The input, given as asked, and the most heap in use (malloc's) seen
 * meanwhile. */
struct sampled_read {
    const uint8_t *data;
    size_t len, at, most;
};

static size_t heap_in_use(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

static int sampling_read(void *ctx, void *buf, size_t len, size_t *got, struct hprof_error *err)
{
    struct sampled_read *s = ctx;
    (void)err;
    *got = s->len - s->at < len ? s->len - s->at : len;
    memcpy(buf, s->data + s->at, *got);
    s->at += *got;
    size_t now = heap_in_use();
    if (now > s->most)
        s->most = now;
    return HPROF_OK;
}

/* Under redaction a value waits for the keep rules, and the Strings that
 * hold it are noted, so that a rule naming any of them later keeps its
 * text.  Two million Strings sharing one value (as G1's String
 * deduplication and new String(s) leave them) noted 70 MB, in a window of
 * 1 MiB: their notes count in the window now, whose rule lets the value
 * go, and Strings after it note nothing.  Loop 1: a million values, each
 * shared by two Strings, whose notes were never given back. */
START_TEST(strings_sharing_a_waiting_value_stay_within_the_window)
{
    const uint32_t n = 2000000;
    struct tbuf b;
    keep_rule_classes(&b);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t value = _i == 0 ? 0x700 : 0x10000000 + 16 * (i / 2);
        uint8_t ref[4] = { (uint8_t)(value >> 24), (uint8_t)(value >> 16),
                           (uint8_t)(value >> 8), (uint8_t)value };
        if (i == 0 || (_i == 1 && i % 2 == 0))
            tb_prim_array(&b, value, HPROF_TYPE_BYTE, 10, "SharedText");
        tb_instance(&b, 0x100000 + 8 * (uint64_t)i, 0x100, ref, 4);
    }
    size_t len;
    uint8_t *in = end_heap_dump(&b, &len);
    struct hprof_error err = { 0 };
    const struct hprof_shrink_options o = { .redact = HPROF_REDACT_ALL,
                                            .window = HPROF_WINDOW_MIN,
                                            .segment_limit = 1u << 20 };
    struct sampled_read s = { in, len, 0, 0 };
    struct hprof_reader *r;
    struct hprof_shrink_stats st;
    ck_assert_int_eq(hprof_reader_open_stream(&r, sampling_read, &s, &err), HPROF_OK);
    struct hprof_sink *sink = hprof_sink_new_null(&err);
    size_t before = heap_in_use();
    int rc = hprof_shrink_one_pass(r, sink, &o, &st, &err);
    if (rc == HPROF_OK)
        rc = hprof_sink_finish(sink);
    ck_assert_msg(rc == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(st.window_late, 0);
    ck_assert_uint_eq(st.instances_out.count, n);
    ck_assert_msg(s.most < before + (24u << 20), "%zu bytes of heap more than before",
                  s.most - before);
    hprof_reader_free(r);
    hprof_sink_free(sink);
    free(in);
}
END_TEST

/* Where it has none, the rule keeps them; under --redact with a filler for
 * their text, so that no literal goes out, while the names that come
 * after them wait again, and keep theirs when used. */
START_TEST(names_the_rule_keeps_under_redaction_keep_no_text)
{
    size_t len;
    uint8_t *in = symbol_table_dump(&len);
    struct hprof_error err = { 0 };
    struct hprof_shrink_options plain = { .arrays = HPROF_ARRAYS_EMPTY },
                                redact = { .arrays = HPROF_ARRAYS_EMPTY,
                                           .redact = HPROF_REDACT_STRINGS };
    struct shrunk one;
    ck_assert_msg(shrink_memory(in, len, &plain, 1, &one, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_gt(one.stats.window_by_rule.count, 0);
    ck_assert_uint_gt(one.stats.window_late, 60000);
    ck_assert_ptr_nonnull(memmem(one.data, one.len, "SymbolTableSecret", 17)); /* kept */
    free(one.data);
    ck_assert_msg(shrink_memory(in, len, &redact, 1, &one, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_gt(one.stats.window_by_rule.count, 0);
    ck_assert_uint_gt(one.stats.window_late, 60000); /* and says so, a name each */
    ck_assert_ptr_null(memmem(one.data, one.len, "SymbolTableSecret", 17));
    ck_assert_ptr_null(memmem(one.data, one.len, "unused-1-", 9));
    ck_assert_ptr_nonnull(memmem(one.data, one.len, "java/lang/String", 16));
    ck_assert_ptr_nonnull(memmem(one.data, one.len, "valueField", 10));
    ck_assert_ptr_null(memmem(one.data, one.len, "hashField", 9)); /* its cost */
    struct hprof_reader *r;
    struct hprof_verify_report report;
    ck_assert_int_eq(hprof_reader_open_memory(&r, one.data, one.len, &err), HPROF_OK);
    ck_assert_msg(hprof_verify(r, &report, &err) == HPROF_OK, "%s", err.message);
    hprof_reader_free(r);
    free(one.data);
    free(in);
}
END_TEST

/* A HotSpot dump whose first segment ends past its decision point (an
 * instance), then a LOAD_CLASS names a STRING held since before, then over
 * 64 MiB of unused names, then a second segment. */
static uint8_t *name_used_inside_a_heap_dump(size_t *len)
{
    struct tbuf b;
    tb_init(&b, 8);
    tb_header(&b, "JAVA PROFILE 1.0.2");
    tb_string(&b, 0x100, "com.example.UsedLate");
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&b, 0x50, 0, NULL, 0);
    tb_instance(&b, 0x500, 0x50, NULL, 0);
    tb_segment_end(&b);
    tb_load_class(&b, 2, 0x60, 0x100);
    unused_names(&b, NAMES_PAST_THE_LIMIT, "literal", 'y');
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&b, 0x60, 0x50, NULL, 0);
    return end_heap_dump(&b, len);
}

/* A name used after its heap dump's decision point is written after the
 * heap dump, whatever the rule did meanwhile with the names held (it gave
 * their storage back): its own text, and no other name's. */
START_TEST(a_name_used_late_in_a_heap_dump_outlives_the_rule)
{
    size_t len;
    uint8_t *in = name_used_inside_a_heap_dump(&len);
    struct hprof_error err = { 0 };
    const struct hprof_shrink_options plain = { 0 },
                                      redact = { .redact = HPROF_REDACT_STRINGS };
    const struct hprof_shrink_options *modes[] = { &plain, &redact };
    for (int i = 0; i < 2; i++) {
        struct shrunk one;
        ck_assert_msg(shrink_memory(in, len, modes[i], 1, &one, &err) == HPROF_OK, "%s",
                      err.message);
        ck_assert_uint_gt(one.stats.window_by_rule.count, 0);
        ck_assert_uint_ge(one.stats.window_late, 1);
        ck_assert_ptr_nonnull(memmem(one.data, one.len, "com.example.UsedLate", 20));
        if (modes[i]->redact != HPROF_REDACT_NONE)
            ck_assert_ptr_null(memmem(one.data, one.len, "literal-", 8));
        free(one.data);
    }
    free(in);
}
END_TEST

/* ---- An Android dump's names under --redact ------------------------------------------ */

/* An Android dump: a name nothing uses (a secret), class names LOAD_CLASS
 * uses, the first object, then `gap_segments` segments of a 32 KiB int[]
 * each (nothing waits for those), then a class dump (ART dumps classes among objects) whose field is
 * named by a STRING read before the first object. */
static uint8_t *names_used_among_objects(unsigned gap_segments, size_t *len)
{
    static const uint8_t an_int[] = { HPROF_TYPE_INT };
    static const uint64_t field[] = { 0x902 };
    struct tbuf b;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_string(&b, 0x900, "java.lang.Object");
    tb_string(&b, 0x901, "com.example.Account");
    tb_string(&b, 0x902, "balanceField");
    tb_string(&b, 0x903, "jdbc:sqlite:/data/app.db?key=UnusedNameSecret");
    tb_load_class(&b, 1, 0x100, 0x900);
    tb_load_class(&b, 2, 0x200, 0x901);
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&b, 0x100, 0, NULL, 0);
    tb_instance(&b, 0x500, 0x100, NULL, 0);
    uint8_t *bytes = calloc(1, 32u << 10);
    for (unsigned i = 0; i < gap_segments; i++) {
        tb_segment_end(&b);
        tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
        tb_prim_array(&b, 0x1000 + i, HPROF_TYPE_INT, 8u << 10, bytes);
    }
    free(bytes);
    tb_class_named(&b, 0x200, 0x100, field, an_int, 1);
    tb_instance(&b, 0x600, 0x200, "\0\0\0\7", 4);
    return end_heap_dump(&b, len);
}

/* The one pass of `in` into memory (`sink` 0), a file open for reading
 * (1), a gzip (2) or a zstd (3) file. */
static void shrink_one_pass_into(int sink, const uint8_t *in, size_t len,
                                 const struct hprof_shrink_options *o, struct shrunk *out)
{
    struct hprof_error err = { 0 };
    if (sink == 0)
        ck_assert_msg(shrink_memory(in, len, o, 1, out, &err) == HPROF_OK, "%s", err.message);
    else if (sink == 1)
        shrink_to_readable_file_with(in, len, o, out);
    else
        shrink_to_compressed_file(in, len, o, sink == 3, out);
}

/* ART writes only the names it uses, but a 1.0.3 dump may hold others,
 * and when its heap dump begins the one pass cannot tell them from the
 * names of the classes it will dump among its objects.  Under --redact
 * each goes out with a filler then: a name used later takes its text
 * back (written over the filler in a file, or in what a pipe's or a
 * compressed output's sink holds back), while the text of one nothing
 * uses, which the multi-pass shrink drops, never goes out. */
START_TEST(an_android_dumps_unused_names_go_out_as_fillers_under_redaction)
{
    size_t len;
    uint8_t *in = names_used_among_objects(0, &len);
    struct hprof_error err = { 0 };
    const struct hprof_shrink_options plain = { 0 }, redact = { .redact = HPROF_REDACT_STRINGS };
    struct shrunk one, multi;
    struct order_check c;
    ck_assert_msg(shrink_memory(in, len, &redact, 0, &multi, &err) == HPROF_OK, "%s",
                  err.message);
    ck_assert_uint_eq(multi.stats.names_dropped.count, 1);
    ck_assert_ptr_null(memmem(multi.data, multi.len, "UnusedNameSecret", 16));
    shrink_one_pass_into(_i, in, len, &redact, &one);
    ck_assert_ptr_null(memmem(one.data, one.len, "UnusedNameSecret", 16));
    ck_assert_ptr_nonnull(memmem(one.data, one.len, "balanceField", 12));
    ck_assert_ptr_nonnull(memmem(one.data, one.len, "com.example.Account", 19));
    ck_assert_uint_eq(one.stats.window_late, 0);
    ck_assert_uint_eq(one.stats.window_names_filled.count, multi.stats.names_dropped.count);
    ck_assert_uint_eq(one.stats.window_names_filled.bytes, multi.stats.names_dropped.bytes);
    check_order(&one, &c);
    ck_assert_uint_eq(c.undefined, 0);
    ck_assert_int_eq(c.top_level_in_dump, 0);
    struct hprof_verify_report rep;
    ck_assert_msg(tl_verify_memory(one.data, one.len, &rep, &err) == HPROF_OK, "%s", err.message);
    free(one.data);
    /* without --redact such names are kept as they are */
    shrink_one_pass_into(_i, in, len, &plain, &one);
    ck_assert_ptr_nonnull(memmem(one.data, one.len, "UnusedNameSecret", 16));
    ck_assert_uint_eq(one.stats.window_names_filled.count, 0);
    free(one.data);
    free(multi.data);
    free(in);
}
END_TEST

/* What a sink that cannot patch holds back is bounded by the window: a
 * name first used past it reads as its filler, counted late; in a file
 * it still takes its text back.  The unused name's text goes out in
 * neither. */
START_TEST(a_name_used_past_what_the_output_holds_back_keeps_its_filler_and_is_late)
{
    size_t len;
    uint8_t *in = names_used_among_objects(40, &len); /* 1.25 MiB of arrays */
    const struct hprof_shrink_options o = { .window = HPROF_WINDOW_MIN,
                                            .arrays = HPROF_ARRAYS_ZERO,
                                            .redact = HPROF_REDACT_STRINGS };
    struct hprof_error err = { 0 };
    struct hprof_verify_report rep;
    struct shrunk one;
    shrink_one_pass_into(0, in, len, &o, &one);
    ck_assert_uint_eq(one.stats.window_late, 1);
    ck_assert_ptr_null(memmem(one.data, one.len, "balanceField", 12));
    ck_assert_ptr_nonnull(memmem(one.data, one.len, "************", 12));
    ck_assert_ptr_null(memmem(one.data, one.len, "UnusedNameSecret", 16));
    ck_assert_msg(tl_verify_memory(one.data, one.len, &rep, &err) == HPROF_OK, "%s", err.message);
    free(one.data);
    shrink_one_pass_into(1, in, len, &o, &one);
    ck_assert_uint_eq(one.stats.window_late, 0);
    ck_assert_ptr_nonnull(memmem(one.data, one.len, "balanceField", 12));
    ck_assert_ptr_null(memmem(one.data, one.len, "UnusedNameSecret", 16));
    free(one.data);
    free(in);
}
END_TEST

/* ---- Large arrays set aside in the output file ------------------------------------- */

/* An Android dump: buffers A and A2 (equal) and N (nobody's), 128 KiB
 * each, then 1.25 MiB of small arrays, then the Bitmaps of A and A2: past
 * a window of 1 MiB (or the Bitmaps first, with `bitmaps_first`). */
#define FAR_BUFFER (128u << 10)

static uint8_t *far_buffers_dump_in(int bitmaps_first, size_t *len)
{
    static const uint8_t bitmap_fields[] = { HPROF_TYPE_OBJECT };
    uint8_t *a = malloc(FAR_BUFFER), *n = malloc(FAR_BUFFER), small[32 << 10];
    for (uint32_t i = 0; i < FAR_BUFFER; i++) {
        a[i] = (uint8_t)(i * 7 + (i >> 9));
        n[i] = (uint8_t)(i * 13 + 1);
    }
    memset(small, 'x', sizeof small);
    struct tbuf d;
    tb_init(&d, 4);
    tb_header(&d, "JAVA PROFILE 1.0.3");
    tb_string(&d, 0x10, "android.graphics.Bitmap");
    tb_string(&d, 0x900, "mBuffer"); /* tb_class names field i 0x900 + i */
    tb_load_class(&d, 1, 0x100, 0x10);
    tb_segment_begin(&d, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&d, 0x100, 0, bitmap_fields, 1);
    const uint8_t ref_a[4] = { 0, 0, 0x10, 0x00 }, ref_a2[4] = { 0, 0, 0x10, 0x10 };
    for (int part = 0; part < 3; part++) {
        if (part == (bitmaps_first ? 0 : 2)) {
            tb_instance(&d, 0x2000, 0x100, ref_a, 4);
            tb_instance(&d, 0x2010, 0x100, ref_a2, 4);
        } else if (part == 1) {
            for (uint32_t i = 0; i < 40; i++)
                tb_prim_array(&d, 0x100000 + 0x10 * (uint64_t)i, HPROF_TYPE_BYTE, sizeof small,
                              small);
        } else {
            tb_prim_array(&d, 0x1000, HPROF_TYPE_BYTE, FAR_BUFFER, a);
            tb_prim_array(&d, 0x1010, HPROF_TYPE_BYTE, FAR_BUFFER, a);
            tb_prim_array(&d, 0x1020, HPROF_TYPE_BYTE, FAR_BUFFER, n);
        }
    }
    tb_segment_end(&d);
    tb_record(&d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    free(a);
    free(n);
    *len = d.len;
    return d.data;
}

static uint8_t *far_buffers_dump(size_t *len)
{
    return far_buffers_dump_in(0, len);
}

/* Every Bitmap of `in` shows the same pixels in `out`. */
static void assert_same_pixels(const uint8_t *in, size_t in_len, const struct shrunk *out)
{
    struct facts before, after;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(facts_load_memory(in, in_len, &before, &err), HPROF_OK);
    ck_assert_int_eq(facts_load_memory(out->data, out->len, &after, &err), HPROF_OK);
    ck_assert_uint_eq(before.bitmaps.count, after.bitmaps.count);
    for (size_t i = 0; i <= before.bitmaps.mask; i++) {
        uint64_t pixels;
        if (before.bitmaps.keys[i] == 0)
            continue;
        ck_assert(idmap_get(&after.bitmaps, before.bitmaps.keys[i], &pixels));
        ck_assert_uint_eq(pixels, before.bitmaps.values[i]);
    }
    facts_free(&before);
    facts_free(&after);
}

START_TEST(buffers_past_the_window_wait_in_the_output_file_and_keep_their_pixels)
{
    size_t len;
    uint8_t *in = far_buffers_dump(&len);
    static const enum hprof_arrays_mode modes[] = { HPROF_ARRAYS_EMPTY, HPROF_ARRAYS_ZERO,
                                               HPROF_ARRAYS_REMOVE };
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        struct hprof_shrink_options o = { .arrays = modes[m], .window = HPROF_WINDOW_MIN };
        struct hprof_error err = { 0 };
        struct shrunk one, multi;
        shrink_to_readable_file_with(in, len, &o, &one);
        ck_assert_msg(shrink_memory(in, len, &o, 0, &multi, &err) == HPROF_OK, "%s",
                      err.message);
        ck_assert_uint_eq(one.stats.window_spilled.count, 3);
        ck_assert_uint_eq(one.stats.window_late, 0);
        ck_assert_uint_le(one.stats.window_peak_bytes, HPROF_WINDOW_MIN);
        assert_same_pixels(in, len, &one);
        /* A2 merged into A, its twin read back from the output; N as
         * --arrays says, as in the multi-pass output */
        ck_assert_uint_eq(one.stats.bitmap_duplicates.count, 1);
        ck_assert_uint_eq(one.stats.bitmap_bytes_compared, FAR_BUFFER);
        ck_assert_uint_eq(one.stats.bitmap_buffers_kept.count, 1);
        ck_assert_uint_eq(one.stats.arrays_emptied.count, multi.stats.arrays_emptied.count);
        ck_assert_uint_eq(one.stats.arrays_zeroed.count, multi.stats.arrays_zeroed.count);
        ck_assert_uint_eq(one.stats.arrays_removed.count, multi.stats.arrays_removed.count);
        assert_within_a_percent(&one, &multi);
        free(one.data);
        free(multi.data);
    }
    free(in);
}
END_TEST

/* So do large arrays past the window: the buffers keep their pixels and
 * merge as in a plain file, the merge resting on SHA-256 since the kept
 * copy, compressed, cannot be read back. */
START_TEST(buffers_past_the_window_wait_in_a_compressed_output_file)
{
    size_t len;
    uint8_t *in = far_buffers_dump(&len);
    struct hprof_shrink_options o = { .arrays = HPROF_ARRAYS_EMPTY, .window = HPROF_WINDOW_MIN };
    struct shrunk plain, packed;
    shrink_to_readable_file_with(in, len, &o, &plain);
    shrink_to_compressed_file(in, len, &o, _i, &packed);
    ck_assert_uint_eq(packed.stats.window_spilled.count, 3);
    ck_assert_uint_eq(packed.stats.window_late, 0);
    ck_assert_uint_eq(packed.stats.bitmap_duplicates.count, 1);
    ck_assert_uint_eq(packed.stats.bitmap_bytes_compared, 0);
    assert_same_pixels(in, len, &packed);
    ck_assert_uint_eq(packed.len, plain.len);
    ck_assert(memcmp(packed.data, plain.data, plain.len) == 0);
    free(plain.data);
    free(packed.data);
    free(in);
}
END_TEST

/* The Bitmaps first: the window lets them go to wait apart, and their
 * buffers, when they come, are decided at once: A kept, A2 merged. */
START_TEST(bitmaps_past_the_window_wait_apart_for_their_buffers_to_merge)
{
    size_t len;
    uint8_t *in = far_buffers_dump_in(1, &len);
    struct hprof_shrink_options o = { .window = HPROF_WINDOW_MIN };
    struct hprof_error err = { 0 };
    struct shrunk one, multi;
    ck_assert_msg(shrink_memory(in, len, &o, 1, &one, &err) == HPROF_OK, "%s", err.message);
    ck_assert_msg(shrink_memory(in, len, &o, 0, &multi, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_gt(one.stats.window_by_rule.count, 0); /* the small arrays */
    ck_assert_uint_eq(one.stats.window_late, 0);
    assert_same_pixels(in, len, &one);
    ck_assert_uint_eq(one.stats.bitmap_duplicates.count, 1);
    ck_assert_uint_eq(one.stats.bitmap_buffers_kept.count, 1);
    assert_within_a_percent(&one, &multi);
    free(one.data);
    free(multi.data);
    free(in);
}
END_TEST

START_TEST(without_a_spill_buffers_past_the_window_are_decided_by_the_rule)
{
    size_t len;
    uint8_t *in = far_buffers_dump(&len);
    struct hprof_shrink_options o = { .window = HPROF_WINDOW_MIN, .spill = HPROF_SPILL_OFF };
    struct shrunk one;
    shrink_to_readable_file_with(in, len, &o, &one);
    ck_assert_uint_eq(one.stats.window_spilled.count, 0);
    ck_assert_uint_eq(one.stats.window_late, 2); /* A's Bitmap and A2's */
    ck_assert_uint_eq(one.stats.bitmap_buffers_kept.count, 0);
    free(one.data);
    free(in);
}
END_TEST

/* Room for two: when N comes, A, the oldest waiting, leaves by the rule. */
START_TEST(past_the_spill_limit_the_oldest_set_aside_leaves_by_the_rule)
{
    size_t len;
    uint8_t *in = far_buffers_dump(&len);
    struct hprof_shrink_options o = { .window = HPROF_WINDOW_MIN, .spill = 2 * FAR_BUFFER };
    struct shrunk one;
    shrink_to_readable_file_with(in, len, &o, &one);
    ck_assert_uint_eq(one.stats.window_spilled.count, 3);
    ck_assert_uint_eq(one.stats.window_late, 1);
    ck_assert_uint_eq(one.stats.bitmap_buffers_kept.count, 1); /* A2, for its Bitmap */
    ck_assert_uint_eq(one.stats.bitmap_duplicates.count, 0);
    free(one.data);
    free(in);
}
END_TEST

/* A String's 128 KiB value, set aside before its String comes, waits
 * there for the keep rule whose holder comes last; then two arrays nobody
 * claims are set aside, with room for two: the older of those leaves by
 * the rule, not the value, older still, whose text the rule keeps. */
static uint8_t *value_kept_past_the_spill_limit_dump(const uint8_t *text, size_t *len)
{
    uint8_t *other = malloc(FAR_BUFFER), small[32 << 10];
    memset(other, 'o', FAR_BUFFER);
    memset(small, 'x', sizeof small);
    struct tbuf d;
    keep_rule_classes(&d);
    const uint8_t to_value[4] = { 0, 0, 0x10, 0x00 }, to_string[4] = { 0, 0, 0x30, 0x00 };
    /* the value, then 1.25 MiB: it is set aside before its String comes */
    tb_prim_array(&d, 0x1000, HPROF_TYPE_CHAR, FAR_BUFFER / 2, text);
    for (uint32_t i = 0; i < 40; i++)
        tb_prim_array(&d, 0x100000 + 0x10 * (uint64_t)i, HPROF_TYPE_BYTE, sizeof small, small);
    tb_instance(&d, 0x3000, 0x100, to_value, 4);
    tb_prim_array(&d, 0x1010, HPROF_TYPE_BYTE, FAR_BUFFER, other);
    tb_prim_array(&d, 0x1020, HPROF_TYPE_BYTE, FAR_BUFFER, other);
    for (uint32_t i = 0; i < 40; i++)
        tb_prim_array(&d, 0x200000 + 0x10 * (uint64_t)i, HPROF_TYPE_BYTE, sizeof small, small);
    tb_instance(&d, 0x4000, 0x110, to_string, 4);
    tb_segment_end(&d);
    tb_record(&d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    free(other);
    *len = d.len;
    return d.data;
}

START_TEST(past_the_spill_limit_a_value_waiting_for_keep_rules_keeps_its_text)
{
    static const char *const keep_key[] = { "Keep.key" };
    uint8_t *text = malloc(FAR_BUFFER);
    for (uint32_t i = 0; i < FAR_BUFFER; i += 2) { /* UTF-16BE letters */
        text[i] = 0;
        text[i + 1] = (uint8_t)('a' + (i / 2 * 7 + i / 512) % 26);
    }
    size_t len;
    uint8_t *in = value_kept_past_the_spill_limit_dump(text, &len);
    /* --redact=strings: =all leaves nothing to read back, so sets nothing aside */
    struct hprof_shrink_options o = { .redact = HPROF_REDACT_STRINGS, .redact_keep = keep_key,
                                      .n_redact_keep = 1, .window = HPROF_WINDOW_MIN,
                                      .spill = 2 * FAR_BUFFER };
    struct hprof_error err = { 0 };
    struct shrunk one, multi;
    shrink_to_readable_file_with(in, len, &o, &one);
    ck_assert_msg(shrink_memory(in, len, &o, 0, &multi, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(one.stats.window_spilled.count, 3);
    ck_assert_uint_eq(one.stats.window_late, 0);
    ck_assert_msg(memmem(multi.data, multi.len, text, FAR_BUFFER) != NULL,
                  "the multi-pass shrink redacted the text the rule keeps");
    ck_assert_msg(memmem(one.data, one.len, text, FAR_BUFFER) != NULL,
                  "the text the rule keeps was redacted at the spill's limit");
    ck_assert_uint_eq(one.stats.strings_redacted.count, multi.stats.strings_redacted.count);
    free(one.data);
    free(multi.data);
    free(in);
    free(text);
}
END_TEST

/* A file system that refuses a file reaching the scratch area (here a
 * limit on file size, EFBIG): the rule decides, the output is whole. */
START_TEST(a_file_that_refuses_the_scratch_area_leaves_the_rule_to_decide)
{
    size_t len;
    uint8_t *in = far_buffers_dump(&len);
    struct rlimit was, small = { 64u << 20, 64u << 20 };
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &was), 0);
    void (*old)(int) = signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    struct hprof_shrink_options o = { .window = HPROF_WINDOW_MIN };
    struct shrunk one;
    shrink_to_readable_file_with(in, len, &o, &one);
    setrlimit(RLIMIT_FSIZE, &was);
    signal(SIGXFSZ, old);
    ck_assert_uint_eq(one.stats.window_spilled.count, 0);
    ck_assert_uint_eq(one.stats.window_late, 2);
    struct hprof_verify_report rep;
    struct hprof_error err = { 0 };
    ck_assert_msg(tl_verify_memory(one.data, one.len, &rep, &err) == HPROF_OK, "%s", err.message);
    free(one.data);
    free(in);
}
END_TEST

/* A stream that gives its bytes a few KiB at a time: the reader hands
 * out a large object array in chunks, as it does from a pipe. */
struct trickle {
    const uint8_t *data;
    size_t len, at;
};

static int trickle_read(void *ctx, void *buf, size_t len, size_t *got, struct hprof_error *err)
{
    struct trickle *t = ctx;
    (void)err;
    size_t n = t->len - t->at < 3000 ? t->len - t->at : 3000;
    *got = n < len ? n : len;
    memcpy(buf, t->data + t->at, *got);
    t->at += *got;
    return HPROF_OK;
}

/* The dump `d`, given a few KiB at a time, shrunk in one pass into a file
 * open for reading too: the output in `out`, the file checked to hold it
 * and no more (the scratch area cut off), and to verify. */
static void shrink_trickle_to_file(const struct tbuf *d, const struct hprof_shrink_options *o,
                                   struct shrunk *out)
{
    char path[] = "/tmp/check_one_pass.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    unlink(path);
    struct hprof_error err = { 0 };
    struct trickle t = { d->data, d->len, 0 };
    struct hprof_reader *r;
    ck_assert_int_eq(hprof_reader_open_stream(&r, trickle_read, &t, &err), HPROF_OK);
    struct hprof_sink *sink = hprof_sink_new_fd(fd, &err);
    int rc = hprof_shrink_one_pass(r, sink, o, &out->stats, &err);
    if (rc == HPROF_OK)
        rc = hprof_sink_finish(sink);
    ck_assert_msg(rc == HPROF_OK, "%s", err.message);
    read_output_file(fd, sink, out);
    struct hprof_verify_report rep;
    ck_assert_msg(tl_verify_memory(out->data, out->len, &rep, &err) == HPROF_OK, "%s",
                  err.message);
    hprof_reader_free(r);
    hprof_sink_free(sink);
    close(fd);
}

/* An Android dump begun: DumpData (0x100: buffers, natives) and byte[][]
 * (0x200) dumped, with `with_bitmap` android.graphics.Bitmap (0x400:
 * mBuffer) too, in an open segment. */
static void dump_data_classes(struct tbuf *d, int with_bitmap)
{
    static const uint64_t names[2] = { 0x20, 0x21 }, buffer_name[1] = { 0x22 };
    static const uint8_t types[2] = { HPROF_TYPE_OBJECT, HPROF_TYPE_OBJECT };
    tb_init(d, 4);
    tb_header(d, "JAVA PROFILE 1.0.3");
    tb_string(d, 0x10, "android.graphics.Bitmap$DumpData");
    tb_string(d, 0x11, "byte[][]");
    tb_string(d, 0x20, "buffers");
    tb_string(d, 0x21, "natives");
    tb_load_class(d, 1, 0x100, 0x10);
    tb_load_class(d, 2, 0x200, 0x11);
    if (with_bitmap) {
        tb_string(d, 0x12, "android.graphics.Bitmap");
        tb_string(d, 0x22, "mBuffer");
        tb_load_class(d, 3, 0x400, 0x12);
    }
    tb_segment_begin(d, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class_named(d, 0x100, 0, names, types, 2);
    tb_class(d, 0x200, 0, NULL, 0);
    if (with_bitmap)
        tb_class_named(d, 0x400, 0, buffer_name, types, 1);
}

/* A DumpData (0x3000) and its array of buffers (0x5000), which names
 * 0x1000 and 0x1010. */
static void dump_data_naming_two_buffers(struct tbuf *d)
{
    static const uint8_t fields[8] = { 0, 0, 0x50, 0 }; /* buffers 0x5000, natives null */
    static const uint8_t elements[8] = { 0, 0, 0x10, 0, 0, 0, 0x10, 0x10 };
    tb_instance(d, 0x3000, 0x100, fields, 8);
    tb_u1(d, HPROF_OBJECT_ARRAY_DUMP);
    tb_id(d, 0x5000);
    tb_u4(d, 1);
    tb_u4(d, 2);
    tb_id(d, 0x200);
    tb_bytes(d, elements, sizeof elements);
}

/* A DumpData whose array of buffers (40,000 elements, the last a 10 KB
 * buffer read before it, or a 128 KiB one set aside past the window)
 * comes in chunks: the buffer may go out only once the array has. */
START_TEST(dump_data_buffers_in_chunks_hold_what_they_name_until_they_end)
{
    const int set_aside = _i == 1;
    const uint32_t xn = set_aside ? 128u << 10 : 10000, elements = 40000;
    uint8_t *x = malloc(xn), small[32 << 10], *el = calloc(elements, 4);
    for (uint32_t i = 0; i < xn; i++)
        x[i] = (uint8_t)(i * 5 + 1);
    memset(small, 'x', sizeof small);
    el[4 * (elements - 1) + 2] = 0x10; /* 0x1000 */
    struct tbuf d;
    dump_data_classes(&d, 0);
    tb_prim_array(&d, 0x1000, HPROF_TYPE_BYTE, xn, x);
    for (uint32_t i = 0; set_aside && i < 40; i++)
        tb_prim_array(&d, 0x100000 + 0x10 * (uint64_t)i, HPROF_TYPE_BYTE, sizeof small, small);
    const uint8_t fields[8] = { 0, 0, 0x50, 0 }; /* buffers 0x5000, natives null */
    tb_instance(&d, 0x3000, 0x100, fields, 8);
    tb_u1(&d, HPROF_OBJECT_ARRAY_DUMP);
    tb_id(&d, 0x5000);
    tb_u4(&d, 1);
    tb_u4(&d, elements);
    tb_id(&d, 0x200);
    tb_bytes(&d, el, 4 * (size_t)elements);
    tb_segment_end(&d);
    tb_record(&d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    struct hprof_shrink_options o = { .window = HPROF_WINDOW_MIN };
    struct shrunk out;
    shrink_trickle_to_file(&d, &o, &out);
    ck_assert_uint_eq(out.stats.window_spilled.count, (uint64_t)set_aside);
    ck_assert_uint_eq(out.stats.window_late, 0);
    ck_assert_ptr_nonnull(memmem(out.data, out.len, x, xn)); /* the buffer kept */
    free(out.data);
    free(x);
    free(el);
    tb_free(&d);
}
END_TEST

/* A DumpData whose array of buffers comes before its two buffers, equal
 * (0x1000 and 0x1010): the array is written first, naming both. */
static void dump_data_before_its_buffers(struct tbuf *d)
{
    uint8_t pixels[4096];
    for (size_t i = 0; i < sizeof pixels; i++)
        pixels[i] = (uint8_t)(i * 7 + 3);
    dump_data_classes(d, 0);
    dump_data_naming_two_buffers(d);
    tb_prim_array(d, 0x1000, HPROF_TYPE_BYTE, sizeof pixels, pixels);
    tb_prim_array(d, 0x1010, HPROF_TYPE_BYTE, sizeof pixels, pixels);
    tb_segment_end(d);
    tb_record(d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
}

/* Into a file, the second merges into the first as in the multi-pass
 * shrink: the array's slot, written already, is patched to name the
 * first, and nothing is late; into memory, which cannot be patched, it
 * stays whole, and is counted late. */
START_TEST(dump_data_buffers_after_their_array_merge_where_the_output_can_be_patched)
{
    static const uint8_t twice_the_first[8] = { 0, 0, 0x10, 0, 0, 0, 0x10, 0 };
    static const uint8_t second_record[5] = { HPROF_PRIMITIVE_ARRAY_DUMP, 0, 0, 0x10, 0x10 };
    struct tbuf d;
    dump_data_before_its_buffers(&d);
    struct hprof_shrink_options o = { 0 };
    struct hprof_error err = { 0 };
    struct shrunk one, multi;
    ck_assert_msg(shrink_memory(d.data, d.len, &o, 0, &multi, &err) == HPROF_OK, "%s",
                  err.message);
    ck_assert_uint_eq(multi.stats.bitmap_duplicates.count, 1);
    ck_assert_ptr_nonnull(memmem(multi.data, multi.len, twice_the_first, 8));
    ck_assert_ptr_null(memmem(multi.data, multi.len, second_record, 5));
    if (_i == 0) {
        shrink_to_readable_file_with(d.data, d.len, &o, &one);
        ck_assert_uint_eq(one.stats.bitmap_duplicates.count, 1);
        ck_assert_uint_eq(one.stats.window_late, 0);
        ck_assert_ptr_nonnull(memmem(one.data, one.len, twice_the_first, 8));
        ck_assert_ptr_null(memmem(one.data, one.len, second_record, 5));
        assert_within_a_percent(&one, &multi);
    } else {
        ck_assert_msg(shrink_memory(d.data, d.len, &o, 1, &one, &err) == HPROF_OK, "%s",
                      err.message);
        ck_assert_uint_eq(one.stats.bitmap_duplicates.count, 0);
        ck_assert_uint_eq(one.stats.window_late, 1);
    }
    free(one.data);
    free(multi.data);
    tb_free(&d);
}
END_TEST

/* A Bitmap and its buffer (0x1000), then a DumpData whose array of
 * buffers names it and its twin (0x1010), which comes after the array:
 * the first of the twins stays, as in the multi-pass shrink, the array's
 * slot of the second patched to name it. */
START_TEST(of_twins_around_an_array_of_buffers_the_first_stays)
{
    static const uint8_t twice_the_first[8] = { 0, 0, 0x10, 0, 0, 0, 0x10, 0 };
    static const uint8_t second_record[5] = { HPROF_PRIMITIVE_ARRAY_DUMP, 0, 0, 0x10, 0x10 };
    uint8_t pixels[4096];
    for (size_t i = 0; i < sizeof pixels; i++)
        pixels[i] = (uint8_t)(i * 11 + 5);
    struct tbuf d;
    dump_data_classes(&d, 1);
    const uint8_t bitmap[4] = { 0, 0, 0x10, 0 }; /* mBuffer 0x1000 */
    tb_instance(&d, 0x4000, 0x400, bitmap, 4);
    tb_prim_array(&d, 0x1000, HPROF_TYPE_BYTE, sizeof pixels, pixels);
    dump_data_naming_two_buffers(&d);
    tb_prim_array(&d, 0x1010, HPROF_TYPE_BYTE, sizeof pixels, pixels);
    size_t len;
    uint8_t *in = end_heap_dump(&d, &len);
    struct hprof_shrink_options o = { 0 };
    struct hprof_error err = { 0 };
    struct shrunk one, multi;
    ck_assert_msg(shrink_memory(in, len, &o, 0, &multi, &err) == HPROF_OK, "%s", err.message);
    shrink_to_readable_file_with(in, len, &o, &one);
    ck_assert_uint_eq(one.stats.window_late, 0);
    for (int i = 0; i < 2; i++) {
        const struct shrunk *out = i ? &one : &multi;
        ck_assert_uint_eq(out->stats.bitmap_duplicates.count, 1);
        ck_assert_ptr_nonnull(memmem(out->data, out->len, twice_the_first, 8));
        ck_assert_ptr_null(memmem(out->data, out->len, second_record, 5));
    }
    free(one.data);
    free(multi.data);
    free(in);
}
END_TEST

/* An Android dump of twin Bitmap buffers 0x1001 and 0x1002 (equal
 * pixels), Bitmaps 0x2001 and 0x2002 naming them, and roots, in the order
 * `plan` gives: "aN" buffer N, "bN" the Bitmap of buffer N, "rN" a root
 * naming buffer N, "fN" an array of 600 KiB nobody claims (filling a
 * window of 1 MiB), "sN" a java.lang.String 0x3000 + N whose value is
 * buffer N (as reflection or JNI can make it); "AN" buffer N of 96 KiB,
 * large enough to be set aside (same pattern). */
static uint8_t *twins_dump(const char *plan, size_t *len)
{
    static const uint8_t bitmap_fields[] = { HPROF_TYPE_OBJECT };
    static const uint64_t string_names[] = { 0x902 };
    const size_t small = 3000, large = (size_t)96 << 10;
    uint8_t *pixels = malloc(large);
    for (size_t i = 0; i < large; i++)
        pixels[i] = (uint8_t)(i * 7 + 3);
    struct tbuf d;
    tb_init(&d, 4);
    tb_header(&d, "JAVA PROFILE 1.0.3");
    tb_string(&d, 0x10, "android.graphics.Bitmap");
    tb_string(&d, 0x900, "mBuffer");
    tb_load_class(&d, 1, 0x100, 0x10);
    if (strchr(plan, 's') != NULL) {
        tb_string(&d, 0x11, "java.lang.String");
        tb_string(&d, 0x902, "value");
        tb_load_class(&d, 2, 0x200, 0x11);
    }
    tb_segment_begin(&d, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&d, 0x100, 0, bitmap_fields, 1);
    if (strchr(plan, 's') != NULL)
        tb_class_named(&d, 0x200, 0, string_names, bitmap_fields, 1);
    uint8_t *filler = calloc(600 << 10, 1);
    for (const char *p = plan; p[0] != '\0'; p += p[2] == ' ' ? 3 : 2) {
        uint32_t buffer = 0x1000u + (uint32_t)(p[1] - '0');
        const uint8_t ref[4] = { 0, 0, (uint8_t)(buffer >> 8), (uint8_t)buffer };
        if (p[0] == 'f')
            tb_prim_array(&d, 0x8000 + buffer, HPROF_TYPE_BYTE, 600 << 10, filler);
        else if (p[0] == 'a' || p[0] == 'A')
            tb_prim_array(&d, buffer, HPROF_TYPE_BYTE, p[0] == 'a' ? small : large, pixels);
        else if (p[0] == 'b')
            tb_instance(&d, 0x1000 + buffer, 0x100, ref, 4);
        else if (p[0] == 's')
            tb_instance(&d, 0x2000 + buffer, 0x200, ref, 4);
        else {
            tb_u1(&d, HPROF_ROOT_UNKNOWN);
            tb_id(&d, buffer);
        }
    }
    free(filler);
    free(pixels);
    return end_heap_dump(&d, len);
}

/* Every key of `a` is in `b` with the same value (a map) or at all. */
static int map_within(const struct idmap *a, const struct idmap *b)
{
    for (size_t i = 0; i <= a->mask; i++) {
        uint64_t v;
        if (a->keys[i] != 0 &&
            (!idmap_get(b, a->keys[i], &v) || (a->values != NULL && v != a->values[i])))
            return 0;
    }
    return 1;
}

/* The same objects, and every instance's fields (its references) the same. */
static int same_objects(const struct facts *a, const struct facts *b)
{
    return a->objects.count == b->objects.count && map_within(&a->objects, &b->objects) &&
           a->instance_hash.count == b->instance_hash.count &&
           map_within(&a->instance_hash, &b->instance_hash);
}

/* The one pass's output `one` of a dump whose multi-pass output is
 * `multi`: whether an analyzer sees the same objects and references in
 * both (and no dangling reference the multi-pass output lacks). */
static int same_view_as(const struct shrunk *one, const struct shrunk *multi)
{
    struct hprof_error err = { 0 };
    struct facts a, b;
    ck_assert_int_eq(facts_load_memory(multi->data, multi->len, &a, &err), HPROF_OK);
    ck_assert_int_eq(facts_load_memory(one->data, one->len, &b, &err), HPROF_OK);
    ck_assert_uint_eq(b.dangling.count, a.dangling.count);
    int same = same_objects(&a, &b);
    facts_free(&a);
    facts_free(&b);
    return same;
}

/* The one pass (with a window of `window` bytes, 0: the default) and the
 * multi-pass shrink of twins_dump(plan): the one pass's window_late, the
 * same through a file it can read back (twins confirmed byte for byte)
 * and into memory (by SHA-256), and whether an analyzer sees the same
 * objects and references as in the multi-pass output, in both. */
static uint64_t twins_late_in(const char *plan, uint64_t window, int *same_view)
{
    size_t len;
    uint8_t *in = twins_dump(plan, &len);
    struct hprof_shrink_options o = { .window = window };
    struct hprof_error err = { 0 };
    struct shrunk file, memory, multi;
    ck_assert_msg(shrink_memory(in, len, &o, 0, &multi, &err) == HPROF_OK, "%s", err.message);
    shrink_to_readable_file_with(in, len, &o, &file);
    ck_assert_msg(shrink_memory(in, len, &o, 1, &memory, &err) == HPROF_OK, "%s", err.message);
    ck_assert_msg(file.stats.window_late == memory.stats.window_late, "%s: %llu late, %llu",
                  plan, (unsigned long long)file.stats.window_late,
                  (unsigned long long)memory.stats.window_late);
    *same_view = same_view_as(&file, &multi);
    ck_assert_int_eq(same_view_as(&memory, &multi), *same_view);
    uint64_t late = file.stats.window_late;
    free(file.data);
    free(memory.data);
    free(multi.data);
    free(in);
    return late;
}

static uint64_t twins_late(const char *plan, int *same_view)
{
    return twins_late_in(plan, 0, same_view);
}

/* A root names a twin before its Bitmap claims it: the twin stays, as the
 * multi-pass shrink keeps it (its Bitmap takes the first). */
START_TEST(a_root_pins_a_twin_buffer)
{
    int same;
    ck_assert_uint_eq(twins_late("a1 b1 r2 a2 b2", &same), 0);
    ck_assert(same);
    ck_assert_uint_eq(twins_late("a1 a2 r2 b1 b2", &same), 0);
    ck_assert(same);
}
END_TEST

/* Every order of two twins, their Bitmaps and a root naming either (or
 * none), in a window that holds them all: nothing late, and the objects
 * and references of the multi-pass output. */
START_TEST(twins_in_any_order_are_the_multi_pass_ones)
{
    static const char *const items[] = { "a1", "a2", "b1", "b2" };
    static const int perms[24][4] = {
        { 0, 1, 2, 3 }, { 0, 1, 3, 2 }, { 0, 2, 1, 3 }, { 0, 2, 3, 1 }, { 0, 3, 1, 2 },
        { 0, 3, 2, 1 }, { 1, 0, 2, 3 }, { 1, 0, 3, 2 }, { 1, 2, 0, 3 }, { 1, 2, 3, 0 },
        { 1, 3, 0, 2 }, { 1, 3, 2, 0 }, { 2, 0, 1, 3 }, { 2, 0, 3, 1 }, { 2, 1, 0, 3 },
        { 2, 1, 3, 0 }, { 2, 3, 0, 1 }, { 2, 3, 1, 0 }, { 3, 0, 1, 2 }, { 3, 0, 2, 1 },
        { 3, 1, 0, 2 }, { 3, 1, 2, 0 }, { 3, 2, 0, 1 }, { 3, 2, 1, 0 },
    };
    for (int p = 0; p < 24; p++)
        for (int root = 0; root <= 2; root++)
            for (int at = 0; at <= (root ? 4 : 0); at++) {
                char plan[32] = "";
                for (int i = 0; i <= 4; i++) {
                    if (root && i == at)
                        strcat(plan, root == 1 ? "r1 " : "r2 ");
                    if (i < 4) {
                        strcat(plan, items[perms[p][i]]);
                        strcat(plan, " ");
                    }
                }
                plan[strlen(plan) - 1] = '\0';
                int same;
                uint64_t late = twins_late(plan, &same);
                ck_assert_msg(late == 0, "%s: %llu late", plan, (unsigned long long)late);
                ck_assert_msg(same, "%s: another view", plan);
            }
}
END_TEST

/* Twins whose Bitmaps come in another order than the buffers: the first
 * read is kept, as in the multi-pass shrink, while the window holds it.
 * Once a full window decided the second (a buffer claimed waits only for
 * pins), a claim of the first comes too late, and says so. */
START_TEST(twins_claimed_out_of_order_keep_the_first_read_unless_late)
{
    const uint64_t small = 1 << 20;
    int same;
    ck_assert_uint_eq(twins_late("a1 a2 b2 b1", &same), 0);
    ck_assert(same);
    ck_assert_uint_eq(twins_late_in("a1 a2 b2 f1 b1", small, &same), 0);
    ck_assert(same);
    ck_assert_uint_eq(twins_late_in("a1 a2 b2 f1 f2 b1", small, &same), 1);
    ck_assert(!same);
}
END_TEST

/* The text of String 0x3000 + n in the input and in `out` (hashes of its
 * value's contents): equal? */
static int string_text_kept(const uint8_t *in, size_t len, const struct shrunk *out, unsigned n)
{
    struct facts before, after;
    struct hprof_error err = { 0 };
    uint64_t was = 0, is = 1;
    ck_assert_int_eq(facts_load_memory(in, len, &before, &err), HPROF_OK);
    ck_assert_int_eq(facts_load_memory(out->data, out->len, &after, &err), HPROF_OK);
    ck_assert(idmap_get(&before.strings, 0x3000 + n, &was));
    ck_assert(idmap_get(&after.strings, 0x3000 + n, &is));
    facts_free(&before);
    facts_free(&after);
    return was == is;
}

/* A String whose value is also a Bitmap's buffer, the twin of a buffer
 * read before it (HotSpot's reflection or JNI can make one): the
 * multi-pass shrink gives its Bitmap the first twin and keeps the array
 * whole for the String. The one pass, whatever the order of the String,
 * the buffer and its Bitmap, keeps the String's text too, and where its
 * Bitmap comes before the String has its value, an analyzer sees what the
 * multi-pass output shows. (A Bitmap that comes after its buffer went out
 * as a String's value finds nothing left to merge: that buffer stays
 * unmerged, and the Bitmap is counted late.) */
START_TEST(a_string_whose_value_is_a_twin_buffer_keeps_its_text)
{
    static const struct { const char *plan; int same; } plans[] = {
        { "a1 b1 b2 a2 s2", 1 }, { "a1 b1 b2 s2 a2", 1 }, { "a1 b1 a2 b2 s2", 1 },
        { "a1 b1 s2 b2 a2", 1 }, { "a1 b1 a2 s2 b2", 0 }, { "a1 b1 s2 a2 b2", 0 },
    };
    for (size_t i = 0; i < sizeof plans / sizeof *plans; i++) {
        const char *plan = plans[i].plan;
        size_t len;
        uint8_t *in = twins_dump(plan, &len);
        struct hprof_shrink_options o = { 0 };
        struct hprof_error err = { 0 };
        struct shrunk file, memory, multi;
        ck_assert_msg(shrink_memory(in, len, &o, 0, &multi, &err) == HPROF_OK, "%s", err.message);
        ck_assert_msg(string_text_kept(in, len, &multi, 2), "%s: multi-pass", plan);
        shrink_to_readable_file_with(in, len, &o, &file);
        ck_assert_msg(shrink_memory(in, len, &o, 1, &memory, &err) == HPROF_OK, "%s", err.message);
        ck_assert_msg(string_text_kept(in, len, &file, 2), "%s: text lost in a file", plan);
        ck_assert_msg(string_text_kept(in, len, &memory, 2), "%s: text lost in memory", plan);
        /* where the views may differ, the report says so */
        ck_assert_msg(plans[i].same ? file.stats.window_late == 0 : file.stats.window_late > 0,
                      "%s: %llu late", plan, (unsigned long long)file.stats.window_late);
        ck_assert_msg(!plans[i].same || same_view_as(&file, &multi), "%s: another view", plan);
        ck_assert_msg(!plans[i].same || same_view_as(&memory, &multi), "%s: another view (memory)",
                      plan);
        free(file.data);
        free(memory.data);
        free(multi.data);
        free(in);
    }
}
END_TEST

/* A String whose value went out as a Bitmap's buffer, past a full window,
 * holds its bytes whole, as in the multi-pass output: not late.  Under
 * --redact those bytes went out as pixels, not redacted as the String's
 * text the multi-pass shrink redacts: late, so that the report says so. */
START_TEST(a_string_after_its_value_went_out_as_pixels_is_late_only_under_redaction)
{
    size_t len;
    uint8_t *in = twins_dump("a1 b1 f1 f2 s1", &len);
    struct hprof_shrink_options o = { .window = HPROF_WINDOW_MIN };
    struct hprof_error err = { 0 };
    struct shrunk plain, redacted, multi;
    ck_assert_msg(shrink_memory(in, len, &o, 1, &plain, &err) == HPROF_OK, "%s", err.message);
    ck_assert_msg(shrink_memory(in, len, &o, 0, &multi, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(plain.stats.window_late, 0);
    ck_assert(string_text_kept(in, len, &plain, 1));
    ck_assert(same_view_as(&plain, &multi));
    o.redact = HPROF_REDACT_STRINGS;
    ck_assert_msg(shrink_memory(in, len, &o, 1, &redacted, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_gt(redacted.stats.window_late, 0);
    free(plain.data);
    free(redacted.data);
    free(multi.data);
    free(in);
}
END_TEST

/* A buffer set aside in the output file that its Bitmap keeps as it is
 * (--keep-duplicates) still waits there when a String names it as its
 * value: it goes out as that String's value, as in the multi-pass output,
 * so under --redact=strings its bytes, the String's text, are redacted
 * rather than kept as pixels. */
START_TEST(a_set_aside_buffer_a_string_claims_later_is_redacted_as_its_text)
{
    size_t len;
    uint8_t *in = twins_dump("A1 f1 f2 b1 s1", &len);
    struct hprof_shrink_options o = { .window = HPROF_WINDOW_MIN, .keep_duplicates = 1,
                                      .redact = HPROF_REDACT_STRINGS };
    struct hprof_error err = { 0 };
    struct shrunk one, multi;
    const uint8_t text[] = { 3, 10, 17, 24, 31, 38, 45, 52 }; /* twins_dump()'s pixels */
    shrink_to_readable_file_with(in, len, &o, &one);
    ck_assert_msg(shrink_memory(in, len, &o, 0, &multi, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_ge(one.stats.window_spilled.count, 1);
    ck_assert_ptr_null(memmem(multi.data, multi.len, text, sizeof text));
    ck_assert_ptr_null(memmem(one.data, one.len, text, sizeof text));
    ck_assert_uint_eq(one.stats.window_late, 0);
    ck_assert(same_view_as(&one, &multi));
    free(one.data);
    free(multi.data);
    free(in);
}
END_TEST

/* Twin buffers larger than the window, named by an array of buffers read
 * before them, cannot be compared: the second is counted late. */
START_TEST(twin_buffers_past_the_window_after_their_array_are_late)
{
    const size_t big = (size_t)2 << 20;
    uint8_t *pixels = malloc(big);
    for (size_t i = 0; i < big; i++)
        pixels[i] = (uint8_t)(i * 13 + 1);
    struct tbuf d;
    dump_data_classes(&d, 0);
    dump_data_naming_two_buffers(&d);
    tb_prim_array(&d, 0x1000, HPROF_TYPE_BYTE, (uint32_t)big, pixels);
    tb_prim_array(&d, 0x1010, HPROF_TYPE_BYTE, (uint32_t)big, pixels);
    free(pixels);
    size_t len;
    uint8_t *in = end_heap_dump(&d, &len);
    struct hprof_shrink_options o = { .window = HPROF_WINDOW_MIN };
    struct shrunk one;
    shrink_to_readable_file_with(in, len, &o, &one);
    ck_assert_uint_eq(one.stats.window_late, 1);
    free(one.data);
    free(in);
}
END_TEST

/* A 2 MiB array, past a 1 MiB window, set aside as it comes in chunks,
 * until the file refuses more (a limit on file size just past the
 * scratch area's start): it goes by the rule from what it has, and the
 * run goes on. */
START_TEST(a_file_that_refuses_the_scratch_area_midway_leaves_the_array_to_the_rule)
{
    const uint32_t n = 2u << 20;
    uint8_t *big = malloc(n);
    for (uint32_t i = 0; i < n; i++)
        big[i] = (uint8_t)(i * 3 + 1);
    struct tbuf d;
    tb_init(&d, 4);
    tb_header(&d, "JAVA PROFILE 1.0.3");
    tb_segment_begin(&d, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_prim_array(&d, 0x1000, HPROF_TYPE_BYTE, n, big);
    tb_prim_array(&d, 0x1010, HPROF_TYPE_BYTE, 4, "abcd");
    tb_segment_end(&d);
    tb_record(&d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    struct rlimit was, small = { (1ull << 42) + (300u << 10), (1ull << 42) + (300u << 10) };
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &was), 0);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    struct hprof_shrink_options o = { .window = HPROF_WINDOW_MIN };
    struct shrunk out;
    shrink_trickle_to_file(&d, &o, &out);
    setrlimit(RLIMIT_FSIZE, &was);
    ck_assert_uint_eq(out.stats.window_spilled.count, 1);
    ck_assert_uint_eq(out.stats.window_by_rule.bytes, n);
    ck_assert_uint_eq(out.stats.arrays_emptied.count, 2);
    free(out.data);
    free(big);
    tb_free(&d);
}
END_TEST

/* Two arrays larger than the window: the first set aside, the second
 * refused by the file (a limit on file size just past the first): the
 * first leaves by the rule at once, giving its blocks back to the output,
 * rather than wait to the end of the heap dump. */
START_TEST(a_file_that_refuses_the_scratch_area_lets_what_waits_there_go)
{
    const uint32_t n = 3u << 19; /* 1.5 MiB */
    uint8_t *big = calloc(1, n);
    struct tbuf d;
    tb_init(&d, 4);
    tb_header(&d, "JAVA PROFILE 1.0.3");
    tb_segment_begin(&d, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_prim_array(&d, 0x1000, HPROF_TYPE_BYTE, n, big);
    tb_prim_array(&d, 0x1010, HPROF_TYPE_BYTE, n, big);
    tb_segment_end(&d);
    tb_record(&d, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    struct rlimit was, small = { (1ull << 42) + n + (64u << 10), (1ull << 42) + n + (64u << 10) };
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &was), 0);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    struct hprof_shrink_options o = { .window = HPROF_WINDOW_MIN };
    struct shrunk out;
    shrink_to_readable_file_with(d.data, d.len, &o, &out);
    setrlimit(RLIMIT_FSIZE, &was);
    ck_assert_uint_eq(out.stats.window_spilled.count, 1);
    ck_assert_uint_eq(out.stats.window_by_rule.bytes, 2 * (uint64_t)n); /* both */
    ck_assert_uint_eq(out.stats.arrays_emptied.count, 2);
    free(out.data);
    free(big);
    tb_free(&d);
}
END_TEST

START_TEST(a_mapping_is_refused_with_a_usage_error)
{
    size_t len;
    uint8_t *in = tl_read_dump(tl_fixtures[1], &len);
    struct hprof_error err = { 0 };
    struct hprof_shrink_options o = { .mapping = (const struct hprof_mapping *)in };
    struct shrunk one;
    ck_assert_int_eq(shrink_memory(in, len, &o, 1, &one, &err), HPROF_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(err.message, "multi-pass"));
    free(one.data);
    free(in);
}
END_TEST

/* ---- Many Bitmaps ---------------------------------------------------------------- */

/* An Android dump of `n` Bitmaps (android.graphics.Bitmap, mBuffer), each
 * read right after its 16-byte buffer, all buffers equal; or, `shared`,
 * every Bitmap naming one buffer read first. */
static uint8_t *many_bitmaps(uint32_t n, int shared, size_t *len)
{
    static const uint64_t buffer_name[1] = { 0x22 };
    static const uint8_t object[1] = { HPROF_TYPE_OBJECT };
    static const uint8_t pixels[16] = { 0x11, 0x22, 0x33, 0xff };
    struct tbuf b;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_string(&b, 0x12, "android.graphics.Bitmap");
    tb_string(&b, 0x22, "mBuffer");
    tb_load_class(&b, 1, 0x400, 0x12);
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class_named(&b, 0x400, 0, buffer_name, object, 1);
    if (shared)
        tb_prim_array(&b, 0x1000, HPROF_TYPE_BYTE, sizeof pixels, pixels);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t buffer = shared ? 0x1000 : 0x100000 + 0x10 * i;
        uint8_t ref[4] = { (uint8_t)(buffer >> 24), (uint8_t)(buffer >> 16),
                           (uint8_t)(buffer >> 8), (uint8_t)buffer };
        if (!shared)
            tb_prim_array(&b, buffer, HPROF_TYPE_BYTE, sizeof pixels, pixels);
        tb_instance(&b, 0x100000 + 0x10 * i + 8, 0x400, ref, 4);
    }
    return end_heap_dump(&b, len);
}

/* Tens of thousands of small Bitmaps wait in the window at once: their
 * equal buffers under one key of twins, leaving it oldest first, or the
 * Bitmaps of one shared buffer under its id.  Each step on them takes
 * constant time, not one walk of all that wait: walked, 100,000 copies
 * took two minutes and 250,000 Bitmaps of one buffer as long (the case's
 * timeout says so), not a second. */
START_TEST(many_bitmaps_waiting_under_one_key_take_linear_time)
{
    size_t len;
    uint32_t n = _i ? 250000 : 100000;
    uint8_t *in = many_bitmaps(n, _i, &len);
    struct hprof_error err = { 0 };
    const struct hprof_shrink_options o = { 0 };
    struct shrunk one, multi;
    ck_assert_msg(shrink_memory(in, len, &o, 1, &one, &err) == HPROF_OK, "%s", err.message);
    ck_assert_msg(shrink_memory(in, len, &o, 0, &multi, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(one.stats.window_late, 0);
    ck_assert_uint_eq(one.stats.bitmap_buffers_kept.count, 1);
    ck_assert_uint_eq(one.stats.bitmap_duplicates.count, _i ? 0 : n - 1);
    ck_assert_uint_eq(one.stats.bitmap_duplicates.count, multi.stats.bitmap_duplicates.count);
    free(one.data);
    free(multi.data);
    free(in);
}
END_TEST

/* ---- The window's blocks --------------------------------------------------------- */

/* A block given back is the one the next record of its size class gets,
 * whatever its size within the class (blocks just under 64 KiB share the
 * first large class), with room for what it holds, and counting in the
 * window what it holds (a large one its class). */
START_TEST(window_blocks_are_recycled_by_class)
{
    /* pairs in one class: 16-byte steps to 1 KiB, eighths above, then
     * the first large class */
    static const size_t first[] = { 0, 17, 1000, 1025, 40000, 61441, 65536 };
    static const size_t then[] = { 16, 32, 1008, 1152, 40960, 65535, 65536 };
    struct wait_window w;
    wait_window_init(&w, HPROF_WINDOW_MIN);
    for (size_t i = 0; i < sizeof first / sizeof first[0]; i++) {
        struct held *h = held_new(&w, HELD_PRIMITIVE_ARRAY, first[i]);
        ck_assert_ptr_nonnull(h);
        held_free(&w, h);
        struct held *again = held_new(&w, HELD_PRIMITIVE_ARRAY, then[i]);
        ck_assert_msg(again == h, "%zu bytes did not get the block of %zu", then[i], first[i]);
        memset(again->data, 0xab, then[i]);
        held_free(&w, again);
    }
    /* every size to 70,000 (AddressSanitizer: the room is there) */
    for (size_t n = 0; n <= 70000; n += n < 2048 ? 1 : 61) {
        struct held *h = held_new(&w, HELD_PRIMITIVE_ARRAY, n);
        ck_assert_ptr_nonnull(h);
        ck_assert_uint_ge(h->capacity, n);
        memset(h->data, 0xcd, h->capacity);
        ck_assert_uint_eq(h->bytes, sizeof *h + (n < (64u << 10) ? n : h->capacity));
        held_free(&w, h);
    }
    wait_window_free(&w);
}
END_TEST

/* Blocks given back past their limits are freed: an eighth of the window
 * for the small ones, headers counted, half for the large ones. */
START_TEST(window_spare_blocks_stay_within_their_limits)
{
    enum { MANY = 2000 };
    static struct held *many[MANY];
    struct wait_window w;
    wait_window_init(&w, HPROF_WINDOW_MIN);
    for (int round = 0; round < 2; round++) {
        size_t given = 0;
        for (int i = 0; i < MANY; i++) {
            size_t n = i % 50 == 0 ? 65000 + (size_t)i : 16 + (size_t)(i % 7) * 100;
            ck_assert_ptr_nonnull(many[i] = held_new(&w, HELD_PRIMITIVE_ARRAY, n));
            given += sizeof *many[i] + many[i]->capacity;
        }
        ck_assert_uint_gt(given, HPROF_WINDOW_MIN / 8 + HPROF_WINDOW_MIN / 2);
        for (int i = 0; i < MANY; i++)
            held_free(&w, many[i]);
        uint64_t kept = 0; /* what the small lists hold, blocks whole */
        for (unsigned c = 0; c < HELD_SMALL_CLASSES; c++)
            for (struct held *h = w.small[c]; h != NULL; h = h->link[HELD_ALL].newer)
                kept += sizeof *h + h->capacity;
        ck_assert_uint_eq(kept, w.small_bytes);
        ck_assert_uint_le(w.spare_bytes, HPROF_WINDOW_MIN / 2);
        ck_assert_uint_le(w.small_bytes, HPROF_WINDOW_MIN / 8);
        ck_assert_uint_gt(w.small_bytes, HPROF_WINDOW_MIN / 8 - 2048); /* it filled */
    }
    wait_window_free(&w);
}
END_TEST

/* ---- The id table ------------------------------------------------------------------ */

START_TEST(id_table_matches_a_plain_array_through_a_million_puts_and_takes)
{
    enum { KEYS = 4096 };
    static uint64_t value[KEYS]; /* 0: absent */
    struct id_table t = { 0 };
    unsigned seed = 7;
    for (int op = 0; op < 1000000; op++) {
        unsigned k = (unsigned)rand_r(&seed) % KEYS;
        /* ids as runtimes write them: aligned addresses, close together */
        uint64_t key = 0x12c00000u + 8u * k;
        if (rand_r(&seed) % 3 != 0) {
            uint64_t v = 1 + (uint64_t)op;
            ck_assert_int_eq(id_table_put(&t, key, v), HPROF_OK);
            value[k] = v;
        } else {
            uint64_t got = 0;
            ck_assert_int_eq(id_table_take(&t, key, &got), value[k] != 0);
            ck_assert_uint_eq(got, value[k]);
            value[k] = 0;
        }
    }
    size_t present = 0;
    for (unsigned k = 0; k < KEYS; k++) {
        const uint64_t *v = id_table_find(&t, 0x12c00000u + 8u * k);
        ck_assert_int_eq(v != NULL, value[k] != 0);
        if (v != NULL)
            ck_assert_uint_eq(*v, value[k]);
        present += value[k] != 0;
    }
    ck_assert_uint_eq(t.count, present);
    id_table_free(&t);
}
END_TEST

/* Key 0 marks a free slot: it is never stored, nor counted. */
START_TEST(id_table_never_stores_the_null_id)
{
    struct id_table t = { 0 };
    uint64_t got = 0;
    ck_assert_int_eq(id_table_put(&t, 0, 7), HPROF_OK);
    ck_assert_uint_eq(t.count, 0);
    ck_assert_ptr_null(id_table_find(&t, 0));
    ck_assert_int_eq(id_table_put(&t, 8, 9), HPROF_OK);
    ck_assert_int_eq(id_table_put(&t, 0, 7), HPROF_OK);
    ck_assert_uint_eq(t.count, 1);
    ck_assert_int_eq(id_table_take(&t, 0, &got), 0);
    ck_assert_int_eq(id_table_take(&t, 8, &got), 1);
    ck_assert_uint_eq(got, 9);
    ck_assert_uint_eq(t.count, 0);
    id_table_free(&t);
}
END_TEST

/* Id pages say which aligned ids came before, exactly, across address
 * ranges far apart; an id not aligned is not theirs. */
START_TEST(id_pages_tell_every_aligned_id_seen_before)
{
    static const uint64_t bases[] = { 0x12c00000u, 0x7ff000000000ull, 0x1000u };
    struct id_pages p;
    ck_assert_int_eq(id_pages_init(&p, 16384), HPROF_OK);
    for (int round = 0; round < 2; round++) {
        unsigned seed = 11;
        for (int i = 0; i < 200000; i++) {
            uint64_t id = bases[i % 3] + 8u * ((unsigned)rand_r(&seed) % 50000u) * (1u + i % 3);
            int again = id_pages_test_and_set(&p, id);
            ck_assert_int_ge(again, 0);
            if (round == 1)
                ck_assert_int_eq(again, 1); /* all seen in round 0 */
        }
    }
    ck_assert_int_eq(id_pages_test_and_set(&p, 0x12c00000u + 8u * 50001u * 9u), 0); /* new */
    ck_assert_int_eq(id_pages_test_and_set(&p, 0x12c00003u), -1);
    id_pages_free(&p);
}
END_TEST

/* Past `max_pages` no page is made: ids spread on purpose do not cost a
 * page each without end, and are not held. */
START_TEST(id_pages_stop_at_their_limit)
{
    struct id_pages p;
    ck_assert_int_eq(id_pages_init(&p, 16), HPROF_OK);
    for (uint64_t i = 0; i < 1000; i++)
        ck_assert_int_eq(id_pages_test_and_set(&p, i << 30), i < 16 ? 0 : -1);
    ck_assert_uint_eq(p.n_pages, 16);
    ck_assert_int_eq(id_pages_test_and_set(&p, 5ull << 30), 1); /* a page made still holds */
    id_pages_free(&p);
}
END_TEST

/* An object dumped twice in one heap dump is refused where its second
 * dump is, as the multi-pass shrink refuses it; in the next heap dump of
 * the file, the same id is another object. */
START_TEST(an_object_dumped_twice_is_refused_as_by_the_multi_pass_shrink)
{
    static const uint64_t ids[] = { 0x508, 0x501 }; /* aligned, and not */
    struct tbuf b;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&b, 0x100, 0, NULL, 0);
    tb_instance(&b, ids[_i], 0x100, NULL, 0);
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    size_t one_dump = b.len;
    uint8_t *again = malloc(one_dump);
    memcpy(again, b.data, one_dump);
    tb_bytes(&b, again + 31, one_dump - 31); /* the same heap dump again, past the header */
    free(again);
    struct hprof_shrink_options o = { 0 };
    struct hprof_error err = { 0 };
    struct shrunk out;
    ck_assert_msg(shrink_memory(b.data, b.len, &o, 1, &out, &err) == HPROF_OK, "%s",
                  err.message);
    free(out.data);
    b.len = one_dump - 9; /* cut HEAP_DUMP_END: */
    tb_prim_array(&b, ids[_i], HPROF_TYPE_BYTE, 0, NULL); /* a second object of the id */
    size_t at = b.len - 10 - 4;
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    for (int one_pass = 0; one_pass < 2; one_pass++) {
        ck_assert_int_eq(shrink_memory(b.data, b.len, &o, one_pass, &out, &err), HPROF_ERR_FORMAT);
        ck_assert_msg(strstr(err.message, "is dumped twice") != NULL, "%s", err.message);
        free(out.data);
    }
    char where[64];
    snprintf(where, sizeof where, "offset 0x%zx: PRIMITIVE_ARRAY_DUMP", at);
    ck_assert_msg(strstr(err.message, where) != NULL, "%s, not at %s", err.message, where);
    tb_free(&b);
}
END_TEST

static Suite *one_pass_suite(void)
{
    Suite *s = suite_create("one pass");
    TCase *order = tcase_create("order");
    tcase_set_timeout(order, 120);
    tcase_add_loop_test(order, names_come_before_their_users_and_never_between_segments, 0,
                        TL_N_FIXTURES);
    suite_add_tcase(s, order);
    TCase *same = tcase_create("against the multi-pass shrink");
    tcase_set_timeout(same, 300);
    tcase_add_loop_test(same, one_pass_counts_what_the_multi_pass_shrink_counts, 0,
                        TL_N_FIXTURES);
    tcase_add_test(same, a_window_too_small_says_what_came_too_late);
    tcase_add_test(same, an_instance_leaving_before_its_class_is_late_and_zeroed_under_redaction);
    tcase_add_test(same, names_past_the_window_wait_in_the_output_file);
    tcase_add_test(same, a_class_whose_superclass_is_not_dumped_is_refused_as_by_the_multi_pass_shrink);
    tcase_add_loop_test(same, an_object_dumped_twice_is_refused_as_by_the_multi_pass_shrink, 0, 2);
    tcase_add_loop_test(same, names_past_the_window_wait_in_a_compressed_output_file, 0, 2);
    tcase_add_test(same, names_the_rule_keeps_under_redaction_keep_no_text);
    tcase_add_test(same, a_keep_rule_after_its_strings_value_left_the_window_is_late);
    tcase_add_test(same, a_holder_after_its_nodata_array_is_not_late);
    tcase_add_test(same, every_late_claim_is_counted_after_a_million_values_kept);
    tcase_add_test(same, names_of_classes_dumped_among_objects_go_before_the_heap_dump);
    tcase_add_test(same, a_hotspot_class_loaded_but_never_dumped_keeps_no_unused_name);
    tcase_add_test(same, a_name_of_the_null_id_is_dropped_and_counted_as_by_the_multi_pass_shrink);
    tcase_add_test(same, a_dump_of_names_alone_keeps_its_null_id_name_as_the_multi_pass_shrink_does);
    tcase_add_loop_test(same, strings_sharing_a_waiting_value_stay_within_the_window, 0, 2);
    tcase_add_test(same, a_name_used_late_in_a_heap_dump_outlives_the_rule);
    tcase_add_loop_test(same, an_android_dumps_unused_names_go_out_as_fillers_under_redaction, 0, 4);
    tcase_add_test(same, a_name_used_past_what_the_output_holds_back_keeps_its_filler_and_is_late);
    tcase_add_loop_test(same, a_merge_is_confirmed_byte_for_byte_where_the_output_can_be_read_back,
                        0, TL_N_FIXTURES);
    tcase_add_test(same, a_mapping_is_refused_with_a_usage_error);
    tcase_add_test(same, buffers_past_the_window_wait_in_the_output_file_and_keep_their_pixels);
    tcase_add_loop_test(same, buffers_past_the_window_wait_in_a_compressed_output_file, 0, 2);
    tcase_add_test(same, without_a_spill_buffers_past_the_window_are_decided_by_the_rule);
    tcase_add_test(same, bitmaps_past_the_window_wait_apart_for_their_buffers_to_merge);
    tcase_add_loop_test(same, dump_data_buffers_in_chunks_hold_what_they_name_until_they_end, 0, 2);
    tcase_add_loop_test(same, dump_data_buffers_after_their_array_merge_where_the_output_can_be_patched, 0, 2);
    tcase_add_test(same, of_twins_around_an_array_of_buffers_the_first_stays);
    tcase_add_test(same, twin_buffers_past_the_window_after_their_array_are_late);
    tcase_add_test(same, a_root_pins_a_twin_buffer);
    tcase_add_test(same, twins_in_any_order_are_the_multi_pass_ones);
    tcase_add_test(same, twins_claimed_out_of_order_keep_the_first_read_unless_late);
    tcase_add_test(same, a_string_whose_value_is_a_twin_buffer_keeps_its_text);
    tcase_add_test(same, a_string_after_its_value_went_out_as_pixels_is_late_only_under_redaction);
    tcase_add_test(same, a_set_aside_buffer_a_string_claims_later_is_redacted_as_its_text);
    tcase_add_test(same, a_file_that_refuses_the_scratch_area_midway_leaves_the_array_to_the_rule);
    tcase_add_test(same, past_the_spill_limit_the_oldest_set_aside_leaves_by_the_rule);
    tcase_add_test(same, past_the_spill_limit_a_value_waiting_for_keep_rules_keeps_its_text);
    tcase_add_test(same, a_file_that_refuses_the_scratch_area_leaves_the_rule_to_decide);
    tcase_add_test(same, a_file_that_refuses_the_scratch_area_lets_what_waits_there_go);
    suite_add_tcase(s, same);
    TCase *many = tcase_create("many bitmaps");
    suite_add_tcase(s, many);
    tcase_add_loop_test(many, many_bitmaps_waiting_under_one_key_take_linear_time, 0, 2);
    tcase_set_timeout(many, 60);

    TCase *table = tcase_create("id table");
    tcase_set_timeout(table, 120); /* a million operations, under ThreadSanitizer too */
    tcase_add_test(table, id_table_matches_a_plain_array_through_a_million_puts_and_takes);
    tcase_add_test(table, id_table_never_stores_the_null_id);
    tcase_add_test(table, id_pages_tell_every_aligned_id_seen_before);
    tcase_add_test(table, id_pages_stop_at_their_limit);
    suite_add_tcase(s, table);
    TCase *blocks = tcase_create("window blocks");
    tcase_add_test(blocks, window_blocks_are_recycled_by_class);
    tcase_add_test(blocks, window_spare_blocks_stay_within_their_limits);
    suite_add_tcase(s, blocks);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(one_pass_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
