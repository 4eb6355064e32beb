#!/usr/bin/env python3
"""Makes and points gnome-keyring's collections on the session bus
(DBUS_SESSION_BUS_ADDRESS) the way a second database or a moved default
alias leaves them: a new collection created with its password through
gnome-keyring's own call (no prompt), and the `default` alias pointed at
any collection.

Usage: keyring_collections.py create LABEL   (password on stdin; prints the collection's path)
       keyring_collections.py alias PATH     (the default alias now names PATH)
       keyring_collections.py items SERVICE  (the paths of the items for SERVICE, one a line)
       keyring_collections.py pid            (the process that owns org.freedesktop.secrets)
       keyring_collections.py add COLLECTION NAME=VALUE...
                                             (another application's item: those attributes, the
                                             secret on stdin; prints its path)
       keyring_collections.py secret PATH    (the item's secret)
"""
import sys

import dbus

bus = dbus.SessionBus()
service = bus.get_object("org.freedesktop.secrets", "/org/freedesktop/secrets")
if sys.argv[1] == "create":
    password = sys.stdin.buffer.read()
    _, session = service.OpenSession("plain", dbus.String("", variant_level=1),
                                     dbus_interface="org.freedesktop.Secret.Service")
    secret = dbus.Struct((session, dbus.ByteArray(b""), dbus.ByteArray(password), "text/plain"))
    props = {"org.freedesktop.Secret.Collection.Label": dbus.String(sys.argv[2], variant_level=1)}
    path = service.CreateWithMasterPassword(
        props, secret, dbus_interface="org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface")
    print(path)
elif sys.argv[1] == "add":
    _, session = service.OpenSession("plain", dbus.String("", variant_level=1),
                                     dbus_interface="org.freedesktop.Secret.Service")
    collection = bus.get_object("org.freedesktop.secrets", sys.argv[2])
    attributes = dict(pair.split("=", 1) for pair in sys.argv[3:])
    props = {
        "org.freedesktop.Secret.Item.Label": dbus.String("another application", variant_level=1),
        "org.freedesktop.Secret.Item.Attributes": dbus.Dictionary(attributes, signature="ss", variant_level=1),
    }
    secret = dbus.Struct((session, dbus.ByteArray(b""), dbus.ByteArray(sys.stdin.buffer.read()), "text/plain"))
    item, _ = collection.CreateItem(props, secret, False, dbus_interface="org.freedesktop.Secret.Collection")
    print(item)
elif sys.argv[1] == "secret":
    _, session = service.OpenSession("plain", dbus.String("", variant_level=1),
                                     dbus_interface="org.freedesktop.Secret.Service")
    secrets = service.GetSecrets([dbus.ObjectPath(sys.argv[2])], session, dbus_interface="org.freedesktop.Secret.Service")
    sys.stdout.buffer.write(bytes(secrets[sys.argv[2]][2]))
elif sys.argv[1] == "items":
    unlocked, locked = service.SearchItems({"service": sys.argv[2]}, dbus_interface="org.freedesktop.Secret.Service")
    for path in list(unlocked) + list(locked):
        print(path)
elif sys.argv[1] == "pid":
    daemon = bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
    print(daemon.GetConnectionUnixProcessID("org.freedesktop.secrets", dbus_interface="org.freedesktop.DBus"))
elif sys.argv[1] == "alias":
    service.SetAlias("default", dbus.ObjectPath(sys.argv[2]), dbus_interface="org.freedesktop.Secret.Service")
    print(service.ReadAlias("default", dbus_interface="org.freedesktop.Secret.Service"))
