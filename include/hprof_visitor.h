/*
 * hprof_visitor.h - the records of a heap dump and the visitor chain that
 * carries them (part of libhprof; include <hprof.h>).
 *
 * The shape is ASM's ClassReader -> ClassVisitor -> ClassWriter:
 *
 *   reader --> visitor --> visitor --> ... --> writer
 *
 * The reader calls one callback per record on the first visitor.  Every
 * visitor either handles the callback or, when its slot in `ops` is NULL,
 * lets it fall through to `next`.  A visitor that handles a callback decides
 * what travels on: it calls hprof_visit_xxx(self->next, ...) with the record
 * as it came, with a modified copy, or not at all (the record is dropped).
 * The writer is simply the last visitor.
 *
 * Lifetime of what callbacks receive: every pointer inside a record struct
 * (names, field bytes, array elements, class-dump tables) points into the
 * reader's buffers and is valid only until the callback returns.  Copy what
 * you keep.  Multi-byte values inside `values`, `elements` and `data` are
 * big-endian exactly as in the file.
 *
 * Return values: HPROF_OK to go on; HPROF_SKIP (see each callback) to say
 * "I do not need the rest of this record"; a negative HPROF_ERR_* to stop the
 * run.  A visitor that fails should first record why with hprof_error_set()
 * on the error slot its constructor was given; the reader fills in a generic
 * message otherwise.
 */
#ifndef HPROF_VISITOR_H
#define HPROF_VISITOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the functions libhprof exports.  The library is built with every
 * other symbol hidden, so libhprof.so and libhprof.a define only hprof_
 * names; for a program this changes nothing. */
#ifndef HPROF_API
#if defined(__GNUC__) && __GNUC__ >= 4
#define HPROF_API __attribute__((visibility("default")))
#else
#define HPROF_API
#endif
#endif

/* Top-level record tags. */
enum hprof_tag {
    HPROF_TAG_STRING = 0x01,
    HPROF_TAG_LOAD_CLASS = 0x02,
    HPROF_TAG_UNLOAD_CLASS = 0x03,
    HPROF_TAG_STACK_FRAME = 0x04,
    HPROF_TAG_STACK_TRACE = 0x05,
    HPROF_TAG_ALLOC_SITES = 0x06,
    HPROF_TAG_HEAP_SUMMARY = 0x07,
    HPROF_TAG_START_THREAD = 0x0A,
    HPROF_TAG_END_THREAD = 0x0B,
    HPROF_TAG_HEAP_DUMP = 0x0C,
    HPROF_TAG_CPU_SAMPLES = 0x0D,
    HPROF_TAG_CONTROL_SETTINGS = 0x0E,
    HPROF_TAG_HEAP_DUMP_SEGMENT = 0x1C,
    HPROF_TAG_HEAP_DUMP_END = 0x2C
};

/* Heap sub-record tags (inside HEAP_DUMP and HEAP_DUMP_SEGMENT). */
enum hprof_subtag {
    HPROF_ROOT_UNKNOWN = 0xFF,
    HPROF_ROOT_JNI_GLOBAL = 0x01,
    HPROF_ROOT_JNI_LOCAL = 0x02,
    HPROF_ROOT_JAVA_FRAME = 0x03,
    HPROF_ROOT_NATIVE_STACK = 0x04,
    HPROF_ROOT_STICKY_CLASS = 0x05,
    HPROF_ROOT_THREAD_BLOCK = 0x06,
    HPROF_ROOT_MONITOR_USED = 0x07,
    HPROF_ROOT_THREAD_OBJECT = 0x08,
    HPROF_CLASS_DUMP = 0x20,
    HPROF_INSTANCE_DUMP = 0x21,
    HPROF_OBJECT_ARRAY_DUMP = 0x22,
    HPROF_PRIMITIVE_ARRAY_DUMP = 0x23,
    HPROF_HEAP_DUMP_INFO = 0xFE,           /* Android */
    HPROF_ROOT_INTERNED_STRING = 0x89,     /* Android */
    HPROF_ROOT_FINALIZING = 0x8A,          /* Android, obsolete */
    HPROF_ROOT_DEBUGGER = 0x8B,            /* Android */
    HPROF_ROOT_REFERENCE_CLEANUP = 0x8C,   /* Android, obsolete */
    HPROF_ROOT_VM_INTERNAL = 0x8D,         /* Android */
    HPROF_ROOT_JNI_MONITOR = 0x8E,         /* Android */
    HPROF_UNREACHABLE = 0x90,              /* Android, obsolete */
    HPROF_PRIMITIVE_ARRAY_NODATA = 0xC3    /* Android, obsolete */
};

