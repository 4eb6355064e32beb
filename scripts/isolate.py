#!/usr/bin/env python3
"""Runs a command (a test class) in a user namespace of its own.

Usage: scripts/isolate.py COMMAND [ARG...]

Two test classes run side by side as the same user, and the kernel's user
keyring is per user: tokenvault's key cache lives there, so a `lock` or an
expiring key in one class dropped the key another class had just cached.
Since Linux 5.3 each user namespace has user keyrings of its own. The
namespace made here maps every uid and gid to itself, so files, sockets,
SO_PEERCRED, chown and setpriv see the same ids as outside (run as
another user than root, only that user's own ids are mapped); only the user
keyring (and what else the kernel keeps per user namespace) is the class's
own. In a mount namespace of its own, /run/user is a fresh tmpfs: a class
that plays a systemd login (/run/user/UID with its bus) has it to itself,
whatever else runs as this user. The map is written by a helper child that is still in the outer
namespace (only a process with CAP_SETUID there may map ids other than its
own), then the command is exec'd in place, so its exit status and signals
are this process's. Where no namespace can be made (a kernel or container
that forbids it) the command runs as it is, after one line on stderr.
"""
import ctypes
import os
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000
MS_REC, MS_PRIVATE = 0x4000, 1 << 18


def own_run_user(libc):
    """/run/user as a tmpfs of this namespace's own; False where it cannot be."""
    if libc.unshare(CLONE_NEWNS) != 0:
        return False
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False
    os.makedirs("/run/user", mode=0o755, exist_ok=True)
    return libc.mount(b"tmpfs", b"/run/user", b"tmpfs", 0, b"mode=0755") == 0


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: isolate.py COMMAND [ARG...]")
    inner = os.getpid()
    ask_r, ask_w = os.pipe()
    done_r, done_w = os.pipe()
    helper = os.fork()
    if helper == 0:
        os.close(ask_w)
        os.close(done_r)
        status = b"-"
        if os.read(ask_r, 1) == b"1":
            try:
                if os.geteuid() == 0:
                    maps = [("uid_map", "0 0 4294967295"), ("gid_map", "0 0 4294967295")]
                else:  # one's own ids only, and then setgroups must be denied
                    uid, gid = os.geteuid(), os.getegid()
                    maps = [("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")]
                for name, line in maps:
                    with open(f"/proc/{inner}/{name}", "w") as m:
                        m.write(line + "\n")
                status = b"+"
            except OSError:
                pass
        os.write(done_w, status)
        os._exit(0)
    os.close(ask_r)
    os.close(done_w)
    libc = ctypes.CDLL(None, use_errno=True)
    made = libc.unshare(CLONE_NEWUSER) == 0
    os.write(ask_w, b"1" if made else b"0")
    mapped = os.read(done_r, 1) == b"+"
    os.waitpid(helper, 0)
    if not made:
        print(f"isolate: no user namespace ({os.strerror(ctypes.get_errno())}); the user keyring is shared",
              file=sys.stderr)
    elif not mapped:
        sys.exit("isolate: could not map the ids of the new user namespace")
    elif not own_run_user(libc):
        print(f"isolate: no /run/user of its own ({os.strerror(ctypes.get_errno())})", file=sys.stderr)
    os.execvp(sys.argv[1], sys.argv[1:])


main()
