/*
 * strings.h - the String rewrite: the value array of every java.lang.String
 * keeps its contents (char[], Latin-1 byte[], or HotSpot's UTF-16 byte[]
 * when String.coder is 1), whatever --arrays does to the other arrays.
 */
#ifndef HPROF_REWRITE_STRINGS_H
#define HPROF_REWRITE_STRINGS_H

#include "rewrite.h"

/* Sorted lists, 8 bytes per id, since String values are most of the arrays
 * kept and are looked up in file order. */
struct strings_keep {
    struct idlist values;
    struct idlist utf16;
};

void strings_init(struct strings_keep *s);
void strings_free(struct strings_keep *s);
/* A String instance `o` whose class layout is `k`. */
int strings_resolve_instance(struct strings_keep *s, const struct kind_layout *k,
                             const struct hprof_instance *o, unsigned ids);
/* Forget what was resolved, to resolve again. */
void strings_forget(struct strings_keep *s);
/* Hand the lists to the plan, sealed.  @return HPROF_OK or HPROF_ERR_NOMEM. */
int strings_publish(struct strings_keep *s, struct strings_plan *plan);

#endif
