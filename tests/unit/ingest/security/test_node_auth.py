"""A node's authentication state before and without ZooKeeper: the bootstrap credential,
the 503 until tokens and ACLs are loaded, and the credentials of node-to-node calls."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from coordinator.auth_store import AuthSnapshot
from ingest.node import _log_auth_mode
from ingest.security.node_auth import (
    BOOTSTRAP_PRINCIPAL,
    MAX_SNAPSHOT_AGE_S,
    NodeAuth,
    bootstrap_token,
)
from ingest.security.node_credentials import caller_token, node_credentials, outgoing_credentials
from spark_log.auth import AclEntry, Action
from spark_log.auth_config import AuthConfig
from spark_log.config import NodeConfig
from spark_log.errors import AuthUnavailableError, ConfigError, UnavailableError
from spark_log.tls_config import ApiTlsConfig


def _auth(**settings: object) -> NodeAuth:
    return NodeAuth(AuthConfig(**settings), None)  # type: ignore[arg-type]  # never started


def test_the_bootstrap_token_is_admin_even_before_the_cache_loads() -> None:
    auth = _auth(bootstrap_token="boot-secret-0123456789")
    assert auth.principal_for_token("boot-secret-0123456789") == BOOTSTRAP_PRINCIPAL
    assert auth.allows(BOOTSTRAP_PRINCIPAL, Action.AUTH_ADMIN, "cluster")
    assert "boot-secret-0123456789" not in repr(vars(auth))


def test_everything_else_waits_for_the_cache_with_a_503() -> None:
    auth = _auth(bootstrap_token="boot-secret-0123456789")
    with pytest.raises(UnavailableError):
        auth.principal_for_token("llt_0011_secret")
    with pytest.raises(UnavailableError):
        auth.allows("alice", Action.PUBLISH, "stream:s")


def test_disabled_auth_allows_everything_without_a_cache() -> None:
    assert _auth(enabled=False).allows("anyone", Action.DELETE, "stream:s")


def test_the_bootstrap_token_comes_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "admin.token"
    path.write_text("from-file-0123456789\n")
    assert bootstrap_token(AuthConfig(bootstrap_token_file=str(path))) == "from-file-0123456789"
    path.write_text("short\n")
    with pytest.raises(ConfigError, match="at least 16"):
        bootstrap_token(AuthConfig(bootstrap_token_file=str(path)))
    with pytest.raises(ConfigError, match="bootstrap_token_file"):
        bootstrap_token(AuthConfig(bootstrap_token_file=str(tmp_path / "missing")))


def test_node_calls_use_the_callers_token_when_there_is_one(tmp_path: Path) -> None:
    cert, key, ca = (str(tmp_path / name) for name in ("n.pem", "n.key", "ca.pem"))
    for path in (cert, key, ca):
        Path(path).write_text("")
    config = NodeConfig(
        broker_id=1,
        data_dir="/d",
        auth=AuthConfig(bootstrap_token="node-token-0123456789"),
        api_tls=ApiTlsConfig(cert_file=cert, key_file=key, ca_file=ca),
    )
    own = node_credentials(config)
    assert (own.token, own.cert_file, own.key_file, own.ca_file) == (
        "node-token-0123456789",
        cert,
        key,
        ca,
    )
    assert outgoing_credentials(config) == own
    reset = caller_token.set("caller-token")
    try:
        forwarded = outgoing_credentials(config)
    finally:
        caller_token.reset(reset)
    assert forwarded.token == "caller-token" and forwarded.ca_file == ca


def test_a_node_without_auth_says_so_loudly(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="liftlog.node")
    _log_auth_mode(NodeConfig(broker_id=7, data_dir="/d", auth=AuthConfig(enabled=False)))
    assert "authentication is DISABLED" in caplog.text and "node 7" in caplog.text
    caplog.clear()
    _log_auth_mode(
        NodeConfig(broker_id=7, data_dir="/d", auth=AuthConfig(bootstrap_token="t" * 16))
    )
    assert "DISABLED" not in caplog.text and "without TLS" in caplog.text


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"bootstrap_token": "a" * 16, "bootstrap_token_file": "/f"}, "not both"),
        ({"bootstrap_token": "too-short"}, "at least 16"),
        ({"super_users": ("admin", "*")}, "super_users"),
        ({"super_users": ("two words",)}, "super_users"),
    ],
)
def test_auth_config_refuses_unsafe_settings(settings: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        AuthConfig(**settings)


def _loaded(snapshot: AuthSnapshot) -> NodeAuth:
    auth = _auth(bootstrap_token="boot-secret-0123456789")
    auth.cache._snapshot = snapshot  # the state a refresh leaves, without a ZooKeeper
    auth.cache._refreshed_at = time.monotonic()
    return auth


def test_an_unreadable_acl_refuses_all_but_super_users() -> None:
    allow = AclEntry("01", "alice", Action.PUBLISH, "stream:s")
    auth = _loaded(AuthSnapshot({}, (allow,), ("0bad",)))
    with pytest.raises(AuthUnavailableError, match="0bad"):
        auth.allows("alice", Action.PUBLISH, "stream:s")
    assert auth.allows(BOOTSTRAP_PRINCIPAL, Action.AUTH_ADMIN, "cluster")
    assert _loaded(AuthSnapshot({}, (allow,))).allows("alice", Action.PUBLISH, "stream:s")


def test_a_stale_cache_refuses_all_but_super_users() -> None:
    auth = _loaded(AuthSnapshot({}, (AclEntry("01", "alice", Action.PUBLISH, "stream:s"),)))
    auth.cache._refreshed_at = time.monotonic() - MAX_SNAPSHOT_AGE_S - 1
    with pytest.raises(AuthUnavailableError):
        auth.allows("alice", Action.PUBLISH, "stream:s")
    with pytest.raises(AuthUnavailableError):
        auth.principal_for_token("llt_0011_secret")
    assert auth.principal_for_token("boot-secret-0123456789") == BOOTSTRAP_PRINCIPAL
    assert auth.allows(BOOTSTRAP_PRINCIPAL, Action.DELETE, "stream:s")
