/*
 * batch.c - hprof-shrink -o DIR: every input decided before any work
 * starts (walked, sharded, checked for two inputs writing one output),
 * then shrunk by a child process each, several at once, with one writer
 * of standard output.
 */
#define _GNU_SOURCE /* open_memstream() */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "batch.h"

/* A running child: its pid, its job, and the read end of the pipe its
 * standard output goes to, with the part of a line not yet complete. */
struct child {
    pid_t pid;              /* 0: a free slot */
    size_t job;
    int from;               /* -1 once the child closed it */
    char *pending;
    size_t len, cap;
};

#define MAX_CHILDREN 256

/* One batch run. */
struct tally {
    size_t shrunk, failed, skipped;
};

struct batch {
    struct options *o;
    struct file_list list;
    struct tally tally;
    int worst;                  /* the exit code so far */
    struct stat out_dir;        /* the output directory: not walked */
    struct child *slots;        /* n_slots of them */
    unsigned n_slots, running;
    unsigned max_running;       /* n_slots, or fewer once fork() said EAGAIN */
    size_t next;                /* the next job to start */
    struct sigaction old_stop[CLI_N_STOP_SIGNALS]; /* what the children restore */
    int signal_passed_on;
    /* Standard output has one writer, the parent: children send their
     * lines through a pipe, and each line goes out in one write(), so
     * that no other line lands inside it however long it is.  The first
     * write error is kept for the exit status. */
    int out_error;
};

/* A signal handler has no context: the one signal that stops the batch. */
static volatile sig_atomic_t batch_signal;

static void on_batch_signal(int sig)
{
    batch_signal = sig;
}

/* Directory `dir`, just made, synced into its parent: an output synced
 * into a directory whose own name a crash loses is lost too.  A parent we
 * may write in but not read cannot be synced and is left so: a lost
 * directory only means outputs the next run makes again, never one that
 * passes for done.  (One another process of the batch made is synced by
 * that one, just after.)  @return 1, or 0 with errno set. */
static int new_dir_synced(const char *dir)
{
    return cli_sync_directory_of(dir) == 0 || errno == EACCES || errno == EPERM;
}

/* mkdir -p of `path` itself (dir = 1) or of its directory part, each new
 * directory made with `mode` (no more open than the inputs: see
 * cli_directory_mode()) and synced into its parent with `sync`. */
static int make_dirs(const char *path, int dir, int sync, mode_t mode)
{
    char *p0 = strdup(path);
    int rc = 0, first_error = 0;
    if (p0 == NULL)
        return -1;
    for (char *p = p0 + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        if (*p == '\0' && !dir)
            break;
        char c = *p;
        *p = '\0';
        if (mkdir(p0, mode) == 0 ? sync && !new_dir_synced(p0) : errno != EEXIST) {
            first_error = rc == 0 ? errno : first_error;
            rc = -1;
        }
        *p = c;
        if (c == '\0')
            break;
    }
    free(p0);
    if (rc != 0)
        errno = first_error; /* what the caller reports */
    return rc;
}

/* The directory of output `out`, in memory of its own ("." for a bare
 * name), or NULL. */
static char *output_dir(const char *out)
{
    char *slash = strrchr(out, '/');
    if (slash == NULL)
        return strdup(".");
    char *dir = strdup(out);
    if (dir != NULL)
        dir[slash == out ? 1 : slash - out] = '\0';
    return dir;
}

/* Every directory that will hold outputs, once: stale temporary files of
 * killed runs there are removed. */
static void clean_output_dirs(const struct file_list *l, int quiet)
{
    char *last = NULL;
    for (size_t i = 0; i < l->n; i++) {
        if (l->jobs[i].out == NULL)
            continue;
        char *dir = output_dir(l->jobs[i].out);
        if (dir == NULL)
            break;
        if (last == NULL || strcmp(last, dir) != 0) {
            cli_remove_stale_temps(dir, quiet);
            free(last);
            last = dir;
        } else {
            free(dir);
        }
    }
    free(last);
}

