/* JWT signatures (RS256, ES256) and HMAC-SHA1 through OpenSSL's libcrypto,
 * loaded on first use: only what signs (jwt_bearer, private_key_jwt, an
 * OAuth 1.0a header) maps it. */
#ifndef TV_SIGN_H
#define TV_SIGN_H
#include <stddef.h>

/* 1 when libcrypto.so.3 can be loaded. */
int tv_sign_library_available(void);
/* Signs `data` with the private key in `pem` (PKCS#8, PKCS#1 RSA or SEC1 EC,
   unencrypted): RS256 (RSASSA-PKCS1-v1_5, SHA-256) for an RSA key of 2048
   bits or more, ES256 (r||s, 64 bytes) for a P-256 key. Returns the signature
   length and sets *signature (tv_sign_free) and *alg; 0 on failure, with the
   reason in message. Key material is cleansed before returning. */
int tv_sign(const char *pem, size_t pem_len, const unsigned char *data, size_t data_len,
            unsigned char **signature, const char **alg, char *message, size_t message_len);
void tv_sign_free(unsigned char *signature);
/* HMAC-SHA1 (OAuth 1.0a signatures, RFC 5849) into out; 1: ok, 0: failed (message). */
int tv_hmac_sha1(const unsigned char *key, size_t key_len, const unsigned char *data, size_t data_len,
                 unsigned char out[20], char *message, size_t message_len);

#endif
