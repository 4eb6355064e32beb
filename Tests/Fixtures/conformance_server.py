#!/usr/bin/env python3
"""The client authorization scenarios of the MCP conformance suite
(github modelcontextprotocol/conformance, src/scenarios/client/auth/), ported
to one small server per scenario: an MCP resource at /mcp and its
authorization server on the same port (the suite runs two; one origin serves
here, the authorization server at a path of its own where the suite's has
one). What the client does is recorded as the suite's checks, under the
suite's check ids, at GET /checks (a list of {"id", "status", "description"});
FAILURE and WARNING name what the suite would fail or warn about.

Each scenario is a row of SCENARIOS: the options the suite's createServer and
createAuthServer take (where the resource metadata is, what the 401 says,
what the authorization server lists and how it answers), plus a gate for the
scenarios whose MCP endpoint does more than check the token (step-up, retry
limit, migration). The rows:

  metadata-default|var1|var2|var3   where the PRM and the AS metadata are
  basic-cimd                        client_id_metadata_document_supported
  scope-from-www-authenticate|scope-from-scopes-supported|
  scope-omitted-when-undefined|scope-step-up|scope-retry-limit
  token-endpoint-auth-basic|post|none, pre-registration
  resource-mismatch                 the PRM names another origin's resource
  offline-access-scope|offline-access-not-supported
  authorization-server-migration    the PRM moves to a second issuer
  iss-supported|iss-not-advertised|iss-supported-missing|iss-wrong-issuer|
  iss-unexpected|iss-normalized, metadata-issuer-mismatch
  2025-03-26-oauth-metadata-backcompat|2025-03-26-oauth-endpoint-fallback
  no-oauth-at-all (ours)            a 401 and nothing else: no metadata, no /register
  client-credentials-basic|client-credentials-jwt (--key-out PATH: where the
                                    client's ES256 private key is written)
  wif-jwt-bearer (--wif-out DIR)    auth/wif-jwt-bearer (SEP-1933): the AS takes only the
                                    jwt-bearer grant with no client authentication; a workload
                                    issuer's ES256 key signs DIR/valid.jwt, DIR/wrong-audience.jwt
                                    and DIR/expired.jwt (audience: the AS); a second token request
                                    after a refusal is the suite's wif-no-retry (or
                                    wif-grant-fallback) warning
  enterprise-managed-authorization[-refresh-token] (--ema-out DIR)
                                    auth/enterprise-managed-authorization (SEP-990) and its
                                    refresh-token variant: an enterprise IdP at /idp trades its
                                    login for an ID-JAG, which the AS takes with the jwt-bearer
                                    grant (conformance_ema.py)
  token-exchange (ours, --ema-out DIR)  the AS takes the token exchange of that IdP's ID token
  dpop|dpop-nonce                   auth/dpop and auth/dpop-nonce (SEP-1932): the AS lists
                                    ES256 proofs and binds its tokens to the proof's key; the
                                    resource answers 401 with a DPoP challenge and judges the
                                    scheme and a fresh proof on every request; with -nonce both
                                    ask for a nonce first (dpop_proof.py checks each proof)

Every scenario checks the authorization request and the token request for
PKCE (S256), the resource parameter (RFC 8707) and the client's
authentication; the MCP endpoint takes any JSON-RPC request with a token the
AS issued (either era: with or without a session) and answers it.

Usage: conformance_server.py --scenario NAME [--key-out PATH]; prints "port N"
once listening.
"""
import argparse
import base64
import hashlib
import json
import secrets
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dpop_proof

PRM = "/.well-known/oauth-protected-resource/mcp"
CIMD_URL = "https://conformance-test.local/client-metadata.json"
AS1_CLIENT = "as1-client-id-LEAKED-IF-SEEN-AT-AS2"

