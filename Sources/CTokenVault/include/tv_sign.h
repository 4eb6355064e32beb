/* JWT signatures (RS256, ES256) and HMAC-SHA1 through OpenSSL's libcrypto,
 * loaded on first use: only what signs (jwt_bearer, private_key_jwt, an
 * OAuth 1.0a header) maps it. */
#ifndef TV_SIGN_H
#define TV_SIGN_H
#include <stddef.h>

/* 1 when libcrypto.so.3 can be loaded. */
int tv_sign_library_available(void);
/* A private key, opaque to Swift. */
typedef struct tv_sign_key tv_sign_key;
/* Reads the private key in `pem` (PKCS#8, PKCS#1 RSA or SEC1 EC, unencrypted;
   never prompts): RS256 for an RSA key of 2048 bits or more, ES256 for a
   P-256 key, named in *alg. NULL on failure, with the reason in message.
   Free with tv_sign_key_free (OpenSSL cleanses the key material). */
tv_sign_key *tv_sign_key_open(const char *pem, size_t pem_len, const char **alg, char *message, size_t message_len);
/* Signs `data` with the key (RSASSA-PKCS1-v1_5 SHA-256, or ECDSA P-256 as
   r||s, 64 bytes): the signature's length, *signature set (tv_sign_free); 0 on
   failure, with the reason in message. */
int tv_sign_key_sign(tv_sign_key *key, const unsigned char *data, size_t data_len,
                     unsigned char **signature, char *message, size_t message_len);
void tv_sign_key_free(tv_sign_key *key);
/* The public point of an EC P-256 key, uncompressed (0x04 || x || y); 1: ok, 0: not one. */
int tv_sign_key_public(tv_sign_key *key, unsigned char point[65]);
/* A new P-256 key as unencrypted PKCS#8 PEM in *pem (free with
   tv_ec_free_pem, which wipes it); 1: ok, 0: failed (message). */
int tv_ec_generate(char **pem, size_t *pem_len, char *message, size_t message_len);
void tv_ec_free_pem(char *pem, size_t pem_len);
void tv_sign_free(unsigned char *signature);
/* HMAC-SHA1 (OAuth 1.0a signatures, RFC 5849) into out; 1: ok, 0: failed (message). */
int tv_hmac_sha1(const unsigned char *key, size_t key_len, const unsigned char *data, size_t data_len,
                 unsigned char out[20], char *message, size_t message_len);

#endif
