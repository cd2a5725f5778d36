/*
 * shrink_stats.c - the sums of struct hprof_shrink_stats, generated from its
 * table of counters so that none is left out of them, and the names of the
 * passes.
 */
#include <string.h>

#include "shrink_stats.h"

#define ADD_COUNT(field)                          \
    to->field.count += from->field.count;         \
    to->field.bytes += from->field.bytes;
#define ADD_U64(field) to->field += from->field;
#define ADD_COUNTER(kind, field, ...) ADD_##kind(field)

void shrink_stats_add_counters(struct hprof_shrink_stats *to,
                               const struct hprof_shrink_stats *from)
{
    HPROF_SHRINK_COUNTERS(ADD_COUNTER)
}

#define CLEAR_COUNTER(kind, field, ...) memset(&s->field, 0, sizeof s->field);

void shrink_stats_clear_counters(struct hprof_shrink_stats *s)
{
    HPROF_SHRINK_COUNTERS(CLEAR_COUNTER)
}

void shrink_stats_add_dump(struct hprof_shrink_stats *to, const struct hprof_shrink_stats *from)
{
    shrink_stats_add_counters(to, from);
    for (int i = 0; i < from->passes && i < HPROF_SHRINK_MAX_PASSES; i++) {
        to->pass_seconds[i] += from->pass_seconds[i];
        to->pass_kinds[i] = from->pass_kinds[i];
    }
    if (from->passes > to->passes)
        to->passes = from->passes;
    to->resolved_in_pass_1 = from->resolved_in_pass_1;
}

#define PASS_NAME(name, text) text,
static const char *const pass_names[] = { HPROF_SHRINK_PASSES(PASS_NAME) };

const char *hprof_shrink_pass_name(enum hprof_shrink_pass p)
{
    return (unsigned)p < HPROF_SHRINK_PASS_KINDS ? pass_names[p] : "?";
}
