/*
 * hprof-bitmaps - export the pictures that eat a heap: every Bitmap's pixels
 * as a file a person can open, one file per distinct content, plus
 * index.tsv listing which Bitmap objects share each file.
 *
 * Before Android 8, pixels live in Bitmap.mBuffer as ARGB_8888, which Skia
 * lays out in memory as R, G, B, A bytes: written as an 8-bit RGBA PNG
 * (zlib; no other dependency).  From Android 10, a heap dump taken with
 * bitmaps carries Bitmap$DumpData buffers that are already encoded (PNG,
 * JPEG, WEBP): written as they are, with the extension their magic says.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "cli.h"

#define IDAT_CHUNK (1u << 20)

static void usage(FILE *out)
{
    fprintf(out,
            "Export the Bitmap pixels of a heap dump as image files.\n"
            "\n"
            "Usage: %s [options] FILE OUTDIR\n"
            "\n"
            "Writes one file per distinct buffer content, named MD5-WIDTHxHEIGHT.png for\n"
            "pre-Android-8 mBuffer pixels and MD5.png/.jpg/.webp for Android 10+ DumpData\n"
            "buffers, and OUTDIR/index.tsv: file, bitmap ids, width, height, bytes, note.\n"
            "\n"
            "Options:\n"
            "  --mapping=FILE find Bitmaps by the names a ProGuard/R8 mapping.txt\n"
            "                 restores (obfuscated apps)\n"
            "  -h, --help     show this help and exit\n"
            "  -V, --version  show the version and exit\n"
            "\n"
            "Exit status: 0 success, 1 invalid input, 2 usage, 3 I/O error.\n",
            cli_progname);
}

/* ---- A PNG writer on zlib -------------------------------------------------- */

struct png {
    FILE *f;
    z_stream z;
    uint8_t *out;
    int failed;
};

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static void chunk(struct png *p, const char *type, const uint8_t *data, uint32_t len)
{
    uint8_t head[8], crc_be[4];
    put_be32(head, len);
    memcpy(head + 4, type, 4);
    uLong crc = crc32(0, head + 4, 4);
    if (len > 0) /* crc32() with a NULL buffer restarts: keep the type's CRC */
        crc = crc32(crc, data, len);
    put_be32(crc_be, (uint32_t)crc);
    if (fwrite(head, 1, 8, p->f) != 8 || (len > 0 && fwrite(data, 1, len, p->f) != len) ||
        fwrite(crc_be, 1, 4, p->f) != 4)
        p->failed = 1;
}

/* Feed raw scanline bytes to deflate; full IDAT chunks go out as they fill. */
static void deflate_rows(struct png *p, const uint8_t *data, size_t len, int flush)
{
    p->z.next_in = (Bytef *)data;
    p->z.avail_in = (uInt)len;
    do {
        int rc = deflate(&p->z, flush);
        if (rc == Z_STREAM_ERROR) {
            p->failed = 1;
            return;
        }
        if (p->z.avail_out == 0 || (flush == Z_FINISH && rc == Z_STREAM_END)) {
            chunk(p, "IDAT", p->out, IDAT_CHUNK - p->z.avail_out);
            p->z.next_out = p->out;
            p->z.avail_out = IDAT_CHUNK;
        }
        if (flush == Z_FINISH && rc == Z_STREAM_END)
            return;
    } while (p->z.avail_in > 0 || (flush == Z_FINISH));
}

