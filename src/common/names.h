/*
 * names.h - the class and field names the shrink and hprof-info look for,
 * in one table.  A dump spells class names the Java way (ART:
 * java.lang.String, byte[][]) or the JVM's (HotSpot: java/lang/String,
 * [[B); both spellings map to one code.
 */
#ifndef HPROF_NAMES_H
#define HPROF_NAMES_H

#include <stddef.h>
#include <stdint.h>

enum known_name {
    NAME_NONE,
    NAME_CLASS_STRING,      /* java.lang.String */
    NAME_CLASS_BITMAP,      /* android.graphics.Bitmap */
    NAME_CLASS_DUMP_DATA,   /* android.graphics.Bitmap$DumpData */
    NAME_CLASS_BYTE_ARRAYS, /* byte[][], the class of DumpData.buffers */
    NAME_FIELD_VALUE,       /* String.value */
    NAME_FIELD_BUFFER,      /* Bitmap.mBuffer */
    NAME_FIELD_BUFFERS,     /* DumpData.buffers */
    NAME_FIELD_NATIVES,     /* DumpData.natives */
    NAME_FIELD_CODER,       /* String.coder (HotSpot: 1 = UTF-16) */
    NAME_FIELD_OFFSET,      /* String.offset (Java 6, Dalvik: a substring shares its value) */
    NAME_FIELD_COUNT,       /* String.count (the same) */
    /* android.os.Build's and Build$VERSION's statics that say what the
     * device is (make, model, build, release): their Strings stay whole.
     * Not SERIAL, HOST or USER: an identifier and the builder's names. */
    NAME_FIELD_DEVICE_TEXT,
    NAME_CLASS_DEVICE,      /* android.os.Build, Build$VERSION: what the device is */
    NAME_FIELD_WIDTH,       /* Bitmap.mWidth */
    NAME_FIELD_HEIGHT,      /* Bitmap.mHeight */
    NAME_FIELD_RECYCLED,    /* Bitmap.mRecycled */
    NAME_COUNT
};

/* Bit n set: some known name is n bytes long (all are under 64); in the
 * other, some known name's first byte is n modulo 64. */
extern const uint64_t known_name_lengths;
extern const uint64_t known_name_firsts;
enum known_name known_name_lookup(const uint8_t *text, size_t length);

/* The code of the name `text` (`length` bytes, not NUL-terminated), or
 * NAME_NONE.  Cheap for the names it does not know: every STRING record of
 * a dump comes here, and most are ruled out inline by their length and
 * first byte (all but 6% of a HotSpot dump's symbols). */
static inline enum known_name known_name(const uint8_t *text, size_t length)
{
    if (length >= 64 || !(known_name_lengths >> length & 1) ||
        !(known_name_firsts >> (text[0] & 63) & 1))
        return NAME_NONE;
    return known_name_lookup(text, length);
}

#endif
