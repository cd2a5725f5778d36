/*
 * hprof-synth - write a deterministic heap dump for tests and benchmarks.
 *
 * --android (default) models ART's writer (art/runtime/hprof/hprof.cc):
 * JAVA PROFILE 1.0.3, 4-byte ids, STRING/LOAD_CLASS/STACK_TRACE before the
 * heap, small HEAP_DUMP_SEGMENTs (at most 128 objects, ended once past 4 KiB)
 * each switching heaps
 * with HEAP_DUMP_INFO, roots first, the image ('I'), zygote ('Z') and app
 * ('A') heaps, java.lang.String with the synthetic `value` field and its
 * char[]/byte[] right after the instance, android.graphics.Bitmap with
 * mBuffer (shared, duplicated, null and recycled cases) and the Android 10+
 * Bitmap$DumpData holder, every root kind, statics of every type, a
 * superclass chain and non-ASCII (modified UTF-8) STRING records.
 *
 * --hotspot models a 64-bit HotSpot dump: 1.0.2, 8-byte ids, slash class
 * names, String.value byte[] with coder, class dumps first, large segments.
 *
 * It writes through libhprof's writer: the generator drives the visitor API
 * like a reader would.  --manifest FILE writes what was generated (counts the
 * tests check tools against), one "key value" per line.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "synth/synth.h"

struct options {
    int android;
    unsigned scale;
    size_t big_bitmap;
    uint64_t pixels;
    int nodata;
    const char *manifest;
    const char *secrets;    /* --secrets FILE: plant them, list them there */
    unsigned class_chain;   /* --class-chain N: that dump instead */
    int system_links;
    int leaf_first;
    unsigned dumps;         /* --dumps N: heap dumps in the file, as the hprof agent appends them */
    int whole_dumps;        /* --whole-dumps: each a HEAP_DUMP record, not segments and an END */
    unsigned late_referrers;/* --late-referrers N: Strings and Bitmaps N records after their arrays */
    int late_bitmaps_only;  /* --late-bitmaps N: Bitmaps alone */
    int force;              /* -f: overwrite OUT and the manifest */
    const char *out;
};

/* In front of the writer while a later heap dump's classes and stack
 * records are made again (same ids): the names, LOAD_CLASSes and traces
 * are in the file already, as the hprof agent writes them once. */
static int drop_string(struct hprof_visitor *v, const struct hprof_string *r)
{
    (void)v;
    (void)r;
    return HPROF_OK;
}

static int drop_load_class(struct hprof_visitor *v, const struct hprof_load_class *r)
{
    (void)v;
    (void)r;
    return HPROF_OK;
}

static int drop_record(struct hprof_visitor *v, const struct hprof_record *r)
{
    (void)v;
    (void)r;
    return HPROF_OK;
}

static const struct hprof_visitor_ops written_already_ops = {
    .string = drop_string, .load_class = drop_load_class, .record = drop_record,
};

/* The objects of one heap dump that others refer to, and the roots. */
struct dump_objects {
    struct model m;
    uint64_t thread;
    uint64_t zygote_kept, zygote_lost, zygote_bytes, zygote_array;
    uint64_t image_string, zygote_string;
    uint64_t holder, last;
    struct links links;
};

/* The header, or in a later dump the classes and stack records written
 * again through a filter (they are in the file already). */
static void generate_dump_heading(struct synth *s, struct model *m, unsigned dump)
{
    struct hprof_visitor *out = s->out;
    struct hprof_visitor written_already = { &written_already_ops, out };
    if (dump == 1) {
        struct hprof_header h = { .id_size = s->ids, .timestamp_ms = 1700000000000ull };
        snprintf(h.version, sizeof h.version, "JAVA PROFILE 1.0.%d", s->android ? 3 : 2);
        s->rc = hprof_visit_header(s->out, &h);
    } else {
        s->out = &written_already;
    }
    define_classes(s, m);
    stack_records(s, m);
    s->out = out;
    if (dump > 1) { /* a record between the dumps, as the agent's traces are */
        char name[32];
        snprintf(name, sizeof name, "heap dump %u", dump);
        (void)string_id(s, name);
    }
}

