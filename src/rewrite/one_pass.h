/*
 * one_pass.h - the shrink in one forward run of a reader, for readers of
 * a stream (hprof_reader_open_stream()), which can be read only once.
 */
#ifndef HPROF_ONE_PASS_H
#define HPROF_ONE_PASS_H

#include "hprof.h"

/* hprof_shrink()'s contract, in exactly one hprof_reader_run() of `r`. */
int hprof_shrink_one_pass(struct hprof_reader *r, struct hprof_sink *sink,
                          const struct hprof_shrink_options *opt,
                          struct hprof_shrink_stats *stats, struct hprof_error *err);

#endif
