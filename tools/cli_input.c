/*
 * cli_input.c - input files for the hprof-* tools: a reader on a file,
 * standard input or a gzip stream, what a mapping that fails says, and
 * what --salvage reports.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_private.h"

/* The input being read through a mapping, for the SIGBUS message. */
static char mapped_input[4096];

static void write_stderr(const char *text)
{
    ssize_t unused = write(STDERR_FILENO, text, strlen(text));
    (void)unused;
}

/* A mapped input shrank or could not be read: the one way a mapping fails.
 * Say so on one line, leave no output behind, exit as for an I/O error. */
static void on_sigbus(int sig)
{
    (void)sig;
    cli_remove_temps();
    write_stderr(cli_progname);
    write_stderr(": ");
    write_stderr(mapped_input[0] ? mapped_input : "input");
    write_stderr(": read error: the file was truncated or could not be read while "
                 "mapped (SIGBUS)\n");
    _exit(EXIT_IO);
}

static void install_sigbus_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigbus;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}

/* --salvage and -j: how cli_open_reader() opens inputs, and what it found. */
static unsigned input_flags;
static unsigned input_threads;
static struct hprof_input_info last_input;

void cli_set_salvage(int on)
{
    input_flags = on ? HPROF_INPUT_SALVAGE : 0;
}

void cli_set_input_threads(unsigned threads)
{
    input_threads = threads;
}

/* Whether descriptor `fd` writes to the regular file `path` ("-":
 * standard input) names, as cat checks for standard output: `tool IN >>
 * IN` would append to IN what is read from it, `tool - - < IN >> IN`
 * too, and `tool IN 2>> IN` its messages. */
static int writes_to_input(int fd, const char *path)
{
    struct stat in, out;
    if (fstat(fd, &out) != 0 || !S_ISREG(out.st_mode))
        return 0;
    if (strcmp(path, "-") == 0 ? fstat(STDIN_FILENO, &in) != 0 : stat(path, &in) != 0)
        return 0;
    return in.st_dev == out.st_dev && in.st_ino == out.st_ino;
}

void cli_warn_cut_before_heap(const char *path)
{
    cli_error("warning: %s: no heap dump, only the names, classes and stack traces "
              "written before one: it looks cut before its heap dump, and analyzers "
              "refuse a dump without one", cli_input_name(path));
}

int cli_refuse_messages_into_inputs(char *const *paths, int n)
{
    for (int i = 0; i < n; i++) {
        if (!writes_to_input(STDERR_FILENO, paths[i]))
            continue;
        /* even the refusal would change that input: standard error goes
         * nowhere from here, and the exit status says why nothing ran */
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null >= 0) {
            dup2(null, STDERR_FILENO);
            close(null);
        }
        return EXIT_USAGE;
    }
    return 0;
}

/* Inputs refused before a byte is read. */
static int refuse_input(const char *path, struct hprof_error *err)
{
    /* as gzip -d does: a person typing a heap dump is a mistake */
    if (strcmp(path, "-") == 0 && isatty(STDIN_FILENO))
        return hprof_error_set(err, HPROF_ERR_USAGE,
                               "is a terminal; refusing to read a heap dump from it");
    if (writes_to_input(STDOUT_FILENO, path))
        return hprof_error_set(err, HPROF_ERR_USAGE,
                               "input file is output file (standard output): refusing "
                               "to write into the file being read");
    return HPROF_OK;
}

/* Whether mapping the input of `fd` leaves enough of a limit on address
 * space (ulimit -v, a batch scheduler's) for the rest: a pass's readers
 * each map the input again (up to six at once), and the threads need
 * their stacks and buffers (up to 256 MiB, half the limit at most).  An
 * eighth of the rest leaves room for them; past that, reads cost a copy
 * but fit. */
static int mapping_fits(int fd)
{
    struct rlimit limit;
    struct stat st;
    if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
        fstat(fd, &st) != 0)
        return 1;
    uint64_t room = (uint64_t)limit.rlim_cur, others = (uint64_t)256 << 20;
    room -= room / 2 < others ? room / 2 : others;
    return (uint64_t)st.st_size <= room / 8;
}