/* System objects first, so the app can refer to some of them. */
static void generate_system_objects(struct synth *s, struct dump_objects *d)
{
    struct model *m = &d->m;
    system_classes(s, m);
    if (!s->android)
        return;
    d->image_string = string_object(s, m, 'I', "interned boot string");
    d->zygote_string = string_object(s, m, 'Z', "zygote string");
    struct values v = { .n = 0 };
    base_values(s, &v, 1, d->zygote_string);
    instance(s, 'Z', d->zygote_kept, m->base, &v);      /* referenced by the app */
    v.n = 0;
    base_values(s, &v, 2, 0);
    instance(s, 'Z', d->zygote_lost, m->base, &v);      /* referenced by nobody */
    uint8_t zb[100];
    memset(zb, 0x5A, sizeof zb);
    primitive_array(s, 'Z', d->zygote_bytes, HPROF_TYPE_BYTE, zb, sizeof zb);
    uint64_t zel[2] = { d->zygote_lost, d->image_string };
    object_array(s, 'Z', d->zygote_array, m->object_array, zel, 2);
    /* The app will refer to zygote_kept, zygote_bytes, zygote_array and
     * (from Statics.sObject) image_string: these stay as hollow stand-ins.
     * A stand-in refers to nothing, so zygote_string is not kept. */
    s->standins = 4;
    if (s->system_links)
        system_links_zygote(s, m, &d->links);
}

static void generate_app_objects(struct synth *s, const struct options *o, unsigned dump,
                                 struct dump_objects *d)
{
    struct model *m = &d->m;
    app_classes(s, m, s->android ? d->image_string : 0);
    struct values tv = { .n = 0 };
    put(&tv, string_object(s, m, 'A', "main"), s->ids);
    instance(s, 'A', d->thread, m->thread, &tv);
    /* later dumps hold more: the same ids, other objects behind some */
    for (unsigned round = 0; round < o->scale + dump - 1 && s->rc >= 0; round++)
        d->last = population(s, m, round, 40, 2048);
    string_object(s, m, 'A', "");
    string_object(s, m, 'A', "na\xC3\xAFve caf\xC3\xA9 \xE2\x98\x95");
    d->holder = new_object_id(s);
    uint64_t elems[4] = { d->last, d->thread, 0, s->android ? d->zygote_array : 0 };
    object_array(s, 'A', d->holder, m->object_array, elems, 4);
    if (s->android) {
        /* Leaf.tag -> a zygote object, Derived.payload -> a zygote byte[] */
        struct values v = { .n = 0 };
        put(&v, d->zygote_kept, s->ids);
        derived_values(s, &v, d->zygote_bytes, d->last, 7, 0);
        instance(s, 'A', new_object_id(s), m->leaf, &v);
        if (s->system_links)
            system_links_app(s, m, &d->links);
        bitmaps(s, m, o->big_bitmap);
        if (o->pixels)
            pixel_bitmaps(s, m, o->pixels);
    }
    leak_candidates(s, m);
    if (s->secrets)
        plant_secrets(s, m);
    if (o->nodata) {
        place(s, 'A', 1 + s->ids + 9);
        struct hprof_primitive_array a = { .tag = HPROF_PRIMITIVE_ARRAY_NODATA,
                                           .id = new_object_id(s), .count = 1000,
                                           .type = HPROF_TYPE_INT };
        s->primitive_arrays[1]++;
        if (s->rc >= 0)
            s->rc = hprof_visit_primitive_array(s->out, &a);
    }
}

/* Roots in a segment of their own at the end keep the code simple; ART
 * puts them first, which the real ART fixture covers. */
