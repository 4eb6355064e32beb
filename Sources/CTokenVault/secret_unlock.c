/* The default collection's lock (tv_secret.h), and the desktop providers'
 * ways with it: KWallet's collection reported locked while its wallet is
 * open; the keyring's own prompt for the rest. */
#include "secret_shared.h"
#include <string.h>

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
    const tv_secret_api *a = tv_secret_lib();
    if (!a) return -1;
    SecretCollection *c = tv_default_collection(a, NULL);
    if (c == NULL) return -1;
    int locked = a->secret_collection_get_locked(c) ? 1 : 0;
    if (label) *label = a->secret_collection_get_label(c);
    a->g_object_unref(c);
    return locked;
}

/* Unlocks the default collection where that asks nobody: KWallet reports a
   wallet's collection locked until a Secret Service client unlocks it, though
   the wallet is open (pam_kwallet5 opens it at login), and its unlock prompt
   then completes without a dialog. Other providers' unlock prompts ask their
   user, and are not run here. 1: unlocked; 0: it needs its user; -1: no answer. */
int tv_unlock_quietly(void) {
    const tv_secret_api *a = tv_secret_lib();
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
    const tv_secret_api *a = tv_secret_lib();
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
