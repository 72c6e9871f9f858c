"""The throwaway CA of ``standalone --secure``: real keys and certificates, verified by the
``ssl`` module in an in-memory TLS handshake (what every client of the stack will do)."""

from __future__ import annotations

import ssl
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from liftlog.embedded.certs import (
    ADMIN_PRINCIPAL,
    CertificateAuthority,
    CertPaths,
    common_name,
    generate_stack_certs,
)

HANDSHAKE_MAX_ROUNDS = 20


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext, host: str = "127.0.0.1") -> dict:
    """A full TLS handshake through memory buffers; returns the client cert the server saw."""
    s_in, s_out, c_in, c_out = (ssl.MemoryBIO() for _ in range(4))
    server_side = server.wrap_bio(s_in, s_out, server_side=True)
    client_side = client.wrap_bio(c_in, c_out, server_hostname=host)
    done = {"server": False, "client": False}
    for _ in range(HANDSHAKE_MAX_ROUNDS):
        for name, side in (("client", client_side), ("server", server_side)):
            if not done[name]:
                try:
                    side.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            # TLS 1.3: the server reads the client's certificate with the client's Finished
            client_side.write(b"x")
            s_in.write(c_out.read())
            assert server_side.read(1) == b"x"
            return server_side.getpeercert() or {}
    raise AssertionError("handshake did not finish")


def _server_context(pair: CertPaths, ca_file: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pair.cert_file, pair.key_file)
    context.load_verify_locations(ca_file)
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def _client_context(ca_file: str, pair: CertPaths | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca_file)
    if pair is not None:
        context.load_cert_chain(pair.cert_file, pair.key_file)
    return context


def _subject_cn(peer: dict) -> str:
    return next(v for rdn in peer["subject"] for k, v in rdn if k == "commonName")


def test_node_cert_serves_and_authenticates_with_its_cn(tmp_path: Path) -> None:
    certs = generate_stack_certs(tmp_path, [1, 2])
    node1, node2 = certs.nodes[1], certs.nodes[2]
    # node 2 calls node 1: node 1's cert is a server cert, node 2's a client cert
    peer = _handshake(_server_context(node1, certs.ca_file), _client_context(certs.ca_file, node2))
    assert _subject_cn(peer) == "liftlog-node-2"
    peer = _handshake(
        _server_context(node1, certs.ca_file),
        _client_context(certs.ca_file, node1),
        host="localhost",
    )
    assert _subject_cn(peer) == "liftlog-node-1"


def test_admin_client_cert_names_the_admin_principal(tmp_path: Path) -> None:
    certs = generate_stack_certs(tmp_path, [1])
    peer = _handshake(
        _server_context(certs.nats, certs.ca_file), _client_context(certs.ca_file, certs.admin)
    )
    assert _subject_cn(peer) == ADMIN_PRINCIPAL
    assert common_name(certs.admin.cert_file) == ADMIN_PRINCIPAL
    assert common_name(certs.zookeeper.cert_file) == "liftlog-zookeeper"


def test_a_client_of_another_ca_cannot_verify_the_server(tmp_path: Path) -> None:
    certs = generate_stack_certs(tmp_path / "a", [1])
    other = generate_stack_certs(tmp_path / "b", [1])
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(_server_context(certs.nodes[1], certs.ca_file), _client_context(other.ca_file))


def test_a_client_cert_of_another_ca_is_refused(tmp_path: Path) -> None:
    certs = generate_stack_certs(tmp_path / "a", [1])
    other = generate_stack_certs(tmp_path / "b", [1])
    with pytest.raises(ssl.SSLError):
        _handshake(
            _server_context(certs.nodes[1], certs.ca_file),
            _client_context(certs.ca_file, other.admin),
        )


def test_admin_cert_is_not_a_server_cert(tmp_path: Path) -> None:
    certs = generate_stack_certs(tmp_path, [1])
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(_server_context(certs.admin, certs.ca_file), _client_context(certs.ca_file))


def test_key_files_are_private_and_keys_are_p256(tmp_path: Path) -> None:
    certs = generate_stack_certs(tmp_path, [1])
    for pair in (certs.nodes[1], certs.nats, certs.zookeeper, certs.admin):
        assert stat.S_IMODE(Path(pair.key_file).stat().st_mode) == 0o600
        cert = x509.load_pem_x509_certificate(Path(pair.cert_file).read_bytes())
        key = cert.public_key()
        assert isinstance(key, ec.EllipticCurvePublicKey)
        assert key.curve.name == "secp256r1"
    assert stat.S_IMODE(Path(certs.ca_key_file).stat().st_mode) == 0o600
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o700


def test_node_cert_has_both_usages_and_local_names(tmp_path: Path) -> None:
    certs = generate_stack_certs(tmp_path, [3])
    cert = x509.load_pem_x509_certificate(Path(certs.nodes[3].cert_file).read_bytes())
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(usages) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in names.get_values_for_type(x509.DNSName)
    assert "127.0.0.1" in {str(a) for a in names.get_values_for_type(x509.IPAddress)}


def test_a_second_generation_keeps_the_ca(tmp_path: Path) -> None:
    first = generate_stack_certs(tmp_path, [1])
    ca_pem = Path(first.ca_file).read_bytes()
    second = generate_stack_certs(tmp_path, [1, 2])
    assert Path(second.ca_file).read_bytes() == ca_pem
    # the new node cert chains to the CA clients already trust
    peer = _handshake(
        _server_context(second.nodes[2], first.ca_file),
        _client_context(first.ca_file, first.admin),
    )
    assert _subject_cn(peer) == ADMIN_PRINCIPAL


def test_loaded_ca_issues_certs_that_chain_to_it(tmp_path: Path) -> None:
    ca = CertificateAuthority.create()
    ca.write(tmp_path / "ca.pem", tmp_path / "ca.key")
    loaded = CertificateAuthority.load(tmp_path / "ca.pem", tmp_path / "ca.key")
    ca_file = str(tmp_path / "ca.pem")
    server = loaded.issue_to(tmp_path, "srv", "srv", server=True, client=False)
    client = loaded.issue_to(tmp_path, "cli", "alice", server=False, client=True)
    peer = _handshake(_server_context(server, ca_file), _client_context(ca_file, client))
    assert _subject_cn(peer) == "alice"
