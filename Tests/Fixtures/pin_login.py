#!/usr/bin/env python3
"""Runs `tokenvault login PROVIDER --no-browser` for an OAuth 1.0a provider:
opens the URL it prints (the test provider shows the PIN as oauth_verifier),
types the PIN, prints tokenvault's exit status.

Usage: pin_login.py TOKENVAULT PROVIDER
"""
import os
import subprocess
import sys
import urllib.parse
import urllib.request

tv, provider = sys.argv[1], sys.argv[2]
p = subprocess.Popen([tv, "login", provider, "--no-browser"], stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                     stdout=subprocess.DEVNULL, text=True, env=os.environ)
url = None
for line in p.stderr:
    line = line.strip()
    if line.startswith("http://"):
        url = line
    if "PIN" in line:
        break
with urllib.request.urlopen(url) as r:
    pin = urllib.parse.parse_qs(r.read().decode())["oauth_verifier"][0]
p.stdin.write(pin + "\n")
p.stdin.close()
sys.stderr.write(p.stderr.read())
p.wait()
print(p.returncode)
