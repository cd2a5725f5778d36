/*
 * check_verify.c - hprof_verify(): counts, layout checks through the
 * superclass chain, duplicate ids, cycles, and dangling references; and the
 * id map and sorted id list the passes stand on.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hprof_private.h"
#include "testlib.h"

static int verify(const struct tbuf *b, struct hprof_verify_report *rep, struct hprof_error *err)
{
    memset(err, 0, sizeof *err);
    return tl_verify_memory(b->data, b->len, rep, err);
}

/* Object -> Base(int, object) -> Derived(long): an instance of Derived
 * holds 8 + 4 + id bytes, own fields first. */
static void chain(struct tbuf *b, unsigned ids, uint32_t instance_bytes, uint64_t ref)
{
    static const uint8_t base[] = { HPROF_TYPE_INT, HPROF_TYPE_OBJECT };
    static const uint8_t derived[] = { HPROF_TYPE_LONG };
    uint8_t values[32] = { 0 };
    tb_init(b, ids);
    tb_header(b, ids == 4 ? "JAVA PROFILE 1.0.3" : "JAVA PROFILE 1.0.2");
    tb_segment_begin(b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_class(b, 0x100, 0, NULL, 0);
    tb_instance(b, 0x300, 0x120, values, 0); /* before its class: allowed */
    tb_class(b, 0x110, 0x100, base, 2);
    tb_class(b, 0x120, 0x110, derived, 1);
    for (unsigned i = 0; i < ids; i++)
        values[12 + i] = (uint8_t)(ref >> (8 * (ids - 1 - i)));
    tb_instance(b, 0x200, 0x120, values, instance_bytes);
    tb_segment_end(b);
    tb_record(b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
}

/* An Android-format dump (4-byte ids) with its first heap segment open. */
static void begin_android_heap(struct tbuf *b)
{
    tb_init(b, 4);
    tb_header(b, "JAVA PROFILE 1.0.3");
    tb_segment_begin(b, HPROF_TAG_HEAP_DUMP_SEGMENT);
}

START_TEST(verify_checks_instance_bytes_through_the_superclass_chain)
{
    struct tbuf b;
    struct hprof_verify_report rep;
    struct hprof_error err;
    unsigned ids = _i ? 8 : 4;
    chain(&b, ids, 12 + ids, 0x200);
    /* the first instance (0 bytes) is wrong */
    ck_assert_int_eq(verify(&b, &rep, &err), HPROF_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.message, "INSTANCE_DUMP: object 0x300 has 0 field bytes, "
                                              "its class layout needs"));
    tb_free(&b);
}
END_TEST

START_TEST(verify_counts_records_and_dangling_references)
{
    struct tbuf b;
    struct hprof_verify_report rep;
    struct hprof_error err;
    static const uint8_t types[] = { HPROF_TYPE_OBJECT };
    uint8_t values[4] = { 0, 0, 0x0d, 0xea }; /* -> 0xdea, not dumped */
    tb_init(&b, 4);
    tb_header(&b, "JAVA PROFILE 1.0.3");
    tb_string(&b, 1, "x");
    tb_segment_begin(&b, HPROF_TAG_HEAP_DUMP_SEGMENT);
    tb_u1(&b, HPROF_ROOT_UNKNOWN);
    tb_id(&b, 0xbad);                  /* dangling root */
    tb_u1(&b, HPROF_ROOT_UNKNOWN);
    tb_id(&b, 0x200);
    tb_class(&b, 0x100, 0, types, 1);
    tb_instance(&b, 0x200, 0x100, values, 4);
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    ck_assert_int_eq(verify(&b, &rep, &err), HPROF_OK);
    ck_assert_uint_eq(rep.records, 3);
    ck_assert_uint_eq(rep.strings, 1);
    ck_assert_uint_eq(rep.segments, 1);
    ck_assert_uint_eq(rep.roots, 2);
    ck_assert_uint_eq(rep.class_dumps, 1);
    ck_assert_uint_eq(rep.instances, 1);
    ck_assert_uint_eq(rep.dangling, 2);
    ck_assert_uint_eq(rep.dangling_by_kind[HPROF_REF_ROOT], 1);
    ck_assert_uint_eq(rep.dangling_by_kind[HPROF_REF_INSTANCE_FIELD], 1);
    tb_free(&b);
}
END_TEST

START_TEST(verify_rejects_an_object_id_dumped_twice)
{
    struct tbuf b;
    struct hprof_verify_report rep;
    struct hprof_error err;
    begin_android_heap(&b);
    tb_prim_array(&b, 0x10, HPROF_TYPE_INT, 1, "abcd");
    tb_prim_array(&b, 0x10, HPROF_TYPE_INT, 1, "abcd");
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    ck_assert_int_eq(verify(&b, &rep, &err), HPROF_ERR_FORMAT);
    ck_assert_str_eq(err.message,
                     "offset 0x3a: PRIMITIVE_ARRAY_DUMP: object 0x10 is dumped twice");
    tb_free(&b);
}
END_TEST

START_TEST(verify_rejects_a_superclass_cycle)
{
    struct tbuf b;
    struct hprof_verify_report rep;
    struct hprof_error err;
    begin_android_heap(&b);
    tb_class(&b, 0x100, 0x110, NULL, 0);
    tb_class(&b, 0x110, 0x100, NULL, 0);
    tb_instance(&b, 0x200, 0x100, NULL, 0);
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    ck_assert_int_eq(verify(&b, &rep, &err), HPROF_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.message, "has a cycle"));
    tb_free(&b);
}
END_TEST