static void generate_roots(struct synth *s, const struct dump_objects *d)
{
    const struct model *m = &d->m;
    root(s, HPROF_ROOT_STICKY_CLASS, m->string, 0, 0);
    root(s, HPROF_ROOT_JNI_GLOBAL, d->holder, 0, 0);
    root(s, HPROF_ROOT_JNI_LOCAL, d->last, m->thread_serial, 0);
    root(s, HPROF_ROOT_JAVA_FRAME, d->last, m->thread_serial, 1);
    root(s, HPROF_ROOT_JAVA_FRAME, s->android ? 0xdead0 : 0xdead00, m->thread_serial, 2);
    root(s, HPROF_ROOT_NATIVE_STACK, d->holder, m->thread_serial, 0);
    root(s, HPROF_ROOT_THREAD_BLOCK, d->thread, m->thread_serial, 0);
    root(s, HPROF_ROOT_MONITOR_USED, d->holder, 0, 0);
    root(s, HPROF_ROOT_THREAD_OBJECT, d->thread, m->thread_serial, m->stack_serial);
    root(s, HPROF_ROOT_UNKNOWN, d->last, 0, 0);
    if (!s->android)
        return;
    root(s, HPROF_ROOT_INTERNED_STRING, d->image_string, 0, 0);
    root(s, HPROF_ROOT_FINALIZING, d->holder, 0, 0);
    root(s, HPROF_ROOT_DEBUGGER, d->holder, 0, 0);
    root(s, HPROF_ROOT_REFERENCE_CLEANUP, d->holder, 0, 0);
    root(s, HPROF_ROOT_VM_INTERNAL, d->zygote_lost, 0, 0);
    root(s, HPROF_ROOT_VM_INTERNAL, d->zygote_string, 0, 0);
    root(s, HPROF_ROOT_JNI_MONITOR, d->holder, m->thread_serial, 3);
    root(s, HPROF_UNREACHABLE, d->last, 0, 0);
    s->roots_to_system_dropped = 2;
    if (s->system_links)
        system_links_roots(s, &d->links);
}

/* Heap dump `dump` (1-based) of the file; every dump has the same object
 * ids, as the hprof agent's dumps of one JVM have. */
static void generate(struct synth *s, const struct options *o, unsigned dump)
{
    struct dump_objects d = { .m = { 0 } };
    generate_dump_heading(s, &d.m, dump);
    CHECK(s);
    if (s->android)
        d.m.dump_data_instance = new_object_id(s);
    d.thread = new_object_id(s);
    d.zygote_kept = new_object_id(s);
    d.zygote_lost = new_object_id(s);
    d.zygote_bytes = new_object_id(s);
    d.zygote_array = new_object_id(s);
    generate_system_objects(s, &d);
    s->late_after = o->late_referrers;
    s->late_classes[0] = o->late_bitmaps_only ? d.m.bitmap : d.m.string;
    s->late_classes[1] = d.m.bitmap;
    generate_app_objects(s, o, dump, &d);
    release_late(s, 1);
    s->late_after = 0;
    if (!o->whole_dumps)
        end_segment(s);
    unsigned seg_limit = s->seg_limit;
    uint64_t seg_byte_limit = s->seg_byte_limit;
    s->seg_limit = ~0u;
    s->seg_byte_limit = UINT64_MAX;
    generate_roots(s, &d);
    end_segment(s);
    struct hprof_record end = { .tag = HPROF_TAG_HEAP_DUMP_END };
    if (s->rc >= 0 && !o->whole_dumps)
        s->rc = hprof_visit_record(s->out, &end);
    s->seg_limit = seg_limit;
    s->seg_byte_limit = seg_byte_limit;
    if (s->rc >= 0 && dump == o->dumps)
        s->rc = hprof_visit_end(s->out);
}

