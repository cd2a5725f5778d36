/*
 * segment_runs.c - runs of small heap segments, for the write pass's
 * workers (see segment_runs.h).
 */
#include <stdlib.h>
#include <string.h>

#include "segment_runs.h"

/* 6 MiB of runs cover 256 GiB of segments in runs of 1 MiB. */
#define MAX_RUNS (1u << 18)

void segment_runs_init(struct segment_runs *sr, uint64_t segment_max, uint64_t run_bytes)
{
    memset(sr, 0, sizeof *sr);
    sr->segment_max = segment_max;
    sr->run_bytes = run_bytes;
}

void segment_runs_free(struct segment_runs *sr)
{
    free(sr->runs);
    memset(sr, 0, sizeof *sr);
}

/* The open run ends: kept if a worker can take it in one go instead of
 * segment by segment (a run of one gains nothing), and room is left. */
static void close_run(struct segment_runs *sr)
{
    if (sr->open.segments >= 2 && sr->n < MAX_RUNS) {
        struct segment_run *grown = grow_array(sr->runs, &sr->cap, sr->n + 1, sizeof *grown);
        if (grown != NULL) { /* out of memory: the walk reads these headers */
            sr->runs = grown;
            sr->runs[sr->n++] = sr->open;
        }
    }
    sr->open.segments = 0;
}

void segment_runs_finish(struct segment_runs *sr)
{
    close_run(sr);
}

static int note_segment(struct hprof_visitor *v, const struct hprof_segment *s)
{
    struct segment_runs *sr = (struct segment_runs *)v;
    uint64_t end = s->offset + 9 + s->length;
    /* only consecutive segments make a run: any other record between two
     * leaves a gap, and the walk must see it */
    if (sr->open.segments > 0 && (s->offset != sr->open.end ||
                                  sr->open.end - sr->open.start >= sr->run_bytes))
        close_run(sr);
    if (s->tag != HPROF_TAG_HEAP_DUMP_SEGMENT || s->length > sr->segment_max) {
        close_run(sr);
    } else {
        if (sr->open.segments == 0)
            sr->open.start = s->offset;
        sr->open.end = end;
        sr->open.segments++;
    }
    return hprof_visit_heap_begin(v->next, s);
}

static const struct hprof_visitor_ops segment_runs_ops = { .heap_begin = note_segment };

struct hprof_visitor *segment_runs_visitor(struct segment_runs *sr, struct hprof_visitor *next)
{
    sr->base.ops = &segment_runs_ops;
    sr->base.next = next;
    return &sr->base;
}

const struct segment_run *segment_runs_at(struct segment_runs *sr, uint64_t offset)
{
    while (sr->next < sr->n && sr->runs[sr->next].start < offset)
        sr->next++;
    return sr->next < sr->n && sr->runs[sr->next].start == offset ? &sr->runs[sr->next] : NULL;
}
