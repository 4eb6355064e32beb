/* A secret sealed by the machine's TPM 2.0 through TPM2-TSS's ESYS API,
 * loaded on first use: only a file vault whose key is sealed maps it. */
#ifndef TV_TPM_H
#define TV_TPM_H
#include <stddef.h>
#include <stdint.h>

/* How an operation ended. */
enum {
    TV_TPM_OK = 0,
    TV_TPM_NO_LIBRARY = 1,  /* libtss2-esys or libtss2-tctildr cannot be loaded */
    TV_TPM_UNREACHABLE = 2, /* no TPM answers where the TCTI points */
    TV_TPM_REFUSED = 3,     /* the TPM will not unseal: cleared, another TPM, or the PCRs changed */
    TV_TPM_DAMAGED = 4,     /* the sealed blob cannot be read */
    TV_TPM_FAILED = 5       /* any other TPM error */
};

/* The largest sealed blob tv_tpm_seal writes, and the largest secret it seals. */
#define TV_TPM_BLOB_MAX 2048
#define TV_TPM_SECRET_MAX 128

/* Seals `secret` to the TPM `tcti` names ("device:/dev/tpmrm0",
   "swtpm:host=127.0.0.1,port=2321"; NULL: the TSS's default order), under a
   primary storage key the TPM derives from its owner hierarchy each time. A
   nonzero `pcr_mask` (bit n: PCR n, SHA-256 bank, PCRs 0..23) binds it to
   those PCRs' current values. Writes the TPM's public and private parts to
   `blob` (TV_TPM_BLOB_MAX bytes) and their length to *blob_len. On failure,
   `message` says why. */
int tv_tpm_seal(const char *tcti, const uint8_t *secret, size_t secret_len, uint32_t pcr_mask, uint8_t *blob,
                size_t *blob_len, char *message, size_t message_len);

/* Unseals what tv_tpm_seal wrote into `secret` (TV_TPM_SECRET_MAX bytes),
   its length to *secret_len; every copy the TSS made is wiped. */
int tv_tpm_unseal(const char *tcti, const uint8_t *blob, size_t blob_len, uint32_t pcr_mask, uint8_t *secret,
                  size_t *secret_len, char *message, size_t message_len);

#endif
