/*
 * one_pass_checks.c - what the multi-pass shrink checks of the input
 * before it writes, checked by the one pass as the input is read, at the
 * record where it meets it: an object id 0, or dumped twice in a heap
 * dump.  (That every class's superclass is dumped is checked when the
 * heap dump ends, one_pass.c.)
 *
 * The multi-pass shrink tells a suspect from a Bloom filter and confirms
 * it on a second read; the one pass cannot read again, so it keeps the
 * exact set: id pages (a bit per 8 bytes of the address range the ids
 * span) and a hash set for ids that are not 8-byte aligned (synthetic
 * dumps).  Past their limits, ids spread that far go unchecked.
 */
#include "one_pass_private.h"
#include "validate.h"

/* At most 64 MiB of pages (4 GiB of address range)... */
#define DUMPED_MAX_PAGES (((size_t)64 << 20) / ID_PAGE_BYTES)
/* ... and 2^20 ids not aligned. */
#define DUMPED_MAX_ODD ((size_t)1 << 20)

int one_pass_checks_init(struct one_pass *op)
{
    if (id_pages_init(&op->dumped, DUMPED_MAX_PAGES) != HPROF_OK)
        return HPROF_ERR_NOMEM;
    if (idmap_init(&op->dumped_odd, 0) != HPROF_OK) {
        id_pages_free(&op->dumped);
        return HPROF_ERR_NOMEM;
    }
    return HPROF_OK;
}

void one_pass_checks_free(struct one_pass *op)
{
    id_pages_free(&op->dumped);
    idmap_free(&op->dumped_odd);
}

int one_pass_checks_reset(struct one_pass *op)
{
    one_pass_checks_free(op);
    return one_pass_checks_init(op);
}

/* An id the pages do not hold: 1 when seen before, 0 when not (or past the
 * limit), or HPROF_ERR_NOMEM. */
static int odd_test_and_set(struct one_pass *op, uint64_t id)
{
    if (id & ((1u << ID_STEP_SHIFT) - 1)) {
        if (idmap_has(&op->dumped_odd, id))
            return 1;
        if (op->dumped_odd.count < DUMPED_MAX_ODD)
            return idmap_put(&op->dumped_odd, id, 0);
    }
    return 0;
}

int one_pass_dumped_already(const struct one_pass *op, uint64_t id)
{
    int seen = id_pages_test(&op->dumped, id);
    if (seen == -1 && (id & ((1u << ID_STEP_SHIFT) - 1)))
        seen = idmap_has(&op->dumped_odd, id);
    return seen == 1;
}

int one_pass_dumped_once(struct one_pass *op, uint64_t id, uint64_t offset, uint8_t subtag)
{
    if (id_pages_fast(&op->dumped, id) == 0)
        return HPROF_OK;
    int rc = valid_object_id(id, offset, subtag, op->ctx.err);
    if (rc != HPROF_OK)
        return rc;
    int seen = id_pages_test_and_set(&op->dumped, id);
    if (seen == -1)
        seen = odd_test_and_set(op, id);
    if (seen < 0)
        return rewrite_nomem(&op->ctx);
    return seen ? object_dumped_twice(id, offset, subtag, op->ctx.err) : HPROF_OK;
}
