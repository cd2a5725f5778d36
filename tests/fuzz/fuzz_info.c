/*
 * fuzz_info - hprof_info_analyze(), the analysis behind hprof-info, over
 * arbitrary bytes.  Asserts: no crash or sanitizer report; on success the
 * report fits the input (objects per heap sum to the sub-records counted,
 * every bitmap's buffer fits the file) and is freed cleanly; on failure the
 * message names an offset.
 */
#include <stdlib.h>
#include <string.h>

#include "hprof.h"

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
        hprof_info_free(&info);
    } else if (strncmp(err.message, "offset 0x", 9) != 0 && rc != HPROF_ERR_NOMEM) {
        abort();
    }
    hprof_reader_free(r);
    return 0;
}