/* --class-chain N: N classes, each the superclass of the next, listed root
 * first or (--leaf-first) leaf first, and an instance of the leaf and one
 * of the root.  Every 1000th class has an int field, the others none.  A
 * dump of class layouts only, to show that resolving them costs time
 * linear in their number whatever their order (a walk that resolved each
 * from scratch would cost the square leaf first). */
static void generate_chain(struct synth *s, const struct options *o)
{
    static const struct fdef field = { "value", HPROF_TYPE_INT };
    unsigned n = o->class_chain;
    struct hprof_header h = { .id_size = s->ids, .timestamp_ms = 1700000000000ull };
    snprintf(h.version, sizeof h.version, "JAVA PROFILE 1.0.%d", s->android ? 3 : 2);
    s->rc = hprof_visit_header(s->out, &h);
    string_id(s, field.name); /* before the segment opens */
    uint64_t step = s->android ? 8 : 16, first = s->next_object;
    s->next_object += (uint64_t)n * step;
    s->seg_limit = 100000;
    s->seg_byte_limit = UINT64_MAX;
    for (unsigned k = 0; k < n && s->rc >= 0; k++) {
        unsigned i = o->leaf_first ? n - 1 - k : k;
        class_dump(s, ~0u, first + i * step, i ? first + (i - 1) * step : 0, &field,
                   i % 1000 == 0, NULL, 0, NULL, 0, 4 * (i / 1000 + 1));
    }
    size_t bytes = 4 * ((size_t)(n - 1) / 1000 + 1);
    uint8_t *values = calloc(1, bytes);
    if (values == NULL && s->rc >= 0)
        s->rc = HPROF_ERR_NOMEM;
    struct hprof_instance leaf = { .id = new_object_id(s), .stack_serial = 1,
                                   .class_id = first + (uint64_t)(n - 1) * step,
                                   .length = (uint32_t)bytes, .values = values };
    struct hprof_instance root = { .id = new_object_id(s), .stack_serial = 1,
                                   .class_id = first, .length = 4, .values = values };
    place(s, ~0u, 1 + 2 * s->ids + 8 + leaf.length);
    if (s->rc >= 0)
        s->rc = hprof_visit_instance(s->out, &leaf);
    place(s, ~0u, 1 + 2 * s->ids + 8 + root.length);
    if (s->rc >= 0)
        s->rc = hprof_visit_instance(s->out, &root);
    s->instances[1] += 2;
    free(values);
    end_segment(s);
    struct hprof_record end = { .tag = HPROF_TAG_HEAP_DUMP_END };
    if (s->rc >= 0)
        s->rc = hprof_visit_record(s->out, &end);
    if (s->rc >= 0)
        s->rc = hprof_visit_end(s->out);
}

static void print_manifest(const struct synth *s, FILE *f);

/* The manifest is written as the dump is: a temporary file renamed. */
static int write_manifest(const struct synth *s, const char *path, int force)
{
    struct cli_output out;
    int code = cli_output_open(&out, path, force, NULL);
    if (code != 0)
        return code;
    int copy = out.tmp != NULL ? dup(out.fd) : -1;
    FILE *f = copy >= 0 ? fdopen(copy, "w") : NULL;
    if (f == NULL) {
        if (copy >= 0)
            close(copy);
        cli_error("%s: cannot write it%s", path, out.tmp ? "" : " (not a regular file)");
        cli_output_abort(&out);
        return EXIT_IO;
    }
    print_manifest(s, f);
    int failed = fflush(f) != 0 || ferror(f);
    int error = errno;
    failed |= fclose(f) != 0;
    if (failed) {
        cli_error("%s: %s", path, strerror(error));
        cli_output_abort(&out);
        return EXIT_IO;
    }
    return cli_output_commit(&out);
}

