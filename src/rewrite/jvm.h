/*
 * jvm.h - the --jvm rewrite (issue 17, item 3): an Android (JAVA PROFILE
 * 1.0.3) dump written as the standard 1.0.2 form that Eclipse MAT and
 * VisualVM read, as AOSP's hprof-conv (dalvik/tools/hprof-conv) does:
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
 *                                    (hprof-conv writes an empty array)
 * Nothing else changes, so a HotSpot dump goes through unchanged.  Unlike
 * hprof-conv, no zero-length HEAP_DUMP_SEGMENT comes out (the writer
 * never writes one; VisualVM rejects them: "Tag 0x1c at offset 278741 has
 * zero length" on hprof-conv's output of the ART fixture).
 *
 * The filter has no collect pass and reads no plan: every decision is by
 * record kind.  The header changes only where it passes, on the thread
 * that walks the top-level records; the sub-records change in whichever
 * chain carries them.  So:
 *   - the write pass's main chain and every worker's chain each get a
 *     jvm_filter of their own (jvm_filter_init(); nothing to free), and
 *     the pass adds their counts up (jvm_counts_add());
 *   - it goes after every filter that needs HEAP_DUMP_INFO (the shrink's
 *     system-heap drop decides by heap) and before the writer:
 *       reader -> ... -> shrink filter -> jvm filter -> writer
 * With the default system-heap drop, only the app heap's objects remain,
 * as with `hprof-conv -z` (which keeps the dropped heaps' class dumps and
 * roots, and has no stand-ins).
 */
/*
 * Compared with hprof-conv (tests/check_jvm.c; the CLI plan below):
 * - Byte for byte on a hand-made dump of every Android record but NODATA,
 *   and by canonical digest (tl_canon: records and sub-records in order,
 *   whatever the segments) on hprof-synth's Android dumps and the ART
 *   fixture.  hprof-conv 29.0.6 (Debian) and AOSP's HprofConv.c copy a
 *   segment of length 0 as it is, header and all (497 in the ART fixture,
 *   the first at offset 278741), which VisualVM refuses.
 * - NODATA differs on purpose: hprof-conv means "count 0" but zeroes the
 *   stack serial (bytes 5-8 of the sub-record; the count is at 9-12), so
 *   its PRIMITIVE_ARRAY_DUMP keeps the count with no data and does not
 *   read back.  Modern ART writes no NODATA (none in the ART fixture).
 * - For the CLI (tests/cli-tests.sh, with tests/java/HeapCount.java):
 *   hprof-conv's output with its zero-length segments cut out (a byte
 *   walk of the records, independent of libhprof), against ours, both
 *   loaded by VisualVM's heap library: classes, instance counts per class,
 *   roots (HeapCount prints these today; add roots per GCRoot.getKind()
 *   and a sorted list of (instance id, field or index, target id) for
 *   references), `cmp` of the two listings.  Do it for
 *   `--jvm --arrays=zero --keep-system-heaps` against plain hprof-conv,
 *   and for default `--jvm` against `hprof-conv -z` of the default output
 *   (same shrink, so the stand-ins are in both).  Measured by hand with a
 *   reader -> jvm filter -> writer program on the ART fixture: our output
 *   loads directly (1,126 classes, 24,793 instances, 1,597 roots) and
 *   HeapCount's listing equals that of hprof-conv's output with the empty
 *   segments removed; hprof-conv's own output fails ("Tag 0x1c at offset
 *   278741 has zero length").
 */
#ifndef HPROF_JVM_H
#define HPROF_JVM_H

#include "hprof_private.h"

struct jvm_counts {
    uint64_t roots_converted;       /* Android root kinds -> ROOT_UNKNOWN */
    uint64_t heap_infos_dropped;
    uint64_t nodata_arrays;         /* NODATA -> empty PRIMITIVE_ARRAY_DUMP */
    int header_converted;           /* 1.0.3 -> 1.0.2 */
};

struct jvm_filter {
    struct hprof_visitor base;      /* first: the visitor */
    struct jvm_counts counts;
    struct hprof_shrink_stats *report; /* or NULL: also counted there */
};

/* A filter with zero counts; set base.next to the rest of the chain. */
void jvm_filter_init(struct jvm_filter *f);

/* to += from (the write pass's workers into its report). */
void jvm_counts_add(struct jvm_counts *to, const struct jvm_counts *from);

/* The standard kind hprof-conv writes for root `tag` (the tag itself when
 * it is standard already). */
uint8_t jvm_root_kind(uint8_t tag);

#endif /* HPROF_JVM_H */
