/*
 * testlib.h - helpers for the Check tests: building dumps byte by byte,
 * running libhprof over files and memory, and a canonical digest that says
 * whether two dumps hold the same records whatever their segmentation.
 */
#ifndef HPROF_TESTLIB_H
#define HPROF_TESTLIB_H

#include <stddef.h>
#include <stdint.h>

#include <check.h>

#include "hprof.h"
#include "hprof_visitor.h"

/* Run a suite, print its results; @return the exit status for main(). */
int tl_run_suite(Suite *s);

/* Open a reader on a file as the tools do (gzip, stdin).  @return HPROF_OK
 * with *fd and *r set; tl_close_reader() releases them. */
int tl_open_reader(const char *path, int *fd, struct hprof_reader **r, struct hprof_error *err);
void tl_close_reader(int fd, struct hprof_reader *r);

/* hprof_shrink() of a file into memory; fails the test on any error.
 * @return the output (free it), its length in *len. */
uint8_t *tl_shrink_file(const char *path, const struct hprof_shrink_options *o, size_t *len,
                        struct hprof_shrink_stats *stats);
/* The same, reading through a mapping when `mapped` (hprof_reader_map). */
uint8_t *tl_shrink_file_via(const char *path, const struct hprof_shrink_options *o, size_t *len,
                            struct hprof_shrink_stats *stats, int mapped);
/* The same through `shrink`, a function of hprof_shrink()'s shape. */
typedef int tl_shrink_fn(struct hprof_reader *r, struct hprof_sink *sink,
                         const struct hprof_shrink_options *o, struct hprof_shrink_stats *stats,
                         struct hprof_error *err);
uint8_t *tl_shrink_file_by(tl_shrink_fn *shrink, const char *path,
                           const struct hprof_shrink_options *o, size_t *len,
                           struct hprof_shrink_stats *stats, int mapped);

/* The same through a mapping into a file (an fd sink), read back: the
 * way the tool writes, kept array contents copied file to file. */
uint8_t *tl_shrink_file_into_file(const char *path, const struct hprof_shrink_options *o,
                                  size_t *len, struct hprof_shrink_stats *stats);

/* hprof_verify() over bytes in memory. */
int tl_verify_memory(const void *data, size_t len, struct hprof_verify_report *rep,
                     struct hprof_error *err);

/* A growable byte buffer for hand-made dumps. */
struct tbuf {
    uint8_t *data;
    size_t len, cap;
    unsigned ids;
    size_t segment_at;      /* offset of the open segment's length field */
};

void tb_init(struct tbuf *b, unsigned id_size);
void tb_free(struct tbuf *b);
void tb_bytes(struct tbuf *b, const void *p, size_t n);
void tb_u1(struct tbuf *b, uint8_t v);
void tb_u2(struct tbuf *b, uint16_t v);
void tb_u4(struct tbuf *b, uint32_t v);
void tb_u8(struct tbuf *b, uint64_t v);
void tb_id(struct tbuf *b, uint64_t id);
void tb_header(struct tbuf *b, const char *version);
void tb_record(struct tbuf *b, uint8_t tag, const void *body, uint32_t len);
void tb_string(struct tbuf *b, uint64_t id, const char *text);
void tb_load_class(struct tbuf *b, uint32_t serial, uint64_t class_id, uint64_t name_id);
/* HEAP_DUMP_SEGMENT whose length is patched by tb_segment_end(). */
void tb_segment_begin(struct tbuf *b, uint8_t tag);
void tb_segment_end(struct tbuf *b);
/* CLASS_DUMP with `n` instance fields of the given types (names 0x900+i). */
void tb_class(struct tbuf *b, uint64_t id, uint64_t super_id, const uint8_t *types, unsigned n);
/* tb_class() with the fields' name ids given (tb_class(): 0x900 + i). */
void tb_class_named(struct tbuf *b, uint64_t id, uint64_t super_id, const uint64_t *names,
                    const uint8_t *types, unsigned n);
void tb_instance(struct tbuf *b, uint64_t id, uint64_t class_id, const void *values, uint32_t n);
void tb_prim_array(struct tbuf *b, uint64_t id, uint8_t type, uint32_t count, const void *data);

