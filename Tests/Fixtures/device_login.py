#!/usr/bin/env python3
"""Runs `tokenvault login PROVIDER --device` and plays the user on another
device: reads the code it shows, approves (or denies) it at the test
provider, and prints tokenvault's exit status.

Usage: device_login.py TOKENVAULT PROVIDER PROVIDER_BASE_URL approve|deny [LOGIN ARGS…]
(LOGIN ARGS default to --device.)
"""
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request

tv, provider, base, answer = sys.argv[1:5]
p = subprocess.Popen([tv, "login", provider] + (sys.argv[5:] or ["--device"]), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                     stdin=subprocess.DEVNULL, text=True, env=os.environ)
code = None
for line in p.stderr:
    sys.stderr.write(line)
    m = re.search(r"enter the code: (\S+)", line)
    if m:
        code = m.group(1)
        break
if code is None:
    p.wait()
    sys.exit("tokenvault showed no code")
query = urllib.parse.urlencode({"user_code": code, **({"deny": "1"} if answer == "deny" else {})})
urllib.request.urlopen(f"{base}/device/approve?{query}").read()
rest = p.stderr.read()
p.wait()
sys.stderr.write(rest)
print(p.returncode)
