/*
 * chain.h - the write pass's visitor chain: the filters of the rewrites a
 * plan needs, in their fixed order, in front of the writer:
 *
 *   deobfuscate -> names -> census -> system heaps -> bitmaps -> redact ->
 *   arrays -> jvm -> (writer)
 *
 * With a mapping, names are restored first (as in every collect pass, so
 * everything after sees the original names); the names filter drops the STRING records nothing refers to; the census
 * counts what comes in; the system-heap filter drops or hollows
 * zygote and image objects; the bitmaps filter drops merged copies and
 * rewrites what named them; redaction fills kept texts and pixels; the
 * arrays filter empties, zeroes or removes every array nothing keeps, and
 * counts what goes out; --jvm writes Android's own records the standard
 * way.  A filter whose rewrite has nothing to do in this
 * run is left out.  Every worker of the write pass has a chain of its own.
 */
#ifndef HPROF_REWRITE_CHAIN_H
#define HPROF_REWRITE_CHAIN_H

#include "plan.h"

struct shrink_chain;

/* A chain reading `plan`, counting into `stats`.  @return NULL when out of
 * memory (with `err` set). */
struct shrink_chain *shrink_chain_new(const struct shrink_plan *plan,
                                      struct hprof_shrink_stats *stats, struct hprof_error *err);
struct hprof_visitor *shrink_chain_head(struct shrink_chain *c);
/* The chain's place in the plan: the one-pass shrink gives it the verdict
 * on each array before the array goes in. */
struct plan_cursor *shrink_chain_cursor(struct shrink_chain *c);
/* Where the chain's output goes (a writer's visitor). */
void shrink_chain_set_next(struct shrink_chain *c, struct hprof_visitor *next);
void shrink_chain_free(struct shrink_chain *c);

#endif