/* The output directory's mode: what every input named on the command
 * line lets read (a directory input, its files' mode is not known yet). */
static mode_t inputs_directory_mode(const struct options *o)
{
    struct stat all = { .st_mode = S_IFREG | 0777 }, st;
    int any = 0;
    for (int i = 0; i < o->n_inputs; i++)
        if (stat(o->inputs[i], &st) == 0) {
            all.st_mode &= (st.st_mode & 0777) | S_IFMT;
            any = 1;
        }
    return cli_directory_mode(any ? &all : NULL);
}

/* ---- Standard output ---------------------------------------------------------- */

static void write_line(struct batch *b, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(STDOUT_FILENO, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (b->out_error == 0)
                b->out_error = k < 0 ? errno : EIO;
            return;
        }
        p += k;
        n -= (size_t)k;
    }
}

/* A line built in memory, then written whole. */
struct line {
    char *buf;
    size_t len;
    FILE *f;
};

static FILE *line_open(struct line *l)
{
    l->buf = NULL;
    l->len = 0;
    l->f = open_memstream(&l->buf, &l->len);
    return l->f;
}

static void line_emit(struct batch *b, struct line *l)
{
    if (l->f == NULL || fclose(l->f) != 0) {
        cli_error("out of memory");
        if (b->out_error == 0)
            b->out_error = ENOMEM;
    } else {
        write_line(b, l->buf, l->len);
    }
    free(l->buf);
}

static const char *exit_class(int code)
{
    switch (code) {
    case EXIT_OK: return "ok";
    case EXIT_INVALID: return "invalid input";
    case EXIT_USAGE: return "usage";
    default: return "I/O error";
    }
}

/* With --json, one object for an input that was not shrunk.  `offset`:
 * from "offset 0x..." in the message, if any. */
static void json_unshrunk(struct batch *b, const char *in, const char *out, int failed,
                          int code, const char *reason)
{
    struct line l;
    FILE *f = line_open(&l);
    if (f == NULL) {
        line_emit(b, &l);
        return;
    }
    json_open(f, b->o);
    fprintf(f, "\"input\":");
    cli_json_string(f, in, strlen(in));
    fprintf(f, ",\"output\":");
    if (out)
        cli_json_string(f, out, strlen(out));
    else
        fprintf(f, "null");
    fprintf(f, ",\"status\":\"%s\"", failed ? "failed" : "skipped");
    fprintf(f, ",\"%s\":", failed ? "error" : "reason");
    cli_json_string(f, reason, strlen(reason));
    if (failed) {
        const char *at = strstr(reason, "offset 0x");
        if (at != NULL)
            fprintf(f, ",\"offset\":%llu", strtoull(at + 9, NULL, 16));
        else
            fprintf(f, ",\"offset\":null");
        fprintf(f, ",\"exit\":%d,\"class\":\"%s\"", code, exit_class(code));
    }
    fprintf(f, "}\n");
    line_emit(b, &l);
}

/* An input that was not shrunk: skipped on stdout (text), failed on stderr,
 * and with --json an object on stdout. */
static void report_unshrunk(struct batch *b, const char *in, const char *out, int failed,
                            int code, const char *reason)
{
    if (!failed && !b->o->json) {
        struct line l;
        FILE *f = line_open(&l);
        if (f != NULL)
            fprintf(f, "%s%s%s: %s\n", cli_quote(in), out ? " -> " : "",
                    out ? cli_quote(out) : "", reason);
        line_emit(b, &l);
    }
    if (failed)
        cli_error("%s: %s", cli_quote(in), reason);
    if (b->o->json)
        json_unshrunk(b, in, out, failed, code, reason);
}

/* The last line: how many of each, unless a signal stopped the batch. */
static void report_totals(struct batch *b)
{
    const struct tally *t = &b->tally;
    struct line sum;
    FILE *f = line_open(&sum);
    if (f != NULL && b->o->json) {
        json_open(f, b->o);
        fprintf(f, "\"shrunk\":%zu,\"failed\":%zu,\"skipped\":%zu,\"exit\":%d}\n", t->shrunk,
                t->failed, t->skipped, b->worst);
    } else if (f != NULL) {
        if (b->o->shard_count != 0)
            fprintf(f, "shard %u/%u: ", b->o->shard_index, b->o->shard_count);
        fprintf(f, "%zu shrunk, %zu failed, %zu skipped\n", t->shrunk, t->failed, t->skipped);
    }
    line_emit(b, &sum);
}