START_TEST(verify_rejects_a_missing_superclass)
{
    struct tbuf b;
    struct hprof_verify_report rep;
    struct hprof_error err;
    begin_android_heap(&b);
    tb_class(&b, 0x100, 0x999, NULL, 0);
    tb_instance(&b, 0x200, 0x100, NULL, 0);
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    ck_assert_int_eq(verify(&b, &rep, &err), HPROF_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.message, "superclass 0x999 which is not dumped"));
    tb_free(&b);
}
END_TEST

START_TEST(verify_rejects_a_file_that_is_only_a_header)
{
    struct tbuf b;
    struct hprof_verify_report rep;
    struct hprof_error err;
    tb_init(&b, 8);
    tb_header(&b, "JAVA PROFILE 1.0.2");
    ck_assert_int_eq(verify(&b, &rep, &err), HPROF_ERR_FORMAT);
    ck_assert_str_eq(err.message,
                     "offset 0x1f: end of file: no record after the header (truncated?)");
    tb_free(&b);
}
END_TEST

START_TEST(verify_rejects_segments_without_heap_dump_end)
{
    struct tbuf b;
    struct hprof_verify_report rep;
    struct hprof_error err;
    tb_small_dump(&b, 4);
    b.len -= 9; /* cut the HEAP_DUMP_END: the file ends on a record boundary */
    ck_assert_int_eq(verify(&b, &rep, &err), HPROF_ERR_TRUNCATED); /* salvage reads it */
    ck_assert_ptr_nonnull(strstr(err.message, "end of file: the HEAP_DUMP_SEGMENTs from 0x"));
    ck_assert_msg(strstr(err.message, "are not closed by HEAP_DUMP_END (truncated?)") != NULL &&
                  strstr(err.message, "salvage") == NULL, "%s", err.message);
    tb_free(&b);
}
END_TEST

START_TEST(idmap_keeps_a_million_ids_through_growth)
{
    struct idmap m;
    ck_assert_int_eq(idmap_init(&m, 1), HPROF_OK);
    for (uint64_t i = 1; i <= 1000000; i++)
        ck_assert_int_eq(idmap_put(&m, i * 8, i), HPROF_OK);
    ck_assert_uint_eq(m.count, 1000000);
    for (uint64_t i = 1; i <= 1000000; i++) {
        uint64_t v = 0;
        ck_assert(idmap_get(&m, i * 8, &v));
        ck_assert_uint_eq(v, i);
        ck_assert(!idmap_has(&m, i * 8 + 1));
    }
    ck_assert_uint_le(m.count * 2, m.mask + 1); /* at most half full */
    idmap_free(&m);
}
END_TEST

