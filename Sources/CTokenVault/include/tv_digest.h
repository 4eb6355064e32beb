/* Digests libsodium does not have, from OpenSSL's libcrypto, loaded on first
 * use: only reading another tool's files needs them (mcp-remote names its
 * files by the MD5 of the server's URL). Never for anything secret. */
#ifndef TV_DIGEST_H
#define TV_DIGEST_H
#include <stddef.h>

/* The MD5 of `data` as 32 lower-case hex digits and a NUL in `out`; 1 on
   success, 0 when libcrypto cannot be loaded (*message says why). */
int tv_md5_hex(const void *data, size_t length, char out[33], const char **message);

#endif
