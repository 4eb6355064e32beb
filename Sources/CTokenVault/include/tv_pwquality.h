/* Judging a new vault passphrase typed at the prompt through libpwquality,
   loaded on first use (only when a vault is created at a terminal). */
#ifndef TV_PWQUALITY_H
#define TV_PWQUALITY_H
#include <stddef.h>

/* The score (0..100) of an acceptable passphrase; -1 for a weak one, with
   `reason` set (libpwquality's words); -2 when libpwquality cannot be loaded
   (`reason` says why). The system's pwquality.conf is honoured; when the
   cracklib dictionary is not installed, the check runs without it. */
int tv_pwquality_check(const char *password, char *reason, size_t reason_len);

#endif
