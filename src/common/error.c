/*
 * error.c - the error slot every libhprof object reports into, and the names
 * of tags and types used in messages.  The first error recorded wins: the
 * cause of a failure is more useful than its consequences.
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "hprof_private.h"

unsigned hprof_version_number(void)
{
    return HPROF_VERSION_NUMBER;
}

int hprof_error_set(struct hprof_error *err, int code, const char *fmt, ...)
{
    if (err == NULL || err->code != HPROF_OK)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return code;
}

const char *hprof_tag_name(uint8_t tag)
{
#define HPROF_TAG_NAME(tag, name) case tag: return name;
    switch (tag) {
    HPROF_TAGS(HPROF_TAG_NAME)
    default: return "unknown";
    }
#undef HPROF_TAG_NAME
}

const char *hprof_subtag_name(uint8_t subtag)
{
    switch (subtag) {
    case HPROF_ROOT_UNKNOWN: return "ROOT_UNKNOWN";
    case HPROF_ROOT_JNI_GLOBAL: return "ROOT_JNI_GLOBAL";
    case HPROF_ROOT_JNI_LOCAL: return "ROOT_JNI_LOCAL";
    case HPROF_ROOT_JAVA_FRAME: return "ROOT_JAVA_FRAME";
    case HPROF_ROOT_NATIVE_STACK: return "ROOT_NATIVE_STACK";
    case HPROF_ROOT_STICKY_CLASS: return "ROOT_STICKY_CLASS";
    case HPROF_ROOT_THREAD_BLOCK: return "ROOT_THREAD_BLOCK";
    case HPROF_ROOT_MONITOR_USED: return "ROOT_MONITOR_USED";
    case HPROF_ROOT_THREAD_OBJECT: return "ROOT_THREAD_OBJECT";
    case HPROF_CLASS_DUMP: return "CLASS_DUMP";
    case HPROF_INSTANCE_DUMP: return "INSTANCE_DUMP";
    case HPROF_OBJECT_ARRAY_DUMP: return "OBJECT_ARRAY_DUMP";
    case HPROF_PRIMITIVE_ARRAY_DUMP: return "PRIMITIVE_ARRAY_DUMP";
    case HPROF_HEAP_DUMP_INFO: return "HEAP_DUMP_INFO";
    case HPROF_ROOT_INTERNED_STRING: return "ROOT_INTERNED_STRING";
    case HPROF_ROOT_FINALIZING: return "ROOT_FINALIZING";
    case HPROF_ROOT_DEBUGGER: return "ROOT_DEBUGGER";
    case HPROF_ROOT_REFERENCE_CLEANUP: return "ROOT_REFERENCE_CLEANUP";
    case HPROF_ROOT_VM_INTERNAL: return "ROOT_VM_INTERNAL";
    case HPROF_ROOT_JNI_MONITOR: return "ROOT_JNI_MONITOR";
    case HPROF_UNREACHABLE: return "UNREACHABLE";
    case HPROF_PRIMITIVE_ARRAY_NODATA: return "PRIMITIVE_ARRAY_NODATA";
    default: return "unknown";
    }
}

const char *hprof_type_name(uint8_t type)
{
    switch (type) {
    case HPROF_TYPE_OBJECT: return "object";
    case HPROF_TYPE_BOOLEAN: return "boolean";
    case HPROF_TYPE_CHAR: return "char";
    case HPROF_TYPE_FLOAT: return "float";
    case HPROF_TYPE_DOUBLE: return "double";
    case HPROF_TYPE_BYTE: return "byte";
    case HPROF_TYPE_SHORT: return "short";
    case HPROF_TYPE_INT: return "int";
    case HPROF_TYPE_LONG: return "long";
    default: return "unknown";
    }
}

unsigned hprof_type_size(uint8_t type, unsigned id_size)
{
    return type_size(type, id_size);
}

const char *hprof_ref_kind_name(enum hprof_ref_kind kind)
{
    static const char *const names[HPROF_REF_KINDS] = {
        "root", "static field", "instance field", "array element", "class"
    };
    return (unsigned)kind < HPROF_REF_KINDS ? names[kind] : "unknown";
}

double hprof_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
