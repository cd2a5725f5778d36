/*
 * one_pass_stub.c - A STAND-IN FOR THE INTEGRATOR TO REPLACE with the real
 * one-pass shrink (same signature, one_pass.h).  It copies the dump as it
 * reads it (reader -> writer, a round trip, no shrinking), so that the push
 * interface (push_shrink.c) can be built and tested end to end meanwhile.
 */
#include <string.h>

#include "one_pass.h"

int hprof_shrink_one_pass(struct hprof_reader *r, struct hprof_sink *sink,
                          const struct hprof_shrink_options *opt,
                          struct hprof_shrink_stats *stats, struct hprof_error *err)
{
    struct hprof_writer *w = hprof_writer_new(sink, err);
    if (w == NULL)
        return err->code;
    int rc = opt != NULL && opt->segment_limit != 0
                 ? hprof_writer_set_segment_limit(w, opt->segment_limit)
                 : HPROF_OK;
    if (rc == HPROF_OK)
        rc = hprof_reader_run(r, hprof_writer_visitor(w));
    if (stats != NULL) {
        memset(stats, 0, sizeof *stats);
        stats->passes = 1;
        stats->dumps = hprof_reader_dumps(r);
        stats->bytes_in = hprof_reader_size(r);
        stats->bytes_out = hprof_sink_bytes(sink);
    }
    hprof_writer_free(w);
    return rc;
}