/* Basic types of fields and array elements. */
enum hprof_type {
    HPROF_TYPE_OBJECT = 2,
    HPROF_TYPE_BOOLEAN = 4,
    HPROF_TYPE_CHAR = 5,
    HPROF_TYPE_FLOAT = 6,
    HPROF_TYPE_DOUBLE = 7,
    HPROF_TYPE_BYTE = 8,
    HPROF_TYPE_SHORT = 9,
    HPROF_TYPE_INT = 10,
    HPROF_TYPE_LONG = 11
};

/* Android heap ids carried by HEAP_DUMP_INFO. */
enum hprof_heap {
    HPROF_HEAP_DEFAULT = 0,
    HPROF_HEAP_APP = 'A',
    HPROF_HEAP_IMAGE = 'I',
    HPROF_HEAP_ZYGOTE = 'Z'
};

struct hprof_header {
    char version[32];       /* "JAVA PROFILE 1.0.2", NUL-terminated */
    uint32_t id_size;       /* 4 or 8 */
    uint64_t timestamp_ms;  /* milliseconds since the epoch */
    uint64_t length;        /* bytes the header takes in the file */
};

/* Any top-level record without a callback of its own, including unknown
 * tags (passed through: their length is known) and HEAP_DUMP_END. */
struct hprof_record {
    uint64_t offset;        /* of the tag byte in the input */
    uint8_t tag;
    uint32_t time;
    uint32_t length;
    const uint8_t *body;    /* `length` bytes */
};

struct hprof_string {
    uint64_t offset;
    uint32_t time;
    uint64_t id;
    uint32_t length;        /* bytes of text */
    const uint8_t *utf8;    /* modified UTF-8, not NUL-terminated */
};

struct hprof_load_class {
    uint64_t offset;
    uint32_t time;
    uint32_t class_serial;
    uint64_t class_id;
    uint32_t stack_serial;
    uint64_t name_id;       /* a STRING id */
};

/* A HEAP_DUMP (0x0C) or HEAP_DUMP_SEGMENT (0x1C) record, announced before
 * its sub-records and closed after them. */
struct hprof_segment {
    uint64_t offset;
    uint8_t tag;
    uint32_t time;
    uint32_t length;
};

/* Every ROOT_* sub-record.  Fields a kind does not have are zero. */
struct hprof_root {
    uint64_t offset;
    uint8_t tag;
    uint64_t id;
    uint64_t jni_ref;       /* ROOT_JNI_GLOBAL */
    uint32_t thread_serial; /* JNI_LOCAL, JAVA_FRAME, NATIVE_STACK, THREAD_BLOCK,
                               THREAD_OBJECT, JNI_MONITOR */
    uint32_t frame;         /* frame number (JNI_LOCAL, JAVA_FRAME, JNI_MONITOR)
                               or stack trace serial (THREAD_OBJECT) */
};

struct hprof_heap_info {
    uint64_t offset;
    uint32_t heap_id;       /* enum hprof_heap */
    uint64_t name_id;       /* a STRING id */
};

/* Values of any basic type travel as their raw bits, right-aligned in 64
 * bits (an ID of 4 bytes, a float's IEEE bits, a boolean's byte). */
struct hprof_constant {
    uint16_t index;
    uint8_t type;
    uint64_t value;
};

struct hprof_static_field {
    uint64_t name_id;
    uint8_t type;
    uint64_t value;
};

struct hprof_field {
    uint64_t name_id;
    uint8_t type;
};

struct hprof_class_dump {
    uint64_t offset;
    uint64_t id;
    uint32_t stack_serial;
    uint64_t super_id;
    uint64_t loader_id;
    uint64_t signers_id;
    uint64_t protection_domain_id;
    uint64_t reserved1;
    uint64_t reserved2;
    uint32_t instance_size;
    uint16_t n_constants;
    uint16_t n_statics;
    uint16_t n_fields;      /* the class's own instance fields only */
    const struct hprof_constant *constants;
    const struct hprof_static_field *statics;
    const struct hprof_field *fields;
};

struct hprof_instance {
    uint64_t offset;
    uint64_t id;
    uint32_t stack_serial;
    uint64_t class_id;
    uint32_t length;        /* bytes of field values */
    const uint8_t *values;  /* own fields first, then each superclass's */
};

