/*
 * cli.c - shared command-line plumbing for the hprof-* tools.
 *
 * Safe output: data goes to "OUT.XXXXXX.tmp" in OUT's directory and is
 * renamed over OUT only when everything succeeded, so a reader of OUT never
 * sees a half-written dump and a failure leaves nothing behind.  The paths
 * of open temporary files sit in a fixed table that the signal handler can
 * walk with only async-signal-safe calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

const char *cli_progname = "hprof";

#define MAX_TEMPS 64
static char *volatile temp_paths[MAX_TEMPS];

int cli_init(const char *argv0)
{
    const char *slash = strrchr(argv0, '/');
    cli_progname = slash ? slash + 1 : argv0;
    if (hprof_version_number() != HPROF_VERSION_NUMBER) {
        cli_error("libhprof version %u does not match the headers' %u",
                  hprof_version_number(), HPROF_VERSION_NUMBER);
        return EXIT_USAGE;
    }
    return 0;
}

int cli_exit_code(int rc)
{
    switch (rc) {
    case HPROF_OK: return EXIT_OK;
    case HPROF_ERR_FORMAT: return EXIT_INVALID;
    case HPROF_ERR_USAGE: return EXIT_USAGE;
    default: return EXIT_IO;
    }
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", cli_progname);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void cli_version(void)
{
    printf("%s (hprof-shrink) %s\n", cli_progname, HPROF_VERSION_STRING);
}

void cli_progress_init(struct cli_progress *p, const char *label, int quiet)
{
    p->enabled = !quiet && isatty(STDERR_FILENO);
    p->label = label;
    p->last_percent = -1;
}

void cli_progress_update(struct cli_progress *p, int pass, int passes, uint64_t done,
                         uint64_t total)
{
    if (!p->enabled)
        return;
    int percent = total ? (int)(done * 100 / total) : 100;
    if (percent == p->last_percent)
        return;
    p->last_percent = percent;
    fprintf(stderr, "\r%s: %s: pass %d/%d %3d%%", cli_progname, p->label, pass, passes, percent);
    fflush(stderr);
}

void cli_progress_done(struct cli_progress *p)
{
    if (p->enabled && p->last_percent >= 0)
        fprintf(stderr, "\r\033[K");
    p->last_percent = -1;
}

/* ---- Temporary files and signals ------------------------------------------ */

static int remember_temp(char *path)
{
    for (int i = 0; i < MAX_TEMPS; i++)
        if (temp_paths[i] == NULL) {
            temp_paths[i] = path;
            return 0;
        }
    return -1;
}

static void forget_temp(const char *path)
{
    for (int i = 0; i < MAX_TEMPS; i++)
        if (temp_paths[i] == path)
            temp_paths[i] = NULL;
}

