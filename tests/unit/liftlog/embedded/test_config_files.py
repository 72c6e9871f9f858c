"""Config files: every example loads with the real loader; standalone settings refuse
per-node identity keys and unknown keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from liftlog.embedded.node_settings import load_node_settings
from spark_log.config import load_node_config
from spark_log.errors import ConfigError
from tests.support.paths import REPO

EXAMPLES = REPO / "docs" / "examples"


def test_the_node_example_loads_with_the_node_loader():
    config = load_node_config(EXAMPLES / "node.toml")
    assert config.broker_id == 1 and config.log.fsync == "always"


def test_the_standalone_example_loads_with_the_standalone_loader():
    settings = load_node_settings(EXAMPLES / "standalone.toml")
    assert settings["log"]["fsync"] == "interval"


def test_every_example_toml_is_covered():
    assert sorted(p.name for p in EXAMPLES.glob("*.toml")) == ["node.toml", "standalone.toml"]


def test_identity_keys_are_refused_with_the_flag_to_use(tmp_path: Path):
    path = tmp_path / "s.toml"
    path.write_text('api_port = 9000\ndata_dir = "x"\n[log]\nfsync = "never"\n')
    with pytest.raises(ConfigError) as raised:
        load_node_settings(path)
    assert "api_port, data_dir cannot be set in a standalone config" in raised.value.message
    assert "--api-port" in raised.value.message and "--data-dir" in raised.value.message


def test_unknown_keys_are_refused_naming_the_file_and_key(tmp_path: Path):
    path = tmp_path / "s.toml"
    path.write_text('[log]\nfsink = "never"\n')
    with pytest.raises(ConfigError, match=r"s\.toml: unknown key\(s\) log\.fsink"):
        load_node_settings(path)


def test_one_toml_reader_with_one_error_wrapping(tmp_path: Path):
    import liftlog.embedded.node_settings as node_settings
    from spark_log.toml_file import read_toml

    assert node_settings.read_toml is read_toml
    good = tmp_path / "good.toml"
    good.write_text('[log]\nfsync = "never"\n')
    assert read_toml(good) == {"log": {"fsync": "never"}}
    bad = tmp_path / "bad.toml"
    bad.write_text("[log\n")
    for path in (bad, tmp_path / "missing.toml"):
        with pytest.raises(ConfigError, match=f"cannot read config {path}"):
            read_toml(path)
        with pytest.raises(ConfigError, match=f"cannot read config {path}"):
            load_node_settings(path)
