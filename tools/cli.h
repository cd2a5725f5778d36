/*
 * cli.h - what every hprof-* tool shares: exit codes, messages, the progress
 * line, and safe output files (temporary file, rename on success, removed on
 * failure or signal).  Tools include only the public API and this.
 */
#ifndef HPROF_CLI_H
#define HPROF_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>

#include "hprof.h"

/* Exit codes, the same for every tool of the project. */
enum {
    EXIT_OK = 0,
    EXIT_INVALID = 1,   /* the input is not a valid heap dump */
    EXIT_USAGE = 2,     /* bad command line */
    EXIT_IO = 3         /* reading or writing failed (or out of memory) */
};

extern const char *cli_progname;

/* Sets cli_progname and checks that the linked libhprof is the one the tool
 * was compiled against; @return 0, or EXIT_USAGE after a message. */
int cli_init(const char *argv0);

/* The exit code for a libhprof error code. */
int cli_exit_code(int hprof_rc);

/* "prog: what" on stderr.  The first message (without "prog: ") stays in
 * cli_first_error. */
extern char cli_first_error[1024];
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "prog: FILE: message", FILE once even when `msg` starts with it, named
 * by cli_input_name(). */
void cli_file_error(const char *path, const char *msg);

/* cli_file_error() with the message of `err`, an error of input `path`.
 * An input cut short (HPROF_ERR_TRUNCATED) is one --salvage reads: with
 * `suggest_salvage` (a tool that has the option, run without it) the
 * message ends saying so. */
void cli_input_error(const char *path, const struct hprof_error *err, int suggest_salvage);

/* A usage error: "prog: what" (unless fmt is NULL: getopt said it) and
 * "Try 'prog --help' for more information.", never the whole help.
 * @return EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print "prog (hprof-shrink) x.y.z" on stdout. */
void cli_version(void);

/* Progress on stderr when it is a terminal (and not quiet): one line over
 * the whole run, however many passes the library makes, with the input
 * bytes read and the rate. */
struct cli_progress {
    int enabled, drawn;
    const char *label;
    double start, last_draw;
    double fraction;            /* of the whole run, never decreasing */
    int pass;
    uint64_t read;              /* bytes of the passes before this one */
    uint64_t done, total;       /* in this pass */
};
/* `label`: the input's path, shown by cli_input_name(). */
void cli_progress_init(struct cli_progress *p, const char *label, int quiet);
/* hprof_shrink_options.progress */
void cli_progress_update(struct cli_progress *p, int pass, int passes, uint64_t done,
                         uint64_t total);
/* hprof_reader_set_progress(): no pass count, so bytes and rate only */
void cli_progress_bytes(void *ctx, uint64_t done, uint64_t total);
/* What happens before the passes ("reading standard input"). */
void cli_progress_note(struct cli_progress *p, const char *what);
/* Clear the line (the caller prints its summary). */
void cli_progress_done(struct cli_progress *p);
/* Seconds since cli_progress_init(). */
double cli_progress_seconds(const struct cli_progress *p);

/* "301 MB", "93.9 kB", "512 bytes" (powers of 1000, as the summary shows). */
void cli_format_bytes(char *buf, size_t len, uint64_t n);

/* An output file written safely.  path "-" is standard output. */
struct cli_output {
    char *path;
    char *tmp;          /* temporary file next to path, or NULL */
    char *tmp_name;     /* its last component, in tmp */
    char *name;         /* path's last component */
    int at;             /* the directory both are in (O_PATH) */
    int owns_at;        /* cli_output_open() opened it */
    int replace;        /* the rename may replace an existing file */
    int fd;
    int direct;         /* a device or FIFO, written in place */
    int dir_fd;         /* after cli_output_sync(), its directory: the commit
                           fsyncs the file, then it; else -1 */
};

/* After cli_output_sync(), cli_output_commit() fsyncs a file before renaming it
 * and the directory after; sinks writing one then start its writeback
 * every cli_writeback_step() bytes (hprof_sink_set_writeback()), so that
 * the disk keeps up while the input is read and the fsync waits only for
 * the tail.  Without it the kernel writes the file back when it likes, as
 * after gzip, zstd or cp, and the fsync at the commit waits for all of it. */
#define CLI_WRITEBACK_STEP (8u << 20)

/* The writeback step for an input of `input_size` bytes (0: unknown): a
 * 64th of it, between 1 MiB and CLI_WRITEBACK_STEP.  A small dump's output
 * would otherwise never reach one step and leave all of it to the fsync;
 * a big one's is written in requests large enough to keep the disk's
 * queue efficient. */
uint64_t cli_writeback_step(uint64_t input_size);

/* ... and reserve its blocks this far ahead of the writes
 * (hprof_sink_set_preallocate()), which makes the writes cheaper. */
#define CLI_PREALLOCATE_STEP (8u << 20)

