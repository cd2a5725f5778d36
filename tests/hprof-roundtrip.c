/*
 * hprof-roundtrip IN OUT [SEGMENT_LIMIT] - reader -> writer, no visitor in
 * between.  A test helper (not installed) so the CLI tests can hand
 * round-tripped dumps to real analyzers, and the benchmark can time a round
 * trip.  hprof-roundtrip --scan IN times one read-only pass (every record
 * parsed, array contents delivered, nothing written).  Like the tools, it
 * reads through a mapping unless HPROF_MMAP=0.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hprof.h"

static int open_reader(const char *path, int *in, struct hprof_reader **r,
                       struct hprof_error *err)
{
    int rc = hprof_input_open(path, in, NULL, err);
    if (rc == HPROF_OK)
        rc = hprof_reader_open_fd(r, *in, err);
    const char *map = getenv("HPROF_MMAP");
    if (rc == HPROF_OK && (map == NULL || strcmp(map, "0") != 0) && hprof_reader_map(*r) != HPROF_OK)
        memset(err, 0, sizeof *err); /* pread then */
    return rc;
}

int main(int argc, char **argv)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    int in = -1, rc;
    if (argc == 3 && strcmp(argv[1], "--scan") == 0) {
        static const struct hprof_visitor_ops none = { 0 };
        struct hprof_visitor nothing = { &none, NULL };
        rc = open_reader(argv[2], &in, &r, &err);
        if (rc == HPROF_OK)
            rc = hprof_reader_run(r, &nothing);
        if (rc != HPROF_OK)
            fprintf(stderr, "hprof-roundtrip: %s\n", err.message);
        hprof_reader_free(r);
        return rc == HPROF_OK ? 0 : 1;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: hprof-roundtrip IN OUT [SEGMENT_LIMIT] | --scan IN\n");
        return 2;
    }
    int out = strcmp(argv[2], "-") == 0 ? 1 : open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    struct hprof_sink *sink = out >= 0 ? hprof_sink_new_fd(out, &err) : NULL;
    struct hprof_writer *w = sink ? hprof_writer_new(sink, &err) : NULL;
    rc = w ? HPROF_OK : HPROF_ERR_IO;
    if (rc == HPROF_OK && argc > 3)
        rc = hprof_writer_set_segment_limit(w, (uint32_t)strtoul(argv[3], NULL, 10));
    if (rc == HPROF_OK)
        rc = open_reader(argv[1], &in, &r, &err);
    if (rc == HPROF_OK)
        rc = hprof_reader_run(r, hprof_writer_visitor(w));
    if (rc == HPROF_OK)
        rc = hprof_sink_finish(sink);
    if (rc != HPROF_OK)
        fprintf(stderr, "hprof-roundtrip: %s\n", err.message[0] ? err.message : argv[2]);
    hprof_reader_free(r);
    hprof_writer_free(w);
    hprof_sink_free(sink);
    if (in >= 0)
        close(in);
    if (out > 1)
        close(out);
    return rc == HPROF_OK ? 0 : 1;
}
