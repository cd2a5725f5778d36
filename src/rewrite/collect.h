/*
 * collect.h - the collect passes: pass 1 reads names, classes and heaps
 * into the model and the rewrites; the resolution then walks every kept
 * object against complete class layouts and tells each rewrite what it
 * needs (String values, Bitmap buffers, references to system objects,
 * Strings a keep rule names).
 *
 * Pass 1 also does the resolution's work while nothing it has seen could
 * change a decision already taken: names before the first object, and
 * zygote or image objects (if any) before the application's.  An instance
 * whose class layout is not complete yet is put aside and resolved when
 * pass 1 ends.  HotSpot writes dumps that way, and ART too as far as names
 * and classes go.  Otherwise ("abandoned") the resolution is a pass of its
 * own, pass 2.
 */
#ifndef HPROF_REWRITE_COLLECT_H
#define HPROF_REWRITE_COLLECT_H

#include "bitmaps.h"
#include "redact.h"
#include "strings.h"
#include "system_heaps.h"
#include "validate.h"

enum eager_state {
    EAGER_WAITING,          /* no object seen yet */
    EAGER_ON,               /* resolving as pass 1 goes */
    EAGER_ABANDONED         /* something came too late: pass 2 resolves */
};

/* The rewrites of a run, as the collect passes feed them. */
struct rewrites {
    struct dump_model model;
    struct strings_keep strings;
    struct bitmaps bitmaps;
    struct system_heaps system;
    struct redaction redact;
};

struct collect {
    struct hprof_visitor pass_1, resolve, graph;
    const struct rewrite_ctx *ctx;
    struct rewrites *rw;
    struct objcheck *ids_seen;  /* pass 1 adds every object id (validate.h) */
    uint32_t heap;              /* heap of the current segment */
    enum eager_state eager;
    int kept_object_seen;       /* eager: a system object now would come too late */
    struct idlist deferred;     /* eager: offsets of instances of unfinished classes */
};

/* Pass 1 gives `ids_seen` every object id, first thing in each callback,
 * as an objcheck_visitor in front would (the same errors, first), without
 * a visitor's call and frame for every object. */
void collect_init(struct collect *c, const struct rewrite_ctx *ctx, struct rewrites *rw,
                  struct objcheck *ids_seen);
void collect_free(struct collect *c);

/* Pass 1's visitor. */
struct hprof_visitor *collect_pass_1(struct collect *c);
/* After pass 1: finish the eager resolution (if on) and check every class
 * layout.  *resolved says whether the resolution is complete. */
int collect_finish_pass_1(struct collect *c, int *resolved);
/* Pass 2's visitor, after collect_prepare_resolve(). */
int collect_prepare_resolve(struct collect *c);
struct hprof_visitor *collect_resolve(struct collect *c);

/* After the resolution: is the graph pass needed, and its visitor (the
 * references system objects hold, the device's Strings), then what it
 * found into the rewrites. */
int collect_wants_graph(const struct collect *c);
struct hprof_visitor *collect_graph(struct collect *c);
int collect_finish_graph(struct collect *c);

#endif
