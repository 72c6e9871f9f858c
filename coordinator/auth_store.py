"""Tokens and ACLs in ZooKeeper, and the cache every node keeps of them (see docs/znodes.md).

``/v1/auth/tokens/<token_id>`` holds ``{version, principal, sha256, created_ms, description}``
and ``/v1/acls/<acl_id>`` ``{version, principal, action, resource, permission}``. Both are
written once and only ever deleted, so a children watch on each directory says everything
that can change: a node reads the znodes it has not seen and forgets the ones gone. The
watches only wake a refresher thread (kazoo's thread must not block); the refresher re-reads
and swaps in a new immutable snapshot, so a request never sees half an update and a change
made through any node is applied by every node within moments.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from coordinator.errors import ZNodeFormatError, ZNodeNotFoundError
from coordinator.refresher import Refresher
from coordinator.zk import WatchHandle, ZkSession
from coordinator.znodes import ACLS_PATH, AUTH_TOKENS_PATH, SCHEMA_VERSION
from spark_log.auth import AclEntry, IssuedToken, TokenRecord, new_token
from spark_log.errors import AclNotFoundError, LiftlogError, TokenNotFoundError
from spark_log.json_types import JsonMapping, JsonObject

log = logging.getLogger("liftlog.auth")

ACL_ID_BYTES = 8
# A full re-read now and then, in case a watch event was lost with a connection.
RESYNC_INTERVAL_S = 30.0
REFRESH_RETRY_S = 1.0

T = TypeVar("T")


def token_path(token_id: str) -> str:
    return f"{AUTH_TOKENS_PATH}/{token_id}"


def acl_path(acl_id: str) -> str:
    return f"{ACLS_PATH}/{acl_id}"


def token_json(record: TokenRecord) -> JsonObject:
    return {
        "version": SCHEMA_VERSION,
        "principal": record.principal,
        "sha256": record.sha256,
        "created_ms": record.created_ms,
        "description": record.description,
    }


def acl_json(entry: AclEntry) -> JsonObject:
    return {
        "version": SCHEMA_VERSION,
        "principal": entry.principal,
        "action": str(entry.action),
        "resource": entry.resource,
        "permission": str(entry.permission),
    }


_TOKEN_FIELDS: Mapping[str, type] = {
    "principal": str,
    "sha256": str,
    "created_ms": int,
    "description": str,
}
_ACL_FIELDS: Mapping[str, type] = {
    "principal": str,
    "action": str,
    "resource": str,
    "permission": str,
}


def token_from_json(token_id: str, data: JsonMapping) -> TokenRecord:
    fields = _fields(data, _TOKEN_FIELDS, "token")
    return _built(TokenRecord, token_id, fields, "token")


def acl_from_json(acl_id: str, data: JsonMapping) -> AclEntry:
    fields = _fields(data, _ACL_FIELDS, "acl")
    return _built(AclEntry, acl_id, fields, "acl")


def _fields(data: object, names: Mapping[str, type], what: str) -> JsonObject:
    """Exactly ``names`` (each of its type) plus ``version`` (a version this code knows), or
    ZNodeFormatError: anything written by hand into ZooKeeper is checked here, so the
    constructors never see a number where a name belongs (a TypeError would otherwise
    escape as a bug)."""
    if not isinstance(data, Mapping):
        raise ZNodeFormatError(f"{what}: expected a JSON object, got {type(data).__name__}")
    if data.get("version") != SCHEMA_VERSION:
        raise ZNodeFormatError(f"{what}: unsupported schema version {data.get('version')!r}")
    fields = {k: v for k, v in data.items() if k != "version"}
    if set(fields) != set(names):
        raise ZNodeFormatError(f"{what}: expected fields {', '.join(names)}, got {sorted(fields)}")
    for name, kind in names.items():
        value = fields[name]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ZNodeFormatError(f"{what}: {name!r} must be a {kind.__name__}, got {value!r}")
    return fields


def _built(cls: Callable[..., T], item_id: str, fields: JsonObject, what: str) -> T:
    try:
        return cls(item_id, **fields)
    except LiftlogError as exc:
        raise ZNodeFormatError(f"{what} {item_id}: {exc.message}") from exc


# ------------------------------------------------------------------------------- writes


def create_token(
    zk: ZkSession, principal: str, description: str, now_ms: int
) -> tuple[IssuedToken, TokenRecord]:
    """A new token for ``principal``: the secret is returned, only its digest is stored."""
    issued = new_token()
    record = TokenRecord(issued.token_id, principal, issued.sha256, now_ms, description)
    zk.create_json(token_path(issued.token_id), token_json(record))
    return issued, record


def list_tokens(zk: ZkSession) -> list[TokenRecord]:
    return list(_read_all(zk, AUTH_TOKENS_PATH, token_from_json).values())


def revoke_token(zk: ZkSession, token_id: str) -> None:
    try:
        zk.delete(token_path(_checked_id(token_id, TokenNotFoundError)))
    except ZNodeNotFoundError as exc:
        raise TokenNotFoundError(f"no token {token_id!r}") from exc


def add_acl(zk: ZkSession, principal: str, action: str, resource: str, permission: str) -> AclEntry:
    entry = AclEntry(
        secrets.token_hex(ACL_ID_BYTES),
        principal,
        action,  # type: ignore[arg-type]  # checked and converted by AclEntry
        resource,
        permission,  # type: ignore[arg-type]
    )
    for existing in list_acls(zk):
        if _same_rule(existing, entry):  # as Kafka: adding a binding that exists is a no-op
            return existing
    zk.create_json(acl_path(entry.acl_id), acl_json(entry))
    return entry


def _same_rule(a: AclEntry, b: AclEntry) -> bool:
    return (a.principal, a.action, a.resource, a.permission) == (
        b.principal,
        b.action,
        b.resource,
        b.permission,
    )


def list_acls(zk: ZkSession) -> list[AclEntry]:
    return list(_read_all(zk, ACLS_PATH, acl_from_json).values())


def remove_acl(zk: ZkSession, acl_id: str) -> None:
    try:
        zk.delete(acl_path(_checked_id(acl_id, AclNotFoundError)))
    except ZNodeNotFoundError as exc:
        raise AclNotFoundError(f"no ACL {acl_id!r}") from exc


def _checked_id(item_id: str, error: type[LiftlogError]) -> str:
    """Ids are hex: anything else (a '/', '..') cannot name a znode of ours."""
    if not item_id or not all(c in "0123456789abcdef" for c in item_id):
        raise error(f"no such id {item_id!r}")
    return item_id


def _read_all(
    zk: ZkSession,
    path: str,
    parse: Callable[[str, JsonMapping], T],
    known: Mapping[str, T] | None = None,
    unreadable: list[str] | None = None,
) -> dict[str, T]:
    """Every entry under ``path`` by id, reusing ``known`` ones (entries never change); the
    ids of znodes that cannot be parsed are skipped and appended to ``unreadable``."""
    zk.ensure_path(path)
    found: dict[str, T] = {}
    for child in zk.children(path):
        if known is not None and child in known:
            found[child] = known[child]
            continue
        try:
            data, _version = zk.get_json(f"{path}/{child}")
            found[child] = parse(child, data)
        except ZNodeNotFoundError:
            continue  # deleted between the listing and the read
        except ZNodeFormatError as exc:
            log.error("ignoring unreadable %s/%s: %s", path, child, exc.message)
            if unreadable is not None:
                unreadable.append(child)
    return found


# ------------------------------------------------------------------------------- cache


@dataclass(frozen=True)
class AuthSnapshot:
    """Tokens by id and every ACL entry, as of one read.

    ``unreadable_acls`` names ACL znodes that could not be parsed. Such an entry may be a
    deny, and skipping it would fail open, so while any is present only super users are
    served (ingest/security/node_auth.py). An unreadable token needs no such care: a token
    nobody can read authenticates nobody."""

    tokens: Mapping[str, TokenRecord] = field(default_factory=dict)
    acls: tuple[AclEntry, ...] = ()
    unreadable_acls: tuple[str, ...] = ()


class AuthCache:
    """This node's copy of the tokens and ACLs, kept current by ZooKeeper watches."""

    def __init__(self, zk: ZkSession) -> None:
        self._zk = zk
        self._snapshot: AuthSnapshot | None = None
        self._handles: list[WatchHandle] = []
        self._refresher = Refresher("auth-cache", self.refresh, RESYNC_INTERVAL_S, REFRESH_RETRY_S)
        self._refreshed_at: float | None = None  # time.monotonic() of the last good refresh
        # one refresh at a time: a slow one begun before a change must not swap its older
        # snapshot in after a newer one (the refresher and a REST route both refresh)
        self._refresh_lock = threading.Lock()

    @property
    def snapshot(self) -> AuthSnapshot | None:
        """None until the first complete read (requests are then refused with a 503)."""
        return self._snapshot

    def age_s(self) -> float | None:
        """Seconds since the last complete read (None before the first): how stale the
        snapshot may be when ZooKeeper cannot be reached."""
        at = self._refreshed_at
        return None if at is None else time.monotonic() - at

    def start(self) -> None:
        """Read everything once (blocking), then watch; call from a thread, not the loop."""
        self.refresh()
        for path in (AUTH_TOKENS_PATH, ACLS_PATH):
            self._handles.append(self._zk.watch_children(path, self._on_change))
        self._refresher.start()

    def stop(self) -> None:
        for handle in self._handles:
            handle.cancel()
        self._refresher.stop()

    def refresh(self) -> None:
        """Re-read (entries already known are kept, not read again) and swap the snapshot."""
        with self._refresh_lock:
            self._refresh()

    def _refresh(self) -> None:
        old = self._snapshot or AuthSnapshot()
        tokens = _read_all(self._zk, AUTH_TOKENS_PATH, token_from_json, old.tokens)
        known_acls = {a.acl_id: a for a in old.acls}
        unreadable: list[str] = []
        acls = _read_all(self._zk, ACLS_PATH, acl_from_json, known_acls, unreadable)
        self._snapshot = AuthSnapshot(tokens, tuple(acls.values()), tuple(sorted(unreadable)))
        self._refreshed_at = time.monotonic()

    def _on_change(self, _children: list[str]) -> bool:
        """kazoo's thread: only wake the refresher."""
        self._refresher.wake()
        return not self._refresher.stopped
