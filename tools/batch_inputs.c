/*
 * batch_inputs.c - what batch mode is to do: the inputs named and, with
 * -r, the dumps found walking directories, each with its output's name,
 * and what is skipped or failed before any work starts.
 */
#define _GNU_SOURCE /* st_mtim, strndup() */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/xattr.h>

#include "batch.h"

/* One walk of the inputs: what it fills, and what it leaves out. */
struct walk {
    const struct options *o;
    const struct stat *out_dir;     /* the output directory: not walked */
    struct file_list *list;
};

/* ---- Names ------------------------------------------------------------------ */

int ends_with_nocase(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

/* *.hprof, *.hprof.gz and *.hprof.zst, in any case (ANDROID.HPROF). */
static int is_dump_name(const char *path)
{
    return ends_with_nocase(path, ".hprof") || ends_with_nocase(path, ".hprof.gz") ||
           ends_with_nocase(path, ".hprof.zst");
}

size_t compressed_suffix_len(const char *name)
{
    return ends_with_nocase(name, ".gz") ? 3 : ends_with_nocase(name, ".zst") ? 4 : 0;
}

const char *output_suffix(const struct options *o)
{
    return o->gzip_level ? ".gz" : o->zstd_level ? ".zst" : "";
}

/* Whether the input at REL (its path below the root named on the command
 * line, or its base name) is this run's under --shard.  The hash is FNV-1a
 * of REL without ".gz" or ".zst": the same on every machine and in every
 * run, and the same for x.hprof, x.hprof.gz and x.hprof.zst, which would
 * write one output, so
 * that they meet in one shard, where find_collisions() sees them.  A file
 * added to the tree lands in exactly one shard; the others are unmoved. */
static int in_my_shard(const struct options *o, const char *rel)
{
    if (o->shard_count == 0)
        return 1;
    while (*rel == '/')
        rel++;
    size_t n = strlen(rel) - compressed_suffix_len(rel);
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)rel[i];
        h *= 0x100000001b3u;
    }
    return h % o->shard_count == o->shard_index;
}

char *output_name(const char *dir, const char *rel, const char *suffix)
{
    size_t dn = strlen(dir);
    while (dn > 1 && dir[dn - 1] == '/')
        dn--;
    while (*rel == '/')
        rel++;
    size_t n = strlen(rel) - compressed_suffix_len(rel);
    size_t len = dn + 1 + n + strlen(suffix) + 1;
    char *out = malloc(len);
    if (out != NULL)
        snprintf(out, len, "%.*s%s%.*s%s", (int)dn, dir, dir[dn - 1] == '/' ? "" : "/", (int)n,
                 rel, suffix);
    return out;
}

/* ---- Up to date ------------------------------------------------------------- */

/* What says that an input is the one an output was made from, recorded
 * with the output in an extended attribute: its size, mtime and ctime
 * to the nanosecond.  An input replaced by `cp -p` or `rsync -a` keeps
 * its mtime (and often its size) but never its ctime, which no one can
 * set; the ctime also moves on chmod or a new link, which costs a redo,
 * never a stale output.  The attribute survives a rename and is read the
 * same on every machine that shares the tree. */
#define INPUT_IDENTITY_XATTR "user.hprof-shrink.input"
#define INPUT_IDENTITY_MAX 128

