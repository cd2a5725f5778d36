/*
 * hprof-shrink - make a heap dump small enough to upload, keeping what a
 * memory analysis needs.  The work is hprof_shrink() in libhprof; this file
 * is options, files and reports.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shrink.h"

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
            "  --redact[=all|strings]\n"
            "                       replace kept String texts (and with all, the\n"
            "                       default, bitmap pixels) by a filler of the same size\n"
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
            "  --one-pass           read IN once and write as it goes, nothing in TMPDIR\n"
            "                       [Default: for a pipe, FIFO or socket]\n"
            "  --multi-pass         read IN in several passes (a stream or compressed\n"
            "                       IN is first copied to TMPDIR) [Default: files; a\n"
            "                       compressed file with no room in TMPDIR: one pass]\n"
            "  --window=SIZE        bytes the one-pass shrink may hold while records wait\n"
            "                       for what decides them [Default: 64M]\n"
            "  --spill=SIZE         bytes of large arrays the one-pass shrink may set\n"
            "                       aside in OUT's file while they wait, 0 for none\n"
            "                       [Default: 8 windows]\n"
            "  --dump=N             of a file of several heap dumps (the JDK's hprof\n"
            "                       agent's), keep the N-th alone (1-based); by\n"
            "                       default each is shrunk on its own\n"
            "  -z, --gzip[=LEVEL]   gzip the output as jcmd -gz does [Default level: 6];\n"
            "                       attach the level: -z9, --gzip=9, or -1 ... -9\n"
            "  --zstd[=LEVEL]       zstd the output for uploads (as fast as -z1; 19 for\n"
            "                       the smallest) [Default level: 3, up to 19]\n"
            "  -j, --threads=N      N threads, 0 = one per core [Default: 0]: for one\n"
            "                       file, inflating a .gz input, write-pass, gzip, zstd and\n"
            "                       read-ahead threads;\n"
            "                       in batch mode, files at once\n"
            "  -o, --output-dir=DIR batch: write each IN to DIR under its own name\n"
            "                       (.hprof, .hprof.gz with -z, .hprof.zst with --zstd);\n"
            "                       skip outputs made\n"
            "                       from their input as it is now unless -f\n"
            "  -r, --recursive      batch: IN may be directories, searched for *.hprof,\n"
            "                       *.hprof.gz and *.hprof.zst; outputs keep their\n"
            "                       relative paths\n"
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
            "IN or OUT may be - for standard input or output; IN may be gzip- or\n"
            "zstd-compressed.\n"
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

enum { OPT_ARRAYS = 256, OPT_KEEP_SYSTEM, OPT_STATS, OPT_JSON, OPT_SEGMENT, OPT_REDACT,
       OPT_REDACT_KEEP, OPT_REDACT_FIELDS, OPT_KEEP_NAMES, OPT_JVM, OPT_MAPPING,
       OPT_KEEP_DUPLICATES, OPT_SYNC, OPT_NO_SYNC, OPT_DUMP, OPT_SHARD, OPT_SALVAGE, OPT_ZSTD,
       OPT_ONE_PASS, OPT_MULTI_PASS, OPT_WINDOW, OPT_SPILL };

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
    { "one-pass", no_argument, NULL, OPT_ONE_PASS },
    { "multi-pass", no_argument, NULL, OPT_MULTI_PASS },
    { "window", required_argument, NULL, OPT_WINDOW },
    { "spill", required_argument, NULL, OPT_SPILL },
    { "dump", required_argument, NULL, OPT_DUMP },
    { "gzip", optional_argument, NULL, 'z' },
    { "zstd", optional_argument, NULL, OPT_ZSTD },
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

/* SIZE of --window or --spill: bytes, or with a K, M or G suffix (powers
 * of 1024), from `min` to 1024G. */
static int parse_size(const char *option, const char *arg, uint64_t min, uint64_t *out)
{
    char digits[32];
    size_t n = strlen(arg);
    unsigned shift = 0;
    if (n > 0 && n < sizeof digits) {
        const char *units = "KMG";
        const char *u = strchr(units, arg[n - 1] & ~0x20);
        if (u != NULL && arg[n - 1] != '\0') {
            shift = 10 * (unsigned)(u - units + 1);
            n--;
        }
        memcpy(digits, arg, n);
        digits[n] = '\0';
    }
    unsigned long long v;
    const unsigned long long max = 1ull << 40;
    if (n == 0 || n >= sizeof digits || cli_parse_uint(digits, max >> shift, &v) != 0 ||
        (v << shift) < min)
        return cli_usage_error("%s: expected %s to 1024G (bytes, or K, M, G), got '%s'", option,
                               min == 0 ? "0" : "1M", arg);
    *out = (uint64_t)v << shift;
    return 0;
}

