/*
 * check_classes.c - class layouts (src/common/classes.c) on hostile class
 * graphs: long superclass chains listed in either order, chains completed
 * one class at a time, cycles, missing superclasses.  These assert results,
 * not timings (`make bench` times a 1M-class chain); but a quadratic
 * resolution of the 200k-class chains here would take minutes, and the
 * suite's timeout would say so.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hprof_private.h"
#include "testlib.h"

#define CHAIN 200000u
#define ID(i) (0x1000 + 8 * (uint64_t)(i))

/* Class i has superclass i - 1; every 7th class has an int and an object
 * field, named after the class. */
static void add_class(struct classes *c, unsigned i)
{
    struct hprof_field f[2] = { { ID(i) + 1, HPROF_TYPE_INT }, { ID(i) + 2, HPROF_TYPE_OBJECT } };
    struct hprof_class_dump cd = { .offset = i, .id = ID(i), .super_id = i ? ID(i - 1) : 0,
                                   .n_fields = i % 7 == 0 ? 2 : 0, .fields = f };
    struct hprof_error err = { 0 };
    ck_assert_msg(classes_add(c, &cd, &err) == HPROF_OK, "%s", err.message);
}

/* Bytes of an instance of class i: 8 for each class 0..i with fields. */
static uint64_t expected_bytes(unsigned i)
{
    return 8 * ((uint64_t)i / 7 + 1);
}

struct ref_count {
    uint64_t n;
    uint32_t last_at;
};

static int count_ref(void *ctx, uint32_t at, uint64_t name_id, uint64_t ref)
{
    struct ref_count *rc = ctx;
    (void)name_id;
    (void)ref;
    rc->n++;
    rc->last_at = at;
    return 0;
}

static int match_id(void *ctx, uint64_t name_id)
{
    return name_id == *(uint64_t *)ctx;
}

static void check_chain(struct classes *c)
{
    struct hprof_error err = { 0 };
    ck_assert_msg(classes_resolve_all(c, &err) == HPROF_OK, "%s", err.message);
    for (unsigned i = 0; i < CHAIN; i++) {
        struct class_info *ci = classes_find(c, ID(i));
        ck_assert_ptr_nonnull(ci);
        ck_assert(ci->resolved);
        ck_assert_msg(ci->total_bytes == expected_bytes(i), "class %u: %" PRIu64, i,
                      ci->total_bytes);
    }
    /* The leaf's references, every one of them, walked from an instance. */
    struct class_info *leaf = classes_find(c, ID(CHAIN - 1));
    uint64_t len = leaf->total_bytes;
    uint8_t *values = calloc(1, len);
    struct ref_count rc = { 0 };
    ck_assert_int_eq(classes_each_ref(c, leaf, values, (uint32_t)len, count_ref, &rc), 0);
    ck_assert_uint_eq(rc.n, (CHAIN - 1) / 7 + 1);
    ck_assert_uint_eq(rc.last_at, len - 4); /* the root's object field comes last */
    /* A field of the root, found from the leaf: the last 8 bytes. */
    uint64_t name = ID(0) + 1;
    ck_assert_int_eq(classes_field_offset(c, leaf, match_id, &name, HPROF_TYPE_INT),
                     (int64_t)len - 8);
    free(values);
    /* classes_up() from the leaf meets only the classes with fields. */
    unsigned steps = 0;
    for (const struct class_info *k = classes_up(c, leaf); k != NULL; k = classes_up(c, k)) {
        ck_assert_uint_gt(k->n_fields, 0);
        steps++;
    }
    ck_assert_uint_eq(steps, (CHAIN - 1) / 7 + 1 - ((CHAIN - 1) % 7 == 0));
}

START_TEST(chain_of_200k_classes_resolves_leaf_first)
{
    struct classes c;
    ck_assert_int_eq(classes_init(&c, 4), HPROF_OK);
    for (unsigned i = CHAIN; i-- > 0;)
        add_class(&c, i);
    check_chain(&c);
    classes_free(&c);
}
END_TEST

START_TEST(chain_of_200k_classes_resolves_root_first)
{
    struct classes c;
    ck_assert_int_eq(classes_init(&c, 4), HPROF_OK);
    for (unsigned i = 0; i < CHAIN; i++)
        add_class(&c, i);
    check_chain(&c);
    classes_free(&c);
}
END_TEST

/* The shrink's first pass resolves as class dumps come: a leaf asked for
 * after each of its superclasses arrives, leaf first, must be told "not
 * yet" naming the class whose superclass is missing, then resolve. */