/* ---- Children ----------------------------------------------------------------- */

static int run_one_child(struct batch *b, const struct job *j)
{
    struct options *o = b->o;
    o->in = j->in;
    o->out = j->out;
    o->threads = 1;         /* the parallelism is across files */
    o->force = 1;           /* the up-to-date check decided */
    struct stat in_st;
    mode_t mode = cli_directory_mode(stat(j->in, &in_st) == 0 ? &in_st : NULL);
    if (make_dirs(j->out, 0, o->sync != 0, mode) != 0) { /* batch mode syncs unless --no-sync */
        char reason[256];
        snprintf(reason, sizeof reason, "cannot create the output's directory: %s",
                 strerror(errno));
        report_unshrunk(b, j->in, j->out, 1, EXIT_IO, reason);
        return EXIT_IO;
    }
    /* whatever fails says so on stderr, and its first message is the
     * error: not one the parent said before the fork */
    cli_first_error[0] = '\0';
    int code = shrink_file(o);
    if (code != 0 && o->json)
        json_unshrunk(b, j->in, j->out, 1, code, cli_first_error[0] ? cli_first_error : "failed");
    return code;
}

/* Write each complete line the child sent; with `eof`, the rest too. */
static void pass_lines_on(struct batch *b, struct child *c, int eof)
{
    size_t start = 0;
    for (size_t i = 0; i < c->len; i++)
        if (c->pending[i] == '\n') {
            write_line(b, c->pending + start, i + 1 - start);
            start = i + 1;
        }
    if (eof && start < c->len) {
        write_line(b, c->pending + start, c->len - start);
        write_line(b, "\n", 1);
        start = c->len;
    }
    memmove(c->pending, c->pending + start, c->len - start);
    c->len -= start;
}

/* Read what the child sent; @return 0, or 1 once it closed the pipe. */
static int read_child(struct batch *b, struct child *c)
{
    if (c->cap - c->len < 4096) {
        size_t cap = c->cap ? c->cap * 2 : 16384;
        char *p = realloc(c->pending, cap);
        if (p == NULL) { /* pass on what there is, cut */
            write_line(b, c->pending, c->len);
            c->len = 0;
        } else {
            c->pending = p;
            c->cap = cap;
        }
    }
    ssize_t n = read(c->from, c->pending + c->len, c->cap - c->len);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : 1;
    c->len += (size_t)n;
    pass_lines_on(b, c, n == 0);
    return n == 0;
}

/* In the child, after fork(): the parent's signal handling undone, the
 * other children's pipes closed, standard output the pipe `fds`. */
_Noreturn static void child_main(struct batch *b, size_t i, const int fds[2],
                                 const sigset_t *mask)
{
    for (int k = 0; k < CLI_N_STOP_SIGNALS; k++)
        sigaction(cli_stop_signals[k], &b->old_stop[k], NULL);
    cli_unblock_stop_signals(mask);
    for (unsigned k = 0; k < b->n_slots; k++)
        if (b->slots[k].pid > 0 && b->slots[k].from >= 0)
            close(b->slots[k].from);
    close(fds[0]);
    if (dup2(fds[1], STDOUT_FILENO) < 0)
        _exit(EXIT_IO);
    close(fds[1]);
    _exit(run_one_child(b, &b->list.jobs[i]));
}

static void take_slot(struct batch *b, pid_t pid, size_t i, int from)
{
    for (unsigned k = 0; k < b->n_slots; k++)
        if (b->slots[k].pid == 0) {
            b->slots[k].pid = pid;
            b->slots[k].job = i;
            b->slots[k].from = from;
            b->slots[k].len = 0;
            return;
        }
}

