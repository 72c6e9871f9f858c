"""A CreateStreamRequest becomes a stream spec field by field, or is refused naming the field
it cannot honour."""

from __future__ import annotations

from typing import Any

import pytest

from ingest.liftbridge.stream_request import in_request_words, spec_from_request
from spark_log.errors import InvalidRequestError
from spark_log.liftbridge import api_pb2 as pb
from spark_log.stream_spec import StreamSpec


def request(**fields: Any) -> pb.CreateStreamRequest:
    wrapped = {
        name: value
        for name, value in fields.items()
        if name not in ("name", "subject", "group", "replicationFactor", "partitions")
    }
    plain = {name: value for name, value in fields.items() if name not in wrapped}
    plain.setdefault("name", "orders")
    plain.setdefault("subject", "orders.in")
    built = pb.CreateStreamRequest(**plain)
    for name, value in wrapped.items():
        getattr(built, name).value = value
    return built


def refusal(req: pb.CreateStreamRequest, live_brokers: int = 3) -> str:
    with pytest.raises(InvalidRequestError) as raised:
        spec_from_request(req, live_brokers)
    return raised.value.message


def test_a_bare_request_takes_liftbridge_defaults():
    spec = spec_from_request(request(), live_brokers=3)
    assert spec == StreamSpec(name="orders", subject="orders.in", partitions=1)
    assert spec.replication_factor == 1 and spec.retention_ms is None


def test_every_field_reaches_the_spec():
    spec = spec_from_request(
        request(
            replicationFactor=3,
            partitions=4,
            retentionMaxBytes=1000,
            retentionMaxMessages=20,
            retentionMaxAge=60_000,
            compactEnabled=True,
            autoPauseTime=5_000,
            autoPauseDisableIfSubscribers=True,
            minIsr=2,
            optimisticConcurrencyControl=True,
            encryption=True,
        ),
        live_brokers=3,
    )
    assert (spec.replication_factor, spec.partitions, spec.min_isr) == (3, 4, 2)
    assert (spec.retention_bytes, spec.retention_messages, spec.retention_ms) == (1000, 20, 60_000)
    assert spec.compaction and spec.encryption and spec.optimistic_concurrency_control
    assert spec.auto_pause_ms == 5_000 and spec.auto_pause_disable_if_subscribers


def test_zero_means_liftbridges_default():
    spec = spec_from_request(
        request(
            replicationFactor=0,
            partitions=0,
            retentionMaxBytes=0,
            retentionMaxMessages=0,
            retentionMaxAge=0,
            autoPauseTime=0,
            minIsr=0,
            compactEnabled=False,
            cleanerInterval=0,
            segmentMaxBytes=0,
            compactMaxGoroutines=0,
        ),
        live_brokers=3,
    )
    assert (spec.replication_factor, spec.partitions, spec.min_isr) == (1, 1, 1)
    assert spec.retention_bytes is spec.retention_messages is spec.retention_ms is None
    assert spec.auto_pause_ms is None and not spec.compaction


def test_replication_factor_minus_one_is_every_live_broker():
    assert spec_from_request(request(replicationFactor=-1), live_brokers=3).replication_factor == 3


@pytest.mark.parametrize(
    "field", ["cleanerInterval", "segmentMaxBytes", "segmentMaxAge", "compactMaxGoroutines"]
)
def test_a_setting_liftlog_has_no_per_stream_is_refused_by_name(field: str):
    message = refusal(request(**{field: 7}))
    assert message.startswith(f"{field} is not a per-stream setting")


def test_segment_max_age_zero_is_refused_too():
    """0 disables Liftbridge's time-based roll: not its default, so not ignored."""
    assert "segmentMaxAge" in refusal(request(segmentMaxAge=0))


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"name": ""}, "name"),
        ({"subject": ""}, "subject"),
        ({"subject": "a..b"}, "subject"),
        ({"name": "bad name"}, "stream name"),
        ({"name": "__cursors"}, "reserved"),
        ({"name": "__activity"}, "reserved"),
        ({"partitions": -2}, "partitions"),
        ({"replicationFactor": -2}, "replicationFactor"),
        ({"retentionMaxAge": -1}, "retentionMaxAge"),
        ({"retentionMaxBytes": -1}, "retentionMaxBytes"),
        ({"retentionMaxMessages": -1}, "retentionMaxMessages"),
        ({"autoPauseTime": -1}, "autoPauseTime"),
        ({"minIsr": -1}, "minIsr"),
        ({"replicationFactor": 2, "minIsr": 3}, "minIsr must be between 1 and replicationFactor"),
        ({"partitions": 5000}, "partitions"),
    ],
)
def test_bad_values_are_refused_naming_the_request_field(fields: dict[str, Any], named: str):
    assert named in refusal(request(**fields))


def test_group_is_load_balancing_on_the_streams_own_queue_group():
    spec = spec_from_request(request(group="liftlog.orders", partitions=2), live_brokers=1)
    assert spec.load_balance and spec.queue_group == "liftlog.orders"


def test_another_group_name_cannot_be_honoured():
    message = refusal(request(group="workers"))
    assert message.startswith("group 'workers' cannot be honoured")
    assert "'liftlog.orders'" in message


def test_spec_messages_speak_the_requests_words():
    assert in_request_words('"retention_ms" must be > 0') == "retentionMaxAge must be > 0"
    assert in_request_words('"no_such" stays') == '"no_such" stays'
