/*
 * shrink_stats.h - adding up struct hprof_shrink_stats, as its table of
 * counters (HPROF_SHRINK_COUNTERS in hprof.h) says.
 */
#ifndef SHRINK_STATS_H
#define SHRINK_STATS_H

#include "hprof.h"

/* Every counter of `from` added to `to`'s: what the write pass's workers
 * counted, into the pass's report. */
void shrink_stats_add_counters(struct hprof_shrink_stats *to,
                               const struct hprof_shrink_stats *from);

/* Every counter of `s` back to 0; the pass times stay. */
void shrink_stats_clear_counters(struct hprof_shrink_stats *s);

/* A heap dump's run added to its file's: the counters, and the pass times
 * by position. */
void shrink_stats_add_dump(struct hprof_shrink_stats *to, const struct hprof_shrink_stats *from);

#endif
