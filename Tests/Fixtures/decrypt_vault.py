#!/usr/bin/env python3
"""Decrypts a tokenvault file vault with PyNaCl, following docs/FORMAT.md only.

Usage: TOKENVAULT_PASSPHRASE=... decrypt_vault.py [--print-key] VAULT
Prints a JSON array of {"service", "account", "record"} objects; with
--print-key, the derived vault key in hex instead (to look for it on disk).
"""
import json
import os
import struct
import sys

from nacl import bindings, encoding, hash as nhash, pwhash


def main() -> int:
    print_key = sys.argv[1] == "--print-key"
    data = open(sys.argv[-1], "rb").read()
    passphrase = os.environ["TOKENVAULT_PASSPHRASE"].encode()
    header, body = data[:96], data[96:]
    if header[:8] != b"TKNVAULT" or header[8] != 1 or header[9] != 2:
        sys.exit("not a version 1 Argon2id vault")
    check = nhash.blake2b(header[:80], digest_size=16, encoder=encoding.RawEncoder)
    if check != header[80:96]:
        sys.exit("header checksum mismatch")
    opslimit, = struct.unpack("<I", header[12:16])
    memlimit, = struct.unpack("<Q", header[16:24])
    salt, nonce, key_check = header[24:40], header[40:64], header[64:80]
    key = pwhash.argon2id.kdf(32, passphrase, salt, opslimit=opslimit, memlimit=memlimit)
    mine = nhash.blake2b(b"tokenvault key check v1", digest_size=16, key=key, encoder=encoding.RawEncoder)
    if mine != key_check:
        sys.exit("wrong passphrase")
    if print_key:
        print(key.hex())
        return 0
    padded = bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(body, header, nonce, key)
    # ISO/IEC 7816-4 padding: strip zeros, then the 0x80 marker.
    end = len(padded.rstrip(b"\x00"))
    if end == 0 or padded[end - 1] != 0x80:
        sys.exit("bad padding")
    plain = padded[: end - 1]
    count, = struct.unpack_from("<I", plain, 0)
    at, out = 4, []
    for _ in range(count):
        n, = struct.unpack_from("<H", plain, at); service = plain[at + 2: at + 2 + n].decode(); at += 2 + n
        n, = struct.unpack_from("<H", plain, at); account = plain[at + 2: at + 2 + n].decode(); at += 2 + n
        n, = struct.unpack_from("<I", plain, at); record = json.loads(plain[at + 4: at + 4 + n]); at += 4 + n
        out.append({"service": service, "account": account, "record": record})
    if at != len(plain):
        sys.exit("trailing bytes")
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
