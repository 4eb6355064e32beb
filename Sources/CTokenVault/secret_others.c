/* Other applications' items in the Secret Service (tv_secret.h): counted
 * beside tokenvault's, and read where the user asks (another tool's login
 * moving in); never changed or deleted (docs/security.md, "Other
 * applications' secrets"). */
#include "secret_shared.h"
#include <string.h>

/* Whether the item's attributes are tokenvault's: its schema and one of `types`. */
int tv_attributes_ours(const tv_secret_api *a, GHashTable *attributes, const char *const *types) {
    const char *schema = attributes ? a->g_hash_table_lookup(attributes, "xdg:schema") : NULL;
    const char *type = attributes ? a->g_hash_table_lookup(attributes, "type") : NULL;
    if (!schema || strcmp(schema, TV_SCHEMA_NAME) != 0 || !type) return 0;
    for (; *types; types++)
        if (strcmp(*types, type) == 0) return 1;
    return 0;
}

int tv_foreign_items(const char *service, const char *account, const char *const *types, char **schema,
                     char **message) {
    const tv_secret_api *a;
    GDBusConnection *bus;
    SecretService *s = tv_open(&a, &bus, message);
    if (!s) return -1;
    GError *error = NULL;
    GVariant *r = tv_search_items(a, bus, tv_anyones_query(a, service, account), &error);
    if (!r) { a->g_object_unref(s); tv_take_error(a, &error, message); return -1; }
    int foreign = 0;
    for (int part = 0; part < 2; part++) {
        GVariant *paths = a->g_variant_get_child_value(r, part);
        size_t n = a->g_variant_n_children(paths);
        for (size_t i = 0; i < n; i++) {
            const char *path = NULL;
            a->g_variant_get_child(paths, i, "&o", &path);
            /* An item's attributes can be read while it is locked. */
            GVariant *got = a->g_dbus_connection_call_sync(
                bus, "org.freedesktop.secrets", path, "org.freedesktop.DBus.Properties", "Get",
                a->g_variant_new("(ss)", "org.freedesktop.Secret.Item", "Attributes"), (const GVariantType *)"(v)",
                G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
            if (!got) { a->g_clear_error(&error); continue; }
            GVariant *boxed = a->g_variant_get_child_value(got, 0);
            GVariant *dict = a->g_variant_get_child_value(boxed, 0);
            GHashTable *attributes = a->g_hash_table_new_full(a->g_str_hash, a->g_str_equal, a->g_free, a->g_free);
            size_t m = a->g_variant_n_children(dict);
            for (size_t j = 0; j < m; j++) {
                const char *k = NULL, *v = NULL;
                a->g_variant_get_child(dict, j, "{&s&s}", &k, &v);
                a->g_hash_table_insert(attributes, a->g_strdup(k), a->g_strdup(v));
            }
            if (!tv_attributes_ours(a, attributes, types)) {
                if (foreign == 0 && schema) {
                    const char *named = a->g_hash_table_lookup(attributes, "xdg:schema");
                    *schema = a->g_strdup(named ? named : "");
                }
                foreign++;
            }
            a->g_hash_table_unref(attributes);
            a->g_variant_unref(dict);
            a->g_variant_unref(boxed);
            a->g_variant_unref(got);
        }
        a->g_variant_unref(paths);
    }
    a->g_variant_unref(r);
    a->g_object_unref(s);
    return foreign;
}

char *tv_lookup_other(const char *const *attributes, char **message) {
    const tv_secret_api *a = tv_secret_lib();
    if (!a) return tv_no_library(message);
    /* A schema naming just these attributes, matching any xdg:schema (the
       other application's, or none): the item is found as it was written. */
    SecretSchema schema = { "io.tokenvault.OtherApplication", SECRET_SCHEMA_DONT_MATCH_NAME, { { NULL, 0 } } };
    GHashTable *attrs = a->g_hash_table_new_full(a->g_str_hash, a->g_str_equal, NULL, a->g_free);
    size_t n = 0;
    for (; attributes[0] && attributes[1] && n < 31; attributes += 2, n++) {
        schema.attributes[n].name = attributes[0];
        schema.attributes[n].type = SECRET_SCHEMA_ATTRIBUTE_STRING;
        a->g_hash_table_insert(attrs, (gpointer)attributes[0], a->g_strdup(attributes[1]));
    }
    schema.attributes[n].name = NULL;
    GError *error = NULL;
    char *secret = a->secret_password_lookupv_sync(&schema, attrs, NULL, &error);
    a->g_hash_table_unref(attrs);
    if (error) { tv_take_error(a, &error, message); return NULL; }
    return secret;
}
