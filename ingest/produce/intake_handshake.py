"""What the intake connection says after the server's INFO: its CONNECT, with credentials.

The same four ways of authenticating as every other Liftlog connection to NATS
(``spark_log.nats_options``): user and password, a token, an NKey seed file (the server's
nonce signed with it), or a credentials file (its user JWT, and the nonce signed with its
seed). URLs may carry ``user:password@`` or ``token@``, as NATS clients accept.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import nkeys

from ingest.errors import IngestError
from spark_log.nats_config import NatsCredentials

_JWT = re.compile(r"-{3,}BEGIN NATS USER JWT-{3,}\s*(\S+)\s*-{3,}END NATS USER JWT-{3,}")
_SEED = re.compile(r"-{3,}BEGIN USER NKEY SEED-{3,}\s*(\S+)\s*-{3,}END USER NKEY SEED-{3,}")


class IntakeConnectError(IngestError):
    """The intake could not connect to a NATS server (refused, timed out or not authorized)."""


def connect_frame(credentials: NatsCredentials, info: dict[str, Any], url: str, name: str) -> bytes:
    """``CONNECT {...}\\r\\nPING\\r\\n``: the server answers PONG once it has accepted it."""
    options: dict[str, Any] = {
        "verbose": False,
        "pedantic": False,
        "lang": "python3",
        "version": "liftlog-intake",
        "protocol": 1,
        "name": name,
        "headers": True,
        "no_responders": True,
        "echo": False,
        **_auth_fields(credentials, info, url),
    }
    return b"CONNECT " + json.dumps(options).encode() + b"\r\nPING\r\n"


def _auth_fields(credentials: NatsCredentials, info: dict[str, Any], url: str) -> dict[str, str]:
    nonce = str(info.get("nonce", ""))
    if credentials.nkey_seed_file:
        seed = _read(credentials.nkey_seed_file, "nats.nkey_seed_file").strip()
        pair = _key_pair(seed.encode(), "nats.nkey_seed_file")
        return {"nkey": pair.public_key.decode(), "sig": _sign(pair, nonce)}
    if credentials.creds_file:
        return _creds_fields(credentials.creds_file, nonce)
    if credentials.user:
        return {"user": credentials.user, "pass": credentials.password}
    if credentials.token:
        return {"auth_token": credentials.token}
    return _url_fields(url)


def _creds_fields(path: str, nonce: str) -> dict[str, str]:
    text = _read(path, "nats.creds_file")
    jwt, seed = _JWT.search(text), _SEED.search(text)
    if jwt is None or seed is None:
        raise IntakeConnectError(f"nats.creds_file {path!r}: no user JWT and seed in it")
    pair = _key_pair(seed.group(1).encode(), "nats.creds_file")
    return {"jwt": jwt.group(1), "sig": _sign(pair, nonce)}


def _url_fields(url: str) -> dict[str, str]:
    parts = urlsplit(url)
    if parts.username is None:
        return {}
    if parts.password is None:
        return {"auth_token": parts.username}
    return {"user": parts.username, "pass": parts.password}


def _key_pair(seed: bytes, setting: str) -> nkeys.KeyPair:
    try:
        return nkeys.from_seed(seed)
    except (nkeys.NkeysError, ValueError) as exc:
        raise IntakeConnectError(f"{setting}: not an NKey seed ({exc})") from None


def _sign(pair: nkeys.KeyPair, nonce: str) -> str:
    return base64.b64encode(pair.sign(nonce.encode())).decode()


def _read(path: str, setting: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise IntakeConnectError(f"{setting} {path!r}: {exc.strerror or exc}") from None
