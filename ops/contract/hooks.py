"""Schemathesis hooks for ops/contract.sh.

- Every authenticated request carries the access token of a real account, registered through the API itself on first
  use and again whenever the API answers 401 (the fuzzer's own `auth/revoke` or `DELETE users/me` ends the previous
  one), so a schema-valid request is never refused for a stale token.
- Stripe events meant to be valid are signed as Stripe signs them.
- Refusals of schema-valid requests for rules no schema can state are dropped, and only those (SEMANTIC_REFUSALS).
"""

import hashlib
import hmac
import json
import os
import time
import urllib.request
import uuid

import schemathesis

BASE = os.environ["CONTRACT_BASE_URL"]


@schemathesis.auth()
class FreshAccount:
    def get(self, case, context):
        body = json.dumps({"email": f"contract-{uuid.uuid4().hex}@example.com", "password": "correct horse battery"})
        request = urllib.request.Request(
            BASE + "/api/mobile/v1/auth/register", data=body.encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)["data"]["accessToken"]

    def set(self, case, data, context):
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {data}"


def generated_valid(case, location):
    """Whether the fuzzer meant this part of the request to be valid (stateful steps carry no metadata: valid)."""
    meta = getattr(case, "_meta", None)
    if meta is None:
        return True
    for where, info in meta.components.items():
        if getattr(where, "value", where) == location:
            return info.mode.name == "POSITIVE"
    return meta.generation.mode.name == "POSITIVE"


@schemathesis.hook
def before_call(context, case, kwargs):
    """A Stripe event the fuzzer meant to be valid is signed as Stripe signs it (STRIPE_WEBHOOK_SECRET), so the
    webhook's acceptance is checked too, not only its refusals."""
    if not case.operation.path.endswith("/webhooks/stripe") or not isinstance(case.body, dict):
        return
    if not generated_valid(case, "header"):
        return
    timestamp = str(int(time.time()))
    # The bytes `requests` sends for a JSON body.
    payload = json.dumps(case.body, allow_nan=False)
    digest = hmac.new(os.environ["STRIPE_WEBHOOK_SECRET"].encode(), f"{timestamp}.{payload}".encode(), hashlib.sha256)
    case.headers = case.headers or {}
    case.headers["Stripe-Signature"] = f"t={timestamp},v1={digest.hexdigest()}"


# What the server refuses although the document allows it: rules no JSON schema can state (the bytes are an image,
# the zone exists, a signature is Apple's), each described in the document. A refusal is dropped from the report only
# when it is one of these: its error code and field, on its operation.
SEMANTIC_REFUSALS = {
    ("/analyze", "UNSUPPORTED_IMAGE", "imageBase64"),  # not a JPEG, PNG, HEIC or WebP
    ("/analyze", "UNSUPPORTED_IMAGE", "image"),  # the same, as a multipart file
    ("/analyze", "VALIDATION_ERROR", "imageBase64"),  # base64 letters whose length or padding do not decode
    ("/users/me", "VALIDATION_ERROR", "timeZone"),  # not a zone of the IANA database
    ("/auth/register", "EMAIL_ALREADY_REGISTERED", "email"),  # another account has this email (seed 004: a 400)
    ("/meals/sync", "VALIDATION_ERROR", "localMeals"),  # a localId twice in one sync
    ("/subscriptions/validate-receipt", "INVALID_RECEIPT", "signedTransaction"),  # not signed by Apple
    ("/webhooks/appstore", "INVALID_RECEIPT", "signedPayload"),  # not signed by Apple
}


@schemathesis.hook
def filter_failure(context, failure, case, response):
    if getattr(failure, "code", None) != "ST202":
        return True
    try:
        error = response.json()["error"]
    except Exception:
        return True
    field = str((error.get("details") or {}).get("field", ""))
    path = case.operation.path.removeprefix("/api/mobile/v1")
    field_root = field.split("[")[0].split(".")[0]
    semantic = (
        (path, error.get("code"), field_root) in SEMANTIC_REFUSALS
        # more than 24 hours in the future (relative to now, which no schema knows)
        or (path == "/meals/sync" and error.get("code") == "VALIDATION_ERROR" and field.endswith(".createdAt"))
        # bcrypt's 72 bytes: the document's maxLength counts characters, and 72 of them can be up to 288 bytes
        or (field == "password" and "72 bytes" in error.get("message", ""))
        # an Idempotency-Key the fuzzer sent before with another request (or while that one was answered)
        or (field == "Idempotency-Key" and error.get("code") in ("IDEMPOTENCY_KEY_REUSED", "IDEMPOTENCY_KEY_IN_USE"))
    )
    if semantic and "CONTRACT_FILTERED_LOG" in os.environ:
        with open(os.environ["CONTRACT_FILTERED_LOG"], "a") as log:
            log.write(f"{path} {error.get('code')} {field_root}\n")
    return not semantic