# The suite's options, by scenario. Defaults: PRM at PRM, named in the 401;
# the AS at the origin, its metadata at the RFC 8414 root path; dynamic
# registration with client_secret_post; the code and refresh grants.
SCENARIOS = {
    "metadata-default": {"root_prm_is_wrong": True},
    "metadata-var1": {"prm_in_challenge": False, "as_metadata": "/.well-known/openid-configuration"},
    "metadata-var2": {"prm": "/.well-known/oauth-protected-resource", "prm_in_challenge": False,
                      "as_path": "/tenant1", "as_metadata": "/.well-known/oauth-authorization-server/tenant1"},
    "metadata-var3": {"prm": "/custom/metadata/location.json", "as_path": "/tenant1",
                      "as_metadata": "/tenant1/.well-known/openid-configuration"},
    "basic-cimd": {"cimd": True},
    "scope-from-www-authenticate": {"challenge_scope": "mcp:basic"},
    "scope-from-scopes-supported": {"prm_scopes": ["mcp:basic", "mcp:read", "mcp:write"]},
    "scope-omitted-when-undefined": {},
    "scope-step-up": {"challenge_scope": "mcp:basic", "prm_scopes": ["mcp:profile"], "gate": "step-up"},
    "scope-retry-limit": {"challenge_scope": "mcp:admin", "prm_scopes": ["mcp:admin"], "gate": "retry-limit"},
    "token-endpoint-auth-basic": {"methods": ["client_secret_basic"]},
    "token-endpoint-auth-post": {"methods": ["client_secret_post"]},
    "token-endpoint-auth-none": {"methods": ["none"]},
    "pre-registration": {"methods": ["client_secret_basic"], "registration": False,
                         "pre": ("conformance-client", "conformance-secret", "client_secret_basic")},
    "resource-mismatch": {"prm_resource": "https://other.example.com/mcp"},
    "offline-access-scope": {"as_scopes": ["mcp:basic", "offline_access"], "prm_scopes": ["mcp:basic"]},
    "offline-access-not-supported": {"as_scopes": ["mcp:basic", "mcp:read"], "prm_scopes": ["mcp:basic", "mcp:read"]},
    "authorization-server-migration": {"challenge_scope": "mcp:basic", "gate": "migration", "as_path": "/as1"},
    "iss-supported": {"iss_supported": True, "iss": "correct"},
    "iss-not-advertised": {},
    "iss-supported-missing": {"iss_supported": True},
    "iss-wrong-issuer": {"iss_supported": True, "iss": "wrong"},
    "iss-unexpected": {"iss": "wrong"},
    "iss-normalized": {"iss_supported": True, "iss": "normalized"},
    "metadata-issuer-mismatch": {"metadata_issuer": "https://attacker.example.com"},
    "2025-03-26-oauth-metadata-backcompat": {"prm": None, "endpoints": "/oauth"},
    "2025-03-26-oauth-endpoint-fallback": {"prm": None, "as_metadata": None},
    # Not the suite's: a resource that answers 401 and offers nothing of OAuth, not even the fallbacks.
    "no-oauth-at-all": {"prm": None, "as_metadata": None, "registration": False},
    "client-credentials-basic": {"grants": ["client_credentials"], "methods": ["client_secret_basic"],
                                 "registration": False,
                                 "pre": ("conformance-test-client", "conformance-test-secret", "client_secret_basic")},
    "client-credentials-jwt": {"grants": ["client_credentials"], "methods": ["private_key_jwt"],
                               "registration": False, "pre": ("conformance-test-client", None, "private_key_jwt")},
    "wif-jwt-bearer": {"grants": ["urn:ietf:params:oauth:grant-type:jwt-bearer"], "methods": ["none"],
                       "registration": False},
    "enterprise-managed-authorization": {"grants": ["urn:ietf:params:oauth:grant-type:jwt-bearer"],
                                         "methods": ["client_secret_basic"], "registration": False},
    "enterprise-managed-authorization-refresh-token": {"grants": ["urn:ietf:params:oauth:grant-type:jwt-bearer"],
                                                       "methods": ["client_secret_basic"], "registration": False},
    "token-exchange": {"grants": ["urn:ietf:params:oauth:grant-type:token-exchange"],
                       "methods": ["client_secret_basic"], "registration": False},
    "dpop": {"dpop": True},
    "dpop-nonce": {"dpop": True, "dpop_nonce": True},
}
AS_NONCE, RS_NONCE = "conformance-as-dpop-nonce", "conformance-rs-dpop-nonce"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"

lock = threading.Lock()
checks = []
clients = {}  # client_id -> (secret or None, auth method, issuer)
codes = {}  # code -> (client_id, challenge, redirect_uri, resource, scope, issuer)
tokens = {}  # access or refresh token -> (scopes, issuer, kind)
state = {"base": "", "scenario": "", "authorized": [], "token_requests": [], "metadata_requested": False,
         "migrated": False, "calls_with_token": 0, "public_key": None,
         "wif": {"received": False, "failed": False, "public_key": None},
         # auth/dpop: what the suite's DPoP observations hold.
         "dpop": {"token_recorded": False, "token_proof": None, "as_challenged": False, "as_honored": False,
                  "authenticated": 0, "schemes": [], "proof_error": None, "rs_challenged": False,
                  "rs_honored": False},
         "enterprise": None}