static int parse_spill(const char *arg, struct options *o)
{
    int rc = parse_size("--spill", arg, 0, &o->shrink.spill);
    if (rc == 0 && o->shrink.spill == 0)
        o->shrink.spill = HPROF_SPILL_OFF;
    return rc;
}

static int parse_redact_keep(const char *arg, struct options *o)
{
    const char *dot = strrchr(arg, '.');
    if (dot == NULL || dot == arg || dot[1] == '\0')
        return cli_usage_error("--redact-keep: expected CLASS.FIELD, got '%s'", arg);
    if (o->shrink.n_redact_keep == HPROF_REDACT_MAX_RULES)
        return cli_usage_error("--redact-keep: at most %d rules", HPROF_REDACT_MAX_RULES);
    o->keep_rules[o->shrink.n_redact_keep++] = arg;
    o->shrink.redact_keep = o->keep_rules;
    return 0;
}

/* An option of what the output keeps; @return 0, EXIT_USAGE, or -1 when
 * `c` is another kind. */
static int parse_content_option(int c, const char *arg, struct options *o)
{
    unsigned long long v;
    switch (c) {
    case OPT_ARRAYS:
        if (strcmp(arg, "empty") == 0)
            o->shrink.arrays = HPROF_ARRAYS_EMPTY;
        else if (strcmp(arg, "zero") == 0)
            o->shrink.arrays = HPROF_ARRAYS_ZERO;
        else if (strcmp(arg, "remove") == 0)
            o->shrink.arrays = HPROF_ARRAYS_REMOVE;
        else
            return cli_usage_error("--arrays: expected empty, zero or remove, got '%s'", arg);
        return 0;
    case OPT_KEEP_SYSTEM: o->shrink.keep_system_heaps = 1; return 0;
    case OPT_REDACT:
        if (arg == NULL || strcmp(arg, "all") == 0)
            o->shrink.redact = HPROF_REDACT_ALL;
        else if (strcmp(arg, "strings") == 0)
            o->shrink.redact = HPROF_REDACT_STRINGS;
        else
            return cli_usage_error("--redact: expected nothing, all or strings, got '%s'", arg);
        return 0;
    case OPT_REDACT_KEEP: return parse_redact_keep(arg, o);
    case OPT_REDACT_FIELDS: o->shrink.redact_fields = 1; return 0;
    case OPT_KEEP_NAMES: o->shrink.keep_names = 1; return 0;
    case OPT_JVM: o->shrink.jvm = 1; return 0;
    case OPT_MAPPING: o->mapping_path = arg; return 0;
    case OPT_KEEP_DUPLICATES: o->shrink.keep_duplicates = 1; return 0;
    case OPT_ONE_PASS:
    case OPT_MULTI_PASS:
        if (o->passes != 0 && o->passes != (c == OPT_ONE_PASS ? 1 : 2))
            return cli_usage_error("--one-pass and --multi-pass: choose one");
        o->passes = c == OPT_ONE_PASS ? 1 : 2;
        return 0;
    case OPT_WINDOW: return parse_size("--window", arg, HPROF_WINDOW_MIN, &o->shrink.window);
    case OPT_SPILL: return parse_spill(arg, o);
    case OPT_DUMP:
        if (cli_parse_uint(arg, UINT_MAX, &v) != 0 || v < 1)
            return cli_usage_error("--dump: expected a heap dump's number from 1, got '%s'", arg);
        o->shrink.dump = (unsigned)v;
        return 0;
    case OPT_SALVAGE: o->salvage = 1; return 0;
    default: return -1;
    }
}

/* An option of how the output is written; *z_bare: the last gzip option
 * was -z without a level.  @return 0, EXIT_USAGE, or -1 when `c` is
 * another kind. */
