"""DPoP proofs (RFC 9449 §4.3) as a server checks them, for the test
servers (dpop_server.py, conformance_server.py): the signature with
authlib's JOSE against the header's public jwk, typ dpop+jwt, an asymmetric
alg, htm and htu, iat within a minute, a jti never seen, ath when a token
goes with it. check() gives the key's thumbprint (RFC 7638) and the claims,
or raises ValueError saying what is wrong."""
import base64
import hashlib
import json
import threading
import time

from authlib.jose import JsonWebKey, JsonWebSignature

_lock = threading.Lock()
_jtis = set()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def thumbprint(jwk):
    members = {k: jwk[k] for k in (("crv", "kty", "x") if jwk.get("kty") == "OKP" else ("crv", "kty", "x", "y"))}
    return b64url(hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode()).digest())


def check(proof, method, url, token=None):
    if not proof or "," in proof:
        raise ValueError("one DPoP proof is required")
    head = json.loads(base64.urlsafe_b64decode(proof.split(".")[0] + "=="))
    if head.get("typ") != "dpop+jwt" or head.get("alg") not in ("ES256", "EdDSA", "RS256", "PS256"):
        raise ValueError("typ must be dpop+jwt and alg asymmetric")
    jwk = head.get("jwk") or {}
    if "d" in jwk:
        raise ValueError("the jwk holds a private key")
    try:
        data = JsonWebSignature().deserialize_compact(proof, JsonWebKey.import_key(jwk))
    except Exception as e:
        raise ValueError("the signature does not verify: %s" % e)
    claims = json.loads(data["payload"])
    if claims.get("htm") != method or claims.get("htu") != url:
        raise ValueError("htm/htu do not match the request")
    if abs(time.time() - claims.get("iat", 0)) > 60:
        raise ValueError("iat is not now")
    jti = claims.get("jti")
    with _lock:
        if not jti or jti in _jtis:
            raise ValueError("jti missing or replayed")
        _jtis.add(jti)
    if token is not None and claims.get("ath") != b64url(hashlib.sha256(token.encode()).digest()):
        raise ValueError("ath does not match the token")
    return thumbprint(jwk), claims
