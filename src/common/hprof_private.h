/*
 * hprof_private.h - the headers of common's internals, for the files that
 * want most of them: bytes.h (byte order, field sizes, growing arrays),
 * idset.h (id sets), classes.h (class layouts), digest.h (MD5 of array
 * contents), tags.h (record tags, the clock) and visitor_private.h
 * (visitor slots that skip).  The core's internals are declared next to
 * their owners in src/core: reader_internal.h (the passes' readers),
 * segment_job.h and writer_private.h (segments written on workers).
 */
#ifndef HPROF_PRIVATE_H
#define HPROF_PRIVATE_H

#include "bytes.h"
#include "classes.h"
#include "digest.h"
#include "idset.h"
#include "tags.h"

#endif /* HPROF_PRIVATE_H */
