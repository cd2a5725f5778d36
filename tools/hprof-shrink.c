/*
 * hprof-shrink - make a heap dump small enough to upload, keeping what a
 * memory analysis needs.  The work is hprof_shrink() in libhprof; this file
 * is options, files and reports.
 */
#define _GNU_SOURCE /* nftw() with FTW_ACTIONRETVAL */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
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
    char *out_alloc;            /* OUT a directory: the file in it */
    /* Batch mode: -o DIR with several inputs, -r to walk directories. */
    const char *out_dir;
    int recursive;
    int batch;                  /* print one summary line per file */
    char **inputs;
    int n_inputs;
    const char *keep_rules[HPROF_REDACT_MAX_RULES];
    const char *mapping_path;   /* --mapping, loaded once for every input */
    int salvage;                /* --salvage: keep what a cut dump holds */
    int sync;                   /* --sync 1, --no-sync 0; -1: in batch mode only */
    /* --shard=K/N: this run is worker K (from 0) of N sharing one tree;
     * shard_count 0: no sharding. */
    unsigned shard_index, shard_count;
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
            "                       (repeatable; LeakCanary's KeyedWeakReference key and\n"
            "                       name and the runtime's thread names are always kept)\n"
            "  --redact-fields      zero number and char fields of every class but the\n"
            "                       structural ones analyzers read (man page)\n"
            "  --keep-names         keep the STRING records nothing refers to (HotSpot's\n"
            "                       symbol table, string literals included)\n"
            "  --jvm                write a standard 1.0.2 dump from an Android one, as\n"
            "                       hprof-conv does, for MAT and VisualVM\n"
            "  --mapping=FILE       restore class, field and method names with a\n"
            "                       ProGuard/R8 mapping.txt\n"
            "  --keep-duplicates    do not merge byte-identical bitmap buffers\n"
            "  --dump=N             of a file of several heap dumps (the JDK's hprof\n"
            "                       agent's), keep the N-th alone (1-based); by\n"
            "                       default each is shrunk on its own\n"
            "  -z, --gzip[=LEVEL]   gzip the output as jcmd -gz does [Default level: 6];\n"
            "                       attach the level: -z9, --gzip=9, or -1 ... -9\n"
            "  -j, --threads=N      N threads, 0 = one per core [Default: 0]: for one\n"
            "                       file, inflating a .gz input, write-pass, gzip and\n"
            "                       read-ahead threads;\n"
            "                       in batch mode, files at once\n"
            "  -o, --output-dir=DIR batch: write each IN to DIR under its own name\n"
            "                       (.hprof, or .hprof.gz with -z); skip outputs made\n"
            "                       from their input as it is now unless -f\n"
            "  -r, --recursive      batch: IN may be directories, searched for *.hprof\n"
            "                       and *.hprof.gz; outputs keep their relative paths\n"
            "  --shard=K/N          batch: take only the inputs of shard K (0 to N-1) of\n"
            "                       N, chosen by a hash of each relative path, so that\n"
            "                       N runs on N machines share one tree\n"
            "  -f, --force          overwrite OUT; write to a terminal\n"
            "  --sync               write each output to disk (fsync) before naming it,\n"
            "                       so that it survives a crash [Default: in batch mode]\n"
            "  --no-sync            leave the writing to disk to the system, as gzip does\n"
            "                       [Default: for one file]\n"
            "  --stats              print a report on standard error\n"
            "  --json               print the report as JSON (on standard output, or on\n"
            "                       standard error when OUT is standard output)\n"
            "  --segment-size=BYTES largest heap segment to write [Default: 33554432]\n"
            "  --salvage            a dump cut short: keep every complete record and\n"
            "                       sub-record, close the heap, and say what was lost\n"

            "  -q, --quiet          no progress, summary or warnings\n"
            "  -h, --help           show this help and exit\n"
            "  -V, --version        show the version and exit\n"
            "\n"
            "IN or OUT may be - for standard input or output; IN may be gzip-compressed.\n"
            "Exit status: 0 success, 1 invalid input, 2 usage, 3 I/O error.\n",
            cli_progname, cli_progname, cli_progname);
}

#define MAX_SHARDS 1000000u

/* "K/N", both decimal, 0 <= K < N. */
static int parse_shard(const char *arg, struct options *o)
{
    const char *slash = strchr(arg, '/');
    unsigned long long k, n;
    char kbuf[16];
    if (slash == NULL || (size_t)(slash - arg) >= sizeof kbuf)
        return -1;
    memcpy(kbuf, arg, (size_t)(slash - arg));
    kbuf[slash - arg] = '\0';
    if (cli_parse_uint(kbuf, MAX_SHARDS, &k) != 0 || cli_parse_uint(slash + 1, MAX_SHARDS, &n) != 0 ||
        n == 0 || k >= n)
        return -1;
    o->shard_index = (unsigned)k;
    o->shard_count = (unsigned)n;
    return 0;
}

