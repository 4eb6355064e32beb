/* What the glue to libsecret shares between its files (internal to this
 * target): the loaded API, tokenvault's schema, and the helpers every call
 * uses. secret.c: the library and the session; secret_unlock.c: the default
 * collection's lock, and the desktop providers' ways with it;
 * secret_items.c: tokenvault's own items; secret_others.c: other
 * applications' items, which are read and never changed. */
#ifndef TV_SECRET_SHARED_H
#define TV_SECRET_SHARED_H
#include "tv_secret.h"
#include "loader.h"
#include <libsecret/secret.h>
/* SecretBackend (libsecret >= 0.19) is stable API that secret.h leaves out;
   the D-Bus path functions (libsecret >= 0.18, unchanged since) let an item be
   read in one GetSecrets call on libsecret's own session. */
#define __SECRET_INSIDE_HEADER__
#include <libsecret/secret-backend.h>
#include <libsecret/secret-paths.h>
#undef __SECRET_INSIDE_HEADER__

#define TV_SECRET_FUNCS(X) \
    X(g_free) X(g_strdup) X(g_str_hash) X(g_str_equal) X(g_hash_table_new_full) \
    X(g_hash_table_insert) X(g_hash_table_lookup) X(g_hash_table_unref) X(g_object_unref) \
    X(g_clear_error) X(g_error_matches) X(g_io_error_quark) X(g_list_free_full) X(g_bus_get_sync) X(g_dbus_connection_call_sync) \
    X(g_variant_new) X(g_variant_get) X(g_variant_unref) \
    X(secret_service_get_sync) X(secret_collection_for_alias_sync) X(secret_collection_get_locked) \
    X(secret_collection_get_label) X(secret_service_unlock_sync) X(g_list_append) X(g_list_free) \
    X(secret_password_lookupv_sync) X(secret_password_storev_sync) X(secret_password_clearv_sync) \
    X(secret_password_searchv_sync) X(secret_password_free) X(secret_retrievable_get_attributes) \
    X(secret_retrievable_retrieve_secret_sync) X(secret_value_unref_to_password) \
    X(g_main_context_new) X(g_main_context_push_thread_default) X(g_main_context_pop_thread_default) \
    X(g_main_context_iteration) X(g_main_context_unref) X(g_variant_new_parsed) \
    X(g_dbus_proxy_get_connection) X(secret_service_get_session_dbus_path) X(secret_service_decode_dbus_secret) \
    X(g_variant_n_children) X(g_variant_get_child) X(g_variant_get_child_value) X(g_variant_lookup_value) \
    X(g_variant_ref_sink) X(secret_service_disconnect) X(secret_item_new_for_dbus_path_sync) \
    X(secret_item_set_secret_sync) X(secret_value_new) X(secret_value_unref) X(secret_item_delete_sync) \
    X(g_object_ref) X(g_type_check_instance_is_a) X(secret_service_get_type) X(secret_error_get_quark)

TV_DL_TYPE(tv_secret_api, TV_SECRET_FUNCS)

/* The loaded API, or NULL when libsecret cannot be loaded. */
const tv_secret_api *tv_secret_lib(void);

/* tokenvault's schema: what it writes, replaces and deletes carries it
   (docs/security.md, "Other applications' secrets"). */
#define TV_SCHEMA_NAME "io.tokenvault.Credential"

/* Schema io.tokenvault.Credential. DONT_MATCH_NAME so that items stored with
   `secret-tool store service HOST account NAME type token` are found too:
   used to read, never to change or delete. */
const SecretSchema *tv_lookup_schema(void);
/* The same schema, matching xdg:schema: tokenvault's own items alone, the
   only ones it stores, replaces or deletes. */
const SecretSchema *tv_schema(void);

/* An attribute table owning copies of the values (the arguments may be
   temporaries); NULL values are left out. */
GHashTable *tv_attributes(const tv_secret_api *a, const char *service, const char *account, const char *type);
/* On failure these set *message to a newly allocated text (tv_free). */
void tv_take_error(const tv_secret_api *a, GError **error, char **message);
char *tv_no_library(char **message);
/* libsecret's service with an open session, for a call of ours. */
SecretService *tv_service(const tv_secret_api *a, GError **error);
/* libsecret and its service with the bus it talks on, for the calls that
   send their own D-Bus messages on libsecret's session; NULL with *message
   set when either cannot be had. */
SecretService *tv_open(const tv_secret_api **a, GDBusConnection **bus, char **message);
/* The unique name owning a well-known one, or NULL (g_free). */
char *tv_name_owner(const tv_secret_api *a, GDBusConnection *bus, const char *name);
/* SearchItems with `query` (floating): its answer, the unlocked and the locked
   items' paths ((aoao)), or NULL with *error. */
GVariant *tv_search_items(const tv_secret_api *a, GDBusConnection *bus, GVariant *query, GError **error);
/* A SearchItems argument (floating) for anyone's items of service+account. */
GVariant *tv_anyones_query(const tv_secret_api *a, const char *service, const char *account);
/* The secret of the item at `path`, fetched with one GetSecrets call on
   libsecret's session; NULL when that item is gone, locked or not text, or
   when it could not be decrypted (*undecodable set). */
char *tv_item_secret(const tv_secret_api *a, SecretService *s, GDBusConnection *bus, const char *path,
                     int *undecodable);
/* Whether the item's attributes are tokenvault's: its schema and one of `types`. */
int tv_attributes_ours(const tv_secret_api *a, GHashTable *attributes, const char *const *types);

#endif
