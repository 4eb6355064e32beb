/* Thin C glue over libsecret: the schema, and helpers for what Swift cannot
   call directly (variadic GVariant constructors, static schema tables). */
#include <libsecret/secret.h>
#include <string.h>

/* Schema io.tokenvault.Credential. DONT_MATCH_NAME so that items stored with
   `secret-tool store service HOST account NAME type token` are found too. */
static inline const SecretSchema *tv_lookup_schema(void) {
    static const SecretSchema schema = {
        "io.tokenvault.Credential", SECRET_SCHEMA_DONT_MATCH_NAME,
        {
            { "service", SECRET_SCHEMA_ATTRIBUTE_STRING },
            { "account", SECRET_SCHEMA_ATTRIBUTE_STRING },
            { "type", SECRET_SCHEMA_ATTRIBUTE_STRING },
            { NULL, 0 },
        }
    };
    return &schema;
}

/* The same schema, matching xdg:schema: used to store and to list, so that a
   listing never picks up other applications' items. */
static inline const SecretSchema *tv_schema(void) {
    static const SecretSchema schema = {
        "io.tokenvault.Credential", SECRET_SCHEMA_NONE,
        {
            { "service", SECRET_SCHEMA_ATTRIBUTE_STRING },
            { "account", SECRET_SCHEMA_ATTRIBUTE_STRING },
            { "type", SECRET_SCHEMA_ATTRIBUTE_STRING },
            { NULL, 0 },
        }
    };
    return &schema;
}

/* An attribute table owning copies of the values (the arguments may be
   temporaries); NULL values are left out. Free with g_hash_table_unref. */
static inline GHashTable *tv_attributes(const char *service, const char *account, const char *type) {
    GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    if (service) g_hash_table_insert(h, (gpointer)"service", g_strdup(service));
    if (account) g_hash_table_insert(h, (gpointer)"account", g_strdup(account));
    if (type) g_hash_table_insert(h, (gpointer)"type", g_strdup(type));
    return h;
}

/* Connects and opens a session: the probe. */
static inline SecretService *tv_service_open(GError **error) {
    return secret_service_get_sync(SECRET_SERVICE_OPEN_SESSION, NULL, error);
}

/* -1: no default collection, 0: unlocked, 1: locked. */
static inline int tv_default_collection_locked(SecretService *service, GError **error) {
    SecretCollection *c = secret_collection_for_alias_sync(service, SECRET_COLLECTION_DEFAULT,
                                                           SECRET_COLLECTION_NONE, NULL, error);
    if (c == NULL) return -1;
    int locked = secret_collection_get_locked(c) ? 1 : 0;
    g_object_unref(c);
    return locked;
}

/* The process id owning org.freedesktop.secrets on the session bus, or 0. */
static inline guint32 tv_secrets_owner_pid(int timeout_ms) {
    GError *error = NULL;
    GDBusConnection *bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
    if (bus == NULL) { g_clear_error(&error); return 0; }
    GVariant *r = g_dbus_connection_call_sync(
        bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
        "GetConnectionUnixProcessID", g_variant_new("(s)", "org.freedesktop.secrets"),
        G_VARIANT_TYPE("(u)"), G_DBUS_CALL_FLAGS_NONE, timeout_ms, NULL, &error);
    g_object_unref(bus);
    if (r == NULL) { g_clear_error(&error); return 0; }
    guint32 pid = 0;
    g_variant_get(r, "(u)", &pid);
    g_variant_unref(r);
    return pid;
}

/* An attribute of a search result, newly allocated (g_free), or NULL. */
static inline char *tv_item_attribute(SecretRetrievable *item, const char *name) {
    GHashTable *attrs = secret_retrievable_get_attributes(item);
    if (attrs == NULL) return NULL;
    char *v = g_strdup(g_hash_table_lookup(attrs, name));
    g_hash_table_unref(attrs);
    return v;
}

/* The secret of a search result as text in non-pageable memory
   (secret_password_free), or NULL with *error. */
static inline char *tv_item_secret(SecretRetrievable *item, GError **error) {
    SecretValue *value = secret_retrievable_retrieve_secret_sync(item, NULL, error);
    if (value == NULL) return NULL;
    char *text = secret_value_unref_to_password(value, NULL);
    return text;
}

static inline const char *tv_error_message(GError *error) {
    return error ? error->message : "unknown error";
}

static inline void tv_list_free_objects(GList *list) {
    g_list_free_full(list, g_object_unref);
}