static int parse(int argc, char **argv, struct options *o)
{
    enum { OPT_ARRAYS = 256, OPT_KEEP_SYSTEM, OPT_STATS, OPT_JSON, OPT_SEGMENT, OPT_REDACT,
           OPT_REDACT_KEEP, OPT_REDACT_FIELDS, OPT_KEEP_NAMES, OPT_JVM, OPT_MAPPING,
           OPT_KEEP_DUPLICATES, OPT_SYNC, OPT_NO_SYNC, OPT_DUMP, OPT_SHARD };
    static const struct option long_options[] = {
        { "arrays", required_argument, NULL, OPT_ARRAYS },
        { "keep-system-heaps", no_argument, NULL, OPT_KEEP_SYSTEM },
        { "redact", optional_argument, NULL, OPT_REDACT },
        { "redact-keep", required_argument, NULL, OPT_REDACT_KEEP },
        { "redact-fields", no_argument, NULL, OPT_REDACT_FIELDS },
        { "keep-names", no_argument, NULL, OPT_KEEP_NAMES },
        { "jvm", no_argument, NULL, OPT_JVM },
        { "mapping", required_argument, NULL, OPT_MAPPING },
        { "keep-duplicates", no_argument, NULL, OPT_KEEP_DUPLICATES },
        { "dump", required_argument, NULL, OPT_DUMP },
        { "gzip", optional_argument, NULL, 'z' },
        { "threads", required_argument, NULL, 'j' },
        { "output-dir", required_argument, NULL, 'o' },
        { "recursive", no_argument, NULL, 'r' },
        { "shard", required_argument, NULL, OPT_SHARD },
        { "force", no_argument, NULL, 'f' },
        { "sync", no_argument, NULL, OPT_SYNC },
        { "no-sync", no_argument, NULL, OPT_NO_SYNC },
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
    int c, z_bare = 0;
    while ((c = getopt_long(argc, argv, "z::j:o:rfqhV123456789", long_options, NULL)) != -1) {
        switch (c) {
        case OPT_ARRAYS:
            if (strcmp(optarg, "empty") == 0)
                o->shrink.arrays = HPROF_ARRAYS_EMPTY;
            else if (strcmp(optarg, "zero") == 0)
                o->shrink.arrays = HPROF_ARRAYS_ZERO;
            else if (strcmp(optarg, "remove") == 0)
                o->shrink.arrays = HPROF_ARRAYS_REMOVE;
            else {
                return cli_usage_error("--arrays: expected empty, zero or remove, got '%s'", optarg);
            }
            break;
        case OPT_KEEP_SYSTEM: o->shrink.keep_system_heaps = 1; break;
        case OPT_REDACT:
            if (optarg == NULL || strcmp(optarg, "all") == 0)
                o->shrink.redact = HPROF_REDACT_ALL;
            else if (strcmp(optarg, "strings") == 0)
                o->shrink.redact = HPROF_REDACT_STRINGS;
            else {
                return cli_usage_error("--redact: expected nothing, all or strings, got '%s'", optarg);
            }
            break;
        case OPT_REDACT_KEEP: {
            const char *dot = strrchr(optarg, '.');
            if (dot == NULL || dot == optarg || dot[1] == '\0') {
                return cli_usage_error("--redact-keep: expected CLASS.FIELD, got '%s'", optarg);
            }
            if (o->shrink.n_redact_keep == HPROF_REDACT_MAX_RULES) {
                return cli_usage_error("--redact-keep: at most %d rules", HPROF_REDACT_MAX_RULES);
            }
            o->keep_rules[o->shrink.n_redact_keep++] = optarg;
            o->shrink.redact_keep = o->keep_rules;
            break;
        }
        case OPT_REDACT_FIELDS: o->shrink.redact_fields = 1; break;
        case OPT_KEEP_NAMES: o->shrink.keep_names = 1; break;
        case OPT_JVM: o->shrink.jvm = 1; break;
        case OPT_MAPPING: o->mapping_path = optarg; break;
        case OPT_KEEP_DUPLICATES: o->shrink.keep_duplicates = 1; break;
        case OPT_DUMP:
            if (cli_parse_uint(optarg, UINT_MAX, &v) != 0 || v < 1)
                return cli_usage_error("--dump: expected a heap dump's number from 1, got '%s'",
                                       optarg);
            o->shrink.dump = (unsigned)v;
            break;
        case 'z':
            o->gzip_level = 6;
            z_bare = optarg == NULL;
            if (optarg != NULL) {
                if (cli_parse_uint(optarg, 9, &v) != 0 || v < 1) {
                    return cli_usage_error("--gzip: expected a level from 1 to 9, got '%s'", optarg);
                }
                o->gzip_level = (int)v;
            }
            break;
        case 'j':
            if (cli_parse_uint(optarg, 256, &v) != 0) {
                return cli_usage_error("--threads: expected 0 to 256, got '%s'", optarg);
            }
            o->threads = (unsigned)v;
            break;
        case OPT_SEGMENT:
            if (cli_parse_uint(optarg, UINT32_MAX, &v) != 0 || v < HPROF_SEGMENT_LIMIT_MIN) {
                return cli_usage_error("--segment-size: expected %u to %u bytes, got '%s'",
                          HPROF_SEGMENT_LIMIT_MIN, UINT32_MAX, optarg);
            }
            o->shrink.segment_limit = (uint32_t)v;
            break;
        case 'o':
            if (*optarg == '\0')
                return cli_usage_error("--output-dir: expected a directory, got ''");
            o->out_dir = optarg;
            break;
        case 'r': o->recursive = 1; break;
        case OPT_SHARD:
            if (parse_shard(optarg, o) != 0)
                return cli_usage_error("--shard: expected K/N with 0 <= K < N <= %u, got '%s'",
                                       MAX_SHARDS, optarg);
            break;
        case 'f': o->force = 1; break;
        case OPT_SYNC: o->sync = 1; break;
        case OPT_NO_SYNC: o->sync = 0; break;
        case OPT_STATS: o->stats = 1; break;
        case OPT_JSON: o->json = 1; break;
        case OPT_SALVAGE: o->salvage = 1; break;
        case 'q': o->quiet = 1; break;
        case 'h': usage(stdout); exit(EXIT_OK);
        case 'V': cli_version(); exit(EXIT_OK);
        case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8':
        case '9':
            o->gzip_level = c - '0'; /* gzip's -1 ... -9: a level, and gzip */
            z_bare = 0;
            break;
        default: return cli_usage_error(NULL);
        }
    }
    int left = argc - optind;
    if (o->shard_count != 0 && o->out_dir == NULL)
        return cli_usage_error("--shard needs batch mode (-o DIR)");
    if (o->out_dir != NULL || o->recursive) {
        if (o->out_dir == NULL || left == 0) {
            return cli_usage_error(o->out_dir ? "batch mode needs at least one IN" : "-r needs -o DIR");
        }
        o->inputs = argv + optind;
        o->n_inputs = left;
        return 0;
    }
    if ((o->shrink.n_redact_keep > 0 || o->shrink.redact_fields) && !o->shrink.redact) {
        return cli_usage_error("--redact-keep and --redact-fields need --redact");
    }
    if (left == 0) {
        o->in = o->out = "-";
    } else if (left == 2) {
        o->in = argv[optind];
        o->out = argv[optind + 1];
        if (*o->in == '\0' || *o->out == '\0')
            return cli_usage_error("an empty file name (use - for standard %s)",
                                   *o->in == '\0' ? "input" : "output");
    } else {
        /* -z's level is an optional argument: "-z 9" is -z and a file 9 */
        const char *first = argv[optind];
        if (z_bare && first[0] >= '1' && first[0] <= '9' && first[1] == '\0')
            return cli_usage_error("'%s' after -z is taken as a file name: attach the level "
                                   "(-z%s, --gzip=%s or -%s)", first, first, first, first);
        return cli_usage_error(left == 1 ? "missing OUT (use - for standard output)"
                                         : "too many arguments");
    }
    return 0;
}

static double ratio(uint64_t out, uint64_t in)
{
    return in ? 100.0 * (double)out / (double)in : 0.0;
}

/* Where --stats prints a counter (HPROF_SHRINK_COUNTERS' TEXT), in the
 * order of the report. */
enum stats_text { TEXT_ROWS, TEXT_NAMES, TEXT_JVM, TEXT_MAPPING, TEXT_REDACT, TEXT_BITMAPS,
                  TEXT_PARTS, TEXT_HIDDEN = TEXT_PARTS };

struct counter {
    const char *key, *label, *unit;
    enum stats_text text;
    int is_count;       /* a struct hprof_count, else a uint64_t */
    size_t offset;      /* in struct hprof_shrink_stats */
};

#define COUNTER_IS_COUNT 1
#define COUNTER_IS_U64 0
#define COUNTER(kind, field, key, text, label, unit) \
    { key, label, unit, TEXT_##text, COUNTER_IS_##kind, offsetof(struct hprof_shrink_stats, field) },
static const struct counter counters[] = { HPROF_SHRINK_COUNTERS(COUNTER) };
#undef COUNTER
#define N_COUNTERS (sizeof counters / sizeof counters[0])

static const struct hprof_count *counter_count(const struct hprof_shrink_stats *s,
                                               const struct counter *c)
{
    return (const struct hprof_count *)(const void *)((const char *)s + c->offset);
}

static uint64_t counter_value(const struct hprof_shrink_stats *s, const struct counter *c)
{
    return *(const uint64_t *)(const void *)((const char *)s + c->offset);
}

static int text_shown(const struct options *o, enum stats_text t)
{
    switch (t) {
    case TEXT_NAMES: return !o->shrink.keep_names;
    case TEXT_JVM: return o->shrink.jvm;
    case TEXT_MAPPING: return o->shrink.mapping != NULL;
    case TEXT_REDACT: return o->shrink.redact != HPROF_REDACT_NONE;
    case TEXT_HIDDEN: return 0;
    default: return 1;
    }
}

/* The counters of one part of --stats: a line for each labelled counter,
 * the unlabelled ones after it. */
static void print_counters(FILE *f, const struct hprof_shrink_stats *s, enum stats_text t)
{
    int open = 0;
    for (size_t i = 0; i < N_COUNTERS; i++) {
        const struct counter *c = &counters[i];
        if (c->text != t)
            continue;
        if (c->label != NULL) {
            fprintf(f, "%s  %-28s", open ? "\n" : "", c->label);
            open = 1;
        }
        if (c->is_count)
            fprintf(f, " %15" PRIu64 " %12" PRIu64 " bytes", counter_count(s, c)->count,
                    counter_count(s, c)->bytes);
        else
            fprintf(f, c->label ? " %15" PRIu64 "%s" : ", %" PRIu64 "%s", counter_value(s, c),
                    c->unit);
    }
    if (open)
        fputc('\n', f);
}

static void print_stats(FILE *f, const struct options *o, const struct hprof_shrink_stats *s,
                        uint64_t written)
{
    double total = 0;
    for (int i = 0; i < s->passes && i < HPROF_SHRINK_MAX_PASSES; i++)
        total += s->pass_seconds[i];
    fprintf(f, "%s -> %s\n", o->in, o->out);
    fprintf(f, "  %-28s %15" PRIu64 " bytes\n", "input", s->bytes_in);
    if (s->dumps > 1)
        fprintf(f, "  %-28s %15u\n", "heap dumps, each shrunk", s->dumps);
    fprintf(f, "  %-28s %15" PRIu64 " bytes (%.1f%%)\n", "output", s->bytes_out,
            ratio(s->bytes_out, s->bytes_in));
    if (o->gzip_level)
        fprintf(f, "  %-28s %15" PRIu64 " bytes (%.1f%%)\n", "output, gzipped", written,
                ratio(written, s->bytes_in));
    fprintf(f, "  %-28s %15s %18s\n", "", "count", "contents");
    for (enum stats_text t = 0; t < TEXT_PARTS; t++)
        if (text_shown(o, t))
            print_counters(f, s, t);
    fprintf(f, "  %-28s %15.3f s in %d pass%s (", "time", total, s->passes,
            s->passes == 1 ? "" : "es");
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
    cli_json_string(f, s, strlen(s));
}

/* "{" and, under --shard, the shard's name: every line a shard prints
 * says which it is, so that the lines of N shards can be put together. */
static void json_open(FILE *f, const struct options *o)
{
    fputc('{', f);
    if (o->shard_count != 0)
        fprintf(f, "\"shard\":\"%u/%u\",", o->shard_index, o->shard_count);
}

/* One JSON object on one line; keys are documented in hprof-shrink(1). */
static void print_json(FILE *f, const struct options *o, const struct hprof_shrink_stats *s,
                       uint64_t written)
{
    static const char *const modes[] = { "empty", "zero", "remove" };
    json_open(f, o);
    fprintf(f, "\"input\":");
    json_string(f, o->in);
    fprintf(f, ",\"output\":");
    json_string(f, o->out);
    fprintf(f, ",\"status\":\"shrunk\",\"arrays\":\"%s\",\"keep_system_heaps\":%s,\"gzip_level\":%d,",
            modes[o->shrink.arrays], o->shrink.keep_system_heaps ? "true" : "false",
            o->gzip_level);
    fprintf(f, "\"bytes_in\":%" PRIu64 ",\"bytes_out\":%" PRIu64 ",\"bytes_written\":%" PRIu64
            ",", s->bytes_in, s->bytes_out, written);
    if (s->dumps > 1)
        fprintf(f, "\"dumps\":%u,", s->dumps);
    for (size_t i = 0; i < N_COUNTERS; i++) {
        const struct counter *c = &counters[i];
        if (c->text == TEXT_HIDDEN)
            continue;
        if (c->text == TEXT_JVM && c->label != NULL) /* the option, before its counters */
            fprintf(f, "\"jvm\":%s,", o->shrink.jvm ? "true" : "false");
        if (c->is_count)
            json_count(f, c->key, counter_count(s, c), 0);
        else
            fprintf(f, "\"%s\":%" PRIu64 ",", c->key, counter_value(s, c));
    }
    fprintf(f, "\"resolved_in_pass_1\":%s,\"pass_seconds\":[",
            s->resolved_in_pass_1 ? "true" : "false");
    for (int i = 0; i < s->passes && i < HPROF_SHRINK_MAX_PASSES; i++)
        fprintf(f, "%s%.6f", i ? "," : "", s->pass_seconds[i]);
    fprintf(f, "]");
    if (o->salvage)
        cli_salvage_json(f, &o->salvaged);
    fprintf(f, "}\n");
    fflush(f); /* batch children leave with _exit() */
}

/* On success, unless -q: "in -> out: 301 MB -> 49 MB (16.3%), 0.11 s" on
 * stderr, the line batch mode prints for each file. */
static void print_summary(const struct options *o, const struct hprof_shrink_stats *s,
                          uint64_t written, int out_is_file, double secs)
{
    char in[32], out[32];
    /* a gzip stream to a pipe or device: only its uncompressed size is known */
    int gz_unknown = o->gzip_level && !out_is_file;
    uint64_t n = out_is_file && written ? written : s->bytes_out;
    cli_format_bytes(in, sizeof in, s->bytes_in);
    cli_format_bytes(out, sizeof out, n);
    fprintf(stderr, "%s -> %s: %s -> %s%s (%.1f%%), %.2f s\n",
            strcmp(o->in, "-") == 0 ? "standard input" : cli_quote(o->in),
            strcmp(o->out, "-") == 0 ? "standard output" : cli_quote(o->out), in, out,
            gz_unknown ? " before gzip" : "", ratio(n, s->bytes_in), secs);
}

static void on_progress(void *ctx, int pass, int passes, uint64_t done, uint64_t total)
{
    cli_progress_update(ctx, pass, passes, done, total);
}

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

static char *output_name(const char *dir, const char *rel, int gzip);
static int ends_with_nocase(const char *s, const char *suffix);

static int shrink_file(struct options *o)
{
    struct hprof_error err = { 0 }, sink_err = { 0 };
    struct hprof_reader *r = NULL;
    struct hprof_sink *sink = NULL;
    struct hprof_shrink_stats stats;
    struct cli_output out;
    struct cli_progress progress;
    struct stat in_st = { 0 };
    int in_fd = -1, code;
    const char *name = strcmp(o->in, "-") == 0 ? "standard input" : o->in;

    if (strcmp(o->in, "-") != 0 && stat(o->in, &in_st) != 0) {
        cli_file_error(o->in, strerror(errno));
        return EXIT_IO;
    }
    /* OUT a directory: into it under IN's name, as cp does */
    struct stat out_st;
    char *into = NULL;
    if (strcmp(o->out, "-") != 0 && stat(o->out, &out_st) == 0 && S_ISDIR(out_st.st_mode)) {
        const char *base = strrchr(o->in, '/');
        if (strcmp(o->in, "-") == 0) {
            return cli_usage_error("%s: is a directory (with standard input, name the output file)",
                      cli_quote(o->out));
        }
        into = output_name(o->out, base ? base + 1 : o->in, o->gzip_level);
        if (into == NULL) {
            cli_error("out of memory");
            return EXIT_IO;
        }
        free(o->out_alloc);
        o->out = o->out_alloc = into;
    }
    code = cli_output_open(&out, o->out, o->force, strcmp(o->in, "-") ? &in_st : NULL);
    /* A batch run takes an output newer than its input for done: after a
     * crash, one the disk never got would pass for it. */
    if (code == 0 && (o->sync < 0 ? o->batch : o->sync) && (code = cli_output_sync(&out)) != 0)
        cli_output_abort(&out);
    /* A name that says the other format misleads whoever opens the file
     * later; it is the caller's name, so warn rather than change it. */
    if (code == 0 && out.tmp != NULL && !o->batch && !o->quiet) {
        if (o->gzip_level && !ends_with_nocase(o->out, ".gz"))
            cli_error("warning: %s: the output is gzip-compressed but its name does not end "
                      "in .gz", cli_quote(o->out));
        else if (!o->gzip_level && ends_with_nocase(o->out, ".gz"))
            cli_error("warning: %s: the name ends in .gz but the output is not compressed "
                      "(add -z)", cli_quote(o->out));
    }
    if (code != 0)
        return code;
    /* from here on one progress line: a pipe or a .gz input is spooled
     * (decompressed) first, then the passes read it */
    cli_progress_init(&progress, name, o->quiet || o->batch);
    cli_progress_note(&progress, "reading the input");
    cli_set_salvage(o->salvage);
    cli_set_input_threads(o->threads);
    int rc = cli_open_reader(o->in, &in_fd, &r, &err);
    if (rc == HPROF_OK) {
        sink = o->gzip_level ? hprof_sink_new_gzip(out.fd, o->gzip_level, o->threads, &sink_err)
                             : hprof_sink_new_fd(out.fd, &sink_err);
        rc = sink ? HPROF_OK : sink_err.code;
        if (sink != NULL && out.tmp != NULL) {
            if (out.dir_fd >= 0) /* synced at the commit */
                hprof_sink_set_writeback(sink, cli_writeback_step(hprof_reader_size(r)));
            hprof_sink_set_preallocate(sink, CLI_PREALLOCATE_STEP);
        }
    }
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
    int out_is_file = out.tmp != NULL;
    if (rc == HPROF_OK && out.tmp != NULL) {
        struct stat st;
        if (fstat(out.fd, &st) == 0)
            written = (uint64_t)st.st_size;
    }
    hprof_sink_free(sink);
    /* an input cut under us fails whatever touches its bytes first */
    int shrank = rc != HPROF_OK ? cli_input_shrank(o->in, in_fd, r) : 0;
    cli_close_reader(in_fd, r);
    if (rc != HPROF_OK) {
        if (shrank) {
            cli_output_abort(&out);
            return shrank;
        }
        /* the sink's own error is about OUT, anything else about IN */
        if (sink_err.code != HPROF_OK)
            cli_error("%s: %s", strcmp(o->out, "-") == 0 ? "standard output" : cli_quote(o->out),
                      sink_err.message[0] ? sink_err.message : "write failed");
        else
            cli_file_error(o->in, err.message);
        cli_output_abort(&out);
        return cli_exit_code(rc);
    }
    /* the input as it was before it was read: one changed since is redone */
    if (o->batch && out.tmp != NULL && S_ISREG(in_st.st_mode)) {
        char id[INPUT_IDENTITY_MAX];
        input_identity(id, sizeof id, &in_st);
        if (fsetxattr(out.fd, INPUT_IDENTITY_XATTR, id, strlen(id), 0) != 0 && errno != ENOTSUP)
            cli_error("warning: %s: cannot record its input's identity: %s", cli_quote(o->out),
                      strerror(errno));
    }
    if ((code = cli_output_commit(&out)) != 0)
        return code;
    if (o->batch && !o->json) {
        double secs = 0;
        for (int i = 0; i < stats.passes && i < HPROF_SHRINK_MAX_PASSES; i++)
            secs += stats.pass_seconds[i];
        printf("%s -> %s: %" PRIu64 " -> %" PRIu64 " bytes (%.1f%%), %.2f s\n", cli_quote(o->in),
               cli_quote(o->out), stats.bytes_in, written ? written : stats.bytes_out,
               ratio(written ? written : stats.bytes_out, stats.bytes_in), secs);
        fflush(stdout);
    }
    if (o->salvage && !o->quiet)
        cli_salvage_print(name, &o->salvaged);
    if (!o->batch && !o->quiet && !o->json && !o->stats)
        print_summary(o, &stats, written, out_is_file, cli_progress_seconds(&progress));
    if (o->stats)
        print_stats(stderr, o, &stats, written);
    if (o->json)
        print_json(strcmp(o->out, "-") == 0 ? stderr : stdout, o, &stats, written);
    return EXIT_OK;
}

/* ---- Batch mode ------------------------------------------------------------- */

/* Every input the batch meets, decided before any work starts: to do,
 * skipped (with a reason) or failed (with a reason and an exit code). */
enum job_state { JOB_TODO, JOB_SKIPPED, JOB_FAILED };

struct job {
    char *in, *out;         /* out: NULL when there is none */
    int state;
    int code;               /* JOB_FAILED: its exit code */
    char *reason;
};

struct file_list {
    struct job *jobs;
    size_t n, cap;
};

struct tally {
    size_t shrunk, failed, skipped;
};

static int ends_with_nocase(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

/* *.hprof and *.hprof.gz, in any case (ANDROID.HPROF). */
static int is_dump_name(const char *path)
{
    return ends_with_nocase(path, ".hprof") || ends_with_nocase(path, ".hprof.gz");
}

/* Whether the input at REL (its path below the root named on the command
 * line, or its base name) is this run's under --shard.  The hash is FNV-1a
 * of REL without ".gz": the same on every machine and in every run, and
 * the same for x.hprof and x.hprof.gz, which would write one output, so
 * that they meet in one shard, where find_collisions() sees them.  A file
 * added to the tree lands in exactly one shard; the others are unmoved. */
static int in_my_shard(const struct options *o, const char *rel)
{
    if (o->shard_count == 0)
        return 1;
    while (*rel == '/')
        rel++;
    size_t n = strlen(rel) - (ends_with_nocase(rel, ".gz") ? 3 : 0);
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)rel[i];
        h *= 0x100000001b3u;
    }
    return h % o->shard_count == o->shard_index;
}

/* DIR/REL with REL's ".gz" dropped, and added back with --gzip; DIR's
 * trailing slashes are not doubled. */
static char *output_name(const char *dir, const char *rel, int gzip)
{
    size_t dn = strlen(dir);
    while (dn > 1 && dir[dn - 1] == '/')
        dn--;
    while (*rel == '/')
        rel++;
    size_t n = strlen(rel) - (ends_with_nocase(rel, ".gz") ? 3 : 0);
    size_t len = dn + 1 + n + sizeof ".gz";
    char *out = malloc(len);
    if (out != NULL)
        snprintf(out, len, "%.*s%s%.*s%s", (int)dn, dir, dir[dn - 1] == '/' ? "" : "/", (int)n,
                 rel, gzip ? ".gz" : "");
    return out;
}

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

/* nftw() has no context argument; the walk fills these. */
static struct file_list *walk_list;
static const struct options *walk_options;
static size_t walk_root_len;
static int walk_failed;
static struct stat walk_out_dir;    /* the output directory: not walked */
static int walk_out_dir_known;

static int walk_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    const struct options *o = walk_options;
    const char *rel = path + (strlen(path) > walk_root_len ? walk_root_len : strlen(path));
    char reason[256];
    struct stat target;
    struct job *j = (struct job *)1;
    if (type != FTW_D && !in_my_shard(o, rel))
        return FTW_CONTINUE;
    switch (type) {
    case FTW_D:
        if (walk_out_dir_known && st->st_dev == walk_out_dir.st_dev &&
            st->st_ino == walk_out_dir.st_ino) {
            /* our own outputs, from this run or an earlier one; IN itself
             * as the output directory would overwrite every input */
            if (ftw->level == 0)
                j = add_job(walk_list, path, NULL, JOB_FAILED, EXIT_USAGE,
                            "is the output directory: choose another -o");
            return j ? FTW_SKIP_SUBTREE : FTW_STOP;
        }
        break;
    case FTW_DNR: {
        /* nftw() does not say why; opendir() will */
        DIR *d = opendir(path);
        snprintf(reason, sizeof reason, "cannot read this directory: %s",
                 d ? "unreadable" : strerror(errno));
        if (d)
            closedir(d);
        j = add_job(walk_list, path, NULL, JOB_FAILED, EXIT_IO, reason);
        break;
    }
    case FTW_NS:
        snprintf(reason, sizeof reason, "cannot stat: %s", strerror(errno));
        j = add_job(walk_list, path, NULL, JOB_FAILED, EXIT_IO, reason);
        break;
    case FTW_SL:
        if (!is_dump_name(path))
            break;
        /* a link to a dump is followed; to anything else, said why not */
        if (stat(path, &target) != 0) {
            snprintf(reason, sizeof reason, "skipped, a symbolic link to nothing (%s)",
                     strerror(errno));
            j = add_job(walk_list, path, NULL, JOB_SKIPPED, 0, reason);
        } else if (!S_ISREG(target.st_mode)) {
            j = add_job(walk_list, path, NULL, JOB_SKIPPED, 0,
                        "skipped, a symbolic link to something that is not a regular file");
        } else {
            char *out = output_name(o->out_dir, rel, o->gzip_level);
            j = out ? add_job(walk_list, path, out, JOB_TODO, 0, NULL) : NULL;
        }
        break;
    case FTW_F:
        if (!is_dump_name(path))
            break;
        if (!S_ISREG(st->st_mode)) {
            /* a FIFO would block the batch; a device has no end */
            snprintf(reason, sizeof reason, "skipped, not a regular file (%s)",
                     S_ISFIFO(st->st_mode) ? "a FIFO" : S_ISSOCK(st->st_mode) ? "a socket" :
                     S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) ? "a device" : "special");
            j = add_job(walk_list, path, NULL, JOB_SKIPPED, 0, reason);
        } else {
            char *out = output_name(o->out_dir, rel, o->gzip_level);
            j = out ? add_job(walk_list, path, out, JOB_TODO, 0, NULL) : NULL;
        }
        break;
    default:
        break;
    }
    if (j == NULL) {
        walk_failed = 1;
        return FTW_STOP;
    }
    return FTW_CONTINUE;
}

