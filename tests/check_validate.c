/*
 * check_validate.c - validate.h: the object id rules, and objcheck, the
 * bounded-memory check that no id is dumped twice (a Bloom filter in the
 * first pass, its "maybe"s settled exactly by a confirming pass).
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "objcheck_pass.h"

#define ID(i) (0x12c00000 + 8 * (uint64_t)(i))

START_TEST(objcheck_finds_no_duplicate_among_distinct_ids)
{
    struct objcheck oc;
    struct hprof_error err = { 0 };
    enum { N = 1000000 };
    ck_assert_int_eq(objcheck_init(&oc, objcheck_filter_bytes(40ull * N)), HPROF_OK);
    for (uint32_t i = 0; i < N; i++)
        ck_assert_int_eq(objcheck_add(&oc, ID(i), i, HPROF_INSTANCE_DUMP, &err), HPROF_OK);
    ck_assert_int_eq(objcheck_seal(&oc, &err), HPROF_OK);
    /* A filter of 1 byte per 32 of input: false "maybe"s stay few. */
    ck_assert_uint_lt(objcheck_pending(&oc), N / 100);
    for (uint32_t i = 0; i < N; i++)
        ck_assert_int_eq(objcheck_confirm(&oc, ID(i), i, HPROF_INSTANCE_DUMP, &err), HPROF_OK);
    objcheck_free(&oc);
}
END_TEST

/* A filter far too small says "maybe" for nearly every id: the confirming
 * pass must still report exactly the one id dumped twice, at its second
 * dump, with hprof-verify's message. */
START_TEST(objcheck_confirms_exactly_with_a_saturated_filter)
{
    struct objcheck oc;
    struct hprof_error err = { 0 };
    enum { N = 200000, DUP = 123456 };
    ck_assert_int_eq(objcheck_init(&oc, 64), HPROF_OK);
    for (int pass = 1; pass <= 2; pass++) {
        for (uint32_t i = 0; i <= N; i++) {
            uint64_t id = i == N ? ID(DUP) : ID(i); /* the last dumps DUP again */
            int rc = pass == 1 ? objcheck_add(&oc, id, 0x1000 + i, HPROF_OBJECT_ARRAY_DUMP, &err)
                               : objcheck_confirm(&oc, id, 0x1000 + i, HPROF_OBJECT_ARRAY_DUMP,
                                                  &err);
            if (pass == 2 && i == N) {
                ck_assert_int_eq(rc, HPROF_ERR_FORMAT);
                char want[96];
                snprintf(want, sizeof want, "offset 0x%x: OBJECT_ARRAY_DUMP: object 0x%" PRIx64
                         " is dumped twice", 0x1000 + N, ID(DUP));
                ck_assert_str_eq(err.message, want);
            } else {
                ck_assert_msg(rc == HPROF_OK, "pass %d, id %u: %s", pass, i, err.message);
            }
        }
        if (pass == 1) {
            ck_assert_int_eq(objcheck_seal(&oc, &err), HPROF_OK);
            ck_assert_uint_gt(objcheck_pending(&oc), N / 2);
        }
    }
    objcheck_free(&oc);
}
END_TEST

/* Settle a pass of `ids` (dumped at offsets 1, 2, ...) by objcheck with
 * `budget`: the error message of the confirming pass, or "" when none. */
static void first_duplicate(const uint64_t *ids, size_t n, size_t budget, char *msg, size_t len,
                            size_t *pending)
{
    struct objcheck oc;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(objcheck_init(&oc, budget), HPROF_OK);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(objcheck_add(&oc, ids[i], i + 1, HPROF_INSTANCE_DUMP, &err), HPROF_OK);
    ck_assert_int_eq(objcheck_seal(&oc, &err), HPROF_OK);
    *pending = objcheck_pending(&oc);
    int rc = HPROF_OK;
    for (size_t i = 0; i < n && rc == HPROF_OK; i++)
        rc = objcheck_confirm(&oc, ids[i], i + 1, HPROF_INSTANCE_DUMP, &err);
    snprintf(msg, len, "%s", rc == HPROF_OK ? "" : err.message);
    ck_assert_uint_le(oc.exact.n_pages, budget / 4096); /* the pages keep to the budget */
    objcheck_free(&oc);
}

/* Ids as runtimes write them (8-byte aligned addresses, in order) are set
 * exactly: no id is a suspect unless it is dumped twice, so a dump with
 * none needs no confirming pass at all. */
