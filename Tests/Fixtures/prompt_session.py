#!/usr/bin/env python3
"""Drives tokenvault on a real pseudo-terminal (pexpect): the no-echo prompts.

Usage: prompt_session.py TOKENVAULT HOME
Prints one line per step: name, exit status, what it printed last, and whether
a typed secret was echoed.
"""
import io
import os
import sys

import pexpect

tv, home = sys.argv[1], sys.argv[2]
env = {"HOME": home, "PATH": "/usr/bin:/bin", "XDG_DATA_HOME": home + "/d", "TOKENVAULT_BACKEND": "file",
       "TOKENVAULT_KDF_PROFILE": "interactive", "TOKENVAULT_KEY_TTL": "0", "LANG": "C.UTF-8",
       "TOKENVAULT_AGENT": "manual"}


INTERRUPT = object()  # Ctrl-C instead of an answer; None: only wait for the text


def run(name, args, answers, data_home=None, quiet=False):
    """quiet: also say whether anything but tokenvault's own words reached the terminal
    (a library's complaint, such as cracklib's missing dictionary)."""
    e = dict(env, XDG_DATA_HOME=data_home) if data_home else env
    c = pexpect.spawn(tv, args, env=e, encoding="utf-8", timeout=30)
    c.logfile_read = io.StringIO()
    typed = []
    for prompt, answer in answers:
        c.expect_exact(prompt)
        if answer is INTERRUPT:
            c.sendintr()
        elif answer is not None:
            c.sendline(answer)
            typed.append(answer)
    c.expect(pexpect.EOF)
    c.close()
    out = c.before.replace("\r", "").strip()
    echoed = any(t in out for t in typed if len(t) > 3)
    line = f"{name}|{c.exitstatus}|{out.splitlines()[-1] if out else ''}|echoed={echoed}"
    if quiet:
        seen = c.logfile_read.getvalue()
        line += f"|quiet={'No such file' not in seen and 'cracklib' not in seen}"
    print(line)


# The first prompt for a new vault says which file it protects and what unattended use needs.
run("create", ["set", "api.x.com"], [("Token for api.x.com: ", "tok-from-tty"),
    (f"tokenvault keeps credentials encrypted in {home}/d/tokenvault/vault, with the passphrase you choose now;", None),
    ("needs the TPM (tokenvault init --key tpm), a systemd credential, or tokenvault unlock", None),
    ("New vault passphrase: ", "pass-one"), ("Repeat passphrase: ", "pass-one")])
run("get", ["get", "api.x.com"], [("Vault passphrase: ", "pass-one")])
run("retry", ["get", "api.x.com"], [("Vault passphrase: ", "pass-two"), ("try again (2 left)", None), ("Vault passphrase: ", "pass-one")])
run("wrong", ["get", "api.x.com"], [("Vault passphrase: ", "pass-two"), ("Vault passphrase: ", "pass-three"),
    ("Vault passphrase: ", "pass-four")])
run("mismatch", ["set", "api.y.com"], [("Token for api.y.com: ", "t"), ("New vault passphrase: ", "pass-aaa"),
    ("Repeat passphrase: ", "pass-bbb"), ("do not match; again", None), ("New vault passphrase: ", "pass-ccc"),
    ("Repeat passphrase: ", "pass-ccc")], data_home=home + "/e")
print("mismatch-vault-exists|" + str(os.path.exists(home + "/e/tokenvault/vault")))
run("mismatch3", ["set", "api.z.com"], [("Token for api.z.com: ", "t")] +
    [p for i in range(3) for p in (("New vault passphrase: ", "pass-aaa"), ("Repeat passphrase: ", "pass-bbb"))], data_home=home + "/f")
print("mismatch3-vault-exists|" + str(os.path.exists(home + "/f/tokenvault/vault")))
run("ctrl-c", ["get", "api.x.com"], [("Vault passphrase: ", INTERRUPT)])
run("ctrl-c-token", ["set", "api.v.com"], [("Token for api.v.com: ", INTERRUPT)])
run("weak-declined", ["set", "api.w.com"], [("Token for api.w.com: ", "t"), ("New vault passphrase: ", "abc"),
    ("weak passphrase: ", None), ("keep it anyway? [y/N] ", "n"), ("choose another one", None),
    ("New vault passphrase: ", "river-lantern-97-quartz"), ("Repeat passphrase: ", "river-lantern-97-quartz")], data_home=home + "/g",
    quiet=True)
run("weak-kept", ["set", "api.w.com"], [("Token for api.w.com: ", "t"), ("New vault passphrase: ", "abc"),
    ("keep it anyway? [y/N] ", "y"), ("Repeat passphrase: ", "abc")], data_home=home + "/h", quiet=True)
