"""A local FCM HTTP v1 API and Google OAuth 2.0 token endpoint for the tests (Hypercorn over TLS, from PyPI; RS256
checks with `cryptography`), answering as Google documents, errors included.

Usage: python3 fcm_peer.py CERT KEY PUBLIC_KEY CLIENT_EMAIL PROJECT DIR
Prints "port PORT" once it listens; the token endpoint is https://localhost:PORT/token.

  POST /token  (RFC 7523) form grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=JWT: the assertion
      must be RS256 signed by PUBLIC_KEY's private half, iss CLIENT_EMAIL, aud this endpoint's URL, a scope naming
      firebase.messaging, exp after now and at most an hour after iat. Else 400 {"error": "invalid_grant",
      "error_description": …} (or unsupported_grant_type, invalid_scope), as Google answers. Issued:
      {"access_token": "ya29.…", "expires_in": 3599, "token_type": "Bearer"}.
  POST /v1/projects/PROJECT/messages:send  Authorization: Bearer <an issued, unexpired token> (else 401
      UNAUTHENTICATED), another project 403 PERMISSION_DENIED, a message with a token and string-only data (else 400
      INVALID_ARGUMENT): 200 {"name": "projects/PROJECT/messages/0:…"}. Errors are google.rpc.Status bodies with an
      FcmError detail: {"error": {"code": 404, "message": …, "status": "NOT_FOUND", "details": [{"@type":
      "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}]}}.
  DIR/answers.json  {"<device token>": [{"status": 404, "errorCode": "UNREGISTERED", "retryAfter": 2}, …]}: answers a
      valid send to that token gets first, one per send, in order (read at each send).
  DIR/requests.jsonl  one line per request: path, status, the device token and the message for a send.
"""
import base64
import json
import os
import re
import secrets
import sys
import time
import uuid
from urllib.parse import parse_qs

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from tls_peer import listening_socket, serve_until_orphaned

certificate, key, public_key_path, client_email, project, directory = sys.argv[1:7]
public_key = serialization.load_pem_public_key(open(public_key_path, "rb").read())
issued = {}  # access token -> expiry (epoch seconds)
served = {}  # device token -> answers given so far
port = None
STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
          500: "INTERNAL", 503: "UNAVAILABLE"}


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def oauth_error(error, description):
    return 400, {"error": error, "error_description": description}, []


def token_endpoint(body):
    form = {name: values[0] for name, values in parse_qs(body.decode()).items()}
    if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
        return oauth_error("unsupported_grant_type", f"Invalid grant_type: {form.get('grant_type', '')}")
    parts = form.get("assertion", "").split(".")
    try:
        header, claims, signature = json.loads(b64url(parts[0])), json.loads(b64url(parts[1])), b64url(parts[2])
    except Exception:
        return oauth_error("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
    if header.get("alg") != "RS256":
        return oauth_error("invalid_grant", "Invalid JWT Signature.")
    try:
        public_key.verify(signature, f"{parts[0]}.{parts[1]}".encode(), padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        return oauth_error("invalid_grant", "Invalid JWT Signature.")
    if claims.get("iss") != client_email:
        return oauth_error("invalid_grant", "Invalid grant: account not found")
    if claims.get("aud") != f"https://localhost:{port}/token":
        return oauth_error("invalid_grant", "Invalid JWT: Failed audience check.")
    now = time.time()
    iat, exp = claims.get("iat", 0), claims.get("exp", 0)
    if not (exp > now and exp - iat <= 3600 and iat <= now + 60):
        return oauth_error("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
    if "https://www.googleapis.com/auth/firebase.messaging" not in claims.get("scope", "").split():
        return oauth_error("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
    token = "ya29." + secrets.token_urlsafe(48)
    issued[token] = now + 3599
    return 200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"}, []


def rpc_error(code, message, error_code=None, headers=()):
    error = {"code": code, "message": message, "status": STATUS.get(code, "UNKNOWN")}
    if error_code:
        error["details"] = [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": error_code}]
    return code, {"error": error}, list(headers)


def send_endpoint(path, headers, body, record):
    authorization = headers.get("authorization", "")
    token = authorization[7:] if authorization.lower().startswith("bearer ") else ""
    if issued.get(token, 0) < time.time():
        return rpc_error(401, "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.")
    if path != f"/v1/projects/{project}/messages:send":
        return rpc_error(403, "Permission 'cloudmessaging.messages.create' denied on resource (or it may not exist).")
    try:
        message = json.loads(body)["message"]
    except Exception:
        return rpc_error(400, "Invalid JSON payload received.")
    record["device"], record["message"] = message.get("token"), message
    if not message.get("token"):
        return rpc_error(400, "Request contains an invalid argument.", "INVALID_ARGUMENT")
    if any(not isinstance(value, str) for value in message.get("data", {}).values()):
        return rpc_error(400, "Invalid value at 'message.data' (Map), Cannot bind a list to map for field 'data'.")
    try:
        answers = json.load(open(os.path.join(directory, "answers.json"))).get(message["token"], [])
    except FileNotFoundError:
        answers = []
    given = served.get(message["token"], 0)
    if given < len(answers):
        served[message["token"]] = given + 1
        answer = answers[given]
        extra = [(b"retry-after", str(answer["retryAfter"]).encode())] if "retryAfter" in answer else []
        messages = {"UNREGISTERED": "Requested entity was not found.", "QUOTA_EXCEEDED": "Quota exceeded for quota metric.",
                    "UNAVAILABLE": "The service is currently unavailable.", "INTERNAL": "Internal error encountered."}
        return rpc_error(answer["status"], messages.get(answer.get("errorCode"), "Request contains an invalid argument."),
                         answer.get("errorCode"), extra)
    return 200, {"name": f"projects/{project}/messages/0:{int(time.time() * 1000)}%{uuid.uuid4().hex[:16]}"}, []


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    headers = {name.decode().lower(): value.decode() for name, value in scope["headers"]}
    record = {"path": scope["path"], "http": scope["http_version"]}
    if scope["method"] != "POST":
        status, answer, extra = rpc_error(404, "Not found.")
    elif scope["path"] == "/token":
        status, answer, extra = token_endpoint(body)
    else:
        status, answer, extra = send_endpoint(scope["path"], headers, body, record)
    record["status"] = status
    with open(os.path.join(directory, "requests.jsonl"), "a") as log:
        log.write(json.dumps(record) + "\n")
    data = json.dumps(answer).encode()
    answer_headers = [(b"content-type", b"application/json; charset=UTF-8"), (b"content-length", str(len(data)).encode())] + extra
    await send({"type": "http.response.start", "status": status, "headers": answer_headers})
    await send({"type": "http.response.body", "body": data})


if __name__ == "__main__":
    sock, port = listening_socket()
    serve_until_orphaned(app, sock, certificate, key)
