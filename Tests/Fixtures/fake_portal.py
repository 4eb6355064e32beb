#!/usr/bin/python3
"""A stand-in XDG desktop portal on a session bus, as a desktop session has
one: org.freedesktop.portal.Desktop at /org/freedesktop/portal/desktop with
org.freedesktop.portal.OpenURI.OpenURI(parent_window, uri, options). Each URI
asked for is added to LOG (a line each), then opened as a browser would:
browser.sh, the user approving at once.

Usage: fake_portal.py BUS_ADDRESS LOG; prints "port 0" once it owns its name."""
import os
import subprocess
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

address, log = sys.argv[1], sys.argv[2]
browser = os.path.join(os.path.dirname(os.path.abspath(__file__)), "browser.sh")
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(address)


class Portal(dbus.service.Object):
    @dbus.service.method("org.freedesktop.portal.OpenURI", in_signature="ssa{sv}", out_signature="o")
    def OpenURI(self, parent_window, uri, options):
        with open(log, "a") as f:
            f.write(str(uri) + "\n")
        subprocess.Popen([browser, str(uri)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        return dbus.ObjectPath("/org/freedesktop/portal/desktop/request/1/tokenvault")


name = dbus.service.BusName("org.freedesktop.portal.Desktop", bus)
portal = Portal(bus, "/org/freedesktop/portal/desktop")
print("port 0", flush=True)
GLib.MainLoop().run()
