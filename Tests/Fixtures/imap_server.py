#!/usr/bin/env python3
"""A real IMAP server for the mail adapter tests: Debian's dovecot, in its own
directory, listening on 127.0.0.1 (plain IMAP, no TLS: loopback only), with
XOAUTH2 and OAUTHBEARER checked by dovecot's oauth2 passdb against the local
provider's RFC 7662 introspection (client tv-rs). The mail user is the token's
user ("alice").

Usage: imap_server.py --provider PORT --dir DIR
Prints "port N" once dovecot accepts connections; stops dovecot when it is
terminated (SIGTERM).
"""
import argparse
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time

CONF = """\
base_dir = {dir}/run
state_dir = {dir}/state
log_path = {dir}/dovecot.log
info_log_path = {dir}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = xoauth2 oauthbearer
default_internal_user = dovecot
default_login_user = dovenull
mail_location = maildir:{dir}/mail/%u
first_valid_uid = 1
passdb {{
  driver = oauth2
  mechanisms = xoauth2 oauthbearer
  args = {dir}/oauth2.conf.ext
}}
userdb {{
  driver = static
  args = uid=dovecot gid=dovecot home={dir}/mail/%u
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service stats {{
  unix_listener stats-writer {{
    mode = 0666
  }}
}}
"""

OAUTH2 = """\
introspection_mode = post
introspection_url = http://tv-rs:rs-secret@127.0.0.1:{provider}/introspect
username_attribute = username
active_attribute = active
active_value = true
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--provider", type=int, required=True)
    ap.add_argument("--dir", required=True)
    args = ap.parse_args()
    d = os.path.abspath(args.dir)
    for sub in ("run", "state", "mail"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    dovecot = pwd.getpwnam("dovecot")
    os.chown(os.path.join(d, "mail"), dovecot.pw_uid, dovecot.pw_gid)
    os.chmod(d, 0o755)
    port = free_port()
    with open(os.path.join(d, "dovecot.conf"), "w") as f:
        f.write(CONF.format(dir=d, port=port))
    with open(os.path.join(d, "oauth2.conf.ext"), "w") as f:
        f.write(OAUTH2.format(provider=args.provider))
    conf = os.path.join(d, "dovecot.conf")
    proc = subprocess.Popen(["/usr/sbin/dovecot", "-F", "-c", conf], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def stop(*_):
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    deadline = time.time() + 20
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                if s.recv(100).startswith(b"* OK"):
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            log = open(os.path.join(d, "dovecot.log")).read() if os.path.exists(os.path.join(d, "dovecot.log")) else ""
            print(f"dovecot did not start: {log[-500:]}", flush=True)
            stop()
        time.sleep(0.1)
    print(f"port {port}", flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