static int compare_jobs_by_input(const void *a, const void *b)
{
    return strcmp(((const struct job *)a)->in, ((const struct job *)b)->in);
}

static const struct job *sort_jobs;

static int compare_by_output(const void *a, const void *b)
{
    const struct job *x = &sort_jobs[*(const size_t *)a], *y = &sort_jobs[*(const size_t *)b];
    int c = strcmp(x->out, y->out);
    return c ? c : (x < y ? -1 : x > y);
}

/* Directory `dir`, just made, synced into its parent: an output synced
 * into a directory whose own name a crash loses is lost too.  A parent we
 * may write in but not read cannot be synced and is left so: a lost
 * directory only means outputs the next run makes again, never one that
 * passes for done.  (One another process of the batch made is synced by
 * that one, just after.)  @return 1, or 0 with errno set. */
static int new_dir_synced(const char *dir)
{
    return cli_sync_directory_of(dir) == 0 || errno == EACCES || errno == EPERM;
}

/* mkdir -p of `path` itself (dir = 1) or of its directory part, each new
 * directory made with `mode` (no more open than the inputs: see
 * cli_directory_mode()) and synced into its parent with `sync`. */
static int make_dirs(const char *path, int dir, int sync, mode_t mode)
{
    char *p0 = strdup(path);
    int rc = 0, first_error = 0;
    if (p0 == NULL)
        return -1;
    for (char *p = p0 + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        if (*p == '\0' && !dir)
            break;
        char c = *p;
        *p = '\0';
        if (mkdir(p0, mode) == 0 ? sync && !new_dir_synced(p0) : errno != EEXIST) {
            first_error = rc == 0 ? errno : first_error;
            rc = -1;
        }
        *p = c;
        if (c == '\0')
            break;
    }
    free(p0);
    if (rc != 0)
        errno = first_error; /* what the caller reports */
    return rc;
}

