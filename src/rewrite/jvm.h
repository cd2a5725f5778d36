/*
 * jvm.h - the --jvm rewrite: an Android (JAVA PROFILE 1.0.3) dump written as
 * the standard 1.0.2 form that Eclipse MAT and VisualVM read, as AOSP's
 * hprof-conv does:
 *
 *   header "JAVA PROFILE 1.0.3"   -> "JAVA PROFILE 1.0.2" (other versions kept)
 *   ROOT_INTERNED_STRING 0x89, ROOT_FINALIZING 0x8A, ROOT_DEBUGGER 0x8B,
 *   ROOT_REFERENCE_CLEANUP 0x8C, ROOT_VM_INTERNAL 0x8D, UNREACHABLE 0x90
 *                                 -> ROOT_UNKNOWN 0xFF, same object id
 *   ROOT_JNI_MONITOR 0x8E         -> ROOT_UNKNOWN, the id kept, its thread
 *                                    serial and frame number dropped
 *   HEAP_DUMP_INFO 0xFE           -> dropped: the heaps merge into one
 *   PRIMITIVE_ARRAY_NODATA 0xC3   -> PRIMITIVE_ARRAY_DUMP of the same id,
 *                                    stack serial and type with count 0
 *
 * Nothing else changes, so a HotSpot dump goes through unchanged.  Two
 * departures from hprof-conv: no zero-length HEAP_DUMP_SEGMENT comes out
 * (the writer never writes one; VisualVM rejects them), and NODATA becomes
 * an empty array (hprof-conv zeroes the stack serial instead of the count,
 * so its array keeps a count with no data and does not read back).
 *
 * The filter has no collect pass and reads no plan: every decision is by
 * record kind.  The header changes only where it passes, on the thread
 * that walks the top-level records; the sub-records change in whichever
 * chain carries them, so each chain of the write pass (the main one and
 * every worker's) has a jvm_filter of its own, counting into its chain's
 * stats, which the pass adds up with the rest.  It goes after every filter
 * that needs HEAP_DUMP_INFO (the system-heap drop decides by heap) and
 * before the writer:
 *     reader -> ... -> shrink filter -> jvm filter -> writer
 * With the default system-heap drop, only the app heap's objects remain,
 * as with `hprof-conv -z` (which keeps the dropped heaps' class dumps and
 * roots, and has no stand-ins).  tests/check_jvm.c compares the output with
 * hprof-conv's.
 */
#ifndef HPROF_JVM_H
#define HPROF_JVM_H

#include "hprof_private.h"

/* What one filter converted, for a caller that runs it alone. */
struct jvm_counts {
    uint64_t roots_converted;       /* Android root kinds -> ROOT_UNKNOWN */
    uint64_t heap_infos_dropped;
    uint64_t nodata_arrays;         /* NODATA -> empty PRIMITIVE_ARRAY_DUMP */
    int header_converted;           /* 1.0.3 -> 1.0.2 */
};

struct jvm_filter {
    struct hprof_visitor base;      /* first: the visitor */
    struct jvm_counts counts;
    struct hprof_shrink_stats *report; /* or NULL: also counted there (the chain's) */
};

/* A filter with zero counts; set base.next to the rest of the chain. */
void jvm_filter_init(struct jvm_filter *f);

/* The standard kind hprof-conv writes for root `tag` (the tag itself when
 * it is standard already). */
uint8_t jvm_root_kind(uint8_t tag);

#endif /* HPROF_JVM_H */