START_TEST(objcheck_holds_aligned_ids_exactly)
{
    enum { N = 1000000 };
    uint64_t *ids = malloc((N + 1) * sizeof *ids);
    for (uint32_t i = 0; i < N; i++)
        ids[i] = ID(i);
    char msg[sizeof ((struct hprof_error *)0)->message];
    size_t pending;
    first_duplicate(ids, N, objcheck_filter_bytes(40ull * N), msg, sizeof msg, &pending);
    ck_assert_uint_eq(pending, 0);
    ck_assert_str_eq(msg, "");
    ids[N] = ID(777); /* dumped again, last */
    first_duplicate(ids, N + 1, objcheck_filter_bytes(40ull * N), msg, sizeof msg, &pending);
    ck_assert_uint_eq(pending, 1);
    ck_assert_str_eq(msg, "offset 0xf4241: INSTANCE_DUMP: object 0x12c01848 is dumped twice");
    free(ids);
}
END_TEST

/* Ids the pages do not hold (not 8-byte aligned, or spread over more pages
 * than the budget buys) go to the filter; a duplicate is found either way,
 * and the one reported is the first in file order, as hprof-verify's. */
START_TEST(objcheck_finds_duplicates_outside_its_pages_first_in_file_order)
{
    enum { N = 3000 };
    uint64_t ids[N + 2];
    for (uint32_t i = 0; i < N; i++) /* 1 MiB apart: a page each; odd ones unaligned */
        ids[i] = 0x40000000 + ((uint64_t)i << 20) + (i % 2 ? 4 : 0);
    char msg[sizeof ((struct hprof_error *)0)->message];
    size_t pending;
    ids[N] = ids[11];    /* unaligned, again */
    ids[N + 1] = ids[2]; /* aligned, again: found after the one before it */
    for (size_t budget = 8192; budget <= (64u << 20); budget *= 8192) {
        first_duplicate(ids, N + 2, budget, msg, sizeof msg, &pending);
        ck_assert_uint_ge(pending, 2);
        ck_assert_str_eq(msg, "offset 0xbb9: INSTANCE_DUMP: object 0x40b00004 is dumped twice");
        first_duplicate(ids, N, budget, msg, sizeof msg, &pending);
        ck_assert_str_eq(msg, "");
        uint64_t swapped[N + 2]; /* the aligned one first */
        memcpy(swapped, ids, sizeof swapped);
        swapped[N] = ids[2];
        swapped[N + 1] = ids[11];
        first_duplicate(swapped, N + 2, budget, msg, sizeof msg, &pending);
        ck_assert_str_eq(msg, "offset 0xbb9: INSTANCE_DUMP: object 0x40200000 is dumped twice");
    }
}
END_TEST

/* Ids below 256 KiB share the page of key 0, the null key of an idmap:
 * that page is found again after another page's ids, so an id among them
 * dumped twice is still found, and the pages keep to the budget. */
START_TEST(objcheck_finds_duplicates_among_ids_below_its_first_page)
{
    static const uint64_t ids[] = { 0x1000, 0x40000000, 0x2000, 0x40000008, 0x1000 };
    char msg[sizeof ((struct hprof_error *)0)->message];
    size_t pending;
    first_duplicate(ids, 5, 1 << 16, msg, sizeof msg, &pending);
    ck_assert_uint_eq(pending, 1);
    ck_assert_str_eq(msg, "offset 0x5: INSTANCE_DUMP: object 0x1000 is dumped twice");
    /* through objcheck_add_fast(), as the visitor calls it */
    struct objcheck oc;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(objcheck_init(&oc, 1 << 16), HPROF_OK);
    for (unsigned i = 0; i < 5; i++)
        ck_assert_int_eq(objcheck_add_fast(&oc, ids[i], i + 1, HPROF_INSTANCE_DUMP, &err),
                         HPROF_OK);
    ck_assert_int_eq(objcheck_seal(&oc, &err), HPROF_OK);
    ck_assert_uint_eq(objcheck_pending(&oc), 1);
    ck_assert_uint_eq(oc.exact.n_pages, 2);
    objcheck_free(&oc);
}
END_TEST

START_TEST(objcheck_rejects_id_zero)
{
    struct objcheck oc;
    struct hprof_error err = { 0 };
    ck_assert_int_eq(objcheck_init(&oc, 1 << 16), HPROF_OK);
    ck_assert_int_eq(objcheck_add(&oc, 0, 0x2d, HPROF_INSTANCE_DUMP, &err), HPROF_ERR_FORMAT);
    ck_assert_str_eq(err.message, "offset 0x2d: INSTANCE_DUMP: object id is 0");
    objcheck_free(&oc);
}
END_TEST