/* Arrays arrive in one or more consecutive calls ("chunks") so that a
 * multi-GB array never needs a buffer of its size.  The first call has
 * first == 0; the chunks cover the array exactly, in order, each a whole
 * number of elements.  Returning HPROF_SKIP from any chunk suppresses the
 * rest of that array's chunks for this visitor chain. */
struct hprof_object_array {
    uint64_t offset;
    uint64_t id;
    uint32_t stack_serial;
    uint32_t count;         /* elements in the whole array */
    uint64_t class_id;
    uint32_t first;         /* index of the first element in this chunk */
    uint32_t n;             /* elements in this chunk */
    const uint8_t *elements;/* n IDs */
};

struct hprof_primitive_array {
    uint64_t offset;
    uint8_t tag;            /* PRIMITIVE_ARRAY_DUMP, or PRIMITIVE_ARRAY_NODATA
                               (which has count but no data: one call, length 0) */
    uint64_t id;
    uint32_t stack_serial;
    uint32_t count;         /* elements in the whole array */
    uint8_t type;           /* enum hprof_type, never OBJECT */
    uint64_t first;         /* byte offset of this chunk within the data */
    size_t length;          /* bytes in this chunk */
    const uint8_t *data;
    uint64_t data_offset;   /* input offset of the array's first data byte */
};

struct hprof_visitor;

/* One slot per record kind; a NULL slot forwards to `next`. */
struct hprof_visitor_ops {
    int (*header)(struct hprof_visitor *, const struct hprof_header *);
    int (*string)(struct hprof_visitor *, const struct hprof_string *);
    int (*load_class)(struct hprof_visitor *, const struct hprof_load_class *);
    int (*record)(struct hprof_visitor *, const struct hprof_record *);
    /* HPROF_SKIP from heap_begin skips the body; heap_end is then not called. */
    int (*heap_begin)(struct hprof_visitor *, const struct hprof_segment *);
    int (*root)(struct hprof_visitor *, const struct hprof_root *);
    int (*heap_info)(struct hprof_visitor *, const struct hprof_heap_info *);
    int (*class_dump)(struct hprof_visitor *, const struct hprof_class_dump *);
    int (*instance)(struct hprof_visitor *, const struct hprof_instance *);
    int (*object_array)(struct hprof_visitor *, const struct hprof_object_array *);
    int (*primitive_array)(struct hprof_visitor *, const struct hprof_primitive_array *);
    int (*heap_end)(struct hprof_visitor *, const struct hprof_segment *);
    /* The input ended; flush what you hold. */
    int (*end)(struct hprof_visitor *);
};

/* Embed this first in your own visitor struct and cast back in callbacks. */
struct hprof_visitor {
    const struct hprof_visitor_ops *ops;
    struct hprof_visitor *next;     /* NULL ends the chain */
};

/* hprof_visit_xxx() :
 * Deliver a record to the first visitor in the chain starting at `v` whose
 * slot is set.  A NULL `v`, or a chain with no such slot, accepts it.
 * @return what that callback returned, or HPROF_OK. */
HPROF_API int hprof_visit_header(struct hprof_visitor *v, const struct hprof_header *h);
HPROF_API int hprof_visit_string(struct hprof_visitor *v, const struct hprof_string *s);
HPROF_API int hprof_visit_load_class(struct hprof_visitor *v, const struct hprof_load_class *c);
HPROF_API int hprof_visit_record(struct hprof_visitor *v, const struct hprof_record *r);
HPROF_API int hprof_visit_heap_begin(struct hprof_visitor *v, const struct hprof_segment *s);
HPROF_API int hprof_visit_root(struct hprof_visitor *v, const struct hprof_root *r);
HPROF_API int hprof_visit_heap_info(struct hprof_visitor *v, const struct hprof_heap_info *i);
HPROF_API int hprof_visit_class_dump(struct hprof_visitor *v, const struct hprof_class_dump *c);
HPROF_API int hprof_visit_instance(struct hprof_visitor *v, const struct hprof_instance *o);
HPROF_API int hprof_visit_object_array(struct hprof_visitor *v, const struct hprof_object_array *a);
HPROF_API int hprof_visit_primitive_array(struct hprof_visitor *v, const struct hprof_primitive_array *a);
HPROF_API int hprof_visit_heap_end(struct hprof_visitor *v, const struct hprof_segment *s);
HPROF_API int hprof_visit_end(struct hprof_visitor *v);

#ifdef __cplusplus
}
#endif
#endif /* HPROF_VISITOR_H */
