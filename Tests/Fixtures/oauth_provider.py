#!/usr/bin/env python3
"""A local OAuth 2.0 provider for tokenvault's tests, built on authlib's server.

- authorization code with PKCE (S256), loopback redirect URIs on any port
  (RFC 8252), auto-approved for the user "alice" (?deny=1 in the authorize URL
  answers access_denied instead);
- rotating refresh tokens with reuse detection: a refresh token used twice
  revokes its whole family, as OAuth 2.1 / RFC 9700 recommend;
- the device flow (RFC 8628, interval 1 s): /device/approve?user_code=X
  approves (&deny=1 denies); --slow-down answers slow_down to the first poll;
- client credentials; RFC 7009 revocation; a protected resource /api/me;
- RFC 7662 introspection at /introspect for the resource server client
  "tv-rs" (HTTP Basic), as an IMAP server or a git host checks a token;
- /admin/revoke-access (POST token=) revokes one access token and leaves its
  refresh token alone, as a server-side session ending does;
- /stats counts what the token endpoint was asked (JSON).
- /authorize refuses scope openid without a nonce (invalid_request "nonce
  required", as Debian's packaged OpenID providers do); ID tokens carry the
  nonce the authorization request sent, or another one after
  POST /admin/replay-nonce (an ID token of another login).

- RFC 7523 (--keys DIR, public keys DIR/NAME.pub.pem, RS256 or ES256):
  the jwt-bearer grant for an assertion issued by NAME (authlib's
  JWTBearerGrant; aud must be the token URL, at most 5 minutes, jti once;
  --clock-skew S runs the assertion check S seconds ahead), private_key_jwt
  for the clients NAME that start with "tv-pkjwt", and client_secret_jwt for
  "tv-csjwt" (secret "csjwt-secret-0123456789abcdef"), by authlib's
  JWTBearerClientAssertion;
- OpenID Connect discovery: /good/.well-known/openid-configuration (issuer
  BASE/good), /as is RFC 8414 only (/.well-known/oauth-authorization-server/as),
  /liar claims another issuer, /broken has no token_endpoint; an id_token
  (HS256, claims sub, email, name) with every token whose scope has openid;
Usage: oauth_provider.py [--port N] [--token-ttl SECONDS] [--refresh-ttl SECONDS]
(--refresh-ttl: answers carry refresh_token_expires_in, as GitHub Apps' do.)
Prints "port N" on stdout once listening on 127.0.0.1.
"""
import argparse
import os
import secrets
import sys
import threading
import time
import urllib.parse
from collections import Counter

# Plain http is fine here: the server listens on 127.0.0.1 only.
os.environ["AUTHLIB_INSECURE_TRANSPORT"] = "1"

from authlib.integrations.flask_oauth2 import AuthorizationServer, ResourceProtector
from authlib.oauth2.rfc6749 import ClientMixin, grants
from authlib.oauth2.rfc6750 import BearerTokenValidator
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from authlib.oauth2.rfc7523 import JWTBearerGrant, JWTBearerClientAssertion
from authlib.jose import JsonWebKey, jwt as jose_jwt
from authlib.oauth2.rfc8628 import DeviceAuthorizationEndpoint, DeviceCodeGrant, DeviceCredentialDict, SlowDownError
from flask import Flask, jsonify, redirect, request
from werkzeug.serving import make_server

lock = threading.RLock()
stats = Counter()
tokens = {}          # access_token -> Token
refresh_index = {}   # refresh_token -> Token
codes = {}           # code -> AuthorizationCode
devices = {}         # device_code -> DeviceCredentialDict
device_grants = {}   # user_code -> (user, approved)
slow_down_first = {"on": False, "done": set()}
replayed_nonce = {"on": False}  # /admin/replay-nonce: ID tokens carry another nonce


class Client(ClientMixin):
    def __init__(self, client_id, secret, grants_allowed, public=False):
        self.client_id, self.client_secret, self.grants, self.public = client_id, secret, grants_allowed, public

    def get_client_id(self): return self.client_id
    def get_default_redirect_uri(self): return None
    def get_allowed_scope(self, scope): return scope or "read"
    def check_redirect_uri(self, uri):
        return uri.startswith("http://127.0.0.1:") and uri.split("/", 3)[-1].startswith("callback")
    def check_client_secret(self, secret): return secrets.compare_digest(secret, self.client_secret)
    def check_endpoint_auth_method(self, method, endpoint):
        if self.client_id.startswith("tv-pkjwt"): return method == "private_key_jwt"
        if self.client_id == "tv-csjwt": return method == "client_secret_jwt"
        if self.public: return method == "none"
        return method in ("client_secret_basic", "client_secret_post")
    def check_response_type(self, response_type): return response_type == "code"
    def check_grant_type(self, grant_type): return grant_type in self.grants


