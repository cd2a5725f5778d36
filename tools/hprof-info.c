/*
 * hprof-info - what a heap dump holds, as a memory analyst asks it first:
 * header, records by kind, objects per heap, top classes, primitive arrays,
 * strings, roots, bitmaps and their duplicates, and what hprof-shrink would
 * save.  The analysis is hprof_info_analyze() in libhprof.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "info-print.h"


/* --mapping: read once, for every file. */
static struct hprof_mapping *mapping;
/* --salvage: read cut dumps as far as they are complete; what each lost. */
static int salvage;
static int quiet;
static struct cli_salvage salvaged;

static void usage(FILE *out)
{
    fprintf(out,
            "Show what a Java or Android heap dump (.hprof) holds.\n"
            "\n"
            "Usage: %s [options] FILE...\n"
            "\n"
            "Options:\n"
            "  --top N        classes (and bitmaps) to list by count and by bytes\n"
            "                 [Default: 10]\n"
            "  --estimate     also run hprof-shrink's passes to report its output\n"
            "                 size in each --arrays mode, and with -z (nothing is\n"
            "                 written)\n"
            "  --json         one JSON object instead of the report\n"
            "  --mapping=FILE show the names a ProGuard/R8 mapping.txt restores\n"
            "  --salvage      a dump cut short: report what is complete, and say\n"
            "                 where the input stops and what was lost\n"
            "  -q, --quiet    no progress line on a terminal\n"
            "  -h, --help     show this help and exit\n"
            "  -V, --version  show the version and exit\n"
            "\n"
            "FILE may be - for standard input, and may be gzip- or zstd-compressed.\n"
            "Exit status: 0 success, 1 invalid input, 2 usage, 3 I/O error.\n",
            cli_progname);
}

/* ---- Estimates ------------------------------------------------------------- */


static void on_shrink_progress(void *ctx, int pass, int passes, uint64_t done, uint64_t total)
{
    (void)pass;
    (void)passes;
    cli_progress_bytes(ctx, done, total);
}

/* The gzip stream goes into a pipe whose other end a thread counts: the
 * compressed size without writing it anywhere. */
struct counter {
    int fd;
    uint64_t bytes;
};

static void *count_bytes(void *arg)
{
    struct counter *c = arg;
    char buf[65536];
    ssize_t n;
    while ((n = read(c->fd, buf, sizeof buf)) != 0) {
        if (n > 0)
            c->bytes += (uint64_t)n;
        else if (errno != EINTR)
            break;
    }
    return NULL;
}

/* hprof-shrink's passes in one mode; with `gzip`, through a gzip sink at
 * the default level, so that *compressed is what -z would write. */
static int estimate_mode(struct hprof_reader *r, int mode, int gzip, struct cli_progress *progress,
                         struct hprof_shrink_stats *st, uint64_t *compressed,
                         struct hprof_error *err)
{
    struct hprof_shrink_options o = { .arrays = mode, .progress = on_shrink_progress,
                                      .progress_ctx = progress, .mapping = mapping };
    struct counter c = { -1, 0 };
    struct hprof_sink *sink;
    int fds[2] = { -1, -1 }, rc;
    pthread_t t;
    if (!gzip) {
        sink = hprof_sink_new_null(err);
        rc = sink ? hprof_shrink(r, sink, &o, st, err) : err->code;
        hprof_sink_free(sink);
        return rc;
    }
    if (pipe(fds) != 0)
        return hprof_error_set(err, HPROF_ERR_IO, "estimate: pipe: %s", strerror(errno));
    c.fd = fds[0];
    if (pthread_create(&t, NULL, count_bytes, &c) != 0) {
        close(fds[0]);
        close(fds[1]);
        return hprof_error_set(err, HPROF_ERR_NOMEM, "estimate: cannot start a thread");
    }
    sink = hprof_sink_new_gzip(fds[1], 6, 0, err);
    rc = sink ? hprof_shrink(r, sink, &o, st, err) : err->code;
    if (rc == HPROF_OK)
        rc = hprof_sink_finish(sink);
    hprof_sink_free(sink);
    close(fds[1]);              /* the counter sees the end */
    pthread_join(t, NULL);
    close(fds[0]);
    *compressed = c.bytes;
    return rc;
}

static int estimate(struct hprof_reader *r, struct info_estimate *e, struct cli_progress *progress,
                    struct hprof_error *err)
{
    for (int mode = 0; mode < 3; mode++) {
        struct hprof_shrink_stats st;
        int rc = estimate_mode(r, mode, mode < 2, progress, &st, mode < 2 ? &e->gzip[mode] : NULL,
                               err);
        if (rc != HPROF_OK)
            return rc;
        e->bytes[mode] = st.bytes_out;
        if (mode == 0)
            e->stats = st;
    }
    return HPROF_OK;
}

/* The report of `r`'s heap dump (the one selected, or the file's only
 * one), printed; @return HPROF_OK or an error in `err`. */