/* As a visitor in front of nothing, then its own confirming pass: what the
 * shrink's first pass will do.  A class id reused by an instance is found. */
START_TEST(objcheck_visitor_and_confirming_pass_agree_with_verify)
{
    struct tbuf b;
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(&b, 0x100, 0, NULL, 0);
    for (uint64_t i = 0; i < 5000; i++)
        tb_instance(&b, 0x1000 + 8 * i, 0x100, NULL, 0);
    tb_prim_array(&b, 0x100, HPROF_TYPE_INT, 1, "abcd"); /* the class's id again */
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);

    struct hprof_error err = { 0 }, verr = { 0 };
    struct hprof_reader *r;
    struct objcheck oc;
    struct objcheck_visitor v;
    ck_assert_int_eq(hprof_reader_open_memory(&r, b.data, b.len, &err), HPROF_OK);
    ck_assert_int_eq(objcheck_init(&oc, 64), HPROF_OK); /* every id a suspect */
    objcheck_visitor_init(&v, &oc, &err, NULL);
    ck_assert_int_eq(hprof_reader_run(r, &v.base), HPROF_OK);
    ck_assert_int_eq(objcheck_seal(&oc, &err), HPROF_OK);
    ck_assert_uint_gt(objcheck_pending(&oc), 0);
    ck_assert_int_eq(objcheck_confirm_pass(&oc, r, &err), HPROF_ERR_FORMAT);
    struct hprof_verify_report rep;
    ck_assert_int_eq(tl_verify_memory(b.data, b.len, &rep, &verr), HPROF_ERR_FORMAT);
    ck_assert_str_eq(err.message, verr.message);
    ck_assert_ptr_nonnull(strstr(err.message, "PRIMITIVE_ARRAY_DUMP: object 0x100 is dumped twice"));
    objcheck_free(&oc);
    hprof_reader_free(r);
    tb_free(&b);
}
END_TEST

/* Nothing pending: the confirming pass is not even run. */
START_TEST(objcheck_confirming_pass_is_skipped_when_nothing_is_pending)
{
    struct tbuf b;
    struct hprof_error err = { 0 };
    struct hprof_reader *r;
    struct objcheck oc;
    struct objcheck_visitor v;
    tb_small_dump(&b, 8);
    ck_assert_int_eq(hprof_reader_open_memory(&r, b.data, b.len, &err), HPROF_OK);
    ck_assert_int_eq(objcheck_init(&oc, 1 << 20), HPROF_OK);
    objcheck_visitor_init(&v, &oc, &err, NULL);
    ck_assert_int_eq(hprof_reader_run(r, &v.base), HPROF_OK);
    ck_assert_int_eq(objcheck_seal(&oc, &err), HPROF_OK);
    ck_assert_uint_eq(objcheck_pending(&oc), 0);
    ck_assert_int_eq(objcheck_confirm_pass(&oc, r, &err), HPROF_OK);
    objcheck_free(&oc);
    hprof_reader_free(r);
    tb_free(&b);
}
END_TEST

START_TEST(objcheck_filter_grows_with_the_input_within_bounds)
{
    ck_assert_uint_eq(objcheck_filter_bytes(0), 64u << 10);
    ck_assert_uint_eq(objcheck_filter_bytes(1ull << 30), 32u << 20);
    ck_assert_uint_eq(objcheck_filter_bytes(1ull << 40), 32u << 20);
    ck_assert_uint_eq(objcheck_filter_bytes(64ull << 20), 2u << 20);
}
END_TEST

static Suite *validate_suite(void)
{
    Suite *s = suite_create("validate");
    TCase *t = tcase_create("validate");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, objcheck_finds_no_duplicate_among_distinct_ids);
    tcase_add_test(t, objcheck_confirms_exactly_with_a_saturated_filter);
    tcase_add_test(t, objcheck_rejects_id_zero);
    tcase_add_test(t, objcheck_holds_aligned_ids_exactly);
    tcase_add_test(t, objcheck_finds_duplicates_outside_its_pages_first_in_file_order);
    tcase_add_test(t, objcheck_finds_duplicates_among_ids_below_its_first_page);
    tcase_add_test(t, objcheck_visitor_and_confirming_pass_agree_with_verify);
    tcase_add_test(t, objcheck_confirming_pass_is_skipped_when_nothing_is_pending);
    tcase_add_test(t, objcheck_filter_grows_with_the_input_within_bounds);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(validate_suite());
}
