"""What keepassxc_provider.py and kwallet_provider.py share: a desktop
program's session inside DIR (its HOME, XDG directories, runtime and
temporary directories, Qt's offscreen platform: no display needed; or, with
TV_DISPLAY set, Qt's normal xcb platform on that X display, as desktops run
it, its dialogs shown) on the session bus of DBUS_SESSION_BUS_ADDRESS, and
who owns org.freedesktop.secrets there. Imported by them; not run on its own.
"""
import os

import dbus


def environment(directory):
    """The program's environment, its directories made (0700)."""
    env = {
        "HOME": directory,
        "PATH": "/usr/bin:/bin",
        "XDG_CONFIG_HOME": os.path.join(directory, "config"),
        "XDG_DATA_HOME": os.path.join(directory, "data"),
        "XDG_CACHE_HOME": os.path.join(directory, "cache"),
        "XDG_RUNTIME_DIR": os.path.join(directory, "run"),
        "TMPDIR": os.path.join(directory, "tmp"),
        "QT_QPA_PLATFORM": "offscreen",
        "DBUS_SESSION_BUS_ADDRESS": os.environ["DBUS_SESSION_BUS_ADDRESS"],
    }
    if os.environ.get("TV_DISPLAY"):
        env.update({"QT_QPA_PLATFORM": "xcb", "DISPLAY": os.environ["TV_DISPLAY"],
                    "XAUTHORITY": os.environ.get("XAUTHORITY", "")})
    for key in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR", "TMPDIR"):
        os.makedirs(env[key], mode=0o700, exist_ok=True)
    return env


def owner():
    """The pid of the process that owns org.freedesktop.secrets, or None.
    Asks the bus only, never the name: a call to the name would start
    whatever provider the bus knows of."""
    bus = dbus.SessionBus()
    daemon = bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
    try:
        return int(daemon.GetConnectionUnixProcessID("org.freedesktop.secrets", dbus_interface="org.freedesktop.DBus"))
    except dbus.exceptions.DBusException as e:
        # No owner now, whether it never had one or quit a moment ago (a check
        # first and then this call would race with a provider that is quitting).
        if e.get_dbus_name() == "org.freedesktop.DBus.Error.NameHasNoOwner":
            return None
        raise