int cli_open_reader(const char *path, int *fd, struct hprof_reader **r, struct hprof_error *err)
{
    *fd = -1;
    *r = NULL;
    int rc = refuse_input(path, err);
    if (rc != HPROF_OK)
        return rc;
    rc = hprof_input_open_threads(path, input_flags, input_threads, fd, &last_input, err);
    if (rc == HPROF_OK)
        rc = hprof_reader_open_fd(r, *fd, err);
    if (rc == HPROF_OK && (input_flags & HPROF_INPUT_SALVAGE))
        hprof_reader_set_salvage(*r, 1);
    /* Mapped unless HPROF_MMAP=0: no copy of what is parsed, and array
     * contents a pass skips are never touched.  If a mapping cannot be
     * had, or would leave too little of a limit on address space for the
     * rest, pread() does the job. */
    const char *map = getenv("HPROF_MMAP");
    if (rc == HPROF_OK && (map == NULL || strcmp(map, "0") != 0) && mapping_fits(*fd)) {
        if (hprof_reader_map(*r) == HPROF_OK) {
            snprintf(mapped_input, sizeof mapped_input, "%s", cli_input_name(path));
            install_sigbus_handler();
            /* the tools' passes read every record; hprof-shrink decides
             * for itself, from -j */
            long cores = sysconf(_SC_NPROCESSORS_ONLN);
            hprof_reader_set_threads(*r, cores > 1 ? (unsigned)cores : 1);
        } else {
            memset(err, 0, sizeof *err);
        }
    }
    if (rc != HPROF_OK) {
        cli_close_reader(*fd, *r);
        *fd = -1;
        *r = NULL;
    }
    return rc;
}

/* A regular file as standard input is read from where it stands, as cat
 * reads it: a stream, unless that is its start. */
int cli_input_is_stream(const char *path)
{
    struct stat st;
    int stdin_input = strcmp(path, "-") == 0;
    if (stdin_input ? fstat(STDIN_FILENO, &st) != 0 : stat(path, &st) != 0)
        return 0; /* the open that follows says why */
    return !S_ISREG(st.st_mode) || (stdin_input && lseek(STDIN_FILENO, 0, SEEK_CUR) > 0);
}

int cli_open_stream_reader(const char *path, struct hprof_reader **r, struct hprof_error *err)
{
    *r = NULL;
    int rc = refuse_input(path, err);
    return rc == HPROF_OK ? hprof_input_open_stream(path, input_threads, r, &last_input, err) : rc;
}

void cli_close_reader(int fd, struct hprof_reader *r)
{
    hprof_reader_free(r);
    if (fd >= 0)
        close(fd);
}

int cli_input_shrank(const char *path, int fd, const struct hprof_reader *r)
{
    struct stat st;
    if (r == NULL || fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size >= hprof_reader_size(r))
        return 0;
    char msg[256];
    snprintf(msg, sizeof msg, "the file shrank during the run: it ends at offset 0x%" PRIx64
             " now, not 0x%" PRIx64 " (cut by another process?)", (uint64_t)st.st_size,
             hprof_reader_size(r));
    cli_file_error(path, msg);
    return EXIT_IO;
}

/* ---- --salvage ---------------------------------------------------------------- */

void cli_salvage_collect(struct cli_salvage *s, struct hprof_reader *r, int count)
{
    memset(s, 0, sizeof *s);
    s->report = *hprof_reader_salvage_report(r);
    if (last_input.gzip_cut) {
        s->cut_format = "gzip";
        s->cut_offset = last_input.gzip_cut_offset;
    } else if (last_input.zstd_cut) {
        s->cut_format = "zstd";
        s->cut_offset = last_input.zstd_cut_offset;
    }
    if (!s->report.cut || !count)
        return;
    struct hprof_verify_report v;
    struct hprof_error err = { 0 };
    if (hprof_verify(r, &v, &err) == HPROF_OK) {
        s->counted = 1;
        s->dangling = v.dangling;
    } else {
        snprintf(s->why, sizeof s->why, "%s", err.message);
    }
}

/* What was lost, in words: the record or sub-record the end cut. */
static void salvage_what(char *out, size_t len, const struct hprof_salvage_report *p)
{
    if (p->sub_records_lost)
        snprintf(out, len, "1 %s sub-record of the %s at 0x%" PRIx64 ", whose %" PRIu64
                 " complete sub-records are kept", hprof_subtag_name(p->sub_tag),
                 hprof_tag_name(p->record_tag), p->record_offset, p->sub_records_kept);
    else if (p->records_lost && p->record_missing == 0)
        snprintf(out, len, "a record header at 0x%" PRIx64, p->record_offset);
    else if (p->records_lost)
        snprintf(out, len, "the %s record at 0x%" PRIx64, hprof_tag_name(p->record_tag),
                 p->record_offset);
    else if (p->record_offset != 0)
        snprintf(out, len, "the %s at 0x%" PRIx64 " ends after %" PRIu64
                 " complete sub-records", hprof_tag_name(p->record_tag), p->record_offset,
                 p->sub_records_kept);
    else
        snprintf(out, len, "the input ends between two records");
}

