/* The session bus's other services, called through GIO (loaded with
 * libsecret on first use, by the shared loader): desktop notifications, the
 * XDG desktop portal, D-Bus name lookups, the systemd user manager's
 * environment. Swift sees the tv_* functions of tv_session_bus.h. */
#include "tv_session_bus.h"
#include "loader.h"
#include <gio/gio.h>
#include <stdlib.h>
#include <string.h>

#define TV_BUS_FUNCS(X) \
    X(g_bus_get_sync) X(g_dbus_connection_call_sync) X(g_variant_new_parsed) X(g_variant_unref) \
    X(g_variant_ref_sink) X(g_variant_get) X(g_variant_get_child_value) X(g_variant_n_children) \
    X(g_variant_get_child) X(g_object_unref) X(g_clear_error)

/* GIO's calls, from libsecret's library (it links GIO); NULL when it cannot be loaded. */
TV_DL_API(tv_bus_api, TV_BUS_FUNCS, "libsecret-1.so.0", tv_bus)

int tv_notify(const char *summary, const char *body, int timeout_ms) {
    const tv_bus_api *a = tv_bus();
    if (!a) return 0;
    GError *error = NULL;
    GDBusConnection *bus = a->g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
    if (!bus) {
        a->g_clear_error(&error);
        return 0;
    }
    GVariant *parameters = a->g_variant_new_parsed(
        "('tokenvault', uint32 0, 'dialog-password', %s, %s, @as [], @a{sv} {}, -1)", summary, body);
    GVariant *reply = a->g_dbus_connection_call_sync(
        bus, "org.freedesktop.Notifications", "/org/freedesktop/Notifications", "org.freedesktop.Notifications",
        "Notify", parameters, NULL, G_DBUS_CALL_FLAGS_NONE, timeout_ms, NULL, &error);
    a->g_object_unref(bus);
    if (!reply) {
        a->g_clear_error(&error);
        return 0;
    }
    a->g_variant_unref(reply);
    return 1;
}

/* One call on the session bus; the reply, or NULL. */
static GVariant *tv_session_call(const tv_bus_api *a, const char *name, const char *path, const char *interface,
                                 const char *method, GVariant *parameters, int timeout_ms) {
    GError *error = NULL;
    GDBusConnection *bus = a->g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
    if (!bus) {
        a->g_clear_error(&error);
        if (parameters) a->g_variant_unref(a->g_variant_ref_sink(parameters));
        return NULL;
    }
    GVariant *reply = a->g_dbus_connection_call_sync(bus, name, path, interface, method, parameters, NULL,
                                                     G_DBUS_CALL_FLAGS_NONE, timeout_ms, NULL, &error);
    a->g_object_unref(bus);
    if (!reply) a->g_clear_error(&error);
    return reply;
}

int tv_bus_offers(const char *name, int timeout_ms) {
    const tv_bus_api *a = tv_bus();
    if (!a) return 0;
    GVariant *owned = tv_session_call(a, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                      "NameHasOwner", a->g_variant_new_parsed("(%s,)", name), timeout_ms);
    int found = 0;
    if (owned) {
        gboolean has = FALSE;
        a->g_variant_get(owned, "(b)", &has);
        a->g_variant_unref(owned);
        if (has) return 1;
    }
    GVariant *names = tv_session_call(a, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                      "ListActivatableNames", NULL, timeout_ms);
    if (!names) return 0;
    GVariant *list = a->g_variant_get_child_value(names, 0);
    gsize n = a->g_variant_n_children(list);
    for (gsize i = 0; i < n && !found; i++) {
        const char *each = NULL;
        a->g_variant_get_child(list, i, "&s", &each);
        if (each && strcmp(each, name) == 0) found = 1;
    }
    a->g_variant_unref(list);
    a->g_variant_unref(names);
    return found;
}

int tv_portal_open_uri(const char *uri, int timeout_ms) {
    const tv_bus_api *a = tv_bus();
    if (!a) return 0;
    GVariant *reply = tv_session_call(a, "org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop",
                                      "org.freedesktop.portal.OpenURI", "OpenURI",
                                      a->g_variant_new_parsed("('', %s, @a{sv} {})", uri), timeout_ms);
    if (!reply) return 0;
    a->g_variant_unref(reply);
    return 1;
}

char *tv_user_manager_environment(int timeout_ms) {
    const tv_bus_api *a = tv_bus();
    if (!a) return NULL;
    GVariant *reply = tv_session_call(
        a, "org.freedesktop.systemd1", "/org/freedesktop/systemd1", "org.freedesktop.DBus.Properties", "Get",
        a->g_variant_new_parsed("('org.freedesktop.systemd1.Manager', 'Environment')"), timeout_ms);
    if (!reply) return NULL;
    GVariant *boxed = a->g_variant_get_child_value(reply, 0);  /* v */
    GVariant *list = a->g_variant_get_child_value(boxed, 0);   /* as */
    gsize n = a->g_variant_n_children(list), length = 1;
    for (gsize i = 0; i < n; i++) {
        const char *each = NULL;
        a->g_variant_get_child(list, i, "&s", &each);
        length += strlen(each) + 1;
    }
    char *out = malloc(length);
    if (out) {
        out[0] = 0;
        for (gsize i = 0; i < n; i++) {
            const char *each = NULL;
            a->g_variant_get_child(list, i, "&s", &each);
            strcat(out, each);
            strcat(out, "\n");
        }
    }
    a->g_variant_unref(list);
    a->g_variant_unref(boxed);
    a->g_variant_unref(reply);
    return out;
}
