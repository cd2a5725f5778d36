/*
 * hprof-shrink - make a heap dump small enough to upload, keeping what a
 * memory analysis needs.  The work is hprof_shrink() in libhprof; this file
 * is options, files and reports.
 */
#define _XOPEN_SOURCE 700 /* nftw() */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define OPT_SALVAGE 400 /* --salvage */

struct options {
    struct hprof_shrink_options shrink;
    int gzip_level;         /* 0: plain output */
    unsigned threads;       /* write-pass and gzip workers; 0: one per core */
    int force, quiet, stats, json;
    const char *in, *out;
    /* Batch mode: -o DIR with several inputs, -r to walk directories. */
    const char *out_dir;
    int recursive;
    int batch;                  /* print one summary line per file */
    char **inputs;
    int n_inputs;
    const char *keep_rules[HPROF_REDACT_MAX_RULES];
    int salvage;                /* --salvage: keep what a cut dump holds */
    struct cli_salvage salvaged;
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
            "       %s [options] -o DIR [-r] IN...    (batch)\n"
            "\n"
            "Options:\n"
            "  --arrays=MODE        what becomes of other primitive arrays [Default: empty]\n"
            "                         empty   zero-length array, same id and type\n"
            "                         zero    same length, contents zeroed\n"
            "                         remove  no record (references to it dangle)\n"
            "  --keep-system-heaps  keep zygote and image heap objects\n"
            "  --redact[=strings]   replace kept String texts (and, unless =strings,\n"
            "                       bitmap pixels) by a filler of the same size\n"
            "  --redact-keep=CLASS.FIELD\n"
            "                       keep the text of Strings this field refers to\n"
            "                       (repeatable; LeakCanary's keys are always kept)\n"
            "  --redact-fields      zero number and char fields of application classes\n"
            "  -z, --gzip[=LEVEL]   gzip the output as jcmd -gz does [Default level: 6]\n"
            "  -j, --threads=N      N threads, 0 = one per core [Default: 0]: for one\n"
            "                       file, write-pass, gzip and read-ahead threads;\n"
            "                       in batch mode, files at once\n"
            "  -o, --output-dir=DIR batch: write each IN to DIR under its own name\n"
            "                       (.hprof, or .hprof.gz with -z); skip outputs newer\n"
            "                       than their input unless -f\n"
            "  -r, --recursive      batch: IN may be directories, searched for *.hprof\n"
            "                       and *.hprof.gz; outputs keep their relative paths\n"
            "  -f, --force          overwrite OUT; write to a terminal\n"
            "  --stats              print a report on standard error\n"
            "  --json               print the report as JSON (on standard output, or on\n"
            "                       standard error when OUT is standard output)\n"
            "  --salvage            a dump cut short: keep every complete record and\n"
            "                       sub-record, close the heap, and say what was lost\n"
            "  -q, --quiet          no progress line\n"
            "  -h, --help           show this help and exit\n"
            "  -V, --version        show the version and exit\n"
            "\n"
            "IN or OUT may be - for standard input or output; IN may be gzip-compressed.\n"
            "Exit status: 0 success, 1 invalid input, 2 usage, 3 I/O error.\n",
            cli_progname, cli_progname, cli_progname);
}