START_TEST(chain_completed_one_class_at_a_time_resolves_when_complete)
{
    struct classes c;
    struct hprof_error err = { 0 };
    enum { N = 50000 };
    ck_assert_int_eq(classes_init(&c, 4), HPROF_OK);
    for (unsigned i = N; i-- > 1;) {
        add_class(&c, i);
        struct class_info *leaf = classes_find(&c, ID(N - 1));
        err = (struct hprof_error){ 0 }; /* it keeps the first message */
        ck_assert_int_eq(classes_resolve(&c, leaf, &err), HPROF_ERR_FORMAT);
        char want[96];
        snprintf(want, sizeof want, "class 0x%" PRIx64 " has superclass 0x%" PRIx64
                 " which is not dumped", ID(i), ID(i - 1));
        ck_assert_msg(strstr(err.message, want) != NULL, "%s", err.message);
        ck_assert(!leaf->resolved);
    }
    add_class(&c, 0);
    struct class_info *leaf = classes_find(&c, ID(N - 1));
    ck_assert_int_eq(classes_resolve(&c, leaf, &err), HPROF_OK);
    ck_assert_uint_eq(leaf->total_bytes, expected_bytes(N - 1));
    /* The classes passed on the way are known, but only asked-for ones
     * say so in `resolved` (the shrink's eager pass works on that). */
    struct class_info *mid = classes_find(&c, ID(N / 2));
    ck_assert(!mid->resolved);
    ck_assert_int_eq(classes_resolve(&c, mid, &err), HPROF_OK);
    ck_assert_uint_eq(mid->total_bytes, expected_bytes(N / 2));
    classes_free(&c);
}
END_TEST

/* A class the leaf's walk jumped over (its span was learnt while the root
 * was missing) holds a running sum until its own layout is finished, which
 * redaction does for a keep rule's class up a resolved chain: the total is
 * then final, and the class is still not `resolved` (the eager pass 1
 * works out each class's kind and exempt fields when it first resolves). */
START_TEST(finishing_a_layout_gives_its_total_without_resolving_the_class)
{
    struct classes c;
    struct hprof_error err = { 0 };
    enum { N = 15 };
    ck_assert_int_eq(classes_init(&c, 4), HPROF_OK);
    for (unsigned i = N; i-- > 1;)
        add_class(&c, i);
    struct class_info *leaf = classes_find(&c, ID(N - 1));
    ck_assert_int_eq(classes_resolve(&c, leaf, &err), HPROF_ERR_FORMAT);
    add_class(&c, 0);
    err = (struct hprof_error){ 0 };
    ck_assert_int_eq(classes_resolve(&c, leaf, &err), HPROF_OK);
    struct class_info *mid = classes_find(&c, ID(7));
    ck_assert_int_eq(classes_finish_layout(&c, mid, &err), HPROF_OK);
    ck_assert_uint_eq(mid->total_bytes, expected_bytes(7));
    ck_assert(!mid->resolved);
    classes_free(&c);
}
END_TEST

START_TEST(cycle_is_reported_for_every_class_leading_into_it)
{
    struct classes c;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(classes_init(&c, 8), HPROF_OK);
    struct hprof_class_dump cd[] = {
        { .offset = 0x10, .id = 0x100, .super_id = 0x200 },
        { .offset = 0x20, .id = 0x200, .super_id = 0x300 },
        { .offset = 0x30, .id = 0x300, .super_id = 0x200 },
        { .offset = 0x40, .id = 0x400, .super_id = 0x400 }, /* its own superclass */
    };
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_eq(classes_add(&c, &cd[i], &err), HPROF_OK);
    for (int round = 0; round < 2; round++) /* the second time from the memo */
        for (size_t i = 0; i < 4; i++) {
            err = (struct hprof_error){ 0 };
            ck_assert_int_eq(classes_resolve(&c, classes_find(&c, cd[i].id), &err),
                             HPROF_ERR_FORMAT);
            char want[96];
            snprintf(want, sizeof want, "offset 0x%" PRIx64 ": CLASS_DUMP: superclass chain of "
                     "class 0x%" PRIx64 " has a cycle", cd[i].offset, cd[i].id);
            ck_assert_str_eq(err.message, want);
        }
    classes_free(&c);
}
END_TEST

/* The index keeps 32 bits of each id's hash: ids whose hashes agree on
 * them, and ids never added, must still be told apart by the id itself,
 * across every growth of the index. */