START_TEST(idmap_never_stores_the_null_id)
{
    struct idmap m;
    ck_assert_int_eq(idmap_init(&m, 0), HPROF_OK);
    ck_assert_int_eq(idmap_put(&m, 0, 0), HPROF_OK);
    ck_assert(!idmap_has(&m, 0));
    ck_assert_uint_eq(m.count, 0);
    idmap_free(&m);
}
END_TEST

/* A small deterministic generator, so the test needs no seed handling. */
static uint64_t next_random(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

START_TEST(idlist_finds_exactly_the_ids_added_in_any_order_of_lookup)
{
    struct idlist l;
    struct idmap truth;
    uint64_t state = 0x9E3779B97F4A7C15ull;
    idlist_init(&l);
    ck_assert_int_eq(idmap_init(&truth, 0), HPROF_OK);
    /* ascending runs with jumps back (spaces of a heap), duplicates, and
     * keys spanning all 64 bits so every radix round is exercised */
    for (int i = 0; i < 200000; i++) {
        uint64_t id = i % 3 == 0 ? next_random(&state) : (uint64_t)(i % 50000) * 16 + 8;
        ck_assert_int_eq(idlist_add(&l, id), HPROF_OK);
        ck_assert_int_eq(idmap_put(&truth, id, 0), HPROF_OK);
    }
    ck_assert_int_eq(idlist_seal(&l), HPROF_OK);
    ck_assert_uint_eq(l.n, truth.count);
    for (size_t i = 1; i < l.n; i++)
        ck_assert(l.ids[i - 1] < l.ids[i]);
    /* in file order, backwards, and at random: present and absent ids */
    for (uint64_t id = 0; id < 50000 * 16 + 64; id += 4)
        ck_assert_int_eq(idlist_has(&l, id), idmap_has(&truth, id));
    for (uint64_t id = 50000 * 16 + 64; id > 0; id -= 8)
        ck_assert_int_eq(idlist_has(&l, id), idmap_has(&truth, id));
    state = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 200000; i += 3) { /* the random ids added, again */
        uint64_t id = next_random(&state);
        ck_assert(idlist_has(&l, id));
        ck_assert(!idlist_has(&l, id ^ 1) || idmap_has(&truth, id ^ 1));
    }
    ck_assert(!idlist_has(&l, UINT64_MAX) || idmap_has(&truth, UINT64_MAX));
    idlist_free(&l);
    idmap_free(&truth);
}
END_TEST

START_TEST(idlist_that_is_empty_or_cleared_finds_nothing)
{
    struct idlist l;
    idlist_init(&l);
    ck_assert_int_eq(idlist_seal(&l), HPROF_OK);
    ck_assert(!idlist_has(&l, 8));
    ck_assert_int_eq(idlist_add(&l, 0), HPROF_OK); /* the null id is never stored */
    ck_assert_int_eq(idlist_add(&l, 16), HPROF_OK);
    ck_assert_int_eq(idlist_add(&l, 8), HPROF_OK);
    ck_assert_int_eq(idlist_seal(&l), HPROF_OK);
    ck_assert_uint_eq(l.n, 2);
    ck_assert(!idlist_has(&l, 0) && idlist_has(&l, 8) && idlist_has(&l, 16));
    idlist_clear(&l);
    ck_assert_int_eq(idlist_seal(&l), HPROF_OK);
    ck_assert(!idlist_has(&l, 8) && !idlist_has(&l, 16));
    idlist_free(&l);
}
END_TEST

/* The ids an idlog_each() visit sees, checked against what was added. */
struct idlog_replay {
    const uint64_t *want;
    size_t n, seen;
};

static void check_replayed_id(void *ctx, uint64_t id)
{
    struct idlog_replay *r = ctx;
    ck_assert_uint_lt(r->seen, r->n);
    ck_assert_uint_eq(id, r->want[r->seen]);
    r->seen++;
}

