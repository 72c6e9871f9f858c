"""The ``[groups]`` node config section: typed, bounded, unknown keys refused."""

from __future__ import annotations

import pytest

from spark_log.config import NodeConfig
from spark_log.errors import ConfigError
from spark_log.groups_config import GroupsConfig
from spark_log.typed_config import from_mapping


def _node(groups: dict[str, object]) -> NodeConfig:
    return from_mapping(NodeConfig, {"broker_id": 1, "data_dir": "/tmp/x", "groups": groups})


def test_groups_section_loads_and_defaults() -> None:
    assert _node({}).groups == GroupsConfig()
    loaded = _node({"min_session_timeout_ms": 500, "heartbeat_interval_ms": 100}).groups
    assert (loaded.min_session_timeout_ms, loaded.heartbeat_interval_ms) == (500, 100)


@pytest.mark.parametrize(
    "groups",
    [
        {"session_timeout": 1},
        {"min_session_timeout_ms": 0},
        {"min_session_timeout_ms": 5000, "max_session_timeout_ms": 4000},
        {"session_timeout_ms": 1000},
        {"heartbeat_interval_ms": 0},
    ],
)
def test_bad_groups_sections_are_refused(groups: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        _node(groups)
