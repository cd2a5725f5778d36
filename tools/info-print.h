/*
 * info-print.h - hprof-info's outputs: the report and the JSON object.
 */
#ifndef HPROF_INFO_PRINT_H
#define HPROF_INFO_PRINT_H

#include <stdio.h>

#include "hprof.h"

struct cli_salvage;

struct info_options {
    int json, estimate;
    size_t top;
    const struct cli_salvage *salvage; /* --salvage: what was lost, or NULL */
    unsigned dump, dumps;       /* the report's heap dump, of several; 0 for a file of one */
};

/* What hprof-shrink would write, from its passes over a null sink. */
struct info_estimate {
    uint64_t bytes[3];          /* by enum hprof_arrays_mode */
    uint64_t gzip[2];           /* --gzip (level 6) output of empty and zero */
    struct hprof_shrink_stats stats;    /* of the default mode */
};

/* The report for people, on `f`; `e` only with o->estimate. */
void info_print_report(FILE *f, const char *path, const struct hprof_info *info,
                       const struct info_options *o, const struct info_estimate *e);

/* One JSON object on one line (keys in hprof-info(1)); always valid JSON
 * and UTF-8, whatever the dump's names hold. */
void info_print_json(FILE *f, const char *path, const struct hprof_info *info,
                     const struct info_options *o, const struct info_estimate *e);

#endif