static int parse(int argc, char **argv, struct options *o)
{
    enum { OPT_ARRAYS = 256, OPT_KEEP_SYSTEM, OPT_STATS, OPT_JSON, OPT_SEGMENT, OPT_REDACT,
           OPT_REDACT_KEEP, OPT_REDACT_FIELDS };
    static const struct option long_options[] = {
        { "arrays", required_argument, NULL, OPT_ARRAYS },
        { "keep-system-heaps", no_argument, NULL, OPT_KEEP_SYSTEM },
        { "redact", optional_argument, NULL, OPT_REDACT },
        { "redact-keep", required_argument, NULL, OPT_REDACT_KEEP },
        { "redact-fields", no_argument, NULL, OPT_REDACT_FIELDS },
        { "gzip", optional_argument, NULL, 'z' },
        { "threads", required_argument, NULL, 'j' },
        { "output-dir", required_argument, NULL, 'o' },
        { "recursive", no_argument, NULL, 'r' },
        { "force", no_argument, NULL, 'f' },
        { "stats", no_argument, NULL, OPT_STATS },
        { "json", no_argument, NULL, OPT_JSON },
        { "segment-size", required_argument, NULL, OPT_SEGMENT },
        { "salvage", no_argument, NULL, OPT_SALVAGE },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    unsigned long long v;
    int c;
    while ((c = getopt_long(argc, argv, "z::j:o:rfqhV", long_options, NULL)) != -1) {
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
        case OPT_REDACT:
            if (optarg == NULL || strcmp(optarg, "all") == 0)
                o->shrink.redact = HPROF_REDACT_ALL;
            else if (strcmp(optarg, "strings") == 0)
                o->shrink.redact = HPROF_REDACT_STRINGS;
            else {
                cli_error("--redact: expected nothing, all or strings, got '%s'", optarg);
                return EXIT_USAGE;
            }
            break;
        case OPT_REDACT_KEEP: {
            const char *dot = strrchr(optarg, '.');
            if (dot == NULL || dot == optarg || dot[1] == '\0') {
                cli_error("--redact-keep: expected CLASS.FIELD, got '%s'", optarg);
                return EXIT_USAGE;
            }
            if (o->shrink.n_redact_keep == HPROF_REDACT_MAX_RULES) {
                cli_error("--redact-keep: at most %d rules", HPROF_REDACT_MAX_RULES);
                return EXIT_USAGE;
            }
            o->keep_rules[o->shrink.n_redact_keep++] = optarg;
            o->shrink.redact_keep = o->keep_rules;
            break;
        }
        case OPT_REDACT_FIELDS: o->shrink.redact_fields = 1; break;
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
        case 'o': o->out_dir = optarg; break;
        case 'r': o->recursive = 1; break;
        case 'f': o->force = 1; break;
        case OPT_STATS: o->stats = 1; break;
        case OPT_JSON: o->json = 1; break;
        case OPT_SALVAGE: o->salvage = 1; break;
        case 'q': o->quiet = 1; break;
        case 'h': usage(stdout); exit(EXIT_OK);
        case 'V': cli_version(); exit(EXIT_OK);
        default: usage(stderr); return EXIT_USAGE;
        }
    }
    int left = argc - optind;
    if (o->out_dir != NULL || o->recursive) {
        if (o->out_dir == NULL || left == 0) {
            cli_error(o->out_dir ? "batch mode needs at least one IN" : "-r needs -o DIR");
            return EXIT_USAGE;
        }
        o->inputs = argv + optind;
        o->n_inputs = left;
        return 0;
    }
    if ((o->shrink.n_redact_keep > 0 || o->shrink.redact_fields) && !o->shrink.redact) {
        cli_error("--redact-keep and --redact-fields need --redact");
        return EXIT_USAGE;
    }
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
#define ROW2(label, c) \
    fprintf(f, "  %-28s %15" PRIu64 " %12" PRIu64 " bytes\n", label, (c).count, (c).bytes)
    fprintf(f, "  %-28s %15" PRIu64 "\n", "roots dropped", s->roots_dropped);
    if (o->shrink.redact) {
        ROW2("strings redacted", s->strings_redacted);
        ROW2("bitmap buffers redacted", s->buffers_redacted);
        fprintf(f, "  %-28s %15" PRIu64 "\n", "strings kept by rule", s->strings_kept_by_rule);
        fprintf(f, "  %-28s %15" PRIu64 "\n", "fields zeroed", s->fields_zeroed);
    }
    fprintf(f, "  %-28s %15" PRIu64 " found, %" PRIu64 " hashed, %" PRIu64
            " groups of identical buffers\n", "bitmap buffers", s->bitmap_candidates,
            s->bitmap_digested, s->bitmap_groups);
    fprintf(f, "  %-28s %15.3f s in %d passes (", "time", total, s->passes);
    for (int i = 0; i < s->passes && i < HPROF_SHRINK_MAX_PASSES; i++)
        fprintf(f, "%s%.3f", i ? " " : "", s->pass_seconds[i]);
    fprintf(f, ")%s\n", s->resolved_in_pass_1 ? ", resolved in pass 1" : "");
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
    json_count(f, "strings_redacted", &s->strings_redacted, 0);
    json_count(f, "buffers_redacted", &s->buffers_redacted, 0);
    fprintf(f, "\"strings_kept_by_rule\":%" PRIu64 ",\"fields_zeroed\":%" PRIu64 ",",
            s->strings_kept_by_rule, s->fields_zeroed);
    fprintf(f, "\"roots_dropped\":%" PRIu64 ",\"bitmap_candidates\":%" PRIu64
            ",\"bitmap_digested\":%" PRIu64 ",\"bitmap_groups\":%" PRIu64
            ",\"resolved_in_pass_1\":%s,\"pass_seconds\":[",
            s->roots_dropped, s->bitmap_candidates, s->bitmap_digested, s->bitmap_groups,
            s->resolved_in_pass_1 ? "true" : "false");
    for (int i = 0; i < s->passes && i < HPROF_SHRINK_MAX_PASSES; i++)
        fprintf(f, "%s%.6f", i ? "," : "", s->pass_seconds[i]);
    fprintf(f, "]");
    if (o->salvage)
        cli_salvage_json(f, &o->salvaged);
    fprintf(f, "}\n");
    fflush(f); /* batch children leave with _exit() */
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
    cli_set_salvage(o->salvage);
    int rc = cli_open_reader(o->in, &in_fd, &r, &err);
    if (rc == HPROF_OK) {
        sink = o->gzip_level ? hprof_sink_new_gzip(out.fd, o->gzip_level, o->threads, &err)
                             : hprof_sink_new_fd(out.fd, &err);
        rc = sink ? HPROF_OK : err.code;
        if (sink != NULL && out.tmp != NULL)
            hprof_sink_set_writeback(sink, cli_writeback_step(hprof_reader_size(r)));
    }
    cli_progress_init(&progress, name, o->quiet);
    o->shrink.progress = on_progress;
    o->shrink.progress_ctx = &progress;
    o->shrink.threads = o->threads;
    if (rc == HPROF_OK)
        rc = hprof_shrink(r, sink, &o->shrink, &stats, &err);
    if (rc == HPROF_OK)
        rc = hprof_sink_finish(sink);
    if (rc == HPROF_OK && o->salvage) /* before the reader goes */
        cli_salvage_collect(&o->salvaged, r, 1);
    cli_progress_done(&progress);
    uint64_t written = 0;
    if (rc == HPROF_OK && out.tmp != NULL) {
        struct stat st;
        if (fstat(out.fd, &st) == 0)
            written = (uint64_t)st.st_size;
    }
    hprof_sink_free(sink);
    cli_close_reader(in_fd, r);
    if (rc != HPROF_OK) {
        cli_error("%s: %s", name, err.message[0] ? err.message : "failed");
        cli_output_abort(&out);
        return cli_exit_code(rc);
    }
    if ((code = cli_output_commit(&out)) != 0)
        return code;
    if (o->batch && !o->json) {
        double secs = 0;
        for (int i = 0; i < stats.passes && i < HPROF_SHRINK_MAX_PASSES; i++)
            secs += stats.pass_seconds[i];
        printf("%s -> %s: %" PRIu64 " -> %" PRIu64 " bytes (%.1f%%), %.2f s\n", o->in, o->out,
               stats.bytes_in, written ? written : stats.bytes_out,
               ratio(written ? written : stats.bytes_out, stats.bytes_in), secs);
        fflush(stdout);
    }
    if (o->salvage)
        cli_salvage_print(name, &o->salvaged);
    if (o->stats)
        print_stats(stderr, o, &stats, written);
    if (o->json)
        print_json(strcmp(o->out, "-") == 0 ? stderr : stdout, o, &stats, written);
    return EXIT_OK;
}