/* Write width x height RGBA pixels read from the dump at `offset`. */
static int write_png(const char *path, struct hprof_reader *r, uint64_t offset, uint32_t width,
                     uint32_t height, struct hprof_error *err)
{
    struct png p = { .f = fopen(path, "wb") };
    size_t row = (size_t)width * 4;
    uint8_t *line = malloc(row + 1);
    p.out = malloc(IDAT_CHUNK);
    int rc = HPROF_OK;
    if (p.f == NULL || line == NULL || p.out == NULL ||
        deflateInit(&p.z, Z_DEFAULT_COMPRESSION) != Z_OK) {
        rc = hprof_error_set(err, HPROF_ERR_IO, "%s: %s", path, strerror(errno));
        goto out;
    }
    static const uint8_t signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    uint8_t ihdr[13];
    put_be32(ihdr, width);
    put_be32(ihdr + 4, height);
    ihdr[8] = 8;    /* bits per channel */
    ihdr[9] = 6;    /* RGBA */
    ihdr[10] = ihdr[11] = ihdr[12] = 0;
    if (fwrite(signature, 1, 8, p.f) != 8)
        p.failed = 1;
    chunk(&p, "IHDR", ihdr, sizeof ihdr);
    p.z.next_out = p.out;
    p.z.avail_out = IDAT_CHUNK;
    line[0] = 0;    /* filter: none */
    for (uint32_t y = 0; y < height && rc == HPROF_OK; y++) {
        rc = hprof_reader_pread(r, offset + (uint64_t)y * row, line + 1, row);
        if (rc == HPROF_OK)
            deflate_rows(&p, line, row + 1, Z_NO_FLUSH);
    }
    if (rc == HPROF_OK) {
        deflate_rows(&p, NULL, 0, Z_FINISH);
        chunk(&p, "IEND", NULL, 0);
    }
    deflateEnd(&p.z);
out:
    if (p.f != NULL && fclose(p.f) != 0)
        p.failed = 1;
    if (rc == HPROF_OK && p.failed)
        rc = hprof_error_set(err, HPROF_ERR_IO, "%s: write failed", path);
    free(line);
    free(p.out);
    return rc;
}

/* Copy `len` bytes at `offset` to `path` as they are. */
static int write_raw(const char *path, struct hprof_reader *r, uint64_t offset, uint64_t len,
                     struct hprof_error *err)
{
    FILE *f = fopen(path, "wb");
    uint8_t *buf = malloc(IDAT_CHUNK);
    int rc = f && buf ? HPROF_OK : hprof_error_set(err, HPROF_ERR_IO, "%s: %s", path, strerror(errno));
    for (uint64_t at = 0; rc == HPROF_OK && at < len; at += IDAT_CHUNK) {
        size_t n = len - at < IDAT_CHUNK ? (size_t)(len - at) : IDAT_CHUNK;
        rc = hprof_reader_pread(r, offset + at, buf, n);
        if (rc == HPROF_OK && fwrite(buf, 1, n, f) != n)
            rc = hprof_error_set(err, HPROF_ERR_IO, "%s: write failed", path);
    }
    if (f != NULL && fclose(f) != 0 && rc == HPROF_OK)
        rc = hprof_error_set(err, HPROF_ERR_IO, "%s: write failed", path);
    free(buf);
    return rc;
}

/* The extension an encoded buffer's first bytes call for. */
static const char *encoded_extension(struct hprof_reader *r, const struct hprof_info_bitmap *b)
{
    uint8_t m[12] = { 0 };
    size_t n = b->buffer_bytes < sizeof m ? (size_t)b->buffer_bytes : sizeof m;
    if (hprof_reader_pread(r, b->buffer_offset, m, n) != HPROF_OK)
        return "bin";
    if (n >= 8 && memcmp(m, "\x89PNG\r\n\x1a\n", 8) == 0)
        return "png";
    if (n >= 3 && memcmp(m, "\xff\xd8\xff", 3) == 0)
        return "jpg";
    if (n >= 12 && memcmp(m, "RIFF", 4) == 0 && memcmp(m + 8, "WEBP", 4) == 0)
        return "webp";
    return "bin";
}

static int same_content(const struct hprof_info_bitmap *a, const struct hprof_info_bitmap *b)
{
    return a->buffer_bytes == b->buffer_bytes && memcmp(a->md5, b->md5, 16) == 0;
}

/* The bitmaps being sorted (qsort has no context argument). */
static const struct hprof_info_bitmap *sorting;

/* By content (bytes, MD5), then by position: a content's bitmaps adjacent,
 * the first listed first. */
