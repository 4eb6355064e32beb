/* The glue between Swift and libpwquality: loaded on first use through the
 * shared loader, so no other command maps it. */
#include "tv_pwquality.h"
#include "loader.h"
#include <pwquality.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define TV_PWQ_FUNCS(X) X(pwquality_default_settings) X(pwquality_read_config) X(pwquality_set_int_value) \
    X(pwquality_check) X(pwquality_strerror) X(pwquality_free_settings)

TV_DL_API(tv_pwq_api, TV_PWQ_FUNCS, "libpwquality.so.1", tv_api)

/* cracklib prints its own complaint (a missing dictionary) on stderr, onto the
   passphrase prompt: stderr goes to /dev/null while libpwquality judges. */
static int tv_quiet_check(const tv_pwq_api *q, pwquality_settings_t *settings, const char *password, void **aux) {
    fflush(stderr);
    int saved = dup(2);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved >= 0 && null >= 0) dup2(null, 2);
    int score = q->pwquality_check(settings, password, NULL, NULL, aux);
    fflush(stderr);
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
    if (null >= 0) close(null);
    return score;
}

int tv_pwquality_check(const char *password, char *reason, size_t reason_len) {
    const tv_pwq_api *q = tv_api();
    if (q == NULL) {
        snprintf(reason, reason_len, "%s", library.error[0] ? library.error : "libpwquality.so.1 cannot be loaded");
        return -2;
    }
    pwquality_settings_t *settings = q->pwquality_default_settings();
    if (settings == NULL) {
        snprintf(reason, reason_len, "libpwquality has no memory");
        return -2;
    }
    void *aux = NULL;
    q->pwquality_read_config(settings, NULL, &aux); /* no pwquality.conf: the defaults */
    char message[256];
    aux = NULL;
    int score = tv_quiet_check(q, settings, password, &aux);
    if (score == PWQ_ERROR_CRACKLIB_CHECK) {
        const char *m = q->pwquality_strerror(message, sizeof message, score, aux);
        if (m && strstr(m, "error loading dictionary")) {
            /* No cracklib dictionary on this system: judge length and classes alone. */
            q->pwquality_set_int_value(settings, PWQ_SETTING_DICT_CHECK, 0);
            aux = NULL;
            score = tv_quiet_check(q, settings, password, &aux);
        } else {
            snprintf(reason, reason_len, "%s", m ? m : "it fails the dictionary check");
            q->pwquality_free_settings(settings);
            return -1;
        }
    }
    if (score < 0) {
        const char *m = q->pwquality_strerror(message, sizeof message, score, aux);
        snprintf(reason, reason_len, "%s", m ? m : "it is too weak");
    }
    q->pwquality_free_settings(settings);
    return score < 0 ? -1 : score;
}
