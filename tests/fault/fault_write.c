/*
 * fault_write.so - an LD_PRELOAD shim that makes write(2) and pwrite(2)
 * misbehave on file descriptors >= 3 (the tools' output and spool files),
 * as disks and pipes do, or truncates an input as soon as it is mapped.
 * HPROF_FAULT selects the fault:
 *
 *   short        every write moves at most 4093 bytes, every pwrite 4
 *   eintr        every other write fails with EINTR before writing
 *   slow         every write moves at most 4093 bytes, each after 20 ms: a
 *                slow disk, so that a test can stop a run in mid-write
 *   enospc:N     writes fail with ENOSPC once N bytes have been written
 *   eio:N        the same with EIO
 *   truncate     a file mapped read-only is cut to half its size right after
 *                mmap(2), as another process could (the tools then get SIGBUS)
 *   truncate-at-write
 *                the first write(2) or pwrite(2) to an output cuts the
 *                file mapped read-only to half its size first, as another
 *                process could while the output is written; when the
 *                bytes written lie in the part cut off, the write fails
 *                with EFAULT
 *   pread-main:N pread(2) of more than N bytes fails with EIO on the main
 *                thread only: the shrink's own share of the bitmap hashing
 *                fails while its other threads still hash
 *   scratch-full:N
 *                pwrite(2) past 4 TiB into a file (the one pass's scratch
 *                area) fails with ENOSPC once N bytes went there; other
 *                writes succeed: a disk the set-aside arrays fill
 *   free:N       fstatvfs(2) says N bytes are free: a small disk
 *
 * The first three must not change the output; the others must end in exit
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
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static unsigned long long written;
static unsigned calls;

/* truncate-at-write: the read-only mappings of files, as mmap() made them. */
#define MAX_MAPS 64
static struct mapped {
    const char *addr;
    size_t len;
    off_t offset;
    char path[4096];
} maps[MAX_MAPS];
static unsigned n_maps;
static int cut_done;

static void remember_map(const void *addr, size_t len, int fd, off_t offset)
{
    char link[64];
    unsigned i = __atomic_fetch_add(&n_maps, 1, __ATOMIC_SEQ_CST);
    if (i >= MAX_MAPS)
        return;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, maps[i].path, sizeof maps[i].path - 1);
    if (n <= 0)
        return;
    maps[i].path[n] = '\0';
    maps[i].offset = offset;
    maps[i].len = len;
    __atomic_store_n(&maps[i].addr, (const char *)addr, __ATOMIC_SEQ_CST);
}

/* The first write to an output (fd >= 3) cuts the mapped file: where the
 * page of `buf` starts when `buf` lies in its mapping, else at half. */
static void cut_under(const char *mode, int fd, const void *buf)
{
    if (mode == NULL || strcmp(mode, "truncate-at-write") != 0 || cut_done || fd < 3 ||
        n_maps == 0)
        return;
    const char *p = buf;
    long page = sysconf(_SC_PAGESIZE);
    const char *a = __atomic_load_n(&maps[0].addr, __ATOMIC_SEQ_CST);
    struct stat st;
    if (a == NULL || __atomic_exchange_n(&cut_done, 1, __ATOMIC_SEQ_CST) ||
        stat(maps[0].path, &st) != 0)
        return;
    off_t at = st.st_size / 2;
    if (p >= a && p < a + maps[0].len)
        at = maps[0].offset + (off_t)(p - a);
    if (truncate(maps[0].path, at - at % page) != 0)
        abort();
}

/* How many of `n` bytes a write may move now (0 and errno set: none);
 * `most` is what a short one moves at most. */