static int by_content(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    const struct hprof_info_bitmap *x = &sorting[a], *y = &sorting[b];
    if (x->buffer_bytes != y->buffer_bytes)
        return x->buffer_bytes < y->buffer_bytes ? -1 : 1;
    int c = memcmp(x->md5, y->md5, 16);
    if (c != 0)
        return c;
    return a < b ? -1 : a > b;
}

/* (id, position) pairs, to list each id once in order of first position. */
struct id_at {
    uint64_t id;
    size_t at;
};

static int by_id_then_at(const void *pa, const void *pb)
{
    const struct id_at *a = pa, *b = pb;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return a->at < b->at ? -1 : a->at > b->at;
}

static int by_at(const void *pa, const void *pb)
{
    const struct id_at *a = pa, *b = pb;
    return a->at < b->at ? -1 : a->at > b->at;
}

/* Print the distinct ids of `pairs` (n of them, in position order), each
 * at its first position, comma-separated.  Sorts `pairs` in place. */
static void print_distinct(FILE *f, struct id_at *pairs, size_t n)
{
    qsort(pairs, n, sizeof *pairs, by_id_then_at);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || pairs[i].id != pairs[i - 1].id)
            pairs[kept++] = pairs[i];
    qsort(pairs, kept, sizeof *pairs, by_at);
    for (size_t i = 0; i < kept; i++)
        fprintf(f, "%s0x%" PRIx64, i ? "," : "", pairs[i].id);
}

/* Sort `order` by content; starts[g] is where group g begins in it.
 * @return the number of groups. */
static size_t group_by_content(const struct hprof_info *info, size_t *order, size_t n,
                               size_t *starts)
{
    sorting = info->bitmaps;
    qsort(order, n, sizeof *order, by_content);
    size_t groups = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || !same_content(&info->bitmaps[order[i - 1]], &info->bitmaps[order[i]]))
            starts[groups++] = i;
    return groups;
}

static int export_all(struct hprof_reader *r, const struct hprof_info *info, const char *dir,
                      struct hprof_error *err)
{
    char path[4096], name[128], md5[33];
    snprintf(path, sizeof path, "%s/index.tsv", dir);
    FILE *index = fopen(path, "w");
    if (index == NULL)
        return hprof_error_set(err, HPROF_ERR_IO, "%s: %s", path, strerror(errno));
    fprintf(index, "file\tbitmaps\twidth\theight\tbytes\tnote\tbuffers\n");
    int rc = HPROF_OK;
    size_t n = 0, *order = malloc((info->n_bitmaps + 1) * sizeof *order);
    size_t *starts = malloc((info->n_bitmaps + 2) * sizeof *starts);
    struct id_at *pairs = malloc((info->n_bitmaps + 1) * sizeof *pairs);
    if (order == NULL || starts == NULL || pairs == NULL)
        rc = hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
    for (size_t i = 0; rc == HPROF_OK && i < info->n_bitmaps; i++)
        if (info->bitmaps[i].buffer_id != 0 && info->bitmaps[i].buffer_bytes != 0)
            order[n++] = i;
    size_t groups = rc == HPROF_OK ? group_by_content(info, order, n, starts) : 0;
    if (rc == HPROF_OK) {
        starts[groups] = n;
        /* groups in the order of their first bitmap, as the dump lists them */
        struct id_at *first = pairs;
        for (size_t g = 0; g < groups; g++)
            first[g] = (struct id_at){ g, order[starts[g]] };
        qsort(first, groups, sizeof *first, by_at);
        size_t *sequence = malloc((groups + 1) * sizeof *sequence);
        if (sequence == NULL)
            rc = hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
        for (size_t g = 0; rc == HPROF_OK && g < groups; g++)
            sequence[g] = first[g].id;
        for (size_t s = 0; rc == HPROF_OK && s < groups; s++) {
            size_t g = sequence[s], from = starts[g], to = starts[g + 1];
            const struct hprof_info_bitmap *b = &info->bitmaps[order[from]];
            for (int k = 0; k < 16; k++)
                snprintf(md5 + 2 * k, 3, "%02x", b->md5[k]);
            int dump_data = b->width == 0 && b->height == 0;
            const char *note = "";
            uint64_t want = (uint64_t)b->width * b->height * 4;
            if (dump_data) {
                snprintf(name, sizeof name, "%s.%s", md5, encoded_extension(r, b));
            } else if (b->buffer_type == HPROF_TYPE_BYTE && want == b->buffer_bytes && want > 0) {
                snprintf(name, sizeof name, "%s-%ux%u.png", md5, b->width, b->height);
            } else {
                snprintf(name, sizeof name, "%s-%ux%u.bin", md5, b->width, b->height);
                note = "buffer length does not fit width x height x 4 (ARGB_8888): raw bytes";
            }
            snprintf(path, sizeof path, "%s/%s", dir, name);
            rc = !dump_data && *note == '\0'
                     ? write_png(path, r, b->buffer_offset, b->width, b->height, err)
                     : write_raw(path, r, b->buffer_offset, b->buffer_bytes, err);
            /* a Bitmap may be listed more than once (its buffer and a
             * DumpData entry): its id once per line, and each array once */
            fprintf(index, "%s\t", name);
            for (size_t j = from; j < to; j++)
                pairs[j - from] = (struct id_at){ info->bitmaps[order[j]].id, order[j] };
            print_distinct(index, pairs, to - from);
            fprintf(index, "\t%" PRIu32 "\t%" PRIu32 "\t%" PRIu64 "\t%s\t", b->width, b->height,
                    b->buffer_bytes, note);
            for (size_t j = from; j < to; j++)
                pairs[j - from] = (struct id_at){ info->bitmaps[order[j]].buffer_id, order[j] };
            print_distinct(index, pairs, to - from);
            fputc('\n', index);
        }
        free(sequence);
    }
    free(order);
    free(starts);
    free(pairs);
    if (fclose(index) != 0 && rc == HPROF_OK)
        rc = hprof_error_set(err, HPROF_ERR_IO, "index.tsv: write failed");
    return rc;
}

