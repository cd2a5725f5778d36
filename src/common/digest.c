/*
 * digest.c - MD5 of array contents through OpenSSL's EVP interface (the
 * MD5() one-shot is deprecated in OpenSSL 3).  MD5 only groups candidate
 * duplicates; equality is always confirmed byte for byte before merging, so
 * its weakness against collisions costs nothing here.
 */
#include <openssl/evp.h>
#include <stdlib.h>

#include "hprof_private.h"

struct digest {
    EVP_MD_CTX *ctx;
    struct hprof_error *err;
};

struct digest *digest_new(struct hprof_error *err)
{
    struct digest *d = calloc(1, sizeof *d);
    if (d == NULL || (d->ctx = EVP_MD_CTX_new()) == NULL) {
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

void digest_free(struct digest *d)
{
    if (d == NULL)
        return;
    EVP_MD_CTX_free(d->ctx);
    free(d);
}
