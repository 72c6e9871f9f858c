"""``[zk_security]`` validation, the digest password file, and the secure ZooKeeper's files."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from liftlog.embedded.certs import generate_stack_certs
from liftlog.embedded.zookeeper import secure_zookeeper
from liftlog.embedded.zookeeper_tls import DEFAULT_ZK_DIGEST_USER, node_zk_security
from spark_log.config import NodeConfig
from spark_log.errors import ConfigError
from spark_log.tls_config import ZkSecurityConfig
from spark_log.typed_config import from_mapping


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"ca_file": "ca.pem", "cert_file": "c.pem"}, "go together"),
        ({"ca_file": "ca.pem", "key_file": "k.pem"}, "go together"),
        ({"cert_file": "c.pem", "key_file": "k.pem"}, "needs zk_security.ca_file"),
        ({"digest_user": "liftlog"}, "go together"),
        ({"digest_password": "pw"}, "go together"),
        ({"digest_user": "lift:log", "digest_password": "pw"}, "':'"),
        (
            {"digest_user": "u", "digest_password": "pw", "digest_password_file": "f"},
            "not both",
        ),
    ],
)
def test_inconsistent_zk_security_is_refused(fields, message):
    with pytest.raises(ConfigError, match=message):
        ZkSecurityConfig(**fields)


def test_the_node_config_reads_zk_security_and_keeps_the_password_out_of_repr():
    config = from_mapping(
        NodeConfig,
        {
            "broker_id": 1,
            "data_dir": "/tmp/node-1",
            "zk_security": {
                "ca_file": "/tls/ca.pem",
                "digest_user": "liftlog",
                "digest_password": "s3cret-value",
            },
        },
    )
    assert config.zk_security.tls and config.zk_security.acl
    assert config.zk_security.password() == "s3cret-value"
    assert "s3cret-value" not in repr(config)
    assert not ZkSecurityConfig().tls and not ZkSecurityConfig().acl
    with pytest.raises(ConfigError, match="unknown key"):
        from_mapping(NodeConfig, {"broker_id": 1, "data_dir": "d", "zk_security": {"x": "y"}})


def test_the_password_file_is_read_and_an_empty_or_missing_one_refused(temp_dir: Path):
    password_file = temp_dir / "pw"
    password_file.write_text("from-a-file\n")
    config = ZkSecurityConfig(digest_user="u", digest_password_file=str(password_file))
    assert config.password() == "from-a-file"
    password_file.write_text("")
    with pytest.raises(ConfigError, match="empty"):
        config.password()
    password_file.unlink()
    with pytest.raises(ConfigError, match="digest_password_file"):
        config.password()


def test_node_zk_security_creates_one_private_password_and_reuses_it(temp_dir: Path):
    first = node_zk_security(temp_dir, "/tls/ca.pem", "/tls/n1.pem", "/tls/n1.key")
    second = node_zk_security(temp_dir, "/tls/ca.pem", "/tls/n2.pem", "/tls/n2.key")
    assert first.digest_user == second.digest_user == DEFAULT_ZK_DIGEST_USER
    assert first.password() == second.password()
    assert len(first.password()) >= 32
    mode = stat.S_IMODE(Path(first.digest_password_file).stat().st_mode)
    assert mode == 0o600


def test_a_secure_zookeeper_opens_only_a_tls_port_with_a_private_pkcs8_keystore(
    temp_dir: Path,
):
    certs = generate_stack_certs(temp_dir / "tls", [1])
    server = secure_zookeeper(
        21999,
        temp_dir / "zk",
        cert_file=certs.zookeeper.cert_file,
        key_file=certs.zookeeper.key_file,
        ca_file=certs.ca_file,
    )
    server._prepare()
    cfg = server.config_path.read_text().splitlines()
    assert "secureClientPort=21999" in cfg
    assert not any(line.startswith("clientPort=") for line in cfg)
    keystore = server.keystore_path.read_text()
    assert keystore.index("BEGIN PRIVATE KEY") < keystore.index("BEGIN CERTIFICATE")
    assert stat.S_IMODE(server.keystore_path.stat().st_mode) == 0o600
    argv = server._argv()
    assert "-Dzookeeper.ssl.clientAuth=need" in argv
    assert "-Dzookeeper.ssl.keyStore.type=PEM" in argv
    assert any(a.endswith("NettyServerCnxnFactory") for a in argv)
