/*
 * fuzz_shrink - the whole shrink of an in-memory input to an in-memory
 * output, in the mode the first byte chooses (--arrays, --jvm, --keep-names,
 * --redact).  Asserts: no crash
 * or sanitizer report; an error always carries a message; whenever the
 * shrink succeeds its output verifies (one idea of valid: the shrink
 * refuses what hprof-verify would, and never writes what it would reject),
 * and so does the input; and shrinking is deterministic: one thread and
 * three write the same bytes.  The one-pass shrink of the same input: no
 * crash, a message with every error, and, where both succeed, an output
 * that verifies.
 */
#include <stdlib.h>
#include <string.h>

#include "hprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* As hprof-verify checks: a file of several heap dumps (which the shrink
 * shrinks each on its own) one dump at a time. */
static int verifies(const uint8_t *data, size_t size)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct hprof_verify_report rep;
    int rc = hprof_reader_open_memory(&r, data, size, &err);
    if (rc == HPROF_OK)
        rc = hprof_verify(r, &rep, &err);
    unsigned dumps = r != NULL ? hprof_reader_dumps(r) : 0;
    if (rc != HPROF_OK && dumps > 1 && dumps <= HPROF_MAX_DUMPS) {
        rc = HPROF_OK;
        for (unsigned n = 1; rc == HPROF_OK && n <= dumps; n++) {
            memset(&err, 0, sizeof err);
            hprof_reader_set_dump(r, n);
            rc = hprof_verify(r, &rep, &err);
        }
    }
    hprof_reader_free(r);
    return rc == HPROF_OK;
}

static int shrink(const uint8_t *data, size_t size, int mode, unsigned threads,
                  struct hprof_sink **out, int one_pass)
{
    struct hprof_error err = { 0 };
    struct hprof_reader *r = NULL;
    struct hprof_shrink_options o = { .arrays = mode & 3, .keep_system_heaps = (mode & 3) == 3,
                                      .segment_limit = 256, .threads = threads,
                                      .jvm = mode >> 2 & 1, .keep_names = mode >> 3 & 1,
                                      .redact = mode >> 4 & 1 ? HPROF_REDACT_ALL : HPROF_REDACT_NONE };
    if (o.arrays > HPROF_ARRAYS_REMOVE)
        o.arrays = HPROF_ARRAYS_EMPTY;
    *out = hprof_sink_new_memory(&err);
    int rc = hprof_reader_open_memory(&r, data, size, &err);
    if (rc == HPROF_OK)
        rc = one_pass ? hprof_shrink_one_pass(r, *out, &o, NULL, &err)
                      : hprof_shrink(r, *out, &o, NULL, &err);
    if (rc != HPROF_OK && err.message[0] == '\0')
        abort();
    hprof_reader_free(r);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0]; /* bits: arrays (0-1), --jvm, --keep-names, --redact */
    struct hprof_sink *a, *b;
    int rc = shrink(data + 1, size - 1, mode, 1, &a, 0);
    if (rc == HPROF_OK) {
        size_t alen, blen;
        const uint8_t *out = hprof_sink_memory_data(a, &alen);
        if (!verifies(out, alen) || !verifies(data + 1, size - 1))
            abort();
        /* again, with the write pass on three threads: the same bytes */
        if (shrink(data + 1, size - 1, mode, 3, &b, 0) != HPROF_OK)
            abort();
        const uint8_t *again = hprof_sink_memory_data(b, &blen);
        if (alen != blen || memcmp(out, again, alen) != 0)
            abort();
        hprof_sink_free(b);
    }
    /* the one pass, where the passes succeed, writes a dump that verifies
     * (where they fail, it may not see why: an id dumped twice) */
    struct hprof_sink *c;
    int one = shrink(data + 1, size - 1, mode, 1, &c, 1);
    if (rc == HPROF_OK && one == HPROF_OK) {
        size_t clen;
        const uint8_t *out = hprof_sink_memory_data(c, &clen);
        if (!verifies(out, clen))
            abort();
    }
    hprof_sink_free(c);
    hprof_sink_free(a);
    return 0;
}