/* ---- Batch mode ------------------------------------------------------------- */

struct file_list {
    char **in, **out;
    size_t n, cap;
};

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int is_dump_name(const char *path)
{
    return ends_with(path, ".hprof") || ends_with(path, ".hprof.gz");
}

/* DIR/REL with REL's ".gz" dropped, and added back with --gzip. */
static char *output_name(const struct options *o, const char *rel)
{
    size_t n = strlen(rel) - (ends_with(rel, ".gz") ? 3 : 0);
    size_t len = strlen(o->out_dir) + 1 + n + sizeof ".gz";
    char *out = malloc(len);
    if (out != NULL)
        snprintf(out, len, "%s/%.*s%s", o->out_dir, (int)n, rel, o->gzip_level ? ".gz" : "");
    return out;
}

static int add_file(struct file_list *l, const struct options *o, const char *in, const char *rel)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **a = realloc(l->in, cap * sizeof *a), **b = a ? realloc(l->out, cap * sizeof *b) : NULL;
        if (a != NULL)
            l->in = a;
        if (b == NULL)
            return -1;
        l->out = b;
        l->cap = cap;
    }
    l->in[l->n] = strdup(in);
    l->out[l->n] = output_name(o, rel);
    if (l->in[l->n] == NULL || l->out[l->n] == NULL)
        return -1;
    l->n++;
    return 0;
}

