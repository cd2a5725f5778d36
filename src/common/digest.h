/*
 * digest.h - MD5 of array contents, and SHA-256 (digest.c, over OpenSSL's
 * EVP).
 */
#ifndef HPROF_DIGEST_H
#define HPROF_DIGEST_H

#include <stdint.h>
#include <stddef.h>

#include "hprof.h"

struct digest;
struct digest *digest_new(struct hprof_error *err);
int digest_begin(struct digest *d);
int digest_update(struct digest *d, const void *data, size_t len);
int digest_final(struct digest *d, uint8_t out[16]);
void digest_free(struct digest *d);

/* A key for contents of `bytes` bytes: their MD5 up to DIGEST_PIECE bytes,
 * beyond that the MD5 of the MD5s of each DIGEST_PIECE bytes in order (the
 * last piece shorter), so that the pieces of one buffer can be hashed at
 * once.  Contents come by digest_pieces_update(), or a piece at a time as
 * its MD5 by digest_pieces_add(), hashed elsewhere; not both in one key. */
#define DIGEST_PIECE ((uint64_t)1 << 20)
int digest_pieces_begin(struct digest *d, uint64_t bytes);
int digest_pieces_update(struct digest *d, const void *data, size_t len);
int digest_pieces_add(struct digest *d, const uint8_t md5[16]);
int digest_pieces_final(struct digest *d, uint8_t out[16]);

/* SHA-256, collision-resistant where MD5 is not: the one-pass shrink
 * merges two buffers on it, since it cannot read the first one again. */
struct sha256;
struct sha256 *sha256_new(void);
/* @return HPROF_OK, or HPROF_ERR_NOMEM. */
int sha256_of(struct sha256 *s, const void *data, size_t len, uint8_t out[32]);
void sha256_free(struct sha256 *s);

/* 64 bits of `len` bytes at memory speed, for telling buffers apart:
 * anyone can make two buffers share it, so equal ones are then compared
 * byte for byte. */
uint64_t fingerprint64(const void *data, size_t len);

#endif