static int parse_output_option(int c, const char *arg, struct options *o, int *z_bare)
{
    unsigned long long v;
    switch (c) {
    case 'z':
        o->gzip_level = 6;
        *z_bare = arg == NULL;
        if (arg != NULL && (cli_parse_uint(arg, 9, &v) != 0 || v < 1))
            return cli_usage_error("--gzip: expected a level from 1 to 9, got '%s'", arg);
        if (arg != NULL)
            o->gzip_level = (int)v;
        return 0;
    case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
        o->gzip_level = c - '0'; /* gzip's -1 ... -9: a level, and gzip */
        *z_bare = 0;
        return 0;
    case OPT_ZSTD:
        o->zstd_level = HPROF_ZSTD_LEVEL_DEFAULT;
        if (arg != NULL && (cli_parse_uint(arg, HPROF_ZSTD_LEVEL_MAX, &v) != 0 || v < 1))
            return cli_usage_error("--zstd: expected a level from 1 to %d, got '%s'",
                                   HPROF_ZSTD_LEVEL_MAX, arg);
        if (arg != NULL)
            o->zstd_level = (int)v;
        return 0;
    case 'j':
        if (cli_parse_uint(arg, 256, &v) != 0)
            return cli_usage_error("--threads: expected 0 to 256, got '%s'", arg);
        o->threads = (unsigned)v;
        return 0;
    case OPT_SEGMENT:
        if (cli_parse_uint(arg, UINT32_MAX, &v) != 0 || v < HPROF_SEGMENT_LIMIT_MIN)
            return cli_usage_error("--segment-size: expected %u to %u bytes, got '%s'",
                                   HPROF_SEGMENT_LIMIT_MIN, UINT32_MAX, arg);
        o->shrink.segment_limit = (uint32_t)v;
        return 0;
    case 'f': o->force = 1; return 0;
    case OPT_SYNC: o->sync = 1; return 0;
    case OPT_NO_SYNC: o->sync = 0; return 0;
    default: return -1;
    }
}

/* An option of batch mode or of what is printed; @return 0, EXIT_USAGE,
 * or -1 when `c` is another kind. */
static int parse_run_option(int c, const char *arg, struct options *o)
{
    switch (c) {
    case 'o':
        if (*arg == '\0')
            return cli_usage_error("--output-dir: expected a directory, got ''");
        o->out_dir = arg;
        return 0;
    case 'r': o->recursive = 1; return 0;
    case OPT_SHARD:
        if (parse_shard(arg, o) != 0)
            return cli_usage_error("--shard: expected K/N with 0 <= K < N <= %u, got '%s'",
                                   MAX_SHARDS, arg);
        return 0;
    case OPT_STATS: o->stats = 1; return 0;
    case OPT_JSON: o->json = 1; return 0;
    case 'q': o->quiet = 1; return 0;
    case 'h': usage(stdout); exit(EXIT_OK);
    case 'V': cli_version(); exit(EXIT_OK);
    default: return -1;
    }
}

/* IN and OUT, or batch mode's INs. */
static int parse_operands(int left, char **operands, struct options *o, int z_bare)
{
    if (o->gzip_level && o->zstd_level)
        return cli_usage_error("-z (--gzip) and --zstd: choose one compression");
    if (o->shard_count != 0 && o->out_dir == NULL)
        return cli_usage_error("--shard needs batch mode (-o DIR)");
    if (o->passes == 1 && (o->mapping_path != NULL || o->salvage))
        return cli_usage_error("--one-pass and %s: it needs the multi-pass shrink",
                               o->salvage ? "--salvage" : "--mapping");
    if (o->passes == 2 && (o->shrink.window != 0 || o->shrink.spill != 0))
        return cli_usage_error("%s is the one-pass shrink's: not with --multi-pass",
                               o->shrink.window != 0 ? "--window" : "--spill");
    if ((o->shrink.n_redact_keep > 0 || o->shrink.redact_fields) && !o->shrink.redact)
        return cli_usage_error("--redact-keep and --redact-fields need --redact");
    if (o->out_dir != NULL || o->recursive) {
        if (o->out_dir == NULL || left == 0)
            return cli_usage_error(o->out_dir ? "batch mode needs at least one IN" : "-r needs -o DIR");
        /* each IN names its output, is skipped when that is up to date and
         * may be a directory: standard input is none of these */
        for (int i = 0; i < left; i++)
            if (strcmp(operands[i], "-") == 0)
                return cli_usage_error("batch mode (-o DIR) reads files, not standard input: "
                                       "name a file - as ./-, or shrink standard input alone "
                                       "(hprof-shrink - OUT)");
        o->inputs = operands;
        o->n_inputs = left;
        return 0;
    }
    if (left == 0) {
        o->in = o->out = "-";
        return 0;
    }
    if (left == 2) {
        o->in = operands[0];
        /* /dev/stdout is standard output: reports go to stderr then */
        o->out = cli_descriptor_named(operands[1]) == STDOUT_FILENO ? "-" : operands[1];
        if (*o->in == '\0' || *o->out == '\0')
            return cli_usage_error("an empty file name (use - for standard %s)",
                                   *o->in == '\0' ? "input" : "output");
        return 0;
    }
    /* -z's level is an optional argument: "-z 9" is -z and a file 9 */
    const char *first = operands[0];
    if (z_bare && first[0] >= '1' && first[0] <= '9' && first[1] == '\0')
        return cli_usage_error("'%s' after -z is taken as a file name: attach the level "
                               "(-z%s, --gzip=%s or -%s)", first, first, first, first);
    return cli_usage_error(left == 1 ? "missing OUT (use - for standard output)"
                                     : "too many arguments");
}