/* Starts job `i` in a free slot, its standard output a pipe to us.
 * @return 0, or -1 with errno set. */
static int start_child(struct batch *b, size_t i)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(stdout);
    /* A signal between fork() and the child's own handlers would reach
     * only the parent's, which a child ignores: held until both sides
     * have theirs, it reaches each. */
    sigset_t before;
    cli_block_stop_signals(&before);
    pid_t pid = fork();
    if (pid == 0)
        child_main(b, i, fds, &before);
    int error = errno;
    close(fds[1]);
    if (pid < 0) {
        cli_unblock_stop_signals(&before);
        close(fds[0]);
        errno = error;
        return -1;
    }
    take_slot(b, pid, i, fds[0]);
    cli_unblock_stop_signals(&before);
    return 0;
}

/* Waits for output from the children, or a signal; reaps a child once
 * its pipe is closed.  @return its slot, or -1 (nothing reaped). */
static int reap_child(struct batch *b, int *status)
{
    struct pollfd pfd[MAX_CHILDREN];
    unsigned slot_of[MAX_CHILDREN], n = 0;
    for (unsigned k = 0; k < b->n_slots && n < MAX_CHILDREN; k++)
        if (b->slots[k].pid > 0) {
            pfd[n].fd = b->slots[k].from;
            pfd[n].events = POLLIN;
            slot_of[n++] = k;
        }
    for (unsigned i = 0; i < n; i++) /* closed already: reap it */
        if (pfd[i].fd < 0) {
            struct child *c = &b->slots[slot_of[i]];
            if (waitpid(c->pid, status, 0) < 0 && errno == EINTR)
                return -1;
            c->pid = 0;
            return (int)slot_of[i];
        }
    if (poll(pfd, n, -1) < 0)
        return -1;
    for (unsigned i = 0; i < n; i++) {
        struct child *c = &b->slots[slot_of[i]];
        if (pfd[i].revents && read_child(b, c)) {
            close(c->from);
            c->from = -1;
        }
    }
    errno = 0;
    return -1;
}

/* ---- The run ------------------------------------------------------------------ */

static void note_failure(struct batch *b, int code)
{
    b->tally.failed++;
    if (code > b->worst)
        b->worst = code;
}

/* The next job: reported when decided already or up to date, else
 * started in a child. */
static void start_next(struct batch *b)
{
    struct job *j = &b->list.jobs[b->next];
    size_t i = b->next++;
    if (j->state != JOB_TODO) {
        int failed = j->state == JOB_FAILED;
        report_unshrunk(b, j->in, j->out, failed, j->code, j->reason);
        if (failed)
            note_failure(b, j->code);
        else
            b->tally.skipped++;
    } else if (!b->o->force && up_to_date(j->in, j->out)) {
        report_unshrunk(b, j->in, j->out, 0, 0, "skipped, up to date (use -f)");
        b->tally.skipped++;
    } else if (start_child(b, i) != 0) {
        if ((errno == EAGAIN || errno == ENOMEM) && b->running > 0) {
            /* a limit on processes (ulimit -u, a cgroup's pids.max): as
             * many at once as the system lets run, this one again later */
            b->max_running = b->running;
            b->next = i;
            return;
        }
        char reason[256];
        snprintf(reason, sizeof reason, "cannot start: %s", strerror(errno));
        report_unshrunk(b, j->in, j->out, 1, EXIT_IO, reason);
        note_failure(b, EXIT_IO);
    } else {
        b->running++;
    }
}

/* A child killed by a signal it could not handle (SIGKILL, a crash) left
 * its temporary file: its lock went with it, so the sweep takes it now
 * rather than at the next run in that directory. */
static void remove_temps_of(const struct batch *b, const struct job *j)
{
    char *dir = j->out != NULL ? output_dir(j->out) : NULL;
    if (dir != NULL)
        cli_remove_stale_temps(dir, b->o->quiet);
    free(dir);
}

/* Waits for a child to end and counts it; on a signal, starts nothing
 * more and passes it on to the children (a kill(1) of the parent alone
 * reaches only the parent). */