/* Two inputs must never write one output: every input of such a group is
 * marked failed (naming the others) before anything is written. */
static int find_collisions(struct file_list *l)
{
    size_t *idx = malloc((l->n + 1) * sizeof *idx), m = 0;
    if (idx == NULL)
        return -1;
    for (size_t i = 0; i < l->n; i++)
        if (l->jobs[i].state == JOB_TODO)
            idx[m++] = i;
    sort_jobs = l->jobs;
    qsort(idx, m, sizeof *idx, compare_by_output);
    for (size_t a = 0; a < m;) {
        size_t b = a + 1;
        while (b < m && strcmp(l->jobs[idx[a]].out, l->jobs[idx[b]].out) == 0)
            b++;
        for (size_t k = a; b - a > 1 && k < b; k++) {
            struct job *j = &l->jobs[idx[k]];
            const struct job *other = &l->jobs[idx[k == a ? a + 1 : a]];
            size_t len = strlen(other->in) + strlen(j->out) + 128;
            char *reason = malloc(len);
            if (reason == NULL) {
                free(idx);
                return -1;
            }
            snprintf(reason, len, "skipped: %s would write %s too%s", cli_quote(other->in),
                     cli_quote(j->out), b - a > 2 ? " (and others)" : "");
            free(j->reason);
            j->reason = reason;
            j->state = JOB_FAILED;
            j->code = EXIT_INVALID;
        }
        a = b;
    }
    free(idx);
    return 0;
}

