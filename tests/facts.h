/*
 * facts.h - what a heap dump says, extracted independently of the shrinker
 * so that tests can compare a dump before and after: instance counts per
 * class, String texts, Bitmap pixels, array shapes and contents, dangling
 * references.
 */
#ifndef HPROF_FACTS_H
#define HPROF_FACTS_H

#include "hprof_private.h"

struct facts {
    unsigned ids;
    struct idmap objects;       /* every dumped id (and classes) */
    struct idmap system;        /* ids in the zygote or image heap */
    struct idmap class_counts;  /* class id -> app-heap instances */
    struct idmap all_counts;    /* class id -> instances in every heap */
    struct idmap arrays;        /* primitive array id -> count << 8 | type */
    struct idmap contents;      /* primitive array id -> hash of contents (0: all zero) */
    struct idmap strings;       /* app String id -> hash of its value array */
    struct idmap bitmaps;       /* Bitmap id -> hash of its pixels (1: null mBuffer) */
    struct idmap dump_buffers;  /* DumpData.buffers index -> hash of that buffer */
    struct idmap dangling;      /* ids referred to but not dumped */
    uint64_t string_value_ids_kept; /* arrays that are some String's value */
    uint64_t arrays_with_contents;  /* non-zero contents, not String/bitmap/natives */
    uint64_t bitmap_buffer_objects; /* distinct buffers Bitmaps/DumpData point at */
    uint64_t nodata_arrays;         /* PRIMITIVE_ARRAY_NODATA records */
    struct idmap instance_hash;     /* instance id -> hash of its field bytes */
    struct idmap instance_class;    /* instance id -> class id */
    /* Raw bytes of every String value array, and of every STRING record. */
    struct text { uint8_t *bytes; size_t len; } *texts, *records;
    size_t n_texts, n_records;
};

/* The class id LOAD_CLASS gives `name`, or 0. */
uint64_t facts_class_id(const char *path, const char *name);

/* Read a dump (any input hprof_input_open accepts).  @return HPROF_OK. */
int facts_load(const char *path, struct facts *f, struct hprof_error *err);
int facts_load_memory(const void *data, size_t len, struct facts *f, struct hprof_error *err);
void facts_free(struct facts *f);

#endif