START_TEST(idlog_gives_back_every_id_in_the_order_added)
{
    enum { N = 300000 };
    static uint64_t ids[N];
    uint64_t state = 0x9E3779B97F4A7C15ull;
    /* address order, steps back, repeats, and the extremes of 64 bits */
    const uint64_t edges[] = { 8, UINT64_MAX, 0, 1, UINT64_MAX - 7, 1ull << 63, 16, 16 };
    size_t n = 0;
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++)
        ids[n++] = edges[i];
    for (uint64_t at = 0x7f0000000ull; n < N; at += 24, n++)
        ids[n] = n % 5 == 0 ? next_random(&state) : n % 7 == 0 ? at - 4096 : at;
    struct idlog l;
    idlog_init(&l);
    for (size_t i = 0; i < N; i++)
        ck_assert_int_eq(idlog_add(&l, ids[i]), HPROF_OK);
    struct idlog_replay r = { ids, N, 0 };
    idlog_each(&l, check_replayed_id, &r);
    ck_assert_uint_eq(r.seen, N);
    /* ids in address order cost a byte or two each, not eight */
    idlog_clear(&l);
    for (uint64_t at = 0x7f0000000ull, i = 0; i < N; i++, at += 40)
        ck_assert_int_eq(idlog_add(&l, at), HPROF_OK);
    ck_assert_uint_le(l.n, 2 * (size_t)N);
    idlog_free(&l);
}
END_TEST

START_TEST(idlog_that_is_empty_or_cleared_gives_nothing)
{
    struct idlog l;
    idlog_init(&l);
    struct idlog_replay r = { NULL, 0, 0 };
    idlog_each(&l, check_replayed_id, &r); /* no call: check_replayed_id() would fail */
    ck_assert_int_eq(idlog_add(&l, 64), HPROF_OK);
    idlog_clear(&l);
    idlog_each(&l, check_replayed_id, &r);
    const uint64_t after[] = { 8 };
    ck_assert_int_eq(idlog_add(&l, 8), HPROF_OK); /* measured from 0 again, not from 64 */
    r = (struct idlog_replay){ after, 1, 0 };
    idlog_each(&l, check_replayed_id, &r);
    ck_assert_uint_eq(r.seen, 1);
    idlog_free(&l);
}
END_TEST

/* Reference fields are listed once per class, up to a bound (a chain of
 * classes can make the lists grow as the square of the classes); an
 * instance whose list would pass it is walked field by field.  Both ways
 * find every reference: here 500 and 1,100 classes of 1,000 fields. */
START_TEST(verify_finds_every_reference_however_long_the_class_chain)
{
    enum { CLASSES = 1100, FIELDS = 1000, MID = 500 };
    static uint8_t types[FIELDS];
    memset(types, HPROF_TYPE_OBJECT, sizeof types);
    struct tbuf b;
    struct hprof_verify_report rep;
    struct hprof_error err;
    begin_android_heap(&b);
    for (uint64_t k = 0; k < CLASSES; k++) /* class 0x10000 + 16k extends the one before */
        tb_class(&b, 0x10000 + 16 * k, k ? 0x10000 + 16 * (k - 1) : 0, types, FIELDS);
    size_t n = (size_t)CLASSES * FIELDS * 4;
    uint8_t *values = malloc(n);
    for (size_t i = 0; i < n; i += 4)
        memcpy(values + i, "\0\0\x0d\xea", 4); /* -> 0xdea, not dumped */
    tb_instance(&b, 0x200, 0x10000 + 16 * (MID - 1), values, (uint32_t)MID * FIELDS * 4);
    tb_instance(&b, 0x210, 0x10000 + 16 * (CLASSES - 1), values, (uint32_t)n);
    tb_instance(&b, 0x220, 0x10000 + 16 * (MID - 1), values, (uint32_t)MID * FIELDS * 4);
    tb_segment_end(&b);
    tb_record(&b, HPROF_TAG_HEAP_DUMP_END, NULL, 0);
    ck_assert_int_eq(verify(&b, &rep, &err), HPROF_OK);
    ck_assert_uint_eq(rep.dangling_by_kind[HPROF_REF_INSTANCE_FIELD],
                      (uint64_t)(2 * MID + CLASSES) * FIELDS);
    free(values);
    tb_free(&b);
}
END_TEST

