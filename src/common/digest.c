/*
 * digest.c - MD5 of array contents through OpenSSL's EVP interface (the
 * MD5() one-shot is deprecated in OpenSSL 3).  MD5 only groups candidate
 * duplicates; equality is always confirmed byte for byte before merging, so
 * its weakness against collisions costs nothing here.
 *
 * The shrink's key for a buffer larger than a piece is the MD5 of its
 * pieces' MD5s (digest_pieces_*()): one MD5 is a chain of dependent steps,
 * and the 14.7 MB buffers of a bitmap-heavy dump each took 33-45 ms on one
 * lane while the other lanes and cores sat idle.  Pieces fill the lanes.
 */
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "hprof_private.h"

struct digest {
    EVP_MD_CTX *ctx;
    EVP_MD_CTX *whole;      /* pieced: MD5 of the pieces' MD5s */
    struct hprof_error *err;
    int pieced;             /* contents of more than one piece */
    int piece_given;        /* a piece's MD5 came from digest_pieces_add() */
    uint64_t piece_left;    /* bytes still to come in the current piece */
    uint8_t single[16];     /* one piece, given: its MD5 is the digest */
};

struct digest *digest_new(struct hprof_error *err)
{
    struct digest *d = calloc(1, sizeof *d);
    if (d == NULL || (d->ctx = EVP_MD_CTX_new()) == NULL ||
        (d->whole = EVP_MD_CTX_new()) == NULL) {
        if (d != NULL)
            EVP_MD_CTX_free(d->ctx);
        free(d);
        hprof_error_set(err, HPROF_ERR_NOMEM, "md5: out of memory");
        return NULL;
    }
    d->err = err;
    return d;
}

int digest_begin(struct digest *d)
{
    if (EVP_DigestInit_ex(d->ctx, EVP_md5(), NULL) != 1)
        return hprof_error_set(d->err, HPROF_ERR_USAGE, "md5: EVP_DigestInit_ex failed");
    return HPROF_OK;
}

int digest_update(struct digest *d, const void *data, size_t len)
{
    if (EVP_DigestUpdate(d->ctx, data, len) != 1)
        return hprof_error_set(d->err, HPROF_ERR_USAGE, "md5: EVP_DigestUpdate failed");
    return HPROF_OK;
}

int digest_final(struct digest *d, uint8_t out[16])
{
    unsigned len = 0;
    if (EVP_DigestFinal_ex(d->ctx, out, &len) != 1 || len != 16)
        return hprof_error_set(d->err, HPROF_ERR_USAGE, "md5: EVP_DigestFinal_ex failed");
    return HPROF_OK;
}

int digest_pieces_begin(struct digest *d, uint64_t bytes)
{
    d->pieced = bytes > DIGEST_PIECE;
    d->piece_given = 0;
    d->piece_left = DIGEST_PIECE;
    if (d->pieced && EVP_DigestInit_ex(d->whole, EVP_md5(), NULL) != 1)
        return hprof_error_set(d->err, HPROF_ERR_USAGE, "md5: EVP_DigestInit_ex failed");
    return digest_begin(d);
}

int digest_pieces_add(struct digest *d, const uint8_t md5[16])
{
    if (!d->pieced) {
        memcpy(d->single, md5, 16);
        d->piece_given = 1;
        return HPROF_OK;
    }
    if (EVP_DigestUpdate(d->whole, md5, 16) != 1)
        return hprof_error_set(d->err, HPROF_ERR_USAGE, "md5: EVP_DigestUpdate failed");
    return HPROF_OK;
}

/* The piece being hashed is complete: into the whole, and a new one begun. */
static int end_piece(struct digest *d)
{
    uint8_t md5[16];
    int rc = digest_final(d, md5);
    if (rc == HPROF_OK)
        rc = digest_pieces_add(d, md5);
    d->piece_left = DIGEST_PIECE;
    return rc == HPROF_OK ? digest_begin(d) : rc;
}

