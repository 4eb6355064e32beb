"""The conformance suite's enterprise-managed authorization scenarios
(SEP-990; suite src/scenarios/client/auth/enterprise-managed-authorization.ts
and the refresh-token variant of suite PR #484), for conformance_server.py.

The suite runs three servers; here the enterprise IdP lives at the path /idp
of the scenario's one origin (issuer BASE/idp, its OpenID configuration at
/idp/.well-known/openid-configuration). Its token endpoint takes the token
exchange of the IdP login's ID token (or, in the refresh-token variant, its
refresh token) for an ID-JAG, and the refresh_token grant (a fresh ID token,
the refresh token rotated). The resource's authorization server takes only
the jwt-bearer grant, with client_secret_basic, and verifies the ID-JAG as
the suite does: its typ, signature, audience, client_id and resource.

--ema-out DIR writes the IdP login a person would hold (a token response:
access token, ID token, refresh token) as DIR/idp-login.json, and the same
login whose ID token has expired as DIR/idp-login-stale.json.

Not the suite's: token-exchange, where the resource's authorization server
itself takes the token exchange (RFC 8693) of the IdP login's ID token, with
client_secret_basic (check token-exchange-grant).

Check ids: the suite's complete-flow-token-exchange and
complete-flow-jwt-bearer; for the refresh-token variant also
refresh-token-client-binding, refresh-token-scope-narrowing and
complete-flow-mcp-access (what PR #484 says its fixture checks). INFO
idp-refresh counts the IdP's refresh_token grants.
"""
import json
import secrets
import time
import uuid

from authlib.jose import JsonWebSignature, JsonWebToken
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

CLIENT_ID, CLIENT_SECRET = "conformance-test-xaa-client", "conformance-test-xaa-secret"
IDP_CLIENT_ID, IDP_CLIENT_SECRET = "conformance-test-idp-client", "conformance-test-idp-secret"
USER = "demo-user@example.com"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
REFRESH_TOKEN = "urn:ietf:params:oauth:token-type:refresh_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
GRANTED = ["mcp:basic", "mcp:read"]  # what the IdP login's refresh token may be narrowed from
ES256 = JsonWebToken(["ES256"])


def keypair():
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public