static void input_identity(char *buf, size_t len, const struct stat *st)
{
    snprintf(buf, len, "size=%lld mtime=%lld.%09ld ctime=%lld.%09ld", (long long)st->st_size,
             (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec,
             st->st_ctim.tv_nsec);
}

/* A user attribute needs write permission, which the output of a
 * read-only input lacks (it has the input's bits): lent for the write. */
static int set_identity(int out_fd, const char *id)
{
    struct stat st;
    if (fsetxattr(out_fd, INPUT_IDENTITY_XATTR, id, strlen(id), 0) == 0)
        return 0;
    if (errno != EACCES || fstat(out_fd, &st) != 0 || (st.st_mode & S_IWUSR) ||
        fchmod(out_fd, (st.st_mode & 07777) | S_IWUSR) != 0) {
        errno = EACCES;
        return -1;
    }
    int rc = fsetxattr(out_fd, INPUT_IDENTITY_XATTR, id, strlen(id), 0);
    int error = errno;
    (void)fchmod(out_fd, st.st_mode & 07777);
    errno = error;
    return rc;
}

void record_input_identity(int out_fd, const char *out, const struct stat *in)
{
    char id[INPUT_IDENTITY_MAX];
    input_identity(id, sizeof id, in);
    if (set_identity(out_fd, id) != 0 && errno != ENOTSUP)
        cli_error("warning: %s: cannot record its input's identity: %s", cli_quote(out),
                  strerror(errno));
}

/* An output is up to date when it records the identity its input has
 * now (input_identity()).  One without the record (made by an older
 * version, or on a file system without user extended attributes) is up
 * to date when it is newer than its input.  A FIFO or socket never is:
 * what it brings is new each time; nor is anything at OUT but a file. */
int up_to_date(const char *in, const char *out)
{
    struct stat si, so;
    char now[INPUT_IDENTITY_MAX], recorded[INPUT_IDENTITY_MAX];
    if (stat(in, &si) != 0 || !S_ISREG(si.st_mode) || stat(out, &so) != 0 ||
        !S_ISREG(so.st_mode))
        return 0;
    ssize_t n = getxattr(out, INPUT_IDENTITY_XATTR, recorded, sizeof recorded - 1);
    if (n >= 0) {
        recorded[n] = '\0';
        input_identity(now, sizeof now, &si);
        return strcmp(now, recorded) == 0;
    }
    return so.st_mtim.tv_sec > si.st_mtim.tv_sec ||
           (so.st_mtim.tv_sec == si.st_mtim.tv_sec && so.st_mtim.tv_nsec > si.st_mtim.tv_nsec);
}

/* ---- The list of jobs ------------------------------------------------------- */

static struct job *add_job(struct file_list *l, const char *in, char *out, int state, int code,
                           const char *reason)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        struct job *a = realloc(l->jobs, cap * sizeof *a);
        if (a == NULL)
            return NULL;
        l->jobs = a;
        l->cap = cap;
    }
    struct job *j = &l->jobs[l->n];
    j->in = strdup(in);
    j->out = out;
    j->state = state;
    j->code = code;
    j->reason = reason ? strdup(reason) : NULL;
    if (j->in == NULL || (reason != NULL && j->reason == NULL)) {
        free(j->in);
        free(j->reason);
        return NULL;
    }
    l->n++;
    return j;
}

/* A dump to shrink into its output under -o; @return 0, or -1 out of memory. */
static int add_todo(struct walk *w, const char *in, const char *rel)
{
    char *out = output_name(w->o->out_dir, rel, output_suffix(w->o));
    if (out == NULL || add_job(w->list, in, out, JOB_TODO, 0, NULL) == NULL) {
        free(out);
        return -1;
    }
    return 0;
}

void free_jobs(struct file_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->jobs[i].in);
        free(l->jobs[i].out);
        free(l->jobs[i].reason);
    }
    free(l->jobs);
}

/* ---- The walk (-r) ---------------------------------------------------------- */

/* What the walk meets, as lstat() sees it (symbolic links not followed). */
enum walk_kind { WALK_DIR, WALK_UNREADABLE_DIR, WALK_NO_STAT, WALK_LINK, WALK_FILE };

/* A symbolic link named as a dump is followed to a regular file; to
 * anything else, it is said why not. */
static int walk_link(struct walk *w, const char *path, const char *rel)
{
    struct stat target;
    char reason[256];
    if (!is_dump_name(path))
        return 0;
    if (stat(path, &target) != 0) {
        snprintf(reason, sizeof reason, "skipped, a symbolic link to nothing (%s)",
                 strerror(errno));
        return add_job(w->list, path, NULL, JOB_SKIPPED, 0, reason) ? 0 : -1;
    }
    if (!S_ISREG(target.st_mode))
        return add_job(w->list, path, NULL, JOB_SKIPPED, 0,
                       "skipped, a symbolic link to something that is not a regular file")
                   ? 0 : -1;
    return add_todo(w, path, rel);
}