int digest_pieces_update(struct digest *d, const void *data, size_t len)
{
    if (!d->pieced)
        return digest_update(d, data, len);
    const uint8_t *p = data;
    while (len > 0) {
        size_t n = len < d->piece_left ? len : (size_t)d->piece_left;
        int rc = digest_update(d, p, n);
        p += n;
        len -= n;
        d->piece_left -= n;
        if (rc == HPROF_OK && d->piece_left == 0)
            rc = end_piece(d);
        if (rc != HPROF_OK)
            return rc;
    }
    return HPROF_OK;
}

int digest_pieces_final(struct digest *d, uint8_t out[16])
{
    if (!d->pieced) {
        if (!d->piece_given)
            return digest_final(d, out);
        memcpy(out, d->single, 16);
        return HPROF_OK;
    }
    if (d->piece_left < DIGEST_PIECE) { /* a last, shorter piece */
        int rc = end_piece(d);
        if (rc != HPROF_OK)
            return rc;
    }
    unsigned len = 0;
    if (EVP_DigestFinal_ex(d->whole, out, &len) != 1 || len != 16)
        return hprof_error_set(d->err, HPROF_ERR_USAGE, "md5: EVP_DigestFinal_ex failed");
    return HPROF_OK;
}

void digest_free(struct digest *d)
{
    if (d == NULL)
        return;
    EVP_MD_CTX_free(d->whole);
    EVP_MD_CTX_free(d->ctx);
    free(d);
}

/* ---- SHA-256: a merge without a second look at the bytes ---------------------- */

struct sha256 {
    EVP_MD_CTX *ctx;
};

struct sha256 *sha256_new(void)
{
    struct sha256 *s = malloc(sizeof *s);
    if (s != NULL && (s->ctx = EVP_MD_CTX_new()) == NULL) {
        free(s);
        s = NULL;
    }
    return s;
}

int sha256_of(struct sha256 *s, const void *data, size_t len, uint8_t out[32])
{
    unsigned n = 0;
    if (EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL) != 1 ||
        EVP_DigestUpdate(s->ctx, data, len) != 1 || EVP_DigestFinal_ex(s->ctx, out, &n) != 1 ||
        n != 32)
        return HPROF_ERR_NOMEM; /* EVP fails only for want of memory */
    return HPROF_OK;
}

void sha256_free(struct sha256 *s)
{
    if (s != NULL)
        EVP_MD_CTX_free(s->ctx);
    free(s);
}

/* ---- A 64-bit fingerprint: equal bytes, probably ------------------------------ */

#define FP_PRIME1 0x9E3779B185EBCA87ull
#define FP_PRIME2 0xC2B2AE3D27D4EB4Full
#define FP_PRIME3 0x165667B19E3779F9ull

static inline uint64_t fp_rotl(uint64_t x, unsigned r)
{
    return x << r | x >> (64 - r);
}

static inline uint64_t fp_round(uint64_t acc, uint64_t word)
{
    return fp_rotl(acc + word * FP_PRIME2, 31) * FP_PRIME1;
}

static inline uint64_t fp_word(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w); /* the host's order: both sides are on this host */
    return w;
}

/* Four independent lanes of multiply and rotate over 32-byte blocks: the
 * multiplies of one block overlap, so the loop runs near memory speed. */
uint64_t fingerprint64(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint64_t lane[4] = { FP_PRIME1, FP_PRIME2, FP_PRIME3, 0 };
    for (size_t blocks = len / 32; blocks > 0; blocks--, p += 32)
        for (int k = 0; k < 4; k++)
            lane[k] = fp_round(lane[k], fp_word(p + 8 * k));
    uint8_t tail[32] = { 0 };
    memcpy(tail, p, len % 32);
    uint64_t h = (uint64_t)len * FP_PRIME3;
    for (int k = 0; k < 4; k++)
        h = (h ^ fp_round(lane[k], fp_word(tail + 8 * k))) * FP_PRIME1 + FP_PRIME3;
    h ^= h >> 33;
    h *= FP_PRIME2;
    h ^= h >> 29;
    h *= FP_PRIME3;
    return h ^ h >> 32;
}