class Enterprise:
    def __init__(self, server, refresh_variant, exchange_at_resource=False):
        """server: conformance_server's module (check, lock, tokens, state, resource_url)."""
        self.s = server
        self.refresh_variant = refresh_variant
        self.exchange_at_resource = exchange_at_resource
        self.idp_private, self.idp_public = keypair()
        self.grant_keys = {}  # user -> the public key of the ID-JAGs issued for them
        self.idp_refresh = {}  # refresh token -> (client id, scopes)

    @property
    def issuer(self):
        return self.s.state["base"] + "/idp"

    def id_token(self, lifetime=3600):
        now = int(time.time())
        claims = {"iss": self.issuer, "sub": USER, "email": USER, "aud": IDP_CLIENT_ID,
                  "iat": min(now, now + lifetime - 60), "exp": now + lifetime}
        return ES256.encode({"alg": "ES256"}, claims, self.idp_private).decode()

    def login(self, id_lifetime=3600):
        """A token response of the IdP's, its refresh token known to the IdP."""
        refresh = "idp-rt-" + secrets.token_hex(8)
        with self.s.lock:
            self.idp_refresh[refresh] = (IDP_CLIENT_ID, list(GRANTED))
        return {"access_token": "idp-at-" + secrets.token_hex(8), "token_type": "Bearer", "expires_in": 3600,
                "refresh_token": refresh, "id_token": self.id_token(id_lifetime), "scope": "openid " + " ".join(GRANTED)}

    def write_logins(self, directory):
        for name, lifetime in (("idp-login", 3600), ("idp-login-stale", -60)):
            with open(f"{directory}/{name}.json", "w") as f:
                json.dump(self.login(lifetime), f)

    def metadata(self):
        return {"issuer": self.issuer, "authorization_endpoint": self.issuer + "/authorize",
                "token_endpoint": self.issuer + "/token", "jwks_uri": self.issuer + "/jwks",
                "response_types_supported": ["code"], "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["ES256"],
                "grant_types_supported": [TOKEN_EXCHANGE, "refresh_token"]}

    # The IdP's token endpoint.

    def idp_token(self, handler, form):
        check = self.s.check
        grant = form.get("grant_type")
        cid, secret, _, _ = handler.client_auth(form)
        if grant == "refresh_token":
            return self.idp_renewal(handler, form, cid)
        if grant != TOKEN_EXCHANGE:
            check("complete-flow-token-exchange", False, f"IdP expected token-exchange grant, got {grant}")
            return handler.send(400, {"error": "unsupported_grant_type"})
        subject, subject_type = form.get("subject_token"), form.get("subject_token_type")
        expected_type = REFRESH_TOKEN if self.refresh_variant else ID_TOKEN
        missing = [name for name, ok in (
            ("subject_token", subject), ("subject_token_type", subject_type == expected_type),
            ("requested_token_type", form.get("requested_token_type") == ID_JAG),
            ("audience", form.get("audience")), ("resource", form.get("resource"))) if not ok]
        if missing:
            check("complete-flow-token-exchange", False, f"missing or invalid parameters: {', '.join(missing)}")
            return handler.send(400, {"error": "invalid_request", "error_description": ", ".join(missing)})
        resource = form.get("resource")
        asked = (form.get("scope") or "").split()
        if self.refresh_variant:
            with self.s.lock:
                held = self.idp_refresh.get(subject)
            if held is None:
                check("complete-flow-token-exchange", False, "the refresh token is not one the IdP issued")
                return handler.send(400, {"error": "invalid_grant"})
            bound = cid == held[0] and secret == IDP_CLIENT_SECRET
            check("refresh-token-client-binding", bound, "the refresh token exchanged by the client it was issued "
                                                         "to, authenticated", clientId=cid)
            if not bound:
                return handler.send(401, {"error": "invalid_client"})
            narrow = all(x in held[1] for x in asked)
            check("refresh-token-scope-narrowing", narrow, "the scope asked for is within the refresh token's",
                  scope=form.get("scope"))
            if not narrow:
                return handler.send(400, {"error": "invalid_scope"})
            user = USER
        else:
            try:
                claims = ES256.decode(subject, self.idp_public)
                claims.validate()
                if claims.get("aud") != IDP_CLIENT_ID or claims.get("iss") != self.issuer:
                    raise ValueError("the ID token is for another client or issuer")
                user = claims["sub"]
            except Exception as e:
                check("complete-flow-token-exchange", False, f"Token exchange failed: {e}")
                return handler.send(400, {"error": "invalid_grant", "error_description": "Invalid ID token"})
        if form.get("audience") not in (self.s.issuers()[0], self.s.issuers()[0] + "/") \
                or resource != self.s.resource_url():
            check("complete-flow-token-exchange", False, "the ID-JAG asked for another audience or resource",
                  audience=form.get("audience"), resource=resource)
            return handler.send(400, {"error": "invalid_target"})
        check("complete-flow-token-exchange", True, "exchanged the IdP login for an ID-JAG with every parameter")
        private, public = keypair()
        with self.s.lock:
            self.grant_keys[user] = public
        now = int(time.time())
        claims = {"iss": self.issuer, "sub": user, "aud": form.get("audience"), "resource": resource,
                  "client_id": CLIENT_ID, "iat": now, "exp": now + 300, "jti": str(uuid.uuid4())}
        if asked:
            claims["scope"] = " ".join(asked)
        # JsonWebToken.encode would write typ JWT over the profile's own.
        jag = JsonWebSignature(["ES256"]).serialize_compact(
            {"alg": "ES256", "typ": "oauth-id-jag+jwt"}, json.dumps(claims).encode(), private).decode()
        handler.send(200, {"access_token": jag, "issued_token_type": ID_JAG, "token_type": "N_A",
                           "expires_in": 300})

    def idp_renewal(self, handler, form, cid):
        """The IdP's refresh_token grant: a new access token and ID token, the refresh token rotated."""
        with self.s.lock:
            held = self.idp_refresh.pop(form.get("refresh_token", ""), None)
        self.s.check("idp-refresh", "INFO", "the client renewed its IdP login", known=held is not None)
        if held is None or held[0] != cid:
            return handler.send(400, {"error": "invalid_grant"})
        answer = self.login()
        with self.s.lock:
            self.idp_refresh[answer["refresh_token"]] = held
        handler.send(200, answer)

    # The resource's authorization server.

    def resource_token(self, handler, issuer, form):
        check = self.s.check
        with self.s.lock:
            self.s.state["token_requests"].append({"issuer": issuer, "client_id": None, "grant": form.get("grant_type")})

        def refuse(description, error, status=400):
            check("complete-flow-jwt-bearer", False, description)
            return handler.send(status, {"error": error, "error_description": description})

        if self.exchange_at_resource:
            return self.exchange_at_resource_server(handler, issuer, form)
        if form.get("grant_type") != JWT_BEARER:
            return refuse(f"Auth server only supports jwt-bearer grant, got {form.get('grant_type')}",
                          "unsupported_grant_type")
        cid, secret, used, malformed = handler.client_auth(form)
        if used != "client_secret_basic" or malformed:
            return refuse("Missing or invalid Authorization header for client_secret_basic", "invalid_client", 401)
        if cid != CLIENT_ID or secret != CLIENT_SECRET:
            return refuse(f"Client authentication failed (client_id: {cid})", "invalid_client", 401)
        assertion = form.get("assertion")
        if not assertion:
            return refuse("Missing assertion in JWT bearer grant", "invalid_request")
        try:
            header = json.loads(_b64(assertion.split(".")[0]))
            if header.get("typ") != "oauth-id-jag+jwt":
                return refuse(f"ID-JAG has wrong typ header: {header.get('typ')}", "invalid_grant")
            unverified = json.loads(_b64(assertion.split(".")[1]))
            with self.s.lock:
                key = self.grant_keys.get(unverified.get("sub"))
            if key is None:
                raise ValueError("Unknown authorization grant")
            claims = ES256.decode(assertion, key)
            claims.validate(leeway=30)
            aud = claims.get("aud")
            if aud not in (issuer, issuer + "/"):
                raise ValueError(f"audience {aud}")
        except Exception as e:
            return refuse(f"JWT bearer grant failed: {e}", "invalid_grant")
        if claims.get("client_id") != cid:
            return refuse(f"ID-JAG client_id ({claims.get('client_id')}) does not match {cid}", "invalid_grant")
        if claims.get("resource") != self.s.resource_url():
            return refuse(f"ID-JAG resource ({claims.get('resource')}) is not the MCP server's", "invalid_grant")
        check("complete-flow-jwt-bearer", True, "verified client auth and the ID-JAG's claims; token issued")
        scopes = (form.get("scope") or claims.get("scope") or "").split()
        access = "at-" + secrets.token_hex(8)
        with self.s.lock:
            self.s.tokens[access] = (scopes, issuer, "access")
        handler.send(200, {"access_token": access, "token_type": "Bearer", "expires_in": 3600,
                           "scope": " ".join(scopes)})

    def exchange_at_resource_server(self, handler, issuer, form):
        """Ours: the resource's AS trades the IdP's ID token for a token of its own."""
        def refuse(description, error, status=400):
            self.s.check("token-exchange-grant", False, description)
            return handler.send(status, {"error": error, "error_description": description})

        cid, secret, used, _ = handler.client_auth(form)
        if (cid, secret, used) != (CLIENT_ID, CLIENT_SECRET, "client_secret_basic"):
            return refuse("client_secret_basic with the pre-registered client", "invalid_client", 401)
        if form.get("grant_type") != TOKEN_EXCHANGE or form.get("subject_token_type") != ID_TOKEN:
            return refuse(f"expected a token exchange of an ID token, got {form.get('grant_type')}",
                          "unsupported_grant_type")
        try:
            claims = ES256.decode(form.get("subject_token", ""), self.idp_public)
            claims.validate()
        except Exception as e:
            return refuse(f"the subject token: {e}", "invalid_grant")
        if form.get("resource") != self.s.resource_url():
            return refuse(f"resource {form.get('resource')}", "invalid_target")
        self.s.check("token-exchange-grant", True, "the IdP's ID token traded at the resource's AS")
        access = "at-" + secrets.token_hex(8)
        with self.s.lock:
            self.s.tokens[access] = ([], issuer, "access")
        handler.send(200, {"access_token": access, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                           "token_type": "Bearer", "expires_in": 3600})

    def observed_call(self, method):
        if self.refresh_variant and method in ("tools/list", "tools/call"):
            self.s.check("complete-flow-mcp-access", True, f"{method} with the token the ID-JAG was traded for")

    def verdicts(self, add):
        ids = [c["id"] for c in self.s.checks]
        if self.exchange_at_resource:
            if "token-exchange-grant" not in ids:
                add("token-exchange-grant", False, "Client made no token exchange")
            return
        if "complete-flow-token-exchange" not in ids:
            add("complete-flow-token-exchange", False, "Client did not perform token exchange")
        if "complete-flow-jwt-bearer" not in ids:
            add("complete-flow-jwt-bearer", False, "Client did not perform JWT bearer grant exchange")
        if self.refresh_variant and "complete-flow-mcp-access" not in ids:
            add("complete-flow-mcp-access", False, "Client made no MCP request with the issued token")


def _b64(part):
    import base64
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