CLIENTS = {
    "tv-client": Client("tv-client", "tv-secret", {"authorization_code", "refresh_token", DeviceCodeGrant.GRANT_TYPE}),
    "tv-public": Client("tv-public", "", {"authorization_code", "refresh_token"}, public=True),
    # No refresh_token grant: its logins get no refresh token.
    "tv-once": Client("tv-once", "", {"authorization_code"}, public=True),
    "tv-bot": Client("tv-bot", "bot-secret", {"client_credentials"}),
    "tv-rs": Client("tv-rs", "rs-secret", set()),
    "tv-csjwt": Client("tv-csjwt", "csjwt-secret-0123456789abcdef", {"client_credentials", "authorization_code", "refresh_token"}),
    # RFC 8693: trades a token this server issued to another client for one of its own.
    "tv-exchange": Client("tv-exchange", "exchange-secret", {"urn:ietf:params:oauth:grant-type:token-exchange"}),
}


class Token:
    def __init__(self, data, client_id, user, family):
        self.access_token = data["access_token"]
        self.refresh_token = data.get("refresh_token")
        self.scope = data.get("scope", "")
        self.expires_in = data["expires_in"]
        self.issued_at = time.time()
        self.client_id, self.user, self.family = client_id, user, family
        self.revoked = False
        self.access_revoked = False  # the access token alone (/admin/revoke-access)
        self.used = False

    def check_client(self, client): return client.get_client_id() == self.client_id
    def get_scope(self): return self.scope
    def get_expires_in(self): return self.expires_in
    def is_revoked(self): return self.revoked or self.access_revoked
    def is_expired(self): return time.time() > self.issued_at + self.expires_in
    def get_user(self): return self.user


class AuthorizationCode:
    def __init__(self, code, client_id, redirect_uri, scope, challenge, method, nonce=None):
        self.code, self.client_id, self.redirect_uri, self.scope = code, client_id, redirect_uri, scope
        self.code_challenge, self.code_challenge_method = challenge, method
        self.nonce = nonce
        self.auth_time = time.time()

    def get_redirect_uri(self): return self.redirect_uri
    def get_scope(self): return self.scope
    def get_auth_time(self): return self.auth_time
    def get_nonce(self): return self.nonce
    def is_expired(self): return time.time() > self.auth_time + 300


class CodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none", "private_key_jwt", "client_secret_jwt"]

    def save_authorization_code(self, code, req):
        with lock:
            codes[code] = AuthorizationCode(code, req.client.get_client_id(), req.redirect_uri, req.scope,
                                            req.data.get("code_challenge"), req.data.get("code_challenge_method"),
                                            req.data.get("nonce"))

    def query_authorization_code(self, code, client):
        with lock:
            c = codes.get(code)
        return c if c and c.client_id == client.get_client_id() and not c.is_expired() else None

    def delete_authorization_code(self, authorization_code):
        with lock:
            codes.pop(authorization_code.code, None)

    def authenticate_user(self, authorization_code): return "alice"


class RotatingRefreshGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none", "private_key_jwt", "client_secret_jwt"]
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token):
        with lock:
            stats["refresh_attempts"] += 1
            t = refresh_index.get(refresh_token)
            if t is None:
                return None
            if t.used or t.revoked:
                # Reuse detection: a rotated refresh token came back. Revoke the family.
                stats["reuse_detected"] += 1
                for other in list(tokens.values()):
                    if other.family == t.family:
                        other.revoked = True
                return None
            return t

    def authenticate_user(self, credential): return credential.user

    def revoke_old_credential(self, credential):
        with lock:
            credential.used = True
            credential.revoked = True
            stats["refreshes"] += 1


class DeviceEndpoint(DeviceAuthorizationEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]
    INTERVAL = 1
    verification_uri = "http://127.0.0.1/device"

    def get_verification_uri(self):
        return self.verification_uri

    def save_device_credential(self, client_id, scope, data):
        with lock:
            stats["device_authorizations"] += 1
            devices[data["device_code"]] = DeviceCredentialDict(
                client_id=client_id, scope=scope, expires_at=time.time() + data["expires_in"], **data)


