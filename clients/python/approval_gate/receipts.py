"""Decision receipts and the audit log's Merkle proofs, checked without the service.

An implementation independent of the service's (see docs/receipts.md): RFC 8785 canonical JSON
and RFC 6962 / RFC 9162 Merkle proofs with the standard library's hashlib, Ed25519 signatures
with the ``cryptography`` package (Debian: python3-cryptography).

    verify_receipt(receipt, signature, keys)            -> bool
    assert_approved(payload, receipt, signature, keys)  -> receipt, or raises ReceiptError
    verify_inclusion(event_hash, leaf_index, tree_size, proof, root_hash)  -> bool
    verify_consistency(size1, size2, root1, root2, proof)                  -> bool
    open_checkpoint_note(note, public_key_pem)          -> (origin, tree_size, root_hash)

Hashes are hex strings, as the API gives them. ``keys`` is GET /v1/audit/keys's body or its list.
"""

import base64
import decimal
import hashlib
import json
import math

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

RECEIPT_MEMBERS = (
    "orgId", "approvalId", "revision", "status", "action", "payloadHash",
    "decidedBy", "decidedAt", "policyKey", "policyVersion", "seq", "keyId",
)


class ReceiptError(Exception):
    """A receipt that must not be acted on; the message says why."""


# --- RFC 8785 canonical JSON -------------------------------------------------------------------

def _number(value):
    if isinstance(value, bool):
        raise TypeError("booleans are not numbers")
    if isinstance(value, int):
        return str(value)
    if math.isnan(value) or math.isinf(value):
        raise ValueError("NaN and Infinity have no JSON form")
    if value == 0:
        return "0"
    # ECMAScript Number::toString over the shortest round-trip digits, which repr gives.
    sign, digit_tuple, exponent = decimal.Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent
    digits = digits.rstrip("0")
    k = len(digits)
    prefix = "-" if sign else ""
    if k <= point <= 21:
        return prefix + digits + "0" * (point - k)
    if 0 < point <= 21:
        return prefix + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return prefix + "0." + "0" * (-point) + digits
    e = point - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return prefix + mantissa + "e" + ("+" if e >= 0 else "-") + str(abs(e))


def canonical_json(value):
    """RFC 8785: members sorted by UTF-16 code units, no whitespace, ECMAScript numbers and strings."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_json(item) for item in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value, key=lambda key: key.encode("utf-16-be"))
        return "{" + ",".join(json.dumps(key, ensure_ascii=False) + ":" + canonical_json(value[key]) for key in keys) + "}"
    raise TypeError("no JSON form for %r" % type(value))


def payload_hash(payload):
    """Hex SHA-256 of the RFC 8785 bytes of a payload: what a receipt's payloadHash binds."""
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


# --- Receipts ------------------------------------------------------------------------------------

def _key_list(keys):
    return keys["keys"] if isinstance(keys, dict) else keys


def _ed25519(public_key_pem):
    key = serialization.load_pem_public_key(public_key_pem.encode("ascii"))
    if not isinstance(key, Ed25519PublicKey):
        raise ReceiptError("not an Ed25519 key")
    return key


def receipt_problem(receipt, signature, keys):
    """Why the receipt does not verify against the published keys, or None when it does."""
    key = next((k for k in _key_list(keys) if k.get("keyId") == receipt.get("keyId")), None)
    if key is None:
        return "signed by an unknown key %s" % receipt.get("keyId")
    retired, decided = key.get("retiredAt"), receipt.get("decidedAt")
    # Both are ISO 8601 in UTC with milliseconds, which compare as strings.
    if retired is not None and decided is not None and decided > retired:
        return "signed by key %s, retired at %s, for a decision made after that" % (key["keyId"], retired)
    claim = {member: receipt.get(member) for member in RECEIPT_MEMBERS}
    try:
        _ed25519(key["publicKey"]).verify(base64.b64decode(signature), canonical_json(claim).encode("utf-8"))
    except (InvalidSignature, ValueError, TypeError):
        return "the signature does not verify"
    return None


def verify_receipt(receipt, signature, keys):
    return receipt_problem(receipt, signature, keys) is None


def assert_approved(payload, receipt, signature, keys):
    """Raises ReceiptError unless the receipt is validly signed, approved, and binds exactly this payload."""
    problem = receipt_problem(receipt, signature, keys)
    if problem:
        raise ReceiptError(problem)
    if receipt.get("status") != "approved":
        raise ReceiptError("the approval is %s, not approved" % receipt.get("status"))
    digest = payload_hash(payload)
    if digest != receipt.get("payloadHash"):
        raise ReceiptError("the payload's hash %s is not the approved payloadHash %s" % (digest, receipt.get("payloadHash")))
    return receipt


# --- RFC 6962 Merkle proofs ----------------------------------------------------------------------

def leaf_hash(event_hash):
    """The leaf of an audit event: SHA-256(0x00 || the 32 bytes of its hex chain hash)."""
    return hashlib.sha256(b"\x00" + bytes.fromhex(event_hash)).digest()


def _node(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def verify_inclusion(event_hash, leaf_index, tree_size, proof, root_hash):
    """RFC 9162 2.1.3.2: whether the proof leads from the event's leaf to root_hash."""
    if not 0 <= leaf_index < tree_size:
        return False
    fn, sn, r = leaf_index, tree_size - 1, leaf_hash(event_hash)
    for p in (bytes.fromhex(h) for h in proof):
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = _node(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = _node(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == bytes.fromhex(root_hash)


def verify_consistency(size1, size2, root1, root2, proof):
    """RFC 9162 2.1.4.2: whether the tree of size1 (root1) is a prefix of the tree of size2 (root2)."""
    old, new = bytes.fromhex(root1), bytes.fromhex(root2)
    path = [bytes.fromhex(h) for h in proof]
    if not 0 < size1 <= size2:
        return False
    if size1 == size2:
        return not path and old == new
    if not path:
        return False
    if size1 & (size1 - 1) == 0:
        path.insert(0, old)
    fn, sn = size1 - 1, size2 - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = _node(c, fr), _node(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = _node(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == old and sr == new


# --- C2SP signed notes ---------------------------------------------------------------------------

def open_checkpoint_note(note, public_key_pem):
    """Verifies a C2SP tlog-checkpoint note signed by this key; returns (origin, tree_size, root_hash hex)."""
    text, separator, signatures = note.partition("\n\n")
    if not separator:
        raise ReceiptError("no blank line between the note's text and its signatures")
    text += "\n"
    lines = text.split("\n")
    origin, size, root = lines[0], lines[1], lines[2]
    key = _ed25519(public_key_pem)
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    key_id = hashlib.sha256(origin.encode("utf-8") + b"\n\x01" + raw).digest()[:4]
    for line in signatures.split("\n"):
        if not line.startswith("\u2014 "):
            continue
        name, _, blob = line[2:].partition(" ")
        signed = base64.b64decode(blob)
        if name != origin or len(signed) != 68 or signed[:4] != key_id:
            continue
        try:
            key.verify(signed[4:], text.encode("utf-8"))
        except InvalidSignature:
            raise ReceiptError("the note's signature does not verify")
        return origin, int(size), base64.b64decode(root).hex()
    raise ReceiptError("the note has no signature by this key")
