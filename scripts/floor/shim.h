#include <libsecret/secret.h>
/* The item tokenvault stores for SERVICE (account default), found by its
   attributes as secret-tool finds it; the secret, or NULL. */
static inline char *floor_lookup(const char *service) {
    static const SecretSchema schema = {
        "org.freedesktop.Secret.Generic", SECRET_SCHEMA_DONT_MATCH_NAME,
        { { "service", SECRET_SCHEMA_ATTRIBUTE_STRING }, { "account", SECRET_SCHEMA_ATTRIBUTE_STRING }, { NULL, 0 } } };
    return secret_password_lookup_sync(&schema, NULL, NULL, "service", service, "account", "default", NULL);
}
