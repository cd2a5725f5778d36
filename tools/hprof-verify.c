/*
 * hprof-verify - check heap dumps strictly and report what they hold.
 * One line per file: "FILE: OK ..." with counts, or "FILE: <problem>" with
 * its byte offset and record kind.  The exit code is the worst seen.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Check heap dumps (.hprof) strictly and count what they hold.\n"
            "\n"
            "Usage: %s [options] FILE...\n"
            "\n"
            "Options:\n"
            "  -q, --quiet     print only problems\n"
            "  --salvage       a dump cut short: check what is complete, and say\n"
            "                  where the input stops and what was lost\n"
            "  -h, --help      show this help and exit\n"
            "  -V, --version   show the version and exit\n"
            "\n"
            "FILE may be - for standard input, and may be gzip- or zstd-compressed.\n"
            "Exit status: 0 all valid, 1 invalid input, 2 usage, 3 I/O error.\n",
            cli_progname);
}

/* `dump` is "" for a file of one heap dump, else "dump N of M: ". */
static void print_report(const char *path, const char *dump, const struct hprof_header *h,
                         const struct hprof_verify_report *r)
{
    printf("%s: %sOK: %s, %" PRIu32 "-byte ids, %" PRIu64 " record%s (%" PRIu64
           " heap segment%s, %" PRIu64 " unknown), %" PRIu64 " string%s, %" PRIu64
           " %s loaded, %" PRIu64 " class dump%s, %" PRIu64 " instance%s, %" PRIu64
           " object array%s, %" PRIu64 " primitive array%s (%" PRIu64 " byte%s), %" PRIu64
           " root%s, %" PRIu64 " heap info%s; %" PRIu64 " dangling reference%s",
           cli_input_name(path), dump, h->version, h->id_size, r->records, cli_s(r->records), r->segments,
           cli_s(r->segments), r->unknown_records, r->strings, cli_s(r->strings),
           r->load_classes, r->load_classes == 1 ? "class" : "classes", r->class_dumps,
           cli_s(r->class_dumps), r->instances, cli_s(r->instances), r->object_arrays,
           cli_s(r->object_arrays), r->primitive_arrays, cli_s(r->primitive_arrays),
           r->primitive_bytes, cli_s(r->primitive_bytes), r->roots, cli_s(r->roots),
           r->heap_infos, cli_s(r->heap_infos), r->dangling, cli_s(r->dangling));
    const char *sep = " (";
    for (int k = 0; k < HPROF_REF_KINDS; k++) {
        if (r->dangling_by_kind[k] == 0)
            continue;
        printf("%s%s %" PRIu64, sep, hprof_ref_kind_name(k), r->dangling_by_kind[k]);
        sep = ", ";
    }
    printf("%s\n", r->dangling ? ")" : "");
}

static int salvage;    /* --salvage */

/* A file of several heap dumps (the hprof agent's): each dump is its own
 * space of object ids, checked and reported on its own. */
static int verify_each_dump(const char *path, struct hprof_reader *r, int quiet,
                            struct hprof_verify_report *report, struct hprof_error *err)
{
    int rc = HPROF_OK;
    for (unsigned n = 1; rc == HPROF_OK && n <= hprof_reader_dumps(r); n++) {
        char dump[64];
        memset(err, 0, sizeof *err);
        hprof_reader_set_dump(r, n);
        rc = hprof_verify(r, report, err);
        snprintf(dump, sizeof dump, "dump %u of %u: ", n, hprof_reader_dumps(r));
        if (rc == HPROF_OK && hprof_reader_dumps(r) > HPROF_MAX_DUMPS)
            rc = hprof_error_set(err, HPROF_ERR_FORMAT, "%u heap dumps: at most %u are checked",
                                 hprof_reader_dumps(r), HPROF_MAX_DUMPS);
        if (rc != HPROF_OK) {
            char message[sizeof dump + sizeof err->message];
            snprintf(message, sizeof message, "%s%s", dump, err->message);
            memcpy(err->message, message, sizeof err->message - 1);
            err->message[sizeof err->message - 1] = '\0';
        } else if (!quiet) {
            print_report(path, dump, hprof_reader_header(r), report);
        }
    }
    hprof_reader_set_dump(r, 0);
    return rc;
}

static int verify_file(const char *path, int quiet)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct hprof_verify_report report;
    struct cli_progress progress;
    int fd = -1;
    cli_progress_init(&progress, path, quiet);
    cli_progress_note(&progress, "reading the input");
    cli_set_salvage(salvage);
    int rc = cli_open_reader(path, &fd, &r, &err);
    if (rc == HPROF_OK) {
        hprof_reader_set_progress(r, cli_progress_bytes, &progress);
        rc = hprof_verify(r, &report, &err);
    }
    int several = rc != HPROF_OK && r != NULL && hprof_reader_dumps(r) > 1;
    if (several)
        rc = verify_each_dump(path, r, quiet, &report, &err);
    cli_progress_done(&progress);
    if (rc == HPROF_OK) {
        if (!quiet && !several)
            print_report(path, "", hprof_reader_header(r), &report);
        if (!quiet && !salvage && hprof_reader_ends_before_heap(r))
            cli_warn_cut_before_heap(path);
        if (salvage) {
            struct cli_salvage s;
            cli_salvage_collect(&s, r, 0);
            s.counted = 1;
            s.dangling = report.dangling;
            cli_salvage_print(path, &s);
        }
    } else {
        fflush(stdout);
        int shrank = cli_input_shrank(path, fd, r);
        if (shrank) {
            cli_close_reader(fd, r);
            return shrank;
        }
        cli_input_error(path, &err, !salvage);
    }
    cli_close_reader(fd, r);
    return cli_exit_code(rc);
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { "salvage", no_argument, &salvage, 1 },
        { NULL, 0, NULL, 0 },
    };
    int quiet = 0, c, worst = EXIT_OK;
    if (cli_init(argv[0]) != 0)
        return EXIT_USAGE;
    argv[0] = (char *)cli_progname; /* getopt's messages name the tool as ours do */
    while ((c = getopt_long(argc, argv, "qhV", options, NULL)) != -1) {
        switch (c) {
        case 'q': quiet = 1; break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': cli_version(); return EXIT_OK;
        case 0: break; /* a flag */
        default: return cli_usage_error(NULL);
        }
    }
    if (optind == argc) {
        return cli_usage_error("no input file");
    }
    if (cli_refuse_messages_into_inputs(argv + optind, argc - optind) != 0)
        return EXIT_USAGE;
    for (int i = optind; i < argc; i++) {
        int code = verify_file(argv[i], quiet);
        /* The worst outcome decides; I/O trouble outranks invalid input. */
        if (code > worst)
            worst = code;
    }
    return worst;
}