/* nftw() has no context argument; the walk fills these. */
static struct file_list *walk_list;
static const struct options *walk_options;
static size_t walk_root_len;
static int walk_failed;

static int walk_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type == FTW_F && is_dump_name(path) &&
        add_file(walk_list, walk_options, path, path + walk_root_len) != 0)
        walk_failed = 1;
    return walk_failed;
}

static int compare_paths(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int collect_inputs(const struct options *o, struct file_list *l)
{
    for (int i = 0; i < o->n_inputs; i++) {
        const char *in = o->inputs[i];
        struct stat st;
        if (stat(in, &st) != 0) {
            cli_error("%s: %s", in, strerror(errno));
            return EXIT_IO;
        }
        if (S_ISDIR(st.st_mode)) {
            if (!o->recursive) {
                cli_error("%s: is a directory (use -r)", in);
                return EXIT_USAGE;
            }
            size_t before = l->n;
            walk_list = l;
            walk_options = o;
            walk_root_len = strlen(in) + (in[strlen(in) - 1] != '/');
            if (nftw(in, walk_entry, 32, FTW_PHYS) != 0 || walk_failed) {
                cli_error("%s: cannot walk: %s", in, strerror(errno));
                return EXIT_IO;
            }
            /* a stable order, whatever the directory order */
            qsort(l->in + before, l->n - before, sizeof *l->in, compare_paths);
            for (size_t k = before; k < l->n; k++) {
                free(l->out[k]);
                l->out[k] = output_name(o, l->in[k] + walk_root_len);
            }
            continue;
        }
        const char *base = strrchr(in, '/');
        if (add_file(l, o, in, base ? base + 1 : in) != 0) {
            cli_error("out of memory");
            return EXIT_IO;
        }
    }
    return 0;
}

/* mkdir -p of the directory part of `path`. */
static int make_parents(const char *path)
{
    char *dir = strdup(path);
    int rc = 0;
    if (dir == NULL)
        return -1;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0777) != 0 && errno != EEXIST)
            rc = -1;
        *p = '/';
    }
    free(dir);
    return rc;
}

