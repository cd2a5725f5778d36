/*
 * sink_private.h - the sink interface shared by sink.c and gzip_out.c.
 * A sink is a small vtable over "where bytes go"; it counts what it accepts.
 */
#ifndef HPROF_SINK_PRIVATE_H
#define HPROF_SINK_PRIVATE_H

#include "hprof_private.h"

struct sink_ops {
    int (*write)(struct hprof_sink *s, const void *buf, size_t len);
    int (*finish)(struct hprof_sink *s);
    void (*free)(struct hprof_sink *s);
};

struct hprof_sink {
    const struct sink_ops *ops;
    struct hprof_error *err;
    uint64_t bytes;
    int failed;
    int finished;
};

/* write(2) all of `buf` to `fd`, retrying on EINTR and short writes. */
int sink_write_fd(int fd, const void *buf, size_t len, struct hprof_error *err);

/* Which library deflates gzip members. */
enum gzip_backend { GZIP_ZLIB, GZIP_LIBDEFLATE, GZIP_ISAL };

/* hprof_sink_new_gzip() with a chosen backend (tests compare them);
 * GZIP_LIBDEFLATE needs a library built with HPROF_WITH_LIBDEFLATE,
 * GZIP_ISAL one built with HPROF_WITH_ISAL, and level 1. */
struct hprof_sink *gzip_sink_new(int fd, int level, unsigned threads, enum gzip_backend backend,
                                 struct hprof_error *err);

#endif
