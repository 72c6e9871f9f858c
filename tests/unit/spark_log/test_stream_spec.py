"""Stream specs: validation, subject convention, min ISR default."""

from __future__ import annotations

import dataclasses

import pytest

from spark_log.errors import ImmutableFieldError, InvalidRequestError
from spark_log.stream_spec import StreamSpec, altered_spec


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


# ----------------------------------------------------------------------------- alter


def test_altered_spec_changes_only_the_fields_given():
    spec = StreamSpec(name="s", subject="s.in", replication_factor=3, retention_ms=1000)
    altered = altered_spec(
        spec, {"retention_ms": None, "retention_messages": 5, "ack_policy": "leader"}
    )
    assert (altered.retention_ms, altered.retention_messages) == (None, 5)
    assert altered.ack_policy == "leader"
    assert (
        dataclasses.replace(altered, retention_ms=1000, retention_messages=None, ack_policy="all")
        == spec
    )


def test_altered_spec_accepts_an_immutable_field_with_its_current_value():
    spec = StreamSpec(name="s", subject="s.in", partitions=2)
    assert altered_spec(spec, {"name": "s", "subject": "s.in", "partitions": 2}) == spec


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "other"),
        ("subject", "other.in"),
        ("replication_factor", 1),
        ("load_balance", True),
        ("encryption", True),
    ],
)
def test_altered_spec_refuses_immutable_fields_naming_them(field, value):
    spec = StreamSpec(name="s", subject="s.in", partitions=2, replication_factor=3)
    with pytest.raises(ImmutableFieldError, match=f'"{field}" cannot be altered'):
        altered_spec(spec, {field: value})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"min_isr": 4}, "min_isr"),
        ({"min_isr": 0}, "min_isr"),
        ({"retention_ms": 0}, "retention_ms"),
        ({"max_record_bytes": -1}, "max_record_bytes"),
        ({"ack_policy": "some"}, "ack_policy"),
        ({"compaction_interval_s": 5.0}, "needs compaction"),
        ({"retention_bytes": "10"}, "retention_bytes"),
        ({"nonsense": 1}, "unknown stream field"),
    ],
)
def test_altered_spec_validates_as_create_does(changes, message):
    spec = StreamSpec(name="s", subject="s.in", replication_factor=3)
    with pytest.raises(InvalidRequestError, match=message):
        altered_spec(spec, changes)


def test_timestamp_type_is_alterable_and_checked():
    spec = StreamSpec(name="s", subject="s.in")
    assert altered_spec(spec, {"timestamp_type": "create"}).timestamp_type == "create"
    with pytest.raises(InvalidRequestError, match="timestamp_type"):
        altered_spec(spec, {"timestamp_type": "producer"})


def test_partitions_only_grow():
    spec = StreamSpec(name="s", subject="s.in", partitions=2)
    assert altered_spec(spec, {"partitions": 5}).partitions == 5
    with pytest.raises(ImmutableFieldError, match='"partitions" can only grow'):
        altered_spec(spec, {"partitions": 1})
    with pytest.raises(InvalidRequestError, match="partitions"):
        altered_spec(spec, {"partitions": 100_000})