def opt(name, default=None):
    return SCENARIOS[state["scenario"]].get(name, default)


def check(check_id, status, description, **details):
    if status is True or status is False:
        status = "SUCCESS" if status else "FAILURE"
    with lock:
        checks.append({"id": check_id, "status": status, "description": description, "details": details})


def issuers():
    """The authorization servers, as the PRM names them: one, or two for the migration."""
    base = state["base"]
    if opt("gate") == "migration":
        return [base + "/as1", base + "/as2"]
    return [base + opt("as_path", "")]


def current_issuer():
    return issuers()[1 if state["migrated"] else 0]


def issuer_of(path):
    """The issuer whose endpoints `path` is under, and the endpoint's name."""
    for i in issuers():
        prefix = urllib.parse.urlsplit(i).path + opt("endpoints", "")
        for name in ("authorize", "token", "register"):
            if path == prefix + "/" + name:
                return i, name
    return None, None


def resource_url():
    if opt("prm_resource"):
        return opt("prm_resource")
    if opt("prm", PRM) == "/.well-known/oauth-protected-resource":
        return state["base"]
    return state["base"] + "/mcp"


def as_metadata_path(issuer):
    path = opt("as_metadata", "/.well-known/oauth-authorization-server")
    if path is None or opt("gate") != "migration":
        return path
    return "/.well-known/oauth-authorization-server" + urllib.parse.urlsplit(issuer).path


def as_metadata(i):
    e = i + opt("endpoints", "")
    doc = {"issuer": opt("metadata_issuer", i), "authorization_endpoint": e + "/authorize",
           "token_endpoint": e + "/token", "response_types_supported": ["code"],
           "grant_types_supported": opt("grants", ["authorization_code", "refresh_token"]),
           "code_challenge_methods_supported": ["S256"],
           "token_endpoint_auth_methods_supported": opt("methods", ["client_secret_post", "none"])}
    if opt("registration", True):
        doc["registration_endpoint"] = e + "/register"
    if opt("as_scopes"):
        doc["scopes_supported"] = opt("as_scopes")
    if opt("cimd"):
        doc["client_id_metadata_document_supported"] = True
    if opt("iss_supported"):
        doc["authorization_response_iss_parameter_supported"] = True
    if opt("dpop"):
        doc["dpop_signing_alg_values_supported"] = ["ES256"]
    if "private_key_jwt" in doc["token_endpoint_auth_methods_supported"]:
        doc["token_endpoint_auth_signing_alg_values_supported"] = ["ES256"]
    return doc


