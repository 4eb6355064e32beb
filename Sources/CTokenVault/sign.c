/* The glue between Swift and libcrypto for JWT signatures (RS256, ES256):
 * loaded on first use through the shared loader, so a `get` that signs
 * nothing never maps it. */
#include "tv_sign.h"
#include "loader.h"
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TV_SIGN_FUNCS(X) \
    X(BIO_new_mem_buf) X(BIO_free) X(PEM_read_bio_PrivateKey) X(EVP_PKEY_free) X(EVP_PKEY_get_base_id) \
    X(EVP_PKEY_get_bits) X(EVP_PKEY_get_group_name) X(EVP_MD_CTX_new) X(EVP_MD_CTX_free) X(EVP_sha256) \
    X(EVP_DigestSignInit) X(EVP_DigestSign) X(ERR_get_error) X(ERR_error_string_n) X(ERR_clear_error) \
    X(d2i_ECDSA_SIG) X(ECDSA_SIG_get0) X(ECDSA_SIG_free) X(BN_bn2binpad) X(OPENSSL_cleanse) X(EVP_Q_mac) \
    X(EVP_PKEY_Q_keygen) X(EVP_PKEY_get_octet_string_param) X(BIO_new) X(BIO_s_mem) X(BIO_ctrl) \
    X(PEM_write_bio_PrivateKey)

TV_DL_API(tv_sign_api, TV_SIGN_FUNCS, "libcrypto.so.3", tv_api)

int tv_sign_library_available(void) { return tv_api() != NULL; }

void tv_sign_free(unsigned char *signature) { free(signature); }

/* Never prompt for a passphrase: an encrypted key is refused. */
static int tv_no_passphrase(char *buf, int size, int rwflag, void *u) {
    (void)buf; (void)size; (void)rwflag; (void)u;
    return -1;
}

static int tv_fail(const tv_sign_api *a, char *message, size_t len, const char *what) {
    unsigned long e = a ? a->ERR_get_error() : 0;
    if (e && a) {
        char detail[200];
        a->ERR_error_string_n(e, detail, sizeof detail);
        snprintf(message, len, "%s (%s)", what, detail);
        a->ERR_clear_error();
    } else {
        snprintf(message, len, "%s", what);
    }
    return 0;
}

tv_sign_key *tv_sign_key_open(const char *pem, size_t pem_len, const char **alg, char *message, size_t message_len) {
    const tv_sign_api *a = tv_api();
    if (!a) {
        snprintf(message, message_len, "libcrypto cannot be loaded (%s)", library.error);
        return NULL;
    }
    BIO *bio = a->BIO_new_mem_buf(pem, (int)pem_len);
    if (!bio) { tv_fail(a, message, message_len, "out of memory"); return NULL; }
    EVP_PKEY *key = a->PEM_read_bio_PrivateKey(bio, NULL, tv_no_passphrase, NULL);
    a->BIO_free(bio);
    if (!key) { tv_fail(a, message, message_len, "not an unencrypted PEM private key"); return NULL; }
    int type = a->EVP_PKEY_get_base_id(key);
    if (type == EVP_PKEY_RSA) {
        if (a->EVP_PKEY_get_bits(key) < 2048) {
            snprintf(message, message_len, "the RSA key has %d bits; RS256 needs 2048 or more", a->EVP_PKEY_get_bits(key));
            a->EVP_PKEY_free(key);
            return NULL;
        }
        *alg = "RS256";
    } else if (type == EVP_PKEY_EC) {
        char group[64] = "";
        size_t group_len = 0;
        if (!a->EVP_PKEY_get_group_name(key, group, sizeof group, &group_len) || strcmp(group, "prime256v1") != 0) {
            snprintf(message, message_len, "the EC key is on curve %s; ES256 needs P-256 (prime256v1)", group[0] ? group : "unknown");
            a->EVP_PKEY_free(key);
            return NULL;
        }
        *alg = "ES256";
    } else {
        snprintf(message, message_len, "the key is neither RSA nor EC P-256");
        a->EVP_PKEY_free(key);
        return NULL;
    }
    return (tv_sign_key *)key;
}

void tv_sign_key_free(tv_sign_key *handle) {
    const tv_sign_api *a = tv_api();
    if (a && handle) a->EVP_PKEY_free((EVP_PKEY *)handle);
}

