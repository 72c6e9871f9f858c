"""Stream specs: validation, subject convention, min ISR default."""

from __future__ import annotations

import pytest

from spark_log.errors import InvalidRequestError
from spark_log.stream_spec import StreamSpec


def test_partition_subjects_follow_liftbridge_convention():
    spec = StreamSpec(name="orders", subject="orders.*", partitions=3)
    assert [spec.partition_subject(p) for p in range(3)] == ["orders.*", "orders.*.1", "orders.*.2"]
    assert spec.queue_group is None


def test_load_balanced_partitions_share_the_subject():
    spec = StreamSpec(name="o", subject="orders.>", partitions=3, load_balance=True)
    assert {spec.partition_subject(p) for p in range(3)} == {"orders.>"}
    assert spec.queue_group == "liftlog.o"


@pytest.mark.parametrize(("rf", "expected"), [(1, 1), (2, 2), (3, 2), (5, 3)])
def test_default_min_isr_is_a_majority(rf, expected):
    assert StreamSpec(name="s", subject="s", replication_factor=rf).effective_min_isr == expected


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": "", "subject": "a"},
        {"name": "has space", "subject": "a"},
        {"name": "ok", "subject": ""},
        {"name": "ok", "subject": "a..b"},
        {"name": "ok", "subject": "a.>.b"},
        {"name": "ok", "subject": "a b"},
        {"name": "ok", "subject": "a", "partitions": 0},
        {"name": "ok", "subject": "a", "replication_factor": 0},
        {"name": "ok", "subject": "a", "min_isr": 2},
        {"name": "ok", "subject": "a", "retention_ms": 0},
        {"name": "ok", "subject": "a.>", "partitions": 2},
    ],
)
def test_invalid_specs_are_refused(kwargs):
    with pytest.raises(InvalidRequestError):
        StreamSpec(**kwargs)


def test_json_round_trip_and_unknown_keys():
    spec = StreamSpec(name="s", subject="a.*", partitions=2, retention_bytes=10)
    assert StreamSpec.from_json(spec.to_json()) == spec
    with pytest.raises(InvalidRequestError, match="bogus"):
        StreamSpec.from_json({**spec.to_json(), "bogus": 1})
