/*
 * cli.c - what every hprof-* tool shares: messages and exit codes, the
 * progress line, and how names and strings are printed.  Output files
 * are in cli_output.c, input files in cli_input.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#ifdef __GLIBC__
#include <malloc.h> /* mallopt() */
#endif
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

const char *cli_progname = "hprof";

/* A report that never reached standard output must not pass for one that
 * did: at exit, a write error or a failed close of standard output is
 * said on stderr and the status becomes EXIT_IO (as gnulib's close_stdout
 * does).  Batch children leave with _exit() and write nothing here. */
static void check_stdout_at_exit(void)
{
    int error = 0;
    if (fflush(stdout) != 0)
        error = errno ? errno : EIO;
    else if (ferror(stdout))
        error = -1; /* an earlier write failed; its errno is gone */
    if (fclose(stdout) != 0 && error == 0)
        error = errno;
    if (error == 0)
        return;
    fprintf(stderr, "%s: standard output: write error%s%s\n", cli_progname,
            error > 0 ? ": " : "", error > 0 ? strerror(error) : "");
    _exit(EXIT_IO);
}

/* A descriptor 0, 1 or 2 the caller left closed would be handed to the
 * first file we open, and a report meant for standard output would land
 * in an output file.  Each is taken by /dev/null opened the wrong way
 * round, so that using it fails (EBADF) and is reported. */
static void hold_standard_descriptors(void)
{
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            int held = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
            if (held >= 0 && held != fd)
                close(held);
        }
}

/* Under a limit on address space (ulimit -v, a batch scheduler's), each
 * thread's malloc arena would reserve 64 MiB of it: one arena for all
 * leaves the room to the work. */
static void share_one_arena_under_a_limit(void)
{
#ifdef M_ARENA_MAX /* glibc's */
    struct rlimit limit;
    if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
        (void)mallopt(M_ARENA_MAX, 1);
#endif
}

int cli_init(const char *argv0)
{
    const char *slash = strrchr(argv0, '/');
    cli_progname = slash ? slash + 1 : argv0;
    hold_standard_descriptors();
    share_one_arena_under_a_limit();
    /* A reader of standard output gone (tool | head -1) would kill the
     * tool with SIGPIPE, status 141: the write fails with EPIPE instead,
     * which check_stdout_at_exit() reports with EXIT_IO, as every tool's
     * man page says, from the first thing a tool may print (--help). */
    signal(SIGPIPE, SIG_IGN);
    atexit(check_stdout_at_exit);
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
    case HPROF_ERR_TRUNCATED: return EXIT_INVALID;
    case HPROF_ERR_USAGE: return EXIT_USAGE;
    default: return EXIT_IO;
    }
}

char cli_first_error[1024];

