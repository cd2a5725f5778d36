/*
 * info-print.c - hprof-info's report and JSON, apart from the tool so that
 * the info fuzz target prints (and checks) the very JSON users get.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "info-print.h"

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

/* Bitmaps listed by buffer size, the largest first, those holding the
 * same bytes (hprof_info_bitmap.same_as) together. */
static int cmp_bitmaps(const void *pa, const void *pb, void *ctx);

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
    if (a->same_as != b->same_as)
        return a->same_as < b->same_as ? -1 : 1;
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

/* ---- Names ------------------------------------------------------------------ */

/* A tag's name, or for a tag the format does not define "0x1d": unknown
 * tags each get their own row and JSON key. */
static const char *tag_label(const char *(*namer)(uint8_t), int t, char *buf, size_t len)
{
    const char *n = namer((uint8_t)t);
    if (strcmp(n, "unknown") != 0)
        return n;
    snprintf(buf, len, "0x%02x", t);
    return buf;
}

/* Class names come from the dump: printable as they are, else quoted. */
static const char *class_label(const char *name)
{
    return cli_quote(name);
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

static void print_classes(FILE *f, const char *title, const struct hprof_info_class *classes,
                          size_t n)
{
    /* the name column as wide as the longest name shown */
    int w = 24;
    for (size_t i = 0; i < n; i++) {
        int len = (int)strlen(class_label(classes[i].name));
        if (len > w)
            w = len;
    }
    fprintf(f, "\n%-*s %12s %16s\n", w + 2, title, "objects", "bytes");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "  %-*s %12" PRIu64 " %16" PRIu64 "\n", w, class_label(classes[i].name),
                classes[i].objects.count, classes[i].objects.bytes);
}

/* The `top` classes by count, then by bytes. */
static void print_top_classes(FILE *f, const struct hprof_info *info, size_t top)
{
    struct hprof_info_class *classes = malloc((info->n_classes + 1) * sizeof *classes);
    if (classes == NULL)
        return;
    size_t n = info->n_classes < top ? info->n_classes : top;
    char title[64];
    memcpy(classes, info->classes, info->n_classes * sizeof *classes);
    qsort(classes, info->n_classes, sizeof *classes, by_count);
    snprintf(title, sizeof title, "Top %zu classes by count", n);
    print_classes(f, title, classes, n);
    qsort(classes, info->n_classes, sizeof *classes, by_bytes);
    snprintf(title, sizeof title, "Top %zu classes by bytes", n);
    print_classes(f, title, classes, n);
    free(classes);
}

/* The bitmaps' totals and the `top` largest. */
static void print_bitmaps(FILE *f, const struct hprof_info *info, size_t top)
{
    size_t *order = sorted_bitmaps(info);
    if (order == NULL)
        return;
    fprintf(f, "\nBitmaps %zu, buffers %" PRIu64 " (%" PRIu64 " bytes); %" PRIu64
            " groups of identical buffers wasting %" PRIu64 " bytes\n", info->n_bitmaps,
            info->bitmap_buffers.count, info->bitmap_buffers.bytes, info->bitmap_groups,
            info->bitmap_duplicates.bytes);
    size_t shown = info->n_bitmaps < top ? info->n_bitmaps : top;
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

static void print_estimate(FILE *f, const struct hprof_info *info, const struct info_estimate *e)
{
    static const char *const modes[3] = { "empty", "zero", "remove" };
    fprintf(f, "\n%-26s %16s %12s %16s\n", "hprof-shrink would write", "bytes", "of input",
            "with -z");
    for (int m = 0; m < 3; m++) {
        fprintf(f, "  --arrays=%-15s %16" PRIu64 " %11.1f%%", modes[m], e->bytes[m],
                pct(e->bytes[m], info->file_bytes));
        if (m < 2)
            fprintf(f, " %16" PRIu64 "\n", e->gzip[m]);
        else
            fprintf(f, "\n");
    }
}

void info_print_report(FILE *f, const char *path, const struct hprof_info *info,
                       const struct info_options *o, const struct info_estimate *e)
{
    char label[16];
    fprintf(f, "%s\n", cli_input_name(path));
    fprintf(f, "  %-24s %s, %" PRIu32 "-byte ids, taken ", "format",
            cli_quote(info->header.version), info->header.id_size);
    print_time(f, info->header.timestamp_ms);
    fprintf(f, "\n  %-24s %" PRIu64 " bytes\n", "size", info->file_bytes);
    if (o->dump != 0)
        fprintf(f, "  %-24s %u of %u (each its own objects)\n", "heap dump", o->dump, o->dumps);
    fprintf(f, "\n");

    fprintf(f, "%-26s %12s %16s\n", "Records", "count", "bytes");
    for (int t = 0; t < 256; t++)
        if (info->records[t].count)
            fprintf(f, "  %-24s %12" PRIu64 " %16" PRIu64 "\n",
                    tag_label(hprof_tag_name, t, label, sizeof label), info->records[t].count,
                    info->records[t].bytes);
    fprintf(f, "\n%-26s %12s %16s\n", "Heap sub-records", "count", "bytes");
    for (int t = 0; t < 256; t++)
        if (info->sub_records[t].count)
            fprintf(f, "  %-24s %12" PRIu64 " %16" PRIu64 "\n",
                    tag_label(hprof_subtag_name, t, label, sizeof label),
                    info->sub_records[t].count, info->sub_records[t].bytes);
    fprintf(f, "\n%-26s %12s %16s\n", "Heaps", "objects", "contents bytes");
    for (int h = 0; h < HPROF_INFO_HEAPS; h++)
        if (info->heaps[h].count)
            fprintf(f, "  %-24s %12" PRIu64 " %16" PRIu64 "\n", hprof_info_heap_name(h),
                    info->heaps[h].count, info->heaps[h].bytes);

    print_top_classes(f, info, o->top);
    fprintf(f, "\n%-26s %12s %16s\n", "Primitive arrays", "count", "bytes");
    for (int t = 0; t < 12; t++)
        if (info->primitive[t].count)
            fprintf(f, "  %-24s %12" PRIu64 " %16" PRIu64 "\n", hprof_type_name((uint8_t)t),
                    info->primitive[t].count, info->primitive[t].bytes);
    fprintf(f, "\n  %-24s %12" PRIu64 " %16" PRIu64 " bytes of text\n", "strings",
            info->strings.count, info->strings.bytes);
    fprintf(f, "\nGC roots\n");
    for (int t = 0; t < 256; t++)
        if (info->roots[t])
            fprintf(f, "  %-24s %12" PRIu64 "\n",
                    tag_label(hprof_subtag_name, t, label, sizeof label), info->roots[t]);

    print_bitmaps(f, info, o->top);
    if (o->estimate)
        print_estimate(f, info, e);
}

/* ---- JSON -------------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
    cli_json_string(f, s, strlen(s));
}

/* Ids are hexadecimal strings, as the report and index.tsv write them
 * (JSON numbers lose precision past 2^53); null for none. */
static void json_id(FILE *f, uint64_t id)
{
    if (id == 0)
        fprintf(f, "null");
    else
        fprintf(f, "\"0x%" PRIx64 "\"", id);
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
            fprintf(f, ",\"id\":");
            json_id(f, classes[i].id);
            fprintf(f, ",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", classes[i].objects.count,
                    classes[i].objects.bytes);
        }
        free(classes);
    }
    fputc(']', f);
}

