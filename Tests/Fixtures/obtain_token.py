#!/usr/bin/env python3
"""Plays the user and the client against oauth_provider.py: authorization code
with PKCE, then prints the token endpoint's JSON. Until `tokenvault login`
exists, this is how the tests get a real refresh token.

Usage: obtain_token.py PORT
"""
import base64
import hashlib
import json
import secrets
import sys
import urllib.parse
import urllib.request

port = int(sys.argv[1])
base = f"http://127.0.0.1:{port}"
verifier = secrets.token_urlsafe(48)
challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
redirect = "http://127.0.0.1:1/callback"
query = urllib.parse.urlencode({"response_type": "code", "client_id": "tv-client", "redirect_uri": redirect,
                                "scope": "read", "state": "s1", "code_challenge": challenge,
                                "code_challenge_method": "S256"})


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


opener = urllib.request.build_opener(NoRedirect)
try:
    opener.open(f"{base}/authorize?{query}")
    sys.exit("the authorize endpoint did not redirect")
except urllib.error.HTTPError as e:
    location = e.headers["Location"]
code = urllib.parse.parse_qs(urllib.parse.urlparse(location).query)["code"][0]
body = urllib.parse.urlencode({"grant_type": "authorization_code", "code": code, "redirect_uri": redirect,
                               "client_id": "tv-client", "client_secret": "tv-secret",
                               "code_verifier": verifier}).encode()
with urllib.request.urlopen(f"{base}/token", data=body) as r:
    print(json.dumps(json.load(r)))
