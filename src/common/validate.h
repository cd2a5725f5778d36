/*
 * validate.h - what "valid" means, in one place for hprof-verify, hprof-info,
 * hprof-bitmaps and the shrink (man/hprof-verify.1 states it for users).
 *
 * A dump is valid when:
 *  1. it frames: the reader accepts every record (known tags only, every
 *     length inside the file, fixed layouts exact, every sub-record inside
 *     its segment, segments closed by HEAP_DUMP_END);  reader.c;
 *  2. every class is dumped once with a non-zero id, and every class's
 *     superclass chain ends (each superclass dumped, no cycle), whether or
 *     not the class has instances;  classes_add(), classes_resolve_all();
 *  3. every instance's class is dumped and the instance holds exactly the
 *     field bytes its layout needs;  classes_check_instance();
 *  4. no object id (class, instance, array) is 0 or dumped twice:
 *     valid_object_id(), object_dumped_twice(), and for passes that must
 *     stay within bounded memory, the objcheck below.
 * Dangling references are not errors (real runtimes write some).
 */
#ifndef HPROF_VALIDATE_H
#define HPROF_VALIDATE_H

#include "hprof_private.h"

/* Rule 4's first half: the error for an object id 0 (HPROF_ERR_FORMAT, with
 * the sub-record's offset and kind), or HPROF_OK. */
int valid_object_id(uint64_t id, uint64_t offset, uint8_t subtag, struct hprof_error *err);

/* Rule 4's second half: the error for the second dump of object `id`, at
 * `offset`.  @return HPROF_ERR_FORMAT. */
int object_dumped_twice(uint64_t id, uint64_t offset, uint8_t subtag, struct hprof_error *err);

/* ---- objcheck: no id dumped twice, in bounded memory ---------------------
 * An exact set of every object id of a multi-GB dump does not fit the
 * shrink's memory bound in general, but it does for the ids runtimes
 * write: addresses, 8-byte aligned, packed in a few ranges.  objcheck keeps
 *  - an exact bit per 8-byte step of id space, in 4 KiB pages (one per
 *    256 KiB of id space, made when an id first lands there) up to the
 *    budget given to objcheck_init(): ids that come in address order set
 *    bits side by side, a few cycles each;
 *  - for the other ids (not 8-byte aligned, or in a page past the budget), a
 *    Bloom filter of the same budget, made when the first such id comes;
 *  - the few ids either answered "maybe seen already" for (every id dumped
 *    twice is among them: neither has false negatives).
 * Most dumps end the first pass with none; otherwise one later pass over the
 * object headers, in file order, settles them exactly with a map of those
 * few ids, so that the duplicate reported is the first in file order.
 *
 * Use (any pass structure; each call names the sub-record for messages):
 *   objcheck_init(&oc, objcheck_filter_bytes(hprof_reader_size(r)));
 *   pass 1:  objcheck_add() for every CLASS_DUMP, INSTANCE_DUMP and array
 *            (its first chunk: a->first == 0), or put objcheck_visitor in
 *            front of the pass's visitor;
 *   then:    objcheck_seal();  if objcheck_pending() is not 0, either call
 *            objcheck_confirm() for every object of a later pass that sees
 *            them all in file order (objcheck_visitor does it in its
 *            OBJCHECK_CONFIRM mode), or run objcheck_confirm_pass() (both
 *            in src/core/objcheck_pass.h);
 *   objcheck_free().
 * Errors are those of object_dumped_twice() and valid_object_id(): the
 * same message, at the same offset (the second dump), as hprof-verify's. */

#define OBJCHECK_BATCH 32

struct objcheck {
    struct id_pages exact;      /* within the budget; the filter past it */
    /* The Bloom filter: 8 words (one cache line) per block; NULL until an
     * id needs it. */
    uint64_t *words;
    size_t words_bytes;
    size_t block_mask;
    size_t budget;              /* bytes for each of pages and filter */
    /* Ids are tested and set in the filter in batches whose lines are
     * prefetched together: one cache miss per object, overlapped. */
    uint64_t queued[OBJCHECK_BATCH];
    unsigned n_queued;
    struct idlist suspects;     /* ids maybe seen before */
    struct idmap met;           /* confirming: suspects met so far -> offset */
    int sealed;
};

/* A budget for an input of `input_bytes`: 1 byte per 32 of input (pages:
 * a bit per 8 bytes of heap, twice the heap a dump of that size holds;
 * filter: about 8 bits per object for the smallest objects, so that few
 * ids are suspects), from 64 KiB to 32 MiB. */
size_t objcheck_filter_bytes(uint64_t input_bytes);
/* `budget` bytes for the exact pages and as much for the filter, if one
 * is needed.  @return HPROF_OK or HPROF_ERR_NOMEM (nothing to free then). */
int objcheck_init(struct objcheck *oc, size_t budget);
void objcheck_free(struct objcheck *oc);
/* First pass: object `id` dumped at `offset` by a sub-record `subtag`.
 * @return HPROF_OK, a format error for id 0, or HPROF_ERR_NOMEM. */
int objcheck_add(struct objcheck *oc, uint64_t id, uint64_t offset, uint8_t subtag,
                 struct hprof_error *err);
/* objcheck_add() inline for the usual id: aligned, in the page of the last
 * one, not seen before (a call otherwise, which finds the bit set and
 * makes the id a suspect). */
static inline int objcheck_add_fast(struct objcheck *oc, uint64_t id, uint64_t offset,
                                    uint8_t subtag, struct hprof_error *err)
{
    if (id_pages_fast(&oc->exact, id) == 0)
        return HPROF_OK;
    return objcheck_add(oc, id, offset, subtag, err);
}
/* After the first pass.  @return HPROF_OK or HPROF_ERR_NOMEM. */
int objcheck_seal(struct objcheck *oc, struct hprof_error *err);
/* After objcheck_seal(): how many ids a confirming pass must look at (0: no
 * id is dumped twice, nothing more to do). */
size_t objcheck_pending(const struct objcheck *oc);
/* Confirming pass, every object in file order.  @return HPROF_OK, the
 * error of object_dumped_twice() at its second dump, or HPROF_ERR_NOMEM. */
int objcheck_confirm(struct objcheck *oc, uint64_t id, uint64_t offset, uint8_t subtag,
                     struct hprof_error *err);

#endif /* HPROF_VALIDATE_H */
