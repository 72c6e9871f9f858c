"""``[lake.storage_options]``: an allowlisted, string-valued TOML table, round-tripped through
the node config file, kept out of reprs, and turned into the one LakeStorage every lake access
uses."""

from __future__ import annotations

import pytest

from spark_log.config import LakeConfig, NodeConfig, dump_node_config, load_node_config
from spark_log.errors import ConfigError
from spark_log.lake.storage import lake_storage

OPTIONS = {
    "AWS_ENDPOINT_URL": "http://127.0.0.1:8333",
    "AWS_ACCESS_KEY_ID": "id",
    "AWS_SECRET_ACCESS_KEY": "very-secret",
    "AWS_ALLOW_HTTP": "true",
}


def _write(tmp_path, lake_section: str):
    path = tmp_path / "node.toml"
    path.write_text(f'broker_id = 1\ndata_dir = "{tmp_path}"\n{lake_section}')
    return path


def test_storage_options_round_trip_through_the_node_config_file(tmp_path):
    config = NodeConfig(
        broker_id=1,
        data_dir=str(tmp_path),
        lake=LakeConfig(uri="s3://b/l", storage_options=OPTIONS),
    )
    path = tmp_path / "node.toml"
    path.write_text(dump_node_config(config))
    assert "[lake.storage_options]" in path.read_text()
    loaded = load_node_config(path)
    assert loaded.lake.storage_options == {k.lower(): v for k, v in OPTIONS.items()}
    assert loaded == config


def test_a_misspelt_option_is_an_error_naming_it(tmp_path):
    path = _write(tmp_path, '[lake.storage_options]\nAWS_ENDPOINT = "http://x"\n')
    with pytest.raises(ConfigError, match=r"unknown key lake\.storage_options\.AWS_ENDPOINT;"):
        load_node_config(path)


def test_values_must_be_strings(tmp_path):
    path = _write(tmp_path, "[lake.storage_options]\nAWS_ALLOW_HTTP = true\n")
    with pytest.raises(ConfigError, match="AWS_ALLOW_HTTP"):
        load_node_config(path)


def test_secrets_stay_out_of_reprs():
    lake = LakeConfig(uri="s3://b/l", storage_options=OPTIONS)
    assert "very-secret" not in repr(lake)
    assert "very-secret" not in repr(lake_storage(lake))


def test_one_function_turns_the_config_into_the_lakes_storage():
    storage = lake_storage(LakeConfig(uri="s3://b/l", storage_options=OPTIONS))
    assert storage.uri == "s3://b/l" and storage.is_s3
    assert storage.delta_options()["aws_secret_access_key"] == "very-secret"
    assert storage.delta_options()["conditional_put"] == "etag"


def test_the_environment_fills_what_the_options_lack(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:8333")
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    storage = lake_storage(LakeConfig(uri="s3://b/l"))
    filesystem, path = storage.filesystem()
    assert path == "b/l" and filesystem.type_name == "s3"