static int walk_file(struct walk *w, const char *path, const char *rel, const struct stat *st)
{
    char reason[256];
    if (!is_dump_name(path))
        return 0;
    if (S_ISREG(st->st_mode))
        return add_todo(w, path, rel);
    /* a FIFO would block the batch; a device has no end */
    snprintf(reason, sizeof reason, "skipped, not a regular file (%s)",
             S_ISFIFO(st->st_mode) ? "a FIFO" : S_ISSOCK(st->st_mode) ? "a socket" :
             S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) ? "a device" : "special");
    return add_job(w->list, path, NULL, JOB_SKIPPED, 0, reason) ? 0 : -1;
}

/* One entry other than a directory to descend into.  `error`: errno of
 * what failed (the unreadable directory's opendir(), the lstat()).
 * @return 0, or -1 out of memory. */
static int walk_entry(struct walk *w, const char *path, const char *rel, enum walk_kind kind,
                      const struct stat *st, int error)
{
    char reason[256];
    if (!in_my_shard(w->o, rel))
        return 0;
    switch (kind) {
    case WALK_UNREADABLE_DIR:
        snprintf(reason, sizeof reason, "cannot read this directory: %s", strerror(error));
        return add_job(w->list, path, NULL, JOB_FAILED, EXIT_IO, reason) ? 0 : -1;
    case WALK_NO_STAT:
        snprintf(reason, sizeof reason, "cannot stat: %s", strerror(error));
        return add_job(w->list, path, NULL, JOB_FAILED, EXIT_IO, reason) ? 0 : -1;
    case WALK_LINK: return walk_link(w, path, rel);
    case WALK_FILE: return walk_file(w, path, rel, st);
    default: return 0;
    }
}

static enum walk_kind kind_of(const struct stat *st)
{
    return S_ISDIR(st->st_mode) ? WALK_DIR : S_ISLNK(st->st_mode) ? WALK_LINK : WALK_FILE;
}

static int walk_path(struct walk *w, char *path, size_t root_len, int level,
                     const struct stat *st);

/* The names in directory `d` but . and .., read whole so that the walk
 * holds one directory open at a time however deep the tree.  @return
 * their count, or -1 (errno set). */
static ssize_t read_names(DIR *d, char ***names)
{
    size_t n = 0, cap = 0;
    struct dirent *e;
    *names = NULL;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            char **a = realloc(*names, cap * sizeof *a);
            if (a == NULL)
                break;
            *names = a;
        }
        if (((*names)[n] = strdup(e->d_name)) == NULL)
            break;
        n++;
    }
    if (e == NULL)
        return (ssize_t)n;
    while (n > 0)
        free((*names)[--n]);
    free(*names);
    errno = ENOMEM;
    return -1;
}

/* Entry `name` of directory `dir`.  An entry that cannot be looked at
 * (vanished, not allowed, a path past PATH_MAX) fails on its own, counted
 * and reported as any failed input; only memory running out stops the
 * walk.  @return 0, or -1 (errno set). */
static int walk_child(struct walk *w, const char *dir, const char *name, size_t root_len,
                      int level)
{
    char *child = malloc(strlen(dir) + strlen(name) + 2);
    if (child == NULL) {
        errno = ENOMEM;
        return -1;
    }
    sprintf(child, "%s/%s", dir, name);
    struct stat st;
    int rc;
    if (lstat(child, &st) == 0) {
        rc = walk_path(w, child, root_len, level + 1, &st);
    } else if (errno != ENOMEM) {
        const char *rel = child + (strlen(child) > root_len ? root_len : strlen(child));
        rc = walk_entry(w, child, rel, WALK_NO_STAT, NULL, errno);
        if (rc != 0)
            errno = ENOMEM;
    } else {
        rc = -1;
    }
    int error = errno;
    free(child);
    errno = error;
    return rc;
}

/* The directory at `path`, opened as `d` (closed here); the order of its
 * entries does not matter, the caller sorts.  @return 0, or -1 (errno
 * ENOMEM: out of memory; else a directory that cannot be walked). */