class DeviceGrant(DeviceCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]

    def query_device_credential(self, device_code):
        with lock:
            stats["device_polls"] += 1
            return devices.get(device_code)

    def query_user_grant(self, user_code):
        with lock:
            return device_grants.get(user_code)

    def validate_device_credential(self, credential):
        # With --slow-down the first poll is told to slow down even if already approved.
        if self.should_slow_down(credential):
            raise SlowDownError()
        return super().validate_device_credential(credential)

    def should_slow_down(self, credential):
        with lock:
            code = credential.get_user_code()
            if slow_down_first["on"] and code not in slow_down_first["done"]:
                slow_down_first["done"].add(code)
                stats["slow_downs"] += 1
                return True
            return False


class BotGrant(grants.ClientCredentialsGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt", "client_secret_jwt"]


class TokenExchangeGrant(grants.ClientCredentialsGrant):
    """RFC 8693 §2, on authlib's token endpoint (authlib has no such grant: its
    client authentication, token generation and saving, this check): the
    subject token must be an access token this server issued and that is
    still valid, typed as one; the new token has the audience asked for."""
    GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange"
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    def validate_token_request(self):
        from authlib.oauth2.rfc6749 import InvalidGrantError, InvalidRequestError
        super().validate_token_request()
        form = self.request.form
        subject, kind = form.get("subject_token"), form.get("subject_token_type")
        if not subject or not kind:
            raise InvalidRequestError(description="subject_token and subject_token_type are required")
        if kind != "urn:ietf:params:oauth:token-type:access_token":
            raise InvalidRequestError(description=f"unsupported subject_token_type {kind}")
        with lock:
            held = tokens.get(subject)
            if held is None or held.revoked or held.access_revoked or time.time() > held.issued_at + held.expires_in:
                raise InvalidGrantError(description="the subject token is not a valid access token of this server")
            stats["exchanges"] += 1
            stats["exchange_audience:" + (form.get("audience") or "")] += 1


class AssertionGrant(JWTBearerGrant):
    """RFC 7523 §2.1, checked by authlib; this fixture adds what RFC 7523 §3
    asks and authlib leaves to the server: the audience, a short life, a jti
    used once."""
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]

    def process_assertion_claims(self, assertion):
        from authlib.jose import JoseError
        from authlib.oauth2.rfc6749 import InvalidGrantError
        token_url = f"http://127.0.0.1:{port_holder['port']}/token"
        try:
            claims = jose_jwt.decode(assertion, self.resolve_public_key, claims_options={
                "iss": {"essential": True}, "exp": {"essential": True}, "jti": {"essential": True},
                "aud": {"essential": True, "value": token_url}})
            claims.validate(now=int(time.time()) + clock_skew["seconds"], leeway=5)
        except JoseError as e:
            raise InvalidGrantError(description=e.description)
        if claims["exp"] - claims.get("iat", claims["exp"]) > 300:
            raise InvalidGrantError(description="the assertion lives longer than 5 minutes")
        with lock:
            if claims["jti"] in used_jti:
                raise InvalidGrantError(description="jti used before")
            used_jti.add(claims["jti"])
            stats["assertions"] += 1
        return claims

    def resolve_issuer_client(self, issuer):
        if issuer not in public_keys:
            return None
        return Client(issuer, "", {JWTBearerGrant.GRANT_TYPE}, public=True)

    def resolve_client_key(self, client, headers, payload):
        return public_keys.get(payload["iss"])

    def authenticate_user(self, subject):
        return subject

    def has_granted_permission(self, client, user):
        return True


class PrivateKeyJWTAuth(JWTBearerClientAssertion):
    CLIENT_AUTH_METHOD = "private_key_jwt"

    def __call__(self, query_client, request):
        # authlib tries each registered method in turn: leave the other kind's clients to it.
        client_id = request.form.get("client_id", "")
        if (self.CLIENT_AUTH_METHOD == "private_key_jwt") != client_id.startswith("tv-pkjwt"):
            return None
        return super().__call__(query_client, request)

    def validate_jti(self, claims, jti):
        with lock:
            if jti in used_jti:
                return False
            used_jti.add(jti)
            stats["client_assertions"] += 1
            return True

    def resolve_client_public_key(self, client, headers):
        return public_keys.get(client.get_client_id())


class ClientSecretJWTAuth(PrivateKeyJWTAuth):
    CLIENT_AUTH_METHOD = "client_secret_jwt"

    def resolve_client_public_key(self, client, headers):
        return client.client_secret.encode()