static int collect_inputs(const struct options *o, struct file_list *l)
{
    for (int i = 0; i < o->n_inputs; i++) {
        const char *in = o->inputs[i];
        const char *base = strrchr(in, '/');
        struct stat st;
        int stat_rc = stat(in, &st);
        if ((stat_rc != 0 || !S_ISDIR(st.st_mode)) && !in_my_shard(o, base ? base + 1 : in))
            continue;
        if (stat_rc != 0) {
            char reason[256];
            snprintf(reason, sizeof reason, "%s", strerror(errno));
            if (add_job(l, in, NULL, JOB_FAILED, EXIT_IO, reason) == NULL)
                goto nomem;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            if (!o->recursive) {
                return cli_usage_error("%s: is a directory (use -r)", cli_quote(in));
            }
            size_t before = l->n;
            walk_list = l;
            walk_options = o;
            walk_root_len = strlen(in) + (in[strlen(in) - 1] != '/');
            walk_failed = 0;
            if (nftw(in, walk_entry, 32, FTW_PHYS | FTW_ACTIONRETVAL) == -1 || walk_failed) {
                if (walk_failed)
                    goto nomem;
                cli_error("%s: cannot walk: %s", cli_quote(in), strerror(errno));
                return EXIT_IO;
            }
            /* a stable order, whatever the directory order */
            qsort(l->jobs + before, l->n - before, sizeof *l->jobs, compare_jobs_by_input);
            continue;
        }
        /* named on the command line, it is read whatever it is (a FIFO
         * from a shell's <(...) included) */
        char *out = output_name(o->out_dir, base ? base + 1 : in, o->gzip_level);
        if (out == NULL || add_job(l, in, out, JOB_TODO, 0, NULL) == NULL) {
            free(out);
            goto nomem;
        }
    }
    if (find_collisions(l) != 0)
        goto nomem;
    return 0;
nomem:
    cli_error("out of memory");
    return EXIT_IO;
}