static void print_manifest(const struct synth *s, FILE *f)
{
    fprintf(f, "id_size %u\n", s->ids);
    fprintf(f, "class_dumps %" PRIu64 "\n", s->class_dumps);
    fprintf(f, "roots %" PRIu64 "\n", s->roots);
    fprintf(f, "instances %" PRIu64 "\n", s->instances[0] + s->instances[1]);
    fprintf(f, "instances_app %" PRIu64 "\n", s->instances[1]);
    fprintf(f, "object_arrays %" PRIu64 "\n", s->object_arrays[0] + s->object_arrays[1]);
    fprintf(f, "object_arrays_app %" PRIu64 "\n", s->object_arrays[1]);
    fprintf(f, "primitive_arrays %" PRIu64 "\n", s->primitive_arrays[0] + s->primitive_arrays[1]);
    fprintf(f, "primitive_arrays_app %" PRIu64 "\n", s->primitive_arrays[1]);
    fprintf(f, "string_instances_app %" PRIu64 "\n", s->string_instances_app);
    fprintf(f, "strings %d\n", s->n_texts);
    fprintf(f, "bitmaps %" PRIu64 "\n", s->bitmaps);
    fprintf(f, "bitmap_groups %" PRIu64 "\n", s->dedupe_groups);
    fprintf(f, "bitmap_merged %" PRIu64 "\n", s->dedupe_merged);
    fprintf(f, "bitmap_dropped %" PRIu64 "\n", s->dedupe_dropped);
    fprintf(f, "system_standins %" PRIu64 "\n", s->standins);
    fprintf(f, "system_objects %" PRIu64 "\n",
            s->instances[0] + s->object_arrays[0] + s->primitive_arrays[0]);
    fprintf(f, "roots_dropped %" PRIu64 "\n", s->roots_to_system_dropped);
}

static void usage(FILE *out)
{
    fprintf(out,
            "Write a deterministic heap dump for tests and benchmarks.\n"
            "\n"
            "Usage: %s [options] OUT\n"
            "\n"
            "Options:\n"
            "  --android          ART-style dump: 1.0.3, 4-byte ids, heaps, bitmaps [Default]\n"
            "  --hotspot          HotSpot-style dump: 1.0.2, 8-byte ids\n"
            "  --scale N          repeat the app population N times [Default: 1]\n"
            "  --big-bitmap BYTES size of the large bitmap buffer [Default: 2621440]\n"
            "  --pixels BYTES     add about BYTES of pixel buffers in many Bitmaps, with\n"
            "                     duplicates, shared, null, recycled and zeroed ones\n"
            "  --nodata           add a PRIMITIVE_ARRAY_NODATA record\n"
            "  --system-links     add android.os.Build, zygote objects that refer to app\n"
            "                     objects and app objects only a zygote object leads to\n"
            "  --secrets FILE     (Android) plant unique secrets in every kind of place,\n"
            "                     listed in FILE for tests/hprof-secrets\n"
            "  --class-chain N    instead, N classes chained by superclass, root first\n"
            "  --leaf-first       with --class-chain: list the classes leaf first\n"
            "  --dumps N          N heap dumps in the file with the same object ids, as\n"
            "                     the JDK's hprof agent appends them [Default: 1]\n"
            "  --whole-dumps      each heap dump one HEAP_DUMP record (else segments\n"
            "                     closed by HEAP_DUMP_END)\n"
            "  --late-referrers N write each app String and Bitmap N records after the\n"
            "                     array it refers to (as far as its heap dump allows),\n"
            "                     to exercise a one-pass shrink's window\n"
            "  --late-bitmaps N   the same for the Bitmaps alone\n"
            "  --manifest FILE    write what was generated, \"key value\" per line\n"
            "  -f, --force        overwrite OUT\n"
            "  -h, --help         show this help and exit\n"
            "  -V, --version      show the version and exit\n",
            cli_progname);
}