static int parse(int argc, char **argv, struct options *o)
{
    int c, z_bare = 0;
    while ((c = getopt_long(argc, argv, "z::j:o:rfqhV123456789", long_options, NULL)) != -1) {
        int rc = parse_content_option(c, optarg, o);
        if (rc < 0)
            rc = parse_output_option(c, optarg, o, &z_bare);
        if (rc < 0)
            rc = parse_run_option(c, optarg, o);
        if (rc != 0)
            return rc < 0 ? cli_usage_error(NULL) : rc;
    }
    return parse_operands(argc - optind, argv + optind, o, z_bare);
}

static double ratio(uint64_t out, uint64_t in)
{
    return in ? 100.0 * (double)out / (double)in : 0.0;
}

/* Where --stats prints a counter (HPROF_SHRINK_COUNTERS' TEXT), in the
 * order of the report. */
enum stats_text { TEXT_ROWS, TEXT_NAMES, TEXT_JVM, TEXT_MAPPING, TEXT_REDACT, TEXT_BITMAPS,
                  TEXT_WINDOW,
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

static int text_shown(const struct options *o, const struct hprof_shrink_stats *s,
                      enum stats_text t)
{
    switch (t) {
    case TEXT_WINDOW: return s->passes == 1 && s->pass_kinds[0] == HPROF_PASS_STREAM;
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
    fprintf(f, "%s -> %s\n", cli_input_name(o->in), cli_output_name(o->out));
    fprintf(f, "  %-28s %15" PRIu64 " bytes\n", "input", s->bytes_in);
    if (s->dumps > 1)
        fprintf(f, "  %-28s %15u\n", "heap dumps, each shrunk", s->dumps);
    fprintf(f, "  %-28s %15" PRIu64 " bytes (%.1f%%)\n", "output", s->bytes_out,
            ratio(s->bytes_out, s->bytes_in));
    if (o->gzip_level || o->zstd_level)
        fprintf(f, "  %-28s %15" PRIu64 " bytes (%.1f%%)\n",
                o->gzip_level ? "output, gzipped" : "output, zstd", written,
                ratio(written, s->bytes_in));
    fprintf(f, "  %-28s %15s %18s\n", "", "count", "contents");
    for (enum stats_text t = 0; t < TEXT_PARTS; t++)
        if (text_shown(o, s, t))
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

void json_open(FILE *f, const struct options *o)
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
    fprintf(f, ",\"status\":\"shrunk\",\"arrays\":\"%s\",\"keep_system_heaps\":%s,\"gzip_level\":%d,"
            "\"zstd_level\":%d,", modes[o->shrink.arrays],
            o->shrink.keep_system_heaps ? "true" : "false", o->gzip_level, o->zstd_level);
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
                          uint64_t written, double secs)
{
    char in[32], out[32];
    uint64_t n = written ? written : s->bytes_out;
    cli_format_bytes(in, sizeof in, s->bytes_in);
    cli_format_bytes(out, sizeof out, n);
    fprintf(stderr, "%s -> %s: %s -> %s (%.1f%%), %.2f s\n", cli_input_name(o->in),
            cli_output_name(o->out), in, out, ratio(n, s->bytes_in), secs);
}

static void on_progress(void *ctx, int pass, int passes, uint64_t done, uint64_t total)
{
    cli_progress_update(ctx, pass, passes, done, total);
}

/* OUT a directory: into it under IN's name, as cp does.  @return 0 or an
 * exit code. */
static int output_into_directory(struct options *o)
{
    struct stat out_st;
    if (strcmp(o->out, "-") == 0 || stat(o->out, &out_st) != 0 || !S_ISDIR(out_st.st_mode))
        return 0;
    if (o->batch) { /* the name is the batch's own: a directory there is in its way */
        cli_error("%s: is a directory", cli_quote(o->out));
        return EXIT_USAGE;
    }
    if (strcmp(o->in, "-") == 0)
        return cli_usage_error("%s: is a directory (with standard input, name the output file)",
                               cli_quote(o->out));
    const char *base = strrchr(o->in, '/');
    char *into = output_name(o->out, base ? base + 1 : o->in, output_suffix(o));
    if (into == NULL) {
        cli_error("out of memory");
        return EXIT_IO;
    }
    free(o->out_alloc);
    o->out = o->out_alloc = into;
    return 0;
}

/* The temporary output, synced when asked.  @return 0 or an exit code. */
static int open_output(struct options *o, struct cli_output *out, const struct stat *in_st)
{
    cli_output_set_sweep(!o->batch, o->quiet);
    cli_output_set_input_stdin(strcmp(o->in, "-") == 0);
    int code = cli_output_open(out, o->out, o->force, strcmp(o->in, "-") ? in_st : NULL);
    /* A batch run takes an output newer than its input for done: after a
     * crash, one the disk never got would pass for it. */
    if (code == 0 && (o->sync < 0 ? o->batch : o->sync) && (code = cli_output_sync(out)) != 0)
        cli_output_abort(out);
    if (code != 0 || out->tmp == NULL || o->batch || o->quiet)
        return code;
    /* A name that says the other format misleads whoever opens the file
     * later; it is the caller's name, so warn rather than change it. */
    if (o->gzip_level && !ends_with_nocase(o->out, ".gz"))
        cli_error("warning: %s: the output is gzip-compressed but its name does not end "
                  "in .gz", cli_quote(o->out));
    else if (o->zstd_level && !ends_with_nocase(o->out, ".zst"))
        cli_error("warning: %s: the output is zstd-compressed but its name does not end "
                  "in .zst", cli_quote(o->out));
    else if (!o->gzip_level && ends_with_nocase(o->out, ".gz"))
        cli_error("warning: %s: the name ends in .gz but the output is not compressed "
                  "(add -z)", cli_quote(o->out));
    else if (!o->zstd_level && ends_with_nocase(o->out, ".zst"))
        cli_error("warning: %s: the name ends in .zst but the output is not compressed "
                  "(add --zstd)", cli_quote(o->out));
    return 0;
}

/* One shrink, from the reader on the input to the sink on the output. */
struct run {
    struct hprof_error err, sink_err;
    struct hprof_reader *r;
    struct hprof_sink *sink;
    struct hprof_shrink_stats stats;
    struct cli_progress progress;
    int in_fd;
    uint64_t written;           /* bytes written to OUT (a file's size) */
    int ended_before_heap;      /* hprof_reader_ends_before_heap() */
};

/* One pass for what cannot be read twice without a copy in $TMPDIR (a
 * pipe, FIFO or socket), unless a mapping or salvage needs passes of their
 * own; several for a file (compressed, it is inflated to $TMPDIR first, as
 * it always was: the one pass is --one-pass away).  Or as asked. */
static int one_pass_for(const struct options *o)
{
    if (o->passes != 0)
        return o->passes == 1;
    if (o->mapping_path != NULL || o->salvage)
        return 0;
    return cli_input_is_stream(o->in);
}

/* The one pass reads every input as a stream, so that a compressed file
 * is inflated as it is read rather than copied first. */
static int open_input(const struct options *o, struct run *run, int one_pass)
{
    if (one_pass)
        return cli_open_stream_reader(o->in, &run->r, &run->err);
    return cli_open_reader(o->in, &run->in_fd, &run->r, &run->err);
}

/* A compressed file is copied to $TMPDIR for the passes; where there is no
 * room for the copy, the one pass inflates it as it reads instead, if the
 * path was ours to choose. */
static int open_input_or_one_pass(const struct options *o, struct run *run, int *one_pass)
{
    /* (standard input here is a file, read by offset from its start: the
     * copy's reads do not move it) */
    int rc = open_input(o, run, *one_pass);
    if (rc != HPROF_ERR_NOROOM || *one_pass || o->passes != 0 || o->mapping_path != NULL ||
        o->salvage)
        return rc;
    /* not cli_error(): a failure after this is the error to report; not
     * where --json goes (stderr, when OUT is standard output) */
    cli_progress_done(&run->progress);
    if (!o->quiet && !(o->json && strcmp(o->out, "-") == 0))
        fprintf(stderr, "%s: note: %s: %s; shrinking in one pass as it inflates instead\n",
                cli_progname, cli_input_name(o->in), run->err.message);
    run->err = (struct hprof_error){ 0 }; /* the failed open closed what it opened */
    *one_pass = 1;
    return open_input(o, run, 1);
}

/* --window and --spill size the one pass's window: a file read in several
 * passes has none, which a silent run would leave its user guessing at. */
static void note_window_unused(const struct options *o, struct run *run)
{
    if (o->quiet || o->batch || (o->shrink.window == 0 && o->shrink.spill == 0) ||
        (o->json && strcmp(o->out, "-") == 0))
        return;
    const char *what = o->shrink.window == 0  ? "--spill has"
                       : o->shrink.spill == 0 ? "--window has"
                                              : "--window and --spill have";
    cli_progress_done(&run->progress);
    if (o->salvage || o->mapping_path != NULL) /* which the one pass cannot do */
        fprintf(stderr, "%s: note: %s no effect: %s reads the input in several passes\n",
                cli_progname, what, o->salvage ? "--salvage" : "--mapping");
    else
        fprintf(stderr, "%s: note: %s no effect: %s is read in several passes (add --one-pass)\n",
                cli_progname, what, cli_input_name(o->in));
}

static int run_shrink(struct options *o, struct run *run, const struct cli_output *out)
{
    int one_pass = one_pass_for(o);
    int rc = open_input_or_one_pass(o, run, &one_pass);
    if (rc == HPROF_OK && !one_pass)
        note_window_unused(o, run);
    if (rc == HPROF_OK) {
        run->sink = o->gzip_level ? hprof_sink_new_gzip(out->fd, o->gzip_level, o->threads,
                                                        &run->sink_err)
                    : o->zstd_level ? hprof_sink_new_zstd(out->fd, o->zstd_level, o->threads,
                                                          &run->sink_err)
                                    : hprof_sink_new_fd(out->fd, &run->sink_err);
        rc = run->sink ? HPROF_OK : run->sink_err.code;
        if (run->sink != NULL && out->tmp != NULL) {
            if (out->dir_fd >= 0) /* synced at the commit */
                hprof_sink_set_writeback(run->sink, cli_writeback_step(hprof_reader_size(run->r)));
            hprof_sink_set_preallocate(run->sink, CLI_PREALLOCATE_STEP);
        }
    }
    o->shrink.progress = on_progress;
    o->shrink.progress_ctx = &run->progress;
    o->shrink.threads = o->threads;
    if (rc == HPROF_OK && one_pass)
        rc = hprof_shrink_one_pass(run->r, run->sink, &o->shrink, &run->stats, &run->err);
    else if (rc == HPROF_OK)
        rc = hprof_shrink(run->r, run->sink, &o->shrink, &run->stats, &run->err);
    if (rc == HPROF_OK)
        rc = hprof_sink_finish(run->sink);
    if (rc == HPROF_OK && o->salvage) /* before the reader goes */
        cli_salvage_collect(&o->salvaged, run->r, 1);
    if (rc == HPROF_OK)
        run->ended_before_heap = hprof_reader_ends_before_heap(run->r);
    cli_progress_done(&run->progress);
    if (rc == HPROF_OK) /* a file's size too: its writes all go through the sink */
        run->written = hprof_sink_file_bytes(run->sink);
    return rc;
}

/* After a failed shrink: says what failed; @return the exit code. */
static int report_failure(const struct options *o, const struct run *run, int rc, int shrank)
{
    if (shrank)
        return shrank;
    /* the sink's own error is about OUT, anything else about IN */
    if (run->sink_err.code != HPROF_OK)
        cli_error("%s: %s", cli_output_name(o->out),
                  run->sink_err.message[0] ? run->sink_err.message : "write failed");
    else
        cli_input_error(o->in, &run->err, !o->salvage);
    return cli_exit_code(rc);
}

/* Whether a single run's --json report goes to standard output: it is
 * written before OUT takes its name (report_json_first()). */
static int json_on_stdout(const struct options *o)
{
    return o->json && !o->batch && strcmp(o->out, "-") != 0;
}

/* What a successful shrink prints, by mode (the --json report on standard
 * output has gone already). */
static void report_success(const struct options *o, const struct run *run)
{
    const struct hprof_shrink_stats *s = &run->stats;
    if (o->batch && !o->json) {
        double secs = 0;
        for (int i = 0; i < s->passes && i < HPROF_SHRINK_MAX_PASSES; i++)
            secs += s->pass_seconds[i];
        uint64_t n = run->written ? run->written : s->bytes_out;
        printf("%s -> %s: %" PRIu64 " -> %" PRIu64 " bytes (%.1f%%), %.2f s\n", cli_quote(o->in),
               cli_quote(o->out), s->bytes_in, n, ratio(n, s->bytes_in), secs);
        fflush(stdout);
    }
    if (o->salvage && !o->quiet)
        cli_salvage_print(o->in, &o->salvaged);
    /* Without --salvage a dump cut between records before its heap dump
     * passes for a complete one, and its output has no heap, which
     * analyzers refuse: the output stays as it is, a warning says why. */
    if (run->ended_before_heap && !o->quiet)
        cli_warn_cut_before_heap(o->in);
    /* the one pass's output then differs from the multi-pass one: say so */
    if (s->window_late > 0 && !o->quiet)
        cli_error("warning: %s: %" PRIu64 " record%s decided otherwise than by the multi-pass "
                  "shrink (window_late); --multi-pass avoids it, a larger --window mostly",
                  cli_input_name(o->in), s->window_late, s->window_late == 1 ? "" : "s");
    if (!o->batch && !o->quiet && !o->json && !o->stats)
        print_summary(o, s, run->written, cli_progress_seconds(&run->progress));
    if (o->stats)
        print_stats(stderr, o, s, run->written);
    if (o->json && !json_on_stdout(o))
        print_json(strcmp(o->out, "-") == 0 ? stderr : stdout, o, s, run->written);
}

/* A single run's --json report on standard output, before OUT takes its
 * name: a report that standard output does not take (a full disk, a closed
 * pipe) fails the run, and a failed run leaves no OUT, while an older OUT
 * that -f would have replaced stays as it was.  The exit handler names the
 * error.  @return 0, or EXIT_IO. */
static int report_json_first(const struct options *o, const struct run *run)
{
    if (!json_on_stdout(o))
        return 0;
    print_json(stdout, o, &run->stats, run->written);
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : EXIT_IO;
}

int shrink_file(struct options *o)
{
    struct run run = { .in_fd = -1 };
    struct cli_output out;
    struct stat in_st = { 0 };

    if (strcmp(o->in, "-") != 0 && stat(o->in, &in_st) != 0) {
        cli_file_error(o->in, strerror(errno));
        return EXIT_IO;
    }
    int code = output_into_directory(o);
    if (code == 0)
        code = open_output(o, &out, &in_st);
    if (code != 0)
        return code;
    /* from here on one progress line: a pipe or a .gz input is spooled
     * (decompressed) first, then the passes read it */
    cli_progress_init(&run.progress, o->in, o->quiet || o->batch);
    cli_progress_note(&run.progress, "reading the input");
    cli_set_salvage(o->salvage);
    cli_set_input_threads(o->threads);
    int rc = run_shrink(o, &run, &out);
    hprof_sink_free(run.sink);
    /* an input cut under us fails whatever touches its bytes first */
    int shrank = rc != HPROF_OK ? cli_input_shrank(o->in, run.in_fd, run.r) : 0;
    cli_close_reader(run.in_fd, run.r);
    if (rc != HPROF_OK) {
        code = report_failure(o, &run, rc, shrank);
        cli_output_abort(&out);
        return code;
    }
    /* the input as it was before it was read: one changed since is redone */
    if (o->batch && out.tmp != NULL && S_ISREG(in_st.st_mode))
        record_input_identity(out.fd, o->out, &in_st);
    if ((code = report_json_first(o, &run)) != 0) {
        cli_output_abort(&out);
        return code;
    }
    if ((code = cli_output_commit(&out)) != 0)
        return code;
    report_success(o, &run);
    return 0;
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
    if (code == 0)
        code = o.out_dir ? cli_refuse_messages_into_inputs(o.inputs, o.n_inputs)
                         : cli_refuse_messages_into_inputs((char *[]){ (char *)o.in }, 1);
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
