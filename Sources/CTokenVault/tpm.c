/* The glue between Swift and TPM2-TSS (docs/headless.md): the file vault's
 * key sealed by the TPM as a keyed-hash object under a primary storage key
 * (ECC P-256, the TCG's storage key template) that the TPM derives from its
 * owner hierarchy's seed on every use, so nothing persistent is left in the
 * TPM. A cleared TPM or another machine's has another seed and cannot load
 * the object. libtss2-esys (with libtss2-mu, which it links) and
 * libtss2-tctildr are opened through the shared loader on first use. */
#include "tv_tpm.h"
#include "loader.h"
#include <stdio.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_tctildr.h>

#define TV_ESYS_FUNCS(X)                                                                                   \
    X(Esys_Initialize) X(Esys_Finalize) X(Esys_CreatePrimary) X(Esys_Create) X(Esys_Load) X(Esys_Unseal)   \
    X(Esys_FlushContext) X(Esys_Free) X(Esys_StartAuthSession) X(Esys_PolicyPCR) X(Esys_PolicyGetDigest)  \
    X(Tss2_MU_TPM2B_PUBLIC_Marshal) X(Tss2_MU_TPM2B_PUBLIC_Unmarshal) X(Tss2_MU_TPM2B_PRIVATE_Marshal)     \
    X(Tss2_MU_TPM2B_PRIVATE_Unmarshal)

TV_DL_API(tv_esys_api, TV_ESYS_FUNCS, "libtss2-esys.so.0", tv_esys)

#define TV_LDR_FUNCS(X) X(Tss2_TctiLdr_Initialize) X(Tss2_TctiLdr_Finalize)
typedef struct { TV_LDR_FUNCS(TV_DL_FIELD) } tv_ldr_api;
static tv_ldr_api ldr;
static tv_dl_library ldr_library = TV_DL_LIBRARY_INIT;

/* The TSS logs its errors on stderr unless TSS2_LOG says otherwise, and
   tokenvault says what failed in its own words. Changing the environment is
   not an option (a static Swift runtime finds argv beside it, and other
   threads read it), so while the TSS works stderr points at /dev/null, one
   operation at a time; a TSS2_LOG the user set is left to speak. */
static pthread_mutex_t quiet_lock = PTHREAD_MUTEX_INITIALIZER;

static int quiet_begin(void) {
    pthread_mutex_lock(&quiet_lock);
    if (getenv("TSS2_LOG") != NULL) return -1;
    int saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved >= 0 && null >= 0) dup2(null, 2);
    if (null >= 0) close(null);
    return saved;
}

static void quiet_end(int saved) {
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
    pthread_mutex_unlock(&quiet_lock);
}

static const tv_ldr_api *tv_ldr(void) {
    static const char *const names[] = { TV_LDR_FUNCS(TV_DL_NAME) };
    static void **const slots[] = { (void **)&ldr.Tss2_TctiLdr_Initialize, (void **)&ldr.Tss2_TctiLdr_Finalize };
    return tv_dl_load(&ldr_library, "libtss2-tctildr.so.0", names, slots, 2) ? &ldr : NULL;
}

/* One conversation with the TPM: the TCTI, the ESYS context, the primary key. */
typedef struct {
    const tv_esys_api *e;
    const tv_ldr_api *l;
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *ctx;
    ESYS_TR primary;
    ESYS_TR session;
    char *message;
    size_t message_len;
} tv_tpm;

