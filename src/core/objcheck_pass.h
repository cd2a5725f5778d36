/*
 * objcheck_pass.h - validate.h's objcheck run over a reader: as a visitor
 * in front of a pass's own, or as a pass of its own.  In core, because it
 * drives the reader and the visitor chain; the set itself is in common.
 */
#ifndef HPROF_OBJCHECK_PASS_H
#define HPROF_OBJCHECK_PASS_H

#include "validate.h"

/* A confirming pass of its own over `r` (array contents skipped), when
 * objcheck_pending(); otherwise nothing.  @return as objcheck_confirm(), or
 * the reader's error. */
int objcheck_confirm_pass(struct objcheck *oc, struct hprof_reader *r, struct hprof_error *err);

/* objcheck as a visitor in front of `next`: it adds (OBJCHECK_ADD) or
 * confirms (OBJCHECK_CONFIRM) every object it sees, then forwards the
 * record to `next` and returns what that returns; OBJCHECK_OFF only
 * forwards.  The mode may change between passes. */
enum objcheck_mode { OBJCHECK_OFF, OBJCHECK_ADD, OBJCHECK_CONFIRM };

struct objcheck_visitor {
    struct hprof_visitor base;
    struct objcheck *oc;
    enum objcheck_mode mode;
    struct hprof_error *err;
};

void objcheck_visitor_init(struct objcheck_visitor *v, struct objcheck *oc,
                           struct hprof_error *err, struct hprof_visitor *next);

#endif /* HPROF_OBJCHECK_PASS_H */
