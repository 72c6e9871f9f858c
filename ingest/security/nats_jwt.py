"""NATS JWTs (version 2): what nats-server's auth callout sends and expects back.

A NATS JWT is ``base64url(header).base64url(claims).base64url(signature)``, signed with an
Ed25519 NKey (``alg: ed25519-nkey``) whose public key is the ``iss`` claim. The server signs
its authorization requests with its own server key; the answer and the user it authorizes
are signed with the callout's issuer, an account key the server was configured to trust.
Only the few claims the callout needs are spelled here; nats-server reads the rest as absent.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import secrets
import time
from collections.abc import Mapping
from typing import Any

import nacl.exceptions
import nacl.signing
import nkeys

from spark_log.errors import InvalidRequestError

HEADER = {"typ": "JWT", "alg": "ed25519-nkey"}
CLAIMS_VERSION = 2
MAX_TOKEN_BYTES = 1024 * 1024  # nats-server's own bound on a JWT


class NatsJwtError(InvalidRequestError):
    """A JWT that is malformed, unsigned by its issuer, or of an unexpected kind."""


def new_account_seed() -> str:
    """A fresh account NKey seed (``SA...``): the callout's issuer."""
    seed: bytes = nkeys.encode_seed(secrets.token_bytes(32), nkeys.PREFIX_BYTE_ACCOUNT)
    return seed.decode()


def public_key(seed: str) -> str:
    """The public key (``A...`` for an account) of an NKey seed."""
    key: bytes = nkeys.from_seed(seed.encode()).public_key
    return key.decode()


def encode(claims: Mapping[str, Any], seed: str) -> str:
    """``claims`` signed with ``seed``; ``iss``, ``iat`` and ``jti`` are set here, as nats's
    own encoder does (``jti``: a hash of the claims, so equal claims have equal ids)."""
    pair = nkeys.from_seed(seed.encode())
    body = {**claims, "iss": pair.public_key.decode(), "iat": int(time.time())}
    body.pop("jti", None)
    body["jti"] = _claims_id(body)
    signed = f"{_b64(json.dumps(HEADER).encode())}.{_b64(json.dumps(body).encode())}"
    return f"{signed}.{_b64(pair.sign(signed.encode()))}"


def decode(token: str, issuer_prefix: int) -> dict[str, Any]:
    """The claims of ``token``, once its signature is checked against its own ``iss``, which
    must be a public key of the role ``issuer_prefix`` (e.g. ``nkeys.PREFIX_BYTE_SERVER``)."""
    if len(token) > MAX_TOKEN_BYTES:
        raise NatsJwtError(f"a JWT of {len(token)} bytes is over {MAX_TOKEN_BYTES}")
    parts = token.split(".")
    if len(parts) != 3:
        raise NatsJwtError("a JWT has three dot-separated parts")
    header, claims = _json_part(parts[0]), _json_part(parts[1])
    if str(header.get("alg", "")).lower() != HEADER["alg"]:
        raise NatsJwtError(f"unsupported JWT algorithm {header.get('alg')!r}")
    issuer = claims.get("iss")
    if not isinstance(issuer, str):
        raise NatsJwtError("the JWT names no issuer")
    verify_key = nacl.signing.VerifyKey(public_key_bytes(issuer, issuer_prefix))
    try:
        verify_key.verify(f"{parts[0]}.{parts[1]}".encode(), _unb64(parts[2]))
    except nacl.exceptions.BadSignatureError:
        raise NatsJwtError("the JWT's signature does not match its issuer") from None
    return claims


def public_key_bytes(key: str, prefix: int) -> bytes:
    """The raw Ed25519 key of an encoded public NKey of role ``prefix`` (checksum checked)."""
    try:
        raw = base64.b32decode(key + "=" * (-len(key) % 8))
    except (binascii.Error, ValueError):
        raise NatsJwtError(f"{key!r} is not an NKey") from None
    if len(raw) != 35 or raw[0] != prefix:
        raise NatsJwtError(f"{key!r} is not a public NKey of the expected role")
    if bytes(nkeys.crc16_checksum(bytearray(raw[:-2]))) != raw[-2:]:
        raise NatsJwtError(f"{key!r} has a wrong checksum")
    return raw[1:-2]


def _claims_id(claims: Mapping[str, Any]) -> str:
    digest = hashlib.sha512(json.dumps(claims, sort_keys=True).encode()).digest()[:32]
    return base64.b32encode(digest).decode().rstrip("=")


def _json_part(part: str) -> dict[str, Any]:
    try:
        value = json.loads(_unb64(part))
    except (ValueError, UnicodeDecodeError):
        raise NatsJwtError("a JWT part is not base64url JSON") from None
    if not isinstance(value, dict):
        raise NatsJwtError("a JWT part is not a JSON object")
    return value


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise NatsJwtError("a JWT part is not base64url") from None
