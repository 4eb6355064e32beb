/* The glue between Swift and libsecret (SecretServiceStore): libsecret, and
 * with it GLib, GIO and libgcrypt, is loaded on first use through the shared
 * loader; Swift sees only the tv_* functions of tv_secret.h. */
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
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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
    X(g_object_ref) X(g_type_check_instance_is_a) X(secret_service_get_type)

/* The loaded API, or NULL when libsecret cannot be loaded. */
TV_DL_API(tv_secret_api, TV_SECRET_FUNCS, "libsecret-1.so.0", tv_api)

int tv_secret_library_available(void) { return tv_api() != NULL; }

/* tokenvault's schema: what it writes, replaces and deletes carries it
   (docs/security.md, "Other applications' secrets"). */
#define TV_SCHEMA_NAME "io.tokenvault.Credential"

#define TV_SCHEMA(flags) {                                   \
        TV_SCHEMA_NAME, (flags),                                \
        {                                                       \
            { "service", SECRET_SCHEMA_ATTRIBUTE_STRING },      \
            { "account", SECRET_SCHEMA_ATTRIBUTE_STRING },      \
            { "type", SECRET_SCHEMA_ATTRIBUTE_STRING },         \
            { NULL, 0 },                                        \
        }                                                       \
    }

/* Schema io.tokenvault.Credential. DONT_MATCH_NAME so that items stored with
   `secret-tool store service HOST account NAME type token` are found too:
   used to read, never to change or delete. */
static const SecretSchema *tv_lookup_schema(void) {
    static const SecretSchema schema = TV_SCHEMA(SECRET_SCHEMA_DONT_MATCH_NAME);
    return &schema;
}

/* The same schema, matching xdg:schema: tokenvault's own items alone, the
   only ones it stores, replaces or deletes. */
static const SecretSchema *tv_schema(void) {
    static const SecretSchema schema = TV_SCHEMA(SECRET_SCHEMA_NONE);
    return &schema;
}

/* An attribute table owning copies of the values (the arguments may be
   temporaries); NULL values are left out. */
static GHashTable *tv_attributes(const tv_secret_api *a, const char *service, const char *account, const char *type) {
    GHashTable *h = a->g_hash_table_new_full(a->g_str_hash, a->g_str_equal, NULL, a->g_free);
    if (service) a->g_hash_table_insert(h, (gpointer)"service", a->g_strdup(service));
    if (account) a->g_hash_table_insert(h, (gpointer)"account", a->g_strdup(account));
    if (type) a->g_hash_table_insert(h, (gpointer)"type", a->g_strdup(type));
    return h;
}

/* On failure these set *message to a newly allocated text (tv_free). */
static void tv_take_error(const tv_secret_api *a, GError **error, char **message) {
    /* A call D-Bus gave up on (its 25 s default) says so in words the caller
       recognises, whatever the locale of GLib's own message: the provider
       may still hold it (a dialog), which is not a provider that is gone. */
    if (message && *error && a->g_error_matches(*error, a->g_io_error_quark(), G_IO_ERROR_TIMED_OUT)) {
        *message = a->g_strdup(TV_SECRET_NO_ANSWER);
    } else if (message) {
        *message = a->g_strdup(*error ? (*error)->message : "unknown error");
    }
    a->g_clear_error(error);
}

static char *tv_no_library(char **message) {
    if (message) *message = strdup(library.error[0] ? library.error : "libsecret-1.so.0 cannot be loaded");
    return NULL;
}

/* Frees what the functions here return: messages, attributes. */
void tv_free(void *p) {
    const tv_secret_api *a = tv_api();
    if (a) a->g_free(p); else free(p);  /* without libsecret, messages come from strdup */
}

/* Secrets are freed (and wiped) in libsecret's non-pageable memory. */
void tv_password_free(char *p) {
    const tv_secret_api *a = tv_api();
    if (a && p) a->secret_password_free(p);
}

/* secret_backend_get and its _finish, looked up apart from the rest: a
   libsecret without them (< 0.19) still serves every other call. */
typedef struct {
    __typeof__(&secret_backend_get_finish) finish;
    SecretBackend *backend;
    int done;
} tv_prepare_state;

static void tv_prepared(GObject *source, GAsyncResult *result, gpointer data) {
    (void)source;
    tv_prepare_state *state = data;
    GError *error = NULL;
    state->backend = state->finish(result, &error);
    if (error) tv_api()->g_clear_error(&error);
    state->done = 1;
}

/* What the head start prepared (tv_secret_prepare), held until a reconnect
   drops it. secret_backend_get keeps an instance of its own, apart from the
   one secret_service_get shares: a call that took the other would connect
   and negotiate a second session (the 4.5 ms docs/benchmarks.md names). */