def verdicts():
    """The checks the suite computes once the client is done."""
    s = state["scenario"]
    authorized, token_requests = state["authorized"], state["token_requests"]
    out = []

    def add(check_id, ok, description, **details):
        out.append({"id": check_id, "status": "SUCCESS" if ok else "FAILURE", "description": description,
                    "details": details})

    code_tokens = [t for t in token_requests if t["grant"] == "authorization_code"]
    if state["enterprise"]:
        state["enterprise"].verdicts(add)
    if s == "wif-jwt-bearer" and not token_requests:
        add("wif-assertion-verified", False, "Client did not make a JWT-bearer token request")
    if s == "iss-supported":
        add("sep-2468-client-compare-iss-supported", bool(code_tokens), "the correct iss was taken")
    if s == "iss-not-advertised":
        add("sep-2468-client-proceed-no-iss", bool(code_tokens), "no iss, none promised: the client went on")
    if s == "iss-supported-missing":
        add("sep-2468-client-reject-missing-iss", bool(authorized) and not code_tokens,
            "iss promised and absent: the client must not exchange the code")
    if s == "iss-wrong-issuer":
        add("sep-2468-client-compare-iss-supported", bool(authorized) and not code_tokens,
            "another issuer's iss: the client must not exchange the code")
    if s == "iss-unexpected":
        add("sep-2468-client-compare-iss-unadvertised", bool(authorized) and not code_tokens,
            "an iss that differs, though none was promised: the client must not exchange the code")
    if s == "iss-normalized":
        add("sep-2468-client-no-normalization", bool(authorized) and not code_tokens,
            "an iss equal to the issuer only after normalisation: the client must not exchange the code")
    if s == "metadata-issuer-mismatch":
        add("sep-2468-client-validate-metadata-issuer", state["metadata_requested"] and not authorized
            and not token_requests, "the metadata names another issuer: its endpoints must not be used")
    if s == "scope-retry-limit":
        add("scope-retry-limit", 0 < len(authorized) <= 3,
            f"{len(authorized)} authorization attempts (3 or fewer)", attempts=len(authorized))
    if s == "authorization-server-migration":
        as2 = issuers()[1]
        registered = any(c[2] == as2 for c in clients.values())
        reused = any(a["issuer"] == as2 and a["client_id"] == AS1_CLIENT for a in authorized) or any(
            t["issuer"] == as2 and t["client_id"] == AS1_CLIENT for t in token_requests)
        add("sep-2352-reregister-on-as-change", registered, "the client registered at the new authorization server")
        add("sep-2352-no-reuse-on-as-change", not reused, "the old server's client id was not used at the new one")
        add("sep-2352-no-cross-as-credential-reuse", not reused, "credentials are bound to their server")
    if opt("dpop"):
        d = state["dpop"]
        add("sep-1932-client-token-request-proof", d["token_recorded"] and d["token_proof"] is True,
            "a valid DPoP proof at the authorization_code token request", error=d["token_proof"])
        add("sep-1932-client-dpop-auth-scheme", d["authenticated"] > 0 and all(
            x.lower() == "dpop" for x in d["schemes"]), "the token presented with the DPoP scheme",
            schemes=sorted(set(d["schemes"])))
        add("sep-1932-client-fresh-proof", d["authenticated"] > 0 and d["proof_error"] is None,
            "a fresh, well-formed proof on every MCP request", error=d["proof_error"])
        if opt("dpop_nonce"):
            add("sep-1932-client-as-nonce", d["as_challenged"] and d["as_honored"],
                "the token request retried with the server's nonce")
            add("sep-1932-client-rs-nonce", d["rs_challenged"] and d["rs_honored"],
                "the MCP request retried with the server's nonce")
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, code, body=b"", headers=(), content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        if path == "/checks":
            with lock:
                return self.send(200, list(checks) + verdicts())
        if state["enterprise"] and path == "/idp/.well-known/openid-configuration":
            return self.send(200, state["enterprise"].metadata())
        prm = opt("prm", PRM)
        if path == "/.well-known/oauth-protected-resource" and opt("root_prm_is_wrong"):
            check("prm-priority-order", False, "Client requested PRM metadata at root location on a server with "
                                               "path-based PRM")
            return self.send(404, {"error": "not_found"})
        if prm and path == prm:
            doc = {"resource": resource_url(), "authorization_servers": [current_issuer()]}
            if opt("prm_scopes"):
                doc["scopes_supported"] = opt("prm_scopes")
            return self.send(200, doc)
        for i in issuers():
            if as_metadata_path(i) and path == as_metadata_path(i):
                with lock:
                    state["metadata_requested"] = True
                check("authorization-server-metadata", True, "Client requested the authorization server metadata")
                return self.send(200, as_metadata(i))
        if path == "/.well-known/oauth-authorization-server" and opt("as_path") == "/tenant1":
            check("authorization-server-metadata-wrong-path", False,
                  "Client requested authorization server at the root path when the AS URL has a path-based location")
            return self.send(404, {"error": "not_found"})
        i, name = issuer_of(path)
        if name == "authorize":
            return self.authorize(i, urllib.parse.parse_qs(url.query))
        self.send(404, {"error": "not_found"})

    def authorize(self, issuer, q):
        one = {k: v[0] for k, v in q.items()}
        scope = one.get("scope")
        asked = scope.split(" ") if scope else []
        client = one.get("client_id", "")
        with lock:
            state["authorized"].append({"issuer": issuer, "client_id": client, "scope": scope})
            attempt = len(state["authorized"])
        check("authorization-request", True, "Client made the authorization request at the endpoint it was given")
        self.scope_checks(attempt, asked, scope)
        if opt("prm_resource"):
            check("resource-mismatch-authorization", False, "Client went on to authorize for a resource whose "
                                                            "metadata names another resource")
        if opt("cimd"):
            check("cimd-client-id-used", "SUCCESS" if client == CIMD_URL else "WARNING",
                  "Client used its metadata document's URL as client id", actualClientId=client)
        check("authorization-pkce", one.get("code_challenge_method") == "S256" and bool(one.get("code_challenge")),
              "PKCE with S256 on the authorization request")
        check("authorization-resource", one.get("resource") == resource_url(),
              "RFC 8707 resource on the authorization request", resource=one.get("resource"))
        known = clients.get(client)
        pre = opt("pre")
        if not ((known and known[2] == issuer) or (pre and client == pre[0]) or (opt("cimd") and client == CIMD_URL)):
            return self.send(400, {"error": "invalid_client"})
        code = "code-" + secrets.token_hex(8)
        with lock:
            codes[code] = (client, one.get("code_challenge"), one.get("redirect_uri"), one.get("resource"), scope,
                           issuer)
        answer = {"code": code, "state": one.get("state", "")}
        iss = {"correct": issuer, "wrong": "https://evil.example.com", "normalized": issuer + "/"}.get(opt("iss"))
        if iss:
            answer["iss"] = iss
        self.send(302, b"", [("Location", one["redirect_uri"] + "?" + urllib.parse.urlencode(answer))])

    def scope_checks(self, attempt, asked, scope):
        s = state["scenario"]
        shown = scope or "none"
        if s == "scope-from-www-authenticate":
            check(s, "SUCCESS" if "mcp:basic" in asked else "WARNING", "the challenge's scope was asked for",
                  requestedScope=shown)
        if s == "scope-from-scopes-supported":
            every = all(x in asked for x in opt("prm_scopes"))
            check(s, "SUCCESS" if every else "WARNING", "every scope of scopes_supported was asked for",
                  requestedScope=shown)
        if s == "scope-omitted-when-undefined":
            check(s, "SUCCESS" if scope is None else "WARNING", "no scope parameter where none is defined",
                  requestedScope=shown)
        if s == "scope-step-up" and attempt == 1:
            check("scope-step-up-initial", "SUCCESS" if "mcp:basic" in asked else "WARNING",
                  "the first authorization asked for the 401's scope", requestedScope=shown)
        if s == "scope-step-up" and attempt > 1:
            check("scope-step-up-escalation", "SUCCESS" if "mcp:write" in asked else "WARNING",
                  "the second authorization asked for the 403's scope", requestedScope=shown)
            check("sep-2350-scope-union-on-reauth", "SUCCESS" if "mcp:basic" in asked else "WARNING",
                  "the second authorization kept the scope granted before", requestedScope=shown)
        if s == "scope-retry-limit":
            check("scope-retry-auth-attempt", "INFO", f"authorization attempt {attempt}", requestedScope=shown)
        if s == "offline-access-scope":
            check("sep-2207-offline-access-requested", "SUCCESS" if "offline_access" in asked else "INFO",
                  "offline_access asked for where the AS lists it", requestedScope=shown)
        if s == "offline-access-not-supported":
            check("sep-2207-offline-access-not-requested", "offline_access" not in asked,
                  "offline_access not asked for where the AS does not list it", requestedScope=shown)

    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        data = self.body()
        if path == "/mcp":
            return self.mcp(data)
        if state["enterprise"] and path == "/idp/token":
            return state["enterprise"].idp_token(self, {k: v[0] for k, v in urllib.parse.parse_qs(data.decode()).items()})
        i, name = issuer_of(path)
        if name == "register" and opt("registration", True):
            return self.register(i, json.loads(data or b"{}"))
        if name == "token":
            return self.token(i, {k: v[0] for k, v in urllib.parse.parse_qs(data.decode()).items()})
        self.send(404, {"error": "not_found"})

    def register(self, issuer, asked):
        check("client-registration", True, "Client registered at the registration endpoint it was given")
        if state["scenario"] == "offline-access-scope":
            check("sep-2207-client-metadata-grant-types",
                  "SUCCESS" if "refresh_token" in asked.get("grant_types", []) else "WARNING",
                  "the registration asks for the refresh_token grant", grantTypes=asked.get("grant_types"))
        methods = opt("methods")
        method = methods[0] if methods else "client_secret_post"
        client_id = AS1_CLIENT if issuer.endswith("/as1") else "client-" + secrets.token_hex(4)
        secret = None if method == "none" else "secret-" + secrets.token_hex(8)
        with lock:
            clients[client_id] = (secret, method, issuer)
        answer = dict(asked, client_id=client_id, token_endpoint_auth_method=method)
        if secret:
            answer["client_secret"] = secret
        self.send(201, answer)

    def client_auth(self, form):
        """Who the client says it is, its secret or assertion, the method it used, and what was malformed."""
        header = self.headers.get("Authorization", "")
        if header.startswith("Basic "):
            try:
                decoded = base64.b64decode(header[6:]).decode()
            except Exception:
                return None, None, "client_secret_basic", "base64 decoding failed"
            if ":" not in decoded:
                return None, None, "client_secret_basic", "missing colon separator"
            cid, secret = decoded.split(":", 1)
            return urllib.parse.unquote_plus(cid), urllib.parse.unquote_plus(secret), "client_secret_basic", None
        if form.get("client_assertion"):
            malformed = None
            if form.get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
                malformed = "client_assertion_type"
            return form.get("client_id"), form["client_assertion"], "private_key_jwt", malformed
        if form.get("client_secret"):
            return form.get("client_id"), form.get("client_secret"), "client_secret_post", None
        return form.get("client_id"), None, "none", None

    def assertion_ok(self, assertion, issuer):
        """RFC 7523 §3 as the suite reads it: signed by the client's key, iss and sub the client, aud the issuer."""
        from authlib.jose import jwt
        try:
            claims = jwt.decode(assertion, state["public_key"])
            claims.validate(leeway=30)
        except Exception as e:
            check("client-credentials-jwt-verified", False, f"JWT verification failed: {e}")
            return False
        pre = opt("pre")[0]
        aud = claims.get("aud")
        auds = aud if isinstance(aud, list) else [aud]
        if claims.get("iss") != pre or claims.get("sub") != pre:
            check("client-credentials-jwt-iss", False, "iss and sub must be the client id", iss=claims.get("iss"),
                  sub=claims.get("sub"))
            return False
        if not any(a in (issuer, issuer + "/") for a in auds):
            check("client-credentials-jwt-verified", False, "the audience must be the issuer identifier", aud=aud)
            return False
        check("client-credentials-jwt-verified", True, "Client authenticated with a signed JWT assertion", aud=aud)
        return True

    def workload_token(self, issuer, form):
        """auth/wif-jwt-bearer's token endpoint: the workload's JWT verified
        (signature, audience the AS, expiry with 5 s of tolerance); after a
        refusal, any second request is a retry the suite warns about."""
        from authlib.jose import JoseError, JsonWebToken
        from authlib.jose.errors import ExpiredTokenError, InvalidClaimError
        grant = form.get("grant_type")
        wif = state["wif"]
        with lock:
            state["token_requests"].append({"issuer": issuer, "client_id": form.get("client_id"), "grant": grant})
            again, failed = wif["received"], wif["failed"]
            wif["received"] = True
        if again and failed:
            if grant != JWT_BEARER:
                check("wif-grant-fallback", "WARNING", f"Client fell back to {grant} after a JWT-bearer refusal")
                return self.send(400, {"error": "unsupported_grant_type"})
            check("wif-no-retry", "WARNING", "Client retried the JWT-bearer token request after a failure")
            return self.send(400, {"error": "invalid_request", "error_description": "Retry not allowed"})

        def refuse(check_id, description, error, status=400):
            check(check_id, False, description)
            wif["failed"] = True
            return self.send(status, {"error": error, "error_description": description})

        if grant != JWT_BEARER:
            return refuse("wif-grant-type", f"Expected grant_type={JWT_BEARER}, got {grant}", "unsupported_grant_type")
        assertion = form.get("assertion")
        if not assertion:
            return refuse("wif-assertion-missing", "Missing assertion parameter", "invalid_request")
        try:
            claims = JsonWebToken(["ES256"]).decode(assertion, wif["public_key"])
            claims.validate(leeway=5)
            aud = claims.get("aud")
            auds = aud if isinstance(aud, list) else [aud]
            if not any(a in (issuer, issuer + "/") for a in auds):
                return refuse("wif-assertion-audience", f"the assertion's audience {aud} is not {issuer}",
                              "invalid_grant")
        except ExpiredTokenError:
            return refuse("wif-assertion-expired", "JWT-bearer assertion is expired", "invalid_grant")
        except (JoseError, ValueError, InvalidClaimError) as e:
            return refuse("wif-assertion-malformed", f"malformed or badly signed: {e}", "invalid_grant")
        check("wif-assertion-verified", True, "Workload JWT assertion verified: signature, audience and expiry")
        scopes = form.get("scope", "").split()
        access = "at-" + secrets.token_hex(8)
        with lock:
            tokens[access] = (scopes, issuer, "access")
        return self.send(200, {"access_token": access, "token_type": "Bearer", "expires_in": 3600,
                               "scope": " ".join(scopes)})

    def token(self, issuer, form):
        if state["scenario"] == "wif-jwt-bearer":
            return self.workload_token(issuer, form)
        if state["enterprise"]:
            return state["enterprise"].resource_token(self, issuer, form)
        grant = form.get("grant_type")
        cid, secret, used, malformed = self.client_auth(form)
        with lock:
            state["token_requests"].append({"issuer": issuer, "client_id": cid, "grant": grant})
        check("token-request", True, "Client requested a token at the token endpoint it was given", grantType=grant)
        s = state["scenario"]
        if s.startswith("token-endpoint-auth-") or s == "pre-registration":
            expected = opt("methods")[0]
            check("token-endpoint-auth-method", used == expected and malformed is None,
                  f"Client used {used} where the server supports only {expected}", formatError=malformed)
        if grant not in opt("grants", ["authorization_code", "refresh_token"]):
            if s.startswith("client-credentials-"):
                check("client-credentials-grant-type", False, f"Expected grant_type=client_credentials, got {grant}")
            return self.send(400, {"error": "unsupported_grant_type"})
        known = clients.get(cid)
        pre = opt("pre")
        if pre and cid == pre[0]:
            if pre[2] == "private_key_jwt":
                ok = used == "private_key_jwt" and malformed is None and self.assertion_ok(secret, issuer)
            else:
                ok = secret == pre[1] and used == pre[2]
                if s == "client-credentials-basic":
                    check("client-credentials-basic-auth", ok, "Client authenticated with client_secret_basic")
        elif opt("cimd") and cid == CIMD_URL:
            ok = used == "none"
        else:
            ok = known is not None and known[2] == issuer and (known[0] is None or secret == known[0])
        if not ok:
            return self.send(401, {"error": "invalid_client", "error_description": "client authentication failed"})
        check("token-resource", form.get("resource") == resource_url(), "RFC 8707 resource on the token request",
              resource=form.get("resource"))
        scope = form.get("scope")
        entry = None
        if grant == "authorization_code":
            with lock:
                entry = codes.pop(form.get("code", ""), None)
            if entry is None or entry[5] != issuer:
                return self.send(400, {"error": "invalid_grant"})
            verifier = form.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            check("token-pkce-verifier", digest == entry[1], "The code verifier matches the challenge")
            scope = entry[4]
        elif grant == "refresh_token":
            with lock:
                held = tokens.get(form.get("refresh_token", ""))
            if held is None or held[1] != issuer or held[2] != "refresh":
                return self.send(400, {"error": "invalid_grant"})
            scope = scope or " ".join(held[0])
        scopes = scope.split(" ") if scope else []
        access = "at-" + secrets.token_hex(8)
        answer = {"access_token": access, "token_type": "Bearer", "expires_in": 3600}
        if opt("dpop"):
            d = state["dpop"]
            token_url = issuer + opt("endpoints", "") + "/token"
            try:
                jkt, claims = dpop_proof.check(self.headers.get("DPoP"), "POST", token_url)
            except ValueError as e:
                if grant == "authorization_code":
                    d["token_recorded"], d["token_proof"] = True, str(e)
                return self.send(400, {"error": "invalid_dpop_proof", "error_description": str(e)})
            if opt("dpop_nonce") and claims.get("nonce") != AS_NONCE:
                d["as_challenged"] = True
                if grant == "authorization_code" and entry is not None:
                    with lock:
                        codes[form.get("code", "")] = entry  # the code stands for the retry
                return self.send(400, {"error": "use_dpop_nonce"}, [("DPoP-Nonce", AS_NONCE)])
            if opt("dpop_nonce"):
                d["as_honored"] = True
            if grant == "authorization_code":
                d["token_recorded"], d["token_proof"] = True, True
            answer["token_type"] = "DPoP"
            state.setdefault("jkt", {})[access] = jkt
        with lock:
            tokens[access] = (scopes, issuer, "access")
            if grant != "client_credentials" and s != "2025-03-26-oauth-endpoint-fallback":
                answer["refresh_token"] = "rt-" + secrets.token_hex(8)
                tokens[answer["refresh_token"]] = (scopes, issuer, "refresh")
        if scope:
            answer["scope"] = scope
        self.send(200, answer)

    def refuse(self, code, error, scope=None, headers=()):
        challenge = f'{"DPoP" if opt("dpop") else "Bearer"} error="{error}"'
        if scope:
            challenge += f', scope="{scope}"'
        prm = opt("prm", PRM)
        if prm and opt("prm_in_challenge", True):
            challenge += f', resource_metadata="{state["base"] + prm}"'
        self.send(code, {"error": error}, [("WWW-Authenticate", challenge)] + list(headers))

    def mcp(self, data):
        message = json.loads(data or b"null")
        method = message.get("method") if isinstance(message, dict) else None
        gate = opt("gate")
        open_method = method == "initialize" or (method or "").startswith("notifications/")
        header = self.headers.get("Authorization", "")
        if opt("dpop"):
            return self.dpop_mcp(message, header)
        with lock:
            held = tokens.get(header[7:]) if header.startswith("Bearer ") else None
        if held is None or held[2] != "access":
            if gate and open_method:
                return self.answer(message)
            return self.refuse(401, "invalid_token", opt("challenge_scope"))
        if state["enterprise"]:
            state["enterprise"].observed_call(method)
        if gate == "step-up" and not open_method:
            needed = "mcp:write" if method == "tools/call" else "mcp:basic"
            if needed not in held[0]:
                return self.refuse(403, "insufficient_scope", needed)
        if gate == "retry-limit" and not open_method:
            with lock:
                state["calls_with_token"] += 1
                over = state["calls_with_token"] > 3
            if over:
                return self.send(410, {"error": "test_complete"})
            return self.refuse(403, "insufficient_scope", "mcp:admin")
        if gate == "migration" and not open_method:
            with lock:
                first, state["migrated"] = not state["migrated"], True
            if not first and held[1] != issuers()[1]:
                return self.refuse(401, "invalid_token", opt("challenge_scope"))
        return self.answer(message)

    def dpop_mcp(self, message, header):
        """The suite's DPoP judge: a request without a token gets the DPoP
        challenge; one with a token is observed (scheme, proof) and let through."""
        if not header:
            return self.refuse(401, "invalid_token")
        d = state["dpop"]
        scheme, _, token = header.partition(" ")
        d["authenticated"] += 1
        d["schemes"].append(scheme)
        try:
            jkt, claims = dpop_proof.check(self.headers.get("DPoP"), "POST", resource_url(), token)
            if state.get("jkt", {}).get(token) != jkt:
                raise ValueError("the proof's key is not the one the token is bound to")
        except ValueError as e:
            d["proof_error"] = d["proof_error"] or str(e)
            return self.answer(message)
        if opt("dpop_nonce"):
            if claims.get("nonce") != RS_NONCE:
                d["rs_challenged"] = True
                return self.refuse(401, "use_dpop_nonce", headers=[("DPoP-Nonce", RS_NONCE)])
            d["rs_honored"] = True
        with lock:
            held = tokens.get(token)
        if held is None or held[2] != "access":
            return self.refuse(401, "invalid_token")
        return self.answer(message)

    def answer(self, message):
        if not isinstance(message, dict) or message.get("id") is None:
            return self.send(202, b"", content_type="text/plain")
        method = message.get("method")
        result = {"echo": method}
        if method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "conformance", "version": "1"}}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "ok"}]}
        self.send(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})


