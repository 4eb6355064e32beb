#!/usr/bin/env python3
"""Runs Debian's KeePassXC as a user runs it, with its Secret Service
integration on, on the session bus of DBUS_SESSION_BUS_ADDRESS, inside DIR (its
HOME, configuration, runtime and temporary directories, so that no other
instance is found): no display is needed (Qt's offscreen platform).

Usage: keepassxc_provider.py make DIR NAME [bare] (password on stdin; DIR/NAME.kdbx
                                                  with a group "Secrets" exposed to the Secret Service;
                                                  bare: none exposed, as a new database has)
       keepassxc_provider.py start DIR NAME...    (one password a line on stdin; opens
                                                  the databases, prints its pid once it owns
                                                  org.freedesktop.secrets)
       keepassxc_provider.py lock DIR             (locks every open database, as its --lock does)
       keepassxc_provider.py confirm DIR yes|no   (whether each access asks for confirmation,
                                                  read at the next start)

KeePassXC keeps the exposed group in the database's custom data, which its
command line cannot set; the database is imported from KeePass XML that
names it (docs/config.md, "KeePassXC").
"""
import base64
import os
import signal
import subprocess
import sys
import time
import uuid

import dbus
from provider_session import environment, owner


def settings(directory, confirm):
    folder = os.path.join(directory, "config", "keepassxc")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "keepassxc.ini"), "w") as f:
        f.write("[General]\nConfigVersion=2\nOpenPreviousDatabasesOnStartup=false\n\n[FdoSecrets]\nEnabled=true\nShowNotification=false\n"
                f"ConfirmAccessItem={'true' if confirm else 'false'}\nConfirmDeleteItem=false\n")


def make(directory, name, password, bare=False):
    root, exposed = uuid.uuid4(), uuid.uuid4()
    encoded = lambda u: base64.b64encode(u.bytes).decode()
    custom = "" if bare else (
        f"<CustomData><Item><Key>FDO_SECRETS_EXPOSED_GROUP</Key><Value>{{{exposed}}}</Value></Item></CustomData>")
    xml = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<KeePassFile><Meta><Generator>tokenvault tests</Generator><DatabaseName>{name}</DatabaseName>
{custom}</Meta>
<Root><Group><UUID>{encoded(root)}</UUID><Name>Root</Name>
<Group><UUID>{encoded(exposed)}</UUID><Name>Secrets</Name></Group></Group></Root></KeePassFile>
"""
    source = os.path.join(directory, name + ".xml")
    with open(source, "w") as f:
        f.write(xml)
    r = subprocess.run(["keepassxc-cli", "import", "-q", "-p", "-t", "100", source,
                        os.path.join(directory, name + ".kdbx")],
                       input=password + b"\n" + password + b"\n", env=environment(directory),
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.unlink(source)
    if r.returncode != 0:
        sys.exit("keepassxc-cli import failed: " + r.stderr.decode(errors="replace"))
    # After the import: keepassxc-cli writes the same settings file.
    settings(directory, False)


# The databases `make` created with no exposed group.
BARE = {"Bare"}


def collections():
    """The paths of the collections, open or locked."""
    bus = dbus.SessionBus()
    service = bus.get_object("org.freedesktop.secrets", "/org/freedesktop/secrets")
    return list(service.Get("org.freedesktop.Secret.Service", "Collections",
                            dbus_interface="org.freedesktop.DBus.Properties"))


def unlocked():
    """The paths of the collections that are open. One that goes between the
    listing and the question (KeePassXC drops and registers a database's
    collection again while it opens it) is not open yet."""
    bus = dbus.SessionBus()
    open_ = []
    for path in collections():
        try:
            if not bus.get_object("org.freedesktop.secrets", path).Get(
                    "org.freedesktop.Secret.Collection", "Locked", dbus_interface="org.freedesktop.DBus.Properties"):
                open_.append(path)
        except dbus.exceptions.DBusException as e:
            if e.get_dbus_name() != "org.freedesktop.DBus.Error.UnknownObject":
                raise
    return open_


def start(directory, names, passwords):
    files = [os.path.join(directory, n + ".kdbx") for n in names]
    # Its own session (a test kills the group), stdout and stderr to a log,
    # no descriptor of the caller's kept open.
    log = open(os.path.join(directory, "keepassxc.log"), "ab")
    process = subprocess.Popen(["keepassxc", "--pw-stdin", *files], stdin=subprocess.PIPE, stdout=log,
                               stderr=log, env=environment(directory), close_fds=True, start_new_session=True)
    process.stdin.write(b"".join(p + b"\n" for p in passwords))
    process.stdin.close()
    # Never ask org.freedesktop.secrets itself before KeePassXC owns it: the
    # bus would start another provider, and KeePassXC then turns its own off.
    # A start that fails leaves no KeePassXC behind: the next one would meet
    # it (KeePassXC runs one instance, and a second exits at once).
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if process.poll() is not None:
                sys.exit("keepassxc exited with %d" % process.returncode)
            if owner() == process.pid:
                # Each database is a collection at once, and unlocked once its key is derived;
                # one that exposes no group is then no collection any more.
                if len(unlocked()) >= len([n for n in names if n not in BARE]) and not any(
                        path.rsplit("/", 1)[-1] in BARE for path in collections()):
                    print(process.pid)
                    return
            time.sleep(0.1)
        sys.exit("keepassxc did not take org.freedesktop.secrets within 30 s")
    except BaseException:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        raise


def main():
    command, directory = sys.argv[1], sys.argv[2]
    if command == "make":
        make(directory, sys.argv[3], sys.stdin.buffer.read().strip(b"\n"), sys.argv[4:] == ["bare"])
    elif command == "start":
        start(directory, sys.argv[3:], sys.stdin.buffer.read().splitlines())
    elif command == "lock":
        subprocess.run(["keepassxc", "--lock"], env=environment(directory), stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20, check=True)
        # The running instance is only told to: locked once each collection says so.
        deadline = time.monotonic() + 20
        while unlocked():
            if time.monotonic() > deadline:
                sys.exit("keepassxc did not lock its databases within 20 s")
            time.sleep(0.1)
    elif command == "confirm":
        settings(directory, sys.argv[3] == "yes")
    else:
        sys.exit(__doc__)


main()
