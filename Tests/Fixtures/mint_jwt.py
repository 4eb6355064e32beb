#!/usr/bin/env python3
"""Mints a JWT as a workload identity issuer does (a Kubernetes API server
for a projected service-account token, a CI system for a job's OIDC token):
signed with the issuer's private key, for one audience, short-lived, with a
fresh jti. Printed on stdout, or written to OUT (replacing it, as the
kubelet rotates a projected token).

Usage: mint_jwt.py KEY.pem ISSUER AUDIENCE LIFETIME [OUT]   (LIFETIME in seconds; negative: already expired)
"""
import os
import sys
import time
import uuid

from authlib.jose import jwt

key_file, issuer, audience, lifetime = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with open(key_file, "rb") as f:
    key = f.read()
now = int(time.time())
claims = {"iss": issuer, "sub": "system:serviceaccount:ci:deployer", "aud": audience,
          "iat": now if lifetime > 0 else now + lifetime - 60, "exp": now + lifetime, "jti": uuid.uuid4().hex}
token = jwt.encode({"alg": "RS256", "typ": "JWT"}, claims, key).decode()
if len(sys.argv) > 5:
    tmp = sys.argv[5] + ".new"
    with open(tmp, "w") as f:
        f.write(token + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, sys.argv[5])
else:
    print(token)
