"""The ``[limits]`` table: defaults, bounds and unknown keys."""

from __future__ import annotations

import pytest

from spark_log.config import NodeConfig
from spark_log.errors import ConfigError
from spark_log.limits_config import DEFAULT_MAX_STREAMS, LimitsConfig
from spark_log.stream_spec import MAX_STREAM_NAME_LENGTH
from spark_log.typed_config import from_mapping


def test_limits_table_loads_with_defaults_for_missing_keys():
    config = from_mapping(
        NodeConfig, {"broker_id": 1, "data_dir": "/tmp/x", "limits": {"max_partitions_total": 7}}
    )
    assert config.limits.max_partitions_total == 7
    assert config.limits.max_streams == DEFAULT_MAX_STREAMS


@pytest.mark.parametrize(
    "values",
    [
        {"max_request_bytes": 0},
        {"max_streams": -1},
        {"max_stream_name_length": MAX_STREAM_NAME_LENGTH + 1},
        {"max_partitions_per_stream": 100_000},
    ],
)
def test_out_of_range_limits_are_config_errors(values):
    with pytest.raises(ConfigError, match=r"limits\."):
        LimitsConfig(**values)


def test_unknown_limit_keys_are_errors():
    with pytest.raises(ConfigError, match="max_stream"):
        from_mapping(LimitsConfig, {"max_stream": 3}, "limits")
