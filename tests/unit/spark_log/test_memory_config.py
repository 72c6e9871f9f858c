"""The ``[memory]`` table and the lake's export bounds: defaults, bounds and unknown keys."""

from __future__ import annotations

import pytest

from spark_log.config import DEFAULT_LAKE_CONCURRENT_EXPORTS, NodeConfig
from spark_log.errors import ConfigError
from spark_log.memory_config import DEFAULT_ARROW_POOL, DEFAULT_RELEASE_INTERVAL_S
from spark_log.typed_config import from_mapping


def _node(**tables: object) -> NodeConfig:
    return from_mapping(NodeConfig, {"broker_id": 1, "data_dir": "/tmp/x", **tables})


def test_defaults_use_the_system_allocator_and_release_nothing_on_a_timer():
    config = _node()
    assert (config.memory.arrow_pool, config.memory.release_interval_s) == (
        DEFAULT_ARROW_POOL,
        DEFAULT_RELEASE_INTERVAL_S,
    )
    assert (DEFAULT_ARROW_POOL, DEFAULT_RELEASE_INTERVAL_S) == ("system", 0)
    assert config.lake.concurrent_exports == DEFAULT_LAKE_CONCURRENT_EXPORTS == 1


def test_memory_table_loads():
    config = _node(memory={"arrow_pool": "jemalloc", "release_interval_s": 0})
    assert (config.memory.arrow_pool, config.memory.release_interval_s) == ("jemalloc", 0)


@pytest.mark.parametrize(
    ("tables", "named"),
    [
        ({"memory": {"arrow_pool": "tcmalloc"}}, "memory.arrow_pool"),
        ({"memory": {"release_interval_s": -1}}, "memory.release_interval_s"),
        ({"memory": {"release_interval_s": 0.01}}, "memory.release_interval_s"),
        ({"memory": {"release_interval_s": float("inf")}}, "memory.release_interval_s"),
        ({"memory": {"trim": True}}, "memory.trim"),
        ({"lake": {"concurrent_exports": 0}}, "concurrent_exports"),
    ],
)
def test_bad_values_and_unknown_keys_are_refused_by_name(tables: dict[str, object], named: str):
    with pytest.raises(ConfigError, match=named):
        _node(**tables)
