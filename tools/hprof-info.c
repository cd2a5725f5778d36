/*
 * hprof-info - what a heap dump holds, as a memory analyst asks it first:
 * header, records by kind, objects per heap, top classes, primitive arrays,
 * strings, roots, bitmaps and their duplicates, and what hprof-shrink would
 * save.  The analysis is hprof_info_analyze() in libhprof.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

struct options {
    int salvage;                        /* --salvage */
    struct cli_salvage salvaged;
    int json, estimate;
    size_t top;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Show what a Java or Android heap dump (.hprof) holds.\n"
            "\n"
            "Usage: %s [options] FILE\n"
            "\n"
            "Options:\n"
            "  --top N        classes to list by count and by bytes [Default: 10]\n"
            "  --estimate     also run hprof-shrink's passes to report its output\n"
            "                 size in each --arrays mode (nothing is written)\n"
            "  --json         one JSON object instead of the report\n"
            "  --salvage      a dump cut short: report what is complete, and say\n"
            "                 where the input stops and what was lost\n"
            "  -h, --help     show this help and exit\n"
            "  -V, --version  show the version and exit\n"
            "\n"
            "FILE may be - for standard input, and may be gzip-compressed.\n"
            "Exit status: 0 success, 1 invalid input, 2 usage, 3 I/O error.\n",
            cli_progname);
}

/* ---- Derived views ---------------------------------------------------------- */

