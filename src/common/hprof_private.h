/*
 * hprof_private.h - every header of libhprof's internals, for the files
 * that want most of them.  Each part is declared next to its owner:
 * bytes.h (byte order, field sizes, growing arrays), idset.h (id sets),
 * classes.h (class layouts), digest.h (MD5 of array contents), tags.h
 * (record tags, the clock), visitor_private.h (visitor slots that skip),
 * reader_internal.h (the passes' readers) and segment_job.h (segments
 * written on workers).
 */
#ifndef HPROF_PRIVATE_H
#define HPROF_PRIVATE_H

#include "bytes.h"
#include "classes.h"
#include "digest.h"
#include "idset.h"
#include "reader_internal.h"
#include "segment_job.h"
#include "tags.h"
#include "visitor_private.h"

#endif /* HPROF_PRIVATE_H */
