/*
 * check_deobfuscate.c - the --mapping rewrite (src/common/deobfuscate.c) in
 * hprof_shrink(): class, field and method names come out as the mapping
 * restores them, a name used two ways gets records of its own, what the
 * mapping does not know keeps its name, and the other rewrites find their
 * classes by the original names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deobfuscate.h"
#include "testlib.h"

/* What a dump names: STRING texts by id, and the uses of names. */
struct names_seen {
    struct hprof_visitor base;
    struct idmap text_at;       /* STRING id -> index in `texts` + 1 */
    char *texts[8192];
    size_t n_texts;
    uint64_t string_ids[8192];
    uint64_t class_name[8];     /* LOAD_CLASS name id of class 0x100 * (i + 1) */
    uint64_t field_name[8];     /* the first instance field of class 0x100 * (i + 1) */
    uint64_t static_name[8];
    uint64_t frame_method;
};

static int seen_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct names_seen *n = (struct names_seen *)v;
    ck_assert_msg(!idmap_has(&n->text_at, s->id), "STRING id 0x%llx twice",
                  (unsigned long long)s->id);
    ck_assert_uint_lt(n->n_texts, 8192);
    n->texts[n->n_texts] = strndup((const char *)s->utf8, s->length);
    n->string_ids[n->n_texts] = s->id;
    ck_assert_int_eq(idmap_put(&n->text_at, s->id, ++n->n_texts), HPROF_OK);
    return HPROF_OK;
}

static int seen_load_class(struct hprof_visitor *v, const struct hprof_load_class *c)
{
    struct names_seen *n = (struct names_seen *)v;
    if (c->class_id % 0x100 == 0 && c->class_id / 0x100 - 1 < 8)
        n->class_name[c->class_id / 0x100 - 1] = c->name_id;
    return HPROF_OK;
}

static int seen_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    struct names_seen *n = (struct names_seen *)v;
    if (c->id % 0x100 == 0 && c->id / 0x100 - 1 < 8) {
        n->field_name[c->id / 0x100 - 1] = c->n_fields ? c->fields[0].name_id : 0;
        n->static_name[c->id / 0x100 - 1] = c->n_statics ? c->statics[0].name_id : 0;
    }
    return HPROF_OK;
}

static int seen_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    struct names_seen *n = (struct names_seen *)v;
    if (r->tag == HPROF_TAG_STACK_FRAME)
        n->frame_method = get_id(r->body + 8, 8);
    return HPROF_OK;
}

static const struct hprof_visitor_ops seen_ops = {
    .string = seen_string, .load_class = seen_load_class,
    .class_dump = seen_class_dump, .record = seen_record,
};

static void read_names(const uint8_t *data, size_t len, struct names_seen *n)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    memset(n, 0, sizeof *n);
    n->base.ops = &seen_ops;
    ck_assert_int_eq(idmap_init(&n->text_at, 1), HPROF_OK);
    ck_assert_int_eq(hprof_reader_open_memory(&r, data, len, &err), HPROF_OK);
    ck_assert_msg(hprof_reader_run(r, &n->base) == HPROF_OK, "%s", err.message);
    hprof_reader_free(r);
}

static const char *text_of(const struct names_seen *n, uint64_t id)
{
    uint64_t at;
    return idmap_get(&n->text_at, id, &at) ? n->texts[at - 1] : "(none)";
}

static void free_names(struct names_seen *n)
{
    for (size_t i = 0; i < n->n_texts; i++)
        free(n->texts[i]);
    idmap_free(&n->text_at);
}

/* CLASS_DUMP of `id` with one static and one instance int field. */
static void class_with_fields(struct tbuf *b, uint64_t id, uint64_t static_name, uint64_t field_name)
{
    tb_u1(b, HPROF_CLASS_DUMP);
    tb_id(b, id);
    tb_u4(b, 0);
    for (int i = 0; i < 6; i++) /* super, loader, signers, domain, reserved x2 */
        tb_id(b, 0);
    tb_u4(b, 4);
    tb_u2(b, 0);                /* constants */
    tb_u2(b, static_name ? 1 : 0);
    if (static_name) {
        tb_id(b, static_name);
        tb_u1(b, HPROF_TYPE_INT);
        tb_u4(b, 7);
    }
    tb_u2(b, 1);
    tb_id(b, field_name);
    tb_u1(b, HPROF_TYPE_INT);
}

/* Classes a.b and a.c of the mapping below, and x.Unmapped which it does
 * not know, each with a field named "a" (STRING 0x13); a.b also has a
 * static "b" and a method "a" in a stack frame. */