static SecretBackend *tv_prepared_backend;

/* libsecret's service with an open session, for a call of ours: the one the
   head start prepared where there is one (it is a SecretService unless
   SECRET_BACKEND names another backend), else secret_service_get's. */
static SecretService *tv_service(const tv_secret_api *a, GError **error) {
    SecretBackend *prepared = __atomic_load_n(&tv_prepared_backend, __ATOMIC_ACQUIRE);
    if (prepared && a->g_type_check_instance_is_a((GTypeInstance *)prepared, a->secret_service_get_type()))
        return (SecretService *)(a->g_object_ref)(prepared);
    return a->secret_service_get_sync(SECRET_SERVICE_OPEN_SESSION, NULL, error);
}

/* libsecret and its service with the bus it talks on, for the calls that
   send their own D-Bus messages on libsecret's session; NULL with *message
   set when either cannot be had. */
static SecretService *tv_open(const tv_secret_api **a, GDBusConnection **bus, char **message) {
    *a = tv_api();
    if (!*a) { tv_no_library(message); return NULL; }
    GError *error = NULL;
    SecretService *s = tv_service(*a, &error);
    if (!s) { tv_take_error(*a, &error, message); return NULL; }
    *bus = (*a)->g_dbus_proxy_get_connection((GDBusProxy *)s);
    return s;
}

int tv_secret_prepare(void) {
    const tv_secret_api *a = tv_api();
    if (!a) return 0;
    void *h = dlopen("libsecret-1.so.0", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) return 0;
    __typeof__(&secret_backend_get) get = dlsym(h, "secret_backend_get");
    tv_prepare_state state = { dlsym(h, "secret_backend_get_finish"), NULL, 0 };
    dlclose(h);  /* still open: tv_api's handle keeps it */
    if (!get || !state.finish) return 0;
    /* What libsecret's own _sync calls do: a private main context on this
       thread, iterated until the answer. */
    GMainContext *context = a->g_main_context_new();
    a->g_main_context_push_thread_default(context);
    get(SECRET_BACKEND_OPEN_SESSION, NULL, tv_prepared, &state);
    while (!state.done) a->g_main_context_iteration(context, TRUE);
    a->g_main_context_pop_thread_default(context);
    a->g_main_context_unref(context);
    if (state.backend == NULL) return 0;
    __atomic_store_n(&tv_prepared_backend, state.backend, __ATOMIC_RELEASE);
    return 1;
}

/* Connects and opens a session: the probe. 1: ok, 0: failed (*message). */
int tv_service_open(char **message) {
    const tv_secret_api *a = tv_api();
    if (!a) { tv_no_library(message); return 0; }
    GError *error = NULL;
    SecretService *s = tv_service(a, &error);
    if (s == NULL) { tv_take_error(a, &error, message); return 0; }
    a->g_object_unref(s);
    return 1;
}

/* The default collection, or NULL. */
static SecretCollection *tv_default_collection(const tv_secret_api *a, SecretService **service) {
    GError *error = NULL;
    SecretService *s = a->secret_service_get_sync(SECRET_SERVICE_NONE, NULL, &error);
    if (s == NULL) { a->g_clear_error(&error); return NULL; }
    SecretCollection *c = a->secret_collection_for_alias_sync(s, SECRET_COLLECTION_DEFAULT, SECRET_COLLECTION_NONE, NULL, &error);
    if (c == NULL) { a->g_clear_error(&error); a->g_object_unref(s); return NULL; }
    if (service) *service = s; else a->g_object_unref(s);
    return c;
}

int tv_default_collection_locked(void) { return tv_default_collection_state(NULL); }

int tv_default_collection_state(char **label) {
    const tv_secret_api *a = tv_api();
    if (!a) return -1;
    SecretCollection *c = tv_default_collection(a, NULL);
    if (c == NULL) return -1;
    int locked = a->secret_collection_get_locked(c) ? 1 : 0;
    if (label) *label = a->secret_collection_get_label(c);
    a->g_object_unref(c);
    return locked;
}

/* The unique name owning a well-known one, or NULL (g_free). */
static char *tv_name_owner(const tv_secret_api *a, GDBusConnection *bus, const char *name) {
    GError *error = NULL;
    GVariant *r = a->g_dbus_connection_call_sync(
        bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
        a->g_variant_new("(s)", name), (const GVariantType *)"(s)", G_DBUS_CALL_FLAGS_NONE, 1000, NULL, &error);
    if (!r) { a->g_clear_error(&error); return NULL; }
    char *owner = NULL;
    a->g_variant_get(r, "(s)", &owner);
    a->g_variant_unref(r);
    return owner;
}