/* An output newer than its input was made by an earlier run. */
static int up_to_date(const char *in, const char *out)
{
    struct stat si, so;
    if (stat(in, &si) != 0 || stat(out, &so) != 0)
        return 0;
    return so.st_mtim.tv_sec > si.st_mtim.tv_sec ||
           (so.st_mtim.tv_sec == si.st_mtim.tv_sec && so.st_mtim.tv_nsec > si.st_mtim.tv_nsec);
}

static volatile sig_atomic_t batch_signal;

static void on_batch_signal(int sig)
{
    batch_signal = sig;
}

static int run_one_child(struct options *o, const char *in, const char *out)
{
    o->in = in;
    o->out = out;
    o->quiet = 1;
    o->threads = 1;         /* the parallelism is across files */
    if (make_parents(out) != 0) {
        cli_error("%s: cannot create its directory: %s", out, strerror(errno));
        return EXIT_IO;
    }
    return shrink_file(o);
}

static int run_batch(struct options *o)
{
    struct file_list l = { 0 };
    int worst = collect_inputs(o, &l);
    unsigned jobs = o->threads ? o->threads : (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    unsigned running = 0;
    size_t next = 0;
    if (jobs < 1)
        jobs = 1;
    o->batch = 1;
    /* Children die of SIGINT/SIGTERM removing their temporary files (the
     * handlers of cli.c); the parent stops starting new ones and waits. */
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_batch_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    pid_t *pids = calloc(jobs, sizeof *pids);
    if (pids == NULL)
        worst = EXIT_IO;
    while (worst != EXIT_USAGE && pids != NULL && (next < l.n || running > 0)) {
        if (next < l.n && running < jobs && !batch_signal) {
            size_t i = next++;
            if (!o->force && up_to_date(l.in[i], l.out[i])) {
                if (o->json) {
                    printf("{\"input\":");
                    json_string(stdout, l.in[i]);
                    printf(",\"output\":");
                    json_string(stdout, l.out[i]);
                    printf(",\"skipped\":true}\n");
                } else
                    printf("%s -> %s: skipped, output is newer (use -f)\n", l.in[i], l.out[i]);
                fflush(stdout);
                continue;
            }
            fflush(stdout);
            pid_t pid = fork();
            if (pid == 0) {
                sigaction(SIGINT, &old_int, NULL);
                sigaction(SIGTERM, &old_term, NULL);
                o->force = 1; /* the up-to-date check above decided */
                _exit(run_one_child(o, l.in[i], l.out[i]));
            }
            if (pid < 0) {
                cli_error("%s: cannot start: %s", l.in[i], strerror(errno));
                worst = EXIT_IO;
                continue;
            }
            for (unsigned k = 0; k < jobs; k++)
                if (pids[k] == 0) {
                    pids[k] = pid;
                    break;
                }
            running++;
            continue;
        }
        if (batch_signal && next < l.n)
            next = l.n; /* start nothing more */
        int status;
        pid_t done = wait(&status);
        if (done < 0) {
            if (errno == EINTR) {
                for (unsigned k = 0; k < jobs; k++)
                    if (pids[k] > 0)
                        kill(pids[k], batch_signal ? batch_signal : SIGTERM);
                continue;
            }
            break;
        }
        for (unsigned k = 0; k < jobs; k++)
            if (pids[k] == done)
                pids[k] = 0;
        running--;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_IO;
        if (code > worst)
            worst = code;
    }
    free(pids);
    for (size_t i = 0; i < l.n; i++) {
        free(l.in[i]);
        free(l.out[i]);
    }
    free(l.in);
    free(l.out);
    if (batch_signal) {
        signal(batch_signal, SIG_DFL);
        raise(batch_signal);
    }
    return worst;
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
    return o.out_dir ? run_batch(&o) : shrink_file(&o);
}
