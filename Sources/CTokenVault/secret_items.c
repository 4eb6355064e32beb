/* tokenvault's own items in the Secret Service (tv_secret.h): looked up,
 * stored, deleted, listed. Only items of its schema are changed; another
 * application's item with the same service and account is read where
 * tokenvault has none, never replaced (docs/security.md, "Other
 * applications' secrets"). */
#include "secret_shared.h"
#include <string.h>

/* The secret stored for service+account (tv_password_free), or NULL: then
   *message is set on failure and left NULL when there is no such item. */
char *tv_lookup(const char *service, const char *account, int foreign_too, int *foreign, char **message) {
    *foreign = 0;
    const tv_secret_api *a = tv_secret_lib();
    if (!a) return tv_no_library(message);
    GError *error = NULL;
    GHashTable *attrs = tv_attributes(a, service, account, NULL);
    char *secret = a->secret_password_lookupv_sync(tv_schema(), attrs, NULL, &error);
    if (!secret && !error && foreign_too) {
        secret = a->secret_password_lookupv_sync(tv_lookup_schema(), attrs, NULL, &error);
        *foreign = secret != NULL;
    }
    a->g_hash_table_unref(attrs);
    if (error) { tv_take_error(a, &error, message); return NULL; }
    return secret;
}

/* A SearchItems argument (floating) for tokenvault's items of service+account
   (of `type` when not NULL), and for anyone's. */
static GVariant *tv_ours_query(const tv_secret_api *a, const char *service, const char *account, const char *type) {
    if (type)
        return a->g_variant_new_parsed("({'service': %s, 'account': %s, 'type': %s, 'xdg:schema': %s},)", service,
                                       account, type, TV_SCHEMA_NAME);
    return a->g_variant_new_parsed("({'service': %s, 'account': %s, 'xdg:schema': %s},)", service, account,
                                   TV_SCHEMA_NAME);
}

GVariant *tv_anyones_query(const tv_secret_api *a, const char *service, const char *account) {
    return a->g_variant_new_parsed("({'service': %s, 'account': %s},)", service, account);
}

/* SearchItems with `query` (floating): its answer, the unlocked and the locked
   items' paths ((aoao)), or NULL with *error. */
GVariant *tv_search_items(const tv_secret_api *a, GDBusConnection *bus, GVariant *query, GError **error) {
    return a->g_dbus_connection_call_sync(bus, "org.freedesktop.secrets", "/org/freedesktop/secrets",
                                          "org.freedesktop.Secret.Service", "SearchItems", query,
                                          (const GVariantType *)"(aoao)", G_DBUS_CALL_FLAGS_NONE, -1, NULL, error);
}

/* The text of a secret as GetSecrets sends it ((oayays)) on libsecret's
   session, or NULL: then *undecodable is set when it did not decrypt, or
   was sent as text and did not decrypt to text. kwalletd5 now and then
   derives another session key than libsecret: such a session gives every
   secret as noise, which must not read as "no secret" (docs/config.md,
   "KWallet"). */
static char *tv_decode_text(const tv_secret_api *a, SecretService *s, GVariant *encoded, int *undecodable) {
    const char *type = NULL;
    a->g_variant_get_child(encoded, 3, "&s", &type);
    int text = type && strncmp(type, "text/", 5) == 0;
    SecretValue *value = a->secret_service_decode_dbus_secret(s, encoded);
    if (!value) { *undecodable = 1; return NULL; }
    char *secret = a->secret_value_unref_to_password(value, NULL);
    if (!secret && text) *undecodable = 1;
    return secret;
}

/* The secret of the item at `path`, fetched with one GetSecrets call on
   libsecret's session; NULL when that item is gone, locked or not text, or
   when it could not be decrypted (*undecodable set). */
