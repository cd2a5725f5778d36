/*
 * bench-time - run one command and print its wall time and peak RSS, for
 * tools/bench.sh.
 *
 *   bench-time [-c] [-i IN | -p IN] [-o OUT] -- COMMAND [ARG...]
 *
 * The command's standard input is IN (default /dev/null), or with -p a pipe
 * that `cat IN` writes, as in `cat IN | COMMAND`; its standard output is
 * OUT, opened with O_TRUNC as a shell's `>` would (default /dev/null).
 * Prints "SECONDS RSS_KB" on standard output: the wall time from just
 * before fork() to the return of wait4() (with -p, of the later of the two
 * processes), in seconds with microsecond resolution, and the command's
 * peak resident set from wait4() (not cat's); with -c, a third field: the
 * command's CPU time (user + system, all threads) in seconds.
 *
 * Why not date(1) and /usr/bin/time around `sh -c`: the two date forks,
 * time(1) and the shell add milliseconds to every command, as much as a
 * small run costs, and hide what the command itself costs.
 * Exit status: the command's, or 127 if it cannot be run (or, with -p, if
 * cat fails or the command succeeds without reading all of IN).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* In the child: make `path` file descriptor `fd`, or die. */
static void redirect(const char *path, int fd, int flags)
{
    int got = open(path, flags, 0644);
    if (got < 0 || dup2(got, fd) < 0) {
        fprintf(stderr, "bench-time: %s: %s\n", path, strerror(errno));
        _exit(127);
    }
    if (got != fd)
        close(got);
}

static int usage(void)
{
    fputs("usage: bench-time [-c] [-i IN | -p IN] [-o OUT] -- COMMAND [ARG...]\n", stderr);
    return 2;
}

/* Start `cat path` writing into a new pipe; its reading end is *read_end.
 * @return the cat's process, or -1. */
static pid_t start_feeder(const char *path, int *read_end)
{
    int ends[2];
    if (pipe(ends) < 0) {
        perror("bench-time: pipe");
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("bench-time: fork");
        return -1;
    }
    if (pid == 0) {
        close(ends[0]);
        if (dup2(ends[1], STDOUT_FILENO) < 0)
            _exit(127);
        close(ends[1]);
        execlp("cat", "cat", path, (char *)NULL);
        fprintf(stderr, "bench-time: cat: %s\n", strerror(errno));
        _exit(127);
    }
    close(ends[1]);
    *read_end = ends[0];
    return pid;
}

int main(int argc, char **argv)
{
    const char *in = "/dev/null", *out = "/dev/null", *piped = NULL;
    int opt, with_cpu = 0;
    while ((opt = getopt(argc, argv, "+ci:o:p:")) != -1) {
        if (opt == 'c')
            with_cpu = 1;
        else if (opt == 'i')
            in = optarg;
        else if (opt == 'p')
            piped = optarg;
        else if (opt == 'o')
            out = optarg;
        else
            return usage();
    }
    if (optind >= argc)
        return usage();

    double start = seconds_now();
    int pipe_in = -1;
    pid_t feeder = piped != NULL ? start_feeder(piped, &pipe_in) : 0;
    if (feeder < 0)
        return 127;
    pid_t pid = fork();
    if (pid < 0) {
        perror("bench-time: fork");
        return 127;
    }
    if (pid == 0) {
        if (pipe_in >= 0) {
            if (dup2(pipe_in, STDIN_FILENO) < 0)
                _exit(127);
            close(pipe_in);
        } else {
            redirect(in, STDIN_FILENO, O_RDONLY);
        }
        redirect(out, STDOUT_FILENO, O_WRONLY | O_CREAT | O_TRUNC);
        execvp(argv[optind], argv + optind);
        fprintf(stderr, "bench-time: %s: %s\n", argv[optind], strerror(errno));
        _exit(127);
    }
    if (pipe_in >= 0)
        close(pipe_in); /* the command's alone: cat sees EPIPE if it stops reading */
    int status;
    struct rusage usage_of_child;
    while (wait4(pid, &status, 0, &usage_of_child) < 0)
        if (errno != EINTR) {
            perror("bench-time: wait4");
            return 127;
        }
    int feeder_status = 0;
    if (feeder > 0)
        while (waitpid(feeder, &feeder_status, 0) < 0)
            if (errno != EINTR) {
                perror("bench-time: waitpid");
                return 127;
            }
    double wall = seconds_now() - start;
    double cpu = (double)usage_of_child.ru_utime.tv_sec + usage_of_child.ru_utime.tv_usec / 1e6 +
                 (double)usage_of_child.ru_stime.tv_sec + usage_of_child.ru_stime.tv_usec / 1e6;
    if (with_cpu)
        printf("%.6f %ld %.6f\n", wall, usage_of_child.ru_maxrss, cpu);
    else
        printf("%.6f %ld\n", wall, usage_of_child.ru_maxrss);
    if (feeder > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
        !(WIFEXITED(feeder_status) && WEXITSTATUS(feeder_status) == 0)) {
        if (WIFSIGNALED(feeder_status) && WTERMSIG(feeder_status) == SIGPIPE)
            fprintf(stderr, "bench-time: the command did not read all of %s\n", piped);
        else
            fprintf(stderr, "bench-time: cat %s failed\n", piped);
        return 127;
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}
