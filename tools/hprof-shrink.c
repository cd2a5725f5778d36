/*
 * hprof-shrink - make a heap dump small enough to upload, keeping what a
 * memory analysis needs.  The work is hprof_shrink() in libhprof; this file
 * is options, files and reports.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

struct options {
    struct hprof_shrink_options shrink;
    int gzip_level;         /* 0: plain output */
    unsigned threads;       /* gzip workers; 0: one per core */
    int force, quiet, stats, json;
    const char *in, *out;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Shrink a Java or Android heap dump (.hprof) for upload and sharing: keep\n"
            "String contents and distinct Bitmap pixels, drop other array contents and\n"
            "the zygote/image heaps.  The output opens in every analyzer.\n"
            "\n"
            "Usage: %s [options] IN OUT\n"
            "       %s [options] < IN > OUT\n"
            "\n"
            "Options:\n"
            "  --arrays=MODE        what becomes of other primitive arrays [Default: empty]\n"
            "                         empty   zero-length array, same id and type\n"
            "                         zero    same length, contents zeroed\n"
            "                         remove  no record (references to it dangle)\n"
            "  --keep-system-heaps  keep zygote and image heap objects\n"
            "  -z, --gzip[=LEVEL]   gzip the output as jcmd -gz does [Default level: 6]\n"
            "  -j, --threads=N      gzip with N threads, 0 = one per core [Default: 0]\n"
            "  -f, --force          overwrite OUT; write to a terminal\n"
            "  --stats              print a report on standard error\n"
            "  --json               print the report as JSON (on standard output, or on\n"
            "                       standard error when OUT is standard output)\n"
            "  -q, --quiet          no progress line\n"
            "  -h, --help           show this help and exit\n"
            "  -V, --version        show the version and exit\n"
            "\n"
            "IN or OUT may be - for standard input or output; IN may be gzip-compressed.\n"
            "Exit status: 0 success, 1 invalid input, 2 usage, 3 I/O error.\n",
            cli_progname, cli_progname);
}