/* A small valid dump with one class, two instances and arrays. */
void tb_small_dump(struct tbuf *b, unsigned id_size);

/* Paths: $HPROF_BUILD/<tool>, ../shared/fixtures/<name>, a temp file. */
const char *tl_build_dir(void);
char *tl_tool(const char *name);
int tl_have_shared_fixtures(void);

/* The dumps every suite runs on: the committed ones first, then the real
 * dumps of ../shared/fixtures (present on some machines only). */
#define TL_N_FIXTURES 6
#define TL_N_COMMITTED 3
extern const char *const tl_fixtures[TL_N_FIXTURES];
/* 1 when fixture i can be read; otherwise says so on stdout. */
int tl_fixture_available(int i);
char *tl_temp_path(const char *suffix);
/* `len` bytes written to a new temporary file; @return its path (free it). */
char *tl_temp_file(const void *data, size_t len, const char *suffix);

/* Run a shell command; @return its exit status (-1 if it did not exit). */
int tl_system(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Read a whole file (tests only).  @return malloc'd data or NULL. */
uint8_t *tl_read_file(const char *path, size_t *len);
/* Read a dump, gzip'd or not, whole; fails the test if it cannot.
 * @return malloc'd data. */
uint8_t *tl_read_dump(const char *path, size_t *len);
/* `len` bytes gzipped as one member (level 0 for speed when `stored`) into
 * a new buffer; fails the test if zlib does. */
uint8_t *tl_gzip_bytes(const void *data, size_t len, int stored, size_t *out_len);

/* Canonical digest of a dump: every top-level record other than heap
 * segments and HEAP_DUMP_END, and every heap sub-record other than
 * HEAP_DUMP_INFO paired with the heap it belongs to (the last
 * HEAP_DUMP_INFO of its segment).  Two dumps with the same digest hold the
 * same records in the same order, whatever their segment boundaries. */
struct tl_canon {
    uint8_t md5[16];
    uint64_t records, sub_records;
};
int tl_canon_file(const char *path, struct tl_canon *out, struct hprof_error *err);
/* The same, reading through a mapping when `how` has TL_MAPPED
 * (hprof_reader_map), with a read-ahead thread too when it has
 * TL_READ_AHEAD (hprof_reader_set_threads() with 2). */
#define TL_MAPPED 1
#define TL_READ_AHEAD 2
int tl_canon_file_via(const char *path, struct tl_canon *out, int how, struct hprof_error *err);
int tl_canon_memory(const void *data, size_t len, struct tl_canon *out, struct hprof_error *err);

/* Reader -> writer with no visitor between, into memory. */
int tl_roundtrip_memory(const void *data, size_t len, uint32_t segment_limit, uint8_t **out,
                        size_t *out_len, struct hprof_error *err);

/* A visitor that counts what it reads, kind by kind (an array once, at its
 * first chunk), for the tests that need only the counts.  It accepts every
 * record, so that the reader behaves as with a writer behind. */
struct tl_counter {
    struct hprof_visitor base;
    uint64_t strings, load_classes, segments, segment_ends;
    uint64_t roots, heap_infos, classes, instances, object_arrays, primitive_arrays;
    uint64_t nodata_arrays;     /* HPROF_PRIMITIVE_ARRAY_NODATA, among primitive_arrays */
    uint64_t sub_records;       /* roots, heap infos, classes, instances and arrays */
    uint64_t roots_of[256];     /* roots by sub-record tag */
    uint32_t last_segment_length;
};
/* Zero the counts and set the visitor's operations. */
void tl_counter_init(struct tl_counter *c);
/* tl_counter_init(), then a reader over `data` run into it.  @return the
 * reader's code. */
int tl_count_memory(const void *data, size_t len, struct tl_counter *c, struct hprof_error *err);

/* Load a manifest written by hprof-synth and look a key up (-1 if absent). */
long long tl_manifest(const char *path, const char *key);

/* This process's resident file-backed pages (RssFile), in KiB, or -1. */
long tl_rss_file_kib(void);

#endif
