"""Bearer tokens: ``llt_<token_id>_<secret>``, stored as the SHA-256 of the secret.

The id is public (it names the token in listings and revocations); the secret is 32 random
bytes from ``secrets`` and is shown once, when the token is created. Only its SHA-256 is
stored. A slow password hash (bcrypt, scrypt) exists to stop guessing of low-entropy human
passwords; a 256-bit random secret cannot be guessed whatever the hash, so a fast hash loses
nothing and lets every request be checked in microseconds. Digests are compared with
``hmac.compare_digest`` so the time taken says nothing about how much of a guess matched.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

from spark_log.errors import InvalidRequestError

TOKEN_PREFIX = "llt"
TOKEN_ID_BYTES = 8
TOKEN_SECRET_BYTES = 32
_SEPARATOR = "_"


@dataclass(frozen=True)
class IssuedToken:
    """A freshly created token: ``text`` is what the user keeps (never stored, never
    logged); ``sha256`` is what ZooKeeper keeps."""

    token_id: str
    secret: str = field(repr=False)

    @property
    def text(self) -> str:
        return f"{TOKEN_PREFIX}{_SEPARATOR}{self.token_id}{_SEPARATOR}{self.secret}"

    @property
    def sha256(self) -> str:
        return secret_digest(self.secret)


@dataclass(frozen=True)
class TokenRecord:
    """A stored token: who it authenticates, the digest of its secret, and when and why it
    was made. No secret in it, so listing tokens reveals nothing usable."""

    token_id: str
    principal: str
    sha256: str
    created_ms: int
    description: str = ""

    def __post_init__(self) -> None:
        check_principal(self.principal)


def new_token() -> IssuedToken:
    """A new random token id (hex, so it never holds the separator) and secret."""
    return IssuedToken(secrets.token_hex(TOKEN_ID_BYTES), secrets.token_urlsafe(TOKEN_SECRET_BYTES))


def parse_token(text: str) -> IssuedToken | None:
    """Split ``llt_<token_id>_<secret>``; None for anything else (the secret itself may
    hold '_', the id never does)."""
    parts = text.split(_SEPARATOR, 2)
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX or not parts[1] or not parts[2]:
        return None
    return IssuedToken(parts[1], parts[2])


def secret_digest(secret: str) -> str:
    """The hex SHA-256 of a secret (see the module docstring for why not a slow hash)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def digest_matches(secret: str, expected_sha256: str) -> bool:
    """Whether ``secret`` hashes to ``expected_sha256``, in constant time."""
    return hmac.compare_digest(secret_digest(secret), expected_sha256)


def check_principal(principal: str) -> None:
    """A principal is a plain non-empty name without whitespace ('*' is reserved for ACLs)."""
    if not principal or principal == "*" or any(c.isspace() for c in principal):
        raise InvalidRequestError(
            f"principal {principal!r} must be a non-empty name without spaces, not '*'"
        )
