/*
 * bench-time - run one command and print its wall time and peak RSS, for
 * tools/bench.sh.
 *
 *   bench-time [-c] [-i IN] [-o OUT] -- COMMAND [ARG...]
 *
 * The command's standard input is IN (default /dev/null) and its standard
 * output OUT, opened with O_TRUNC as a shell's `>` would (default
 * /dev/null).  Prints "SECONDS RSS_KB" on standard output: the wall time
 * from just before fork() to the return of wait4(), in seconds with
 * microsecond resolution, and the command's peak resident set from wait4();
 * with -c, a third field: its CPU time (user + system, all threads) in
 * seconds.
 *
 * Why not date(1) and /usr/bin/time around `sh -c`: the two date forks,
 * time(1) and the shell add milliseconds to every command, as much as a
 * small run costs, and hide what the command itself costs.
 * Exit status: the command's, or 127 if it cannot be run.
 */
#include <errno.h>
#include <fcntl.h>
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
    fputs("usage: bench-time [-c] [-i IN] [-o OUT] -- COMMAND [ARG...]\n", stderr);
    return 2;
}

int main(int argc, char **argv)
{
    const char *in = "/dev/null", *out = "/dev/null";
    int opt, with_cpu = 0;
    while ((opt = getopt(argc, argv, "+ci:o:")) != -1) {
        if (opt == 'c')
            with_cpu = 1;
        else if (opt == 'i')
            in = optarg;
        else if (opt == 'o')
            out = optarg;
        else
            return usage();
    }
    if (optind >= argc)
        return usage();

    double start = seconds_now();
    pid_t pid = fork();
    if (pid < 0) {
        perror("bench-time: fork");
        return 127;
    }
    if (pid == 0) {
        redirect(in, STDIN_FILENO, O_RDONLY);
        redirect(out, STDOUT_FILENO, O_WRONLY | O_CREAT | O_TRUNC);
        execvp(argv[optind], argv + optind);
        fprintf(stderr, "bench-time: %s: %s\n", argv[optind], strerror(errno));
        _exit(127);
    }
    int status;
    struct rusage usage_of_child;
    while (wait4(pid, &status, 0, &usage_of_child) < 0)
        if (errno != EINTR) {
            perror("bench-time: wait4");
            return 127;
        }
    double wall = seconds_now() - start;
    double cpu = (double)usage_of_child.ru_utime.tv_sec + usage_of_child.ru_utime.tv_usec / 1e6 +
                 (double)usage_of_child.ru_stime.tv_sec + usage_of_child.ru_stime.tv_usec / 1e6;
    if (with_cpu)
        printf("%.6f %ld %.6f\n", wall, usage_of_child.ru_maxrss, cpu);
    else
        printf("%.6f %ld\n", wall, usage_of_child.ru_maxrss);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}
