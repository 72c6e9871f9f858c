"""NodeConfig's HA keys: a NATS server list, NATS credentials, advertised URLs."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from ingest.nats_connect import nats_connect_options
from spark_log.config import (
    DEFAULT_NATS_URL,
    NatsCredentials,
    NodeConfig,
    dump_node_config,
)
from spark_log.errors import ConfigError
from spark_log.typed_config import from_mapping

SERVERS = ["nats://10.0.0.11:4222", "nats://10.0.0.12:4222", "nats://10.0.0.13:4222"]


def _config(**settings: Any) -> NodeConfig:
    return from_mapping(NodeConfig, {"broker_id": 1, "data_dir": "/tmp/node", **settings})


def test_defaults_keep_the_single_local_server_and_the_bind_address() -> None:
    config = _config()
    assert config.nats_server_urls == (DEFAULT_NATS_URL,)
    assert config.advertised_api_url == config.api_url == "http://127.0.0.1:9644"
    assert config.advertised_nats_url == DEFAULT_NATS_URL


def test_the_historical_nats_url_still_names_the_one_server() -> None:
    config = _config(nats_url="nats://nats:4222")
    assert config.nats_server_urls == ("nats://nats:4222",)
    assert config.advertised_nats_url == "nats://nats:4222"


def test_a_server_list_keeps_its_order_and_the_first_is_advertised() -> None:
    config = _config(nats_servers=SERVERS)
    assert config.nats_server_urls == tuple(SERVERS)
    assert config.advertised_nats_url == SERVERS[0]
    assert nats_connect_options(config)["servers"] == SERVERS
    assert nats_connect_options(config)["dont_randomize"] is True


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"nats_url": SERVERS[0], "nats_servers": SERVERS[1:]}, "not both"),
        ({"nats_servers": [SERVERS[0], SERVERS[0]]}, "twice"),
        ({"nats_servers": ["http://nats:4222"]}, "nats_servers"),
        ({"api_advertised_url": "liftlog-1:9644"}, "api_advertised_url"),
        ({"nats_advertised_url": "liftlog-1:4222"}, "nats_advertised_url"),
        ({"nats": {"user": "liftlog"}}, "together"),
        ({"nats": {"token": "t", "creds_file": "/etc/n.creds"}}, "one way"),
        ({"nats": {"tokn": "t"}}, "unknown key"),
    ],
)
def test_bad_settings_are_refused_at_load(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _config(**settings)


def test_advertised_urls_are_what_the_node_publishes() -> None:
    config = _config(
        api_host="0.0.0.0",
        api_advertised_url="http://liftlog-1.example.com:9644/",
        nats_advertised_url="nats://liftlog-1.example.com:4222",
    )
    assert config.api_url == "http://0.0.0.0:9644"
    assert config.advertised_api_url == "http://liftlog-1.example.com:9644"
    assert config.advertised_api_host == "liftlog-1.example.com"
    assert config.advertised_nats_url == "nats://liftlog-1.example.com:4222"


@pytest.mark.parametrize(
    ("credentials", "options"),
    [
        (NatsCredentials(), {}),
        (NatsCredentials(user="u", password="p"), {"user": "u", "password": "p"}),
        (NatsCredentials(token="t"), {"token": "t"}),
        (NatsCredentials(creds_file="/n.creds"), {"user_credentials": "/n.creds"}),
    ],
)
def test_credentials_become_connect_options(
    credentials: NatsCredentials, options: dict[str, str]
) -> None:
    connect = nats_connect_options(_config(nats={**vars(credentials)}))
    assert {
        k: connect[k] for k in ("user", "password", "token", "user_credentials") if k in connect
    } == options


def test_secrets_stay_out_of_repr() -> None:
    text = repr(_config(nats={"user": "liftlog", "password": "hunter2"}))
    assert "hunter2" not in text and "liftlog" in text


def test_the_launcher_dump_round_trips_lists_and_credentials() -> None:
    config = _config(
        nats_servers=SERVERS,
        nats={"user": "liftlog", "password": "p"},
        api_advertised_url="http://h:1",
    )
    assert from_mapping(NodeConfig, tomllib.loads(dump_node_config(config))) == config
