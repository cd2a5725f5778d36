/*
 * bytes.h - big-endian reads and writes of the format's fields, the size
 * of a field type, and arrays grown by doubling.
 */
#ifndef HPROF_BYTES_H
#define HPROF_BYTES_H

#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

#include "hprof.h"

static inline uint16_t get_u2(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

static inline uint32_t get_u4(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t get_u8(const uint8_t *p)
{
    return ((uint64_t)get_u4(p) << 32) | get_u4(p + 4);
}

/* An identifier of 4 or 8 bytes. */
static inline uint64_t get_id(const uint8_t *p, unsigned id_size)
{
    return id_size == 4 ? get_u4(p) : get_u8(p);
}

/* A value of `size` bytes (1, 2, 4 or 8), right-aligned. */
static inline uint64_t get_value(const uint8_t *p, unsigned size)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < size; i++)
        v = (v << 8) | p[i];
    return v;
}

static inline uint8_t *put_u1(uint8_t *p, uint8_t v)
{
    *p = v;
    return p + 1;
}

static inline uint8_t *put_u2(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
    return p + 2;
}

/* put_u4() and put_u8() store the value once, byte-swapped, rather than
 * byte by byte: GCC did not merge the byte stores in the writer's headers
 * (a uint8_t store may alias the record being written, so each field was
 * read and shifted apart), and headers are written for every instance. */
static inline uint8_t *put_u4(uint8_t *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    __builtin_memcpy(p, &v, 4);
    return p + 4;
}

static inline uint8_t *put_u8(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    __builtin_memcpy(p, &v, 8);
    return p + 8;
}

static inline uint8_t *put_value(uint8_t *p, uint64_t v, unsigned size)
{
    for (unsigned i = size; i > 0; i--) {
        p[i - 1] = (uint8_t)v;
        v >>= 8;
    }
    return p + size;
}

/* An identifier of 4 or 8 bytes (what readers and writers accept), as
 * get_id() reads it, without put_value()'s loop over an unknown size:
 * ids are in every record. */
static inline uint8_t *put_id(uint8_t *p, uint64_t id, unsigned id_size)
{
    return id_size == 4 ? put_u4(p, (uint32_t)id) : put_u8(p, id);
}

/* hprof_type_size(), inline for the per-field and per-array paths. */
static inline unsigned type_size(uint8_t type, unsigned id_size)
{
    switch (type) {
    case HPROF_TYPE_OBJECT: return id_size;
    case HPROF_TYPE_BOOLEAN: case HPROF_TYPE_BYTE: return 1;
    case HPROF_TYPE_CHAR: case HPROF_TYPE_SHORT: return 2;
    case HPROF_TYPE_FLOAT: case HPROF_TYPE_INT: return 4;
    case HPROF_TYPE_DOUBLE: case HPROF_TYPE_LONG: return 8;
    default: return 0;
    }
}

/* `array` (of *cap elements of `size` bytes) grown by doubling, from 64, to
 * hold at least `need`.  @return it (perhaps moved), or NULL when out of
 * memory (`array` is then unchanged). */
static inline void *grow_array(void *array, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return array;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *grown = realloc(array, n * size);
    if (grown != NULL)
        *cap = n;
    return grown;
}

#endif
