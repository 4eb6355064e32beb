#!/usr/bin/env python3
"""Runs KWallet's kwalletd5 (Debian's libkf5wallet-bin) as a Plasma login
runs it, with its Secret Service API on, on the session bus of
DBUS_SESSION_BUS_ADDRESS, inside DIR (its HOME and XDG directories): the
wallet "kdewallet" opened the way pam_kwallet5 opens it at login, so no
dialog appears, and no display is needed (Qt's offscreen platform).

Usage: kwallet_provider.py start DIR     (the wallet's password on stdin; created at
                                         the first start; prints kwalletd5's pid once
                                         it owns org.freedesktop.secrets)
       kwallet_provider.py first DIR     (the same, and at the first start kwalletd5 left
                                         as the very first login leaves it)
       kwallet_provider.py close DIR     (every wallet closed, as after its idle timeout or
                                         "close wallet": the next access asks for its password)

pam_kwallet5 derives the wallet's key from the login password (PBKDF2-SHA512,
50000 rounds, 56 bytes, with the salt file kwalletd keeps beside its
wallets), hands it to `kwalletd5 --pam-login PIPE SOCKET` on the pipe, and
the session's environment on the socket (docs/config.md, "KWallet").
"""
import hashlib
import os
import signal
import socket
import subprocess
import sys
import time

import dbus
from provider_session import environment, owner


def settings(env):
    with open(os.path.join(env["XDG_CONFIG_HOME"], "kwalletrc"), "w") as f:
        f.write("[Wallet]\nEnabled=true\nFirst Use=false\nDefault Wallet=kdewallet\nClose When Idle=false\n"
                "Prompt on Open=false\nLeave Open=true\n\n[org.freedesktop.secrets]\napiEnabled=true\n")


def key(env, password):
    folder = os.path.join(env["XDG_DATA_HOME"], "kwalletd")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    salt_file = os.path.join(folder, "kdewallet.salt")
    if not os.path.exists(salt_file):
        with open(salt_file, "wb") as f:
            f.write(os.urandom(56))
    with open(salt_file, "rb") as f:
        salt = f.read()
    return hashlib.pbkdf2_hmac("sha512", password, salt, 50000, 56)


def default_alias():
    bus = dbus.SessionBus()
    return str(bus.call_blocking("org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service",
                                 "ReadAlias", "s", ("default",)))


def start(directory, password, named=True):
    """kwalletd5 started, its wallet open; `named`: and its `default` alias there."""
    env = environment(directory)
    settings(env)
    hash_read, hash_write = os.pipe()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = os.path.join(env["XDG_RUNTIME_DIR"], "kwallet5.socket")
    if os.path.exists(path):
        os.unlink(path)
    listener.bind(path)
    listener.listen(1)
    log = open(os.path.join(directory, "kwalletd5.log"), "ab")
    process = subprocess.Popen(
        ["kwalletd5", "--pam-login", str(hash_read), str(listener.fileno())],
        env=dict(env, PAM_KWALLET5_LOGIN=path), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
        pass_fds=(hash_read, listener.fileno()), close_fds=True, start_new_session=True)
    os.close(hash_read)
    listener.close()
    os.write(hash_write, key(env, password))
    os.close(hash_write)
    # The session's environment, a line each, as pam_kwallet5 sends it.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall("".join(f"{k}={v}\n" for k, v in env.items()).encode())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit("kwalletd5 exited with %d" % process.returncode)
        if owner() == process.pid and opened() and (not named or default_alias() != "/"):
            return process.pid
        time.sleep(0.1)
    sys.exit("kwalletd5 did not open its wallet and take org.freedesktop.secrets within 30 s")


def kwallet(method, signature="", *args):
    """A call to kwalletd5's own interface (isOpen has two signatures: named here)."""
    bus = dbus.SessionBus()
    return bus.call_blocking("org.kde.kwalletd5", "/modules/kwalletd5", "org.kde.KWallet", method, signature, args)


def opened():
    return bool(kwallet("isOpen", "s", "kdewallet"))


def main():
    command, directory = sys.argv[1], sys.argv[2]
    if command in ("start", "first"):
        password = sys.stdin.buffer.read().strip(b"\n")
        first = not os.path.exists(os.path.join(directory, "data", "kwalletd", "kdewallet.kwl"))
        pid = start(directory, password, named=not first)
        if first and command == "start":
            # The first login creates the wallet, and kwalletd5 names it the
            # `default` alias only when it starts with the wallet there: the
            # second login is what users have from then on.
            os.kill(pid, signal.SIGTERM)
            while owner() == pid:
                time.sleep(0.1)
            pid = start(directory, password)
        print(pid)
    elif command == "close":
        kwallet("closeAllWallets")
        deadline = time.monotonic() + 20
        while opened():
            if time.monotonic() > deadline:
                sys.exit("kwalletd5 did not close its wallet within 20 s")
            time.sleep(0.1)
    else:
        sys.exit(__doc__)


main()
