#!/usr/bin/env python3
"""Writes a tokenvault file vault with PyNaCl, following docs/FORMAT.md only.

Usage: TOKENVAULT_PASSPHRASE=... make_vault.py VAULT COUNT
Stores COUNT token credentials api0.example.com ... with account "default".
"""
import json
import os
import struct
import sys
import time

from nacl import bindings, encoding, hash as nhash, pwhash, utils


def main() -> int:
    path, count = sys.argv[1], int(sys.argv[2])
    passphrase = os.environ["TOKENVAULT_PASSPHRASE"].encode()
    ops, mem = pwhash.argon2id.OPSLIMIT_INTERACTIVE, pwhash.argon2id.MEMLIMIT_INTERACTIVE
    salt, nonce = utils.random(16), utils.random(24)
    key = pwhash.argon2id.kdf(32, passphrase, salt, opslimit=ops, memlimit=mem)
    check = nhash.blake2b(b"tokenvault key check v1", digest_size=16, key=key, encoder=encoding.RawEncoder)
    head = b"TKNVAULT" + bytes([1, 2, 0, 0]) + struct.pack("<IQ", ops, mem) + salt + nonce + check
    head += nhash.blake2b(head, digest_size=16, encoder=encoding.RawEncoder)
    now = int(time.time())
    plain = bytearray(struct.pack("<I", count))
    for i in range(count):
        service, account = f"api{i}.example.com".encode(), b"default"
        record = json.dumps({"version": 1, "service": service.decode(), "account": "default", "type": "oauth2",
                             "access_token": f"token-{i}-" + "x" * 40, "refresh_token": f"refresh-{i}-" + "y" * 40,
                             "expires_at": now + 86400, "updated_at": now}, separators=(",", ":")).encode()
        plain += struct.pack("<H", len(service)) + service + struct.pack("<H", len(account)) + account
        plain += struct.pack("<I", len(record)) + record
    plain += b"\x80" + b"\x00" * ((512 - (len(plain) + 1) % 512) % 512)
    body = bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(bytes(plain), head, nonce, key)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(head + body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