static int parse(int argc, char **argv, struct options *o)
{
    enum { OPT_ARRAYS = 256, OPT_KEEP_SYSTEM, OPT_STATS, OPT_JSON, OPT_SEGMENT };
    static const struct option long_options[] = {
        { "arrays", required_argument, NULL, OPT_ARRAYS },
        { "keep-system-heaps", no_argument, NULL, OPT_KEEP_SYSTEM },
        { "gzip", optional_argument, NULL, 'z' },
        { "threads", required_argument, NULL, 'j' },
        { "force", no_argument, NULL, 'f' },
        { "stats", no_argument, NULL, OPT_STATS },
        { "json", no_argument, NULL, OPT_JSON },
        { "segment-size", required_argument, NULL, OPT_SEGMENT },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    unsigned long long v;
    int c;
    while ((c = getopt_long(argc, argv, "z::j:fqhV", long_options, NULL)) != -1) {
        switch (c) {
        case OPT_ARRAYS:
            if (strcmp(optarg, "empty") == 0)
                o->shrink.arrays = HPROF_ARRAYS_EMPTY;
            else if (strcmp(optarg, "zero") == 0)
                o->shrink.arrays = HPROF_ARRAYS_ZERO;
            else if (strcmp(optarg, "remove") == 0)
                o->shrink.arrays = HPROF_ARRAYS_REMOVE;
            else {
                cli_error("--arrays: expected empty, zero or remove, got '%s'", optarg);
                return EXIT_USAGE;
            }
            break;
        case OPT_KEEP_SYSTEM: o->shrink.keep_system_heaps = 1; break;
        case 'z':
            o->gzip_level = 6;
            if (optarg != NULL) {
                if (cli_parse_uint(optarg, 9, &v) != 0 || v < 1) {
                    cli_error("--gzip: expected a level from 1 to 9, got '%s'", optarg);
                    return EXIT_USAGE;
                }
                o->gzip_level = (int)v;
            }
            break;
        case 'j':
            if (cli_parse_uint(optarg, 256, &v) != 0) {
                cli_error("--threads: expected 0 to 256, got '%s'", optarg);
                return EXIT_USAGE;
            }
            o->threads = (unsigned)v;
            break;
        case OPT_SEGMENT:
            if (cli_parse_uint(optarg, UINT32_MAX, &v) != 0 || v < HPROF_SEGMENT_LIMIT_MIN) {
                cli_error("--segment-size: expected %u to %u bytes, got '%s'",
                          HPROF_SEGMENT_LIMIT_MIN, UINT32_MAX, optarg);
                return EXIT_USAGE;
            }
            o->shrink.segment_limit = (uint32_t)v;
            break;
        case 'f': o->force = 1; break;
        case OPT_STATS: o->stats = 1; break;
        case OPT_JSON: o->json = 1; break;
        case 'q': o->quiet = 1; break;
        case 'h': usage(stdout); exit(EXIT_OK);
        case 'V': cli_version(); exit(EXIT_OK);
        default: usage(stderr); return EXIT_USAGE;
        }
    }
    int left = argc - optind;
    if (left == 0) {
        o->in = o->out = "-";
    } else if (left == 2) {
        o->in = argv[optind];
        o->out = argv[optind + 1];
    } else {
        cli_error(left == 1 ? "missing OUT (use - for standard output)" : "too many arguments");
        fprintf(stderr, "Usage: %s [options] IN OUT   (--help for more)\n", cli_progname);
        return EXIT_USAGE;
    }
    return 0;
}

static double ratio(uint64_t out, uint64_t in)
{
    return in ? 100.0 * (double)out / (double)in : 0.0;
}

static void print_stats(FILE *f, const struct options *o, const struct hprof_shrink_stats *s,
                        uint64_t written)
{
    double total = 0;
    for (int i = 0; i < s->passes && i < HPROF_SHRINK_MAX_PASSES; i++)
        total += s->pass_seconds[i];
    fprintf(f, "%s -> %s\n", o->in, o->out);
    fprintf(f, "  %-28s %15" PRIu64 " bytes\n", "input", s->bytes_in);
    fprintf(f, "  %-28s %15" PRIu64 " bytes (%.1f%%)\n", "output", s->bytes_out,
            ratio(s->bytes_out, s->bytes_in));
    if (o->gzip_level)
        fprintf(f, "  %-28s %15" PRIu64 " bytes (%.1f%%)\n", "output, gzipped", written,
                ratio(written, s->bytes_in));
#define ROW(label, c) \
    fprintf(f, "  %-28s %15" PRIu64 " %12" PRIu64 " bytes\n", label, (c).count, (c).bytes)
    fprintf(f, "  %-28s %15s %18s\n", "", "count", "contents");
    ROW("strings (records)", s->strings);
    ROW("instances in", s->instances_in);
    ROW("instances out", s->instances_out);
    ROW("object arrays in", s->object_arrays_in);
    ROW("object arrays out", s->object_arrays_out);
    ROW("primitive arrays in", s->primitive_arrays_in);
    ROW("  String values kept", s->string_values_kept);
    ROW("  bitmap buffers kept", s->bitmap_buffers_kept);
    ROW("  DumpData natives kept", s->other_kept);
    ROW("  bitmap copies merged", s->bitmap_duplicates);
    ROW("  emptied", s->arrays_emptied);
    ROW("  zeroed", s->arrays_zeroed);
    ROW("  removed", s->arrays_removed);
    ROW("system-heap objects dropped", s->system_dropped);
    ROW("system-heap stand-ins", s->system_standins);
#undef ROW
    fprintf(f, "  %-28s %15" PRIu64 "\n", "roots dropped", s->roots_dropped);
    fprintf(f, "  %-28s %15" PRIu64 " found, %" PRIu64 " hashed, %" PRIu64
            " groups of identical buffers\n", "bitmap buffers", s->bitmap_candidates,
            s->bitmap_digested, s->bitmap_groups);
    fprintf(f, "  %-28s %15.3f s in %d passes (", "time", total, s->passes);
    for (int i = 0; i < s->passes && i < HPROF_SHRINK_MAX_PASSES; i++)
        fprintf(f, "%s%.3f", i ? " " : "", s->pass_seconds[i]);
    fprintf(f, ")\n");
}

static void json_count(FILE *f, const char *key, const struct hprof_count *c, int last)
{
    fprintf(f, "\"%s\":{\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 "}%s", key, c->count, c->bytes,
            last ? "" : ",");
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* One JSON object on one line; keys are documented in hprof-shrink(1). */
static void print_json(FILE *f, const struct options *o, const struct hprof_shrink_stats *s,
                       uint64_t written)
{
    static const char *const modes[] = { "empty", "zero", "remove" };
    fprintf(f, "{\"input\":");
    json_string(f, o->in);
    fprintf(f, ",\"output\":");
    json_string(f, o->out);
    fprintf(f, ",\"arrays\":\"%s\",\"keep_system_heaps\":%s,\"gzip_level\":%d,",
            modes[o->shrink.arrays], o->shrink.keep_system_heaps ? "true" : "false",
            o->gzip_level);
    fprintf(f, "\"bytes_in\":%" PRIu64 ",\"bytes_out\":%" PRIu64 ",\"bytes_written\":%" PRIu64
            ",", s->bytes_in, s->bytes_out, written);
    json_count(f, "strings", &s->strings, 0);
    json_count(f, "instances_in", &s->instances_in, 0);
    json_count(f, "instances_out", &s->instances_out, 0);
    json_count(f, "object_arrays_in", &s->object_arrays_in, 0);
    json_count(f, "object_arrays_out", &s->object_arrays_out, 0);
    json_count(f, "primitive_arrays_in", &s->primitive_arrays_in, 0);
    json_count(f, "string_values_kept", &s->string_values_kept, 0);
    json_count(f, "bitmap_buffers_kept", &s->bitmap_buffers_kept, 0);
    json_count(f, "natives_kept", &s->other_kept, 0);
    json_count(f, "bitmap_duplicates", &s->bitmap_duplicates, 0);
    json_count(f, "arrays_emptied", &s->arrays_emptied, 0);
    json_count(f, "arrays_zeroed", &s->arrays_zeroed, 0);
    json_count(f, "arrays_removed", &s->arrays_removed, 0);
    json_count(f, "system_dropped", &s->system_dropped, 0);
    json_count(f, "system_standins", &s->system_standins, 0);
    fprintf(f, "\"roots_dropped\":%" PRIu64 ",\"bitmap_candidates\":%" PRIu64
            ",\"bitmap_digested\":%" PRIu64 ",\"bitmap_groups\":%" PRIu64 ",\"pass_seconds\":[",
            s->roots_dropped, s->bitmap_candidates, s->bitmap_digested, s->bitmap_groups);
    for (int i = 0; i < s->passes && i < HPROF_SHRINK_MAX_PASSES; i++)
        fprintf(f, "%s%.6f", i ? "," : "", s->pass_seconds[i]);
    fprintf(f, "]}\n");
}

static void on_progress(void *ctx, int pass, int passes, uint64_t done, uint64_t total)
{
    cli_progress_update(ctx, pass, passes, done, total);
}

static int shrink_file(struct options *o)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct hprof_sink *sink = NULL;
    struct hprof_shrink_stats stats;
    struct cli_output out;
    struct cli_progress progress;
    struct stat in_st;
    int in_fd = -1, code;
    const char *name = strcmp(o->in, "-") == 0 ? "(stdin)" : o->in;

    if (strcmp(o->in, "-") != 0 && stat(o->in, &in_st) != 0) {
        cli_error("%s: cannot open: %m", o->in);
        return EXIT_IO;
    }
    code = cli_output_open(&out, o->out, o->force, strcmp(o->in, "-") ? &in_st : NULL);
    if (code != 0)
        return code;
    int rc = hprof_input_open(o->in, &in_fd, NULL, &err);
    if (rc == HPROF_OK)
        rc = hprof_reader_open_fd(&r, in_fd, &err);
    if (rc == HPROF_OK) {
        sink = o->gzip_level ? hprof_sink_new_gzip(out.fd, o->gzip_level, o->threads, &err)
                             : hprof_sink_new_fd(out.fd, &err);
        rc = sink ? HPROF_OK : err.code;
    }
    cli_progress_init(&progress, name, o->quiet);
    o->shrink.progress = on_progress;
    o->shrink.progress_ctx = &progress;
    if (rc == HPROF_OK)
        rc = hprof_shrink(r, sink, &o->shrink, &stats, &err);
    if (rc == HPROF_OK)
        rc = hprof_sink_finish(sink);
    cli_progress_done(&progress);
    uint64_t written = 0;
    if (rc == HPROF_OK && out.tmp != NULL) {
        struct stat st;
        if (fstat(out.fd, &st) == 0)
            written = (uint64_t)st.st_size;
    }
    hprof_sink_free(sink);
    hprof_reader_free(r);
    if (in_fd >= 0)
        close(in_fd);
    if (rc != HPROF_OK) {
        cli_error("%s: %s", name, err.message[0] ? err.message : "failed");
        cli_output_abort(&out);
        return cli_exit_code(rc);
    }
    if ((code = cli_output_commit(&out)) != 0)
        return code;
    if (o->stats)
        print_stats(stderr, o, &stats, written);
    if (o->json)
        print_json(strcmp(o->out, "-") == 0 ? stderr : stdout, o, &stats, written);
    return EXIT_OK;
}

int main(int argc, char **argv)
{
    struct options o;
    memset(&o, 0, sizeof o);
    if (cli_init(argv[0]) != 0)
        return EXIT_USAGE;
    int code = parse(argc, argv, &o);
    if (code != 0)
        return code;
    cli_install_signal_handlers();
    return shrink_file(&o);
}
