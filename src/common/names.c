/*
 * names.c - the table behind known_name().
 */
#include <string.h>

#include "names.h"

/* One list, two tables (X-macro). */
#define KNOWN_NAMES(X)                                           \
    X("java.lang.String", NAME_CLASS_STRING)                     \
    X("java/lang/String", NAME_CLASS_STRING)                     \
    X("android.graphics.Bitmap", NAME_CLASS_BITMAP)              \
    X("android/graphics/Bitmap", NAME_CLASS_BITMAP)              \
    X("android.graphics.Bitmap$DumpData", NAME_CLASS_DUMP_DATA)  \
    X("android/graphics/Bitmap$DumpData", NAME_CLASS_DUMP_DATA)  \
    X("byte[][]", NAME_CLASS_BYTE_ARRAYS)                        \
    X("[[B", NAME_CLASS_BYTE_ARRAYS)                             \
    X("value", NAME_FIELD_VALUE)                                 \
    X("mBuffer", NAME_FIELD_BUFFER)                              \
    X("buffers", NAME_FIELD_BUFFERS)                             \
    X("natives", NAME_FIELD_NATIVES)                             \
    X("coder", NAME_FIELD_CODER)                                 \
    X("offset", NAME_FIELD_OFFSET)                               \
    X("count", NAME_FIELD_COUNT)                                 \
    X("MANUFACTURER", NAME_FIELD_DEVICE_TEXT)                    \
    X("BRAND", NAME_FIELD_DEVICE_TEXT)                           \
    X("MODEL", NAME_FIELD_DEVICE_TEXT)                           \
    X("PRODUCT", NAME_FIELD_DEVICE_TEXT)                         \
    X("DEVICE", NAME_FIELD_DEVICE_TEXT)                          \
    X("BOARD", NAME_FIELD_DEVICE_TEXT)                           \
    X("HARDWARE", NAME_FIELD_DEVICE_TEXT)                        \
    X("FINGERPRINT", NAME_FIELD_DEVICE_TEXT)                     \
    X("ID", NAME_FIELD_DEVICE_TEXT)                              \
    X("DISPLAY", NAME_FIELD_DEVICE_TEXT)                         \
    X("TYPE", NAME_FIELD_DEVICE_TEXT)                            \
    X("TAGS", NAME_FIELD_DEVICE_TEXT)                            \
    X("RELEASE", NAME_FIELD_DEVICE_TEXT)                         \
    X("INCREMENTAL", NAME_FIELD_DEVICE_TEXT)                     \
    X("CODENAME", NAME_FIELD_DEVICE_TEXT)                        \
    X("SDK", NAME_FIELD_DEVICE_TEXT)                             \
    X("SECURITY_PATCH", NAME_FIELD_DEVICE_TEXT)                  \
    X("android.os.Build", NAME_CLASS_DEVICE)                     \
    X("android/os/Build", NAME_CLASS_DEVICE)                     \
    X("android.os.Build$VERSION", NAME_CLASS_DEVICE)             \
    X("android/os/Build$VERSION", NAME_CLASS_DEVICE)             \
    X("mWidth", NAME_FIELD_WIDTH)                                \
    X("mHeight", NAME_FIELD_HEIGHT)                              \
    X("mRecycled", NAME_FIELD_RECYCLED)
#define NAME_ENTRY(text, code) { text, sizeof text - 1, code },
#define NAME_LENGTH_BIT(text, code) 1ull << (sizeof text - 1) |
#define NAME_FIRST_BIT(text, code) 1ull << (text[0] & 63) |

const uint64_t known_name_lengths = KNOWN_NAMES(NAME_LENGTH_BIT) 0;
const uint64_t known_name_firsts = KNOWN_NAMES(NAME_FIRST_BIT) 0;

enum known_name known_name_lookup(const uint8_t *text, size_t length)
{
    static const struct {
        const char *text;
        size_t length;
        enum known_name code;
    } names[] = { KNOWN_NAMES(NAME_ENTRY) };
    /* the first byte before a call to memcmp() */
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].length == length && names[i].text[0] == text[0] &&
            memcmp(names[i].text, text, length) == 0)
            return names[i].code;
    return NAME_NONE;
}