static int say(tv_tpm *t, int kind, const char *what, TSS2_RC rc) {
    if (rc == 0) {
        snprintf(t->message, t->message_len, "%s", what);
        return kind;
    }
    TSS2_RC base = rc & 0xFFFF;
    if (base & TPM2_RC_FMT1) base &= TPM2_RC_FMT1 | 0x3F;
    const char *why = NULL;
    if ((rc & TSS2_RC_LAYER_MASK) == TSS2_TCTI_RC_LAYER) {
        why = "the TPM does not answer";
        kind = TV_TPM_UNREACHABLE;
    } else if ((rc & TSS2_RC_LAYER_MASK) == 0) {
        if (base == TPM2_RC_INTEGRITY) {
            why = "the TPM cannot load the sealed key: it was sealed by another TPM, or this one was cleared";
            kind = TV_TPM_REFUSED;
        } else if (base == TPM2_RC_POLICY_FAIL || base == TPM2_RC_PCR_CHANGED || base == TPM2_RC_VALUE) {
            why = "the PCR values the key is bound to have changed";
            kind = TV_TPM_REFUSED;
        } else if (base == TPM2_RC_LOCKOUT) {
            why = "the TPM is in dictionary-attack lockout";
        }
    }
    if (why && kind == TV_TPM_REFUSED)
        snprintf(t->message, t->message_len, "%s (TPM2 response 0x%x)", why, (unsigned)rc);
    else if (why)
        snprintf(t->message, t->message_len, "%s: %s (TPM2 response 0x%x)", what, why, (unsigned)rc);
    else
        snprintf(t->message, t->message_len, "%s: TPM2 response 0x%x", what, (unsigned)rc);
    return kind;
}

static int open_tpm(tv_tpm *t, const char *tcti) {
    t->e = tv_esys();
    t->l = tv_ldr();
    if (t->e == NULL || t->l == NULL) {
        snprintf(t->message, t->message_len, "%s", t->e == NULL ? library.error : ldr_library.error);
        return TV_TPM_NO_LIBRARY;
    }
    TSS2_RC rc = t->l->Tss2_TctiLdr_Initialize(tcti, &t->tcti);
    if (rc != TSS2_RC_SUCCESS) {
        snprintf(t->message, t->message_len, "no TPM answers at %s (TCTI response 0x%x)",
                 tcti ? tcti : "the default places (/dev/tpmrm0, /dev/tpm0)", (unsigned)rc);
        return TV_TPM_UNREACHABLE;
    }
    rc = t->e->Esys_Initialize(&t->ctx, t->tcti, NULL);
    if (rc != TSS2_RC_SUCCESS) return say(t, TV_TPM_UNREACHABLE, "the TPM could not be opened", rc);
    TPM2B_SENSITIVE_CREATE empty = { 0 };
    TPM2B_PUBLIC storage = {
        .publicArea = {
            .type = TPM2_ALG_ECC,
            .nameAlg = TPM2_ALG_SHA256,
            .objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN |
                                TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA | TPMA_OBJECT_RESTRICTED |
                                TPMA_OBJECT_DECRYPT,
            .parameters.eccDetail = {
                .symmetric = { .algorithm = TPM2_ALG_AES, .keyBits.aes = 128, .mode.aes = TPM2_ALG_CFB },
                .scheme = { .scheme = TPM2_ALG_NULL },
                .curveID = TPM2_ECC_NIST_P256,
                .kdf = { .scheme = TPM2_ALG_NULL },
            },
            .unique.ecc = { .x = { .size = 32 }, .y = { .size = 32 } },
        },
    };
    TPM2B_DATA outside = { 0 };
    TPML_PCR_SELECTION none = { 0 };
    rc = t->e->Esys_CreatePrimary(t->ctx, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &empty,
                                  &storage, &outside, &none, &t->primary, NULL, NULL, NULL, NULL);
    if (rc != TSS2_RC_SUCCESS)
        return say(t, TV_TPM_FAILED, "the TPM could not create its storage key (is the owner hierarchy's password set?)", rc);
    return TV_TPM_OK;
}

static void close_tpm(tv_tpm *t) {
    if (t->ctx) {
        if (t->session != ESYS_TR_NONE) t->e->Esys_FlushContext(t->ctx, t->session);
        if (t->primary != ESYS_TR_NONE) t->e->Esys_FlushContext(t->ctx, t->primary);
        t->e->Esys_Finalize(&t->ctx);
    }
    if (t->tcti) t->l->Tss2_TctiLdr_Finalize(&t->tcti);
}

static TPML_PCR_SELECTION pcr_selection(uint32_t mask) {
    TPML_PCR_SELECTION s = { .count = 1 };
    s.pcrSelections[0].hash = TPM2_ALG_SHA256;
    s.pcrSelections[0].sizeofSelect = 3;
    for (int i = 0; i < 3; i++) s.pcrSelections[0].pcrSelect[i] = (uint8_t)(mask >> (8 * i));
    return s;
}