/* A Bloom filter never forgets an id it was given, and with the bench's
 * load (5 million references in 8 MiB) says "maybe" for about 1 in 100 ids
 * it was not given. */
START_TEST(idfilter_never_forgets_and_rarely_says_maybe_wrongly)
{
    struct idfilter f;
    ck_assert_int_eq(idfilter_init(&f, 8u << 20), HPROF_OK);
    const uint64_t n = 5000000;
    for (uint64_t i = 1; i <= n; i++)
        idfilter_add(&f, 0x12c00000 + 16 * i); /* aligned, like heap addresses */
    for (uint64_t i = 1; i <= n; i++)
        ck_assert(idfilter_maybe(&f, 0x12c00000 + 16 * i));
    uint64_t wrong = 0;
    for (uint64_t i = 1; i <= n; i++)
        wrong += idfilter_maybe(&f, 0x12c00008 + 16 * i) + idfilter_maybe(&f, 0x70000000 + 16 * i);
    ck_assert_msg(wrong < 2 * n / 50, "%" PRIu64 " of %" PRIu64 " absent ids said maybe", wrong,
                  2 * n);
    idfilter_free(&f);
}
END_TEST

/* With exact pages, a filter far too small for its ids (64 KiB for 2
 * million, where nearly every bit would be set) never says maybe for an
 * aligned id it was not given, in place or with its adds on a thread, and
 * still never forgets: an id past the pages' budget and an odd one go to
 * the bits. */
START_TEST(idfilter_with_exact_pages_says_maybe_only_for_ids_it_was_given)
{
    struct idfilter f;
    ck_assert_int_eq(idfilter_init(&f, 64u << 10), HPROF_OK);
    /* 128 pages of 256 KiB of heap: the 32 MiB that the ids below span */
    ck_assert_int_eq(idfilter_use_exact(&f, 128), HPROF_OK);
    if (_i)
        ck_assert_int_eq(idfilter_use_thread(&f), HPROF_OK);
    const uint64_t n = 2000000, heap = 0x12c00000, past = 0x7000000000;
    for (uint64_t i = 0; i < n; i++)
        idfilter_add(&f, heap + 16 * i); /* every other 8-byte step */
    idfilter_add(&f, past);
    idfilter_add(&f, heap + 3);
    for (uint64_t i = 0; i < n; i += 997)
        ck_assert(idfilter_maybe_now(&f, heap + 16 * i));
    ck_assert(idfilter_maybe_now(&f, heap + 16 * (n - 1)));
    ck_assert(idfilter_maybe_now(&f, past) && idfilter_maybe_now(&f, heap + 3));
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < n; i++)
        wrong += idfilter_maybe_now(&f, heap + 16 * i + 8);
    ck_assert_msg(wrong == 0, "%" PRIu64 " of %" PRIu64 " absent ids said maybe", wrong, n);
    idfilter_free(&f);
}
END_TEST

/* Exact pages asked for after the thread started would never be filled:
 * refused, and the filter still never forgets. */
START_TEST(idfilter_refuses_exact_pages_once_its_thread_runs)
{
    struct idfilter f;
    ck_assert_int_eq(idfilter_init(&f, 64u << 10), HPROF_OK);
    ck_assert_int_eq(idfilter_use_thread(&f), HPROF_OK);
    ck_assert_int_eq(idfilter_use_exact(&f, 16), HPROF_ERR_USAGE);
    idfilter_add(&f, 0x12c00008);
    ck_assert(idfilter_maybe_now(&f, 0x12c00008));
    idfilter_free(&f);
}
END_TEST