static void on_signal(int sig)
{
    for (int i = 0; i < MAX_TEMPS; i++)
        if (temp_paths[i] != NULL)
            unlink(temp_paths[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

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
    for (int i = 0; i < MAX_TEMPS; i++)
        if (temp_paths[i] != NULL)
            unlink(temp_paths[i]);
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

void cli_install_signal_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a closed pipe becomes EPIPE, reported */
}

int cli_output_open(struct cli_output *o, const char *path, int force, const struct stat *input)
{
    struct stat st;
    memset(o, 0, sizeof *o);
    o->fd = -1;
    if (strcmp(path, "-") == 0) {
        if (isatty(STDOUT_FILENO) && !force) {
            cli_error("refusing to write a heap dump to a terminal (use -f to force)");
            return EXIT_USAGE;
        }
        o->fd = STDOUT_FILENO;
        return 0;
    }
    if (stat(path, &st) == 0) {
        if (input != NULL && st.st_dev == input->st_dev && st.st_ino == input->st_ino) {
            cli_error("%s: output is the input; refusing to overwrite it", path);
            return EXIT_USAGE;
        }
        if (!force) {
            cli_error("%s: already exists (use -f to overwrite)", path);
            return EXIT_USAGE;
        }
        if (!S_ISREG(st.st_mode)) {
            cli_error("%s: not a regular file", path);
            return EXIT_USAGE;
        }
    }
    size_t len = strlen(path) + sizeof ".XXXXXX.tmp";
    o->path = strdup(path);
    o->tmp = malloc(len);
    if (o->path == NULL || o->tmp == NULL) {
        cli_error("out of memory");
        cli_output_abort(o);
        return EXIT_IO;
    }
    snprintf(o->tmp, len, "%s.XXXXXX.tmp", path);
    o->fd = mkstemps(o->tmp, 4);
    if (o->fd < 0) {
        cli_error("%s: cannot create a temporary file: %s", path, strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        cli_output_abort(o);
        return EXIT_IO;
    }
    /* mkstemp() makes 0600; give the dump the mode a plain create would. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(o->fd, 0666 & ~mask);
    if (remember_temp(o->tmp) != 0) {
        cli_error("too many outputs open at once");
        cli_output_abort(o);
        return EXIT_IO;
    }
    return 0;
}

int cli_output_commit(struct cli_output *o)
{
    int rc = 0;
    if (o->tmp == NULL) { /* stdout */
        o->fd = -1;
        return 0;
    }
    if (fsync(o->fd) != 0 && errno != EINVAL) {
        cli_error("%s: %s", o->path, strerror(errno));
        rc = EXIT_IO;
    }
    if (close(o->fd) != 0 && rc == 0) {
        cli_error("%s: %s", o->path, strerror(errno));
        rc = EXIT_IO;
    }
    o->fd = -1;
    if (rc == 0 && rename(o->tmp, o->path) != 0) {
        cli_error("%s: cannot rename the temporary file: %s", o->path, strerror(errno));
        rc = EXIT_IO;
    }
    if (rc != 0) {
        cli_output_abort(o);
        return rc;
    }
    forget_temp(o->tmp);
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
    return 0;
}

void cli_output_abort(struct cli_output *o)
{
    if (o->fd >= 0 && o->tmp != NULL)
        close(o->fd);
    if (o->tmp != NULL) {
        unlink(o->tmp);
        forget_temp(o->tmp);
    }
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
    o->fd = -1;
}

/* --salvage: how cli_open_reader() opens inputs, and what it found. */
static unsigned input_flags;
static struct hprof_input_info last_input;

void cli_set_salvage(int on)
{
    input_flags = on ? HPROF_INPUT_SALVAGE : 0;
}

int cli_open_reader(const char *path, int *fd, struct hprof_reader **r, struct hprof_error *err)
{
    *fd = -1;
    *r = NULL;
    int rc = hprof_input_open_flags(path, input_flags, fd, &last_input, err);
    if (rc == HPROF_OK)
        rc = hprof_reader_open_fd(r, *fd, err);
    if (rc == HPROF_OK && (input_flags & HPROF_INPUT_SALVAGE))
        hprof_reader_set_salvage(*r, 1);
    /* Mapped unless HPROF_MMAP=0: no copy of what is parsed, and array
     * contents a pass skips are never touched.  If a mapping cannot be
     * had, pread() does the job. */
    const char *map = getenv("HPROF_MMAP");
    if (rc == HPROF_OK && (map == NULL || strcmp(map, "0") != 0)) {
        if (hprof_reader_map(*r) == HPROF_OK) {
            snprintf(mapped_input, sizeof mapped_input, "%s", path);
            install_sigbus_handler();
            /* the tools' passes read every record; hprof-shrink decides
             * for itself, from -j */
            hprof_reader_set_readahead_thread(*r, sysconf(_SC_NPROCESSORS_ONLN) > 1);
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

void cli_close_reader(int fd, struct hprof_reader *r)
{
    hprof_reader_free(r);
    if (fd >= 0)
        close(fd);
}

/* ---- --salvage ---------------------------------------------------------------- */

void cli_salvage_collect(struct cli_salvage *s, struct hprof_reader *r, int count)
{
    memset(s, 0, sizeof *s);
    s->report = *hprof_reader_salvage_report(r);
    s->gzip_cut = last_input.gzip_cut;
    s->gzip_cut_offset = last_input.gzip_cut_offset;
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

void cli_salvage_print(const char *name, const struct cli_salvage *s)
{
    const struct hprof_salvage_report *p = &s->report;
    if (s->gzip_cut)
        fprintf(stderr, "%s: %s: gzip input cut at offset 0x%" PRIx64 " (compressed): what it "
                "held is salvaged%s\n", cli_progname, name, s->gzip_cut_offset,
                p->cut ? "" : " (it ends between two records)");
    if (!p->cut)
        return;
    char what[256];
    salvage_what(what, sizeof what, p);
    fflush(stdout);
    fprintf(stderr, "%s: %s: input cut at offset 0x%" PRIx64 ": %" PRIu64 " bytes lost (%s)",
            cli_progname, name, p->input_end, p->bytes_lost, what);
    if (p->record_missing)
        fprintf(stderr, ", %" PRIu64 " more bytes announced", p->record_missing);
    if (p->unclosed_run)
        fprintf(stderr, "; the heap dump had no HEAP_DUMP_END");
    if (p->classes_dropped || p->instances_dropped || p->arrays_dropped)
        fprintf(stderr, "; dropped as incomplete: %" PRIu64 " class dumps whose superclass "
                "never arrived, %" PRIu64 " instances and %" PRIu64 " primitive arrays whose "
                "class did not", p->classes_dropped, p->instances_dropped, p->arrays_dropped);
    if (p->array_classes_rebuilt)
        fprintf(stderr, "; %" PRIu64 " primitive array classes that never arrived rebuilt from "
                "their LOAD_CLASS", p->array_classes_rebuilt);
    if (s->counted)
        fprintf(stderr, "; %" PRIu64 " references point at objects that never arrived\n",
                s->dangling);
    else if (s->why[0])
        fprintf(stderr, "; references not counted: %s\n", s->why);
    else
        fputc('\n', stderr);
}

void cli_salvage_json(FILE *f, const struct cli_salvage *s)
{
    const struct hprof_salvage_report *p = &s->report;
    fprintf(f, ",\"salvage\":{\"cut\":%s", p->cut ? "true" : "false");
    if (s->gzip_cut)
        fprintf(f, ",\"gzip_cut_offset\":%" PRIu64, s->gzip_cut_offset);
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

int cli_parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > max)
        return -1;
    *out = v;
    return 0;
}

uint64_t cli_writeback_step(uint64_t input_size)
{
    uint64_t step = input_size / 64;
    if (input_size == 0 || step > CLI_WRITEBACK_STEP)
        return CLI_WRITEBACK_STEP;
    return step < (1u << 20) ? 1u << 20 : step;
}