static size_t allowed(const char *mode, size_t n, size_t most)
{
    if ((strcmp(mode, "short") == 0 || strcmp(mode, "slow") == 0) && n > most)
        n = most;
    if (strcmp(mode, "slow") == 0)
        nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
    if (strcmp(mode, "eintr") == 0 && calls++ % 2 == 0) {
        errno = EINTR;
        return 0;
    }
    int fail = strncmp(mode, "enospc:", 7) == 0 ? ENOSPC : strncmp(mode, "eio:", 4) == 0 ? EIO : 0;
    if (fail) {
        unsigned long long limit = strtoull(strchr(mode, ':') + 1, NULL, 10);
        if (written >= limit) {
            errno = fail;
            return 0;
        }
        if (n > limit - written)
            n = (size_t)(limit - written);
    }
    return n;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    static ssize_t (*real_write)(int, const void *, size_t);
    const char *mode = getenv("HPROF_FAULT");
    if (real_write == NULL)
        real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    cut_under(mode, fd, buf);
    if (mode == NULL || fd < 3 || n == 0)
        return real_write(fd, buf, n);
    if ((n = allowed(mode, n, 4093)) == 0)
        return -1;
    ssize_t got = real_write(fd, buf, n);
    if (got > 0)
        written += (unsigned long long)got;
    return got;
}

/* The writer fills in segment lengths with pwrite; _FILE_OFFSET_BITS=64
 * makes that pwrite64. */
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t offset);
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t offset)
{
    static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
    const char *mode = getenv("HPROF_FAULT");
    if (real_pwrite == NULL)
        real_pwrite = (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
    cut_under(mode, fd, buf);
    if (mode != NULL && strncmp(mode, "scratch-full:", 13) == 0) {
        static unsigned long long scratch;
        if (offset >= (off_t)1 << 42 && scratch + n > strtoull(mode + 13, NULL, 10)) {
            errno = ENOSPC;
            return -1;
        }
        if (offset >= (off_t)1 << 42)
            scratch += n;
        return real_pwrite(fd, buf, n, offset);
    }
    if (mode == NULL || fd < 3 || n == 0)
        return real_pwrite(fd, buf, n, offset);
    if ((n = allowed(mode, n, 4)) == 0)
        return -1;
    return real_pwrite(fd, buf, n, offset); /* overwrites: the file does not grow */
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t offset)
{
    return pwrite64(fd, buf, n, offset);
}

int fstatvfs64(int fd, struct statvfs64 *st);
int fstatvfs64(int fd, struct statvfs64 *st)
{
    static int (*real_fstatvfs)(int, struct statvfs64 *);
    const char *mode = getenv("HPROF_FAULT");
    if (real_fstatvfs == NULL)
        real_fstatvfs = (int (*)(int, struct statvfs64 *))dlsym(RTLD_NEXT, "fstatvfs64");
    int rc = real_fstatvfs(fd, st);
    if (rc == 0 && mode != NULL && strncmp(mode, "free:", 5) == 0)
        st->f_bavail = strtoull(mode + 5, NULL, 10) / st->f_frsize;
    return rc;
}

int fstatvfs(int fd, struct statvfs *st)
{
    return fstatvfs64(fd, (struct statvfs64 *)st);
}

/* Programs built with _FILE_OFFSET_BITS=64 call pread64. */
ssize_t pread64(int fd, void *buf, size_t n, off_t offset);
ssize_t pread64(int fd, void *buf, size_t n, off_t offset)
{
    static ssize_t (*real_pread)(int, void *, size_t, off_t);
    const char *mode = getenv("HPROF_FAULT");
    if (real_pread == NULL)
        real_pread = (ssize_t(*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread64");
    if (mode != NULL && strncmp(mode, "pread-main:", 11) == 0 &&
        n > strtoull(mode + 11, NULL, 10) && syscall(SYS_gettid) == getpid()) {
        errno = EIO;
        return -1;
    }
    return real_pread(fd, buf, n, offset);
}

ssize_t pread(int fd, void *buf, size_t n, off_t offset)
{
    return pread64(fd, buf, n, offset);
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
    if (map != MAP_FAILED && mode != NULL && strcmp(mode, "truncate-at-write") == 0 && fd >= 0 &&
        prot == PROT_READ && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        remember_map(map, len, fd, offset);
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
