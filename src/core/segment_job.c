/*
 * segment_job.c - heap segments written on a worker's thread (see
 * segment_job.h).
 */
#include <stdlib.h>

#include "reader_internal.h"
#include "segment_job.h"
#include "sink_private.h"

struct segment_worker {
    struct hprof_reader *reader;
    struct hprof_sink *sink;    /* memory, capped */
    struct hprof_writer *writer;
};

void segment_worker_free(struct segment_worker *sw)
{
    if (sw == NULL)
        return;
    hprof_writer_free(sw->writer);
    hprof_sink_free(sw->sink);
    hprof_reader_free(sw->reader);
    free(sw);
}

struct segment_worker *segment_worker_new(const struct hprof_reader *input, unsigned id_size,
                                          uint32_t segment_limit, size_t output_max,
                                          struct hprof_error *err)
{
    struct segment_worker *sw = calloc(1, sizeof *sw);
    if (sw == NULL) {
        hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    int rc = reader_clone(input, &sw->reader, err);
    if (rc == HPROF_OK && (sw->sink = mem_sink_new_capped(output_max, err)) == NULL)
        rc = HPROF_ERR_NOMEM;
    if (rc == HPROF_OK && (sw->writer = hprof_writer_new(sw->sink, err)) == NULL)
        rc = HPROF_ERR_NOMEM;
    if (rc == HPROF_OK) {
        writer_for_segments(sw->writer, id_size, sw->sink);
        rc = hprof_writer_set_segment_limit(sw->writer, segment_limit);
    }
    if (rc != HPROF_OK) {
        segment_worker_free(sw);
        return NULL;
    }
    return sw;
}

struct hprof_visitor *segment_worker_visitor(struct segment_worker *sw)
{
    return hprof_writer_visitor(sw->writer);
}

int segment_worker_run(struct segment_worker *sw, uint64_t start, uint64_t end, size_t records,
                       struct hprof_visitor *front, struct segment_output *out)
{
    mem_sink_swap(sw->sink, &out->bytes, &out->len, &out->cap); /* write into out's buffer */
    writer_begin_job(sw->writer);
    int rc = reader_run_segments(sw->reader, start, end, front);
    out->run = writer_run_state(sw->writer);
    out->records = records;
    int over = mem_sink_over(sw->sink);
    mem_sink_swap(sw->sink, &out->bytes, &out->len, &out->cap); /* and back */
    out->too_big = rc != HPROF_OK && over;
    if (rc != HPROF_OK) /* the writer may hold half a sub-record */
        writer_discard(sw->writer);
    return out->too_big ? HPROF_OK : rc;
}

int segment_output_append(struct hprof_writer *w, const struct segment_output *out)
{
    return writer_put_segments(w, out->bytes, out->len, out->run, out->records);
}

void segment_output_free(struct segment_output *out)
{
    free(out->bytes);
    out->bytes = NULL;
    out->len = out->cap = 0;
}

int writer_copy_from(struct hprof_writer *w, const struct hprof_reader *r)
{
    const uint8_t *map = NULL;
    uint64_t size = 0;
    int fd = r != NULL ? reader_mapped_file(r, &map, &size) : -1;
    return writer_copy_input(w, map, size, fd);
}