void cli_salvage_print(const char *path, const struct cli_salvage *s)
{
    const struct hprof_salvage_report *p = &s->report;
    const char *name = cli_input_name(path);
    if (s->cut_format != NULL)
        fprintf(stderr, "%s: %s: %s input cut at offset 0x%" PRIx64 " (compressed): what it "
                "held is salvaged%s\n", cli_progname, name, s->cut_format, s->cut_offset,
                p->cut ? "" : " (it ends between two records)");
    if (p->zero_tail)
        fprintf(stderr, "%s: %s: %" PRIu64 " zero byte%s at offset 0x%" PRIx64 " taken as the "
                "end of the data (a zero-filled tail)\n", cli_progname, name, p->zero_tail,
                cli_s(p->zero_tail), p->input_end);
    if (!p->cut)
        return;
    char what[256];
    salvage_what(what, sizeof what, p);
    fflush(stdout);
    fprintf(stderr, "%s: %s: input cut at offset 0x%" PRIx64 ": %" PRIu64 " byte%s lost (%s)",
            cli_progname, name, p->input_end, p->bytes_lost, cli_s(p->bytes_lost), what);
    if (p->record_missing)
        fprintf(stderr, ", %" PRIu64 " more byte%s announced", p->record_missing,
                cli_s(p->record_missing));
    if (p->unclosed_run)
        fprintf(stderr, "; the heap dump had no HEAP_DUMP_END");
    if (p->classes_dropped || p->instances_dropped || p->arrays_dropped)
        fprintf(stderr, "; dropped as incomplete: %" PRIu64 " class dump%s whose superclass "
                "never arrived, %" PRIu64 " instance%s and %" PRIu64 " primitive array%s whose "
                "class did not", p->classes_dropped, cli_s(p->classes_dropped),
                p->instances_dropped, cli_s(p->instances_dropped), p->arrays_dropped,
                cli_s(p->arrays_dropped));
    if (p->array_classes_rebuilt)
        fprintf(stderr, "; %" PRIu64 " primitive array %s that never arrived rebuilt from "
                "%s LOAD_CLASS", p->array_classes_rebuilt,
                p->array_classes_rebuilt == 1 ? "class" : "classes",
                p->array_classes_rebuilt == 1 ? "its" : "their");
    if (s->counted)
        fprintf(stderr, "; %" PRIu64 " %s at objects that never arrived\n", s->dangling,
                s->dangling == 1 ? "reference points" : "references point");
    else if (s->why[0])
        fprintf(stderr, "; references not counted: %s\n", s->why);
    else
        fputc('\n', stderr);
}

void cli_salvage_json(FILE *f, const struct cli_salvage *s)
{
    const struct hprof_salvage_report *p = &s->report;
    fprintf(f, ",\"salvage\":{\"cut\":%s", p->cut ? "true" : "false");
    if (s->cut_format != NULL)
        fprintf(f, ",\"%s_cut_offset\":%" PRIu64, s->cut_format, s->cut_offset);
    if (p->zero_tail)
        fprintf(f, ",\"zero_tail\":%" PRIu64 ",\"zero_tail_offset\":%" PRIu64, p->zero_tail,
                p->input_end);
    if (p->cut) {
        fprintf(f, ",\"input_end\":%" PRIu64 ",\"kept_end\":%" PRIu64 ",\"bytes_lost\":%" PRIu64
                ",\"record_offset\":%" PRIu64 ",\"record\":\"%s\",\"sub_record\":",
                p->input_end, p->kept_end, p->bytes_lost, p->record_offset,
                p->record_offset || p->records_lost ? hprof_tag_name(p->record_tag) : "");
        if (p->sub_records_lost)
            fprintf(f, "\"%s\"", hprof_subtag_name(p->sub_tag));
        else
            fprintf(f, "null");
        fprintf(f, ",\"bytes_missing\":%" PRIu64 ",\"records_lost\":%" PRIu64
                ",\"sub_records_kept\":%" PRIu64 ",\"sub_records_lost\":%" PRIu64
                ",\"heap_closed\":%s,\"classes_dropped\":%" PRIu64 ",\"instances_dropped\":%"
                PRIu64 ",\"arrays_dropped\":%" PRIu64 ",\"array_classes_rebuilt\":%" PRIu64
                ",\"dangling\":", p->record_missing, p->records_lost, p->sub_records_kept,
                p->sub_records_lost, p->unclosed_run ? "true" : "false", p->classes_dropped,
                p->instances_dropped, p->arrays_dropped, p->array_classes_rebuilt);
        if (s->counted)
            fprintf(f, "%" PRIu64, s->dangling);
        else
            fprintf(f, "null");
    }
    fputc('}', f);
}
