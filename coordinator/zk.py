"""The kazoo adapter: one ZooKeeper session, JSON znodes, conditional writes, watches.

This is the only module that imports kazoo. Every kazoo exception is converted here into a
``coordinator.errors`` type, so the rest of Liftlog never sees a kazoo class.

Paths given to a ZkSession are relative to its root (``/v1/streams`` means
``{root}/v1/streams``). The root is applied here rather than through kazoo's chroot so that one
connect string serves every root (tests give each test its own root on a shared server) and a
missing root is simply created on first write.

Threads: state listeners and watch callbacks run on kazoo's threads. They must return quickly
and must not block, and must not make blocking ZooKeeper calls from a state listener (kazoo
would deadlock); hop onto your own loop or queue instead
(``loop.call_soon_threadsafe(...)``).

Security (``ZkSecurityConfig``, docs/security.md): with a CA the session speaks TLS to
ZooKeeper's secure client port, verifying the server's certificate and the host it names; with
a digest identity the session authenticates as that user and every znode it creates carries
an ACL granting everything to that identity and nothing to anyone else (no ``world`` entry:
the tree holds token hashes and ACL policies, which are nobody else's business either). The
root itself is created with that ACL, and a root left open by an unsecured run is converted,
with everything under it, when a secured session starts.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Self, TypeAlias

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    RolledBackError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError, SequentialThreadingHandler
from kazoo.protocol.states import KazooState, ZnodeStat
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.retry import KazooRetry, RetryFailedError
from kazoo.security import ACL, make_digest_acl

from coordinator.errors import (
    CoordinatorError,
    VersionConflictError,
    ZkAccessDeniedError,
    ZkNotSentError,
    ZkSessionExpiredError,
    ZkUnavailableError,
    ZNodeExistsError,
    ZNodeFormatError,
    ZNodeNotEmptyError,
    ZNodeNotFoundError,
)
from spark_log.config import (
    DEFAULT_ZK_CONNECT,
    DEFAULT_ZK_ROOT,
    DEFAULT_ZK_SESSION_TIMEOUT_S,
    NodeConfig,
)
from spark_log.json_types import JsonObject
from spark_log.tls_config import ZkSecurityConfig

SessionState = Literal["connected", "suspended", "lost"]
StateListener = Callable[[SessionState], None]
ChildrenCallback = Callable[[list[str]], bool | None]
DataCallback = Callable[[JsonObject | None, int | None], bool | None]
KazooResult: TypeAlias = Any  # kazoo ships no type information: what its calls answer is untyped

DEFAULT_ZK_CONNECT_TIMEOUT_S = 15.0
# Reads retried on connection loss: a few quick tries, bounded in time by the session timeout.
READ_RETRY_MAX_TRIES = 8
READ_RETRY_DELAY_S = 0.05
READ_RETRY_MAX_DELAY_S = 1.0
# Reconnection: forever (the session may still be alive), but never more than 1 s apart so a
# restarted ZooKeeper is found quickly (kazoo's default backoff grows to an hour).
RECONNECT_DELAY_S = 0.1
RECONNECT_MAX_DELAY_S = 1.0
DELETE_TREE_MAX_ATTEMPTS = 5

_STATES: dict[str, SessionState] = {
    KazooState.CONNECTED: "connected",
    KazooState.SUSPENDED: "suspended",
    KazooState.LOST: "lost",
}


@dataclass
class WatchHandle:
    """Stops a watch: the callback is not called again once ``cancel`` returns.

    ZooKeeper watches cannot be withdrawn from the server; kazoo drops them at their next event.
    """

    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


class ZkSession:
    """One ZooKeeper session under a root path, speaking JSON znodes."""

    def __init__(
        self,
        hosts: str = DEFAULT_ZK_CONNECT,
        root: str = DEFAULT_ZK_ROOT,
        session_timeout_s: float = DEFAULT_ZK_SESSION_TIMEOUT_S,
        security: ZkSecurityConfig | None = None,
    ) -> None:
        if not root.startswith("/") or root.endswith("/"):
            raise CoordinatorError(f"root {root!r} must start with '/' and not end with '/'")
        self.hosts = hosts
        self.root = root
        self.session_timeout_s = session_timeout_s
        security = security or ZkSecurityConfig()
        # the ACL every znode this session creates carries; None: ZooKeeper's open ACL
        self.acl: list[ACL] | None = _cluster_acl(security)
        handler = SequentialThreadingHandler()
        self._client = KazooClient(
            hosts=hosts,
            timeout=session_timeout_s,
            handler=handler,
            connection_retry=KazooRetry(
                max_tries=-1,
                delay=RECONNECT_DELAY_S,
                max_delay=RECONNECT_MAX_DELAY_S,
                sleep_func=handler.sleep_func,
            ),
            command_retry=KazooRetry(
                max_tries=READ_RETRY_MAX_TRIES,
                delay=READ_RETRY_DELAY_S,
                max_delay=READ_RETRY_MAX_DELAY_S,
                deadline=session_timeout_s,
                ignore_expire=False,
                sleep_func=handler.sleep_func,
            ),
            default_acl=self.acl,
            **_tls_options(security),
            **_auth_options(security),
        )
        self._listeners: dict[StateListener, Callable[[str], None]] = {}
        # set while connected (kazoo's thread keeps it current): what a call waits on, bounded
        self._connected = threading.Event()
        self._closed = False  # stop() was called: nothing will connect again
        self._client.add_listener(self._track_connection)

    @classmethod
    def from_node_config(cls, config: NodeConfig) -> ZkSession:
        """The node's session: its connect string, root, timeout and ``[zk_security]``."""
        return cls(
            config.zk_connect, config.zk_root, config.zk_session_timeout_s, config.zk_security
        )

    # -- life cycle ------------------------------------------------------------------------

    def start(self, timeout_s: float = DEFAULT_ZK_CONNECT_TIMEOUT_S) -> Self:
        """Connect and establish the session; ZkUnavailableError if that takes too long."""
        try:
            self._client.start(timeout=timeout_s)
        except (KazooException, KazooTimeoutError) as exc:
            raise ZkUnavailableError(
                f"cannot connect to ZooKeeper at {self.hosts} within {timeout_s:.1f}s"
            ) from exc
        if self.acl is not None:
            try:
                self._protect_root()
            except CoordinatorError:
                self.stop()
                raise
        return self

    def stop(self) -> None:
        """Close the session: its ephemeral znodes disappear at once (a clean goodbye)."""
        self._closed = True
        with contextlib.suppress(KazooException, KazooTimeoutError):
            self._client.stop()
        self._client.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def connected(self) -> bool:
        return bool(self._client.connected)

    @property
    def session_id(self) -> int | None:
        """The server-assigned session id (owner of this session's ephemeral znodes)."""
        client_id = self._client.client_id
        return int(client_id[0]) if client_id else None

    def add_state_listener(self, callback: StateListener) -> None:
        """Call ``callback("connected"|"suspended"|"lost")`` on every session state change.

        Runs on kazoo's connection thread: return at once, never block, never call ZooKeeper
        from it. "suspended" means in doubt (stop acting as leader until reconnected); "lost"
        means the session expired and every ephemeral znode of it is gone.
        """

        def adapter(state: str) -> None:
            callback(_STATES[state])

        self._listeners[callback] = adapter
        self._client.add_listener(adapter)

    def remove_state_listener(self, callback: StateListener) -> None:
        adapter = self._listeners.pop(callback, None)
        if adapter is not None:
            self._client.remove_listener(adapter)

    # -- bounded calls ---------------------------------------------------------------------

    def _track_connection(self, state: str) -> None:
        """kazoo's thread: only flips the event (a listener must not block)."""
        if state == KazooState.CONNECTED:
            self._connected.set()
        else:
            self._connected.clear()

    def _bounded(
        self, call: Callable[..., KazooResult], *args: object, **kwargs: object
    ) -> KazooResult:
        """One request, sent only once connected and bounded in time.

        kazoo queues a request made while it is reconnecting and waits for it without limit:
        with the ensemble's quorum gone that is a hang for as long as the outage lasts (and a
        write applied whenever ZooKeeper returns, long after its caller gave up). Here a call
        waits for the connection for at most the session timeout (a reconnect to another
        server of the ensemble takes far less, so losing one server goes unnoticed), then
        fails with ZkNotSentError (a ZkUnavailableError, a 503, for the caller): certainly
        not applied. The time bound on the answer covers a connection lost while the request
        is in flight; that failure (a plain ZkUnavailableError) leaves the outcome unknown:
        the request may still be applied, as with any request whose answer was lost.
        """
        if self._closed:
            raise ConnectionClosedError("the session was stopped")
        if not self._connected.wait(self.session_timeout_s):
            raise ZkNotSentError("ZooKeeper unreachable: not connected, the request was not sent")
        return call(*args, **kwargs).get(timeout=self.session_timeout_s)

    def _require_connected(self, path: str) -> None:
        """Wait (bounded) for the connection rather than install a watch whose first read
        would wait for a reconnect without limit."""
        if not self._connected.wait(self.session_timeout_s):
            raise ZkUnavailableError(f"ZooKeeper unreachable ({path}): not connected")

    def _retried(self, call: Callable[..., KazooResult], *args: object) -> KazooResult:
        """``_bounded`` retried on a connection lost mid-request, within the session timeout
        (for reads and idempotent writes, which are safe to send again)."""
        return self._client.retry(self._bounded, call, *args)

    # -- paths -----------------------------------------------------------------------------

    def absolute(self, path: str) -> str:
        """The full ZooKeeper path of a root-relative path."""
        if not path.startswith("/"):
            raise CoordinatorError(f"path {path!r} must start with '/' (relative to the root)")
        return self.root if path == "/" else f"{self.root}{path}"

    # -- ACLs ------------------------------------------------------------------------------

    def _protect_root(self) -> None:
        """Create the root with the cluster's ACL, or convert a root (and its tree) that an
        unsecured run left open. ZkAccessDeniedError when another identity owns it."""
        self.ensure_path("/")
        if self.acls("/") != self.acl:
            self.set_acls_recursive("/")

    def acls(self, path: str) -> list[ACL]:
        """The znode's ACL (ZooKeeper answers only an identity with READ or ADMIN on it)."""
        full = self.absolute(path)
        with _converted(full):
            acls, _stat = self._retried(self._client.get_acls_async, full)
        return list(acls)

    def set_acls_recursive(self, path: str) -> None:
        """Put the cluster's ACL on ``path`` and every znode under it (parents first, so a
        concurrent reader never finds an open child under a closed parent for long)."""
        if self.acl is None:
            raise CoordinatorError("this session has no digest identity to protect znodes with")
        for node in self._tree(path):
            full = self.absolute(node)
            # an ephemeral znode may vanish (its session ends) between listing and here
            with contextlib.suppress(ZNodeNotFoundError), _converted(full):
                self._retried(self._client.set_acls_async, full, self.acl)

    # -- reads -----------------------------------------------------------------------------

    def exists(self, path: str) -> bool:
        full = self.absolute(path)
        with _converted(full):
            return self._retried(self._client.exists_async, full) is not None

    def get_json(self, path: str) -> tuple[JsonObject, int]:
        """The znode's JSON object and its version (for a later conditional write)."""
        full = self.absolute(path)
        with _converted(full):
            raw, stat = self._retried(self._client.get_async, full)
        return _decode(raw, full), int(stat.version)

    def ephemeral_owner(self, path: str) -> int | None:
        """The session owning an ephemeral znode, None for a persistent one."""
        full = self.absolute(path)
        with _converted(full):
            _raw, stat = self._retried(self._client.get_async, full)
        return int(stat.ephemeralOwner) or None

    def creation_zxid(self, path: str) -> int:
        """The zxid of the transaction that created the znode (its ``czxid``).

        zxids only grow, so a znode deleted and created again (a broker's registration after a
        restart) gets a larger one: this is what makes it usable as an incarnation number.
        """
        full = self.absolute(path)
        with _converted(full):
            _raw, stat = self._retried(self._client.get_async, full)
        return int(stat.czxid)

    def children(self, path: str) -> list[str]:
        """Child names, sorted (ZooKeeper returns them in no particular order)."""
        full = self.absolute(path)
        with _converted(full):
            return sorted(self._retried(self._client.get_children_async, full))

    # -- writes ----------------------------------------------------------------------------

    def ensure_path(self, path: str) -> None:
        """Create the persistent znode and its parents if missing (idempotent)."""
        full = self.absolute(path)
        with _converted(full):
            self._retried(self._client.ensure_path_async, full)

    def create_json(
        self, path: str, data: JsonObject, ephemeral: bool = False, makepath: bool = True
    ) -> None:
        """Create a znode holding ``data``; ZNodeExistsError if it is already there.

        Not retried on connection loss: the create may have been applied, and only the caller
        knows how to tell (e.g. an ephemeral znode owned by its own session).
        """
        full = self.absolute(path)
        with _converted(full):
            self._bounded(
                self._client.create_async,
                full,
                _encode(data),
                ephemeral=ephemeral,
                makepath=makepath,
            )

    def set_json(self, path: str, data: JsonObject, version: int) -> int:
        """Conditional write: succeeds only if the znode is still at ``version``.

        Returns the new version; VersionConflictError if someone else wrote in between.
        """
        full = self.absolute(path)
        with _converted(full):
            stat = self._bounded(self._client.set_async, full, _encode(data), version=version)
        return int(stat.version)

    def delete(self, path: str, version: int = -1) -> None:
        """Delete one znode (conditional on ``version`` unless -1)."""
        full = self.absolute(path)
        with _converted(full):
            self._bounded(self._client.delete_async, full, version=version)

    def delete_recursive(
        self, path: str, also: Callable[[ZkTransaction], None] | None = None
    ) -> None:
        """Delete a znode and everything under it in one transaction (all or nothing), with
        whatever ``also`` adds to that transaction.

        Readers never see a half-deleted tree. If the tree changes while it is being listed the
        transaction fails and is retried a bounded number of times.
        """
        for attempt in range(1, DELETE_TREE_MAX_ATTEMPTS + 1):
            tree = self._tree(path)
            txn = self.transaction()
            for node in reversed(tree):
                txn.delete(node)
            if also is not None:
                also(txn)
            try:
                txn.commit()
                return
            except (ZNodeNotEmptyError, ZNodeNotFoundError):
                if attempt == DELETE_TREE_MAX_ATTEMPTS:
                    raise

    def _tree(self, path: str) -> list[str]:
        """``path`` and its descendants, parents before children."""
        nodes = [path]
        for child in self.children(path):
            nodes.extend(self._tree(f"{path.rstrip('/')}/{child}"))
        return nodes

    def transaction(self) -> ZkTransaction:
        """A multi-op applied atomically by ``commit`` (ZooKeeper's multi)."""
        return ZkTransaction(self, self._client.transaction())

    # -- waiting and watching --------------------------------------------------------------

    def wait_deleted(self, path: str, timeout_s: float) -> bool:
        """Block until the znode does not exist (True) or ``timeout_s`` passes (False).

        Woken by a ZooKeeper watch rather than polling.
        """
        full = self.absolute(path)
        deadline = time.monotonic() + timeout_s
        while True:
            changed = threading.Event()
            with _converted(full):
                stat = self._bounded(self._client.exists_async, full, watch=_setter(changed))
            if stat is None:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not changed.wait(remaining):
                return False

    def watch_children(self, path: str, callback: ChildrenCallback) -> WatchHandle:
        """Call ``callback(children)`` now and whenever the set of children changes.

        The znode must exist. Survives reconnects and session loss (kazoo re-registers).
        Return False from the callback (or cancel the handle) to stop. Runs on kazoo's thread.
        """
        handle = WatchHandle()
        full = self.absolute(path)
        self._require_connected(full)

        def on_children(children: list[str]) -> bool | None:
            if handle.cancelled:
                return False
            return callback(sorted(children))

        with _converted(full):
            ChildrenWatch(self._client, full, on_children)
        return handle

    def watch_data(self, path: str, callback: DataCallback) -> WatchHandle:
        """Call ``callback(data, version)`` now and whenever the znode changes.

        ``data`` and ``version`` are None while the znode does not exist (it may be created
        later). Survives reconnects. Return False (or cancel) to stop. Runs on kazoo's thread.
        """
        handle = WatchHandle()
        full = self.absolute(path)
        self._require_connected(full)

        def on_data(raw: bytes | None, stat: ZnodeStat | None, _event: object) -> bool | None:
            if handle.cancelled:
                return False
            if raw is None or stat is None:
                return callback(None, None)
            return callback(_decode(raw, full), int(stat.version))

        with _converted(full):
            DataWatch(self._client, full, on_data)
        return handle