def make_key(path):
    """The client's ES256 key pair: the private half written for the client, the public half kept."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP256R1())
    with open(path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    state["public_key"] = key.public_key().public_bytes(serialization.Encoding.PEM,
                                                        serialization.PublicFormat.SubjectPublicKeyInfo)


def make_workload_tokens(directory):
    """auth/wif-jwt-bearer's three workload JWTs, signed by an issuer key of the run's own."""
    import time
    import uuid
    from authlib.jose import JsonWebToken
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    state["wif"]["public_key"] = key.public_key().public_bytes(serialization.Encoding.PEM,
                                                               serialization.PublicFormat.SubjectPublicKeyInfo)
    now = int(time.time())
    audience = issuers()[0]
    for name, aud, exp in (("valid", audience, now + 300), ("wrong-audience", "https://wrong.example", now + 300),
                           ("expired", audience, now - 60)):
        claims = {"iss": "https://idp.conformance-test.local", "sub": "conformance-workload", "aud": aud,
                  "iat": min(now, exp - 60), "exp": exp, "jti": uuid.uuid4().hex}
        token = JsonWebToken(["ES256"]).encode({"alg": "ES256", "typ": "JWT"}, claims, private).decode()
        with open(f"{directory}/{name}.jwt", "w") as f:
            f.write(token + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True, choices=sorted(SCENARIOS))
    ap.add_argument("--key-out")
    ap.add_argument("--wif-out")
    ap.add_argument("--ema-out")
    args = ap.parse_args()
    state["scenario"] = args.scenario
    if args.key_out:
        make_key(args.key_out)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state["base"] = f"http://127.0.0.1:{server.server_address[1]}"
    if args.wif_out:
        make_workload_tokens(args.wif_out)
    if args.scenario.startswith("enterprise-managed-authorization") or args.scenario == "token-exchange":
        import conformance_ema
        import sys
        state["enterprise"] = conformance_ema.Enterprise(sys.modules[__name__], args.scenario.endswith("-refresh-token"),
                                                         exchange_at_resource=args.scenario == "token-exchange")
        if args.ema_out:
            state["enterprise"].write_logins(args.ema_out)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
