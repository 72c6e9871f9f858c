"""Typed config: unknown keys and wrong types are errors, never ignored."""

from __future__ import annotations

import pytest

from spark_log.config import LogConfig, NodeConfig, dump_node_config, load_node_config
from spark_log.errors import ConfigError


def test_round_trip_through_toml(tmp_path):
    config = NodeConfig(broker_id=3, data_dir="/d", log=LogConfig(fsync="interval"))
    path = tmp_path / "node.toml"
    path.write_text(dump_node_config(config))
    assert load_node_config(path) == config


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('broker_id = 1\ndata_dir = "/d"\nzk_sesion_timeout_s = 3\n', "zk_sesion_timeout_s"),
        ('broker_id = 1\ndata_dir = "/d"\n[log]\nfsnyc = "never"\n', "log.fsnyc"),
        ('broker_id = "one"\ndata_dir = "/d"\n', "broker_id"),
        ('broker_id = 1\ndata_dir = "/d"\n[log]\nfsync = "sometimes"\n', "fsync"),
        ('broker_id = 1\ndata_dir = "/d"\napi_port = 70000\n', "api_port"),
        ('broker_id = true\ndata_dir = "/d"\n', "broker_id"),
        ('data_dir = "/d"\n', "broker_id"),
        ("broker_id = [\n", "cannot read"),
    ],
)
def test_bad_configs_are_rejected_with_the_key_named(tmp_path, text, needle):
    path = tmp_path / "node.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=needle):
        load_node_config(path)


def test_ints_are_accepted_for_floats(tmp_path):
    path = tmp_path / "node.toml"
    path.write_text('broker_id = 1\ndata_dir = "/d"\nzk_session_timeout_s = 3\n')
    assert load_node_config(path).zk_session_timeout_s == 3.0


def test_log_config_bounds():
    with pytest.raises(ConfigError):
        LogConfig(segment_bytes=10)
    with pytest.raises(ConfigError):
        LogConfig(fsync_interval_ms=0)


def test_the_lake_defaults_to_the_data_dir_and_round_trips(tmp_path):
    config = NodeConfig(broker_id=1, data_dir=str(tmp_path / "data"))
    assert config.lake.enabled
    assert config.lake.uri == str(tmp_path / "data" / "lake")
    path = tmp_path / "node.toml"
    path.write_text(dump_node_config(config))
    assert "[lake]" in path.read_text()
    assert load_node_config(path) == config


def test_a_lake_section_is_typed_and_checked(tmp_path):
    path = tmp_path / "node.toml"
    path.write_text(
        'broker_id = 1\ndata_dir = "/d"\n[lake]\nuri = "s3://bucket/lake"\nenabled = false\n'
        "export_interval_s = 2\n"
    )
    lake = load_node_config(path).lake
    assert (lake.uri, lake.enabled, lake.export_interval_s) == ("s3://bucket/lake", False, 2.0)
    path.write_text('broker_id = 1\ndata_dir = "/d"\n[lake]\nexport_intervall_s = 2\n')
    with pytest.raises(ConfigError, match=r"lake\.export_intervall_s"):
        load_node_config(path)
    path.write_text('broker_id = 1\ndata_dir = "/d"\n[lake]\nexport_min_bytes = 0\n')
    with pytest.raises(ConfigError, match="export_min_bytes"):
        load_node_config(path)


def test_a_relative_lake_path_becomes_absolute():
    config = NodeConfig(broker_id=1, data_dir="rel/data")
    assert config.lake.uri.startswith("/") and config.lake.uri.endswith("rel/data/lake")
