"""ZooKeeper over TLS: a real ZooKeeper with a secure client port only.

A session configured with the CA (and a client certificate) works; a plaintext client, a
TLS client without a client certificate and a TLS client trusting another CA never get a
session, because the server has no plaintext port and requires a certificate from its CA.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from coordinator.errors import ZkUnavailableError
from coordinator.zk import ZkSession
from liftlog.embedded.certs import CertificateAuthority
from liftlog.embedded.ports import free_port
from liftlog.embedded.probes import four_letter_word
from liftlog.embedded.zookeeper import ZooKeeperServer, secure_zookeeper
from liftlog.embedded.zookeeper_ensemble import ZooKeeperEnsemble
from liftlog.embedded.zookeeper_tls import ZkServerTls
from spark_log.tls_config import ZkSecurityConfig
from tests.support.secure_zk import (
    SECURE_ZK_SESSION_TIMEOUT_S,
    tls_only,
)
from tests.support.waiting import wait_for

REFUSED_CONNECT_TIMEOUT_S = 3.0


def _refused(security: ZkSecurityConfig | None, server: ZooKeeperServer, root: str) -> None:
    session = ZkSession(server.connect_string, root, 2.0, security)
    try:
        with pytest.raises(ZkUnavailableError):
            session.start(timeout_s=REFUSED_CONNECT_TIMEOUT_S)
    finally:
        session.stop()


def test_a_tls_session_connects_and_reads_and_writes(secure_zk, zk_certs, secure_root):
    security = tls_only(zk_certs)
    with ZkSession(
        secure_zk.connect_string, secure_root, SECURE_ZK_SESSION_TIMEOUT_S, security
    ) as session:
        session.create_json("/v1/hello", {"over": "tls"})
        assert session.get_json("/v1/hello") == ({"over": "tls"}, 0)
        assert session.set_json("/v1/hello", {"over": "tls", "n": 2}, 0) == 1


def test_the_server_opens_no_plaintext_port(secure_zk):
    # a plaintext four-letter word gets no answer: the port speaks TLS only
    assert four_letter_word(secure_zk.host, secure_zk.port, "ruok") == ""
    assert secure_zk.four_letter_word("ruok") == "imok"
    assert "clientPort=" not in secure_zk.config_path.read_text().replace("secureClientPort", "")


def test_a_plaintext_client_gets_no_session(secure_zk, secure_root):
    _refused(None, secure_zk, secure_root)


def test_a_tls_client_without_a_client_certificate_gets_no_session(
    secure_zk, zk_certs, secure_root
):
    _refused(ZkSecurityConfig(ca_file=zk_certs.ca_file), secure_zk, secure_root)


def test_a_client_trusting_another_ca_gets_no_session(
    secure_zk, zk_certs, secure_root, temp_dir: Path
):
    other = CertificateAuthority.create("another CA")
    other_ca = other.write(temp_dir / "other-ca.pem", temp_dir / "other-ca.key")
    client = other.issue_to(temp_dir, "client", "liftlog-node-1", server=False, client=True)
    security = ZkSecurityConfig(
        ca_file=other_ca.cert_file, cert_file=client.cert_file, key_file=client.key_file
    )
    _refused(security, secure_zk, secure_root)


@pytest.mark.slow
def test_an_ensemble_with_tls_client_ports_serves_tls_sessions_on_every_member(
    zk_certs, temp_dir: Path
):
    zk = zk_certs.zookeeper
    tls = ZkServerTls(Path(zk.cert_file), Path(zk.key_file), Path(zk_certs.ca_file))
    ensemble = ZooKeeperEnsemble(temp_dir / "ensemble", tls=tls).start()
    try:
        assert all(four_letter_word(s.host, s.port, "ruok") == "" for s in ensemble.servers)
        security = tls_only(zk_certs)
        for server in ensemble.servers:  # each member on its own: every port speaks TLS
            with ZkSession(server.connect_string, "/ensemble-tls", 6.0, security) as session:
                session.ensure_path(f"/{server.myid}")
        with ZkSession(ensemble.connect_string, "/ensemble-tls", 6.0, security) as session:
            assert session.children("/") == ["1", "2", "3"]
        _refused(None, ensemble.servers[0], "/ensemble-tls")
        # members talk TLS to each other too: the leader's quorum port completes a handshake
        leader = ensemble.leader()
        assert leader is not None
        host, quorum_port, _election_port = leader.peers[leader.myid].split(":")
        raw = socket.create_connection((host, int(quorum_port)), timeout=5)
        with raw, tls.probe_context().wrap_socket(raw, server_hostname=host) as quorum:
            assert quorum.version() is not None
    finally:
        ensemble.stop()


def test_a_tls_session_with_acls_reconnects_after_zookeeper_restarts(
    zk_certs, cluster_security, temp_dir: Path
):
    zk = zk_certs.zookeeper
    server = secure_zookeeper(
        free_port(),
        temp_dir / "zk",
        cert_file=zk.cert_file,
        key_file=zk.key_file,
        ca_file=zk_certs.ca_file,
    ).start()
    try:
        with ZkSession(
            server.connect_string, "/restarted", SECURE_ZK_SESSION_TIMEOUT_S, cluster_security
        ) as session:
            session.create_json("/before", {"v": 1})
            server.stop()
            wait_for(lambda: not session.connected, message="the session lost its connection")
            server.start()
            wait_for(lambda: session.connected, 30, message="the session reconnected over TLS")
            session.create_json("/after", {"v": 2})  # the digest identity was sent again
            assert session.get_json("/before") == ({"v": 1}, 0)
    finally:
        server.stop()
