/*
 * fault_write.so - an LD_PRELOAD shim that makes write(2) misbehave on file
 * descriptors >= 3 (the tools' output and spool files), as disks and pipes
 * do, or truncates an input as soon as it is mapped.  HPROF_FAULT selects
 * the fault:
 *
 *   short        every write moves at most 4093 bytes
 *   eintr        every other write fails with EINTR before writing
 *   enospc:N     writes fail with ENOSPC once N bytes have been written
 *   eio:N        the same with EIO
 *   truncate     a file mapped read-only is cut to half its size right after
 *                mmap(2), as another process could (the tools then get SIGBUS)
 *
 * The first two must not change the output; the others must end in exit
 * status 3, a message, and no output file.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static ssize_t (*real_write)(int, const void *, size_t);
static unsigned long long written;
static unsigned calls;

ssize_t write(int fd, const void *buf, size_t n)
{
    const char *mode = getenv("HPROF_FAULT");
    if (real_write == NULL)
        real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    if (mode == NULL || fd < 3)
        return real_write(fd, buf, n);
    if (strcmp(mode, "short") == 0 && n > 4093)
        n = 4093;
    if (strcmp(mode, "eintr") == 0 && calls++ % 2 == 0) {
        errno = EINTR;
        return -1;
    }
    int fail = strncmp(mode, "enospc:", 7) == 0 ? ENOSPC : strncmp(mode, "eio:", 4) == 0 ? EIO : 0;
    if (fail) {
        unsigned long long limit = strtoull(strchr(mode, ':') + 1, NULL, 10);
        if (written >= limit) {
            errno = fail;
            return -1;
        }
        if (n > limit - written)
            n = (size_t)(limit - written);
    }
    ssize_t got = real_write(fd, buf, n);
    if (got > 0)
        written += (unsigned long long)got;
    return got;
}

/* Programs built with _FILE_OFFSET_BITS=64 call mmap64. */
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t offset);
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t offset)
{
    static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
    const char *mode = getenv("HPROF_FAULT");
    if (real_mmap == NULL)
        real_mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap64");
    void *map = real_mmap(addr, len, prot, flags, fd, offset);
    struct stat st;
    char link[64], path[4096];
    if (map != MAP_FAILED && mode != NULL && strcmp(mode, "truncate") == 0 && fd >= 0 &&
        prot == PROT_READ && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, path, sizeof path - 1);
        if (n > 0) {
            path[n] = '\0';
            if (truncate(path, st.st_size / 2) != 0)
                abort();
        }
    }
    return map;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset)
{
    return mmap64(addr, len, prot, flags, fd, offset);
}
