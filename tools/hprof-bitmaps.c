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
#include <limits.h>
#include <signal.h>
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
            "buffers, and OUTDIR/index.tsv: file, bitmap ids, width, height, bytes, note,\n"
            "buffer ids.\n"
            "Buffers are the same content when their bytes are equal, not just their MD5.\n"
            "Files are as private as FILE, made under temporary names and renamed.\n"
            "\n"
            "Options:\n"
            "  -f, --force    replace files of the same names in OUTDIR (without it,\n"
            "                 an existing name is an error and nothing is left)\n"
            "  --mapping=FILE find Bitmaps by the names a ProGuard/R8 mapping.txt\n"
            "                 restores (obfuscated apps)\n"
            "  --dump=N       in a file of several heap dumps, export dump N (from 1)\n"
            "  -h, --help     show this help and exit\n"
            "  -V, --version  show the version and exit\n"
            "\n"
            "Exit status: 0 success, 1 invalid input, 2 usage, 3 I/O error.\n",
            cli_progname);
}

/* A failed write of output `path`, said at once (the input is not to
 * blame): an I/O error with no message left to print. */
static int output_error(const char *path, int error, struct hprof_error *err)
{
    cli_error("%s: %s", cli_quote(path), error ? strerror(error) : "write failed");
    return hprof_error_set(err, HPROF_ERR_IO, "%s", "");
}

static int read_input(struct hprof_reader *r, uint64_t offset, void *buf, size_t len,
                      struct hprof_error *err)
{
    int rc = hprof_reader_pread(r, offset, buf, len);
    return rc == HPROF_OK ? rc : hprof_error_set(err, rc, "offset 0x%" PRIx64 ": cannot read "
                                                 "a bitmap buffer", offset);
}

