"""A local APNs provider API for the tests (Hypercorn, from PyPI, over TLS with ALPN offering h2 alone, as Apple's
does; ES256 checks with `cryptography`, from PyPI): it answers as api.push.apple.com documents, errors included.

Usage: python3 apns_peer.py CERT KEY PUBLIC_KEY KEY_ID TEAM_ID TOPIC DIR
Prints "port PORT" once it listens.

  POST /3/device/<token>  checked in Apple's order: the path (404 BadPath), the token (400 BadDeviceToken: hex, 64
      characters or more), the provider token (403 MissingProviderToken without `authorization: bearer`;
      InvalidProviderToken for a malformed token, another alg than ES256, a kid other than KEY_ID, an iss other than
      TEAM_ID or a signature PUBLIC_KEY does not verify; ExpiredProviderToken for an iat over an hour old; 429
      TooManyProviderTokenUpdates for a new token on a connection less than 20 minutes of iat after its last one), the headers (400
      MissingTopic, TopicDisallowed for a topic other than TOPIC, InvalidPushType, BadPriority, BadExpirationDate,
      BadCollapseId over 64 bytes), the payload (400 PayloadEmpty, 413 PayloadTooLarge over 4096 bytes). Accepted:
      200 with `apns-id`. Every answer has an `apns-id`; an error's body is {"reason": …} (410: and "timestamp").
  DIR/answers.json  {"<token>": [{"status": 410, "reason": "Unregistered", "retryAfter": 2}, …]}: a valid push to
      that token gets these answers first, one per push, in order, and 200 after them (read at each push).
  DIR/requests.jsonl  one line per request: its token, status, reason, apns-id, headers, the token's kid/iss/iat and
      the payload; the tests read it.
  Only POST is allowed (405 MethodNotAllowed). Only h2 is offered by ALPN; a client that goes on in HTTP/1.1 all
  the same gets 505, never a push.
"""
import base64
import json
import os
import re
import sys
import time
import uuid

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils
from tls_peer import listening_socket, serve_until_orphaned

PUSH_TYPES = {"alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk"}
certificate, key, public_key_path, key_id, team_id, topic, directory = sys.argv[1:8]
public_key = serialization.load_pem_public_key(open(public_key_path, "rb").read())
served = {}  # token -> answers of answers.json given so far
last_iat = {}  # client address (one TCP connection) -> iat of the newest provider token it sent


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Refused(Exception):
    def __init__(self, status, reason):
        self.status, self.reason = status, reason


def provider_token(headers, connection):
    """The claims of a valid provider token, or Refused as APNs refuses it."""
    authorization = headers.get("authorization", "")
    if not authorization.lower().startswith("bearer ") or not authorization[7:].strip():
        raise Refused(403, "MissingProviderToken")
    parts = authorization[7:].strip().split(".")
    try:
        header, claims, signature = json.loads(b64url(parts[0])), json.loads(b64url(parts[1])), b64url(parts[2])
    except Exception:
        raise Refused(403, "InvalidProviderToken")
    if len(parts) != 3 or header.get("alg") != "ES256" or len(signature) != 64:
        raise Refused(403, "InvalidProviderToken")
    if header.get("kid") != key_id or claims.get("iss") != team_id or not isinstance(claims.get("iat"), int):
        raise Refused(403, "InvalidProviderToken")
    der = utils.encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    try:
        public_key.verify(der, f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise Refused(403, "InvalidProviderToken")
    if claims["iat"] < time.time() - 3600:
        raise Refused(403, "ExpiredProviderToken")
    previous = last_iat.get(connection)
    if previous is not None and claims["iat"] > previous and claims["iat"] - previous < 1200:
        raise Refused(429, "TooManyProviderTokenUpdates")
    last_iat[connection] = max(previous or 0, claims["iat"])
    return {"kid": header["kid"], "iss": claims["iss"], "iat": claims["iat"]}


def check(scope, headers, body):
    """The claims of the provider token, or Refused: as APNs checks a push, in its order."""
    if scope["http_version"] != "2":
        # APNs speaks HTTP/2 alone; a client that negotiated none (ALPN) is not served.
        raise Refused(505, "HTTPVersionNotSupported")
    if scope["method"] != "POST":
        raise Refused(405, "MethodNotAllowed")
    match = re.fullmatch(r"/3/device/([^/]*)", scope["path"])
    if not match:
        raise Refused(404, "BadPath")
    if not match.group(1):
        raise Refused(400, "MissingDeviceToken")
    if not re.fullmatch(r"[0-9a-fA-F]{64,200}", match.group(1)):
        raise Refused(400, "BadDeviceToken")
    claims = provider_token(headers, tuple(scope["client"] or ()))
    if "apns-topic" not in headers:
        raise Refused(400, "MissingTopic")
    if headers["apns-topic"] != topic:
        raise Refused(400, "TopicDisallowed")
    if headers.get("apns-push-type") not in PUSH_TYPES:
        raise Refused(400, "InvalidPushType")
    if headers.get("apns-priority", "10") not in ("1", "5", "10"):
        raise Refused(400, "BadPriority")
    if not re.fullmatch(r"[0-9]+", headers.get("apns-expiration", "0")):
        raise Refused(400, "BadExpirationDate")
    if len(headers.get("apns-collapse-id", "").encode()) > 64:
        raise Refused(400, "BadCollapseId")
    if not body:
        raise Refused(400, "PayloadEmpty")
    if len(body) > 4096:
        raise Refused(413, "PayloadTooLarge")
    return claims


def configured_answer(token):
    try:
        answers = json.load(open(os.path.join(directory, "answers.json"))).get(token, [])
    except FileNotFoundError:
        answers = []
    given = served.get(token, 0)
    if given < len(answers):
        served[token] = given + 1
        return answers[given]
    return None


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
    apns_id = str(uuid.uuid4()).upper()
    token = scope["path"].rsplit("/", 1)[-1]
    record = {"token": token, "http": scope["http_version"], "apnsId": apns_id, "headers": headers}
    answer_headers = [(b"apns-id", apns_id.encode())]
    try:
        record.update(check(scope, headers, body))
        answer = configured_answer(token)
        if answer:
            if "retryAfter" in answer:
                answer_headers.append((b"retry-after", str(answer["retryAfter"]).encode()))
            raise Refused(answer["status"], answer["reason"])
        status, reason = 200, None
        record["payload"] = json.loads(body)
    except Refused as refused:
        status, reason = refused.status, refused.reason
    record.update(status=status, reason=reason)
    with open(os.path.join(directory, "requests.jsonl"), "a") as log:
        log.write(json.dumps(record) + "\n")
    data = b""
    if reason:
        error = {"reason": reason}
        if status == 410:
            error["timestamp"] = int(time.time() * 1000)
        data = json.dumps(error).encode()
        answer_headers.append((b"content-type", b"application/json; charset=utf-8"))
    answer_headers.append((b"content-length", str(len(data)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": answer_headers})
    await send({"type": "http.response.body", "body": data})


if __name__ == "__main__":
    sock, port = listening_socket()
    serve_until_orphaned(app, sock, certificate, key, alpn=["h2"])