START_TEST(index_finds_every_class_and_no_other)
{
    enum { N = 300000 };
    const uint64_t golden = 0x9E3779B97F4A7C15ull; /* classes.c's multiplier */
    uint64_t inverse = golden; /* golden * inverse == 1 (mod 2^64), by Newton */
    for (int i = 0; i < 6; i++)
        inverse *= 2 - golden * inverse;
    ck_assert_uint_eq(golden * inverse, 1);
    struct classes c;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(classes_init(&c, 8), HPROF_OK);
    /* id(i)'s hash is i << 33; id(i) + twin hashes to that plus 2^31: the
     * same top 32 bits, the same home slot in any index under 2^31 slots */
    const uint64_t twin = (1ull << 31) * inverse;
    for (uint64_t i = 1; i <= N; i++) {
        struct hprof_class_dump cd = { .offset = i, .id = (i << 33) * inverse };
        ck_assert_msg(classes_add(&c, &cd, &err) == HPROF_OK, "%s", err.message);
        if (i % 4096 == 0 || i == N)
            for (uint64_t j = 1; j <= i; j += 97) {
                uint64_t id = (j << 33) * inverse;
                struct class_info *ci = classes_find(&c, id);
                ck_assert_msg(ci != NULL && ci->id == id, "class %" PRIu64 " of %" PRIu64, j, i);
                ck_assert_ptr_null(classes_find(&c, id + twin));
                ck_assert_ptr_null(classes_find(&c, ((j + N) << 33) * inverse));
            }
    }
    struct hprof_class_dump again = { .offset = 0x99, .id = (7ull << 33) * inverse };
    ck_assert_int_eq(classes_add(&c, &again, &err), HPROF_ERR_FORMAT);
    ck_assert_msg(strstr(err.message, "is dumped twice") != NULL, "%s", err.message);
    classes_free(&c);
    ck_assert_ptr_null(classes_find(&c, again.id)); /* freed: empty, not a crash */
}
END_TEST

/* The same chains as whole dumps, through verify, info and the shrink. */
static void dump_chain(int leaf_first)
{
    char *path = tl_temp_path(".hprof");
    char *tool = tl_tool("hprof-synth");
    ck_assert_int_eq(tl_system("%s -f --class-chain %u %s %s", tool, CHAIN,
                               leaf_first ? "--leaf-first" : "", path), 0);
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    int fd;
    struct hprof_verify_report rep;
    ck_assert_int_eq(tl_open_reader(path, &fd, &r, &err), HPROF_OK);
    ck_assert_msg(hprof_verify(r, &rep, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(rep.class_dumps, CHAIN);
    ck_assert_uint_eq(rep.instances, 2);
    struct hprof_info info;
    ck_assert_msg(hprof_info_analyze(r, &info, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(info.sub_records[HPROF_INSTANCE_DUMP].count, 2);
    hprof_info_free(&info);
    tl_close_reader(fd, r);
    struct hprof_shrink_options o = { .arrays = HPROF_ARRAYS_EMPTY };
    size_t len;
    uint8_t *out = tl_shrink_file(path, &o, &len, NULL);
    ck_assert_msg(tl_verify_memory(out, len, &rep, &err) == HPROF_OK, "%s", err.message);
    ck_assert_uint_eq(rep.class_dumps, CHAIN);
    free(out);
    unlink(path);
    free(path);
    free(tool);
}

START_TEST(dump_of_200k_chained_classes_leaf_first_verifies_and_shrinks)
{
    dump_chain(1);
}
END_TEST

START_TEST(dump_of_200k_chained_classes_root_first_verifies_and_shrinks)
{
    dump_chain(0);
}
END_TEST

static Suite *classes_suite(void)
{
    Suite *s = suite_create("classes");
    TCase *t = tcase_create("classes");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, chain_of_200k_classes_resolves_leaf_first);
    tcase_add_test(t, chain_of_200k_classes_resolves_root_first);
    tcase_add_test(t, chain_completed_one_class_at_a_time_resolves_when_complete);
    tcase_add_test(t, finishing_a_layout_gives_its_total_without_resolving_the_class);
    tcase_add_test(t, cycle_is_reported_for_every_class_leading_into_it);
    tcase_add_test(t, index_finds_every_class_and_no_other);
    tcase_add_test(t, dump_of_200k_chained_classes_leaf_first_verifies_and_shrinks);
    tcase_add_test(t, dump_of_200k_chained_classes_root_first_verifies_and_shrinks);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(classes_suite());
}