void cli_error(const char *fmt, ...)
{
    char msg[sizeof cli_first_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", cli_progname, msg);
    if (cli_first_error[0] == '\0')
        memcpy(cli_first_error, msg, sizeof msg);
}

void cli_file_error(const char *path, const char *msg)
{
    size_t n = strlen(path);
    if (msg == NULL || *msg == '\0')
        msg = "failed";
    /* the library's input messages may already start with the name */
    if (strncmp(msg, path, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
        msg += n + 2;
    else if (strcmp(path, "-") == 0 && strncmp(msg, "(stdin): ", 9) == 0)
        msg += 9;
    cli_error("%s: %s", cli_input_name(path), msg);
}

void cli_input_error(const char *path, const struct hprof_error *err, int suggest_salvage)
{
    if (err->code != HPROF_ERR_TRUNCATED || !suggest_salvage) {
        cli_file_error(path, err->message);
        return;
    }
    char msg[sizeof err->message + 64];
    snprintf(msg, sizeof msg, "%s; --salvage keeps what is complete", err->message);
    cli_file_error(path, msg);
}

int cli_usage_error(const char *fmt, ...)
{
    if (fmt != NULL) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        cli_error("%s", msg);
    }
    fprintf(stderr, "Try '%s --help' for more information.\n", cli_progname);
    return EXIT_USAGE;
}

void cli_version(void)
{
    printf("%s (hprof-shrink) %s\n", cli_progname, HPROF_VERSION_STRING);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cli_format_bytes(char *buf, size_t len, uint64_t n)
{
    static const char *const units[] = { "bytes", "kB", "MB", "GB", "TB" };
    double v = (double)n;
    int u = 0;
    while (v >= 1000 && u < 4) {
        v /= 1000;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%" PRIu64 " bytes", n);
    else
        snprintf(buf, len, "%.*f %s", v < 10 ? 1 : 0, v, units[u]);
}

void cli_progress_init(struct cli_progress *p, const char *label, int quiet)
{
    memset(p, 0, sizeof *p);
    p->enabled = !quiet && isatty(STDERR_FILENO);
    p->label = label;
    p->start = now_seconds();
}

/* One line, redrawn at most ten times a second: how far the whole run is
 * (monotone: a later pass never shows less), the input bytes read over
 * all passes, and the rate. */
static void progress_draw(struct cli_progress *p, double fraction, uint64_t total)
{
    double t = now_seconds();
    if (fraction >= 0 && fraction < p->fraction) /* -1: no fraction to show */
        fraction = p->fraction;
    if (fraction >= 0)
        p->fraction = fraction;
    if (p->drawn && t - p->last_draw < 0.1)
        return;
    p->last_draw = t;
    p->drawn = 1;
    char read[32], size[32], rate[32];
    double secs = t - p->start;
    cli_format_bytes(read, sizeof read, p->read + p->done);
    cli_format_bytes(size, sizeof size, total);
    cli_format_bytes(rate, sizeof rate, secs > 0 ? (uint64_t)((double)(p->read + p->done) / secs) : 0);
    if (total == 0) /* a stream: its size is known at its end */
        fprintf(stderr, "\r%s: %s: %s read, %s/s\033[K", cli_progname, cli_input_name(p->label),
                read, rate);
    else if (fraction >= 0)
        fprintf(stderr, "\r%s: %s: %3d%% of %s, %s read, %s/s\033[K", cli_progname,
                cli_input_name(p->label), (int)(fraction * 100), size, read, rate);
    else
        fprintf(stderr, "\r%s: %s: %s, %s read, %s/s\033[K", cli_progname, cli_input_name(p->label),
                size, read, rate);
    fflush(stderr);
}

void cli_progress_update(struct cli_progress *p, int pass, int passes, uint64_t done,
                         uint64_t total)
{
    if (!p->enabled)
        return;
    if (pass != p->pass) {      /* a new pass: the last one read its input */
        if (p->pass != 0)
            p->read += p->total;
        p->pass = pass;
    }
    p->done = done;
    p->total = total;
    double f = passes > 0 && total > 0
                   ? ((double)(pass - 1) + (double)done / (double)total) / (double)passes
                   : -1;
    progress_draw(p, f > 1 ? 1 : f, total);
}

void cli_progress_bytes(void *ctx, uint64_t done, uint64_t total)
{
    struct cli_progress *p = ctx;
    if (!p->enabled)
        return;
    if (done < p->done)         /* the reader started over: another pass */
        p->read += p->total;
    p->done = done;
    p->total = total;
    progress_draw(p, -1, total);
}

void cli_progress_note(struct cli_progress *p, const char *what)
{
    if (!p->enabled)
        return;
    fprintf(stderr, "\r%s: %s: %s\033[K", cli_progname, cli_input_name(p->label), what);
    fflush(stderr);
    p->drawn = 1;
}

void cli_progress_done(struct cli_progress *p)
{
    if (p->enabled && p->drawn)
        fprintf(stderr, "\r\033[K");
    p->drawn = 0;
}

double cli_progress_seconds(const struct cli_progress *p)
{
    return now_seconds() - p->start;
}

const char *cli_s(uint64_t n)
{
    return n == 1 ? "" : "s";
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

static size_t utf8_length(const unsigned char *p, size_t n);

/* Whether the character of `k` bytes at `p` is one a terminal acts on
 * rather than shows: C0 and C1 controls, DEL, and the Unicode bidi
 * controls that reorder what follows (U+202A-U+202E, U+2066-U+2069). */
static int terminal_acts_on(const unsigned char *p, size_t k)
{
    if (k == 1)
        return p[0] < 0x20 || p[0] == 0x7f;
    if (k == 2)
        return p[0] == 0xc2 && p[1] < 0xa0; /* U+0080-U+009F */
    if (k == 3 && p[0] == 0xe2)
        return (p[1] == 0x80 && p[2] >= 0xaa && p[2] <= 0xae) ||
               (p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9);
    return 0;
}

/* The name as it is when every character is one a terminal shows as it
 * is; otherwise in double quotes with C escapes (\n, \x9b for a byte that
 * is not UTF-8, \u202e for a character a terminal acts on), so that a
 * name stays on its line and cannot restyle or reorder it. */
const char *cli_quote(const char *s)
{
    static char bufs[4][4 * 4096 + 3];
    static int next;
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), k;
    int plain = 1;
    for (size_t i = 0; i < n && plain; i += k ? k : 1) {
        k = utf8_length(p + i, n - i);
        if (k == 0 || terminal_acts_on(p + i, k) || p[i] == '"' || p[i] == '\\')
            plain = 0;
    }
    if (plain)
        return s;
    char *buf = bufs[next++ & 3], *w = buf;
    char *end = buf + sizeof bufs[0] - 8; /* room for \u202e, the quote and NUL */
    *w++ = '"';
    for (size_t i = 0; i < n && w < end; i += k ? k : 1) {
        k = utf8_length(p + i, n - i);
        if (k == 0) {
            w += sprintf(w, "\\x%02x", p[i]);
        } else if (k == 1) {
            switch (p[i]) {
            case '\n': *w++ = '\\'; *w++ = 'n'; break;
            case '\t': *w++ = '\\'; *w++ = 't'; break;
            case '"': *w++ = '\\'; *w++ = '"'; break;
            case '\\': *w++ = '\\'; *w++ = '\\'; break;
            default:
                if (terminal_acts_on(p + i, 1))
                    w += sprintf(w, "\\x%02x", p[i]);
                else
                    *w++ = (char)p[i];
            }
        } else if (terminal_acts_on(p + i, k)) {
            unsigned u = k == 2 ? ((p[i] & 0x1fu) << 6) | (p[i + 1] & 0x3fu)
                                : ((p[i] & 0x0fu) << 12) | ((p[i + 1] & 0x3fu) << 6) |
                                      (p[i + 2] & 0x3fu);
            w += sprintf(w, "\\u%04x", u);
        } else {
            memcpy(w, p + i, k);
            w += k;
        }
    }
    *w++ = '"';
    *w = '\0';
    return buf;
}

/* "-" is the standard stream, which a user never typed as a name: every
 * message and report says which it is in words, as gzip and cat do. */
const char *cli_input_name(const char *path)
{
    return strcmp(path, "-") == 0 ? "standard input" : cli_quote(path);
}

const char *cli_output_name(const char *path)
{
    return strcmp(path, "-") == 0 ? "standard output" : cli_quote(path);
}

/* Length of the UTF-8 sequence at p (n bytes left) that JSON may carry as it
 * is, or 0.  Overlong forms, surrogates and code points past U+10FFFF are
 * not UTF-8. */
static size_t utf8_length(const unsigned char *p, size_t n)
{
    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        return n >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
    if (p[0] >= 0xe0 && p[0] <= 0xef) {
        if (n < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
            return 0;
        if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0))
            return 0;
        return 3;
    }
    if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        if (n < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80)
            return 0;
        if ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
            return 0;
        return 4;
    }
    return 0;
}

void cli_json_string(FILE *f, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        size_t k;
        if (c == '"' || c == '\\') {
            fprintf(f, "\\%c", c);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\u%04x", c);
            i++;
        } else if ((k = utf8_length(p + i, len - i)) != 0) {
            fwrite(p + i, 1, k, f);
            i += k;
        } else if (c == 0xc0 && i + 1 < len && p[i + 1] == 0x80) {
            fputs("\\u0000", f); /* modified UTF-8's NUL */
            i += 2;
        } else if (c == 0xed && i + 2 < len && p[i + 1] >= 0xa0 && p[i + 1] <= 0xbf &&
                   (p[i + 2] & 0xc0) == 0x80) {
            /* modified UTF-8 (CESU-8) writes a supplementary character as
             * two surrogates of three bytes each: a pair in JSON */
            unsigned u = 0xd000u | ((p[i + 1] & 0x3fu) << 6) | (p[i + 2] & 0x3fu);
            fprintf(f, "\\u%04x", u);
            i += 3;
        } else {
            fprintf(f, "\\u%04x", c); /* a byte that is not text: U+0080-U+00FF */
            i++;
        }
    }
    fputc('"', f);
}