/* An output is up to date when it records the identity its input has
 * now (input_identity()).  One without the record (made by an older
 * version, or on a file system without user extended attributes) is up
 * to date when it is newer than its input. */
static int up_to_date(const char *in, const char *out)
{
    struct stat si, so;
    char now[INPUT_IDENTITY_MAX], recorded[INPUT_IDENTITY_MAX];
    if (stat(in, &si) != 0 || stat(out, &so) != 0)
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

static const char *exit_class(int code)
{
    switch (code) {
    case EXIT_OK: return "ok";
    case EXIT_INVALID: return "invalid input";
    case EXIT_USAGE: return "usage";
    default: return "I/O error";
    }
}

/* Batch mode's standard output has one writer, the parent: children
 * send their lines through a pipe, and each line goes out in one
 * write(), so that no other line lands inside it however long it is.
 * The first write error is kept for the exit status. */
static int batch_out_error;

static void write_line(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(STDOUT_FILENO, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (batch_out_error == 0)
                batch_out_error = k < 0 ? errno : EIO;
            return;
        }
        p += k;
        n -= (size_t)k;
    }
}

/* A line built in memory, then written whole. */
struct line {
    char *buf;
    size_t len;
    FILE *f;
};

static FILE *line_open(struct line *l)
{
    l->buf = NULL;
    l->len = 0;
    l->f = open_memstream(&l->buf, &l->len);
    return l->f;
}

static void line_emit(struct line *l)
{
    if (l->f == NULL || fclose(l->f) != 0) {
        cli_error("out of memory");
        if (batch_out_error == 0)
            batch_out_error = ENOMEM;
    } else {
        write_line(l->buf, l->len);
    }
    free(l->buf);
}

/* With --json, one object for an input that was not shrunk.  `offset`:
 * from "offset 0x..." in the message, if any. */
static void json_unshrunk(const struct options *o, const char *in, const char *out, int failed,
                          int code, const char *reason)
{
    struct line l;
    FILE *f = line_open(&l);
    if (f == NULL) {
        line_emit(&l);
        return;
    }
    json_open(f, o);
    fprintf(f, "\"input\":");
    cli_json_string(f, in, strlen(in));
    fprintf(f, ",\"output\":");
    if (out)
        cli_json_string(f, out, strlen(out));
    else
        fprintf(f, "null");
    fprintf(f, ",\"status\":\"%s\"", failed ? "failed" : "skipped");
    fprintf(f, ",\"%s\":", failed ? "error" : "reason");
    cli_json_string(f, reason, strlen(reason));
    if (failed) {
        const char *at = strstr(reason, "offset 0x");
        if (at != NULL)
            fprintf(f, ",\"offset\":%llu", strtoull(at + 9, NULL, 16));
        else
            fprintf(f, ",\"offset\":null");
        fprintf(f, ",\"exit\":%d,\"class\":\"%s\"", code, exit_class(code));
    }
    fprintf(f, "}\n");
    line_emit(&l);
}

