/*
 * redact_table.h - the tables of the redaction rewrite, read by its collect
 * side (redact.c) and its write-pass filter (redact_filter.c).
 */
#ifndef HPROF_REWRITE_REDACT_TABLE_H
#define HPROF_REWRITE_REDACT_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* The fields redaction treats apart from the rest, by declaring class (Java
 * names; a '.' matches HotSpot's '/' too), each class's entries together.
 * The man page lists the same table.
 *
 * REDACT_CLEAR, under --redact: caches of a hash of a String's text, from
 * which a short text comes back by trying every candidate of its length.
 * 0 is what the JDK and Android take for "not computed yet" (hashIsZero
 * false with it), and analyzers rebuild no hash table: they follow the
 * nodes' references.  ThreadLocal.threadLocalHashCode is left alone: a
 * counter's step, not derived from data.  REDACT_CLEAR_KEY_HASH clears
 * the same but for negative values: ConcurrentHashMap marks its
 * forwarding, tree-bin and reservation nodes so (structure), and a key's
 * hash there is never negative.
 *
 * REDACT_KEEP, under --redact-fields: the numbers that are structure, read
 * by Shark's finders and inspectors, ahat, MAT and VisualVM to size, walk
 * and judge objects: lengths and counts of Strings, builders and
 * collections (their contents are references, or gone), the fields Shark
 * needs to decide that a KeyedWeakReference is retained and that a View is
 * detached, native sizes that retained sizes add, the Bitmap dimensions
 * and native pointer that tie it to its pixels, the SDK level Shark's
 * known-leak rules match on, enum ordinals and thread states.  Every other
 * number goes, booleans (flags such as Activity.mDestroyed) stay. */
enum field_role { REDACT_NONE, REDACT_KEEP, REDACT_CLEAR, REDACT_CLEAR_KEY_HASH };

struct field_entry {
    const char *cls, *field;
    enum field_role role;
};

extern const struct field_entry redact_field_table[];
extern const size_t redact_field_table_len;

/* The names of the threads of the runtimes and of LeakCanary, whose
 * locals Shark's matchers ignore by name: with --redact they keep their
 * text (and no other thread's name does).  The man page lists them too. */
extern const char *const redact_runtime_threads[];
extern const size_t redact_runtime_threads_len;

/* Is entry `i` of the field table one of the class whose entries start
 * at `first` - 1? */
int redact_table_in_class(uint64_t first, size_t i);

#endif