/* Unlocks the default collection where that asks nobody: KWallet reports a
   wallet's collection locked until a Secret Service client unlocks it, though
   the wallet is open (pam_kwallet5 opens it at login), and its unlock prompt
   then completes without a dialog. Other providers' unlock prompts ask their
   user, and are not run here. 1: unlocked; 0: it needs its user; -1: no answer. */
int tv_unlock_quietly(void) {
    const tv_secret_api *a = tv_api();
    if (!a) return -1;
    GError *error = NULL;
    GDBusConnection *bus = a->g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
    if (!bus) { a->g_clear_error(&error); return -1; }
    char *secrets = tv_name_owner(a, bus, "org.freedesktop.secrets");
    char *kwallet = tv_name_owner(a, bus, "org.kde.kwalletd5");
    int same = secrets && kwallet && strcmp(secrets, kwallet) == 0;
    a->g_free(secrets);
    a->g_free(kwallet);
    char *label = NULL;
    int open = 0;
    if (same && tv_default_collection_state(&label) == 1 && label) {
        GVariant *r = a->g_dbus_connection_call_sync(
            bus, "org.kde.kwalletd5", "/modules/kwalletd5", "org.kde.KWallet", "isOpen", a->g_variant_new("(s)", label),
            (const GVariantType *)"(b)", G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
        if (r) { gboolean b = FALSE; a->g_variant_get(r, "(b)", &b); open = b ? 1 : 0; a->g_variant_unref(r); }
        a->g_clear_error(&error);
    }
    a->g_free(label);
    a->g_object_unref(bus);
    if (!open) return 0;
    return tv_unlock_default_collection(NULL) == 1 ? 1 : 0;
}

int tv_unlock_default_collection(char **message) {
    const tv_secret_api *a = tv_api();
    if (!a) { tv_no_library(message); return -1; }
    SecretService *s = NULL;
    SecretCollection *c = tv_default_collection(a, &s);
    if (c == NULL) { if (message) *message = a->g_strdup("there is no default collection"); return -1; }
    GError *error = NULL;
    GList *objects = a->g_list_append(NULL, c);
    GList *unlocked = NULL;
    /* libsecret runs the keyring's own prompt and waits for its answer. */
    a->secret_service_unlock_sync(s, objects, NULL, &unlocked, &error);
    int result = error ? -1 : (unlocked != NULL ? 1 : 0);
    if (error) tv_take_error(a, &error, message);
    if (unlocked) a->g_list_free_full(unlocked, a->g_object_unref);
    a->g_list_free(objects);
    a->g_object_unref(c);
    a->g_object_unref(s);
    return result;
}

/* The process id owning org.freedesktop.secrets on the session bus, or 0. */
unsigned int tv_secrets_owner_pid(int timeout_ms) {
    const tv_secret_api *a = tv_api();
    if (!a) return 0;
    GError *error = NULL;
    GDBusConnection *bus = a->g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
    if (bus == NULL) { a->g_clear_error(&error); return 0; }
    GVariant *r = a->g_dbus_connection_call_sync(
        bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
        "GetConnectionUnixProcessID", a->g_variant_new("(s)", "org.freedesktop.secrets"),
        (const GVariantType *)"(u)", G_DBUS_CALL_FLAGS_NONE, timeout_ms, NULL, &error);
    a->g_object_unref(bus);
    if (r == NULL) { a->g_clear_error(&error); return 0; }
    guint32 pid = 0;
    a->g_variant_get(r, "(u)", &pid);
    a->g_variant_unref(r);
    return pid;
}

/* The secret stored for service+account (tv_password_free), or NULL: then
   *message is set on failure and left NULL when there is no such item. */
char *tv_lookup(const char *service, const char *account, int foreign_too, int *foreign, char **message) {
    *foreign = 0;
    const tv_secret_api *a = tv_api();
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

static GVariant *tv_anyones_query(const tv_secret_api *a, const char *service, const char *account) {
    return a->g_variant_new_parsed("({'service': %s, 'account': %s},)", service, account);
}

/* SearchItems with `query` (floating): its answer, the unlocked and the locked
   items' paths ((aoao)), or NULL with *error. */
static GVariant *tv_search_items(const tv_secret_api *a, GDBusConnection *bus, GVariant *query, GError **error) {
    return a->g_dbus_connection_call_sync(bus, "org.freedesktop.secrets", "/org/freedesktop/secrets",
                                          "org.freedesktop.Secret.Service", "SearchItems", query,
                                          (const GVariantType *)"(aoao)", G_DBUS_CALL_FLAGS_NONE, -1, NULL, error);
}

/* The secret of the item at `path`, fetched with one GetSecrets call on
   libsecret's session; NULL when that item is gone, locked or not text. */
static char *tv_item_secret(const tv_secret_api *a, SecretService *s, GDBusConnection *bus, const char *path) {
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
    SecretValue *value = a->secret_service_decode_dbus_secret(s, encoded);
    a->g_variant_unref(encoded);
    return value ? a->secret_value_unref_to_password(value, NULL) : NULL;
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
    char *secret = known ? tv_item_secret(a, s, bus, known) : NULL;
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
            secret = tv_item_secret(a, s, bus, first);
            if (secret) *found = a->g_strdup(first);
        }
        a->g_variant_unref(unlocked);
        a->g_variant_unref(r);
    }
    a->g_object_unref(s);
    return secret;
}