class ZkTransaction:
    """ZooKeeper's multi-op with JSON values and root-relative paths; all ops or none."""

    def __init__(self, session: ZkSession, request: TransactionRequest) -> None:
        self._session = session
        self._request = request
        self._paths: list[str] = []

    def create_json(self, path: str, data: JsonObject, ephemeral: bool = False) -> Self:
        return self._add(
            path, lambda full: self._request.create(full, _encode(data), None, ephemeral)
        )

    def create(self, path: str) -> Self:
        """An empty persistent znode (a directory); parents must exist or be created earlier."""
        return self._add(path, lambda full: self._request.create(full, b""))

    def create_sequential_json(self, prefix: str, data: JsonObject) -> Self:
        """A persistent sequential znode ``<prefix><10 digits>``: ZooKeeper appends the parent's
        next sequence number, which only grows (the parent is never deleted)."""
        return self._add(
            prefix, lambda full: self._request.create(full, _encode(data), None, False, True)
        )

    def set_json(self, path: str, data: JsonObject, version: int) -> Self:
        return self._add(path, lambda full: self._request.set_data(full, _encode(data), version))

    def delete(self, path: str, version: int = -1) -> Self:
        return self._add(path, lambda full: self._request.delete(full, version))

    def check(self, path: str, version: int) -> Self:
        """Make the whole transaction conditional on ``path`` being at ``version`` (fencing)."""
        return self._add(path, lambda full: self._request.check(full, version))

    def _add(self, path: str, op: Callable[[str], None]) -> Self:
        full = self._session.absolute(path)
        op(full)
        self._paths.append(full)
        return self

    def commit(self) -> None:
        """Apply every op atomically; the first failing op's error is raised, typed."""
        with _converted(self._session.root):
            results = self._session._bounded(self._request.commit_async)
        for full, result in zip(self._paths, results, strict=True):
            if isinstance(result, KazooException) and not isinstance(result, RolledBackError):
                raise _translate(result, full) from result


