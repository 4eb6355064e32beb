/* The glue to OpenSSL's libcrypto for tv_digest.h, through the shared loader. */
#include "tv_digest.h"
#include "loader.h"
#include <openssl/evp.h>
#include <stdio.h>

#define TV_DIGEST_FUNCS(X) X(EVP_Digest) X(EVP_md5)

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
