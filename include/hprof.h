/*
 * hprof.h - libhprof, a streaming reader, visitor chain and writer for Java
 * and Android heap dumps (.hprof), and the shrink built on them.
 *
 * Introduction
 * ------------
 * A heap dump is a header followed by top-level records; the heap itself
 * lives in HEAP_DUMP / HEAP_DUMP_SEGMENT records made of sub-records that
 * carry no length of their own.  libhprof reads such a file as a stream, in
 * bounded memory whatever its size, and hands every record to a chain of
 * visitors (see hprof_visitor.h).  The writer is a visitor that serialises
 * what reaches it.
 *
 * Call order
 * ----------
 *   1. hprof_reader_open_fd() or hprof_reader_open_memory(): checks the header.
 *   2. Build a chain: your visitors, ending (optionally) with a writer made by
 *      hprof_writer_new() over a sink (hprof_sink_new_fd/_gzip/_zstd/_memory).
 *   3. hprof_reader_run(): one pass over the whole input.  Call it again for
 *      another pass: every run starts from the first record.
 *   4. hprof_sink_finish(), then the _free() functions (all accept NULL).
 *
 * Errors
 * ------
 * Functions return HPROF_OK (0) or a negative HPROF_ERR_* code and fill the
 * `struct hprof_error` they were given with a one-line message that names the
 * byte offset and the record kind.  HPROF_ERR_TRUNCATED tells an input cut
 * short from one that is otherwise not a heap dump (HPROF_ERR_FORMAT).  The
 * first error wins; later ones do not overwrite it.  The library never prints, exits or aborts.  After an error a
 * reader can be run again; a writer or sink that failed must be freed.
 *
 * Memory
 * ------
 * The reader keeps one buffer (HPROF_READ_BUFFER bytes, growing only for a
 * single non-array record, up to HPROF_MAX_RECORD); arrays are delivered in
 * chunks.  Through a mapping (hprof_reader_map()) it holds no buffer and
 * releases the mapped pages behind it.  The writer keeps one segment buffer of at most the segment limit.
 * Neither grows with the size of the file, but for one case: a 1.0.1
 * dump's single HEAP_DUMP record, written to a sink that cannot seek (a
 * pipe, gzip, memory), is held whole until it ends (see hprof_writer_new()).
 */
#ifndef HPROF_H
#define HPROF_H

#include <stddef.h>
#include <stdint.h>

#include "hprof_visitor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HPROF_VERSION_MAJOR 0
#define HPROF_VERSION_MINOR 1
#define HPROF_VERSION_PATCH 0
#define HPROF_VERSION_NUMBER \
    (HPROF_VERSION_MAJOR * 10000 + HPROF_VERSION_MINOR * 100 + HPROF_VERSION_PATCH)
#define HPROF_VERSION_STRING "0.1.0"

/* The version of the library actually linked; tools compare it with
 * HPROF_VERSION_NUMBER at startup. */
HPROF_API unsigned hprof_version_number(void);

/* ---- Status codes and errors ------------------------------------------ */

#define HPROF_OK 0
#define HPROF_SKIP 1            /* visitor: skip the rest of this record */
#define HPROF_ERR_FORMAT (-1)   /* the input is not a valid heap dump */
#define HPROF_ERR_IO (-2)       /* reading or writing failed */
#define HPROF_ERR_NOMEM (-3)    /* out of memory */
#define HPROF_ERR_USAGE (-4)    /* the API was called wrongly */
#define HPROF_ERR_NOROOM (-5)   /* the temporary copy of an input could not be made
                                   in $TMPDIR, or did not fit there */
#define HPROF_ERR_TRUNCATED (-6) /* the input is not a valid heap dump either, but one
                                   cut short: see below */

/* HPROF_ERR_TRUNCATED :
 * The input ends before the dump does (storage full, a process killed
 * while dumping, a transfer stopped): a record runs past its end, or its
 * last record is cut, or a run of HEAP_DUMP_SEGMENTs is left without
 * HEAP_DUMP_END (strict mode), or zeros fill it where a record should
 * start (a preallocated file), or a gzip or zstd stream of it is cut.  A
 * reader set to salvage (hprof_reader_set_salvage(), and
 * HPROF_INPUT_SALVAGE for a compressed input) reads such an input as far
 * as it is complete: the code tells a caller that offers that to its user
 * when to say so; the message, as every message, names the offset and the
 * record and no option of any program.  A cut inside the file header, and
 * the failures of a salvaging reader ("nothing to salvage"), are
 * HPROF_ERR_FORMAT: salvage keeps nothing of them. */

struct hprof_error {
    int code;               /* HPROF_OK until the first error */
    char message[512];
};