def _setter(event: threading.Event) -> Callable[[object], None]:
    """A one-shot watch that wakes whoever waits on ``event``."""
    return lambda _watched_event: event.set()


@contextlib.contextmanager
def _converted(path: str) -> Iterator[None]:
    """Turn any kazoo exception raised inside into the matching CoordinatorError."""
    try:
        yield
    except (KazooException, KazooTimeoutError) as exc:
        raise _translate(exc, path) from exc


def _translate(exc: BaseException, path: str) -> CoordinatorError:
    if isinstance(exc, NoNodeError):
        return ZNodeNotFoundError(f"znode {path} does not exist")
    if isinstance(exc, NodeExistsError):
        return ZNodeExistsError(f"znode {path} already exists")
    if isinstance(exc, BadVersionError):
        return VersionConflictError(f"znode {path} changed since the version this write expected")
    if isinstance(exc, NotEmptyError):
        return ZNodeNotEmptyError(f"znode {path} has children")
    if isinstance(exc, NoAuthError):
        return ZkAccessDeniedError(
            f"ZooKeeper denied access to {path}: its ACL does not grant it to this session's "
            "identity (check [zk_security] digest_user and its password)"
        )
    if isinstance(exc, ConnectionClosedError):
        return ZkUnavailableError(f"the ZooKeeper session is closed ({path})")
    if isinstance(exc, SessionExpiredError):
        return ZkSessionExpiredError(f"the ZooKeeper session expired ({path})")
    if isinstance(
        exc, (ConnectionLoss, OperationTimeoutError, RetryFailedError, KazooTimeoutError)
    ):
        return ZkUnavailableError(f"ZooKeeper unreachable ({path}): {type(exc).__name__}")
    return CoordinatorError(f"ZooKeeper error on {path}: {type(exc).__name__}: {exc}")


def _encode(data: JsonObject) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def _decode(raw: bytes, path: str) -> JsonObject:
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ZNodeFormatError(f"znode {path} does not hold JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ZNodeFormatError(f"znode {path} holds {type(data).__name__}, not a JSON object")
    return data


def _cluster_acl(security: ZkSecurityConfig) -> list[ACL] | None:
    """Everything for the cluster's digest identity, nothing for anyone else."""
    if not security.acl:
        return None
    return [make_digest_acl(security.digest_user, security.password(), all=True)]


def _auth_options(security: ZkSecurityConfig) -> dict[str, object]:
    """kazoo's ``auth_data``: the digest identity sent at every (re)connect."""
    if not security.acl:
        return {}
    return {"auth_data": [("digest", f"{security.digest_user}:{security.password()}")]}


def _tls_options(security: ZkSecurityConfig) -> dict[str, object]:
    """kazoo's TLS options: the server's certificate must chain to ``ca_file`` and name the
    host of the connect string; a client certificate when configured."""
    if not security.tls:
        return {}
    return {
        "use_ssl": True,
        "ca": security.ca_file,
        "certfile": security.cert_file or None,
        "keyfile": security.key_file or None,
        "verify_certs": True,
        "check_hostname": True,
    }
