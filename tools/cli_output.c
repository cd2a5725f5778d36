/*
 * cli_output.c - output files for the hprof-* tools.
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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_private.h"

#define MAX_TEMPS 64

/* How long a directory lock is waited for.  Our runs hold one for a few
 * system calls; a lock held longer is someone else's, and the work goes on
 * without it rather than hang (it only keeps a sweep off a file being
 * created or renamed, and a sweep holds it for one readdir). */
#define DIR_LOCK_WAIT_MS 2000
#define DIR_LOCK_POLL_MS 10

/* flock(fd, how) given up after DIR_LOCK_WAIT_MS, and after one try on
 * the directory of the last wait given up (the same holder, most likely).
 * Only that directory: elsewhere, and there once a lock is had again, the
 * holder is one of our runs, whose lock keeps a sweep off our file.
 * @return 0 once locked. */
static int lock_dir_briefly(int fd, int how)
{
    static dev_t given_up_dev;
    static ino_t given_up_ino; /* 0: none given up */
    struct stat st;
    int known = fstat(fd, &st) == 0;
    int given_up = known && st.st_ino == given_up_ino && st.st_dev == given_up_dev;
    for (int waited = 0;; waited += DIR_LOCK_POLL_MS) {
        if (flock(fd, how | LOCK_NB) == 0) {
            if (given_up)
                given_up_ino = 0;
            return 0;
        }
        if (errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        if (given_up || waited >= DIR_LOCK_WAIT_MS) {
            if (known) {
                given_up_dev = st.st_dev;
                given_up_ino = st.st_ino;
            }
            return -1;
        }
        struct timespec pause = { 0, DIR_LOCK_POLL_MS * 1000000L };
        nanosleep(&pause, NULL);
    }
}

/* A temporary file: its name in the directory of descriptor temp_dirs[i]. */
static const char *volatile temp_names[MAX_TEMPS];
static volatile int temp_dirs[MAX_TEMPS];

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

void cli_remove_temps(void)
{
    for (int i = 0; i < MAX_TEMPS; i++)
        if (temp_names[i] != NULL)
            unlinkat(temp_dirs[i], temp_names[i], 0);
}

static void on_signal(int sig)
{
    cli_remove_temps();
    signal(sig, SIG_DFL);
    raise(sig);
}

const int cli_stop_signals[CLI_N_STOP_SIGNALS] = { SIGINT, SIGTERM, SIGHUP };

static void stop_signal_set(sigset_t *set)
{
    sigemptyset(set);
    for (int i = 0; i < CLI_N_STOP_SIGNALS; i++)
        sigaddset(set, cli_stop_signals[i]);
}

void cli_block_stop_signals(sigset_t *before)
{
    sigset_t stops;
    stop_signal_set(&stops);
    pthread_sigmask(SIG_BLOCK, &stops, before);
}

void cli_unblock_stop_signals(const sigset_t *before)
{
    pthread_sigmask(SIG_SETMASK, before, NULL);
}

int cli_catch_signal(int sig, void (*handler)(int), struct sigaction *before)
{
    struct sigaction sa, old;
    memset(&old, 0, sizeof old);
    old.sa_handler = SIG_DFL;
    if (sigaction(sig, NULL, &old) != 0 || old.sa_handler == SIG_IGN) {
        if (before != NULL)
            *before = old;
        return 0;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    stop_signal_set(&sa.sa_mask);
    return sigaction(sig, &sa, before) == 0;
}

void cli_install_signal_handlers(void)
{
    /* nohup(1) and a shell's background jobs ignore SIGHUP or SIGINT for
     * us: such a signal stays ignored, and the run goes on */
    for (int i = 0; i < CLI_N_STOP_SIGNALS; i++)
        cli_catch_signal(cli_stop_signals[i], on_signal, NULL);
    signal(SIGXFSZ, SIG_IGN); /* so does a limit on file size (EFBIG), not a kill */
}

/* A heap dump holds every String of the process: its copy must not be
 * readable by more people than the original.  As gzip does, the output
 * takes the input's permission bits (and, as root, its owner and group);
 * from standard input or a FIFO it stays 0600 (mkstemp()'s mode), less if
 * the umask says so: a FIFO's bits say who may write into it, not who may
 * read the dump behind it. */
static void set_output_mode(int fd, const struct stat *input)
{
    if (input == NULL || !S_ISREG(input->st_mode)) {
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

/* A terminal takes a heap dump only with -f.  @return 0, or EXIT_USAGE
 * with the message printed. */
static int refuse_terminal(int fd, const char *path, int force)
{
    if (!isatty(fd) || force)
        return 0;
    cli_error("%s: refusing to write a heap dump to a terminal (use -f to force)",
              cli_quote(path));
    return EXIT_USAGE;
}

static int input_is_stdin;

void cli_output_set_input_stdin(int on)
{
    input_is_stdin = on;
}

/* OUT, as `st` says it is, must not be the input: `input`, or with no
 * `input` (then OUT keeps mode 0600) and IN standard input, the regular
 * file standard input reads.  @return 0, or EXIT_USAGE with the message
 * printed. */
static int refuse_the_input(const struct stat *st, const struct stat *input, const char *path)
{
    struct stat in;
    if (input == NULL && input_is_stdin && fstat(STDIN_FILENO, &in) == 0 && S_ISREG(in.st_mode))
        input = &in;
    if (input == NULL || st->st_dev != input->st_dev || st->st_ino != input->st_ino)
        return 0;
    cli_error("%s: output is the input; refusing to overwrite it", path);
    return EXIT_USAGE;
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
    int code = refuse_terminal(o->fd, path, force);
    if (code != 0) {
        close(o->fd);
        o->fd = -1;
        return code;
    }
    o->path = strdup(path);
    o->direct = 1;
    return 0;
}

/* The number in `p` if it names one of this process's descriptors
 * (/dev/fd/N, /proc/self/fd/N, /proc/PID/fd/N), else -1. */
static int descriptor_in(const char *p)
{
    char own[40];
    snprintf(own, sizeof own, "/proc/%ld/fd/", (long)getpid());
    static const char *const dirs[] = { "/dev/fd/", "/proc/self/fd/", NULL };
    size_t n = 0;
    for (int i = 0; i < 3 && n == 0; i++) {
        const char *dir = i < 2 ? dirs[i] : own;
        if (strncmp(p, dir, strlen(dir)) == 0)
            n = strlen(dir);
    }
    if (n == 0 || p[n] < '0' || p[n] > '9' || strlen(p + n) > 9)
        return -1;
    for (const char *d = p + n; *d; d++)
        if (*d < '0' || *d > '9')
            return -1;
    return atoi(p + n);
}

int cli_descriptor_named(const char *path)
{
    char hop[PATH_MAX], link[PATH_MAX];
    if (strlen(path) >= sizeof hop)
        return -1;
    strcpy(hop, path);
    for (int hops = 0; hops < 8; hops++) {
        int fd = descriptor_in(hop);
        if (fd >= 0)
            return fd;
        ssize_t len = readlink(hop, link, sizeof link - 1);
        if (len < 0)
            return -1;
        link[len] = '\0';
        const char *slash = strrchr(hop, '/');
        size_t keep = link[0] == '/' || slash == NULL ? 0 : (size_t)(slash - hop) + 1;
        if (keep + (size_t)len >= sizeof hop)
            return -1;
        memcpy(hop + keep, link, (size_t)len + 1); /* a relative link: from its directory */
    }
    return -1;
}

/* Descriptor `fd`, which `path` names, written in place as standard
 * output is (and never closed): replacing the name would replace the
 * system's /dev/stdout link, not write where it leads. */
static int open_descriptor(struct cli_output *o, const char *path, int fd, int force,
                           const struct stat *input)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        cli_error("%s: descriptor %d is not open", cli_quote(path), fd);
        return EXIT_USAGE;
    }
    if (fd == STDERR_FILENO) {
        cli_error("%s: standard error takes the messages, not a heap dump", cli_quote(path));
        return EXIT_USAGE;
    }
    int code = refuse_the_input(&st, input, path);
    if (code == 0)
        code = refuse_terminal(fd, path, force);
    if (code == 0)
        o->fd = fd;
    return code;
}

static void release_output_names(struct cli_output *o)
{
    free(o->path);
    free(o->name);
    free(o->tmp);
    o->path = o->name = o->tmp = NULL;
    o->tmp_name = NULL;
}

static int sweep_stale = 1, sweep_quiet;

void cli_output_set_sweep(int on, int quiet)
{
    sweep_stale = on;
    sweep_quiet = quiet;
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
    int fd = cli_descriptor_named(path);
    if (fd >= 0)
        return open_descriptor(o, path, fd, force, input);
    if (stat(path, &st) == 0) {
        if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
            return open_direct(o, path, force);
        if (S_ISDIR(st.st_mode)) {
            cli_error("%s: is a directory", cli_quote(path));
            return EXIT_USAGE;
        }
        if (refuse_the_input(&st, input, path) != 0)
            return EXIT_USAGE;
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
     * directory we may write in but not read (0300) is still written.
     * A killed run's temporary file there goes first: the one pass's
     * scratch area gives it a size of terabytes, which copies and backups
     * of the directory would choke on. */
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (dir != NULL && sweep_stale)
        cli_remove_stale_temps(dir, sweep_quiet);
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
        lock_dir_briefly(lock_fd, LOCK_SH);
    /* A stop signal between the file's creation and remember_temp() would
     * leave it behind: held until the handler knows the file. */
    sigset_t before;
    cli_block_stop_signals(&before);
    o->fd = create_temp_at(at, o->tmp_name, len - prefix);
    int error = errno;
    if (o->fd >= 0)
        flock(o->fd, LOCK_EX | LOCK_NB);
    if (lock_fd >= 0)
        close(lock_fd); /* and the shared lock with it */
    if (o->fd < 0) {
        cli_unblock_stop_signals(&before);
        cli_error("%s: cannot create a temporary file in its directory: %s", cli_quote(path),
                  strerror(error));
        release_output_names(o);
        return EXIT_IO;
    }
    set_output_mode(o->fd, input);
    int remembered = remember_temp(at, o->tmp_name);
    cli_unblock_stop_signals(&before);
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
    /* From the close, which lets go of the file's lock, to the rename, a
     * run sweeping stale temporary files would take ours for one: the
     * directory is held shared meanwhile, as at the file's creation. */
    int lock_fd = openat(o->at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock_fd >= 0)
        lock_dir_briefly(lock_fd, LOCK_SH);
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
    if (rc != 0)
        cli_output_abort(o);
    if (lock_fd >= 0)
        close(lock_fd);
    if (rc != 0)
        return rc;
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
    if (input == NULL || !S_ISREG(input->st_mode))
        return 0700;
    mode_t bits = input->st_mode & 0777;
    return bits | (bits & 0444) >> 2 | 0300;
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

uint64_t cli_writeback_step(uint64_t input_size)
{
    uint64_t step = input_size / 64;
    if (input_size == 0 || step > CLI_WRITEBACK_STEP)
        return CLI_WRITEBACK_STEP;
    return step < (1u << 20) ? 1u << 20 : step;
}

int cli_remove_stale_temps(const char *dir, int quiet)
{
    DIR *d = opendir(dir);
    size_t plen = strlen(CLI_TEMP_PREFIX), slen = strlen(CLI_TEMP_SUFFIX);
    int removed = 0;
    if (d == NULL)
        return 0;
    /* no temporary file between creation and lock; a directory someone
     * keeps locked is not swept this time */
    if (lock_dir_briefly(dirfd(d), LOCK_EX) != 0) {
        closedir(d);
        return 0;
    }
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
            if (!quiet)
                fprintf(stderr,
                        "%s: removed %s%s%s, a temporary file left by an interrupted run\n",
                        cli_progname, dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
                        cli_quote(e->d_name));
            removed++;
        }
        close(fd);
    }
    closedir(d);
    return removed;
}