static void wait_one(struct batch *b)
{
    if (batch_signal && b->next < b->list.n)
        b->next = b->list.n;
    if (batch_signal && !b->signal_passed_on) {
        for (unsigned k = 0; k < b->n_slots; k++)
            if (b->slots[k].pid > 0)
                kill(b->slots[k].pid, batch_signal);
        b->signal_passed_on = 1;
    }
    int status;
    int k = reap_child(b, &status);
    if (k < 0)
        return; /* a signal: passed on above, on the next round */
    size_t which = b->slots[k].job;
    b->running--;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_IO;
    if (code == 0) {
        b->tally.shrunk++;
        return;
    }
    note_failure(b, code);
    /* a child that died of a signal could not say so itself */
    if (WIFSIGNALED(status) && !batch_signal && which < b->list.n) {
        char reason[64];
        snprintf(reason, sizeof reason, "killed by signal %d", WTERMSIG(status));
        report_unshrunk(b, b->list.jobs[which].in, b->list.jobs[which].out, 1, code, reason);
        remove_temps_of(b, &b->list.jobs[which]);
    }
}

/* The output directory, made before the walk so that the walk can leave
 * it out when it lies inside an input directory.  @return 0 or an exit
 * code (message printed). */
static int make_out_dir(struct batch *b)
{
    const struct options *o = b->o;
    if (make_dirs(o->out_dir, 1, o->sync != 0, inputs_directory_mode(o)) != 0 ||
        stat(o->out_dir, &b->out_dir) != 0) {
        cli_error("%s: cannot create the output directory: %s", cli_quote(o->out_dir),
                  strerror(errno));
        return EXIT_IO;
    }
    if (!S_ISDIR(b->out_dir.st_mode))
        return cli_usage_error("%s: not a directory", cli_quote(o->out_dir));
    return 0;
}

/* Children die of a stop signal removing their temporary files (the
 * handlers of cli.c); the parent stops starting new ones and waits.  One
 * ignored (nohup, a background job) stays ignored, by children too. */
static void catch_stop_signals(struct batch *b)
{
    for (int i = 0; i < CLI_N_STOP_SIGNALS; i++)
        cli_catch_signal(cli_stop_signals[i], on_batch_signal, &b->old_stop[i]);
}

static void run_jobs(struct batch *b)
{
    b->slots = calloc(b->n_slots, sizeof *b->slots);
    if (b->slots == NULL) {
        b->worst = EXIT_IO;
        return;
    }
    /* A file's own usage error (say --dump=N past its dumps) fails that
     * file alone: the others go on, and every child is reaped. */
    while (b->next < b->list.n || b->running > 0) {
        if (b->next < b->list.n && b->running < b->max_running && !batch_signal)
            start_next(b);
        else
            wait_one(b);
    }
    for (unsigned k = 0; k < b->n_slots; k++)
        free(b->slots[k].pending);
    free(b->slots);
}

int run_batch(struct options *o)
{
    struct batch b = { .o = o };
    unsigned jobs = o->threads ? o->threads : (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    b.n_slots = jobs < 1 ? 1 : jobs > MAX_CHILDREN ? MAX_CHILDREN : jobs;
    b.max_running = b.n_slots;
    o->batch = 1;
    int code = make_out_dir(&b);
    if (code != 0)
        return code;
    /* what could be decided is reported even when deciding failed */
    b.worst = collect_inputs(o, &b.out_dir, &b.list);
    int usage = b.worst == EXIT_USAGE; /* the command line itself: nothing runs */
    if (b.worst == 0)
        clean_output_dirs(&b.list, o->quiet);
    catch_stop_signals(&b);
    if (!usage)
        run_jobs(&b);
    if (!batch_signal && !usage)
        report_totals(&b);
    if (b.out_error != 0) {
        cli_error("standard output: write error: %s", strerror(b.out_error));
        b.worst = EXIT_IO;
    }
    free_jobs(&b.list);
    if (batch_signal) {
        signal(batch_signal, SIG_DFL);
        raise(batch_signal);
    }
    return b.worst;
}
