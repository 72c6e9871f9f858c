"""Option parsing: Kafka's names and spellings, unknown names refused, offsets and durations."""

from __future__ import annotations

import pytest

from datasource.durations import parse_duration_s
from datasource.errors import InvalidOptionError
from datasource.offsets import (
    EARLIEST,
    LATEST,
    from_stream_offset,
    parse_offset_spec,
    to_stream_offset,
)
from datasource.options import batch_options, sink_options, stream_options

BASE = {"servers": "http://a:1, http://b:2/", "stream": "orders"}


def test_batch_defaults_read_everything_committed():
    opts = batch_options(BASE)
    assert opts.servers == "http://a:1,http://b:2"
    assert opts.starting.for_partition(0) == EARLIEST
    assert opts.ending.for_partition(5) == LATEST
    assert opts.fail_on_data_loss and not opts.include_headers and not opts.filter_pushdown
    assert opts.partitions is None and opts.lake_uri is None


def test_names_are_case_insensitive_and_typos_are_refused():
    opts = batch_options({**BASE, "STARTINGOFFSETS": "latest", "includeheaders": "TRUE"})
    assert opts.starting.default == LATEST and opts.include_headers
    with pytest.raises(InvalidOptionError, match="startingoffset"):
        batch_options({**BASE, "startingOffset": "earliest"})
    with pytest.raises(InvalidOptionError, match="maxoffsetspertrigger"):
        batch_options({**BASE, "maxOffsetsPerTrigger": "5"})  # a streaming-only option


def test_required_and_malformed_values():
    with pytest.raises(InvalidOptionError, match="servers"):
        batch_options({"stream": "s"})
    with pytest.raises(InvalidOptionError, match="stream"):
        batch_options({"servers": "http://a:1"})
    with pytest.raises(InvalidOptionError, match="http"):
        batch_options({**BASE, "servers": "a:1"})
    with pytest.raises(InvalidOptionError, match="true or false"):
        batch_options({**BASE, "failOnDataLoss": "yes"})
    with pytest.raises(InvalidOptionError, match="partitions"):
        batch_options({**BASE, "partitions": "0,x"})
    with pytest.raises(InvalidOptionError, match=">= 1"):
        batch_options({**BASE, "maxRecordsPerPartition": "0"})


def test_path_names_the_stream_and_partitions_are_sorted():
    opts = batch_options({"servers": "http://a:1", "path": "events", "partitions": "2, 0,2"})
    assert opts.stream == "events" and opts.partitions == (0, 2)


def test_offset_json_like_kafka():
    spec = parse_offset_spec('{"orders": {"0": 23, "1": -2, "2": -1}}', "orders", "x", LATEST)
    assert [spec.for_partition(p) for p in range(4)] == [23, EARLIEST, LATEST, LATEST]
    for bad in ('{"other": {"0": 1}}', '{"orders": {"a": 1}}', '{"orders": {"0": -3}}', "[1"):
        with pytest.raises(InvalidOptionError):
            parse_offset_spec(bad, "orders", "startingOffsets", EARLIEST)


def test_stream_offsets_round_trip_through_json_keys():
    offset = to_stream_offset("orders", {1: 5, 0: 7})
    assert offset == {"orders": {"0": 7, "1": 5}}
    assert from_stream_offset("orders", offset) == {0: 7, 1: 5}
    with pytest.raises(InvalidOptionError, match="new checkpoint"):
        from_stream_offset("other", offset)


def test_stream_options_and_trigger_limits():
    opts = stream_options(
        {
            **BASE,
            "maxOffsetsPerTrigger": "100",
            "minOffsetsPerTrigger": "10",
            "maxTriggerDelay": "2m",
        }
    )
    assert opts.starting.default == LATEST
    assert (opts.max_offsets_per_trigger, opts.min_offsets_per_trigger) == (100, 10)
    assert opts.max_trigger_delay_s == 120
    assert stream_options(BASE).max_trigger_delay_s == 15 * 60
    with pytest.raises(InvalidOptionError, match="must not exceed"):
        stream_options({**BASE, "maxOffsetsPerTrigger": "5", "minOffsetsPerTrigger": "10"})


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("15m", 900), ("30s", 30), ("500ms", 0.5), ("1h", 3600), ("250", 0.25), ("2 minutes", 120)],
)
def test_durations_take_sparks_spellings(text, seconds):
    assert parse_duration_s(text, "maxTriggerDelay") == pytest.approx(seconds)


def test_bad_duration():
    with pytest.raises(InvalidOptionError, match="maxTriggerDelay"):
        parse_duration_s("soon", "maxTriggerDelay")


def test_sink_options():
    opts = sink_options({**BASE, "idempotent": "true", "ackTimeoutMs": "2500"})
    assert opts.idempotent and opts.ack_timeout_s == 2.5 and opts.idempotency_key is None
    with pytest.raises(InvalidOptionError, match="unknown"):
        sink_options({**BASE, "startingOffsets": "earliest"})
    assert sink_options({**BASE, "checkpointLocation": "/tmp/x"}).stream == "orders"


def test_lake_options_use_the_lake_prefix_and_the_storage_allowlist():
    opts = batch_options(
        {"servers": "http://a:1", "stream": "s", "lake.AWS_ACCESS_KEY_ID": "id", "lakeUri": "x"}
    )
    assert opts.lake_options == (("aws_access_key_id", "id"),)
    with pytest.raises(InvalidOptionError, match=r"unknown key lake\.aws_endpoint;"):
        batch_options({"servers": "http://a:1", "stream": "s", "lake.AWS_ENDPOINT": "x"})