static const struct option long_options[] = {
    { "android", no_argument, NULL, 'a' }, { "hotspot", no_argument, NULL, 's' },
    { "scale", required_argument, NULL, 'n' }, { "big-bitmap", required_argument, NULL, 'b' },
    { "pixels", required_argument, NULL, 'p' },
    { "nodata", no_argument, NULL, 'd' }, { "manifest", required_argument, NULL, 'm' },
    { "force", no_argument, NULL, 'f' }, { "help", no_argument, NULL, 'h' },
    { "class-chain", required_argument, NULL, 'c' },
    { "leaf-first", no_argument, NULL, 'l' },
    { "dumps", required_argument, NULL, 'D' },
    { "whole-dumps", no_argument, NULL, 'W' },
    { "system-links", no_argument, NULL, 'L' },
    { "secrets", required_argument, NULL, 'S' },
    { "late-referrers", required_argument, NULL, 'R' },
    { "late-bitmaps", required_argument, NULL, 'B' },
    { "version", no_argument, NULL, 'V' }, { NULL, 0, NULL, 0 },
};

/* A number option's value, from 1 (or `min`) to `max`; @return 0 or
 * EXIT_USAGE after a message. */
static int number(const char *option, const char *arg, unsigned long long min,
                  unsigned long long max, const char *range, unsigned long long *v)
{
    if (cli_parse_uint(arg, max, v) == 0 && *v >= min)
        return 0;
    return cli_usage_error("--%s: expected %s, got '%s'", option, range, arg);
}

/* One option; @return 0, or an exit code to leave with (-h and -V: EXIT_OK). */
static int parse_option(int c, const char *arg, struct options *o)
{
    unsigned long long v;
    int rc = 0;
    switch (c) {
    case 'a': o->android = 1; break;
    case 's': o->android = 0; break;
    case 'n':
        if ((rc = number("scale", arg, 1, 1000000, "1-1000000", &v)) == 0)
            o->scale = (unsigned)v;
        break;
    case 'b':
        if ((rc = number("big-bitmap", arg, 4096, 1u << 30, "4096-1073741824", &v)) == 0)
            o->big_bitmap = (size_t)v & ~(size_t)4095;
        break;
    case 'p':
        if ((rc = number("pixels", arg, 0, 1ull << 40, "0-1099511627776", &v)) == 0)
            o->pixels = v;
        break;
    case 'd': o->nodata = 1; break;
    case 'c':
        if ((rc = number("class-chain", arg, 1, 100000000, "1-100000000", &v)) == 0)
            o->class_chain = (unsigned)v;
        break;
    case 'l': o->leaf_first = 1; break;
    case 'D':
        if ((rc = number("dumps", arg, 1, 1000, "1-1000", &v)) == 0)
            o->dumps = (unsigned)v;
        break;
    case 'W': o->whole_dumps = 1; break;
    case 'R':
    case 'B':
        if ((rc = number(c == 'B' ? "late-bitmaps" : "late-referrers", arg, 1, 100000000,
                         "1-100000000", &v)) == 0)
            o->late_referrers = (unsigned)v;
        o->late_bitmaps_only = c == 'B';
        break;
    case 'L': o->system_links = 1; break;
    case 'm': o->manifest = arg; break;
    case 'S': o->secrets = arg; break;
    case 'f': o->force = 1; break;
    case 'h': usage(stdout); return EXIT_OK;
    case 'V': cli_version(); return EXIT_OK;
    default: return cli_usage_error(NULL);
    }
    return rc;
}

/* @return -1 to go on, or an exit code to leave with. */
static int parse(int argc, char **argv, struct options *o)
{
    int c;
    while ((c = getopt_long(argc, argv, "fhV", long_options, NULL)) != -1) {
        int rc = parse_option(c, optarg, o);
        if (rc != 0 || c == 'h' || c == 'V')
            return rc;
    }
    if (optind != argc - 1)
        return cli_usage_error(optind == argc ? "no output file" : "one output file, not %d",
                               argc - optind);
    o->out = argv[optind];
    if (o->secrets && (!o->android || o->class_chain))
        return cli_usage_error("--secrets: only for the Android heap (not with --hotspot or "
                               "--class-chain)");
    return -1;
}

