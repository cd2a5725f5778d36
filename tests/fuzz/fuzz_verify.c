/*
 * fuzz_verify - hprof_verify() over arbitrary bytes (the analysis pass that
 * hprof-info will share).  Asserts: no crash or sanitizer report; a valid
 * verdict comes with counts that fit the input (every counted sub-record
 * takes at least 5 bytes), an invalid one with an offset; and one idea of
 * valid (validate.h): hprof_info_analyze() accepts exactly what verify
 * accepts, and rejects the rest as invalid too.
 */
#include <stdlib.h>
#include <string.h>

#include "hprof.h"

/* Invalid input, whatever the problem found first. */
static int verdict(int rc)
{
    return rc == HPROF_ERR_TRUNCATED ? HPROF_ERR_FORMAT : rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct hprof_verify_report rep;
    int rc = hprof_reader_open_memory(&r, data, size, &err);
    if (rc == HPROF_OK)
        rc = hprof_verify(r, &rep, &err);
    if (r != NULL) {
        struct hprof_error ierr = { 0 };
        struct hprof_reader *ir = NULL;
        struct hprof_info info;
        int irc = hprof_reader_open_memory(&ir, data, size, &ierr);
        if (irc == HPROF_OK)
            irc = hprof_info_analyze(ir, &info, &ierr);
        if (irc == HPROF_OK)
            hprof_info_free(&info);
        hprof_reader_free(ir);
        /* The same verdict; the first problem each finds may differ, as
         * their passes look at different things first (a duplicate id that
         * verify sees in its first pass, info confirms in its second), and
         * so may its code among those of invalid input (a cut, found first
         * by one, is HPROF_ERR_TRUNCATED). */
        if (rc != HPROF_ERR_NOMEM && irc != HPROF_ERR_NOMEM && verdict(irc) != verdict(rc))
            abort(); /* verify and info disagree on what is valid */
    }
    if (rc == HPROF_OK) {
        uint64_t subs = rep.roots + rep.heap_infos + rep.class_dumps + rep.instances +
                        rep.object_arrays + rep.primitive_arrays;
        if (subs * 5 > size || rep.records * 9 > size || rep.primitive_bytes > size)
            abort();
    } else if (strncmp(err.message, "offset 0x", 9) != 0) {
        abort();
    }
    hprof_reader_free(r);
    return 0;
}
