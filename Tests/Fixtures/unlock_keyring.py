#!/usr/bin/env python3
"""Locks or unlocks gnome-keyring's login collection on the session bus
(DBUS_SESSION_BUS_ADDRESS), the way the desktop does at login: lock through
the Secret Service API, unlock with the keyring password through
gnome-keyring's own unlock-with-password call (no prompt).

Usage: unlock_keyring.py lock|unlock [DELAY_SECONDS]   (password on stdin for unlock)
"""
import sys
import time

import dbus

action = sys.argv[1]
if len(sys.argv) > 2:
    time.sleep(float(sys.argv[2]))
bus = dbus.SessionBus()
service = bus.get_object("org.freedesktop.secrets", "/org/freedesktop/secrets")
login = dbus.ObjectPath("/org/freedesktop/secrets/collection/login")
if action == "lock":
    service.Lock([login], dbus_interface="org.freedesktop.Secret.Service")
else:
    password = sys.stdin.buffer.read()
    _, session = service.OpenSession("plain", dbus.String("", variant_level=1), dbus_interface="org.freedesktop.Secret.Service")
    secret = dbus.Struct((session, dbus.ByteArray(b""), dbus.ByteArray(password), "text/plain"))
    service.UnlockWithMasterPassword(login, secret, dbus_interface="org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface")
props = bus.get_object("org.freedesktop.secrets", login)
print("locked" if props.Get("org.freedesktop.Secret.Collection", "Locked", dbus_interface="org.freedesktop.DBus.Properties") else "unlocked")