/* Opens the temporary file for `path`, in a descriptor of its directory
 * opened now.  Refuses when `path` is the input (`input` is the input's
 * stat, or NULL: none, or standard input, see cli_output_set_input_stdin()),
 * a directory, or exists and !force (and the commit will
 * not replace a file that appears meanwhile).  A character device or FIFO is opened and written in place (no
 * -f needed), and so is a descriptor named by path (/dev/stdout).  Refuses a terminal unless force.  @return 0, or an exit code (message
 * printed). */
int cli_output_open(struct cli_output *o, const char *path, int force, const struct stat *input);
/* The descriptor `path` names, through symbolic links (/dev/stdout,
 * /dev/fd/3, /proc/self/fd/1), or -1: cli_output_open() writes it in
 * place, as standard output. */
int cli_descriptor_named(const char *path);
/* The same for `name` in the directory of descriptor `at` (the caller's,
 * open until the commit or abort), with no check of what exists: `path`
 * names it in messages.  The temporary file is made there exclusively,
 * with the input's permission bits at most (0600 without `input`), and
 * the commit renames it to `name` only if nothing has that name, unless
 * `force`. */
int cli_output_open_at(struct cli_output *o, int at, const char *name, const char *path,
                       int force, const struct stat *input);
/* Make the commit durable (nothing to do for standard output, a FIFO or a
 * device); opens the output's directory now.  @return 0, or EXIT_IO with
 * the message printed (the caller aborts). */
int cli_output_sync(struct cli_output *o);
/* fsync the directory that holds `path`'s name (a directory just made is
 * durable once it is).  @return 0, or -1 with errno set (EACCES: it could
 * not be opened to be synced). */
int cli_sync_directory_of(const char *path);
/* Close and rename into place, after cli_output_sync() fsyncing the file
 * before and its directory after.  @return 0 or EXIT_IO. */
int cli_output_commit(struct cli_output *o);
/* Close and remove the temporary file. */
void cli_output_abort(struct cli_output *o);

/* The mode of a directory made for outputs of `input`: its permission
 * bits plus x where they have r (so that the files in it can be reached)
 * and the owner's w and x (a read-only input's outputs still go in it),
 * 0700 without an input (standard input); mkdir() applies the umask. */
mode_t cli_directory_mode(const struct stat *input);

/* A directory of outputs made safely (hprof-bitmaps' images): created
 * if missing with the input's permission bits at most, plus x where they
 * have r (0700 without an input), and used through one descriptor opened
 * with O_NOFOLLOW (a symbolic link given as the directory is refused), so
 * that every file goes where the first look found the directory.  Each
 * file is a cli_output made in it (cli_outdir_create(), then
 * cli_output_commit() and cli_outdir_placed(), or cli_output_abort()). */
struct cli_outdir {
    char *path;
    int fd;
    int made;           /* this run created it */
    int replace;        /* files may replace existing ones (-f) */
    const struct stat *input;
    char **placed;      /* the names committed so far */
    size_t n_placed, cap_placed;
};
/* @return 0, or an exit code (message printed). */
int cli_outdir_open(struct cli_outdir *d, const char *path, int replace, const struct stat *input);
int cli_outdir_create(struct cli_outdir *d, struct cli_output *o, const char *name);
/* Note `name` as committed, for cli_outdir_close(); @return 0 or EXIT_IO. */
int cli_outdir_placed(struct cli_outdir *d, const char *name);
/* After a failure (`failed`), removes every file committed in it and, if
 * this run made it, the directory: a failed run leaves nothing. */
void cli_outdir_close(struct cli_outdir *d, int failed);

/* Temporary outputs are DIR/hprof-shrink.XXXXXX.tmp, flock()ed while the
 * process that writes them lives. */
#define CLI_TEMP_PREFIX "hprof-shrink."
#define CLI_TEMP_SUFFIX ".tmp"

/* Removes the temporary files of our naming in `dir` that no live process
 * holds (left by a run that was killed), saying so on stderr unless
 * `quiet`.  @return how many. */
int cli_remove_stale_temps(const char *dir, int quiet);
/* Whether cli_output_open() removes them from OUT's directory first (it
 * does unless told otherwise: a batch run has removed them from every
 * output directory once, before its files), and whether it says so. */
void cli_output_set_sweep(int on, int quiet);
/* IN is standard input: the file it reads, if a regular one, is the input
 * cli_output_open() refuses as OUT (its `input` stays NULL, for the mode). */
void cli_output_set_input_stdin(int on);

/* `s` as it is when every byte is printable, else double-quoted with C
 * escapes (a newline becomes \n).  The result lives until the fourth next
 * call. */
const char *cli_quote(const char *s);

/* What messages and reports call input `path` and output `path`:
 * "standard input" and "standard output" for "-", else cli_quote(path),
 * which says how long the result lives. */
const char *cli_input_name(const char *path);
const char *cli_output_name(const char *path);