static void obfuscated_dump(struct tbuf *b)
{
    static const uint8_t one[4] = { 0, 0, 0, 1 };
    tb_init(b, 8);
    tb_header(b, "JAVA PROFILE 1.0.2");
    tb_string(b, 0x10, "a.b");
    tb_string(b, 0x11, "a.c");
    tb_string(b, 0x12, "x.Unmapped");
    tb_string(b, 0x13, "a");
    tb_string(b, 0x14, "b");
    tb_string(b, 0x15, "()V");
    tb_string(b, 0x16, "Foo.java");
    tb_load_class(b, 1, 0x100, 0x10);
    tb_load_class(b, 2, 0x200, 0x11);
    tb_load_class(b, 3, 0x300, 0x12);
    struct tbuf frame;
    tb_init(&frame, 8);
    tb_id(&frame, 0x50);
    tb_id(&frame, 0x13);
    tb_id(&frame, 0x15);
    tb_id(&frame, 0x16);
    tb_u4(&frame, 1);
    tb_u4(&frame, 5);
    tb_record(b, HPROF_TAG_STACK_FRAME, frame.data, (uint32_t)frame.len);
    tb_free(&frame);
    tb_segment_begin(b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    class_with_fields(b, 0x100, 0x14, 0x13);
    class_with_fields(b, 0x200, 0, 0x13);
    class_with_fields(b, 0x300, 0, 0x13);
    tb_instance(b, 0x1000, 0x100, one, 4);
    tb_instance(b, 0x2000, 0x200, one, 4);
    tb_instance(b, 0x3000, 0x300, one, 4);
    tb_segment_end(b);
    tb_record(b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
}

static const char MAPPING[] =
    "# compiler: R8\n"
    "com.example.Foo -> a.b:\n"
    "    int secret -> a\n"
    "    int LIMIT -> b\n"
    "    1:4:void run():10:13 -> a\n"
    "com.example.Bar -> a.c:\n"
    "    int count -> a\n";

static uint8_t *shrink_with(const struct tbuf *in, const struct hprof_mapping *m, size_t *len,
                            struct hprof_shrink_stats *st)
{
    char *path = tl_temp_file(in->data, in->len, ".hprof");
    struct hprof_shrink_options o = { .mapping = m };
    uint8_t *out = tl_shrink_file(path, &o, len, st);
    unlink(path);
    free(path);
    return out;
}

START_TEST(mapping_restores_class_field_and_method_names)
{
    struct tbuf in;
    struct hprof_mapping *m;
    struct hprof_error err = { 0 };
    struct hprof_shrink_stats st;
    size_t len;
    obfuscated_dump(&in);
    ck_assert_msg(mapping_parse(MAPPING, strlen(MAPPING), "t.map", &m, &err) == HPROF_OK, "%s",
                  err.message);
    uint8_t *out = shrink_with(&in, m, &len, &st);
    static struct names_seen n;
    read_names(out, len, &n);
    ck_assert_str_eq(text_of(&n, n.class_name[0]), "com.example.Foo");
    ck_assert_str_eq(text_of(&n, n.class_name[1]), "com.example.Bar");
    ck_assert_str_eq(text_of(&n, n.class_name[2]), "x.Unmapped");
    ck_assert_str_eq(text_of(&n, n.field_name[0]), "secret");
    ck_assert_str_eq(text_of(&n, n.static_name[0]), "LIMIT");
    ck_assert_str_eq(text_of(&n, n.field_name[1]), "count");
    ck_assert_str_eq(text_of(&n, n.field_name[2]), "a"); /* a class the mapping does not know */
    ck_assert_uint_eq(n.field_name[2], 0x13);            /* ... keeps its record */
    ck_assert_str_eq(text_of(&n, n.frame_method), "run");
    ck_assert_uint_eq(st.mapping_classes, 2);
    ck_assert_uint_eq(st.mapping_fields, 3);
    ck_assert_uint_eq(st.mapping_methods, 1);
    ck_assert_uint_eq(st.mapping_strings_added, 6);
    /* the obfuscated class names are used by nothing now: they go */
    for (size_t i = 0; i < n.n_texts; i++)
        ck_assert_msg(strcmp(n.texts[i], "a.b") != 0 && strcmp(n.texts[i], "a.c") != 0,
                      "%s still in the output", n.texts[i]);
    struct hprof_verify_report rep;
    ck_assert_msg(tl_verify_memory(out, len, &rep, &err) == HPROF_OK, "%s", err.message);
    free_names(&n);
    free(out);
    mapping_free(m);
    tb_free(&in);
}
END_TEST

/* A field "a" in two classes, one of them unmapped, and a method "a": one
 * STRING in the input, three names in the output, every id once. */
START_TEST(mapping_gives_a_name_used_two_ways_records_of_its_own)
{
    struct tbuf in;
    struct hprof_mapping *m;
    struct hprof_error err = { 0 };
    size_t len;
    obfuscated_dump(&in);
    ck_assert_int_eq(mapping_parse(MAPPING, strlen(MAPPING), "t.map", &m, &err), HPROF_OK);
    uint8_t *out = shrink_with(&in, m, &len, NULL);
    static struct names_seen n;
    read_names(out, len, &n); /* fails on an id seen twice */
    ck_assert_uint_ne(n.field_name[0], n.field_name[1]);
    ck_assert_uint_ne(n.field_name[0], n.field_name[2]);
    ck_assert_uint_ne(n.frame_method, n.field_name[0]);
    for (size_t i = 0; i < n.n_texts; i++) /* new ids above every id of the input */
        if (n.string_ids[i] > 0x16)
            ck_assert(strcmp(n.texts[i], "a") != 0);
    free_names(&n);
    free(out);
    mapping_free(m);
    tb_free(&in);
}
END_TEST

START_TEST(mapping_that_knows_nothing_changes_nothing)
{
    static const char unrelated[] = "org.other.Thing -> q.r:\n    int x -> y\n";
    struct tbuf in;
    struct hprof_mapping *m;
    struct hprof_error err = { 0 };
    size_t len, plain_len;
    obfuscated_dump(&in);
    ck_assert_int_eq(mapping_parse(unrelated, strlen(unrelated), "u.map", &m, &err), HPROF_OK);
    uint8_t *out = shrink_with(&in, m, &len, NULL);
    uint8_t *plain = shrink_with(&in, NULL, &plain_len, NULL);
    ck_assert_uint_eq(len, plain_len);
    ck_assert(memcmp(out, plain, len) == 0);
    free(out);
    free(plain);
    mapping_free(m);
    tb_free(&in);
}
END_TEST

/* The ART fixture's Bitmap and DumpData are obfuscated (android.graphics.b
 * and .a): only with the map does the shrink find and keep their pixels. */
START_TEST(mapping_lets_the_shrink_find_obfuscated_bitmaps)
{
    const char *dump = "../shared/fixtures/art-ahat-test-dump.hprof";
    const char *map = "../shared/fixtures/art-ahat-test-dump.map";
    if (!tl_have_shared_fixtures()) {
        printf("mapping: ../shared/fixtures absent, the ART fixture's test is not run\n");
        return;
    }
    struct hprof_mapping *m;
    struct hprof_error err = { 0 };
    struct hprof_shrink_stats with, without;
    size_t len, plain_len;
    ck_assert_msg(hprof_mapping_load(map, &m, &err) == HPROF_OK, "%s", err.message);
    struct hprof_shrink_options o = { .mapping = m };
    uint8_t *out = tl_shrink_file(dump, &o, &len, &with);
    o.mapping = NULL;
    uint8_t *plain = tl_shrink_file(dump, &o, &plain_len, &without);
    ck_assert_uint_eq(without.bitmap_candidates, 0);
    ck_assert_uint_eq(without.other_kept.count, 0);
    ck_assert_uint_ge(with.bitmap_candidates, 1);
    ck_assert_uint_ge(with.bitmap_buffers_kept.count, 1);
    ck_assert_uint_eq(with.other_kept.count, 1); /* DumpData.natives */
    ck_assert_uint_ge(with.mapping_classes, 2);
    static struct names_seen n;
    read_names(out, len, &n);
    int bitmap = 0;
    for (size_t i = 0; i < n.n_texts; i++)
        bitmap |= strcmp(n.texts[i], "android.graphics.Bitmap") == 0;
    ck_assert(bitmap);
    struct hprof_verify_report rep;
    ck_assert_msg(tl_verify_memory(out, len, &rep, &err) == HPROF_OK, "%s", err.message);
    free_names(&n);
    free(out);
    free(plain);
    hprof_mapping_free(m);
}
END_TEST

/* Class 0x100, "a" (STRING 0x10), with `n_fields` int fields and
 * `n_statics` int statics named f0... and s0... (STRINGs from 0x1000 and
 * 0x40000), and a mapping that renames them all. */
static void many_fields_dump(struct tbuf *b, unsigned n_fields, unsigned n_statics)
{
    char name[16];
    tb_init(b, 8);
    tb_header(b, "JAVA PROFILE 1.0.2");
    tb_string(b, 0x10, "a");
    for (unsigned i = 0; i < n_fields; i++) {
        snprintf(name, sizeof name, "f%u", i);
        tb_string(b, 0x1000 + i, name);
    }
    for (unsigned i = 0; i < n_statics; i++) {
        snprintf(name, sizeof name, "s%u", i);
        tb_string(b, 0x40000 + i, name);
    }
    tb_load_class(b, 1, 0x100, 0x10);
    tb_segment_begin(b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_u1(b, HPROF_CLASS_DUMP);
    tb_id(b, 0x100);
    tb_u4(b, 0);
    for (int i = 0; i < 6; i++)
        tb_id(b, 0);
    tb_u4(b, 4 * n_fields);
    tb_u2(b, 0);
    tb_u2(b, (uint16_t)n_statics);
    for (unsigned i = 0; i < n_statics; i++) {
        tb_id(b, 0x40000 + i);
        tb_u1(b, HPROF_TYPE_INT);
        tb_u4(b, i);
    }
    tb_u2(b, (uint16_t)n_fields);
    for (unsigned i = 0; i < n_fields; i++) {
        tb_id(b, 0x1000 + i);
        tb_u1(b, HPROF_TYPE_INT);
    }
    tb_segment_end(b);
    tb_record(b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
}

static struct hprof_mapping *many_fields_mapping(unsigned n_fields, unsigned n_statics)
{
    size_t cap = 64 + (size_t)(n_fields + n_statics) * 40, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text, cap, "com.example.Wide -> a:\n");
    for (unsigned i = 0; i < n_fields; i++)
        len += (size_t)snprintf(text + len, cap - len, "    int field%u -> f%u\n", i, i);
    for (unsigned i = 0; i < n_statics; i++)
        len += (size_t)snprintf(text + len, cap - len, "    int STATIC%u -> s%u\n", i, i);
    struct hprof_mapping *m;
    struct hprof_error err = { 0 };
    ck_assert_msg(mapping_parse(text, len, "wide.map", &m, &err) == HPROF_OK, "%s", err.message);
    free(text);
    return m;
}

/* The field names of class 0x100 in a dump. */
struct wide_seen {
    struct hprof_visitor base;
    struct idmap text_at;
    char **texts;
    size_t n_texts, cap;
    char **fields, **statics;
    unsigned n_fields, n_statics;
};

static int wide_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    struct wide_seen *w = (struct wide_seen *)v;
    if (w->n_texts == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 1024;
        w->texts = realloc(w->texts, w->cap * sizeof *w->texts);
    }
    w->texts[w->n_texts] = strndup((const char *)s->utf8, s->length);
    ck_assert_int_eq(idmap_put(&w->text_at, s->id, ++w->n_texts), HPROF_OK);
    return HPROF_OK;
}

static const char *wide_text(const struct wide_seen *w, uint64_t id)
{
    uint64_t at;
    return idmap_get(&w->text_at, id, &at) ? w->texts[at - 1] : "(none)";
}

static int wide_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c)
{
    struct wide_seen *w = (struct wide_seen *)v;
    if (c->id != 0x100)
        return HPROF_OK;
    w->n_fields = c->n_fields;
    w->n_statics = c->n_statics;
    w->fields = calloc(c->n_fields + 1u, sizeof *w->fields);
    w->statics = calloc(c->n_statics + 1u, sizeof *w->statics);
    for (unsigned i = 0; i < c->n_fields; i++)
        w->fields[i] = strdup(wide_text(w, c->fields[i].name_id));
    for (unsigned i = 0; i < c->n_statics; i++)
        w->statics[i] = strdup(wide_text(w, c->statics[i].name_id));
    return HPROF_OK;
}

static const struct hprof_visitor_ops wide_ops = { .string = wide_string,
                                                   .class_dump = wide_class_dump };

/* Shrink the wide dump with its mapping on one thread; check every name
 * restored.  @return the lookup steps taken. */
static uint64_t shrink_wide(unsigned n_fields, unsigned n_statics)
{
    struct tbuf in;
    many_fields_dump(&in, n_fields, n_statics);
    struct hprof_mapping *m = many_fields_mapping(n_fields, n_statics);
    size_t len;
    uint64_t steps = mapping_lookup_steps;
    uint8_t *out = shrink_with(&in, m, &len, NULL);
    steps = mapping_lookup_steps - steps;
    struct wide_seen w = { .base.ops = &wide_ops };
    ck_assert_int_eq(idmap_init(&w.text_at, 1), HPROF_OK);
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    ck_assert_int_eq(hprof_reader_open_memory(&r, out, len, &err), HPROF_OK);
    ck_assert_msg(hprof_reader_run(r, &w.base) == HPROF_OK, "%s", err.message);
    hprof_reader_free(r);
    ck_assert_uint_eq(w.n_fields, n_fields);
    ck_assert_uint_eq(w.n_statics, n_statics);
    char want[32];
    for (unsigned i = 0; i < n_fields; i++) {
        snprintf(want, sizeof want, "field%u", i);
        ck_assert_str_eq(w.fields[i], want);
        free(w.fields[i]);
    }
    for (unsigned i = 0; i < n_statics; i++) {
        snprintf(want, sizeof want, "STATIC%u", i);
        ck_assert_str_eq(w.statics[i], want);
        free(w.statics[i]);
    }
    for (size_t i = 0; i < w.n_texts; i++)
        free(w.texts[i]);
    free(w.texts);
    free(w.fields);
    free(w.statics);
    idmap_free(&w.text_at);
    free(out);
    mapping_free(m);
    tb_free(&in);
    return steps;
}

/* Statics and instance fields are two u2 counts in a CLASS_DUMP: 65,535 of
 * each, all renamed, is a valid class. */
START_TEST(mapping_renames_65535_fields_and_a_static_of_one_class)
{
    shrink_wide(65535, 1);
}
END_TEST

/* Each field of a class finds its new name by a binary search of the
 * class's renames, not by a scan of them all (2 billion steps here). */
START_TEST(mapping_renames_a_wide_class_in_steps_linear_in_its_fields)
{
    uint64_t steps = shrink_wide(65535, 0);
    ck_assert_msg(steps < 65535ull * 64, "%llu lookup steps for 65535 fields",
                  (unsigned long long)steps);
}
END_TEST

/* R8 -repackageclasses '' leaves classes without a package: restored, they
 * take the dump's form, slashes in HotSpot's 1.0.2 and dots in ART's 1.0.3,
 * arrays as each writes them. */
START_TEST(mapping_writes_a_class_without_package_in_the_dumps_form)
{
    static const char map[] = "com.example.Alpha -> a:\n";
    static const struct {
        const char *version, *cls, *array, *want_cls, *want_array;
    } forms[] = {
        { "JAVA PROFILE 1.0.2", "a", "[La;", "com/example/Alpha", "[Lcom/example/Alpha;" },
        { "JAVA PROFILE 1.0.3", "a", "a[]", "com.example.Alpha", "com.example.Alpha[]" },
    };
    struct hprof_mapping *m;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(mapping_parse(map, strlen(map), "r.map", &m, &err), HPROF_OK);
    for (size_t f = 0; f < 2; f++) {
        struct tbuf in;
        tb_init(&in, 8);
        tb_header(&in, forms[f].version);
        tb_string(&in, 0x10, forms[f].cls);
        tb_string(&in, 0x11, forms[f].array);
        tb_load_class(&in, 1, 0x100, 0x10);
        tb_load_class(&in, 2, 0x200, 0x11);
        tb_segment_begin(&in, HPROF_TAG_HEAP_DUMP_SEGMENT);
        class_with_fields(&in, 0x100, 0, 0x10);
        class_with_fields(&in, 0x200, 0, 0x10);
        tb_segment_end(&in);
        tb_record(&in, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
        size_t len;
        uint8_t *out = shrink_with(&in, m, &len, NULL);
        static struct names_seen n;
        read_names(out, len, &n);
        ck_assert_str_eq(text_of(&n, n.class_name[0]), forms[f].want_cls);
        ck_assert_str_eq(text_of(&n, n.class_name[1]), forms[f].want_array);
        free_names(&n);
        free(out);
        tb_free(&in);
    }
    mapping_free(m);
}
END_TEST

static Suite *deobfuscate_suite(void)
{
    Suite *s = suite_create("deobfuscate");
    TCase *t = tcase_create("mapping");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, mapping_restores_class_field_and_method_names);
    tcase_add_test(t, mapping_gives_a_name_used_two_ways_records_of_its_own);
    tcase_add_test(t, mapping_that_knows_nothing_changes_nothing);
    tcase_add_test(t, mapping_lets_the_shrink_find_obfuscated_bitmaps);
    tcase_add_test(t, mapping_renames_65535_fields_and_a_static_of_one_class);
    tcase_add_test(t, mapping_renames_a_wide_class_in_steps_linear_in_its_fields);
    tcase_add_test(t, mapping_writes_a_class_without_package_in_the_dumps_form);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(deobfuscate_suite());
}