char *tv_item_secret(const tv_secret_api *a, SecretService *s, GDBusConnection *bus, const char *path,
                     int *undecodable) {
    const char *session = a->secret_service_get_session_dbus_path(s);
    if (!session) return NULL;
    const char *paths[] = { path, NULL };
    GError *error = NULL;
    GVariant *r = a->g_dbus_connection_call_sync(
        bus, "org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service",
        "GetSecrets", a->g_variant_new("(^aoo)", paths, session), (const GVariantType *)"(a{o(oayays)})",
        G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
    if (!r) { a->g_clear_error(&error); return NULL; }
    GVariant *secrets = NULL;
    a->g_variant_get(r, "(@a{o(oayays)})", &secrets);
    a->g_variant_unref(r);
    GVariant *encoded = a->g_variant_lookup_value(secrets, path, (const GVariantType *)"(oayays)");
    a->g_variant_unref(secrets);
    if (!encoded) return NULL;
    char *secret = tv_decode_text(a, s, encoded, undecodable);
    a->g_variant_unref(encoded);
    return secret;
}

/* The secret for service+account as tv_lookup finds it, in D-Bus calls of
   our own on libsecret's session: one GetSecrets when `known` (may be NULL)
   still names the item, else SearchItems first; *found (tv_free) is then the
   item's path. NULL with *message set on failure; NULL with *message NULL
   when this way cannot answer (no item, or only locked ones): tv_lookup decides. */
char *tv_lookup_item(const char *service, const char *account, const char *known, char **found, char **message) {
    const tv_secret_api *a;
    GDBusConnection *bus;
    SecretService *s = tv_open(&a, &bus, message);
    if (!s) return NULL;
    GError *error = NULL;
    int undecodable = 0;
    char *secret = known ? tv_item_secret(a, s, bus, known, &undecodable) : NULL;
    if (secret) {
        *found = a->g_strdup(known);
    } else {
        GVariant *r = tv_search_items(a, bus, tv_ours_query(a, service, account, NULL), &error);
        if (!r) {
            a->g_object_unref(s);
            tv_take_error(a, &error, message);
            return NULL;
        }
        GVariant *unlocked = a->g_variant_get_child_value(r, 0);
        if (a->g_variant_n_children(unlocked) > 0) {
            const char *first = NULL;
            a->g_variant_get_child(unlocked, 0, "&o", &first);
            secret = tv_item_secret(a, s, bus, first, &undecodable);
            if (secret) *found = a->g_strdup(first);
        }
        a->g_variant_unref(unlocked);
        a->g_variant_unref(r);
    }
    a->g_object_unref(s);
    if (!secret && undecodable) *message = a->g_strdup(TV_SECRET_UNDECODABLE);
    return secret;
}

/* Every unlocked item for service+account, in any collection: cb(ctx, path,
   secret) for each whose secret could be read, all in one GetSecrets after
   one SearchItems on libsecret's session. Returns how many; -1 with *message
   on failure; 0 when none is unlocked (tv_lookup then decides: it may unlock).
   *locked: how many items matched in a locked collection. */
int tv_lookup_copies(const char *service, const char *account, void *context, tv_copy_callback callback,
                     int *locked, int *foreign, char **message) {
    *locked = 0;
    *foreign = 0;
    const tv_secret_api *a;
    GDBusConnection *bus;
    SecretService *s = tv_open(&a, &bus, message);
    if (!s) return -1;
    GError *error = NULL;
    const char *session = a->secret_service_get_session_dbus_path(s);
    /* tokenvault's own items first; another schema's only where it has none,
       unlocked or locked (a locked item of ours is unlocked, never passed over). */
    GVariant *r = NULL, *unlocked = NULL, *locked_paths = NULL;
    for (int pass = 0; pass < 2; pass++) {
        r = tv_search_items(
            a, bus, pass == 0 ? tv_ours_query(a, service, account, NULL) : tv_anyones_query(a, service, account), &error);
        if (!r) { a->g_object_unref(s); tv_take_error(a, &error, message); return -1; }
        unlocked = a->g_variant_get_child_value(r, 0);
        locked_paths = a->g_variant_get_child_value(r, 1);
        if (pass == 1 || a->g_variant_n_children(unlocked) > 0 || a->g_variant_n_children(locked_paths) > 0) {
            *foreign = pass == 1;
            break;
        }
        a->g_variant_unref(unlocked);
        a->g_variant_unref(locked_paths);
        a->g_variant_unref(r);
    }
    *locked = (int)a->g_variant_n_children(locked_paths);
    a->g_variant_unref(locked_paths);
    a->g_variant_unref(r);
    int found = 0, undecodable = 0;
    if (a->g_variant_n_children(unlocked) > 0 && session) {
        GVariant *secrets = a->g_dbus_connection_call_sync(
            bus, "org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service",
            "GetSecrets", a->g_variant_new("(@aoo)", unlocked, session), (const GVariantType *)"(a{o(oayays)})",
            G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
        if (!secrets) { a->g_variant_unref(unlocked); a->g_object_unref(s); tv_take_error(a, &error, message); return -1; }
        GVariant *all = a->g_variant_get_child_value(secrets, 0);
        a->g_variant_unref(secrets);
        size_t n = a->g_variant_n_children(all);
        for (size_t i = 0; i < n; i++) {
            GVariant *entry = a->g_variant_get_child_value(all, i);
            const char *path = NULL;
            a->g_variant_get_child(entry, 0, "&o", &path);
            GVariant *encoded = a->g_variant_get_child_value(entry, 1);
            char *secret = tv_decode_text(a, s, encoded, &undecodable);
            a->g_variant_unref(encoded);
            if (secret) {
                callback(context, path, secret);
                a->secret_password_free(secret);
                found++;
            }
            a->g_variant_unref(entry);
        }
        a->g_variant_unref(all);
    }
    a->g_variant_unref(unlocked);
    a->g_object_unref(s);
    if (undecodable) {
        *message = a->g_strdup(TV_SECRET_UNDECODABLE);
        return -1;
    }
    return found;
}

/* What tv_visit_items does with each item: nonzero stops the visit and is its result. */
typedef int (*tv_item_visitor)(const tv_secret_api *a, SecretService *s, const char *path, int in_default,
                               void *context, GError **error);

/* Visits each unlocked item that `query` (a "({attributes},)" tuple, floating)
   matches, saying whether it lies in the collection the `default` alias
   names. 0 when no visit stopped it, or when the alias names no collection;
   -1 with *error when the Secret Service could not be asked. */
static int tv_visit_items(const tv_secret_api *a, SecretService *s, GVariant *query, tv_item_visitor each,
                          void *context, GError **error) {
    GDBusConnection *bus = a->g_dbus_proxy_get_connection((GDBusProxy *)s);
    a->g_variant_ref_sink(query);
    GVariant *alias = a->g_dbus_connection_call_sync(
        bus, "org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "ReadAlias",
        a->g_variant_new("(s)", "default"), (const GVariantType *)"(o)", G_DBUS_CALL_FLAGS_NONE, -1, NULL, error);
    if (!alias) { a->g_variant_unref(query); return -1; }
    const char *home = NULL;
    a->g_variant_get(alias, "(&o)", &home);
    size_t home_len = strlen(home);
    int result = 0;
    GVariant *r = home_len > 1 ? tv_search_items(a, bus, query, error) : NULL;
    if (r) {
        GVariant *unlocked = a->g_variant_get_child_value(r, 0);
        size_t n = a->g_variant_n_children(unlocked);
        for (size_t i = 0; i < n && result == 0; i++) {
            const char *path = NULL;
            a->g_variant_get_child(unlocked, i, "&o", &path);
            int in_default = strncmp(path, home, home_len) == 0 && path[home_len] == '/';
            result = each(a, s, path, in_default, context, error);
        }
        a->g_variant_unref(unlocked);
        a->g_variant_unref(r);
    } else if (home_len > 1) {
        result = -1;
    }
    a->g_variant_unref(alias);
    a->g_variant_unref(query);
    return result;
}

/* A copy outside the default collection, deleted through libsecret, which
   completes the prompt a Delete may answer with (KeePassXC's, shown only
   when it confirms deletions); one that cannot be deleted is left. */
static int tv_delete_elsewhere(const tv_secret_api *a, SecretService *s, const char *path, int in_default,
                               void *context, GError **error) {
    (void)error;
    if (in_default) return 0;
    GError *failed = NULL;
    SecretItem *item = a->secret_item_new_for_dbus_path_sync(s, path, SECRET_ITEM_NONE, NULL, &failed);
    if (item && a->secret_item_delete_sync(item, NULL, &failed)) (*(int *)context)++;
    if (item) a->g_object_unref(item);
    a->g_clear_error(&failed);
    return 0;
}

/* The item in the default collection given the new secret (context):
   1 when done, -1 when it failed. */
static int tv_set_in_default(const tv_secret_api *a, SecretService *s, const char *path, int in_default,
                             void *context, GError **error) {
    if (!in_default) return 0;
    SecretItem *item = a->secret_item_new_for_dbus_path_sync(s, path, SECRET_ITEM_NONE, NULL, error);
    if (!item) return -1;
    SecretValue *value = a->secret_value_new(context, -1, "text/plain");
    int r = a->secret_item_set_secret_sync(item, value, NULL, error) ? 1 : -1;
    a->secret_value_unref(value);
    a->g_object_unref(item);
    return r;
}

/* After a write to the default collection: deletes the unlocked items for
   service+account in every other collection, so that one credential is one
   item. An item whose deletion would need a prompt is left. Returns how many
   were deleted; -1 with *message on failure. */
int tv_prune_copies(const char *service, const char *account, const char *const *types, char **message) {
    const tv_secret_api *a = tv_secret_lib();
    if (!a) { tv_no_library(message); return -1; }
    GError *error = NULL;
    SecretService *s = tv_service(a, &error);
    if (!s) { tv_take_error(a, &error, message); return -1; }
    int removed = 0, r = 0;
    for (; *types && r >= 0; types++)
        r = tv_visit_items(a, s, tv_ours_query(a, service, account, *types), tv_delete_elsewhere, &removed, &error);
    a->g_object_unref(s);
    if (r < 0) { tv_take_error(a, &error, message); return -1; }
    return removed;
}

/* The item in the default collection with exactly these attributes, given
   the new secret. 1: done; 0: there is none (or it is locked); -1: failed. */
static int tv_set_existing(const tv_secret_api *a, const char *service, const char *account, const char *type,
                           const char *secret, GError **error) {
    SecretService *s = tv_service(a, error);
    if (!s) return -1;
    int r = tv_visit_items(a, s, tv_ours_query(a, service, account, type), tv_set_in_default, (void *)secret, error);
    a->g_object_unref(s);
    return r;
}

/* Stores the secret (NUL-terminated text); first removes items of other types
   for the same service+account, which would otherwise stay beside it. 1: ok. */
int tv_store(const char *service, const char *account, const char *type,
                           const char *const *other_types, const char *label, const char *secret, char **message) {
    const tv_secret_api *a = tv_secret_lib();
    if (!a) { tv_no_library(message); return 0; }
    GError *error = NULL;
    /* Store first, then remove the items of other types: a reader never finds
       none. An item already there is given its new secret (SetSecret); only a
       new one is created: KeePassXC asks its user before it lets CreateItem
       replace an item (docs/config.md, "KeePassXC"). */
    int set = tv_set_existing(a, service, account, type, secret, &error);
    if (set < 0) { tv_take_error(a, &error, message); return 0; }
    if (set == 0) {
        GHashTable *attrs = tv_attributes(a, service, account, type);
        gboolean ok = a->secret_password_storev_sync(tv_schema(), attrs, SECRET_COLLECTION_DEFAULT, label, secret, NULL, &error);
        a->g_hash_table_unref(attrs);
        if (!ok || error) { tv_take_error(a, &error, message); return 0; }
    }
    for (; *other_types; other_types++) {
        GHashTable *others = tv_attributes(a, service, account, *other_types);
        a->secret_password_clearv_sync(tv_schema(), others, NULL, &error);
        a->g_hash_table_unref(others);
        if (error) { tv_take_error(a, &error, message); return 0; }
    }
    return 1;
}

/* Deletes tokenvault's items for service+account, of each of `types`. 1:
   some deleted, 0: none, -1: failed. */
int tv_clear(const char *service, const char *account, const char *const *types, char **message) {
    const tv_secret_api *a = tv_secret_lib();
    if (!a) { tv_no_library(message); return -1; }
    GError *error = NULL;
    int removed = 0;
    for (; *types && !error; types++) {
        GHashTable *attrs = tv_attributes(a, service, account, *types);
        while (a->secret_password_clearv_sync(tv_schema(), attrs, NULL, &error)) removed = 1;
        a->g_hash_table_unref(attrs);
    }
    if (error) { tv_take_error(a, &error, message); return -1; }
    return removed;
}

/* Calls back for every item of the given type. With load_secrets it unlocks and
   loads the secrets; without, it never prompts and the secret passed is NULL.
   1: ok, 0: failed (*message). */
int tv_search(const char *type, const char *const *types, int load_secrets, void *context, tv_item_callback callback,
              char **message) {
    const tv_secret_api *a = tv_secret_lib();
    if (!a) { tv_no_library(message); return 0; }
    GError *error = NULL;
    GHashTable *attrs = tv_attributes(a, NULL, NULL, type);
    SecretSearchFlags flags = load_secrets ? (SECRET_SEARCH_ALL | SECRET_SEARCH_UNLOCK | SECRET_SEARCH_LOAD_SECRETS) : SECRET_SEARCH_ALL;
    GList *found = a->secret_password_searchv_sync(tv_lookup_schema(), attrs, flags, NULL, &error);
    a->g_hash_table_unref(attrs);
    if (error) { tv_take_error(a, &error, message); return 0; }
    int undecodable = 0;
    for (GList *n = found; n; n = n->next) {
        SecretRetrievable *item = n->data;
        GHashTable *ia = a->secret_retrievable_get_attributes(item);
        const char *service = ia ? a->g_hash_table_lookup(ia, "service") : NULL;
        const char *account = ia ? a->g_hash_table_lookup(ia, "account") : NULL;
        int ours = tv_attributes_ours(a, ia, types);
        if (service && account && !load_secrets) {
            callback(context, service, account, NULL, ours);
        } else if (service && account) {
            SecretValue *value = a->secret_retrievable_retrieve_secret_sync(item, NULL, &error);
            if (value) {
                char *secret = a->secret_value_unref_to_password(value, NULL);
                if (secret) {
                    callback(context, service, account, secret, ours);
                    a->secret_password_free(secret);
                }
            } else {
                /* Ours, and libsecret could not decrypt it ("Received invalid secret",
                   its protocol error): tv_decode_text. Anything else: passed over. */
                if (ours && (!error || a->g_error_matches(error, a->secret_error_get_quark(), SECRET_ERROR_PROTOCOL)))
                    undecodable = 1;
                a->g_clear_error(&error);
            }
        }
        if (ia) a->g_hash_table_unref(ia);
    }
    a->g_list_free_full(found, a->g_object_unref);
    if (undecodable) {
        *message = a->g_strdup(TV_SECRET_UNDECODABLE);
        return 0;
    }
    return 1;
}
