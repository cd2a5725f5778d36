/*
 * json_check.h - is this exactly one strict JSON value?  See json_check.c.
 */
#ifndef HPROF_JSON_CHECK_H
#define HPROF_JSON_CHECK_H

#include <stddef.h>

/* @return -1 when `len` bytes at `text` are one valid JSON value (with
 * whitespace around it), else the offset at which it stops being one. */
long json_check(const void *text, size_t len);

#endif
