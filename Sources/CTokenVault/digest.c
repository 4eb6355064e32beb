/* The glue to OpenSSL's libcrypto for tv_digest.h, through the shared loader. */
#include "tv_digest.h"
#include "loader.h"
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>

#define TV_DIGEST_FUNCS(X)                                                                      \
    X(EVP_Digest) X(EVP_md5) X(EVP_aes_128_cbc) X(EVP_CIPHER_CTX_new) X(EVP_CIPHER_CTX_free)   \
    X(EVP_DecryptInit_ex) X(EVP_DecryptUpdate) X(EVP_DecryptFinal_ex)

TV_DL_API(tv_digest_api, TV_DIGEST_FUNCS, "libcrypto.so.3", tv_api)

int tv_md5_hex(const void *data, size_t length, char out[33], const char **message) {
    const tv_digest_api *c = tv_api();
    if (c == NULL) {
        *message = library.error;
        return 0;
    }
    unsigned char md[16];
    unsigned int n = 0;
    if (c->EVP_Digest(data, length, md, &n, c->EVP_md5(), NULL) != 1 || n != sizeof md) {
        *message = "libcrypto could not compute an MD5";
        return 0;
    }
    for (unsigned i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
    return 1;
}

int tv_aes128_cbc_decrypt(const unsigned char key[16], const unsigned char iv[16], const unsigned char *in,
                          size_t length, unsigned char *out, size_t *written, const char **message) {
    const tv_digest_api *c = tv_api();
    if (c == NULL) {
        *message = library.error;
        return 0;
    }
    if (length == 0 || length % 16 != 0 || length > INT_MAX) {
        *message = "the ciphertext is not whole AES blocks";
        return 0;
    }
    EVP_CIPHER_CTX *ctx = c->EVP_CIPHER_CTX_new();
    if (ctx == NULL) {
        *message = "libcrypto could not make a cipher context";
        return 0;
    }
    int n = 0, last = 0;
    int ok = c->EVP_DecryptInit_ex(ctx, c->EVP_aes_128_cbc(), NULL, key, iv) == 1 &&
             c->EVP_DecryptUpdate(ctx, out, &n, in, (int)length) == 1 &&
             c->EVP_DecryptFinal_ex(ctx, out + n, &last) == 1;
    c->EVP_CIPHER_CTX_free(ctx);
    if (!ok) {
        *message = "the padding is wrong";
        return 0;
    }
    *written = (size_t)n + (size_t)last;
    return 1;
}