int main(int argc, char **argv)
{
    enum { OPT_MAPPING = 256 };
    static const struct option long_options[] = {
        { "mapping", required_argument, NULL, OPT_MAPPING },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    const char *mapping_path = NULL;
    struct hprof_mapping *mapping = NULL;
    if (cli_init(argv[0]) != 0)
        return EXIT_USAGE;
    argv[0] = (char *)cli_progname; /* getopt's messages name the tool as ours do */
    while ((c = getopt_long(argc, argv, "hV", long_options, NULL)) != -1) {
        switch (c) {
        case OPT_MAPPING: mapping_path = optarg; break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': cli_version(); return EXIT_OK;
        default: return cli_usage_error(NULL);
        }
    }
    if (argc - optind != 2)
        return cli_usage_error(argc == optind ? "missing IN and OUTDIR"
                               : argc - optind == 1 ? "missing OUTDIR"
                               : "too many arguments");
    const char *path = argv[optind], *dir = argv[optind + 1];
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct hprof_info info;
    int fd = -1, analysed = 0;
    int rc = mapping_path ? hprof_mapping_load(mapping_path, &mapping, &err) : HPROF_OK;
    if (rc != HPROF_OK) {
        cli_error("%s", err.message);
        return cli_exit_code(rc);
    }
    rc = cli_open_reader(path, &fd, &r, &err);
    if (rc == HPROF_OK)
        analysed = (rc = hprof_info_analyze_mapped(r, mapping, &info, &err)) == HPROF_OK;
    /* OUTDIR only once there is something to put in it */
    if (rc == HPROF_OK && mkdir(dir, 0777) != 0 && errno != EEXIST)
        rc = hprof_error_set(&err, HPROF_ERR_IO, "%s: %s", dir, strerror(errno));
    if (rc == HPROF_OK)
        rc = export_all(r, &info, dir, &err);
    if (rc != HPROF_OK)
        cli_file_error(path, err.message);
    if (analysed)
        hprof_info_free(&info);
    cli_close_reader(fd, r);
    hprof_mapping_free(mapping);
    return cli_exit_code(rc);
}
