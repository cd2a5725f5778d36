/*
 * one_pass_checks.c - what the multi-pass shrink checks of the input
 * before it writes, checked by the one pass as the input is read, at the
 * record where it meets it: an object dumped twice in a heap dump.  (That
 * every class's superclass is dumped is checked when the heap dump ends,
 * one_pass.c.)
 */
#include "one_pass_private.h"
#include "validate.h"

int one_pass_dumped_once(struct one_pass *op, uint64_t id, uint64_t offset, uint8_t subtag)
{
    int seen = idbits_add(&op->dumped, id);
    if (seen < 0)
        return rewrite_nomem(&op->ctx);
    return seen ? object_dumped_twice(id, offset, subtag, op->ctx.err) : HPROF_OK;
}
