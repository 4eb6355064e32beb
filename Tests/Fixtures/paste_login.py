#!/usr/bin/env python3
"""Runs `tokenvault login PROVIDER --no-browser` the way a user on SSH would:
reads the URL it prints, "opens" it (the provider redirects at once), and
pastes back the redirected URL. Prints tokenvault's exit status.

Usage: paste_login.py TOKENVAULT PROVIDER [LOGIN ARGS…]   (environment passed through;
LOGIN ARGS default to --no-browser)
"""
import os
import subprocess
import sys
import urllib.error
import urllib.request

tv, provider = sys.argv[1], sys.argv[2]
p = subprocess.Popen([tv, "login", provider] + (sys.argv[3:] or ["--no-browser"]), stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                     stdout=subprocess.DEVNULL, text=True, env=os.environ)
url = None
for line in p.stderr:
    sys.stderr.write(line)
    line = line.strip()
    if line.startswith("http://") or line.startswith("https://"):
        url = line
    if url and "paste" in line:
        break


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


try:
    urllib.request.build_opener(NoRedirect).open(url)
    sys.exit("no redirect")
except urllib.error.HTTPError as e:
    location = e.headers["Location"]
p.stdin.write(location + "\n")
p.stdin.close()
rest = p.stderr.read()
p.wait()
sys.stderr.write(rest)
print(p.returncode)