/* The unique name that owned org.freedesktop.secrets when last looked at. */
static char *tv_owner;

/* Whether the Secret Service's owner changed since the last call (a keyring
   restarted, KeePassXC or kwalletd started again): then libsecret's shared
   service, its session and connection, are dropped, so the next call opens
   new ones on the daemon that answers now. 1: dropped; 0: the same owner. */
int tv_secret_reconnect(void) {
    const tv_secret_api *a = tv_api();
    if (!a) return 0;
    GError *error = NULL;
    GDBusConnection *bus = a->g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
    if (!bus) { a->g_clear_error(&error); return 0; }
    char *owner = tv_name_owner(a, bus, "org.freedesktop.secrets");
    a->g_object_unref(bus);
    /* The agent asks from several threads at once. */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    /* The first time there is no earlier owner to compare with: taken as a
       change, so a call that failed is made once more on a new session
       (kwalletd5 refuses some of libsecret's session keys at random). */
    int changed = tv_owner == NULL || strcmp(tv_owner, owner ? owner : "") != 0;
    if (changed) {
        a->g_free(tv_owner);
        tv_owner = a->g_strdup(owner ? owner : "");
        a->secret_service_disconnect();
        SecretBackend *prepared = __atomic_exchange_n(&tv_prepared_backend, NULL, __ATOMIC_ACQ_REL);
        if (prepared) a->g_object_unref(prepared);
    }
    pthread_mutex_unlock(&lock);
    a->g_free(owner);
    return changed;
}

/* 1 when a process owns org.freedesktop.secrets on the session bus now (it
   may hold a call: a prompt pending, a database waiting to be unlocked), 0
   when none does, -1 when the bus itself does not say. */
int tv_secret_owned(void) {
    const tv_secret_api *a = tv_api();
    if (!a) return -1;
    GError *error = NULL;
    GDBusConnection *bus = a->g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
    if (!bus) { a->g_clear_error(&error); return -1; }
    GVariant *r = a->g_dbus_connection_call_sync(
        bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
        a->g_variant_new("(s)", "org.freedesktop.secrets"), (const GVariantType *)"(b)", G_DBUS_CALL_FLAGS_NONE, 1000,
        NULL, &error);
    a->g_object_unref(bus);
    if (!r) { a->g_clear_error(&error); return -1; }
    gboolean owned = FALSE;
    a->g_variant_get(r, "(b)", &owned);
    a->g_variant_unref(r);
    return owned ? 1 : 0;
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
    int found = 0;
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
            SecretValue *value = a->secret_service_decode_dbus_secret(s, encoded);
            a->g_variant_unref(encoded);
            char *secret = value ? a->secret_value_unref_to_password(value, NULL) : NULL;
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
    const tv_secret_api *a = tv_api();
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
    const tv_secret_api *a = tv_api();
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
    const tv_secret_api *a = tv_api();
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

/* Whether the item's attributes are tokenvault's: its schema and one of `types`. */
static int tv_attributes_ours(const tv_secret_api *a, GHashTable *attributes, const char *const *types) {
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

/* Calls back for every item of the given type. With load_secrets it unlocks and
   loads the secrets; without, it never prompts and the secret passed is NULL.
   1: ok, 0: failed (*message). */
int tv_search(const char *type, const char *const *types, int load_secrets, void *context, tv_item_callback callback,
              char **message) {
    const tv_secret_api *a = tv_api();
    if (!a) { tv_no_library(message); return 0; }
    GError *error = NULL;
    GHashTable *attrs = tv_attributes(a, NULL, NULL, type);
    SecretSearchFlags flags = load_secrets ? (SECRET_SEARCH_ALL | SECRET_SEARCH_UNLOCK | SECRET_SEARCH_LOAD_SECRETS) : SECRET_SEARCH_ALL;
    GList *found = a->secret_password_searchv_sync(tv_lookup_schema(), attrs, flags, NULL, &error);
    a->g_hash_table_unref(attrs);
    if (error) { tv_take_error(a, &error, message); return 0; }
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
                a->g_clear_error(&error);
            }
        }
        if (ia) a->g_hash_table_unref(ia);
    }
    a->g_list_free_full(found, a->g_object_unref);
    return 1;
}