/* The counts by record, sub-record, heap, array type and root kind. */
static void json_tables(FILE *f, const struct hprof_info *info)
{
    const char *sep;
    char label[16];
    fprintf(f, ",\"records\":{");
    sep = "";
    for (int t = 0; t < 256; t++)
        if (info->records[t].count) {
            fprintf(f, "%s\"%s\":", sep, tag_label(hprof_tag_name, t, label, sizeof label));
            json_count(f, &info->records[t]);
            sep = ",";
        }
    fprintf(f, "},\"sub_records\":{");
    sep = "";
    for (int t = 0; t < 256; t++)
        if (info->sub_records[t].count) {
            fprintf(f, "%s\"%s\":", sep, tag_label(hprof_subtag_name, t, label, sizeof label));
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
            fprintf(f, "%s\"%s\":%" PRIu64, sep, tag_label(hprof_subtag_name, t, label, sizeof label),
                    info->roots[t]);
            sep = ",";
        }
}

/* The bitmaps' totals, and every bitmap largest first. */
static void json_bitmaps(FILE *f, const struct hprof_info *info)
{
    size_t *order = sorted_bitmaps(info);
    fprintf(f, ",\"bitmaps\":{\"count\":%zu,\"buffers\":%" PRIu64 ",\"pixel_bytes\":%" PRIu64
            ",\"duplicate_groups\":%" PRIu64 ",\"wasted_bytes\":%" PRIu64 ",\"list\":[",
            info->n_bitmaps, info->bitmap_buffers.count, info->bitmap_buffers.bytes,
            info->bitmap_groups, info->bitmap_duplicates.bytes);
    for (size_t i = 0; order != NULL && i < info->n_bitmaps; i++) {
        const struct hprof_info_bitmap *b = &info->bitmaps[order[i]];
        fprintf(f, "%s{\"id\":", i ? "," : "");
        json_id(f, b->id);
        fprintf(f, ",\"width\":%" PRIu32 ",\"height\":%" PRIu32 ",\"recycled\":%s,\"buffer\":",
                b->width, b->height, b->recycled ? "true" : "false");
        json_id(f, b->buffer_id);
        fprintf(f, ",\"buffer_bytes\":%" PRIu64 ",\"md5\":\"", b->buffer_bytes);
        for (int k = 0; k < 16; k++)
            fprintf(f, "%02x", b->md5[k]);
        fprintf(f, "\",\"same_bytes_as\":");
        json_id(f, info->bitmaps[b->same_as].buffer_id);
        fprintf(f, "}");
    }
    free(order);
    fprintf(f, "]}");
}

void info_print_json(FILE *f, const char *path, const struct hprof_info *info,
                     const struct info_options *o, const struct info_estimate *e)
{
    fprintf(f, "{\"file\":");
    json_str(f, path);
    if (o->dump != 0)
        fprintf(f, ",\"dump\":%u,\"dumps\":%u", o->dump, o->dumps);
    fprintf(f, ",\"version\":");
    json_str(f, info->header.version);
    fprintf(f, ",\"id_size\":%" PRIu32 ",\"timestamp_ms\":%" PRIu64 ",\"bytes\":%" PRIu64,
            info->header.id_size, info->header.timestamp_ms, info->file_bytes);
    json_tables(f, info);
    fprintf(f, "},\"top_by_count\":");
    json_classes(f, info, o->top, by_count);
    fprintf(f, ",\"top_by_bytes\":");
    json_classes(f, info, o->top, by_bytes);
    json_bitmaps(f, info);
    if (o->estimate && e != NULL)
        fprintf(f, ",\"estimate\":{\"empty\":%" PRIu64 ",\"zero\":%" PRIu64 ",\"remove\":%" PRIu64
                ",\"empty_gzip\":%" PRIu64 ",\"zero_gzip\":%" PRIu64 "}", e->bytes[0], e->bytes[1],
                e->bytes[2], e->gzip[0], e->gzip[1]);
    if (o->salvage != NULL)
        cli_salvage_json(f, o->salvage);
    fprintf(f, "}\n");
}
