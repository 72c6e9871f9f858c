"""A throwaway certificate authority and the certificates of a secured standalone stack.

``liftlog standalone --secure`` needs TLS material that nobody has to provide: a CA created
for the stack, a certificate per node (presented as server certificate on its REST port and
as client certificate when it calls another node), one for the NATS servers, one for the
ZooKeeper servers and a client certificate for the ``admin`` principal. A certificate's
subject CN names its principal (``liftlog-node-1``, ``admin``). Keys are EC P-256, written
as unencrypted PEM readable by their owner only: the directory is the secret.

Not for production: a real deployment brings certificates from its own CA.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from spark_log.errors import ConfigError

CA_COMMON_NAME = "Liftlog standalone CA"
NODE_COMMON_NAME_PREFIX = "liftlog-node-"
NATS_COMMON_NAME = "liftlog-nats"
ZOOKEEPER_COMMON_NAME = "liftlog-zookeeper"
ADMIN_PRINCIPAL = "admin"
ORGANIZATION = "Liftlog"
# long enough for a development stack to outlive a laptop's uptime, short enough to expire
DEFAULT_CERT_VALIDITY_DAYS = 825
# clocks of processes on one machine agree, but a just-created cert must not be "not yet valid"
NOT_BEFORE_SKEW = datetime.timedelta(minutes=5)
KEY_FILE_MODE = 0o600
CERT_FILE_MODE = 0o644
LOCAL_DNS_NAMES = ("localhost",)
LOCAL_IP_ADDRESSES = ("127.0.0.1", "::1")


@dataclass(frozen=True)
class CertPaths:
    """A certificate and its private key, as PEM files."""

    cert_file: str
    key_file: str


@dataclass(frozen=True)
class StackCerts:
    """Every file of a secured stack's TLS directory."""

    ca_file: str
    ca_key_file: str
    nodes: dict[int, CertPaths]
    nats: CertPaths
    zookeeper: CertPaths
    admin: CertPaths


def node_common_name(broker_id: int) -> str:
    """The subject CN (and so the mTLS principal) of node ``broker_id``'s certificate."""
    return f"{NODE_COMMON_NAME_PREFIX}{broker_id}"


class CertificateAuthority:
    """A self-signed CA that issues leaf certificates."""

    def __init__(self, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate) -> None:
        self.key = key
        self.cert = cert

    @classmethod
    def create(
        cls, common_name: str = CA_COMMON_NAME, days: int = DEFAULT_CERT_VALIDITY_DAYS
    ) -> CertificateAuthority:
        key = ec.generate_private_key(ec.SECP256R1())
        name = _name(common_name)
        now = _now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - NOT_BEFORE_SKEW)
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_ca_key_usage(), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
            .sign(key, hashes.SHA256())
        )
        return cls(key, cert)

    @classmethod
    def load(cls, cert_file: str | Path, key_file: str | Path) -> CertificateAuthority:
        """A CA written earlier by ``write`` (a restarted stack keeps its certificates)."""
        cert = x509.load_pem_x509_certificate(Path(cert_file).read_bytes())
        key = serialization.load_pem_private_key(Path(key_file).read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ConfigError(f"{key_file} is not an EC private key")
        return cls(key, cert)

    def write(self, cert_file: str | Path, key_file: str | Path) -> CertPaths:
        return _write_pair(self.cert, self.key, Path(cert_file), Path(key_file))

    def issue(
        self,
        common_name: str,
        *,
        server: bool,
        client: bool,
        days: int = DEFAULT_CERT_VALIDITY_DAYS,
    ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        """A leaf certificate for ``common_name``; a server certificate names localhost and
        the loopback addresses (the stack listens there), a client certificate's CN is its
        principal."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - NOT_BEFORE_SKEW)
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_leaf_key_usage(), critical=True)
            .add_extension(x509.ExtendedKeyUsage(_usages(server, client)), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), False
            )
        )
        if server:
            builder = builder.add_extension(_local_names(), critical=False)
        return builder.sign(self.key, hashes.SHA256()), key

    def issue_to(
        self, directory: Path, stem: str, common_name: str, *, server: bool, client: bool
    ) -> CertPaths:
        """Issue a certificate and write it as ``<stem>.pem`` and ``<stem>.key``."""
        cert, key = self.issue(common_name, server=server, client=client)
        return _write_pair(cert, key, directory / f"{stem}.pem", directory / f"{stem}.key")


def generate_stack_certs(directory: str | Path, broker_ids: list[int]) -> StackCerts:
    """The CA and every certificate of a secured stack, written into ``directory``.

    An existing CA there is reused (a restart keeps what clients were told to trust); leaf
    certificates are issued again each time, so a new node or an expired leaf is no problem.
    """
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o700)
    ca_file, ca_key_file = root / "ca.pem", root / "ca.key"
    if ca_file.exists() and ca_key_file.exists():
        ca = CertificateAuthority.load(ca_file, ca_key_file)
    else:
        ca = CertificateAuthority.create()
        ca.write(ca_file, ca_key_file)
    nodes = {
        i: ca.issue_to(root, f"node-{i}", node_common_name(i), server=True, client=True)
        for i in broker_ids
    }
    return StackCerts(
        ca_file=str(ca_file),
        ca_key_file=str(ca_key_file),
        nodes=nodes,
        nats=ca.issue_to(root, "nats", NATS_COMMON_NAME, server=True, client=True),
        zookeeper=ca.issue_to(root, "zookeeper", ZOOKEEPER_COMMON_NAME, server=True, client=True),
        admin=ca.issue_to(root, ADMIN_PRINCIPAL, ADMIN_PRINCIPAL, server=False, client=True),
    )


def common_name(cert_file: str | Path) -> str:
    """The subject CN of a PEM certificate (what a node takes as its principal)."""
    cert = x509.load_pem_x509_certificate(Path(cert_file).read_bytes())
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else ""


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _usages(server: bool, client: bool) -> list[x509.ObjectIdentifier]:
    usages = []
    if server:
        usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
    if client:
        usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
    if not usages:
        raise ConfigError("a leaf certificate is for a server, a client or both")
    return usages


def _local_names() -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in LOCAL_DNS_NAMES]
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in LOCAL_IP_ADDRESSES]
    return x509.SubjectAlternativeName(names)


def _ca_key_usage() -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=True,
        crl_sign=True,
        encipher_only=False,
        decipher_only=False,
    )


def _leaf_key_usage() -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=True,
        key_cert_sign=False,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )


def _write_pair(
    cert: x509.Certificate, key: ec.EllipticCurvePrivateKey, cert_file: Path, key_file: Path
) -> CertPaths:
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    _write_private(key_file, key_pem)
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    cert_file.chmod(CERT_FILE_MODE)
    return CertPaths(cert_file=str(cert_file), key_file=str(key_file))


def _write_private(path: Path, data: bytes) -> None:
    """Create the file with mode 600 from the start: no moment where others may read it."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, KEY_FILE_MODE)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