/* A policy session (or a trial one, to compute the digest) satisfied by the PCRs' current values. */
static int pcr_session(tv_tpm *t, uint32_t mask, TPM2_SE type) {
    TPMT_SYM_DEF sym = { .algorithm = TPM2_ALG_NULL };
    TSS2_RC rc = t->e->Esys_StartAuthSession(t->ctx, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
                                             ESYS_TR_NONE, NULL, type, &sym, TPM2_ALG_SHA256, &t->session);
    if (rc != TSS2_RC_SUCCESS) return say(t, TV_TPM_FAILED, "the TPM could not start a policy session", rc);
    TPM2B_DIGEST current = { 0 };
    TPML_PCR_SELECTION pcrs = pcr_selection(mask);
    rc = t->e->Esys_PolicyPCR(t->ctx, t->session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &current, &pcrs);
    if (rc != TSS2_RC_SUCCESS) return say(t, TV_TPM_FAILED, "the TPM could not read the PCRs", rc);
    return TV_TPM_OK;
}

static int seal(const char *tcti, const uint8_t *secret, size_t secret_len, uint32_t pcr_mask, uint8_t *blob,
                size_t *blob_len, char *message, size_t message_len) {
    tv_tpm t = { .primary = ESYS_TR_NONE, .session = ESYS_TR_NONE, .message = message, .message_len = message_len };
    if (secret_len == 0 || secret_len > TV_TPM_SECRET_MAX) {
        snprintf(message, message_len, "a sealed secret is 1 to %d bytes", TV_TPM_SECRET_MAX);
        return TV_TPM_FAILED;
    }
    int r = open_tpm(&t, tcti);
    TPM2B_SENSITIVE_CREATE sensitive = { 0 };
    TPM2B_PUBLIC object = {
        .publicArea = {
            .type = TPM2_ALG_KEYEDHASH,
            .nameAlg = TPM2_ALG_SHA256,
            .objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_NODA |
                                (pcr_mask ? 0 : TPMA_OBJECT_USERWITHAUTH),
            .parameters.keyedHashDetail.scheme.scheme = TPM2_ALG_NULL,
        },
    };
    if (r == TV_TPM_OK && pcr_mask) {
        r = pcr_session(&t, pcr_mask, TPM2_SE_TRIAL);
        TPM2B_DIGEST *policy = NULL;
        if (r == TV_TPM_OK) {
            TSS2_RC rc = t.e->Esys_PolicyGetDigest(t.ctx, t.session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &policy);
            if (rc != TSS2_RC_SUCCESS) r = say(&t, TV_TPM_FAILED, "the TPM could not compute the PCR policy", rc);
        }
        if (policy) {
            object.publicArea.authPolicy = *policy;
            t.e->Esys_Free(policy);
        }
    }
    TPM2B_PRIVATE *private_part = NULL;
    TPM2B_PUBLIC *public_part = NULL;
    if (r == TV_TPM_OK) {
        sensitive.sensitive.data.size = (UINT16)secret_len;
        memcpy(sensitive.sensitive.data.buffer, secret, secret_len);
        TPM2B_DATA outside = { 0 };
        TPML_PCR_SELECTION none = { 0 };
        TSS2_RC rc = t.e->Esys_Create(t.ctx, t.primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive,
                                      &object, &outside, &none, &private_part, &public_part, NULL, NULL, NULL);
        explicit_bzero(&sensitive, sizeof sensitive);
        if (rc != TSS2_RC_SUCCESS) r = say(&t, TV_TPM_FAILED, "the TPM could not seal the key", rc);
    }
    if (r == TV_TPM_OK) {
        size_t offset = 0;
        TSS2_RC rc = t.e->Tss2_MU_TPM2B_PUBLIC_Marshal(public_part, blob, TV_TPM_BLOB_MAX, &offset);
        if (rc == TSS2_RC_SUCCESS) rc = t.e->Tss2_MU_TPM2B_PRIVATE_Marshal(private_part, blob, TV_TPM_BLOB_MAX, &offset);
        if (rc != TSS2_RC_SUCCESS) r = say(&t, TV_TPM_FAILED, "the sealed key could not be written out", rc);
        *blob_len = offset;
    }
    if (private_part) t.e->Esys_Free(private_part);
    if (public_part) t.e->Esys_Free(public_part);
    close_tpm(&t);
    return r;
}