/* Write all of `buf` to `fd`, through short writes and EINTR. */
static int write_all(int fd, const uint8_t *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ---- A PNG writer on zlib -------------------------------------------------- */

struct png {
    int fd;
    z_stream z;
    uint8_t *out;
    int failed;
    int error;      /* errno of the first failed write, or 0 */
};

static void put(struct png *p, const uint8_t *data, size_t len)
{
    if (!p->failed && write_all(p->fd, data, len) != 0) {
        p->failed = 1;
        p->error = errno;
    }
}

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
    put(p, head, 8);
    if (len > 0)
        put(p, data, len);
    put(p, crc_be, 4);
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
static int write_png(const char *path, int fd, struct hprof_reader *r, uint64_t offset,
                     uint32_t width, uint32_t height, struct hprof_error *err)
{
    struct png p = { .fd = fd };
    size_t row = (size_t)width * 4;
    uint8_t *line = malloc(row + 1);
    p.out = malloc(IDAT_CHUNK);
    int rc = HPROF_OK;
    if (line == NULL || p.out == NULL || deflateInit(&p.z, Z_DEFAULT_COMPRESSION) != Z_OK) {
        rc = hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
        goto out;
    }
    static const uint8_t signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    uint8_t ihdr[13];
    put_be32(ihdr, width);
    put_be32(ihdr + 4, height);
    ihdr[8] = 8;    /* bits per channel */
    ihdr[9] = 6;    /* RGBA */
    ihdr[10] = ihdr[11] = ihdr[12] = 0;
    put(&p, signature, 8);
    chunk(&p, "IHDR", ihdr, sizeof ihdr);
    p.z.next_out = p.out;
    p.z.avail_out = IDAT_CHUNK;
    line[0] = 0;    /* filter: none */
    for (uint32_t y = 0; y < height && rc == HPROF_OK; y++) {
        rc = read_input(r, offset + (uint64_t)y * row, line + 1, row, err);
        if (rc == HPROF_OK)
            deflate_rows(&p, line, row + 1, Z_NO_FLUSH);
    }
    if (rc == HPROF_OK) {
        deflate_rows(&p, NULL, 0, Z_FINISH);
        chunk(&p, "IEND", NULL, 0);
    }
    deflateEnd(&p.z);
out:
    if (rc == HPROF_OK && p.failed)
        rc = output_error(path, p.error, err);
    free(line);
    free(p.out);
    return rc;
}

/* Copy `len` bytes at `offset` to `fd` as they are. */
static int write_raw(const char *path, int fd, struct hprof_reader *r, uint64_t offset,
                     uint64_t len, struct hprof_error *err)
{
    uint8_t *buf = malloc(IDAT_CHUNK);
    int rc = buf ? HPROF_OK : hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
    for (uint64_t at = 0; rc == HPROF_OK && at < len; at += IDAT_CHUNK) {
        size_t n = len - at < IDAT_CHUNK ? (size_t)(len - at) : IDAT_CHUNK;
        rc = read_input(r, offset + at, buf, n, err);
        if (rc == HPROF_OK && write_all(fd, buf, n) != 0)
            rc = output_error(path, errno, err);
    }
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

/* The bitmaps being sorted (qsort has no context argument). */
static const struct hprof_info_bitmap *sorting;

/* By content (the first bitmap with the same bytes: hprof_info_bitmap's
 * same_as), then by position: a content's bitmaps adjacent, the contents
 * in the order of their first bitmap in the dump. */
static int by_content(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    if (sorting[a].same_as != sorting[b].same_as)
        return sorting[a].same_as < sorting[b].same_as ? -1 : 1;
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
        if (i == 0 || info->bitmaps[order[i - 1]].same_as != info->bitmaps[order[i]].same_as)
            starts[groups++] = i;
    return groups;
}

/* Groups by MD5 and size, then in dump order: different contents that
 * share an MD5 (a collision) are told apart in their file names. */
static int by_md5_then_group(const void *pa, const void *pb)
{
    const struct hprof_info_bitmap *x = &sorting[((const struct id_at *)pa)->id];
    const struct hprof_info_bitmap *y = &sorting[((const struct id_at *)pb)->id];
    if (x->buffer_bytes != y->buffer_bytes)
        return x->buffer_bytes < y->buffer_bytes ? -1 : 1;
    int c = memcmp(x->md5, y->md5, 16);
    if (c != 0)
        return c;
    return by_at(pa, pb);
}

/* ordinal[g]: how many earlier groups have group g's MD5 and size (0
 * almost always).  `pairs` is room for `groups` entries. */
static void md5_ordinals(const struct hprof_info *info, const size_t *order, const size_t *starts,
                         size_t groups, struct id_at *pairs, size_t *ordinal)
{
    for (size_t g = 0; g < groups; g++)
        pairs[g] = (struct id_at){ order[starts[g]], g };
    sorting = info->bitmaps;
    qsort(pairs, groups, sizeof *pairs, by_md5_then_group);
    for (size_t k = 0; k < groups; k++) {
        const struct hprof_info_bitmap *x = &info->bitmaps[pairs[k].id];
        const struct hprof_info_bitmap *prev = k > 0 ? &info->bitmaps[pairs[k - 1].id] : NULL;
        int same_md5 = prev != NULL && prev->buffer_bytes == x->buffer_bytes &&
                       memcmp(prev->md5, x->md5, 16) == 0;
        ordinal[pairs[k].at] = same_md5 ? ordinal[pairs[k - 1].at] + 1 : 0;
    }
}

/* The file name of a content whose first bitmap is `b`: its MD5, "-N"
 * for the Nth content with that MD5 (N >= 2), and what it holds.  @return
 * the note for the index ("" for none); *png says to encode pixels. */
static const char *image_name(struct hprof_reader *r, const struct hprof_info_bitmap *b,
                              size_t ordinal, char *name, size_t size, int *png)
{
    char md5[33], tag[24] = "";
    for (int k = 0; k < 16; k++)
        snprintf(md5 + 2 * k, 3, "%02x", b->md5[k]);
    if (ordinal > 0)
        snprintf(tag, sizeof tag, "-%zu", ordinal + 1);
    uint64_t want = (uint64_t)b->width * b->height * 4;
    *png = 0;
    if (b->width == 0 && b->height == 0) { /* DumpData: encoded already */
        snprintf(name, size, "%s%s.%s", md5, tag, encoded_extension(r, b));
        return "";
    }
    if (b->buffer_type == HPROF_TYPE_BYTE && want == b->buffer_bytes && want > 0) {
        snprintf(name, size, "%s%s-%ux%u.png", md5, tag, b->width, b->height);
        *png = 1;
        return "";
    }
    snprintf(name, size, "%s%s-%ux%u.bin", md5, tag, b->width, b->height);
    return "buffer length does not fit width x height x 4 (ARGB_8888): raw bytes";
}

/* ---- Stopped by a signal: nothing left behind -------------------------------- */

/* A run stopped by SIGINT, SIGTERM or SIGHUP leaves what a failed one
 * leaves: nothing.  A partial export (some images, no index.tsv) would be
 * taken for a whole one, and its names would stop the next run.  The
 * handler removes the files being written, the files placed, and the
 * directory if this run made it; it reads the state below, which the
 * run changes only with those signals blocked, so it always finds it
 * whole (and each call it makes is async-signal-safe). */
enum { FILE_INDEX, FILE_IMAGE, N_FILES };
static struct cli_outdir *volatile stop_dir;
static struct cli_output *volatile stop_files[N_FILES];

static void on_stop(int sig)
{
    for (int i = 0; i < N_FILES; i++) {
        struct cli_output *o = stop_files[i];
        if (o != NULL && o->tmp_name != NULL)
            unlinkat(o->at, o->tmp_name, 0);
    }
    struct cli_outdir *d = stop_dir;
    if (d != NULL) {
        for (size_t i = 0; i < d->n_placed; i++)
            unlinkat(d->fd, d->placed[i], 0);
        if (d->made)
            rmdir(d->path);
    }
    /* the process ends as the signal would have ended it */
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The stop signals go to on_stop(), except one that was ignored when the
 * program started (nohup, a background job of a shell without job
 * control): whoever started us asked for it to be ignored. */
static void install_stop_handlers(void)
{
    cli_install_signal_handlers(); /* a closed pipe, a limit on file size: errors, not deaths */
    for (int i = 0; i < CLI_N_STOP_SIGNALS; i++)
        cli_catch_signal(cli_stop_signals[i], on_stop, NULL);
}

/* cli_outdir_open(), the directory then known to the stop handler. */
static int open_outdir(struct cli_outdir *d, const char *path, int replace,
                       const struct stat *input)
{
    sigset_t before;
    cli_block_stop_signals(&before);
    int code = cli_outdir_open(d, path, replace, input);
    if (code == 0)
        stop_dir = d;
    cli_unblock_stop_signals(&before);
    return code;
}

/* cli_outdir_close(), out of the stop handler's sight first. */
static void close_outdir(struct cli_outdir *d, int failed)
{
    sigset_t before;
    cli_block_stop_signals(&before);
    stop_dir = NULL;
    cli_outdir_close(d, failed);
    cli_unblock_stop_signals(&before);
}

/* cli_outdir_create() of `name`, the stop handler's file `slot` until
 * finish_file().  @return 0 or an exit code (message printed). */
static int create_file(struct cli_outdir *d, struct cli_output *o, const char *name, int slot)
{
    sigset_t before;
    cli_block_stop_signals(&before);
    int code = cli_outdir_create(d, o, name);
    if (code == 0)
        stop_files[slot] = o;
    cli_unblock_stop_signals(&before);
    return code;
}

/* The file of `slot` renamed into place as `name` and placed in `d`, or,
 * after a failure (`failed`), removed.  @return 0 or an exit code. */
static int finish_file(struct cli_outdir *d, struct cli_output *o, const char *name, int slot,
                       int failed)
{
    sigset_t before;
    int code = 0;
    cli_block_stop_signals(&before);
    stop_files[slot] = NULL;
    if (failed) {
        cli_output_abort(o);
    } else {
        code = cli_output_commit(o);
        if (code == 0)
            code = cli_outdir_placed(d, name);
    }
    cli_unblock_stop_signals(&before);
    return code;
}

/* ---- The export ---------------------------------------------------------------- */

/* One content's file, made in `dir` under a temporary name and renamed. */
static int export_image(struct cli_outdir *dir, struct hprof_reader *r,
                        const struct hprof_info_bitmap *b, const char *name, int png,
                        struct hprof_error *err)
{
    struct cli_output o;
    if (create_file(dir, &o, name, FILE_IMAGE) != 0)
        return hprof_error_set(err, HPROF_ERR_IO, "%s", "");
    int rc = png ? write_png(o.path, o.fd, r, b->buffer_offset, b->width, b->height, err)
                 : write_raw(o.path, o.fd, r, b->buffer_offset, b->buffer_bytes, err);
    int code = finish_file(dir, &o, name, FILE_IMAGE, rc != HPROF_OK);
    if (rc != HPROF_OK)
        return rc;
    return code == 0 ? HPROF_OK
                     : hprof_error_set(err, code == EXIT_USAGE ? HPROF_ERR_USAGE : HPROF_ERR_IO,
                                       "%s", "");
}

/* The ids of the bitmaps [from, to) of `order` and of their buffers, each
 * once: one line of the index after its file name. */
static void index_line(FILE *index, const struct hprof_info *info, const size_t *order,
                       size_t from, size_t to, const char *name, const char *note,
                       struct id_at *pairs)
{
    const struct hprof_info_bitmap *b = &info->bitmaps[order[from]];
    /* a Bitmap may be listed more than once (its buffer and a DumpData
     * entry): its id once per line, and each array once */
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

static int export_all(struct hprof_reader *r, const struct hprof_info *info,
                      struct cli_outdir *dir, struct hprof_error *err)
{
    struct cli_output index_out;
    if (create_file(dir, &index_out, "index.tsv", FILE_INDEX) != 0)
        return hprof_error_set(err, HPROF_ERR_IO, "%s", "");
    /* the index is made in memory (a line per content) and written at the end */
    char *index_text = NULL;
    size_t index_len = 0;
    FILE *index = open_memstream(&index_text, &index_len);
    size_t n = 0, *order = malloc((info->n_bitmaps + 1) * sizeof *order);
    size_t *starts = malloc((info->n_bitmaps + 2) * sizeof *starts);
    size_t *ordinal = malloc((info->n_bitmaps + 1) * sizeof *ordinal);
    struct id_at *pairs = malloc((info->n_bitmaps + 1) * sizeof *pairs);
    int rc = HPROF_OK;
    if (index == NULL || order == NULL || starts == NULL || ordinal == NULL || pairs == NULL)
        rc = hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
    if (rc == HPROF_OK)
        fprintf(index, "file\tbitmaps\twidth\theight\tbytes\tnote\tbuffers\n");
    for (size_t i = 0; rc == HPROF_OK && i < info->n_bitmaps; i++)
        if (info->bitmaps[i].buffer_id != 0 && info->bitmaps[i].buffer_bytes != 0)
            order[n++] = i;
    size_t groups = rc == HPROF_OK ? group_by_content(info, order, n, starts) : 0;
    if (rc == HPROF_OK) {
        starts[groups] = n;
        md5_ordinals(info, order, starts, groups, pairs, ordinal);
    }
    for (size_t g = 0; rc == HPROF_OK && g < groups; g++) {
        const struct hprof_info_bitmap *b = &info->bitmaps[order[starts[g]]];
        char name[128];
        int png;
        const char *note = image_name(r, b, ordinal[g], name, sizeof name, &png);
        rc = export_image(dir, r, b, name, png, err);
        if (rc == HPROF_OK)
            index_line(index, info, order, starts[g], starts[g + 1], name, note, pairs);
    }
    free(order);
    free(starts);
    free(ordinal);
    free(pairs);
    if (index != NULL && (fclose(index) != 0 || index_text == NULL) && rc == HPROF_OK)
        rc = hprof_error_set(err, HPROF_ERR_NOMEM, "out of memory");
    if (rc == HPROF_OK && write_all(index_out.fd, (const uint8_t *)index_text, index_len) != 0)
        rc = output_error(index_out.path, errno, err);
    free(index_text);
    int code = finish_file(dir, &index_out, "index.tsv", FILE_INDEX, rc != HPROF_OK);
    if (rc != HPROF_OK)
        return rc;
    return code == 0 ? HPROF_OK
                     : hprof_error_set(err, code == EXIT_USAGE ? HPROF_ERR_USAGE : HPROF_ERR_IO,
                                       "%s", "");
}

/* The analysis of heap dump `dump` of the file (0: a file of one); a file
 * of several without a choice is refused, saying how to choose. */
static int analyse(struct hprof_reader *r, const struct hprof_mapping *mapping, unsigned dump,
                   struct hprof_info *info, struct hprof_error *err)
{
    if (dump != 0)
        hprof_reader_set_dump(r, dump);
    int rc = hprof_info_analyze_mapped(r, mapping, info, err);
    unsigned dumps = hprof_reader_dumps(r);
    if (rc == HPROF_OK && dump > dumps) {
        hprof_info_free(info);
        return hprof_error_set(err, HPROF_ERR_USAGE, "no heap dump %u: the file holds %u", dump,
                               dumps);
    }
    if (rc != HPROF_OK && dump == 0 && dumps > 1) {
        /* the reader's "a second heap dump begins here" (in `err`, which it
         * shares) says where; this says what to do */
        *err = (struct hprof_error){ 0 };
        return hprof_error_set(err, HPROF_ERR_USAGE, "the file holds several heap dumps, "
                               "each its own ids: choose one (--dump=N)");
    }
    return rc;
}

int main(int argc, char **argv)
{
    enum { OPT_MAPPING = 256, OPT_DUMP };
    static const struct option long_options[] = {
        { "mapping", required_argument, NULL, OPT_MAPPING },
        { "dump", required_argument, NULL, OPT_DUMP },
        { "force", no_argument, NULL, 'f' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    const char *mapping_path = NULL;
    int force = 0;
    unsigned long long dump = 0;
    struct hprof_mapping *mapping = NULL;
    if (cli_init(argv[0]) != 0)
        return EXIT_USAGE;
    argv[0] = (char *)cli_progname; /* getopt's messages name the tool as ours do */
    while ((c = getopt_long(argc, argv, "fhV", long_options, NULL)) != -1) {
        switch (c) {
        case OPT_MAPPING: mapping_path = optarg; break;
        case OPT_DUMP:
            if (cli_parse_uint(optarg, UINT_MAX, &dump) != 0 || dump == 0)
                return cli_usage_error("--dump: expected a heap dump's number from 1, got '%s'",
                                       optarg);
            break;
        case 'f': force = 1; break;
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
    if (cli_refuse_messages_into_inputs(argv + optind, 1) != 0)
        return EXIT_USAGE;
    install_stop_handlers();
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
        analysed = (rc = analyse(r, mapping, (unsigned)dump, &info, &err)) == HPROF_OK;
    /* OUTDIR only once there is something to put in it, as private as
     * the input */
    struct stat in_st;
    int have_stat = strcmp(path, "-") == 0 ? fstat(STDIN_FILENO, &in_st) == 0
                                           : stat(path, &in_st) == 0;
    struct cli_outdir out;
    int code = 0;
    if (rc == HPROF_OK) {
        code = open_outdir(&out, dir, force, have_stat ? &in_st : NULL);
        if (code == 0) {
            rc = export_all(r, &info, &out, &err);
            close_outdir(&out, rc != HPROF_OK);
        }
    }
    /* no --salvage here: its Bitmaps are found by a pass over the whole dump */
    if (rc != HPROF_OK && err.message[0]) /* else said already */
        cli_input_error(path, &err, 0);
    if (analysed)
        hprof_info_free(&info);
    cli_close_reader(fd, r);
    hprof_mapping_free(mapping);
    return code ? code : cli_exit_code(rc);
}