/* Handing the adds to a thread sets exactly the bits adding in place does,
 * whatever the batches (full ones, a last partial one, adds queued before
 * the thread started), and whether the thread is settled explicitly or by
 * idfilter_maybe(). */
START_TEST(idfilter_on_a_thread_sets_the_bits_it_sets_in_place)
{
    struct idfilter here, there;
    ck_assert_int_eq(idfilter_init(&here, 1u << 20), HPROF_OK);
    ck_assert_int_eq(idfilter_init(&there, 1u << 20), HPROF_OK);
    const uint64_t n = 3000000 + 7; /* overflows the ring many times over */
    for (uint64_t i = 1; i <= n; i++) {
        uint64_t id = 0x12c00000 + 16 * i * (i % 5 + 1);
        if (i == 5) /* four adds queued before the thread takes over */
            ck_assert_int_eq(idfilter_use_thread(&there), HPROF_OK);
        idfilter_add(&here, id);
        idfilter_add(&there, id);
    }
    ck_assert_ptr_nonnull(there.thread);
    if (_i)
        idfilter_settle(&there);
    else
        ck_assert(idfilter_maybe(&there, 0x12c00000 + 16 * n * (n % 5 + 1)));
    ck_assert_ptr_null(there.thread);
    idfilter_flush(&here);
    size_t words = 8 * (here.block_mask + 1);
    ck_assert_int_eq(memcmp(here.words, there.words, words * sizeof *here.words), 0);
    idfilter_free(&here);
    idfilter_free(&there);
}
END_TEST

/* Freeing a filter whose thread still has work stops it cleanly. */
START_TEST(idfilter_with_a_thread_can_be_freed_at_once)
{
    struct idfilter f;
    ck_assert_int_eq(idfilter_init(&f, 1u << 16), HPROF_OK);
    ck_assert_int_eq(idfilter_use_thread(&f), HPROF_OK);
    for (uint64_t i = 1; i <= 100000; i++)
        idfilter_add(&f, i * 8);
    idfilter_free(&f);
    ck_assert_ptr_null(f.words);
}
END_TEST

static Suite *verify_suite(void)
{
    Suite *s = suite_create("verify");
    TCase *t = tcase_create("verify");
    tcase_set_timeout(t, 60);
    tcase_add_loop_test(t, verify_checks_instance_bytes_through_the_superclass_chain, 0, 2);
    tcase_add_test(t, verify_counts_records_and_dangling_references);
    tcase_add_test(t, verify_rejects_an_object_id_dumped_twice);
    tcase_add_test(t, verify_rejects_a_superclass_cycle);
    tcase_add_test(t, verify_rejects_a_missing_superclass);
    tcase_add_test(t, verify_rejects_a_file_that_is_only_a_header);
    tcase_add_test(t, verify_rejects_segments_without_heap_dump_end);
    tcase_add_test(t, idmap_keeps_a_million_ids_through_growth);
    tcase_add_test(t, idmap_never_stores_the_null_id);
    tcase_add_test(t, idlist_finds_exactly_the_ids_added_in_any_order_of_lookup);
    tcase_add_test(t, idlist_that_is_empty_or_cleared_finds_nothing);
    tcase_add_test(t, idlog_gives_back_every_id_in_the_order_added);
    tcase_add_test(t, idlog_that_is_empty_or_cleared_gives_nothing);
    tcase_add_test(t, idfilter_never_forgets_and_rarely_says_maybe_wrongly);
    tcase_add_loop_test(t, idfilter_with_exact_pages_says_maybe_only_for_ids_it_was_given, 0, 2);
    tcase_add_test(t, idfilter_refuses_exact_pages_once_its_thread_runs);
    tcase_add_loop_test(t, idfilter_on_a_thread_sets_the_bits_it_sets_in_place, 0, 2);
    tcase_add_test(t, idfilter_with_a_thread_can_be_freed_at_once);
    tcase_add_test(t, verify_finds_every_reference_however_long_the_class_chain);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tl_run_suite(verify_suite());
}