/* Every dump of the file through writer `w`; @return as s->rc. */
static int generate_all(struct synth *s, const struct options *o, struct hprof_writer *w)
{
    s->out = hprof_writer_visitor(w);
    if (o->class_chain > 0) {
        generate_chain(s, o);
        return s->rc;
    }
    for (unsigned dump = 1; dump <= o->dumps && s->rc >= 0; dump++) {
        s->next_object = o->android ? 0x12c00000 : 0x7f0000000ull;
        s->next_serial = 0;
        generate(s, o, dump);
    }
    return s->rc;
}

/* The dump into `out`; @return as s->rc, with *err set on a writer error. */
static int write_dump(struct synth *s, const struct options *o, const struct cli_output *out,
                      struct hprof_error *err)
{
    struct hprof_sink *sink = hprof_sink_new_fd(out->fd, err);
    /* a fixture is made again at will: no fsync (no cli_output_sync()),
     * no writeback */
    if (sink != NULL && out->tmp != NULL)
        hprof_sink_set_preallocate(sink, CLI_PREALLOCATE_STEP);
    struct hprof_writer *w = sink ? hprof_writer_new(sink, err) : NULL;
    if (w == NULL)
        s->rc = err->code;
    else if (generate_all(s, o, w) >= 0)
        s->rc = hprof_sink_finish(sink);
    hprof_writer_free(w);
    hprof_sink_free(sink);
    return s->rc;
}

int main(int argc, char **argv)
{
    struct options o = { .android = 1, .scale = 1, .big_bitmap = 2621440, .dumps = 1 };
    if (cli_init(argv[0]) != 0)
        return EXIT_USAGE;
    argv[0] = (char *)cli_progname; /* getopt's messages name the tool as ours do */
    int code = parse(argc, argv, &o);
    if (code >= 0)
        return code;
    struct secrets secrets = { .rng = 0x5EC12E75EC12E7ull };
    if (o.secrets && (secrets.manifest = fopen(o.secrets, "w")) == NULL) {
        cli_error("%s: cannot create", o.secrets);
        return EXIT_IO;
    }
    cli_install_signal_handlers();
    struct cli_output out;
    if ((code = cli_output_open(&out, o.out, o.force, NULL)) != 0)
        return code;
    struct hprof_error err = { 0 };
    struct synth s = {
        .android = o.android, .ids = o.android ? 4 : 8,
        .next_object = o.android ? 0x12c00000 : 0x7f0000000ull,
        .next_string = o.android ? 0x1000 : 0x7f00000000ull, .rng = 0x2545F4914F6CDD1Dull,
        .seg_limit = o.android ? 128 : 100000, .seg_heap = ~0u,
        .seg_byte_limit = o.android ? 4096 : UINT64_MAX,
        .seg_tag = o.whole_dumps ? HPROF_TAG_HEAP_DUMP : HPROF_TAG_HEAP_DUMP_SEGMENT,
        .system_links = o.system_links,
        .secrets = o.secrets ? &secrets : NULL,
    };
    if (o.whole_dumps) { /* one record holds the whole dump */
        s.seg_limit = ~0u;
        s.seg_byte_limit = UINT64_MAX;
    }
    write_dump(&s, &o, &out, &err);
    if (secrets.manifest != NULL && fclose(secrets.manifest) != 0 && s.rc >= 0) {
        cli_error("%s: cannot write", o.secrets);
        s.rc = HPROF_ERR_IO;
    }
    if (s.rc < 0) {
        cli_error("%s: %s", o.out, err.message[0] ? err.message : "generation failed");
        cli_output_abort(&out);
        return cli_exit_code(s.rc);
    }
    if ((code = cli_output_commit(&out)) != 0)
        return code;
    return o.manifest ? write_manifest(&s, o.manifest, o.force) : EXIT_OK;
}