int tv_sign_key_sign(tv_sign_key *handle, const unsigned char *data, size_t data_len,
                     unsigned char **signature, char *message, size_t message_len) {
    const tv_sign_api *a = tv_api();
    EVP_PKEY *key = (EVP_PKEY *)handle;
    if (!a || !key) {
        snprintf(message, message_len, "no key to sign with");
        return 0;
    }
    EVP_MD_CTX *ctx = a->EVP_MD_CTX_new();
    size_t der_len = 0;
    unsigned char *der = NULL;
    int ok = ctx && a->EVP_DigestSignInit(ctx, NULL, a->EVP_sha256(), NULL, key) == 1 &&
        a->EVP_DigestSign(ctx, NULL, &der_len, data, data_len) == 1 && (der = malloc(der_len)) != NULL &&
        a->EVP_DigestSign(ctx, der, &der_len, data, data_len) == 1;
    if (ctx) a->EVP_MD_CTX_free(ctx);
    if (!ok) {
        free(der);
        return tv_fail(a, message, message_len, "signing failed");
    }
    if (a->EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA) {
        *signature = der;
        return (int)der_len;
    }
    /* JWS wants ES256 as r||s, 32 bytes each, not DER. */
    const unsigned char *p = der;
    ECDSA_SIG *sig = a->d2i_ECDSA_SIG(NULL, &p, (long)der_len);
    free(der);
    if (!sig) return tv_fail(a, message, message_len, "unreadable ECDSA signature");
    const BIGNUM *r = NULL, *s = NULL;
    a->ECDSA_SIG_get0(sig, &r, &s);
    unsigned char *raw = malloc(64);
    if (!raw || a->BN_bn2binpad(r, raw, 32) != 32 || a->BN_bn2binpad(s, raw + 32, 32) != 32) {
        free(raw);
        a->ECDSA_SIG_free(sig);
        return tv_fail(a, message, message_len, "cannot encode the ECDSA signature");
    }
    a->ECDSA_SIG_free(sig);
    *signature = raw;
    return 64;
}

int tv_hmac_sha1(const unsigned char *key, size_t key_len, const unsigned char *data, size_t data_len,
                 unsigned char out[20], char *message, size_t message_len) {
    const tv_sign_api *a = tv_api();
    if (!a) {
        snprintf(message, message_len, "libcrypto cannot be loaded (%s)", library.error);
        return 0;
    }
    static const unsigned char empty[1] = { 0 };
    size_t out_len = 0;
    if (!a->EVP_Q_mac(NULL, "HMAC", NULL, "SHA1", NULL, key_len ? key : empty, key_len, data, data_len, out, 20, &out_len) || out_len != 20) {
        return tv_fail(a, message, message_len, "HMAC-SHA1 failed");
    }
    return 1;
}

int tv_sign_key_public(tv_sign_key *handle, unsigned char point[65]) {
    const tv_sign_api *a = tv_api();
    EVP_PKEY *key = (EVP_PKEY *)handle;
    size_t len = 0;
    if (!a || !key || a->EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) return 0;
    if (!a->EVP_PKEY_get_octet_string_param(key, "encoded-pub-key", point, 65, &len) || len != 65 || point[0] != 4) {
        a->ERR_clear_error();
        return 0;
    }
    return 1;
}

int tv_ec_generate(char **pem, size_t *pem_len, char *message, size_t message_len) {
    const tv_sign_api *a = tv_api();
    if (!a) {
        snprintf(message, message_len, "libcrypto cannot be loaded (%s)", library.error);
        return 0;
    }
    EVP_PKEY *key = a->EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    if (!key) return tv_fail(a, message, message_len, "cannot make a P-256 key");
    BIO *bio = a->BIO_new(a->BIO_s_mem());
    int ok = bio && a->PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) == 1;
    a->EVP_PKEY_free(key);
    if (!ok) {
        if (bio) a->BIO_free(bio);
        return tv_fail(a, message, message_len, "cannot write the key");
    }
    char *data = NULL;
    long len = a->BIO_ctrl(bio, BIO_CTRL_INFO, 0, (void *)&data);
    *pem = len > 0 ? malloc((size_t)len) : NULL;
    if (*pem) {
        memcpy(*pem, data, (size_t)len);
        *pem_len = (size_t)len;
    }
    a->OPENSSL_cleanse(data, len > 0 ? (size_t)len : 0);
    a->BIO_free(bio);
    if (!*pem) return tv_fail(a, message, message_len, "out of memory");
    return 1;
}

void tv_ec_free_pem(char *pem, size_t pem_len) {
    const tv_sign_api *a = tv_api();
    if (pem && a) a->OPENSSL_cleanse(pem, pem_len);
    free(pem);
}