static int unseal(const char *tcti, const uint8_t *blob, size_t blob_len, uint32_t pcr_mask, uint8_t *secret,
                  size_t *secret_len, char *message, size_t message_len) {
    tv_tpm t = { .primary = ESYS_TR_NONE, .session = ESYS_TR_NONE, .message = message, .message_len = message_len };
    TPM2B_PUBLIC public_part = { 0 };
    TPM2B_PRIVATE private_part = { 0 };
    int r = open_tpm(&t, tcti);
    if (r == TV_TPM_OK) {
        size_t offset = 0;
        TSS2_RC rc = t.e->Tss2_MU_TPM2B_PUBLIC_Unmarshal(blob, blob_len, &offset, &public_part);
        if (rc == TSS2_RC_SUCCESS) rc = t.e->Tss2_MU_TPM2B_PRIVATE_Unmarshal(blob, blob_len, &offset, &private_part);
        if (rc != TSS2_RC_SUCCESS || offset != blob_len) r = say(&t, TV_TPM_DAMAGED, "the sealed key is damaged", 0);
    }
    ESYS_TR object = ESYS_TR_NONE;
    if (r == TV_TPM_OK) {
        TSS2_RC rc = t.e->Esys_Load(t.ctx, t.primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &private_part,
                                    &public_part, &object);
        if (rc != TSS2_RC_SUCCESS) r = say(&t, TV_TPM_FAILED, "the TPM could not load the sealed key", rc);
    }
    if (r == TV_TPM_OK && pcr_mask) r = pcr_session(&t, pcr_mask, TPM2_SE_POLICY);
    TPM2B_SENSITIVE_DATA *data = NULL;
    if (r == TV_TPM_OK) {
        TSS2_RC rc = t.e->Esys_Unseal(t.ctx, object, pcr_mask ? t.session : ESYS_TR_PASSWORD, ESYS_TR_NONE,
                                      ESYS_TR_NONE, &data);
        if (rc != TSS2_RC_SUCCESS) r = say(&t, TV_TPM_FAILED, "the TPM did not unseal the key", rc);
    }
    if (data) {
        if (data->size == 0 || data->size > TV_TPM_SECRET_MAX) {
            r = say(&t, TV_TPM_DAMAGED, "the TPM unsealed something that is not a key", 0);
        } else {
            memcpy(secret, data->buffer, data->size);
            *secret_len = data->size;
        }
        explicit_bzero(data, sizeof *data);
        t.e->Esys_Free(data);
    }
    if (object != ESYS_TR_NONE) t.e->Esys_FlushContext(t.ctx, object);
    close_tpm(&t);
    return r;
}

/* `call` with the TSS's log quieted; its result in `r`. */
#define TV_QUIETLY(r, call)            \
    do {                               \
        int saved_ = quiet_begin();    \
        (r) = (call);                  \
        quiet_end(saved_);             \
    } while (0)

int tv_tpm_seal(const char *tcti, const uint8_t *secret, size_t secret_len, uint32_t pcr_mask, uint8_t *blob,
                size_t *blob_len, char *message, size_t message_len) {
    int r;
    TV_QUIETLY(r, seal(tcti, secret, secret_len, pcr_mask, blob, blob_len, message, message_len));
    return r;
}

int tv_tpm_unseal(const char *tcti, const uint8_t *blob, size_t blob_len, uint32_t pcr_mask, uint8_t *secret,
                  size_t *secret_len, char *message, size_t message_len) {
    int r;
    TV_QUIETLY(r, unseal(tcti, blob, blob_len, pcr_mask, secret, secret_len, message, message_len));
    return r;
}
