/*
 * cli.c - shared command-line plumbing for the hprof-* tools.
 *
 * Safe output: data goes to "hprof-shrink.XXXXXX.tmp" in OUT's directory
 * and is renamed to OUT only when everything succeeded, so a reader of OUT
 * never sees a half-written dump and a failure leaves nothing behind.  The
 * temporary file is created, and renamed, relative to one descriptor of
 * the directory, never through a symbolic link and never onto a file that
 * was there (O_CREAT | O_EXCL | O_NOFOLLOW), and the rename replaces an
 * existing OUT only when the caller allows it.  Open temporary files sit
 * in a fixed table that the signal handler can walk with only
 * async-signal-safe calls.
 */
#define _GNU_SOURCE /* O_PATH, renameat2() */
#include <errno.h>
#include <inttypes.h>
#include <time.h>
#include <fcntl.h>
#include <dirent.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "cli.h"

const char *cli_progname = "hprof";

#define MAX_TEMPS 64
/* A temporary file: its name in the directory of descriptor temp_dirs[i]. */
static const char *volatile temp_names[MAX_TEMPS];
static volatile int temp_dirs[MAX_TEMPS];

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

int cli_init(const char *argv0)
{
    const char *slash = strrchr(argv0, '/');
    cli_progname = slash ? slash + 1 : argv0;
    hold_standard_descriptors();
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
    cli_error("%s: %s", strcmp(path, "-") == 0 ? "standard input" : cli_quote(path), msg);
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
    if (fraction < p->fraction)
        fraction = p->fraction;
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
    if (fraction >= 0)
        fprintf(stderr, "\r%s: %s: %3d%% of %s, %s read, %s/s\033[K", cli_progname,
                cli_quote(p->label), (int)(fraction * 100), size, read, rate);
    else
        fprintf(stderr, "\r%s: %s: %s, %s read, %s/s\033[K", cli_progname, cli_quote(p->label),
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
                   : 0;
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
    fprintf(stderr, "\r%s: %s: %s\033[K", cli_progname, cli_quote(p->label), what);
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

/* ---- Temporary files and signals ------------------------------------------ */

static int remember_temp(int dir_fd, const char *name)
{
    for (int i = 0; i < MAX_TEMPS; i++)
        if (temp_names[i] == NULL) {
            temp_dirs[i] = dir_fd;
            temp_names[i] = name;
            return 0;
        }
    return -1;
}

static void forget_temp(const char *name)
{
    for (int i = 0; i < MAX_TEMPS; i++)
        if (temp_names[i] == name)
            temp_names[i] = NULL;
}

static void remove_temps(void)
{
    for (int i = 0; i < MAX_TEMPS; i++)
        if (temp_names[i] != NULL)
            unlinkat(temp_dirs[i], temp_names[i], 0);
}

static void on_signal(int sig)
{
    remove_temps();
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
    remove_temps();
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

/* A heap dump holds every String of the process: its copy must not be
 * readable by more people than the original.  As gzip does, the output
 * takes the input's permission bits (and, as root, its owner and group);
 * from standard input it stays 0600 (mkstemp()'s mode), less if the umask
 * says so. */
static void set_output_mode(int fd, const struct stat *input)
{
    if (input == NULL || !(S_ISREG(input->st_mode) || S_ISFIFO(input->st_mode))) {
        mode_t mask = umask(0);
        umask(mask);
        fchmod(fd, 0600 & ~mask);
        return;
    }
    if (geteuid() == 0 && fchown(fd, input->st_uid, input->st_gid) != 0) {
        /* not ours to give away: keep root's, with the bits below */
    }
    fchmod(fd, input->st_mode & 0777);
}

/* A character device (/dev/null) or a FIFO is written as it is: nothing
 * to rename over it, nothing to remove on failure. */
static int open_direct(struct cli_output *o, const char *path, int force)
{
    o->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (o->fd < 0) {
        cli_error("%s: %s", cli_quote(path), strerror(errno));
        return EXIT_IO;
    }
    if (isatty(o->fd) && !force) {
        cli_error("%s: refusing to write a heap dump to a terminal (use -f to force)",
                  cli_quote(path));
        close(o->fd);
        o->fd = -1;
        return EXIT_USAGE;
    }
    o->path = strdup(path);
    o->direct = 1;
    return 0;
}

static void release_output_names(struct cli_output *o)
{
    free(o->path);
    free(o->name);
    free(o->tmp);
    o->path = o->name = o->tmp = NULL;
    o->tmp_name = NULL;
}

int cli_output_open(struct cli_output *o, const char *path, int force, const struct stat *input)
{
    struct stat st;
    memset(o, 0, sizeof *o);
    o->fd = o->dir_fd = -1;
    if (strcmp(path, "-") == 0) {
        if (isatty(STDOUT_FILENO) && !force) {
            cli_error("refusing to write a heap dump to a terminal (use -f to force)");
            return EXIT_USAGE;
        }
        o->fd = STDOUT_FILENO;
        return 0;
    }
    if (stat(path, &st) == 0) {
        if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
            return open_direct(o, path, force);
        if (S_ISDIR(st.st_mode)) {
            cli_error("%s: is a directory", cli_quote(path));
            return EXIT_USAGE;
        }
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
    /* OUT's directory as it is now: the temporary file is made in it and
     * renamed in it, whatever happens to the path meanwhile.  O_PATH: a
     * directory we may write in but not read (0300) is still written. */
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    int at = dir ? open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
    int error = errno;
    free(dir);
    if (at < 0) {
        cli_error("%s: cannot open its directory: %s", cli_quote(path), strerror(error));
        return EXIT_IO;
    }
    int code = cli_output_open_at(o, at, slash ? slash + 1 : path, path, force, input);
    if (code != 0) {
        close(at);
        return code;
    }
    o->owns_at = 1;
    return 0;
}

/* A temporary name of our own: a short one (not OUT plus a suffix, which a
 * long OUT would push past NAME_MAX), random enough that guessing it is
 * futile; created exclusively, so a name taken is simply drawn again. */
static int create_temp_at(int at, char *name, size_t size)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static uint64_t state;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    state ^= (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32 ^
             (uint64_t)ts.tv_sec;
    for (int attempt = 0; attempt < 100; attempt++) {
        char random[7];
        for (int i = 0; i < 6; i++) {
            state ^= state << 13, state ^= state >> 7, state ^= state << 17;
            random[i] = letters[state % (sizeof letters - 1)];
        }
        random[6] = '\0';
        snprintf(name, size, CLI_TEMP_PREFIX "%s" CLI_TEMP_SUFFIX, random);
        int fd = openat(at, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

int cli_output_open_at(struct cli_output *o, int at, const char *name, const char *path,
                       int force, const struct stat *input)
{
    memset(o, 0, sizeof *o);
    o->fd = o->dir_fd = -1;
    o->at = at;
    o->replace = force;
    o->path = strdup(path);
    o->name = strdup(name);
    /* the temporary file's path, for messages: OUT's directory part and our name */
    size_t prefix = strlen(path) >= strlen(name) ? strlen(path) - strlen(name) : 0;
    size_t len = prefix + sizeof CLI_TEMP_PREFIX "XXXXXX" CLI_TEMP_SUFFIX;
    o->tmp = malloc(len);
    if (o->path == NULL || o->name == NULL || o->tmp == NULL) {
        cli_error("out of memory");
        release_output_names(o);
        return EXIT_IO;
    }
    memcpy(o->tmp, path, prefix);
    o->tmp_name = o->tmp + prefix;
    /* Between its creation and its lock, a cleaner must not take the file
     * for a stale one: creators hold the directory shared meanwhile, the
     * cleaner exclusively (a directory's flock is advisory, as is ours). */
    int lock_fd = openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock_fd >= 0)
        flock(lock_fd, LOCK_SH);
    /* A stop signal between the file's creation and remember_temp() would
     * leave it behind: held until the handler knows the file. */
    sigset_t stop_signals, before;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGHUP);
    sigprocmask(SIG_BLOCK, &stop_signals, &before);
    o->fd = create_temp_at(at, o->tmp_name, len - prefix);
    int error = errno;
    if (o->fd >= 0)
        flock(o->fd, LOCK_EX | LOCK_NB);
    if (lock_fd >= 0)
        close(lock_fd); /* and the shared lock with it */
    if (o->fd < 0) {
        sigprocmask(SIG_SETMASK, &before, NULL);
        cli_error("%s: cannot create a temporary file in its directory: %s", cli_quote(path),
                  strerror(error));
        release_output_names(o);
        return EXIT_IO;
    }
    set_output_mode(o->fd, input);
    int remembered = remember_temp(at, o->tmp_name);
    sigprocmask(SIG_SETMASK, &before, NULL);
    if (remembered != 0) {
        cli_error("too many outputs open at once");
        cli_output_abort(o);
        return EXIT_IO;
    }
    return 0;
}

/* The directory part of `path` ("." for none), to free; NULL when out of
 * memory. */
static char *directory_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
}

int cli_sync_directory_of(const char *path)
{
    char *dir = directory_of(path);
    if (dir == NULL) {
        errno = ENOMEM;
        return -1;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0)
        return -1;
    int rc = fsync(fd) != 0 && errno != EINVAL ? -1 : 0; /* EINVAL: a file system that cannot sync */
    int error = errno; /* fsync's, whatever close() does */
    close(fd);
    errno = error;
    return rc;
}

/* The rename is durable once the directory that holds the name is, so
 * the directory is opened now: one we may write in but not read (mode
 * 0300) is refused before any work rather than after it. */
int cli_output_sync(struct cli_output *o)
{
    if (o->tmp == NULL) /* standard output, a FIFO, a device */
        return 0;
    char *dir = directory_of(o->path);
    if (dir == NULL) {
        cli_error("out of memory");
        return EXIT_IO;
    }
    o->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (o->dir_fd < 0) {
        cli_error("%s: cannot open its directory to sync it: %s (use --no-sync)",
                  cli_quote(o->path), strerror(errno));
        free(dir);
        return EXIT_IO;
    }
    free(dir);
    return 0;
}

static void close_directory(struct cli_output *o)
{
    if (o->dir_fd >= 0)
        close(o->dir_fd);
    o->dir_fd = -1;
}

/* The temporary file takes its name, in the directory it was made in:
 * onto an existing file only when o->replace (a name that appeared
 * meanwhile is not ours to replace); a symbolic link there is replaced,
 * never followed. */
static int place_temp(const struct cli_output *o)
{
    if (o->replace)
        return renameat(o->at, o->tmp_name, o->at, o->name);
    if (renameat2(o->at, o->tmp_name, o->at, o->name, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
    /* a file system without RENAME_NOREPLACE: a link never replaces either */
    if (linkat(o->at, o->tmp_name, o->at, o->name, 0) != 0)
        return -1;
    unlinkat(o->at, o->tmp_name, 0);
    return 0;
}

int cli_output_commit(struct cli_output *o)
{
    int rc = 0;
    if (o->direct) {
        if (close(o->fd) != 0) {
            cli_error("%s: %s", cli_quote(o->path), strerror(errno));
            rc = EXIT_IO;
        }
        o->fd = -1;
        o->direct = 0;
        free(o->path);
        o->path = NULL;
        return rc;
    }
    if (o->tmp == NULL) { /* stdout */
        o->fd = -1;
        return 0;
    }
    if (o->dir_fd >= 0 && fsync(o->fd) != 0 && errno != EINVAL) {
        cli_error("%s: %s", cli_quote(o->path), strerror(errno));
        rc = EXIT_IO;
    }
    if (close(o->fd) != 0 && rc == 0) {
        cli_error("%s: %s", cli_quote(o->path), strerror(errno));
        rc = EXIT_IO;
    }
    o->fd = -1;
    if (rc == 0 && place_temp(o) != 0) {
        if (errno == EEXIST) {
            cli_error("%s: already exists; not replaced (use -f to overwrite)",
                      cli_quote(o->path));
            rc = EXIT_USAGE;
        } else {
            cli_error("%s: cannot rename the temporary file: %s", cli_quote(o->path),
                      strerror(errno));
            rc = EXIT_IO;
        }
    }
    if (rc != 0) {
        cli_output_abort(o);
        return rc;
    }
    forget_temp(o->tmp_name);
    if (o->dir_fd >= 0 && fsync(o->dir_fd) != 0 && errno != EINVAL) {
        cli_error("%s: written, but its directory could not be synced: %s", cli_quote(o->path),
                  strerror(errno));
        rc = EXIT_IO;
    }
    close_directory(o);
    if (o->owns_at)
        close(o->at);
    o->owns_at = 0;
    release_output_names(o);
    return rc;
}

void cli_output_abort(struct cli_output *o)
{
    close_directory(o);
    if (o->fd >= 0 && (o->tmp != NULL || o->direct))
        close(o->fd);
    o->direct = 0;
    if (o->tmp_name != NULL) {
        unlinkat(o->at, o->tmp_name, 0);
        forget_temp(o->tmp_name);
    }
    if (o->tmp != NULL && o->owns_at)
        close(o->at);
    o->owns_at = 0;
    release_output_names(o);
    o->fd = -1;
}

/* ---- A directory of outputs ------------------------------------------------- */

mode_t cli_directory_mode(const struct stat *input)
{
    if (input == NULL || !(S_ISREG(input->st_mode) || S_ISFIFO(input->st_mode)))
        return 0700;
    mode_t bits = input->st_mode & 0777;
    return bits | (bits & 0444) >> 2;
}

int cli_outdir_open(struct cli_outdir *d, const char *path, int replace, const struct stat *input)
{
    memset(d, 0, sizeof *d);
    d->fd = -1;
    d->replace = replace;
    d->input = input;
    d->made = mkdir(path, cli_directory_mode(input)) == 0;
    int error = errno;
    if (!d->made && error != EEXIST) {
        cli_error("%s: %s", cli_quote(path), strerror(error));
        return EXIT_IO;
    }
    d->fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    error = errno;
    struct stat st;
    if (d->fd < 0 && lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        cli_error("%s: is a symbolic link; name the directory itself", cli_quote(path));
        return EXIT_USAGE;
    }
    if (d->fd < 0) {
        cli_error("%s: %s", cli_quote(path), strerror(error));
        return error == ENOTDIR ? EXIT_USAGE : EXIT_IO;
    }
    /* one we made and that another user swapped for theirs is not ours */
    if (d->made && (fstat(d->fd, &st) != 0 || st.st_uid != geteuid())) {
        cli_error("%s: replaced by another user's directory while it was made", cli_quote(path));
        close(d->fd);
        d->fd = -1;
        d->made = 0;
        return EXIT_IO;
    }
    d->path = strdup(path);
    if (d->path == NULL) {
        cli_error("out of memory");
        cli_outdir_close(d, 1);
        return EXIT_IO;
    }
    return 0;
}

int cli_outdir_create(struct cli_outdir *d, struct cli_output *o, const char *name)
{
    size_t len = strlen(d->path) + strlen(name) + 2;
    char *path = malloc(len);
    if (path == NULL) {
        cli_error("out of memory");
        return EXIT_IO;
    }
    snprintf(path, len, "%s%s%s", d->path, d->path[strlen(d->path) - 1] == '/' ? "" : "/", name);
    int code = cli_output_open_at(o, d->fd, name, path, d->replace, d->input);
    free(path);
    return code;
}

int cli_outdir_placed(struct cli_outdir *d, const char *name)
{
    if (d->n_placed == d->cap_placed) {
        size_t cap = d->cap_placed ? 2 * d->cap_placed : 16;
        char **grown = realloc(d->placed, cap * sizeof *grown);
        if (grown == NULL) {
            cli_error("out of memory");
            return EXIT_IO;
        }
        d->placed = grown;
        d->cap_placed = cap;
    }
    if ((d->placed[d->n_placed] = strdup(name)) == NULL) {
        cli_error("out of memory");
        return EXIT_IO;
    }
    d->n_placed++;
    return 0;
}

void cli_outdir_close(struct cli_outdir *d, int failed)
{
    for (size_t i = 0; i < d->n_placed; i++) {
        if (failed && d->fd >= 0)
            unlinkat(d->fd, d->placed[i], 0);
        free(d->placed[i]);
    }
    free(d->placed);
    if (d->fd >= 0)
        close(d->fd);
    /* empty now, or not ours to remove: rmdir refuses anything else */
    if (failed && d->made && d->path != NULL)
        rmdir(d->path);
    free(d->path);
    memset(d, 0, sizeof *d);
    d->fd = -1;
}

/* A compressor the library does not read: its name, or NULL. */
static const char *other_compression(int fd)
{
    unsigned char m[6];
    if (pread(fd, m, sizeof m, 0) != (ssize_t)sizeof m)
        return NULL;
    if (m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd)
        return "zstd";
    if (memcmp(m, "\xfd" "7zXZ\0", 6) == 0)
        return "xz";
    if (m[0] == 'B' && m[1] == 'Z' && m[2] == 'h' && m[3] >= '1' && m[3] <= '9')
        return "bzip2";
    if (m[0] == 0x04 && m[1] == 0x22 && m[2] == 0x4d && m[3] == 0x18)
        return "lz4";
    return NULL;
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

/* Whether standard output is the regular file `path` ("-": standard
 * input) names, as cat checks: `tool IN >> IN` would append to IN what is
 * read from it, and `tool - - < IN >> IN` too. */
static int is_standard_output(const char *path)
{
    struct stat in, out;
    if (fstat(STDOUT_FILENO, &out) != 0 || !S_ISREG(out.st_mode))
        return 0;
    if (strcmp(path, "-") == 0 ? fstat(STDIN_FILENO, &in) != 0 : stat(path, &in) != 0)
        return 0;
    return in.st_dev == out.st_dev && in.st_ino == out.st_ino;
}

int cli_open_reader(const char *path, int *fd, struct hprof_reader **r, struct hprof_error *err)
{
    *fd = -1;
    *r = NULL;
    int rc;
    /* as gzip -d does: a person typing a heap dump is a mistake */
    if (strcmp(path, "-") == 0 && isatty(STDIN_FILENO))
        return hprof_error_set(err, HPROF_ERR_USAGE,
                               "is a terminal; refusing to read a heap dump from it");
    if (is_standard_output(path))
        return hprof_error_set(err, HPROF_ERR_USAGE,
                               "input file is output file (standard output): refusing "
                               "to write into the file being read");
    rc = hprof_input_open_threads(path, input_flags, input_threads, fd, &last_input, err);
    const char *other = rc == HPROF_OK ? other_compression(*fd) : NULL;
    if (other != NULL)
        rc = hprof_error_set(err, HPROF_ERR_FORMAT,
                             "%s-compressed: only gzip is read; decompress it first (%s -d)",
                             other, other);
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
    if (s->gzip_cut)
        fprintf(f, ",\"gzip_cut_offset\":%" PRIu64, s->gzip_cut_offset);
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

uint64_t cli_writeback_step(uint64_t input_size)
{
    uint64_t step = input_size / 64;
    if (input_size == 0 || step > CLI_WRITEBACK_STEP)
        return CLI_WRITEBACK_STEP;
    return step < (1u << 20) ? 1u << 20 : step;
}

int cli_remove_stale_temps(const char *dir)
{
    DIR *d = opendir(dir);
    size_t plen = strlen(CLI_TEMP_PREFIX), slen = strlen(CLI_TEMP_SUFFIX);
    int removed = 0;
    if (d == NULL)
        return 0;
    flock(dirfd(d), LOCK_EX); /* no temporary file between creation and lock */
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n != plen + 6 + slen || strncmp(e->d_name, CLI_TEMP_PREFIX, plen) != 0 ||
            strcmp(e->d_name + n - slen, CLI_TEMP_SUFFIX) != 0)
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        struct stat st;
        if (fd < 0)
            continue;
        /* a live run holds its lock; the lock of a killed one is gone */
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
            unlinkat(dirfd(d), e->d_name, 0) == 0) {
            fprintf(stderr, "%s: removed %s%s%s, a temporary file left by an interrupted run\n",
                    cli_progname, dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
                    cli_quote(e->d_name));
            removed++;
        }
        close(fd);
    }
    closedir(d);
    return removed;
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