/* An input that was not shrunk: skipped on stdout (text), failed on stderr,
 * and with --json an object on stdout. */
static void report_unshrunk(const struct options *o, const char *in, const char *out,
                            int failed, int code, const char *reason)
{
    if (!failed && !o->json) {
        struct line l;
        FILE *f = line_open(&l);
        if (f != NULL)
            fprintf(f, "%s%s%s: %s\n", cli_quote(in), out ? " -> " : "",
                    out ? cli_quote(out) : "", reason);
        line_emit(&l);
    }
    if (failed)
        cli_error("%s: %s", cli_quote(in), reason);
    if (o->json)
        json_unshrunk(o, in, out, failed, code, reason);
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
    o->threads = 1;         /* the parallelism is across files */
    struct stat in_st;
    mode_t mode = cli_directory_mode(stat(in, &in_st) == 0 ? &in_st : NULL);
    if (make_dirs(out, 0, o->sync != 0, mode) != 0) { /* batch mode syncs unless --no-sync */
        char reason[256];
        snprintf(reason, sizeof reason, "cannot create the output's directory: %s",
                 strerror(errno));
        report_unshrunk(o, in, out, 1, EXIT_IO, reason);
        return EXIT_IO;
    }
    int code = shrink_file(o);
    /* whatever failed said so on stderr; the first message is the error */
    if (code != 0 && o->json)
        json_unshrunk(o, in, out, 1, code, cli_first_error[0] ? cli_first_error : "failed");
    return code;
}

/* Every directory that will hold outputs, once: stale temporary files of
 * killed runs there are removed. */
static void clean_output_dirs(const struct file_list *l)
{
    char *last = NULL;
    for (size_t i = 0; i < l->n; i++) {
        if (l->jobs[i].out == NULL)
            continue;
        char *dir = strdup(l->jobs[i].out);
        if (dir == NULL)
            break;
        char *slash = strrchr(dir, '/');
        if (slash != NULL)
            slash[slash == dir] = '\0';
        if (last == NULL || strcmp(last, dir) != 0) {
            cli_remove_stale_temps(slash ? dir : ".");
            free(last);
            last = dir;
        } else {
            free(dir);
        }
    }
    free(last);
}

/* The output directory's mode: what every input named on the command
 * line lets read (a directory input, its files' mode is not known yet). */
static mode_t inputs_directory_mode(const struct options *o)
{
    struct stat all = { .st_mode = S_IFREG | 0777 }, st;
    int any = 0;
    for (int i = 0; i < o->n_inputs; i++)
        if (stat(o->inputs[i], &st) == 0) {
            all.st_mode &= (st.st_mode & 0777) | S_IFMT;
            any = 1;
        }
    return cli_directory_mode(any ? &all : NULL);
}

/* A running child: its pid, its job, and the read end of the pipe its
 * standard output goes to, with the part of a line not yet complete. */
struct child {
    pid_t pid;              /* 0: a free slot */
    size_t job;
    int from;               /* -1 once the child closed it */
    char *pending;
    size_t len, cap;
};

/* Write each complete line the child sent; with `eof`, the rest too. */
static void pass_lines_on(struct child *c, int eof)
{
    size_t start = 0;
    for (size_t i = 0; i < c->len; i++)
        if (c->pending[i] == '\n') {
            write_line(c->pending + start, i + 1 - start);
            start = i + 1;
        }
    if (eof && start < c->len) {
        write_line(c->pending + start, c->len - start);
        write_line("\n", 1);
        start = c->len;
    }
    memmove(c->pending, c->pending + start, c->len - start);
    c->len -= start;
}

/* Read what the child sent; @return 0, or 1 once it closed the pipe. */
static int read_child(struct child *c)
{
    if (c->cap - c->len < 4096) {
        size_t cap = c->cap ? c->cap * 2 : 16384;
        char *p = realloc(c->pending, cap);
        if (p == NULL) { /* pass on what there is, cut */
            write_line(c->pending, c->len);
            c->len = 0;
        } else {
            c->pending = p;
            c->cap = cap;
        }
    }
    ssize_t n = read(c->from, c->pending + c->len, c->cap - c->len);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : 1;
    c->len += (size_t)n;
    pass_lines_on(c, n == 0);
    return n == 0;
}

/* Starts job `i` in a free slot, its standard output a pipe to us.
 * @return 0, or -1 with errno set. */
static int start_child(struct options *o, struct file_list *l, size_t i, struct child *slots,
                       unsigned jobs, const struct sigaction *old_int,
                       const struct sigaction *old_term)
{
    struct job *j = &l->jobs[i];
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(stdout);
    /* A signal between fork() and the child's own handlers would reach
     * only the parent's, which a child ignores: held until both sides
     * have theirs, it reaches each. */
    sigset_t stop_signals, before;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    sigprocmask(SIG_BLOCK, &stop_signals, &before);
    pid_t pid = fork();
    if (pid == 0) {
        sigaction(SIGINT, old_int, NULL);
        sigaction(SIGTERM, old_term, NULL);
        sigprocmask(SIG_SETMASK, &before, NULL);
        for (unsigned k = 0; k < jobs; k++)
            if (slots[k].pid > 0 && slots[k].from >= 0)
                close(slots[k].from);
        close(fds[0]);
        if (dup2(fds[1], STDOUT_FILENO) < 0)
            _exit(EXIT_IO);
        close(fds[1]);
        o->force = 1; /* the up-to-date check decided */
        _exit(run_one_child(o, j->in, j->out));
    }
    int error = errno;
    close(fds[1]);
    if (pid < 0) {
        sigprocmask(SIG_SETMASK, &before, NULL);
        close(fds[0]);
        errno = error;
        return -1;
    }
    for (unsigned k = 0; k < jobs; k++)
        if (slots[k].pid == 0) {
            slots[k].pid = pid;
            slots[k].job = i;
            slots[k].from = fds[0];
            slots[k].len = 0;
            break;
        }
    sigprocmask(SIG_SETMASK, &before, NULL);
    return 0;
}

/* Waits for output from the children, or a signal; reaps a child once
 * its pipe is closed.  @return its slot, or -1 (nothing reaped). */
