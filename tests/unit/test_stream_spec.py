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


def test_compaction_settings_default_off_validate_and_round_trip():
    spec = StreamSpec(name="s", subject="s")
    assert (spec.compaction, spec.compaction_interval_s, spec.delete_retention_ms) == (
        False,
        None,
        86_400_000,
    )
    compacted = StreamSpec(
        name="s", subject="s", compaction=True, compaction_interval_s=60, delete_retention_ms=0
    )
    assert StreamSpec.from_json(compacted.to_json()) == compacted
    with pytest.raises(InvalidRequestError, match="needs compaction"):
        StreamSpec(name="s", subject="s", compaction_interval_s=60)
    with pytest.raises(InvalidRequestError, match="compaction_interval_s"):
        StreamSpec(name="s", subject="s", compaction=True, compaction_interval_s=0)
    with pytest.raises(InvalidRequestError, match="delete_retention_ms"):
        StreamSpec(name="s", subject="s", delete_retention_ms=-1)


def test_a_spec_stored_before_compaction_settings_existed_still_loads():
    stored = StreamSpec(name="s", subject="s").to_json()
    for key in ("compaction", "compaction_interval_s", "delete_retention_ms"):
        del stored[key]
    assert StreamSpec.from_json(stored) == StreamSpec(name="s", subject="s")


@pytest.mark.parametrize(
    "subject", [">", "*", "*.x", "_LIFTLOG.x", "_LIFTLOG", "_INBOX.abc", "$SYS.>", "$JS.API.x"]
)
def test_subjects_that_can_match_internal_traffic_are_refused(subject):
    with pytest.raises(InvalidRequestError, match="internal traffic"):
        StreamSpec(name="s", subject=subject)


@pytest.mark.parametrize("subject", ["orders.*", "a._INBOX", "x.$SYS", "_other.x"])
def test_internal_prefixes_elsewhere_are_allowed(subject):
    assert StreamSpec(name="s", subject=subject).subject == subject
