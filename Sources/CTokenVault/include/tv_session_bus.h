/* The session bus's other services (session_bus.c), through GIO loaded on
 * first use. */
#ifndef TV_SESSION_BUS_H
#define TV_SESSION_BUS_H

/* A desktop notification (org.freedesktop.Notifications on the session bus)
   from tokenvault: 1 when a notification daemon took it. */
int tv_notify(const char *summary, const char *body, int timeout_ms);

/* 1 when `name` has an owner on the session bus or can be started there. */
int tv_bus_offers(const char *name, int timeout_ms);
/* Asks the XDG desktop portal (org.freedesktop.portal.OpenURI) to open
   `uri` in the user's browser; 1 when the portal took the request. */
int tv_portal_open_uri(const char *uri, int timeout_ms);
/* The systemd user manager's environment (its Environment property), one
   NAME=VALUE a line; NULL when there is none (free with free()). */
char *tv_user_manager_environment(int timeout_ms);

#endif