static int reap_child(struct child *slots, unsigned jobs, int *status)
{
    struct pollfd pfd[256];
    unsigned slot_of[256], n = 0;
    for (unsigned k = 0; k < jobs && n < 256; k++)
        if (slots[k].pid > 0) {
            pfd[n].fd = slots[k].from;
            pfd[n].events = POLLIN;
            slot_of[n++] = k;
        }
    for (unsigned i = 0; i < n; i++) /* closed already: reap it */
        if (pfd[i].fd < 0) {
            struct child *c = &slots[slot_of[i]];
            if (waitpid(c->pid, status, 0) < 0 && errno == EINTR)
                return -1;
            c->pid = 0;
            return (int)slot_of[i];
        }
    if (poll(pfd, n, -1) < 0)
        return -1;
    for (unsigned i = 0; i < n; i++) {
        struct child *c = &slots[slot_of[i]];
        if (pfd[i].revents && read_child(c)) {
            close(c->from);
            c->from = -1;
        }
    }
    errno = 0;
    return -1;
}

static int run_batch(struct options *o)
{
    struct file_list l = { 0 };
    struct tally t = { 0 };
    struct stat st;
    int worst = 0;
    unsigned jobs = o->threads ? o->threads : (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    unsigned running = 0;
    size_t next = 0;
    int signal_passed_on = 0;
    if (jobs < 1)
        jobs = 1;
    if (jobs > 256)
        jobs = 256;
    o->batch = 1;
    /* The output directory exists before the walk, so that the walk can
     * leave it out when it lies inside an input directory. */
    if (make_dirs(o->out_dir, 1, o->sync != 0, inputs_directory_mode(o)) != 0 ||
        stat(o->out_dir, &st) != 0) {
        cli_error("%s: cannot create the output directory: %s", cli_quote(o->out_dir),
                  strerror(errno));
        return EXIT_IO;
    }
    if (!S_ISDIR(st.st_mode)) {
        return cli_usage_error("%s: not a directory", cli_quote(o->out_dir));
    }
    walk_out_dir = st;
    walk_out_dir_known = 1;
    worst = collect_inputs(o, &l);
    if (worst == 0)
        clean_output_dirs(&l);
    /* Children die of SIGINT/SIGTERM removing their temporary files (the
     * handlers of cli.c); the parent stops starting new ones and waits. */
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_batch_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    struct child *slots = calloc(jobs, sizeof *slots);
    if (slots == NULL)
        worst = EXIT_IO;
    while (worst != EXIT_USAGE && slots != NULL && (next < l.n || running > 0)) {
        if (next < l.n && running < jobs && !batch_signal) {
            size_t i = next++;
            struct job *j = &l.jobs[i];
            if (j->state != JOB_TODO) {
                int failed = j->state == JOB_FAILED;
                report_unshrunk(o, j->in, j->out, failed, j->code, j->reason);
                if (failed) {
                    t.failed++;
                    if (j->code > worst)
                        worst = j->code;
                } else {
                    t.skipped++;
                }
                continue;
            }
            if (!o->force && up_to_date(j->in, j->out)) {
                report_unshrunk(o, j->in, j->out, 0, 0, "skipped, output is newer (use -f)");
                t.skipped++;
                continue;
            }
            if (start_child(o, &l, i, slots, jobs, &old_int, &old_term) != 0) {
                char reason[256];
                snprintf(reason, sizeof reason, "cannot start: %s", strerror(errno));
                report_unshrunk(o, j->in, j->out, 1, EXIT_IO, reason);
                t.failed++;
                worst = EXIT_IO;
                continue;
            }
            running++;
            continue;
        }
        if (batch_signal && next < l.n)
            next = l.n; /* start nothing more */
        if (batch_signal && !signal_passed_on) {
            /* the children may not have had it: a kill(1) of the
             * parent alone */
            for (unsigned k = 0; k < jobs; k++)
                if (slots[k].pid > 0)
                    kill(slots[k].pid, batch_signal);
            signal_passed_on = 1;
        }
        int status;
        int k = reap_child(slots, jobs, &status);
        if (k < 0)
            continue; /* a signal: passed on above, on the next round */
        size_t which = slots[k].job;
        running--;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_IO;
        if (code == 0) {
            t.shrunk++;
        } else {
            t.failed++;
            /* a child that died of a signal could not say so itself */
            if (WIFSIGNALED(status) && !batch_signal && which < l.n) {
                char reason[64];
                snprintf(reason, sizeof reason, "killed by signal %d", WTERMSIG(status));
                report_unshrunk(o, l.jobs[which].in, l.jobs[which].out, 1, code, reason);
            }
        }
        if (code > worst)
            worst = code;
    }
    if (slots != NULL)
        for (unsigned k = 0; k < jobs; k++)
            free(slots[k].pending);
    free(slots);
    if (!batch_signal && worst != EXIT_USAGE) {
        struct line sum;
        FILE *f = line_open(&sum);
        if (f != NULL && o->json) {
            json_open(f, o);
            fprintf(f, "\"shrunk\":%zu,\"failed\":%zu,\"skipped\":%zu,\"exit\":%d}\n", t.shrunk,
                    t.failed, t.skipped, worst);
        } else if (f != NULL) {
            if (o->shard_count != 0)
                fprintf(f, "shard %u/%u: ", o->shard_index, o->shard_count);
            fprintf(f, "%zu shrunk, %zu failed, %zu skipped\n", t.shrunk, t.failed, t.skipped);
        }
        line_emit(&sum);
    }
    if (batch_out_error != 0) {
        cli_error("standard output: write error: %s", strerror(batch_out_error));
        worst = EXIT_IO;
    }
    for (size_t i = 0; i < l.n; i++) {
        free(l.jobs[i].in);
        free(l.jobs[i].out);
        free(l.jobs[i].reason);
    }
    free(l.jobs);
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
    o.sync = -1;
    if (cli_init(argv[0]) != 0)
        return EXIT_USAGE;
    argv[0] = (char *)cli_progname; /* getopt's messages name the tool as ours do */
    int code = parse(argc, argv, &o);
    if (code != 0)
        return code;
    /* the names in use are code; the others are HotSpot's symbol table,
     * which --redact alone keeps out of the output */
    if (o.shrink.redact && o.shrink.keep_names && !o.quiet)
        cli_error("warning: --keep-names keeps every STRING record, the program's string "
                  "literals among them (HotSpot writes its whole symbol table): --redact "
                  "does not remove them");
    struct hprof_mapping *mapping = NULL;
    if (o.mapping_path != NULL) {
        struct hprof_error err = { 0 };
        if (hprof_mapping_load(o.mapping_path, &mapping, &err) != HPROF_OK) {
            cli_error("%s", err.message);
            return cli_exit_code(err.code);
        }
        o.shrink.mapping = mapping;
    }
    cli_install_signal_handlers();
    code = o.out_dir ? run_batch(&o) : shrink_file(&o);
    hprof_mapping_free(mapping);
    free(o.out_alloc);
    return code;
}