/* `len` bytes of `s` as a JSON string: valid UTF-8 as it is, Java's
 * modified UTF-8 decoded (C0 80 is U+0000, surrogates of three bytes become
 * \uD8xx escapes), control characters escaped, and any other byte that is
 * not UTF-8 as the escape of U+0080-U+00FF of the same value. */
void cli_json_string(FILE *f, const char *s, size_t len);

/* SIGINT/SIGTERM/SIGHUP remove every open temporary file, then the process
 * dies of the signal as it would have; one ignored when the program
 * started (nohup, a background job) stays ignored. */
void cli_install_signal_handlers(void);
/* The signals that stop a run. */
#define CLI_N_STOP_SIGNALS 3
extern const int cli_stop_signals[CLI_N_STOP_SIGNALS];
/* `handler` for `sig`, the stop signals blocked while it runs, unless
 * `sig` is ignored; *before (if not NULL) what it had.  @return 1 when
 * installed. */
int cli_catch_signal(int sig, void (*handler)(int), struct sigaction *before);
/* The stop signals held in the calling thread (the tools' handlers run
 * while no other thread is), *before the mask to give back. */
void cli_block_stop_signals(sigset_t *before);
void cli_unblock_stop_signals(const sigset_t *before);

/* The warning for an input that held no heap dump, only what runtimes
 * write before one (hprof_reader_ends_before_heap()): valid as far as it
 * goes, but likely cut, and analyzers refuse a dump without a heap. */
void cli_warn_cut_before_heap(const char *path);

/* Whether standard error writes into one of `paths` (inputs; "-" is
 * standard input), as `tool IN 2>> IN` would make it: then EXIT_USAGE,
 * standard error pointed at /dev/null first (the refusal itself would
 * change the input), else 0.  Called before any work. */
int cli_refuse_messages_into_inputs(char *const *paths, int n);

/* Open `path` ("-" for stdin; gzip and pipes spooled) and a reader on it.
 * Refuses a terminal as stdin (HPROF_ERR_USAGE) and names zstd, xz, bzip2
 * and lz4 input as unsupported (HPROF_ERR_FORMAT).
 * @return HPROF_OK with *fd and *r set, or an error (nothing left open).
 * cli_close_reader() releases both. */
int cli_open_reader(const char *path, int *fd, struct hprof_reader **r, struct hprof_error *err);
/* Can `path` ("-": standard input) be read only once: not a regular file
 * (a pipe, FIFO, socket, device)? */
int cli_input_is_stream(const char *path);
/* `path` opened as a stream reader (hprof_input_open_stream(): one run,
 * decompressed as it is read, nothing in $TMPDIR), with cli_open_reader()'s
 * checks of standard input.  Close it with cli_close_reader(-1, r). */
int cli_open_stream_reader(const char *path, struct hprof_reader **r, struct hprof_error *err);
void cli_close_reader(int fd, struct hprof_reader *r);

/* After a failed run over `r` (opened by cli_open_reader() on `fd`):
 * when the input is now shorter than when it was opened, another process
 * cut it, and whatever failed (a write of its mapped bytes: EFAULT; a
 * record read as zeros) is only a consequence.  Then says so naming
 * `path` and the offset where it ends now, and @return EXIT_IO; else 0. */
int cli_input_shrank(const char *path, int fd, const struct hprof_reader *r);

/* --salvage: what a salvaging reader found (hprof_reader_set_salvage()),
 * and how many references of what it kept point at objects not in it. */
struct cli_salvage {
    struct hprof_salvage_report report;
    int counted;                /* `dangling` is known */
    uint64_t dangling;
    char why[512];              /* why not, when counting failed */
    const char *cut_format;     /* "gzip" or "zstd": the compressed input was cut short */
    uint64_t cut_offset;        /* where, compressed */
};
/* --salvage for every cli_open_reader() after it: a gzip or zstd input cut
 * short keeps what it decompressed to, and readers salvage
 * (hprof_reader_set_salvage). */
void cli_set_salvage(int on);
/* Threads that inflate a gzip input in every cli_open_reader() after it:
 * 0 (the default) one per core, 1 the calling thread alone. */
void cli_set_input_threads(unsigned threads);
/* After a successful run over `r`: its report and, when the input was cut
 * and `count`, the dangling references by hprof_verify() (two passes). */
void cli_salvage_collect(struct cli_salvage *s, struct hprof_reader *r, int count);
/* One line on stderr, "IN: input cut at offset 0x...: ...", when cut
 * (IN: the input's path, shown by cli_input_name()). */
void cli_salvage_print(const char *path, const struct cli_salvage *s);
/* ,"salvage":{...} for a JSON report (keys in hprof-shrink(1)). */
void cli_salvage_json(FILE *f, const struct cli_salvage *s);

/* "s" unless n is 1: "%d reference%s", n, cli_s(n). */
const char *cli_s(uint64_t n);

/* Parse a non-negative integer; @return 0 or -1. */
int cli_parse_uint(const char *s, unsigned long long max, unsigned long long *out);

#endif