/* Record an error unless one is already recorded.  @return `code`. */
HPROF_API int hprof_error_set(struct hprof_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Names for messages: "HEAP_DUMP_SEGMENT", "INSTANCE_DUMP", "char", ...
 * Unknown values give "unknown".  The strings are static. */
HPROF_API const char *hprof_tag_name(uint8_t tag);
HPROF_API const char *hprof_subtag_name(uint8_t subtag);
HPROF_API const char *hprof_type_name(uint8_t type);

/* Size in bytes of a value of basic type `type` (ids take `id_size`);
 * 0 for a type that does not exist. */
HPROF_API unsigned hprof_type_size(uint8_t type, unsigned id_size);

/* ---- Reader ------------------------------------------------------------ */

#define HPROF_READ_BUFFER (128u << 10)
#define HPROF_MAX_RECORD (64u << 20)

struct hprof_reader;

/* hprof_reader_open_fd() :
 * Opens a reader on `fd`, which must support pread() (a regular file); the
 * reader does not close it.  Reads and checks the header.
 * @return HPROF_OK and *out, or an error (*out is then NULL). */
HPROF_API int hprof_reader_open_fd(struct hprof_reader **out, int fd, struct hprof_error *err);

/* Same over `len` bytes at `data`, which must outlive the reader.  Records
 * handed to visitors then point straight into `data`. */
HPROF_API int hprof_reader_open_memory(struct hprof_reader **out, const void *data, size_t len,
                                       struct hprof_error *err);

/* hprof_read_fn :
 * Gives the next bytes of a stream: up to `len` of them at `buf`, and
 * their count in *got.  @return HPROF_OK with *got > 0, or *got == 0 only
 * at the end of the stream; or an error code with `err` set (its message
 * is then the run's). */
typedef int (*hprof_read_fn)(void *ctx, void *buf, size_t len, size_t *got,
                             struct hprof_error *err);

/* hprof_reader_open_stream() :
 * Opens a reader on the bytes `read` gives (a pipe, a socket, a
 * decompressor, a dump being written), read once, front to back, with
 * nothing written anywhere: reads and checks the header.  Such a reader
 * allows exactly one hprof_reader_run() (a second fails with
 * HPROF_ERR_USAGE); array contents a visitor skips, and the dumps
 * hprof_reader_set_dump() does not select, are read and dropped.  Its size
 * is unknown until the stream ends: hprof_reader_size() gives the bytes
 * read so far, and the progress callback a total of 0 until the end; a
 * stream cut short fails the run with the offset and record it ends in,
 * as a file cut short does (HPROF_ERR_TRUNCATED).  What needs the input again or its end first
 * fails with HPROF_ERR_USAGE: hprof_reader_pread(), hprof_reader_map(),
 * salvage.  Memory: the read buffer (HPROF_READ_BUFFER, grown for a record
 * up to HPROF_MAX_RECORD).  hprof_input_open_stream() opens a path so.
 * @return HPROF_OK and *out, or an error (*out is then NULL). */
HPROF_API int hprof_reader_open_stream(struct hprof_reader **out, hprof_read_fn read, void *ctx,
                                       struct hprof_error *err);

/* hprof_reader_map() :
 * Reads the file of a reader made by hprof_reader_open_fd() through a
 * read-only memory mapping instead of pread(): nothing is copied, and array
 * contents a pass skips are never touched.  Pages behind the reading
 * position are released as a run goes, so resident memory stays bounded
 * (about 8 MiB of the file).
 * The price of any mapping: if the file shrinks while mapped (another
 * process truncates it) or the disk fails under it, the process gets
 * SIGBUS instead of an error code; the hprof-* tools (which map regular
 * files unless HPROF_MMAP=0) catch it and exit with an I/O error.  Call it
 * only where that is acceptable.
 * @return HPROF_OK, or an error (no mapping: the reader goes on with
 * pread(), so the error can be ignored). */
HPROF_API int hprof_reader_map(struct hprof_reader *r);

/* hprof_reader_set_threads() :
 * How many threads a run of `r` may use, the caller's included: 0 or 1
 * (the default) means the caller's only.  With 2 or more, each
 * hprof_reader_run() of a mapped reader (hprof_reader_map()) starts one
 * helper that touches the pages a little ahead of the reading position, so
 * that their page faults, and the reading of pages not yet cached, happen
 * on another core; the helper is joined before the run returns and keeps
 * at most 4 MiB more of the file resident.  It helps a pass that reads
 * every record, not one that skips most of the file.  The records a run
 * delivers are the same whatever the count; without a mapping it has no
 * effect. */
HPROF_API void hprof_reader_set_threads(struct hprof_reader *r, unsigned threads);

/* The header read at open; valid while the reader lives. */
HPROF_API const struct hprof_header *hprof_reader_header(const struct hprof_reader *r);

/* Size of the input in bytes. */
HPROF_API uint64_t hprof_reader_size(const struct hprof_reader *r);

/* hprof_reader_run() :
 * One pass over the input: header, every record, then end.  Each call starts
 * again from the first record.  Stops at the first error of the input or of
 * a visitor.  @return HPROF_OK or the error code (message in `err`). */
HPROF_API int hprof_reader_run(struct hprof_reader *r, struct hprof_visitor *v);

/* Strict mode (off by default): a run also fails when the file holds no
 * record after its header, or ends with a run of HEAP_DUMP_SEGMENTs that no
 * HEAP_DUMP_END closes - the marks of a dump cut short on a record boundary
 * (a device that ran out of space).  hprof_verify() and hprof_shrink() turn
 * it on. */
HPROF_API void hprof_reader_set_strict(struct hprof_reader *r, int strict);

/* hprof_reader_set_dump() :
 * A file may hold several heap dumps (the JDK's hprof agent appends one
 * per request), each its own space of object ids: a HEAP_DUMP record is a
 * dump, and so is a run of HEAP_DUMP_SEGMENTs closed by HEAP_DUMP_END.
 * With `dump` n >= 1, each run delivers the heap records of the n-th
 * dump alone (1-based, in file order) and every other record; a run
 * fails with HPROF_ERR_USAGE if the file has fewer.  0 (the default):
 * every heap dump.  hprof_verify(), hprof_info_analyze() and
 * hprof_shrink() follow it; with 0 on a file of several dumps the first
 * two check and analyze one dump at a time only (they fail at the second
 * dump, and hprof_reader_dumps() then says there is more than one), and
 * the shrink shrinks every dump on its own. */
HPROF_API void hprof_reader_set_dump(struct hprof_reader *r, unsigned dump);
/* Each dump on its own costs a run per dump: past this many, the shrink,
 * hprof-verify and hprof-info refuse (one dump chosen still works). */
#define HPROF_MAX_DUMPS 256
/* The heap dumps the last run began (so far, if it failed). */
HPROF_API unsigned hprof_reader_dumps(const struct hprof_reader *r);

/* hprof_reader_ends_before_heap() :
 * After a run of the whole input that read every record (a run of its
 * own, or hprof_shrink(), hprof_shrink_one_pass(), hprof_verify(),
 * hprof_info_analyze() of `r`): 1 when the input held no heap dump and
 * nothing but the records runtimes write before one (STRING, LOAD_CLASS,
 * STACK_FRAME, STACK_TRACE), so that it looks cut just before its heap
 * dump; else 0.  Without salvage such an input reads as complete (a cut
 * between records cannot be told from the end), so a caller may warn;
 * with it, it is cut (hprof_reader_set_salvage()).  A dump that holds
 * other records and no heap dump (the hprof agent's profiles, CONTROL_SETTINGS
 * first) gives 0. */
HPROF_API int hprof_reader_ends_before_heap(const struct hprof_reader *r);

/* hprof_reader_set_salvage() :
 * With `on`, a dump cut short (storage full, a process killed while
 * dumping, a stopped upload) is read as far as it is complete instead of
 * failing.  A record the end of the file cuts ends the run there: a heap
 * record (HEAP_DUMP_SEGMENT or HEAP_DUMP) is delivered up to its last
 * complete sub-record, as a segment of that length (heap_begin, the
 * sub-records, heap_end); any other record, or a record header, is not
 * delivered at all.  The run then calls the visitors' end as usual (a
 * writer closes the open run of segments with HEAP_DUMP_END), and a run of
 * segments left without HEAP_DUMP_END is no error even in strict mode.
 * So that what is delivered is a valid dump, a class dump whose superclass
 * chain does not end in what is kept, and an instance whose class is not
 * delivered, are dropped too (counted in the report).  Analyzers find
 * the class of a primitive array by the name of its type ("[B",
 * "byte[]"): when that class is named by LOAD_CLASS and never arrived, a
 * class dump of it is rebuilt at the start of the first heap record (its
 * id from LOAD_CLASS, java.lang.Object as superclass, nothing else, as
 * runtimes dump it), so that String contents stay; with no heap record
 * kept, the arrays of that type are dropped instead.  A cut dump lacks
 * the classes a runtime dumps late (ART interleaves them with objects).
 * To know which, the first run of a salvaging reader reads the record
 * headers (pread) and, only if the input is cut, makes one census pass
 * before delivering anything.  Every run, and every clone the shrink makes,
 * stops at the same sub-record.  A problem other than the end of the
 * file is still an error.  A cut inside the file header fails at open;
 * one before the first complete record leaves nothing to salvage, an
 * error in strict mode.  A file that ends exactly between two records
 * after a closed heap dump cannot be told from a complete one.  One that
 * ends between two records with no heap dump, holding only STRING,
 * LOAD_CLASS, STACK_FRAME and STACK_TRACE records (what runtimes write
 * before a heap dump), is cut there: the report says so, nothing lost but
 * the heap, and strict mode has nothing to salvage (at that offset); a
 * dump that holds other records and no heap dump (a profile of the hprof
 * agent, which starts with CONTROL_SETTINGS) is read as complete.  Off by
 * default. */
HPROF_API void hprof_reader_set_salvage(struct hprof_reader *r, int on);

/* What the last run of a salvaging reader found at the end of the input.
 * All zero when the input was complete (or salvage is off). */
struct hprof_salvage_report {
    int cut;                    /* 1: the input is cut short */
    uint64_t input_end;         /* size of the input: where it stops */
    uint64_t kept_end;          /* end of the last complete record or sub-record */
    uint64_t bytes_lost;        /* input_end - kept_end: bytes read and dropped */
    uint64_t record_offset;     /* the record the end cuts (0: none, a cut
                                   between records with a heap left open) */
    uint8_t record_tag;         /* its tag (0: its first byte is missing too) */
    uint8_t sub_tag;            /* the sub-record the end cuts, if any (0: none) */
    uint64_t record_missing;    /* bytes its length announces past the end */
    uint64_t records_lost;      /* 1: a record (or header) was dropped whole */
    uint64_t sub_records_kept;  /* complete sub-records kept of a cut heap record */
    uint64_t sub_records_lost;  /* 1: the sub-record the end cuts, dropped */
    uint64_t unclosed_run;      /* offset of a run of HEAP_DUMP_SEGMENTs that no
                                   HEAP_DUMP_END closes (0: none) */
    uint64_t classes_dropped;   /* complete class dumps not delivered: a
                                   superclass of theirs never arrived */
    uint64_t instances_dropped; /* complete instances not delivered: their
                                   class never arrived, or was dropped */
    uint64_t arrays_dropped;    /* complete primitive arrays not delivered:
                                   the class of their type ("[B", "byte[]")
                                   is named by LOAD_CLASS and never arrived,
                                   and could not be rebuilt */
    uint64_t array_classes_rebuilt; /* such classes rebuilt instead */
    uint64_t zero_tail;         /* zero bytes where records should have gone on
                                   (a zero-filled tail), taken as the end of the
                                   data: they start at input_end (cut or not) */
};

/* The report of the reader's last run; valid while the reader lives. */
HPROF_API const struct hprof_salvage_report *hprof_reader_salvage_report(const struct hprof_reader *r);

/* Called during a run with the input offset reached, at most every few MB. */
HPROF_API void hprof_reader_set_progress(struct hprof_reader *r,
                                         void (*fn)(void *ctx, uint64_t done, uint64_t total),
                                         void *ctx);

/* Copy `len` bytes at input offset `offset` into `buf` (random access, for
 * example to compare two arrays byte for byte).  @return HPROF_OK or error. */
HPROF_API int hprof_reader_pread(struct hprof_reader *r, uint64_t offset, void *buf, size_t len);

HPROF_API void hprof_reader_free(struct hprof_reader *r);

/* ---- Sinks: where written bytes go -------------------------------------- */

struct hprof_sink;

/* Buffered writes to `fd` (not closed by the sink).  Where `fd` can seek
 * and is not in append mode, a writer may also pwrite() into what it wrote
 * (a segment's length, filled in last), so no other writer may share it.
 * Where it is a regular file open for reading too, the one-pass shrink may
 * keep bytes in it far past the output (4 TiB on, a sparse area), and the
 * sink cuts the file back to where its writes end when it is finished or
 * freed; so do the gzip and zstd sinks below. */
HPROF_API struct hprof_sink *hprof_sink_new_fd(int fd, struct hprof_error *err);

/* gzip to `fd` as the JDK's `jcmd GC.heap_dump -gz` writes it: independent
 * members of HPROF_GZIP_BLOCK input bytes each, the first carrying the
 * comment "HPROF BLOCKSIZE=1048576", so readers can seek.  `level` 1-9.
 * Members are compressed by `threads` worker threads (0: one per core, 1:
 * in the caller's thread); the output is the same for every count.  Every
 * level is deflated by libdeflate when the library is built with it (the
 * default), else by zlib: different bytes, each the same on every machine,
 * all plain gzip. */
#define HPROF_GZIP_BLOCK (1u << 20)
HPROF_API struct hprof_sink *hprof_sink_new_gzip(int fd, int level, unsigned threads,
                                                 struct hprof_error *err);

/* zstd to `fd`: one frame with its content checksum, as zstd(1) writes, for
 * uploads (faster than gzip -1 and smaller; keep gzip for analyzers that
 * read .hprof.gz).  `level` 1 to HPROF_ZSTD_LEVEL_MAX, 3 being zstd(1)'s
 * default.  libzstd compresses on `threads` worker threads of its own (0:
 * one per core; 1: one worker beside the caller's thread); the output is
 * the same for every count.  Memory: a few jobs per worker, a job being
 * 8 MiB at level 3 and 32 MiB at level 19. */
#define HPROF_ZSTD_LEVEL_DEFAULT 3
#define HPROF_ZSTD_LEVEL_MAX 19
HPROF_API struct hprof_sink *hprof_sink_new_zstd(int fd, int level, unsigned threads,
                                                 struct hprof_error *err);

/* Counts what it is given and keeps none of it (estimates). */
HPROF_API struct hprof_sink *hprof_sink_new_null(struct hprof_error *err);

/* Collects everything in memory (tests, fuzzing). */
HPROF_API struct hprof_sink *hprof_sink_new_memory(struct hprof_error *err);
/* The bytes collected so far; valid until the next write or free. */
HPROF_API const uint8_t *hprof_sink_memory_data(const struct hprof_sink *s, size_t *len);

/* @return HPROF_OK or HPROF_ERR_IO / HPROF_ERR_NOMEM. */
HPROF_API int hprof_sink_write(struct hprof_sink *s, const void *buf, size_t len);
/* Flush everything (and end the gzip stream or zstd frame).  No write may
 * follow. */
HPROF_API int hprof_sink_finish(struct hprof_sink *s);
/* Uncompressed bytes accepted so far. */
HPROF_API uint64_t hprof_sink_bytes(const struct hprof_sink *s);
/* Bytes written to the sink's file descriptor so far: after gzip or zstd,
 * and to a pipe as to a file (0 for a memory sink). */
HPROF_API uint64_t hprof_sink_file_bytes(const struct hprof_sink *s);

/* hprof_sink_set_writeback() :
 * For a file sink (fd, gzip or zstd) whose caller will fsync() the file when it
 * is done: every `step` bytes written to the file, ask the kernel to start
 * writing it to disk (Linux sync_file_range(); elsewhere, and on pipes and
 * other sinks, nothing happens).  The disk then works while the rest of the
 * dump is read, and the final fsync() waits only for the tail.  0 (the
 * default) leaves writeback to the kernel. */
HPROF_API void hprof_sink_set_writeback(struct hprof_sink *s, uint64_t step);
/* hprof_sink_set_preallocate() :
 * For a file sink (fd, gzip or zstd) that writes at the end of a regular file:
 * reserve the file's blocks `step` bytes at a time ahead of the writes
 * (Linux fallocate() with FALLOC_FL_KEEP_SIZE: the file's size and
 * contents are what was written, at every moment), which makes the writes
 * cheaper, and give back what is reserved past the end when
 * hprof_sink_finish() is called, by cutting the file at its size then:
 * the sink must be the file's only writer until it finishes.  A sink
 * never finished leaves its reserve until the file is removed.  Where the
 * file system cannot reserve, or the sink does not write at the end of a
 * regular file, nothing happens.  0 (the default): no reserve. */
HPROF_API void hprof_sink_set_preallocate(struct hprof_sink *s, uint64_t step);
HPROF_API void hprof_sink_free(struct hprof_sink *s);

/* ---- Writer: the last visitor ------------------------------------------ */

struct hprof_writer;

/* Default and smallest limits on the body of an output HEAP_DUMP_SEGMENT. */
#define HPROF_SEGMENT_LIMIT (32u << 20)
#define HPROF_SEGMENT_LIMIT_MIN 64u

/* hprof_writer_new() :
 * A writer that serialises every record it receives to `sink` (which it does
 * not own).  It keeps the header as given; recomputes every record length;
 * keeps the kind of each heap record: a HEAP_DUMP (JAVA PROFILE 1.0.1's one
 * heap record) stays one HEAP_DUMP, whatever its size, never split and with
 * no HEAP_DUMP_END (records of 1.0.2), written even if nothing in it is
 * left; it streams to a sink that can seek and is held in memory whole for
 * one that cannot.  The sub-records of segments go into HEAP_DUMP_SEGMENTs,
 * starting a new one where the input's segment ends or where the limit
 * would be passed (a single sub-record larger than the limit gets a
 * segment of its own), never writing
 * an empty one; closes each run of segments with one HEAP_DUMP_END (a
 * top-level record between segments does not end the run: the run is one
 * heap dump until its END); and in a
 * new segment repeats the current HEAP_DUMP_INFO before the first object, as
 * ART does.  HEAP_DUMP_INFO sub-records not followed by any object in their
 * segment are not written.  It holds each segment in memory, up to the
 * limit, until it knows its length; on a file sink that can seek it writes
 * the segment as it goes instead and fills in the length at its end.
 * @return the writer, or NULL (error in `err`). */
HPROF_API struct hprof_writer *hprof_writer_new(struct hprof_sink *sink, struct hprof_error *err);

/* Limit on output segment bodies; `bytes` >= HPROF_SEGMENT_LIMIT_MIN. */
HPROF_API int hprof_writer_set_segment_limit(struct hprof_writer *w, uint32_t bytes);

/* The writer as a visitor, to end a chain.  Lives as long as `w`. */
HPROF_API struct hprof_visitor *hprof_writer_visitor(struct hprof_writer *w);

HPROF_API void hprof_writer_free(struct hprof_writer *w);

/* ---- Opening inputs the way the tools do -------------------------------- */

/* hprof_input_open() :
 * Opens `path` ("-" = standard input) for reading as a heap dump.  A
 * non-seekable input, or one compressed with gzip or zstd (detected by its
 * magic), is copied (decompressed) to an unlinked temporary file in $TMPDIR,
 * since the passes need to re-read it.  The copy follows the records as it
 * is written and stops at the first undefined tag (a bomb of zeros costs a
 * buffer, not what it inflates to; zeros where a record should start fail
 * with HPROF_ERR_TRUNCATED, as the reader of a file fails on them: a
 * zero-filled tail); a zstd frame may use a window of up to
 * 128 MiB (zstd(1)'s limit).  Sets *fd (close it yourself) and, when
 * `spooled` is not NULL, *spooled to 1 if a copy was made.
 * @return HPROF_OK, HPROF_ERR_IO, HPROF_ERR_FORMAT (bad gzip or zstd),
 * HPROF_ERR_TRUNCATED (a gzip or zstd stream cut short) or
 * HPROF_ERR_NOROOM: the copy could not be created, written or fitted in
 * $TMPDIR (hprof_input_open_stream() needs no copy). */
HPROF_API int hprof_input_open(const char *path, int *fd, int *spooled, struct hprof_error *err);

/* hprof_input_open_flags() :
 * The same, with `flags`: HPROF_INPUT_SALVAGE keeps what a gzip or zstd
 * stream cut short decompressed to (a dump cut short, for a reader with
 * hprof_reader_set_salvage()) instead of failing, and says where the
 * compressed input stopped in *info; and it follows zeros where a record
 * should start to the end of the input, which the copy then holds as a
 * file would (a hole: they take no room), so that a salvaging reader takes
 * a zero-filled tail for the end of the data as it does in a file. */
#define HPROF_INPUT_SALVAGE 1u
struct hprof_input_info {
    int spooled;                /* a copy was made (pipe, gzip or zstd) */
    int gzip_cut;               /* the gzip stream was cut short (salvage) */
    uint64_t gzip_cut_offset;   /* where, in the compressed input */
    int zstd_cut;               /* the same for a zstd stream */
    uint64_t zstd_cut_offset;
};
HPROF_API int hprof_input_open_flags(const char *path, unsigned flags, int *fd,
                                     struct hprof_input_info *info, struct hprof_error *err);

/* hprof_input_open_threads() :
 * hprof_input_open_flags() with the threads that may inflate a gzip file:
 * 0 one per core, but the calling thread alone for a file under 1 MiB (what
 * the two functions above do), 1 the calling thread only.  A file of many
 * members (jcmd -gz and hprof_sink_new_gzip() write one per MiB) is
 * inflated a member per thread; a member over 8 MiB (gzip(1) writes a
 * single one) and a pipe are inflated as they come, on the calling thread.
 * The copy, and any error, are the same for every count.  Memory: a few
 * members per thread, at most 17 MiB plus 12 MiB per thread. */
HPROF_API int hprof_input_open_threads(const char *path, unsigned flags, unsigned threads,
                                       int *fd, struct hprof_input_info *info,
                                       struct hprof_error *err);

/* hprof_input_open_stream() :
 * Opens `path` ("-" = standard input; a file, pipe, FIFO or socket; plain,
 * gzip or zstd, told by their magic) as a stream reader
 * (hprof_reader_open_stream(): one run, front to back) that decompresses
 * as it reads and writes nothing to $TMPDIR.  The reader sees the bytes
 * hprof_input_open() would copy, checked the same way (the magic of the
 * decompressed bytes, a bomb stopped at its first undefined tag, bytes
 * after the last gzip member other than zero padding, zstd's window
 * limit), and fails its
 * run with the same message where the copy would fail, gzip and zstd
 * problems at their offset in the compressed input.  A gzip file of many
 * members is inflated a member per thread, `threads` as in
 * hprof_input_open_threads(); a pipe as it comes.  Decompression runs on a
 * thread of its own, at most 4 MiB ahead of the reader; hprof_reader_free()
 * stops it and closes the file.  *info: nothing is spooled (all 0).
 * @return HPROF_OK and *out, or an error (*out is then NULL). */
HPROF_API int hprof_input_open_stream(const char *path, unsigned threads,
                                      struct hprof_reader **out, struct hprof_input_info *info,
                                      struct hprof_error *err);

/* ---- Verification ------------------------------------------------------- */

/* Kinds of referrer, for counting references to objects not in the file. */
enum hprof_ref_kind {
    HPROF_REF_ROOT,
    HPROF_REF_STATIC_FIELD,
    HPROF_REF_INSTANCE_FIELD,
    HPROF_REF_ARRAY_ELEMENT,
    HPROF_REF_CLASS,        /* a class dump's superclass, loader, ... */
    HPROF_REF_KINDS
};
HPROF_API const char *hprof_ref_kind_name(enum hprof_ref_kind kind);

struct hprof_verify_report {
    uint64_t records;           /* top-level records */
    uint64_t unknown_records;   /* of which with an unknown tag */
    uint64_t segments;          /* HEAP_DUMP and HEAP_DUMP_SEGMENT */
    uint64_t strings;
    uint64_t load_classes;
    uint64_t roots;
    uint64_t heap_infos;
    uint64_t class_dumps;
    uint64_t instances;
    uint64_t object_arrays;
    uint64_t primitive_arrays;  /* including PRIMITIVE_ARRAY_NODATA */
    uint64_t primitive_bytes;   /* bytes of primitive array contents */
    uint64_t dangling;          /* references to ids not dumped, all kinds */
    uint64_t dangling_by_kind[HPROF_REF_KINDS];
};

/* hprof_verify() :
 * Parses the input strictly in two passes: structure, then every instance's
 * field bytes against its class layout (own fields and all superclasses'),
 * and every reference against the set of dumped objects.
 * @return HPROF_OK (report filled), or the first problem found. */
HPROF_API int hprof_verify(struct hprof_reader *r, struct hprof_verify_report *report,
                           struct hprof_error *err);

/* ---- ProGuard/R8 mappings --------------------------------------------------- */

/* A mapping.txt as ProGuard and R8 write it, read once; only read after,
 * so threads may share it.  Memory: the file's text and about 100 bytes
 * per class and member line. */
struct hprof_mapping;

/* hprof_mapping_load() :
 * @return HPROF_OK and *out, or HPROF_ERR_IO (cannot read `path`),
 * HPROF_ERR_FORMAT ("FILE:LINE: malformed mapping line ..." in err) or
 * HPROF_ERR_NOMEM. */
HPROF_API int hprof_mapping_load(const char *path, struct hprof_mapping **out,
                                 struct hprof_error *err);
HPROF_API void hprof_mapping_free(struct hprof_mapping *m);

/* ---- Shrinking ---------------------------------------------------------- */

enum hprof_arrays_mode {
    HPROF_ARRAYS_EMPTY,     /* keep each dropped array as a zero-length one */
    HPROF_ARRAYS_ZERO,      /* keep its length, zero its contents */
    HPROF_ARRAYS_REMOVE     /* delete the record */
};

enum hprof_redact {
    HPROF_REDACT_NONE,
    HPROF_REDACT_ALL,       /* String texts and bitmap pixels */
    HPROF_REDACT_STRINGS    /* String texts only */
};

/* Most entries in redact_keep (the built-in ones come on top). */
#define HPROF_REDACT_MAX_RULES 28

struct hprof_shrink_options {
    enum hprof_arrays_mode arrays;
    int keep_system_heaps;  /* 0: drop zygote and image heap objects */
    enum hprof_redact redact;
    /* zero the primitive fields of every class, but booleans and the
     * structural ones analyzers read (hprof-shrink(1), REDACTION) */
    int redact_fields;
    /* "CLASS.FIELD": the Strings that field refers to keep their text.  The
     * field may be declared in CLASS and the instance of a subclass.
     * LeakCanary's KeyedWeakReference key and name (not its description),
     * enum constant names and the runtime's thread names are always kept. */
    const char *const *redact_keep;
    size_t n_redact_keep;
    uint32_t segment_limit; /* 0: HPROF_SEGMENT_LIMIT */
    /* Threads the shrink may use: 0 one per core, except that an input
     * under 32 MiB is shrunk on the caller's thread alone; 1 the caller's
     * only.  More than one serve the write pass's workers and, in the
     * other passes, helpers (reading ahead of a mapped input, recording
     * references).  The output is the same for every count. */
    unsigned threads;
    /* Progress: pass number (1-based), passes in all, bytes done, total. */
    void (*progress)(void *ctx, int pass, int passes, uint64_t done, uint64_t total);
    void *progress_ctx;
    /* Keep the STRING records nothing in the dump refers to (HotSpot writes
     * its whole symbol table, string literals included: about half of a
     * shrunk HotSpot dump).  0: they are dropped. */
    int keep_names;
    /* Write a standard JAVA PROFILE 1.0.2 dump from an Android 1.0.3 one,
     * as AOSP's hprof-conv does (Android root kinds as ROOT_UNKNOWN, heaps
     * merged, NODATA arrays as plain ones), for MAT and VisualVM.  A
     * HotSpot dump is not changed by it. */
    int jvm;
    /* Deobfuscate with a ProGuard/R8 mapping (hprof_mapping_load()), or
     * NULL: class, field and method names are written as the mapping
     * restores them, and the shrink finds String, Bitmap and the keep
     * rules' classes by their original names. */
    const struct hprof_mapping *mapping;
    /* Keep byte-identical bitmap buffers as they are instead of merging
     * them (with --arrays=zero --keep-system-heaps --jvm: a plain
     * converter that changes no object and no reference). */
    int keep_duplicates;
    /* A file of several heap dumps (hprof_reader_set_dump()): 0 shrinks
     * each one on its own (each its own space of object ids) into a file
     * of as many; n >= 1 keeps the n-th (1-based) alone, with every
     * record outside the heap dumps.  What the reader selected counts
     * when this is 0. */
    unsigned dump;
    /* hprof_shrink_one_pass(): the most bytes of records that wait for
     * what decides them (an array for its String or Bitmap, an instance
     * for its class, a Bitmap for its buffer); 0: HPROF_WINDOW_DEFAULT.
     * What passes it is decided by the window's rule (hprof-shrink(1),
     * ONE PASS) and counted in the stats. */
    uint64_t window;
    /* hprof_shrink_one_pass() into a file sink open for reading too: the
     * most bytes of large arrays (64 KiB and up) that wait for a claim
     * past the window, set aside far past the output in the same file
     * (a sparse area, cut off when the sink is finished or freed) instead
     * of decided by the rule.  0: 8 windows; HPROF_SPILL_OFF: none. */
    uint64_t spill;
};

#define HPROF_WINDOW_DEFAULT ((uint64_t)64 << 20)
#define HPROF_WINDOW_MIN ((uint64_t)1 << 20)
#define HPROF_SPILL_OFF UINT64_MAX

struct hprof_count {
    uint64_t count;
    uint64_t bytes;
};

/* HPROF_SHRINK_PASSES(X) :
 * The passes a shrink may make over its input, X(NAME, "name") each, in the
 * order they run.  Each runs at most once per
 * heap dump; which run depends on the dump and the options. */
#define HPROF_SHRINK_PASSES(X) \
    X(RESTORE, "restore")   /* --mapping: what each obfuscated name restores to */ \
    X(COLLECT, "collect")   /* names, classes, system-heap objects, references */ \
    X(RESOLVE, "resolve")   /* kept objects against complete class layouts */ \
    X(GRAPH, "graph")       /* which system objects link roots to the app's */ \
    X(EXPAND, "expand")     /* the elements of Bitmap$DumpData buffers */ \
    X(EXEMPT, "exempt")     /* the value arrays of the Strings keep rules name */ \
    X(DIGEST, "digest")     /* MD5s of bitmap buffers that may have a twin */ \
    X(WRITE, "write")       /* the plan applied */ \
    X(STREAM, "one pass")   /* hprof_shrink_one_pass(): read once, written as decided */

#define HPROF_SHRINK_PASS_ENUM(name, text) HPROF_PASS_##name,
enum hprof_shrink_pass { HPROF_SHRINK_PASSES(HPROF_SHRINK_PASS_ENUM) HPROF_SHRINK_PASS_KINDS };
#undef HPROF_SHRINK_PASS_ENUM

/* The most passes one shrink makes: one of each kind. */
#define HPROF_SHRINK_MAX_PASSES HPROF_SHRINK_PASS_KINDS

/* "collect", "write", ...; "?" for a value out of range. */
HPROF_API const char *hprof_shrink_pass_name(enum hprof_shrink_pass p);

/* HPROF_SHRINK_COUNTERS(X) :
 * Every counter of struct hprof_shrink_stats, one
 *     X(KIND, field, "json_key", TEXT, "label", "unit")
 * per counter, in the order of hprof-shrink --json's keys.  The table
 * generates the struct's fields, the sum of the write pass's workers (and
 * of the heap dumps of one file), and both of hprof-shrink's reports:
 * a counter added here appears in all four without another edit.
 *   KIND   COUNT (a struct hprof_count: records and their bytes) or U64.
 *   TEXT   where --stats prints it: ROWS (always, in the table of counts),
 *          NAMES (unless --keep-names), JVM (with --jvm), MAPPING (with
 *          --mapping), REDACT (with --redact), BITMAPS (always), WINDOW
 *          (after a one-pass shrink), in that order; HIDDEN: summed, in neither report.
 *   label  starts a line of --stats; NULL: the counter follows the one
 *          before on its line, after a comma.
 *   unit   printed after a U64 counter's value. */
#define HPROF_SHRINK_COUNTERS(X) \
    X(COUNT, strings, "strings", ROWS, "strings (records)", "") \
        /* STRING records (passed through) */ \
    X(COUNT, class_dumps, "class_dumps", HIDDEN, NULL, "") \
    X(COUNT, instances_in, "instances_in", ROWS, "instances in", "") \
    X(COUNT, instances_out, "instances_out", ROWS, "instances out", "") \
    X(COUNT, object_arrays_in, "object_arrays_in", ROWS, "object arrays in", "") \
    X(COUNT, object_arrays_out, "object_arrays_out", ROWS, "object arrays out", "") \
    X(COUNT, primitive_arrays_in, "primitive_arrays_in", ROWS, "primitive arrays in", "") \
        /* bytes: contents */ \
    X(COUNT, string_values_kept, "string_values_kept", ROWS, "  String values kept", "") \
        /* java.lang.String contents */ \
    X(COUNT, bitmap_buffers_kept, "bitmap_buffers_kept", ROWS, "  bitmap buffers kept", "") \
        /* distinct pixel buffers */ \
    X(COUNT, other_kept, "natives_kept", ROWS, "  DumpData natives kept", "") \
        /* Bitmap$DumpData natives */ \
    X(COUNT, bitmap_duplicates, "bitmap_duplicates", ROWS, "  bitmap copies merged", "") \
        /* copies merged away */ \
    X(COUNT, arrays_emptied, "arrays_emptied", ROWS, "  emptied", "") \
        /* bytes: contents removed */ \
    X(COUNT, arrays_zeroed, "arrays_zeroed", ROWS, "  zeroed", "") \
        /* bytes: contents zeroed */ \
    X(COUNT, arrays_removed, "arrays_removed", ROWS, "  removed", "") \
        /* bytes: contents removed */ \
    X(COUNT, system_dropped, "system_dropped", ROWS, "system-heap objects dropped", "") \
        /* zygote/image objects gone */ \
    X(COUNT, system_standins, "system_standins", ROWS, "system-heap stand-ins", "") \
        /* kept as stand-ins (see system_standin_refs) */ \
    X(U64, system_standin_refs, "system_standin_refs", ROWS, "stand-ins' references", "") \
        /* references stand-ins keep */ \
    X(COUNT, strings_redacted, "strings_redacted", REDACT, "strings redacted", "") \
        /* String values filled */ \
    X(COUNT, buffers_redacted, "buffers_redacted", REDACT, "bitmap buffers redacted", "") \
        /* bitmap buffers filled */ \
    X(U64, strings_kept_by_rule, "strings_kept_by_rule", REDACT, "strings kept by rule", "") \
        /* Strings a keep rule names (a thread's, kept if the runtime's) */ \
    X(U64, fields_zeroed, "fields_zeroed", REDACT, "fields zeroed", "") \
        /* --redact-fields, hash caches */ \
    X(COUNT, names_dropped, "names_dropped", NAMES, "unused names dropped", "") \
        /* STRING records nothing refers to (bytes: their text) */ \
    X(U64, jvm_roots_converted, "jvm_roots_converted", JVM, "converted for the JVM", " roots") \
        /* Android roots as ROOT_UNKNOWN */ \
    X(U64, jvm_heap_infos_dropped, "jvm_heap_infos_dropped", JVM, NULL, " heap infos") \
        /* HEAP_DUMP_INFO records */ \
    X(U64, jvm_nodata_arrays, "jvm_nodata_arrays", JVM, NULL, " NODATA arrays") \
        /* NODATA arrays made plain */ \
    X(U64, mapping_classes, "mapping_classes", MAPPING, "names restored (mapping)", " classes") \
    X(U64, mapping_fields, "mapping_fields", MAPPING, NULL, " fields") \
    X(U64, mapping_methods, "mapping_methods", MAPPING, NULL, " methods") \
    X(U64, mapping_strings_added, "mapping_strings_added", MAPPING, NULL, " names added") \
        /* STRING records added for a name that maps two ways */ \
    X(U64, roots_dropped, "roots_dropped", ROWS, "roots dropped", "") \
    X(U64, bitmap_candidates, "bitmap_candidates", BITMAPS, "bitmap buffers", " found") \
        /* buffers Bitmaps refer to */ \
    X(U64, bitmap_digested, "bitmap_digested", BITMAPS, NULL, " digested") \
        /* of which with a digest (their own, or a byte-identical earlier \
         * one's): MD5 in the multi-pass shrink; in the one pass SHA-256, \
         * or a 64-bit fingerprint where the output can be read back */ \
    X(U64, bitmap_groups, "bitmap_groups", BITMAPS, NULL, " groups of identical buffers") \
        /* contents held by >1 buffer */ \
    X(U64, bitmap_fingerprinted, "bitmap_fingerprinted", BITMAPS, "bitmap buffers", \
      " fingerprinted") \
        /* Bitmap buffers sharing their type and length with another are told \
         * apart by a fingerprint of three 4 KiB blocks (first, middle, last) \
         * when larger than those, and hashed (MD5) only if they still may be \
         * twins; small ones are hashed at once. */ \
    X(U64, bitmap_bytes_fingerprinted, "bitmap_bytes_fingerprinted", BITMAPS, NULL, \
      " bytes read for them") \
    X(U64, bitmap_bytes_hashed, "bitmap_bytes_hashed", BITMAPS, NULL, " bytes hashed") \
        /* bytes run through that digest */ \
    X(U64, bitmap_bytes_compared, "bitmap_bytes_compared", BITMAPS, NULL, " bytes compared") \
        /* A buffer that may be a twin is compared byte for byte with the \
         * first of its type, length and fingerprint as that one is hashed, \
         * and is hashed itself only if it differs: the bytes read so. */ \
    X(COUNT, window_waited, "window_waited", WINDOW, "window: records that waited", "") \
        /* one pass: records held until what decides them came */ \
    X(U64, window_peak_bytes, "window_peak_bytes", WINDOW, NULL, " bytes at most") \
    X(COUNT, window_spilled, "window_spilled", WINDOW, "window: set aside in the file", "") \
        /* large arrays that waited for a claim in the output file (spill) */ \
    X(COUNT, window_by_rule, "window_by_rule", WINDOW, "window: decided by the rule", "") \
        /* records that left the window undecided: an array as no String's \
         * or Bitmap's, a Bitmap with its buffer unmerged, an instance \
         * with its class unknown */ \
    X(U64, window_late, "window_late", WINDOW, "window: referrers too late", "") \
        /* Strings, Bitmaps and DumpData whose array had been written \
         * before they came (or never came): where the one-pass output \
         * differs from the multi-pass one */ \
    X(COUNT, window_names, "window_names", WINDOW, "window: names held", "") \
        /* STRING records held until the end, to keep those in use */ \
    X(COUNT, window_names_filled, "window_names_filled", WINDOW, "window: names filled", "") \
        /* under --redact, names an Android dump's heap dump began without \
         * using, written with a filler for their text, that nothing used \
         * after either (the multi-pass shrink drops them) */

/* The field types of the table's kinds. */
#define HPROF_SHRINK_COUNTER_TYPE_COUNT struct hprof_count
#define HPROF_SHRINK_COUNTER_TYPE_U64 uint64_t
#define HPROF_SHRINK_COUNTER_FIELD(kind, field, ...) HPROF_SHRINK_COUNTER_TYPE_##kind field;

struct hprof_shrink_stats {
    uint64_t bytes_in;
    uint64_t bytes_out;             /* uncompressed */
    unsigned dumps;                 /* heap dumps shrunk (1 for most files) */
    int passes;
    int resolved_in_pass_1;     /* names came before every object, zygote and
                                   image heaps before the app's: a pass saved */
    /* the seconds each pass took, in the order they ran, and which they were */
    double pass_seconds[HPROF_SHRINK_MAX_PASSES];
    enum hprof_shrink_pass pass_kinds[HPROF_SHRINK_MAX_PASSES];
    HPROF_SHRINK_COUNTERS(HPROF_SHRINK_COUNTER_FIELD)
};

/* hprof_shrink() :
 * Reads `r` in several passes and writes the shrunk dump to `sink` (see
 * hprof-shrink(1) for what is kept, dropped and merged).  Deterministic:
 * the same input and options give the same bytes.  `options` may be NULL
 * (the defaults), and so may `stats`.
 * @return HPROF_OK, or an error (the sink then holds a partial dump). */
HPROF_API int hprof_shrink(struct hprof_reader *r, struct hprof_sink *sink,
                           const struct hprof_shrink_options *options,
                           struct hprof_shrink_stats *stats, struct hprof_error *err);

/* hprof_shrink_one_pass() :
 * The same shrink in one run of `r`, front to back, writing as it goes:
 * for a reader of a stream (hprof_reader_open_stream(),
 * hprof_input_open_stream()), which cannot be read twice.  A record whose
 * fate depends on one not read yet waits in a window of
 * `options->window` bytes and is written once decided; what passes the
 * window is decided by a stated rule and counted (window_* in the stats).
 * Where nothing was (window_by_rule and window_late 0), every analyzer
 * sees what it sees in hprof_shrink()'s output, though the records may
 * come in another order (names after the heap dumps, records written
 * later than read).  Duplicate bitmap buffers merge when their bytes are
 * equal, compared with the copy kept read back from the output where the
 * sink can (a file sink on a descriptor open for reading and writing),
 * else when their SHA-256 digests agree.  Memory: the
 * window, the names (STRING records are held until the end, to keep those
 * in use), and tables per object tracked.  Not with a mapping
 * (HPROF_ERR_USAGE): restoring names takes a pass of its own.
 * @return HPROF_OK, or an error (the sink then holds a partial dump). */
HPROF_API int hprof_shrink_one_pass(struct hprof_reader *r, struct hprof_sink *sink,
                                    const struct hprof_shrink_options *options,
                                    struct hprof_shrink_stats *stats, struct hprof_error *err);

/* ---- Shrinking a dump as it is written ------------------------------------ */

/* hprof_shrink_push_new() :
 * For a dump writer that wants to shrink as it writes (e.g. from its
 * write() hook), with nothing of the dump on disk: it pushes the dump's
 * bytes, in pieces of any size, with hprof_shrink_push_write(), then calls
 * hprof_shrink_push_finish(); meanwhile a thread of the library reads them
 * as a stream (hprof_reader_open_stream()) and shrinks them in one pass to
 * `sink` (which stays the caller's: finish it after
 * hprof_shrink_push_finish()).  Between the two, a ring of 4 MiB: a write
 * waits while it is full.  `opt` (NULL: the defaults) is copied; what it
 * points to (redact_keep) must outlive the push.  Messages of failures go
 * to `err`, which must outlive the push.  The calls of one push are made
 * from one thread at a time.
 * @return HPROF_OK and *out, or an error. */
struct hprof_shrink_push;
HPROF_API int hprof_shrink_push_new(struct hprof_shrink_push **out, struct hprof_sink *sink,
                                    const struct hprof_shrink_options *opt,
                                    struct hprof_error *err);
/* The next `len` bytes of the dump.  @return HPROF_OK, or once the shrink
 * has failed (a malformed dump, the sink failing), its error: every later
 * write and the finish return it too. */
HPROF_API int hprof_shrink_push_write(struct hprof_shrink_push *p, const void *buf, size_t len);
/* The end of the dump: waits for the shrink to write the rest.  `stats`
 * may be NULL.  @return the shrink's result (a dump cut short fails). */
HPROF_API int hprof_shrink_push_finish(struct hprof_shrink_push *p,
                                       struct hprof_shrink_stats *stats);
/* Frees `p`; without a finish, the shrink sees the dump end with an error
 * and stops: no thread is left behind. */
HPROF_API void hprof_shrink_push_free(struct hprof_shrink_push *p);

/* ---- What a dump holds (hprof-info) ------------------------------------------ */

struct hprof_info_class {
    uint64_t id;
    char *name;                 /* "java.lang.String", "byte[]", ... (owned) */
    struct hprof_count objects; /* instances or arrays; bytes as dumped */
};

struct hprof_info_bitmap {
    uint64_t id;
    uint32_t width, height;
    int recycled;
    uint64_t buffer_id;         /* mBuffer, or a DumpData buffer; 0: none */
    uint64_t buffer_bytes;
    uint64_t buffer_offset;     /* input offset of the buffer's bytes */
    uint8_t buffer_type;        /* element type (byte) */
    uint8_t md5[16];            /* of the buffer, when it has one */
    size_t same_as;             /* index in hprof_info.bitmaps of the first bitmap
                                 * whose buffer holds the same bytes (MD5 equal,
                                 * then compared byte for byte); its own index
                                 * for the first, and without a buffer */
};

enum { HPROF_INFO_HEAPS = 4 };  /* default, app, image, zygote */

struct hprof_info {
    struct hprof_header header;
    uint64_t file_bytes;
    struct hprof_count records[256];      /* by top-level tag; bytes: bodies */
    struct hprof_count sub_records[256];  /* by heap sub-record tag */
    struct hprof_count heaps[HPROF_INFO_HEAPS]; /* objects and bytes per heap */
    struct hprof_count primitive[12];     /* by element type: arrays, bytes */
    struct hprof_count strings;           /* java.lang.String: objects, text bytes */
    uint64_t roots[256];                  /* by root sub-record tag */
    struct hprof_info_class *classes;     /* instances by class, then arrays */
    size_t n_classes;
    struct hprof_info_bitmap *bitmaps;    /* Bitmaps, then DumpData buffers */
    size_t n_bitmaps;
    struct hprof_count bitmap_buffers;    /* distinct buffer objects, their bytes */
    uint64_t bitmap_groups;               /* contents held by more than one buffer
                                           * (hprof_shrink_stats.bitmap_groups) */
    struct hprof_count bitmap_duplicates; /* the buffers beyond the first of each
                                           * group: what a shrink merges away */
};

/* Name of heap index i of hprof_info.heaps: "default", "app", "image", "zygote". */
HPROF_API const char *hprof_info_heap_name(int i);

/* hprof_info_analyze() :
 * Two passes over `r` (names and layouts, then everything else) filling
 * `info`, which hprof_info_free() releases.  Counts agree with
 * hprof_verify() and hprof_shrink() on the same input.
 * @return HPROF_OK or an error. */
HPROF_API int hprof_info_analyze(struct hprof_reader *r, struct hprof_info *info, struct hprof_error *err);
/* The same with the names a ProGuard/R8 mapping restores (NULL: none), so
 * that an obfuscated dump's classes, Strings and Bitmaps are found and
 * shown by their original names. */
HPROF_API int hprof_info_analyze_mapped(struct hprof_reader *r, const struct hprof_mapping *m,
                                        struct hprof_info *info, struct hprof_error *err);
HPROF_API void hprof_info_free(struct hprof_info *info);

#ifdef __cplusplus
}
#endif
#endif /* HPROF_H */
