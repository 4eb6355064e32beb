#!/usr/bin/env python3
"""An IMAP client for the mail adapter tests (Python's imaplib): reads a SASL
initial response, base64 as `tokenvault get --format sasl` prints it, from
stdin, sends it with AUTHENTICATE MECHANISM, then SELECTs INBOX.

Usage: imap_login.py PORT MECHANISM < response
Prints "OK" and exits 0 when logged in; prints the server's answer and exits 1
otherwise.
"""
import base64
import imaplib
import sys


def main():
    port, mechanism = int(sys.argv[1]), sys.argv[2]
    response = base64.b64decode(sys.stdin.read().strip(), validate=True)
    imap = imaplib.IMAP4("127.0.0.1", port, timeout=20)
    try:
        imap.authenticate(mechanism, lambda _challenge: response)
        status, _ = imap.select("INBOX")
        print("OK" if status == "OK" else f"SELECT {status}")
        return 0 if status == "OK" else 1
    except imaplib.IMAP4.error as e:
        print(f"NO {e}")
        return 1
    finally:
        try:
            imap.logout()
        except Exception:
            pass


if __name__ == "__main__":
    sys.exit(main())
