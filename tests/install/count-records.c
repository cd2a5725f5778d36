/*
 * count-records.c - a program outside the tree, built against an installed
 * libhprof with nothing but `pkg-config --cflags --libs libhprof`: it
 * counts the top-level records and the instances of a dump, the figures
 * hprof-verify prints, so the CLI tests can compare them.  It checks too
 * that the library it runs with is the version its header announces.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include <hprof.h>

struct counter {
    struct hprof_visitor base;
    uint64_t records, instances;
};

static int on_string(struct hprof_visitor *v, const struct hprof_string *s)
{
    (void)s;
    ((struct counter *)v)->records++;
    return HPROF_OK;
}

static int on_load_class(struct hprof_visitor *v, const struct hprof_load_class *c)
{
    (void)c;
    ((struct counter *)v)->records++;
    return HPROF_OK;
}

static int on_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    (void)r;
    ((struct counter *)v)->records++;
    return HPROF_OK;
}

static int on_heap_begin(struct hprof_visitor *v, const struct hprof_segment *s)
{
    (void)s;
    ((struct counter *)v)->records++;
    return HPROF_OK;
}

static int on_instance(struct hprof_visitor *v, const struct hprof_instance *o)
{
    (void)o;
    ((struct counter *)v)->instances++;
    return HPROF_OK;
}

static const struct hprof_visitor_ops counter_ops = {
    .string = on_string,
    .load_class = on_load_class,
    .record = on_record,
    .heap_begin = on_heap_begin,
    .instance = on_instance,
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: count-records FILE.hprof\n");
        return 2;
    }
    if (hprof_version_number() != HPROF_VERSION_NUMBER) {
        fprintf(stderr, "count-records: header %u, library %u\n",
                (unsigned)HPROF_VERSION_NUMBER, hprof_version_number());
        return 1;
    }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror(argv[1]);
        return 3;
    }
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct counter c = { { &counter_ops, NULL }, 0, 0 };
    int rc = hprof_reader_open_fd(&r, fd, &err);
    if (rc == HPROF_OK)
        rc = hprof_reader_run(r, &c.base);
    if (rc == HPROF_OK)
        printf("%" PRIu64 " records, %" PRIu64 " instances\n", c.records, c.instances);
    else
        fprintf(stderr, "count-records: %s: %s\n", argv[1], err.message);
    hprof_reader_free(r);
    close(fd);
    return rc == HPROF_OK ? 0 : 1;
}