class Revocation(RevocationEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none", "private_key_jwt", "client_secret_jwt"]

    def query_token(self, token_string, token_type_hint):
        with lock:
            return tokens.get(token_string) or refresh_index.get(token_string)

    def revoke_token(self, token, req):
        with lock:
            stats["revocations"] += 1
            for other in list(tokens.values()):
                if other.family == token.family:
                    other.revoked = True


class Introspection(IntrospectionEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic"]

    def query_token(self, token_string, token_type_hint):
        with lock:
            stats["introspections"] += 1
            return tokens.get(token_string)

    def check_permission(self, token, client, request):
        return client.get_client_id() == "tv-rs"

    def introspect_token(self, token):
        return {"active": True, "client_id": token.client_id, "username": token.user or token.client_id,
                "scope": token.scope, "exp": int(token.issued_at + token.expires_in), "token_type": "Bearer"}


class Validator(BearerTokenValidator):
    def authenticate_token(self, token_string):
        with lock:
            return tokens.get(token_string)


port_holder = {"port": 0}
public_keys = {}     # issuer / client id -> authlib key (--keys)
used_jti = set()
clock_skew = {"seconds": 0}
refresh_ttl = {"seconds": 0}


def make_app(token_ttl):
    app = Flask(__name__)
    app.config["OAUTH2_TOKEN_EXPIRES_IN"] = {"authorization_code": token_ttl, "refresh_token": token_ttl,
                                             "client_credentials": token_ttl}
    app.config["OAUTH2_REFRESH_TOKEN_GENERATOR"] = True

    def query_client(client_id):
        return CLIENTS.get(client_id)

    def save_token(data, req):
        with lock:
            if refresh_ttl["seconds"] and data.get("refresh_token"):
                data["refresh_token_expires_in"] = refresh_ttl["seconds"]
            if "openid" in (data.get("scope") or "").split():
                now = int(time.time())
                claims = {"iss": f"http://127.0.0.1:{port_holder['port']}/good", "sub": "alice-0001", "aud": req.client.get_client_id(),
                          "email": "alice@example.test", "name": "Alice Example", "iat": now, "exp": now + 3600}
                code = getattr(req, "credential", None)
                nonce = code.get_nonce() if isinstance(code, AuthorizationCode) else None
                if nonce:
                    claims["nonce"] = "other-" + nonce if replayed_nonce["on"] else nonce
                data["id_token"] = jose_jwt.encode({"alg": "HS256"}, claims, b"id-token-key").decode()
            grant = req.grant_type or "authorization_code"
            family = getattr(req, "credential", None)
            family = family.family if family is not None and hasattr(family, "family") else secrets.token_hex(8)
            user = req.user if isinstance(req.user, str) else None
            t = Token(data, req.client.get_client_id(), user, family)
            tokens[t.access_token] = t
            if t.refresh_token:
                refresh_index[t.refresh_token] = t
            stats["issued_" + grant] += 1

    server = AuthorizationServer(app, query_client=query_client, save_token=save_token)
    server.register_grant(CodeGrant, [CodeChallenge(required=False)])
    server.register_grant(RotatingRefreshGrant)
    server.register_grant(BotGrant)
    server.register_grant(DeviceGrant)
    server.register_grant(AssertionGrant)
    server.register_grant(TokenExchangeGrant)
    token_url = f"http://127.0.0.1:{port_holder['port']}/token"
    server.register_client_auth_method(PrivateKeyJWTAuth.CLIENT_AUTH_METHOD, PrivateKeyJWTAuth(token_url))
    server.register_client_auth_method(ClientSecretJWTAuth.CLIENT_AUTH_METHOD, ClientSecretJWTAuth(token_url))
    DeviceEndpoint.verification_uri = f"http://127.0.0.1:{port_holder['port']}/device"
    server.register_endpoint(DeviceEndpoint)
    server.register_endpoint(Revocation)
    server.register_endpoint(Introspection)
    protect = ResourceProtector()
    protect.register_token_validator(Validator())

    @app.route("/authorize")
    def authorize():
        # As Debian's packaged OpenID providers do: openid without a nonce is refused.
        if "openid" in request.args.get("scope", "").split() and not request.args.get("nonce"):
            with lock:
                stats["nonce_missing"] += 1
            target = request.args.get("redirect_uri", "") + "?" + urllib.parse.urlencode(
                {"error": "invalid_request", "error_description": "nonce required", "state": request.args.get("state", "")})
            return redirect(target)
        if request.args.get("deny"):
            return server.create_authorization_response(grant_user=None)
        return server.create_authorization_response(grant_user="alice")

    @app.route("/token", methods=["POST"])
    def token():
        with lock:
            stats["token_requests"] += 1
        return server.create_token_response()

    @app.route("/device_authorization", methods=["POST"])
    def device_authorization():
        return server.create_endpoint_response(DeviceEndpoint.ENDPOINT_NAME)

    @app.route("/device/approve")
    def device_approve():
        code = request.args.get("user_code", "")
        with lock:
            if not any(d["user_code"] == code for d in devices.values()):
                return jsonify(error="unknown user_code"), 404
            device_grants[code] = ("alice", not request.args.get("deny"))
        return jsonify(ok=True)

    @app.route("/revoke", methods=["POST"])
    def revoke():
        return server.create_endpoint_response(Revocation.ENDPOINT_NAME)

    @app.route("/introspect", methods=["POST"])
    def introspect():
        return server.create_endpoint_response(Introspection.ENDPOINT_NAME)

    @app.route("/admin/revoke-access", methods=["POST"])
    def revoke_access():
        with lock:
            t = tokens.get(request.form.get("token", ""))
            if t is None:
                return jsonify(error="unknown token"), 404
            t.access_revoked = True
        return jsonify(ok=True)

    @app.route("/api/me")
    @protect("read")
    def me():
        return jsonify(user="alice", name="Alice Example")

    @app.route("/api/admin-me")  # a userinfo that needs a scope no login here asks for
    @protect("admin")
    def admin_me():
        return jsonify(user="alice", name="Alice Example")

    def metadata(issuer):
        return {"issuer": issuer, "authorization_endpoint": f"{base}/authorize", "token_endpoint": f"{base}/token",
                "revocation_endpoint": f"{base}/revoke", "device_authorization_endpoint": f"{base}/device_authorization",
                "userinfo_endpoint": f"{base}/userinfo", "response_types_supported": ["code"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "private_key_jwt"]}

    base = f"http://127.0.0.1:{port_holder['port']}"

    @app.route("/<name>/.well-known/openid-configuration")
    def oidc_discovery(name):
        with lock:
            stats["discovery_" + name] += 1
        if name == "good":
            return jsonify(metadata(f"{base}/good"))
        if name == "liar":
            return jsonify(metadata("https://idp.evil.example"))
        if name == "broken":
            doc = metadata(f"{base}/broken")
            del doc["token_endpoint"]
            return jsonify(doc)
        return jsonify(error="not found"), 404

    @app.route("/.well-known/oauth-authorization-server/<name>")
    def rfc8414_discovery(name):
        with lock:
            stats["discovery_" + name] += 1
        if name == "as":
            return jsonify(metadata(f"{base}/as"))
        return jsonify(error="not found"), 404

    @app.route("/userinfo")
    @protect()
    def userinfo():
        return jsonify(sub="alice-0001", name="Alice Example", email="alice@example.test")

    @app.route("/admin/replay-nonce", methods=["POST"])
    def replay_nonce():
        replayed_nonce["on"] = True
        return jsonify(ok=True)

    @app.route("/stats")
    def show_stats():
        with lock:
            return jsonify(dict(stats))

    return app


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--token-ttl", type=int, default=3600)
    ap.add_argument("--slow-down", action="store_true")
    ap.add_argument("--refresh-ttl", type=int, default=0)
    ap.add_argument("--keys")
    ap.add_argument("--clock-skew", type=int, default=0)
    args = ap.parse_args()
    clock_skew["seconds"] = args.clock_skew
    if args.keys:
        for f in sorted(os.listdir(args.keys)):
            if f.endswith(".pub.pem"):
                name = f[:-len(".pub.pem")]
                public_keys[name] = JsonWebKey.import_key(open(os.path.join(args.keys, f), "rb").read())
                if name.startswith("tv-pkjwt"):
                    CLIENTS[name] = Client(name, "", {"client_credentials", "authorization_code", "refresh_token"})
    refresh_ttl["seconds"] = args.refresh_ttl
    slow_down_first["on"] = args.slow_down
    import socket
    if args.port == 0:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            args.port = probe.getsockname()[1]
    port_holder["port"] = args.port
    http = make_server("127.0.0.1", args.port, make_app(args.token_ttl), threaded=True)
    print(f"port {http.server_port}", flush=True)
    http.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
