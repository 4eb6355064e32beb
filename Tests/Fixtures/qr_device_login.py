#!/usr/bin/env python3
"""Runs `tokenvault login PROVIDER --device [ARGS…]` on a pseudo-terminal
(pexpect), photographs what it draws between the code and "waiting for
approval" (the half blocks become a PGM image, 8 pixels a module), lets zbar
read it (`zbarimg`), then approves the code at the test provider.

Usage: qr_device_login.py TOKENVAULT PROVIDER PROVIDER_BASE_URL [ARGS…]
Prints one JSON object: tokenvault's exit status, the code, what zbarimg
decoded (null when nothing was drawn or nothing could be read), and the
number of lines drawn.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

import pexpect

tv, provider, base = sys.argv[1:4]
child = pexpect.spawn(tv, ["login", provider, "--device"] + sys.argv[4:], env=dict(os.environ),
                      encoding="utf-8", timeout=60, dimensions=(100, 200))
child.expect(r"enter the code: (\S+)")
code = child.match.group(1).strip()
child.expect_exact("waiting for approval")
drawn = child.before.replace("\r", "")
ansi = re.compile(r"\x1b\[[0-9;]*m")
rows = [ansi.sub("", line) for line in drawn.split("\n") if any(c in line for c in "\u2580\u2584\u2588")]

decoded = None
if rows:
    # Each character is two modules high: upper and lower half, dark where drawn.
    top = {"\u2588": 1, "\u2580": 1, "\u2584": 0, " ": 0}
    bottom = {"\u2588": 1, "\u2580": 0, "\u2584": 1, " ": 0}
    modules = []
    for row in rows:
        modules.append([top.get(c, 0) for c in row])
        modules.append([bottom.get(c, 0) for c in row])
    width = max(len(r) for r in modules)
    scale, margin = 8, 4
    w, h = (width + 2 * margin) * scale, (len(modules) + 2 * margin) * scale
    pixels = bytearray([255]) * (w * h)
    for y, r in enumerate(modules):
        for x, dark in enumerate(r):
            if dark:
                for dy in range(scale):
                    start = ((y + margin) * scale + dy) * w + (x + margin) * scale
                    pixels[start:start + scale] = bytes(scale)
    with tempfile.NamedTemporaryFile(suffix=".pgm", delete=False) as f:
        f.write(b"P5\n%d %d\n255\n" % (w, h) + bytes(pixels))
        image = f.name
    r = subprocess.run(["zbarimg", "-q", "--raw", image], capture_output=True, text=True)
    os.unlink(image)
    decoded = r.stdout.strip() or None

urllib.request.urlopen(f"{base}/device/approve?" + urllib.parse.urlencode({"user_code": code})).read()
child.expect(pexpect.EOF)
child.close()
print(json.dumps({"status": child.exitstatus, "code": code, "decoded": decoded, "lines": len(rows)}))
