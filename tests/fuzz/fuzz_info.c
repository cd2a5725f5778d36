/*
 * fuzz_info - hprof_info_analyze(), the analysis behind hprof-info, over
 * arbitrary bytes.  Asserts: no crash or sanitizer report; on success the
 * report fits the input (objects per heap sum to the sub-records counted,
 * every bitmap's buffer fits the file) and is freed cleanly; on failure the
 * message names an offset.  hprof-info's JSON of the report (the code the
 * tool runs, tools/info-print.c) is one strict JSON value, valid UTF-8,
 * without a key twice (json_check.c), whatever bytes the dump's names hold;
 * the text report prints too.
 */
#define _GNU_SOURCE /* open_memstream() */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hprof.h"
#include "info-print.h"
#include "json_check.h"

/* The JSON of `info` parses, or abort(). */
static void check_json(const struct hprof_info *info)
{
    struct info_options o = { .json = 1, .top = 1000 };
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return;
    info_print_json(f, "fuzz \xc0\x80.hprof", info, &o, NULL);
    info_print_report(f, "fuzz", info, &o, NULL);
    fclose(f);
    /* the report follows the one JSON line */
    char *nl = memchr(text, '\n', len);
    if (nl == NULL || json_check(text, (size_t)(nl - text)) != -1) {
        fprintf(stderr, "invalid JSON: %.*s\n", nl ? (int)(nl - text) : (int)len, text);
        abort();
    }
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct hprof_info info;
    int rc = hprof_reader_open_memory(&r, data, size, &err);
    if (rc == HPROF_OK)
        rc = hprof_info_analyze(r, &info, &err);
    if (rc == HPROF_OK) {
        uint64_t objects = 0, subs = info.sub_records[HPROF_INSTANCE_DUMP].count +
                                     info.sub_records[HPROF_OBJECT_ARRAY_DUMP].count +
                                     info.sub_records[HPROF_PRIMITIVE_ARRAY_DUMP].count +
                                     info.sub_records[HPROF_PRIMITIVE_ARRAY_NODATA].count;
        for (int h = 0; h < HPROF_INFO_HEAPS; h++)
            objects += info.heaps[h].count;
        if (objects != subs)
            abort();
        for (size_t i = 0; i < info.n_bitmaps; i++)
            if (info.bitmaps[i].buffer_bytes > size)
                abort();
        check_json(&info);
        hprof_info_free(&info);
    } else if (strncmp(err.message, "offset 0x", 9) != 0 && rc != HPROF_ERR_NOMEM) {
        abort();
    }
    hprof_reader_free(r);
    return 0;
}
