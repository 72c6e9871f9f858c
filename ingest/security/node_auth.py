"""A node's authentication state: its config, the bootstrap credential and the token/ACL
cache, and the two questions every request asks: who is this, and may they do that."""

from __future__ import annotations

import hashlib
import hmac
import logging

from coordinator.auth_store import RESYNC_INTERVAL_S, AuthCache, AuthSnapshot
from coordinator.zk import ZkSession
from spark_log.auth import Action, authorize, digest_matches, parse_token
from spark_log.auth_config import AuthConfig, check_bootstrap_token
from spark_log.errors import (
    AuthUnavailableError,
    UnauthenticatedError,
    UnavailableError,
)
from spark_log.secret_file import read_secret_file

log = logging.getLogger("liftlog.auth")

BOOTSTRAP_PRINCIPAL = "admin"
ANONYMOUS_PRINCIPAL = "anonymous"
# The cache re-reads ZooKeeper at least every RESYNC_INTERVAL_S; a copy older than a few of
# those means ZooKeeper has been out of reach, and a revocation made meanwhile elsewhere
# would go unseen: past this age requests are refused rather than judged on it.
MAX_SNAPSHOT_AGE_S = 3 * RESYNC_INTERVAL_S


def bootstrap_token(config: AuthConfig) -> str:
    """The configured bootstrap token, read from ``bootstrap_token_file`` when given there
    (surrounding whitespace dropped); empty when neither is set."""
    if config.bootstrap_token:
        return config.bootstrap_token
    if not config.bootstrap_token_file:
        return ""
    token = read_secret_file(config.bootstrap_token_file, "auth.bootstrap_token_file")
    check_bootstrap_token(token, f"the token in {config.bootstrap_token_file}")
    return token


class NodeAuth:
    """What the REST layer asks; ``start`` loads the cache (a thread, it blocks)."""

    def __init__(self, config: AuthConfig, zk: ZkSession) -> None:
        self.config = config
        self.enabled = config.enabled
        self.cache = AuthCache(zk)
        token = bootstrap_token(config) if config.enabled else ""
        # only the digest is kept: the token itself never sits in this object
        self._bootstrap_sha256 = hashlib.sha256(token.encode()).hexdigest() if token else ""

    def start(self) -> None:
        if self.enabled:
            self.cache.start()

    def stop(self) -> None:
        if self.enabled:
            self.cache.stop()

    def snapshot(self) -> AuthSnapshot:
        """The cached tokens and ACLs, if recent enough to trust (UnavailableError else)."""
        snapshot = self.cache.snapshot
        if snapshot is None:
            raise UnavailableError("the node has not loaded tokens and ACLs yet; retry shortly")
        age = self.cache.age_s()
        if age is not None and age > MAX_SNAPSHOT_AGE_S:
            raise AuthUnavailableError(
                f"the node could not read tokens and ACLs from ZooKeeper for {age:.0f}s; "
                "retry shortly"
            )
        return snapshot

    def principal_for_token(self, text: str) -> str:
        """The principal a bearer token authenticates; UnauthenticatedError otherwise (one
        message for unknown, wrong and revoked, so a guess learns nothing)."""
        if self._bootstrap_sha256 and hmac.compare_digest(
            hashlib.sha256(text.encode()).hexdigest(), self._bootstrap_sha256
        ):
            return BOOTSTRAP_PRINCIPAL
        issued = parse_token(text)
        record = self.snapshot().tokens.get(issued.token_id) if issued else None
        if issued is None or record is None or not digest_matches(issued.secret, record.sha256):
            raise UnauthenticatedError("the bearer token is invalid, unknown or revoked")
        return record.principal

    def allows(self, principal: str, action: Action, resource: str) -> bool:
        if not self.enabled or principal in self.config.super_users:
            return True  # super users need no ACLs, so not the cache either
        snapshot = self.snapshot()
        if snapshot.unreadable_acls:
            # an entry nobody can read may be a deny: refuse rather than fail open
            raise AuthUnavailableError(
                f"ACL znodes {', '.join(snapshot.unreadable_acls)} cannot be read; a super "
                "user must remove them (DELETE /v1/acls/<id>) before other requests are judged"
            )
        return authorize(principal, action, resource, snapshot.acls, self.config.super_users)