static int by_count(const void *pa, const void *pb)
{
    const struct hprof_info_class *a = pa, *b = pb;
    if (a->objects.count != b->objects.count)
        return a->objects.count > b->objects.count ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int by_bytes(const void *pa, const void *pb)
{
    const struct hprof_info_class *a = pa, *b = pb;
    if (a->objects.bytes != b->objects.bytes)
        return a->objects.bytes > b->objects.bytes ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Bitmap buffers grouped by content: the indexes of info->bitmaps sorted by
 * (size, md5, buffer id); a group is a run with equal size and md5 holding
 * more than one buffer object. */
static int cmp_bitmaps(const void *pa, const void *pb, void *ctx);

struct bitmap_groups {
    uint64_t buffers;           /* distinct buffer objects */
    uint64_t pixel_bytes;       /* their bytes */
    uint64_t groups;            /* contents held by more than one buffer */
    uint64_t wasted_bytes;      /* bytes of the extra copies */
};

static const struct hprof_info *sort_info;

static int cmp_bitmap_index(const void *pa, const void *pb)
{
    return cmp_bitmaps(pa, pb, (void *)sort_info);
}

static int cmp_bitmaps(const void *pa, const void *pb, void *ctx)
{
    const struct hprof_info *info = ctx;
    const struct hprof_info_bitmap *a = &info->bitmaps[*(const size_t *)pa];
    const struct hprof_info_bitmap *b = &info->bitmaps[*(const size_t *)pb];
    if (a->buffer_bytes != b->buffer_bytes)
        return a->buffer_bytes > b->buffer_bytes ? -1 : 1;
    int c = memcmp(a->md5, b->md5, 16);
    if (c != 0)
        return c;
    return a->buffer_id < b->buffer_id ? -1 : a->buffer_id > b->buffer_id;
}

static size_t *sorted_bitmaps(const struct hprof_info *info)
{
    size_t *order = malloc((info->n_bitmaps + 1) * sizeof *order);
    if (order == NULL)
        return NULL;
    for (size_t i = 0; i < info->n_bitmaps; i++)
        order[i] = i;
    sort_info = info;
    qsort(order, info->n_bitmaps, sizeof *order, cmp_bitmap_index);
    return order;
}

static struct bitmap_groups group_bitmaps(const struct hprof_info *info, const size_t *order)
{
    struct bitmap_groups g = { 0 };
    for (size_t i = 0; i < info->n_bitmaps;) {
        const struct hprof_info_bitmap *first = &info->bitmaps[order[i]];
        size_t j = i, distinct = 0;
        uint64_t last_buffer = 0;
        for (; j < info->n_bitmaps; j++) {
            const struct hprof_info_bitmap *b = &info->bitmaps[order[j]];
            if (b->buffer_bytes != first->buffer_bytes || memcmp(b->md5, first->md5, 16) != 0)
                break;
            if (b->buffer_id != 0 && b->buffer_id != last_buffer)
                distinct++;
            last_buffer = b->buffer_id;
        }
        if (first->buffer_id != 0) {
            g.buffers += distinct;
            g.pixel_bytes += distinct * first->buffer_bytes;
            if (distinct > 1) {
                g.groups++;
                g.wasted_bytes += (distinct - 1) * first->buffer_bytes;
            }
        }
        i = j;
    }
    return g;
}

/* ---- Estimates ------------------------------------------------------------- */

struct estimate {
    uint64_t bytes[3];
    struct hprof_shrink_stats stats;    /* of the default mode */
};

static int estimate(struct hprof_reader *r, struct estimate *e, struct hprof_error *err)
{
    for (int mode = 0; mode < 3; mode++) {
        struct hprof_shrink_options o = { .arrays = mode };
        struct hprof_shrink_stats st;
        struct hprof_sink *null = hprof_sink_new_null(err);
        int rc = null ? hprof_shrink(r, null, &o, &st, err) : HPROF_ERR_NOMEM;
        hprof_sink_free(null);
        if (rc != HPROF_OK)
            return rc;
        e->bytes[mode] = st.bytes_out;
        if (mode == 0)
            e->stats = st;
    }
    return HPROF_OK;
}

/* ---- Human report ---------------------------------------------------------- */

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void print_time(FILE *f, uint64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    char buf[64];
    gmtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
    fprintf(f, "%s", buf);
}

static void print_report(FILE *f, const char *path, const struct hprof_info *info,
                         const struct options *o, const struct estimate *e)
{
    static const char *const modes[3] = { "empty", "zero", "remove" };
    fprintf(f, "%s\n", path);
    fprintf(f, "  %-24s %s, %" PRIu32 "-byte ids, taken ", "format", info->header.version,
            info->header.id_size);
    print_time(f, info->header.timestamp_ms);
    fprintf(f, "\n  %-24s %" PRIu64 " bytes\n\n", "size", info->file_bytes);

    fprintf(f, "Records                          count            bytes\n");
    for (int t = 0; t < 256; t++)
        if (info->records[t].count)
            fprintf(f, "  %-24s %12" PRIu64 " %16" PRIu64 "\n", hprof_tag_name((uint8_t)t),
                    info->records[t].count, info->records[t].bytes);
    fprintf(f, "\nHeap sub-records                 count            bytes\n");
    for (int t = 0; t < 256; t++)
        if (info->sub_records[t].count)
            fprintf(f, "  %-24s %12" PRIu64 " %16" PRIu64 "\n", hprof_subtag_name((uint8_t)t),
                    info->sub_records[t].count, info->sub_records[t].bytes);
    fprintf(f, "\nHeaps                          objects   contents bytes\n");
    for (int h = 0; h < HPROF_INFO_HEAPS; h++)
        if (info->heaps[h].count)
            fprintf(f, "  %-24s %12" PRIu64 " %16" PRIu64 "\n", hprof_info_heap_name(h),
                    info->heaps[h].count, info->heaps[h].bytes);

    struct hprof_info_class *classes = malloc((info->n_classes + 1) * sizeof *classes);
    if (classes != NULL) {
        size_t n = info->n_classes < o->top ? info->n_classes : o->top;
        memcpy(classes, info->classes, info->n_classes * sizeof *classes);
        qsort(classes, info->n_classes, sizeof *classes, by_count);
        fprintf(f, "\nTop %zu classes by count %22s objects            bytes\n", n, "");
        for (size_t i = 0; i < n; i++)
            fprintf(f, "  %-40s %12" PRIu64 " %16" PRIu64 "\n", classes[i].name,
                    classes[i].objects.count, classes[i].objects.bytes);
        qsort(classes, info->n_classes, sizeof *classes, by_bytes);
        fprintf(f, "\nTop %zu classes by bytes %22s objects            bytes\n", n, "");
        for (size_t i = 0; i < n; i++)
            fprintf(f, "  %-40s %12" PRIu64 " %16" PRIu64 "\n", classes[i].name,
                    classes[i].objects.count, classes[i].objects.bytes);
        free(classes);
    }
    fprintf(f, "\nPrimitive arrays                count            bytes\n");
    for (int t = 0; t < 12; t++)
        if (info->primitive[t].count)
            fprintf(f, "  %-24s %12" PRIu64 " %16" PRIu64 "\n", hprof_type_name((uint8_t)t),
                    info->primitive[t].count, info->primitive[t].bytes);
    fprintf(f, "\n  %-24s %12" PRIu64 " %16" PRIu64 " bytes of text\n", "strings",
            info->strings.count, info->strings.bytes);
    fprintf(f, "\nGC roots\n");
    for (int t = 0; t < 256; t++)
        if (info->roots[t])
            fprintf(f, "  %-24s %12" PRIu64 "\n", hprof_subtag_name((uint8_t)t), info->roots[t]);

    size_t *order = sorted_bitmaps(info);
    if (order != NULL) {
        struct bitmap_groups g = group_bitmaps(info, order);
        fprintf(f, "\nBitmaps %zu, buffers %" PRIu64 " (%" PRIu64 " bytes); %" PRIu64
                " groups of identical buffers wasting %" PRIu64 " bytes\n", info->n_bitmaps,
                g.buffers, g.pixel_bytes, g.groups, g.wasted_bytes);
        size_t shown = info->n_bitmaps < o->top ? info->n_bitmaps : o->top;
        for (size_t i = 0; i < shown; i++) {
            const struct hprof_info_bitmap *b = &info->bitmaps[order[i]];
            fprintf(f, "  0x%-10" PRIx64 " %5" PRIu32 " x %-5" PRIu32 " %12" PRIu64
                    " bytes  buffer 0x%" PRIx64 "  md5 ", b->id, b->width, b->height,
                    b->buffer_bytes, b->buffer_id);
            for (int k = 0; k < 4; k++)
                fprintf(f, "%02x", b->md5[k]);
            fprintf(f, "%s\n", b->recycled ? "  recycled" : "");
        }
        free(order);
    }
    if (o->estimate) {
        fprintf(f, "\nhprof-shrink would write         bytes     of input\n");
        for (int m = 0; m < 3; m++)
            fprintf(f, "  --arrays=%-15s %16" PRIu64 " %11.1f%%\n", modes[m], e->bytes[m],
                    pct(e->bytes[m], info->file_bytes));
    }
}

/* ---- JSON -------------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_count(FILE *f, const struct hprof_count *c)
{
    fprintf(f, "{\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", c->count, c->bytes);
}

static void json_classes(FILE *f, const struct hprof_info *info, size_t top,
                         int (*cmp)(const void *, const void *))
{
    struct hprof_info_class *classes = malloc((info->n_classes + 1) * sizeof *classes);
    size_t n = info->n_classes < top ? info->n_classes : top;
    fputc('[', f);
    if (classes != NULL) {
        memcpy(classes, info->classes, info->n_classes * sizeof *classes);
        qsort(classes, info->n_classes, sizeof *classes, cmp);
        for (size_t i = 0; i < n; i++) {
            fprintf(f, "%s{\"name\":", i ? "," : "");
            json_str(f, classes[i].name);
            fprintf(f, ",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", classes[i].objects.count,
                    classes[i].objects.bytes);
        }
        free(classes);
    }
    fputc(']', f);
}

static void print_json(FILE *f, const char *path, const struct hprof_info *info,
                       const struct options *o, const struct estimate *e)
{
    const char *sep;
    fprintf(f, "{\"file\":");
    json_str(f, path);
    fprintf(f, ",\"version\":");
    json_str(f, info->header.version);
    fprintf(f, ",\"id_size\":%" PRIu32 ",\"timestamp_ms\":%" PRIu64 ",\"bytes\":%" PRIu64,
            info->header.id_size, info->header.timestamp_ms, info->file_bytes);
    fprintf(f, ",\"records\":{");
    sep = "";
    for (int t = 0; t < 256; t++)
        if (info->records[t].count) {
            fprintf(f, "%s\"%s\":", sep, hprof_tag_name((uint8_t)t));
            json_count(f, &info->records[t]);
            sep = ",";
        }
    fprintf(f, "},\"sub_records\":{");
    sep = "";
    for (int t = 0; t < 256; t++)
        if (info->sub_records[t].count) {
            fprintf(f, "%s\"%s\":", sep, hprof_subtag_name((uint8_t)t));
            json_count(f, &info->sub_records[t]);
            sep = ",";
        }
    fprintf(f, "},\"heaps\":{");
    for (int h = 0; h < HPROF_INFO_HEAPS; h++) {
        fprintf(f, "%s\"%s\":", h ? "," : "", hprof_info_heap_name(h));
        json_count(f, &info->heaps[h]);
    }
    fprintf(f, "},\"primitive_arrays\":{");
    sep = "";
    for (int t = 0; t < 12; t++)
        if (info->primitive[t].count) {
            fprintf(f, "%s\"%s\":", sep, hprof_type_name((uint8_t)t));
            json_count(f, &info->primitive[t]);
            sep = ",";
        }
    fprintf(f, "},\"strings\":");
    json_count(f, &info->strings);
    fprintf(f, ",\"roots\":{");
    sep = "";
    for (int t = 0; t < 256; t++)
        if (info->roots[t]) {
            fprintf(f, "%s\"%s\":%" PRIu64, sep, hprof_subtag_name((uint8_t)t), info->roots[t]);
            sep = ",";
        }
    fprintf(f, "},\"top_by_count\":");
    json_classes(f, info, o->top, by_count);
    fprintf(f, ",\"top_by_bytes\":");
    json_classes(f, info, o->top, by_bytes);
    size_t *order = sorted_bitmaps(info);
    struct bitmap_groups g = order ? group_bitmaps(info, order) : (struct bitmap_groups){ 0 };
    fprintf(f, ",\"bitmaps\":{\"count\":%zu,\"buffers\":%" PRIu64 ",\"pixel_bytes\":%" PRIu64
            ",\"duplicate_groups\":%" PRIu64 ",\"wasted_bytes\":%" PRIu64 ",\"list\":[",
            info->n_bitmaps, g.buffers, g.pixel_bytes, g.groups, g.wasted_bytes);
    for (size_t i = 0; order != NULL && i < info->n_bitmaps; i++) {
        const struct hprof_info_bitmap *b = &info->bitmaps[order[i]];
        fprintf(f, "%s{\"id\":%" PRIu64 ",\"width\":%" PRIu32 ",\"height\":%" PRIu32
                ",\"recycled\":%s,\"buffer\":%" PRIu64 ",\"buffer_bytes\":%" PRIu64 ",\"md5\":\"",
                i ? "," : "", b->id, b->width, b->height, b->recycled ? "true" : "false",
                b->buffer_id, b->buffer_bytes);
        for (int k = 0; k < 16; k++)
            fprintf(f, "%02x", b->md5[k]);
        fprintf(f, "\"}");
    }
    free(order);
    fprintf(f, "]}");
    if (o->estimate)
        fprintf(f, ",\"estimate\":{\"empty\":%" PRIu64 ",\"zero\":%" PRIu64 ",\"remove\":%" PRIu64
                "}", e->bytes[0], e->bytes[1], e->bytes[2]);
    if (o->salvage)
        cli_salvage_json(f, &o->salvaged);
    fprintf(f, "}\n");
}

int main(int argc, char **argv)
{
    enum { OPT_TOP = 256, OPT_ESTIMATE, OPT_JSON };
    static const struct option long_options[] = {
        { "top", required_argument, NULL, OPT_TOP },
        { "estimate", no_argument, NULL, OPT_ESTIMATE },
        { "json", no_argument, NULL, OPT_JSON },
        { "salvage", no_argument, NULL, 'S' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    struct options o = { .top = 10 };
    unsigned long long v;
    int c;
    if (cli_init(argv[0]) != 0)
        return EXIT_USAGE;
    while ((c = getopt_long(argc, argv, "hV", long_options, NULL)) != -1) {
        switch (c) {
        case OPT_TOP:
            if (cli_parse_uint(optarg, 1000000, &v) != 0) {
                cli_error("--top: expected a number, got '%s'", optarg);
                return EXIT_USAGE;
            }
            o.top = (size_t)v;
            break;
        case OPT_ESTIMATE: o.estimate = 1; break;
        case OPT_JSON: o.json = 1; break;
        case 'S': o.salvage = 1; break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': cli_version(); return EXIT_OK;
        default: usage(stderr); return EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        cli_error(optind == argc ? "no input file" : "one file at a time");
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *path = argv[optind];
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct hprof_info info;
    struct estimate e;
    int fd = -1, analysed = 0;
    memset(&e, 0, sizeof e);
    cli_set_salvage(o.salvage);
    int rc = cli_open_reader(path, &fd, &r, &err);
    if (rc == HPROF_OK)
        analysed = (rc = hprof_info_analyze(r, &info, &err)) == HPROF_OK;
    if (rc == HPROF_OK && o.estimate)
        rc = estimate(r, &e, &err);
    if (rc == HPROF_OK && o.salvage) {
        cli_salvage_collect(&o.salvaged, r, 1);
        cli_salvage_print(path, &o.salvaged);
    }
    if (rc == HPROF_OK) {
        if (o.json)
            print_json(stdout, path, &info, &o, &e);
        else
            print_report(stdout, path, &info, &o, &e);
    } else {
        cli_error("%s: %s", path, err.message);
    }
    if (analysed)
        hprof_info_free(&info);
    cli_close_reader(fd, r);
    if (rc == HPROF_OK && fflush(stdout) != 0) {
        cli_error("standard output: write failed");
        return EXIT_IO;
    }
    return cli_exit_code(rc);
}
