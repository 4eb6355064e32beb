/* What libsodium does not have, from OpenSSL's libcrypto, loaded on first
 * use: only reading another tool's files needs them (mcp-remote names its
 * files by the MD5 of the server's URL; FastMCP's CLI encrypts its logins
 * with Fernet, AES-128-CBC). */
#ifndef TV_DIGEST_H
#define TV_DIGEST_H
#include <stddef.h>

/* The MD5 of `data` as 32 lower-case hex digits and a NUL in `out`; 1 on
   success, 0 when libcrypto cannot be loaded (*message says why). Never for
   anything secret. */
int tv_md5_hex(const void *data, size_t length, char out[33], const char **message);

/* AES-128-CBC decryption with PKCS#7 padding of `length` bytes of `in` into
   `out` (room for `length` + 16 bytes, as libcrypto asks); the plaintext's length in *written. 1 on
   success; 0 when libcrypto cannot be loaded or the padding is wrong
   (*message says why). */
int tv_aes128_cbc_decrypt(const unsigned char key[16], const unsigned char iv[16], const unsigned char *in,
                          size_t length, unsigned char *out, size_t *written, const char **message);

#endif
