"""What ``standalone --secure`` writes and hands its nodes, without starting anything."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from liftlog.embedded.data_dir_lock import DataDirInUseError, DataDirLock
from liftlog.embedded.standalone import Standalone
from liftlog.embedded.standalone_secure import SecureStack
from spark_log.client.credentials import load_credentials_file
from spark_log.config import NodeConfig, dump_node_config, load_node_config
from spark_log.errors import ConfigError


def test_credentials_file_holds_the_admin_token_and_the_ca(tmp_path: Path) -> None:
    secure = SecureStack.prepare(tmp_path, [1, 2])
    credentials = load_credentials_file(str(secure.credentials_file))
    assert credentials.token == secure.admin_token
    assert credentials.ca_file == secure.certs.ca_file
    assert stat.S_IMODE(secure.credentials_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(secure.admin_token_file.stat().st_mode) == 0o600
    assert secure.admin_token not in repr(secure)


def test_a_second_start_keeps_the_token_and_the_ca(tmp_path: Path) -> None:
    first = SecureStack.prepare(tmp_path, [1])
    ca = Path(first.certs.ca_file).read_bytes()
    second = SecureStack.prepare(tmp_path, [1])
    assert second.admin_token == first.admin_token
    assert Path(second.certs.ca_file).read_bytes() == ca


def test_node_settings_give_https_urls_and_auth(tmp_path: Path) -> None:
    secure = SecureStack.prepare(tmp_path, [1, 2])
    config = NodeConfig(broker_id=2, data_dir=str(tmp_path / "n2"), **secure.node_settings(2))
    assert config.api_url.startswith("https://")
    assert config.advertised_api_url.startswith("https://")
    assert config.api_tls.ca_file == secure.certs.ca_file
    assert config.auth.enabled
    assert {"admin", "liftlog-node-1", "liftlog-node-2"} <= set(config.auth.super_users)
    # the node config file round-trips (the child process reads it back)
    path = tmp_path / "node-2.toml"
    path.write_text(dump_node_config(config))
    assert load_node_config(path) == config


def test_secure_stack_nodes_are_configured_secured(tmp_path: Path) -> None:
    stack = Standalone(nodes=1, data_dir=tmp_path, secure=True)
    config = stack.node(1).config
    assert stack.servers.startswith("https://")
    assert config.nats.user and config.nats.tls_ca_file
    assert config.zk_security.tls and config.zk_security.acl
    assert config.zk_security.cert_file == stack.secure.certs.nodes[1].cert_file
    assert dict(stack.credential_lines())["admin token"] == stack.secure.admin_token


def test_plain_stack_prints_no_credentials(tmp_path: Path) -> None:
    stack = Standalone(nodes=1, data_dir=tmp_path)
    assert stack.credential_lines() == []
    assert not (tmp_path / "tls").exists()
    assert stack.servers.startswith("http://")


def test_secure_ha_secures_every_server(tmp_path: Path) -> None:
    stack = Standalone(nodes=3, data_dir=tmp_path, secure=True, ha=True)
    assert stack.ha is not None
    assert all(s.security is not None and s.security.tls for s in stack.ha.nats.servers)
    assert all(s.tls is not None for s in stack.ha.zookeeper.servers)
    for i in (1, 2, 3):
        config = stack.node(i).config
        assert config.api_url.startswith("https://")
        assert config.zk_security.tls and config.nats.tls_ca_file
        assert len(config.zk_connect.split(",")) == 3


def test_a_held_data_dir_is_refused_before_any_file_is_rewritten(tmp_path: Path) -> None:
    running = DataDirLock(tmp_path)
    running.acquire()
    try:
        with pytest.raises(DataDirInUseError):
            Standalone(nodes=1, data_dir=tmp_path, secure=True)
        assert not (tmp_path / "tls").exists()
    finally:
        running.release()


def test_an_http_advertised_url_is_refused_with_tls(tmp_path: Path) -> None:
    secure = SecureStack.prepare(tmp_path, [1])
    with pytest.raises(ConfigError, match="https://"):
        NodeConfig(
            broker_id=1,
            data_dir=str(tmp_path / "n1"),
            api_advertised_url="http://node-1.example.com:9644",
            **secure.node_settings(1),
        )
