/*
 * tags.h - the top-level record tags the format defines, and the clock
 * the passes are timed with (error.c).
 */
#ifndef HPROF_TAGS_H
#define HPROF_TAGS_H

#include <stdint.h>

#include "hprof.h"

/* The top-level record tags the format defines, with their names: one
 * list for hprof_tag_name() and hprof_tag_known(). */
#define HPROF_TAGS(X)                                                          \
    X(HPROF_TAG_STRING, "STRING")                                              \
    X(HPROF_TAG_LOAD_CLASS, "LOAD_CLASS")                                      \
    X(HPROF_TAG_UNLOAD_CLASS, "UNLOAD_CLASS")                                  \
    X(HPROF_TAG_STACK_FRAME, "STACK_FRAME")                                    \
    X(HPROF_TAG_STACK_TRACE, "STACK_TRACE")                                    \
    X(HPROF_TAG_ALLOC_SITES, "ALLOC_SITES")                                    \
    X(HPROF_TAG_HEAP_SUMMARY, "HEAP_SUMMARY")                                  \
    X(HPROF_TAG_START_THREAD, "START_THREAD")                                  \
    X(HPROF_TAG_END_THREAD, "END_THREAD")                                      \
    X(HPROF_TAG_HEAP_DUMP, "HEAP_DUMP")                                        \
    X(HPROF_TAG_CPU_SAMPLES, "CPU_SAMPLES")                                    \
    X(HPROF_TAG_CONTROL_SETTINGS, "CONTROL_SETTINGS")                          \
    X(HPROF_TAG_HEAP_DUMP_SEGMENT, "HEAP_DUMP_SEGMENT")                        \
    X(HPROF_TAG_HEAP_DUMP_END, "HEAP_DUMP_END")

/* Is `tag` a top-level record tag the format defines (what
 * hprof_tag_name() names)?  Asked of every record: a switch, not a
 * string compare. */
static inline int hprof_tag_known(uint8_t tag)
{
#define HPROF_TAG_CASE(tag, name) case tag:
    switch (tag) {
    HPROF_TAGS(HPROF_TAG_CASE)
        return 1;
    default:
        return 0;
    }
#undef HPROF_TAG_CASE
}

/* Are a record's tag, time and length the first 9 bytes of a heap dump
 * file, "JAVA PROF"?  Then two files were joined (cat a.hprof b.hprof),
 * which "unknown tag 0x4a" would not say. */
static inline int hprof_head_is_file_header(uint8_t tag, uint32_t time, uint32_t length)
{
    return tag == 'J' && time == 0x41564120u /* "AVA " */ && length == 0x50524f46u /* "PROF" */;
}

/* The compressor whose magic number the `n` bytes at `p` begin with, or
 * NULL: what a dump compressed twice (a .hprof.gz gzipped again by a web
 * server or an upload) looks like once the outer layer is off, or one
 * compressed by a program whose format is not read.  *read_by_input says
 * whether the input takes that layer off (gzip, zstd).  Four bytes tell
 * each (a pipe's first read may give no more). */
static inline const char *hprof_compressed_by(const uint8_t *p, size_t n, int *read_by_input)
{
    *read_by_input = 1;
    if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b)
        return "gzip";
    if (n >= 4 && p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd)
        return "zstd";
    *read_by_input = 0;
    if (n >= 4 && p[0] == 0xfd && p[1] == '7' && p[2] == 'z' && p[3] == 'X')
        return "xz";
    if (n >= 4 && p[0] == 'B' && p[1] == 'Z' && p[2] == 'h' && p[3] >= '1' && p[3] <= '9')
        return "bzip2";
    if (n >= 4 && p[0] == 0x04 && p[1] == 0x22 && p[2] == 0x4d && p[3] == 0x18)
        return "lz4";
    return NULL;
}

#define HPROF_NOT_A_DUMP "offset 0x0: header: not a heap dump (no \"JAVA PROFILE 1.0.x\" magic)"
/* HPROF_NOT_A_DUMP for bytes that hprof_compressed_by() names (printf
 * arguments: that name twice): found under a layer the input took off, or
 * a layer it would take off itself, a second layer; else a format the
 * input does not read. */
#define HPROF_COMPRESSED_TWICE "offset 0x0: header: not a heap dump but %s-compressed data " \
                               "(compressed twice? decompress it first: %s -d)"
#define HPROF_COMPRESSED_UNREAD "offset 0x0: header: not a heap dump but %s-compressed data " \
                                "(only gzip and zstd are read: decompress it first: %s -d)"

/* What a runtime writes before its heap dump: the names, the classes
 * loaded, the stack traces (HotSpot's heap dumper and ART write nothing
 * else there).  A dump that holds no heap dump legitimately is a profile of
 * the hprof agent, which starts with CONTROL_SETTINGS and holds threads,
 * CPU samples or allocation sites. */
static inline int hprof_tag_before_heap(uint8_t tag)
{
    return tag == HPROF_TAG_STRING || tag == HPROF_TAG_LOAD_CLASS ||
           tag == HPROF_TAG_STACK_FRAME || tag == HPROF_TAG_STACK_TRACE;
}

/* Nine zero bytes where a record header should be: no record has tag 0,
 * and a tail of zeros (a preallocated download, a writer that crashed after
 * fallocate()) is what leaves them. */
#define HPROF_ZEROS_HERE "zero bytes where a record should start (a preallocated or " \
                         "zero-filled tail?)"

#define HPROF_FILE_HEADER_HERE "a heap dump's header (\"JAVA PROFILE\") where a record should " \
                               "start: two dump files joined into one? The first ends here"

/* Monotonic seconds, for the passes' timings. */
double hprof_now(void);

#endif
