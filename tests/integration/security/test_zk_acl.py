"""ZooKeeper ACLs on the cluster's znodes: only the cluster's digest identity may touch them.

Every way a session creates a znode (``create_json``, ephemeral znodes, ``ensure_path``, the
root itself, transactions) leaves the cluster's ACL on it; another ZooKeeper user, with
another digest identity or none, can neither read, rewrite, delete nor add children
(ZooKeeper answers NoAuth), while the cluster's own sessions keep working.
"""

from __future__ import annotations

import pytest
from kazoo.exceptions import NoAuthError
from kazoo.security import make_digest_acl

from coordinator.errors import ZkAccessDeniedError
from coordinator.zk import ZkSession
from tests.support.secure_zk import (
    CLUSTER_DIGEST_USER,
    SECURE_ZK_SESSION_TIMEOUT_S,
    tls_only,
    with_digest,
)

STATE = "/v1/streams/orders/partitions/0/state"


def _session(server, root, security) -> ZkSession:
    return ZkSession(server.connect_string, root, SECURE_ZK_SESSION_TIMEOUT_S, security).start()


def _cluster_tree(session: ZkSession) -> list[str]:
    """Build znodes through every create path of ZkSession."""
    session.create_json(STATE, {"leader": 1, "leader_epoch": 0})
    session.create_json("/v1/brokers/ids/1", {"host": "n1"}, ephemeral=True)
    session.ensure_path("/v1/streams")
    session.transaction().create("/v1/acls").create_json("/v1/acls/a", {"allow": True}).commit()
    return [
        "/",
        "/v1",
        "/v1/streams",
        "/v1/streams/orders",
        "/v1/streams/orders/partitions",
        "/v1/streams/orders/partitions/0",
        STATE,
        "/v1/brokers",
        "/v1/brokers/ids",
        "/v1/brokers/ids/1",
        "/v1/acls",
        "/v1/acls/a",
    ]


def _assert_locked_out(client, root: str) -> None:
    """Every read and write of the cluster's znodes is refused to ``client``."""
    state = f"{root}{STATE}"
    for attempt in (
        lambda: client.get(state),
        lambda: client.set(state, b'{"leader": 666}'),
        lambda: client.delete(state),
        lambda: client.delete(f"{root}/v1/brokers/ids/1"),
        lambda: client.create(f"{root}/v1/brokers/ids/666", b"{}"),
        lambda: client.create(f"{root}/v1/streams/evil", b"{}"),
        lambda: client.set_acls(state, [make_digest_acl("mallory", "x", all=True)]),
        lambda: client.get_children(f"{root}/v1/streams"),
    ):
        with pytest.raises(NoAuthError):
            attempt()


def test_every_znode_the_cluster_creates_carries_its_acl_only(
    secure_zk, secure_root, cluster_security
):
    with _session(secure_zk, secure_root, cluster_security) as session:
        expected = [make_digest_acl(CLUSTER_DIGEST_USER, cluster_security.password(), all=True)]
        for path in _cluster_tree(session):
            assert session.acls(path) == expected, path


def test_other_zookeeper_users_cannot_read_rewrite_or_delete(
    secure_zk, secure_root, cluster_security, make_kazoo
):
    with _session(secure_zk, secure_root, cluster_security) as session:
        _cluster_tree(session)
        _assert_locked_out(make_kazoo(auth=("mallory", "secret")), secure_root)
        _assert_locked_out(make_kazoo(), secure_root)
        # same user name, wrong password: a different digest, so a different identity
        _assert_locked_out(make_kazoo(auth=(CLUSTER_DIGEST_USER, "guess")), secure_root)
        # the cluster's own identity, on another session, still reads and writes
        with _session(secure_zk, secure_root, cluster_security) as other:
            _data, version = other.get_json(STATE)
            other.set_json(STATE, {"leader": 2, "leader_epoch": 1}, version)
        assert session.get_json(STATE)[0] == {"leader": 2, "leader_epoch": 1}


def test_a_session_with_another_identity_is_refused_at_start(
    secure_zk, secure_root, cluster_security, zk_certs
):
    with _session(secure_zk, secure_root, cluster_security) as session:
        _cluster_tree(session)
    wrong = with_digest(zk_certs, CLUSTER_DIGEST_USER, "not-the-password")
    with pytest.raises(ZkAccessDeniedError):
        _session(secure_zk, secure_root, wrong)


def test_a_root_left_open_by_an_unsecured_run_is_locked_on_the_first_secured_start(
    secure_zk, secure_root, cluster_security, zk_certs, make_kazoo
):
    with _session(secure_zk, secure_root, tls_only(zk_certs)) as open_session:
        paths = _cluster_tree(open_session)
        assert open_session.acls(STATE)[0].id.scheme == "world"
    with _session(secure_zk, secure_root, cluster_security) as session:
        session.create_json("/v1/brokers/ids/1", {"host": "n1"}, ephemeral=True)
        expected = [make_digest_acl(CLUSTER_DIGEST_USER, cluster_security.password(), all=True)]
        for path in paths:
            assert session.acls(path) == expected, path
        _assert_locked_out(make_kazoo(), secure_root)
