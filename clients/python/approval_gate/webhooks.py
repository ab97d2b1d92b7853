"""Checking that a webhook delivery comes from Approval Gate (see docs/webhooks.md, "Verifying a delivery")."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from typing import Any, Mapping, Sequence

from .errors import WebhookVerificationError

_DIGITS = re.compile(r"^[0-9]{1,15}$")
_HEX_SIGNATURE = re.compile(r"^[0-9a-fA-F]{64}$")


def verify_webhook(
    raw_body: bytes | str,
    headers: Mapping[str, Any] | Any,
    secret: str | Sequence[str],
    *,
    tolerance_seconds: float = 300,
    now: float | None = None,
) -> dict[str, Any]:
    """Verifies a delivery and returns its event (the parsed body).

    Either scheme of the delivery's headers is checked: ``x-service-signature`` and
    ``x-service-timestamp`` (HMAC-SHA256 of ``"<timestamp>.<body>"`` keyed by the whole ``whsec_...``
    string, as Stripe signs) when present, otherwise Standard Webhooks' ``webhook-id``,
    ``webhook-timestamp`` and ``webhook-signature`` (keyed by the base64 after ``whsec_``).

    ``raw_body`` must be the exact bytes received, before any JSON parsing. ``headers`` is any
    mapping (a dict, Flask's or Django's request headers, ``http.client.HTTPMessage``), looked up
    without regard to case. ``secret`` may be several secrets, tried in turn (while you switch).
    Raises ``WebhookVerificationError`` when a header is missing, the timestamp is not an integer
    or is more than ``tolerance_seconds`` from ``now``, no signature matches, or the body is not
    an event. Signatures are compared in constant time; the body is parsed only once authentic.
    """
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets or any(not isinstance(entry, str) or not entry for entry in secrets):
        raise TypeError("verify_webhook needs the endpoint secret")
    if not tolerance_seconds >= 0:
        raise TypeError("tolerance_seconds must be a non-negative number")
    body = raw_body.encode("utf-8") if isinstance(raw_body, str) else bytes(raw_body)

    if _header(headers, "x-service-signature") is not None:
        timestamp = _timestamp(headers, "x-service-timestamp", tolerance_seconds, now)
        candidates = [part[3:] for part in re.split(r"[\s,]+", _required(headers, "x-service-signature")) if part.startswith("v1=")]
        given = [bytes.fromhex(candidate) for candidate in candidates if _HEX_SIGNATURE.match(candidate)]
        signed = timestamp.encode("ascii") + b"." + body
        expected = [hmac.new(key.encode("utf-8"), signed, hashlib.sha256).digest() for key in secrets]
        scheme = "x-service-signature"
    else:
        event_id = _required(headers, "webhook-id")
        timestamp = _timestamp(headers, "webhook-timestamp", tolerance_seconds, now)
        candidates = [part[3:] for part in _required(headers, "webhook-signature").split() if part.startswith("v1,")]
        given = [_base64(candidate) for candidate in candidates]
        signed = f"{event_id}.{timestamp}.".encode("utf-8") + body
        expected = [hmac.new(_standard_key(key), signed, hashlib.sha256).digest() for key in secrets]
        scheme = "webhook-signature"
    if not candidates:
        raise WebhookVerificationError("no_matching_signature", f"{scheme} carries no v1 signature")
    # Every pair is compared, so the time taken does not tell which one matched.
    matched = False
    for signature in given:
        for digest in expected:
            matched |= signature is not None and hmac.compare_digest(signature, digest)
    if not matched:
        raise WebhookVerificationError("no_matching_signature", "no signature matches the body and timestamp for this secret")

    try:
        event = json.loads(body.decode("utf-8"))
    except ValueError:
        raise WebhookVerificationError("invalid_body", "the body is not valid JSON") from None
    if not isinstance(event, dict) or not isinstance(event.get("id"), str):
        raise WebhookVerificationError("invalid_body", "the body is not a webhook event")
    return event


def _header(headers: Any, name: str) -> str | None:
    """Case-insensitive lookup; repeated values (a list) are joined with spaces."""
    value = headers.get(name) if hasattr(headers, "get") else None
    if value is None:
        value = next((item for key, item in headers.items() if key.lower() == name), None)
    if isinstance(value, (list, tuple)):
        value = " ".join(value)
    if value is None or not str(value).strip():
        return None
    return str(value).strip()


def _required(headers: Any, name: str) -> str:
    value = _header(headers, name)
    if value is None:
        raise WebhookVerificationError("missing_header", f"missing {name} header")
    return value


def _timestamp(headers: Any, name: str, tolerance_seconds: float, now: float | None) -> str:
    value = _required(headers, name)
    if not _DIGITS.match(value):
        raise WebhookVerificationError("invalid_timestamp", f"{name} is not an integer number of seconds")
    skew = int(time.time() if now is None else now) - int(value)
    if abs(skew) > tolerance_seconds:
        direction = f"{skew} s old" if skew > 0 else f"{-skew} s in the future"
        raise WebhookVerificationError(
            "timestamp_outside_tolerance", f"timestamp is {direction}, outside the tolerance of {tolerance_seconds:g} s"
        )
    return value


def _standard_key(secret: str) -> bytes:
    """Standard Webhooks keys by the bytes the base64 after ``whsec_`` encodes."""
    encoded = secret[len("whsec_") :] if secret.startswith("whsec_") else secret
    try:
        return base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise TypeError("a webhook secret must be whsec_ followed by standard base64") from None


def _base64(value: str) -> bytes | None:
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        return None