static int info_dump(const char *path, struct hprof_reader *r, const struct info_options *o,
                     struct cli_progress *progress, struct hprof_error *err)
{
    struct hprof_info info;
    struct info_estimate e;
    memset(&e, 0, sizeof e);
    int rc = hprof_info_analyze_mapped(r, mapping, &info, err);
    if (rc != HPROF_OK)
        return rc;
    if (o->estimate) /* of the selected dump alone: the reader selects it */
        rc = estimate(r, &e, progress, err);
    struct info_options shown = *o;
    if (shown.dump != 0)
        shown.dumps = hprof_reader_dumps(r);
    if (rc == HPROF_OK && salvage) {
        cli_salvage_collect(&salvaged, r, 1);
        cli_salvage_print(path, &salvaged);
        shown.salvage = &salvaged;
    }
    if (rc == HPROF_OK) {
        if (o->json)
            info_print_json(stdout, path, &info, &shown, &e);
        else
            info_print_report(stdout, path, &info, &shown, &e);
    }
    hprof_info_free(&info);
    return rc;
}

/* One file's report (or JSON object, one line), one per heap dump for a
 * file of several (each dump its own space of object ids); @return its
 * exit code. */
static int info_file(const char *path, const struct info_options *o)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct cli_progress progress;
    int fd = -1;
    cli_progress_init(&progress, path, quiet);
    cli_progress_note(&progress, "reading the input");
    cli_set_salvage(salvage);
    int rc = cli_open_reader(path, &fd, &r, &err);
    if (rc == HPROF_OK) {
        hprof_reader_set_progress(r, cli_progress_bytes, &progress);
        rc = info_dump(path, r, o, &progress, &err);
    }
    if (rc != HPROF_OK && r != NULL && hprof_reader_dumps(r) > 1) {
        struct info_options each = *o;
        rc = HPROF_OK;
        for (each.dump = 1; rc == HPROF_OK && each.dump <= hprof_reader_dumps(r); each.dump++) {
            memset(&err, 0, sizeof err);
            hprof_reader_set_dump(r, each.dump);
            if (each.dump > 1 && !o->json)
                printf("\n");
            rc = info_dump(path, r, &each, &progress, &err);
            if (rc == HPROF_OK && hprof_reader_dumps(r) > HPROF_MAX_DUMPS)
                rc = hprof_error_set(&err, HPROF_ERR_FORMAT, "%u heap dumps: at most %u are "
                                     "reported", hprof_reader_dumps(r), HPROF_MAX_DUMPS);
        }
    }
    cli_progress_done(&progress);
    if (rc == HPROF_OK && !salvage && hprof_reader_ends_before_heap(r))
        cli_warn_cut_before_heap(path);
    if (rc != HPROF_OK) {
        fflush(stdout);
        int shrank = cli_input_shrank(path, fd, r);
        if (shrank)
            rc = HPROF_ERR_IO;
        else
            cli_input_error(path, &err, !salvage);
    }
    cli_close_reader(fd, r);
    return cli_exit_code(rc);
}

int main(int argc, char **argv)
{
    enum { OPT_TOP = 256, OPT_ESTIMATE, OPT_JSON, OPT_MAPPING, OPT_SALVAGE };
    const char *mapping_path = NULL;
    static const struct option long_options[] = {
        { "top", required_argument, NULL, OPT_TOP },
        { "estimate", no_argument, NULL, OPT_ESTIMATE },
        { "json", no_argument, NULL, OPT_JSON },
        { "mapping", required_argument, NULL, OPT_MAPPING },
        { "salvage", no_argument, NULL, OPT_SALVAGE },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    struct info_options o = { .top = 10 };
    unsigned long long v;
    int c;
    if (cli_init(argv[0]) != 0)
        return EXIT_USAGE;
    argv[0] = (char *)cli_progname; /* getopt's messages name the tool as ours do */
    while ((c = getopt_long(argc, argv, "qhV", long_options, NULL)) != -1) {
        switch (c) {
        case OPT_TOP:
            if (cli_parse_uint(optarg, 1000000, &v) != 0) {
                return cli_usage_error("--top: expected a number, got '%s'", optarg);
            }
            o.top = (size_t)v;
            break;
        case OPT_ESTIMATE: o.estimate = 1; break;
        case OPT_JSON: o.json = 1; break;
        case OPT_MAPPING: mapping_path = optarg; break;
        case OPT_SALVAGE: salvage = 1; break;
        case 'q': quiet = 1; break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': cli_version(); return EXIT_OK;
        default: return cli_usage_error(NULL);
        }
    }
    if (optind == argc)
        return cli_usage_error("no input file");
    if (cli_refuse_messages_into_inputs(argv + optind, argc - optind) != 0)
        return EXIT_USAGE;
    if (mapping_path != NULL) {
        struct hprof_error err = { 0 };
        if (hprof_mapping_load(mapping_path, &mapping, &err) != HPROF_OK) {
            cli_error("%s", err.message);
            return cli_exit_code(err.code);
        }
    }
    int worst = EXIT_OK;
    for (int i = optind; i < argc; i++) {
        if (i > optind && !o.json)
            putchar('\n');
        int code = info_file(argv[i], &o);
        if (code > worst)
            worst = code;
    }
    hprof_mapping_free(mapping);
    return worst; /* a write error on standard output is checked at exit */
}
