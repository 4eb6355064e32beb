/* The glue between Swift and libsecret (SecretServiceStore): libsecret, and
 * with it GLib, GIO and libgcrypt, is loaded on first use through the shared
 * loader; Swift sees only the tv_* functions of tv_secret.h. This file: the
 * library, and the session with the Secret Service (secret_shared.h names
 * the others). */
#include "secret_shared.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

TV_DL_LOADER(tv_secret_api, TV_SECRET_FUNCS, "libsecret-1.so.0", tv_load)

const tv_secret_api *tv_secret_lib(void) { return tv_load(); }

int tv_secret_library_available(void) { return tv_secret_lib() != NULL; }

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
const SecretSchema *tv_lookup_schema(void) {
    static const SecretSchema schema = TV_SCHEMA(SECRET_SCHEMA_DONT_MATCH_NAME);
    return &schema;
}

/* The same schema, matching xdg:schema: tokenvault's own items alone, the
   only ones it stores, replaces or deletes. */
const SecretSchema *tv_schema(void) {
    static const SecretSchema schema = TV_SCHEMA(SECRET_SCHEMA_NONE);
    return &schema;
}

/* An attribute table owning copies of the values (the arguments may be
   temporaries); NULL values are left out. */
GHashTable *tv_attributes(const tv_secret_api *a, const char *service, const char *account, const char *type) {
    GHashTable *h = a->g_hash_table_new_full(a->g_str_hash, a->g_str_equal, NULL, a->g_free);
    if (service) a->g_hash_table_insert(h, (gpointer)"service", a->g_strdup(service));
    if (account) a->g_hash_table_insert(h, (gpointer)"account", a->g_strdup(account));
    if (type) a->g_hash_table_insert(h, (gpointer)"type", a->g_strdup(type));
    return h;
}

/* On failure these set *message to a newly allocated text (tv_free). */
void tv_take_error(const tv_secret_api *a, GError **error, char **message) {
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

char *tv_no_library(char **message) {
    if (message) *message = strdup(library.error[0] ? library.error : "libsecret-1.so.0 cannot be loaded");
    return NULL;
}

/* Frees what the functions here return: messages, attributes. */
void tv_free(void *p) {
    const tv_secret_api *a = tv_secret_lib();
    if (a) a->g_free(p); else free(p);  /* without libsecret, messages come from strdup */
}

/* Secrets are freed (and wiped) in libsecret's non-pageable memory. */
void tv_password_free(char *p) {
    const tv_secret_api *a = tv_secret_lib();
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
    if (error) tv_secret_lib()->g_clear_error(&error);
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
SecretService *tv_service(const tv_secret_api *a, GError **error) {
    SecretBackend *prepared = __atomic_load_n(&tv_prepared_backend, __ATOMIC_ACQUIRE);
    if (prepared && a->g_type_check_instance_is_a((GTypeInstance *)prepared, a->secret_service_get_type()))
        return (SecretService *)(a->g_object_ref)(prepared);
    return a->secret_service_get_sync(SECRET_SERVICE_OPEN_SESSION, NULL, error);
}

/* libsecret and its service with the bus it talks on, for the calls that
   send their own D-Bus messages on libsecret's session; NULL with *message
   set when either cannot be had. */
SecretService *tv_open(const tv_secret_api **a, GDBusConnection **bus, char **message) {
    *a = tv_secret_lib();
    if (!*a) { tv_no_library(message); return NULL; }
    GError *error = NULL;
    SecretService *s = tv_service(*a, &error);
    if (!s) { tv_take_error(*a, &error, message); return NULL; }
    *bus = (*a)->g_dbus_proxy_get_connection((GDBusProxy *)s);
    return s;
}

int tv_secret_prepare(void) {
    const tv_secret_api *a = tv_secret_lib();
    if (!a) return 0;
    void *h = dlopen("libsecret-1.so.0", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) return 0;
    __typeof__(&secret_backend_get) get = dlsym(h, "secret_backend_get");
    tv_prepare_state state = { dlsym(h, "secret_backend_get_finish"), NULL, 0 };
    dlclose(h);  /* still open: tv_load's handle keeps it */
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
    const tv_secret_api *a = tv_secret_lib();
    if (!a) { tv_no_library(message); return 0; }
    GError *error = NULL;
    SecretService *s = tv_service(a, &error);
    if (s == NULL) { tv_take_error(a, &error, message); return 0; }
    a->g_object_unref(s);
    return 1;
}

/* The unique name owning a well-known one, or NULL (g_free). */
char *tv_name_owner(const tv_secret_api *a, GDBusConnection *bus, const char *name) {
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

/* The process id owning org.freedesktop.secrets on the session bus, or 0. */
unsigned int tv_secrets_owner_pid(int timeout_ms) {
    const tv_secret_api *a = tv_secret_lib();
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

/* The unique name that owned org.freedesktop.secrets when last looked at. */
static char *tv_owner;

/* Whether the Secret Service's owner changed since the last call (a keyring
   restarted, KeePassXC or kwalletd started again): then libsecret's shared
   service, its session and connection, are dropped, so the next call opens
   new ones on the daemon that answers now. 1: dropped; 0: the same owner.
   `always`: dropped whoever owns it (a session kwalletd5 refused). */
int tv_secret_reconnect(int always) {
    const tv_secret_api *a = tv_secret_lib();
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
    int changed = always || tv_owner == NULL || strcmp(tv_owner, owner ? owner : "") != 0;
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
    const tv_secret_api *a = tv_secret_lib();
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
