#!/usr/bin/env python3
"""A local OAuth 1.0a provider for tokenvault's tests, on oauthlib's server
endpoints: request token, authorize (auto-approved for "alice"; ?deny=1 sends
denied=TOKEN back as Twitter does; oob answers with the PIN), access token
(with user_id and screen_name), and a protected resource that verifies the
signature of every request, including form-body parameters. Nonces cannot be
replayed.

  GET  /1.1/account/verify_credentials.json   200 with a valid signature, else 401
  POST /1.1/statuses/update.json              the same, for a signed form body
  GET  /stats                                 counters

Consumer: key "tvconsumerkey", secret "tvconsumersecret".
Usage: oauth1_provider.py   (prints "port N" once listening on 127.0.0.1)
"""
import json
import secrets
import sys
import threading
from collections import Counter

from flask import Flask, Response, request
from oauthlib.oauth1 import (AccessTokenEndpoint, AuthorizationEndpoint, RequestTokenEndpoint, RequestValidator,
                             ResourceEndpoint)
from werkzeug.serving import make_server

lock = threading.Lock()
stats = Counter()
CONSUMERS = {"tvconsumerkey": "tvconsumersecret"}
request_tokens = {}   # token -> {secret, callback, verifier, user}
access_tokens = {}    # token -> secret
nonces = set()


class Validator(RequestValidator):
    enforce_ssl = False   # loopback only
    client_key_length = (8, 64)
    request_token_length = (8, 64)
    access_token_length = (8, 64)
    nonce_length = (8, 64)
    verifier_length = (8, 64)
    allowed_signature_methods = ["HMAC-SHA1", "PLAINTEXT"]

    @property
    def dummy_client(self): return "dummy-consumer-key"
    @property
    def dummy_request_token(self): return "dummy-request-token"
    @property
    def dummy_access_token(self): return "dummy-access-token"

    def get_client_secret(self, client_key, request):
        return CONSUMERS.get(client_key, "dummy-secret")

    def get_request_token_secret(self, client_key, token, request):
        with lock:
            return request_tokens.get(token, {}).get("secret", "dummy-secret")

    def get_access_token_secret(self, client_key, token, request):
        with lock:
            return access_tokens.get(token, "dummy-secret")

    def get_default_realms(self, client_key, request): return []
    def get_realms(self, token, request): return []
    def get_redirect_uri(self, token, request):
        with lock:
            return request_tokens[token]["callback"]
    def validate_client_key(self, client_key, request): return client_key in CONSUMERS
    def validate_request_token(self, client_key, token, request):
        with lock:
            return token in request_tokens
    def validate_access_token(self, client_key, token, request):
        with lock:
            return token in access_tokens
    def validate_timestamp_and_nonce(self, client_key, timestamp, nonce, request, request_token=None, access_token=None):
        with lock:
            key = (client_key, timestamp, nonce, request_token, access_token)
            if key in nonces:
                stats["replays"] += 1
                return False
            nonces.add(key)
            return True
    def validate_redirect_uri(self, client_key, redirect_uri, request):
        return redirect_uri == "oob" or redirect_uri.startswith("http://127.0.0.1:")
    def validate_requested_realms(self, client_key, realms, request): return True
    def validate_realms(self, client_key, token, request, uri=None, realms=None): return True
    def validate_verifier(self, client_key, token, verifier, request):
        with lock:
            return secrets.compare_digest(request_tokens.get(token, {}).get("verifier", ""), verifier)
    def verify_request_token(self, token, request):
        with lock:
            return token in request_tokens
    def verify_realms(self, token, realms, request): return True
    def invalidate_request_token(self, client_key, request_token, request):
        with lock:
            request_tokens.pop(request_token, None)
    def save_request_token(self, token, request):
        with lock:
            request_tokens[token["oauth_token"]] = {"secret": token["oauth_token_secret"], "callback": request.redirect_uri}
    def save_verifier(self, token, verifier, request):
        with lock:
            request_tokens[token]["verifier"] = verifier["oauth_verifier"]
    def save_access_token(self, token, request):
        with lock:
            access_tokens[token["oauth_token"]] = token["oauth_token_secret"]
            stats["access_tokens"] += 1


validator = Validator()
request_endpoint = RequestTokenEndpoint(validator)
authorize_endpoint = AuthorizationEndpoint(validator)
access_endpoint = AccessTokenEndpoint(validator)
resource_endpoint = ResourceEndpoint(validator)
app = Flask(__name__)


def respond(headers, body, status):
    return Response(body, status=status, headers=headers)


@app.route("/oauth/request_token", methods=["POST"])
def request_token():
    stats["request_tokens"] += 1
    return respond(*request_endpoint.create_request_token_response(
        request.url, http_method="POST", body=request.get_data(as_text=True), headers=dict(request.headers)))


@app.route("/oauth/authorize")
def authorize():
    token = request.args.get("oauth_token", "")
    if request.args.get("deny"):
        with lock:
            callback = request_tokens.get(token, {}).get("callback", "oob")
        return Response(status=302, headers={"Location": f"{callback}?denied={token}"})
    uri = request.url.replace("&deny=", "&x=")
    headers, body, status = authorize_endpoint.create_authorization_response(uri, credentials={"user": "alice"})
    return respond(headers, body, status)


@app.route("/oauth/access_token", methods=["POST"])
def access_token():
    return respond(*access_endpoint.create_access_token_response(
        request.url, http_method="POST", body=request.get_data(as_text=True), headers=dict(request.headers),
        credentials={"user_id": "7", "screen_name": "alice"}))


@app.route("/1.1/account/verify_credentials.json")
@app.route("/1.1/statuses/update.json", methods=["POST"])
def protected():
    body = request.get_data(as_text=True) if request.method == "POST" else None
    headers = dict(request.headers)
    valid, _ = resource_endpoint.validate_protected_resource_request(request.url, http_method=request.method, body=body,
                                                                     headers=headers)
    with lock:
        stats["resource_ok" if valid else "resource_refused"] += 1
    if not valid:
        return Response("oauth_problem=signature_invalid", status=401, content_type="application/x-www-form-urlencoded")
    return Response(json.dumps({"screen_name": "alice", "body": body}), content_type="application/json")


@app.route("/stats")
def show_stats():
    with lock:
        return Response(json.dumps(dict(stats)), content_type="application/json")


def main():
    http = make_server("127.0.0.1", 0, app, threaded=True)
    print(f"port {http.server_port}", flush=True)
    http.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