static int walk_dir(struct walk *w, DIR *d, const char *path, size_t root_len, int level)
{
    char **names;
    ssize_t n = read_names(d, &names);
    int error = errno;
    closedir(d);
    if (n < 0) {
        errno = error;
        return -1;
    }
    int rc = 0;
    for (ssize_t i = 0; i < n; i++) {
        if (rc == 0)
            rc = walk_child(w, path, names[i], root_len, level);
        error = errno;
        free(names[i]);
    }
    free(names);
    errno = error;
    return rc;
}

/* Directory or not, `path` (lstat() in `st`): the output directory is left
 * out (our own outputs, from this run or an earlier one; IN itself as the
 * output directory would overwrite every input). */
static int walk_path(struct walk *w, char *path, size_t root_len, int level,
                     const struct stat *st)
{
    const char *rel = path + (strlen(path) > root_len ? root_len : strlen(path));
    if (kind_of(st) != WALK_DIR) {
        int rc = walk_entry(w, path, rel, kind_of(st), st, 0);
        if (rc != 0)
            errno = ENOMEM;
        return rc;
    }
    DIR *d = opendir(path);
    if (d == NULL) {
        if (errno == ENOMEM)
            return -1;
        if (walk_entry(w, path, rel, WALK_UNREADABLE_DIR, st, errno) == 0)
            return 0;
        errno = ENOMEM;
        return -1;
    }
    if (st->st_dev != w->out_dir->st_dev || st->st_ino != w->out_dir->st_ino)
        return walk_dir(w, d, path, root_len, level);
    closedir(d);
    if (level == 0 && add_job(w->list, path, NULL, JOB_FAILED, EXIT_USAGE,
                              "is the output directory: choose another -o") == NULL) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

static int compare_jobs_by_input(const void *a, const void *b)
{
    return strcmp(((const struct job *)a)->in, ((const struct job *)b)->in);
}

/* Every dump under directory `root`, in a stable order whatever the
 * directory order.  @return 0 or an exit code (message printed). */
static int walk_root(struct walk *w, const char *root)
{
    size_t n = strlen(root), before = w->list->n;
    while (n > 1 && root[n - 1] == '/')
        n--;
    char *path = strndup(root, n);
    struct stat st;
    int rc = path == NULL ? (errno = ENOMEM, -1) : lstat(path, &st);
    if (rc == 0)
        rc = walk_path(w, path, n + (path[n - 1] != '/'), 0, &st);
    free(path);
    if (rc != 0 && errno == ENOMEM) {
        cli_error("out of memory");
        return EXIT_IO;
    }
    if (rc != 0) {
        cli_error("%s: cannot walk: %s", cli_quote(root), strerror(errno));
        return EXIT_IO;
    }
    qsort(w->list->jobs + before, w->list->n - before, sizeof *w->list->jobs,
          compare_jobs_by_input);
    return 0;
}

/* ---- Deciding ------------------------------------------------------------- */

/* By output, and among the inputs of one output in the order of the list:
 * the order of the command line (a directory's dumps sorted by path), so
 * that the first of a group is the first named. */
static int compare_by_output(const void *a, const void *b)
{
    const struct job *x = *(const struct job *const *)a, *y = *(const struct job *const *)b;
    int c = strcmp(x->out, y->out);
    return c ? c : (x < y ? -1 : x > y);
}

/* Job `j` decided before any work: `state` with `code`, for the reason
 * `fmt` formats.  @return 0, or -1 out of memory. */
static int decide(struct job *j, int state, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int decide(struct job *j, int state, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *reason = len < 0 ? NULL : malloc((size_t)len + 1);
    if (reason == NULL)
        return -1;
    va_start(ap, fmt);
    vsnprintf(reason, (size_t)len + 1, fmt, ap);
    va_end(ap);
    free(j->reason);
    j->reason = reason;
    j->state = state;
    j->code = code;
    return 0;
}

/* For each job of group[0..n), which would all write one output, the index
 * of the first in the group that names the same file (device and inode;
 * its own index when it is the first, or cannot be looked at).  @return
 * how many files the group names, or -1 out of memory. */
static long same_files(struct job *const *group, size_t n, size_t *first)
{
    struct stat *st = malloc(n * sizeof *st);
    long files = 0;
    if (st == NULL)
        return -1;
    for (size_t k = 0; k < n; k++) {
        if (stat(group[k]->in, &st[k]) != 0) /* no inode is 0: matches nothing */
            memset(&st[k], 0, sizeof st[k]);
        for (first[k] = 0; first[k] < k; first[k]++)
            if (st[k].st_ino != 0 && first[first[k]] == first[k] &&
                st[first[k]].st_dev == st[k].st_dev && st[first[k]].st_ino == st[k].st_ino)
                break;
        files += first[k] == k;
    }
    free(st);
    return files;
}

/* Jobs group[0..n), in the order named, which would all write one output.
 * When they name two files or more, none may write it: every name fails,
 * naming the first name of another file (a file's other names fail as its
 * first does, for the same reason: none of them is shrunk).  When they
 * name one file (by other paths, or in a directory given twice), it is
 * shrunk once, under its first name, and the others are skipped naming it.
 * @return 0, or -1 out of memory. */
static int decide_group(struct job **group, size_t n)
{
    size_t *first = malloc(n * sizeof *first), second = 1;
    long files = first != NULL ? same_files(group, n, first) : -1;
    int rc = files < 0 ? -1 : 0;
    while (files > 1 && first[second] != second) /* the second file's first name */
        second++;
    for (size_t k = 0; rc == 0 && k < n; k++) {
        struct job *j = group[k];
        if (files > 1) /* the first file's names name the second file, the others the first */
            rc = decide(j, JOB_FAILED, EXIT_INVALID, "skipped: %s would write %s too%s",
                        cli_quote(group[first[k] == 0 ? second : 0]->in), cli_quote(j->out),
                        files > 2 ? " (and others)" : "");
        else if (first[k] != k)
            rc = decide(j, JOB_SKIPPED, 0, "skipped, the same file as %s",
                        cli_quote(group[first[k]]->in));
    }
    free(first);
    return rc;
}

/* Two files must never write one output: every name of such a group is
 * marked failed (naming another file) before anything is written, but a
 * file named twice, alone on its output, is shrunk once. */
static int find_collisions(struct file_list *l)
{
    struct job **todo = malloc((l->n + 1) * sizeof *todo);
    size_t m = 0;
    if (todo == NULL)
        return -1;
    for (size_t i = 0; i < l->n; i++)
        if (l->jobs[i].state == JOB_TODO)
            todo[m++] = &l->jobs[i];
    qsort(todo, m, sizeof *todo, compare_by_output);
    for (size_t a = 0; a < m;) {
        size_t b = a + 1;
        while (b < m && strcmp(todo[a]->out, todo[b]->out) == 0)
            b++;
        if (b - a > 1 && decide_group(todo + a, b - a) != 0) {
            free(todo);
            return -1;
        }
        a = b;
    }
    free(todo);
    return 0;
}

/* One input named on the command line. */
static int collect_input(struct walk *w, const char *in)
{
    const struct options *o = w->o;
    const char *base = strrchr(in, '/');
    struct stat st;
    int stat_rc = stat(in, &st);
    if ((stat_rc != 0 || !S_ISDIR(st.st_mode)) && !in_my_shard(o, base ? base + 1 : in))
        return 0;
    if (stat_rc != 0) {
        char reason[256];
        snprintf(reason, sizeof reason, "%s", strerror(errno));
        return add_job(w->list, in, NULL, JOB_FAILED, EXIT_IO, reason) ? 0 : -1;
    }
    if (S_ISDIR(st.st_mode)) {
        if (!o->recursive)
            return cli_usage_error("%s: is a directory (use -r)", cli_quote(in));
        return walk_root(w, in);
    }
    /* named on the command line, it is read whatever it is (a FIFO
     * from a shell's <(...) included) */
    return add_todo(w, in, base ? base + 1 : in);
}

int collect_inputs(const struct options *o, const struct stat *out_dir, struct file_list *l)
{
    struct walk walk = { .o = o, .out_dir = out_dir, .list = l }, *w = &walk;
    for (int i = 0; i < o->n_inputs; i++) {
        int rc = collect_input(w, o->inputs[i]);
        if (rc > 0)
            return rc;
        if (rc < 0)
            goto nomem;
    }
    if (find_collisions(l) != 0)
        goto nomem;
    return 0;
nomem:
    cli_error("out of memory");
    return EXIT_IO;
}
