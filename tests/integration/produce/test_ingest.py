"""NATS ingest on a real node: recording, keys, headers, acks, dedup, expected offsets, limits."""

from __future__ import annotations

import json
import re

import nats
import pytest

from spark_log.client import Client
from spark_log.errors import ExpectedOffsetMismatchError, RecordTooLargeError
from tests.integration.conftest import create_stream, fetch, nats_client_options, node_client
from tests.support.waiting import wait_for


async def _request(
    nc: nats.NATS, subject: str, data: bytes, headers: dict[str, str] | None = None
) -> dict:
    msg = await nc.request(subject, data, timeout=10, headers=headers)
    return json.loads(msg.data)


async def test_plain_publishes_are_recorded_with_dense_offsets(api, nc, stream_name):
    create_stream(api, stream_name)
    for i in range(20):
        await nc.publish(f"{stream_name}.in", f"m{i}".encode(), headers={"trace": str(i)})
    await nc.flush()
    wait_for(lambda: fetch(api, stream_name)["high_watermark"] == 20, 10, message="20 records")
    records = fetch(api, stream_name, offset=0)["records"]
    assert [r["offset"] for r in records] == list(range(20))
    assert [r["value"] for r in records] == [f"m{i}" for i in range(20)]
    assert records[3]["headers"]["trace"] == "3"
    assert all(r["subject"] == f"{stream_name}.in" for r in records)


async def test_ack_on_reply_subject_and_key_header(api, nc, stream_name):
    create_stream(api, stream_name)
    ack = await _request(nc, f"{stream_name}.in", b"hello", {"Liftlog-Key": "user-7"})
    assert ack == {"stream": stream_name, "partition": 0, "offset": 0}
    ack = await _request(nc, f"{stream_name}.in", b"again")
    assert ack["offset"] == 1
    record = fetch(api, stream_name, offset=0)["records"][0]
    assert record["key"] == "user-7"
    assert record["value"] == "hello"


async def test_ack_policy_header_overrides_stream_default(api, nc, stream_name):
    create_stream(api, stream_name, ack_policy="none")
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.publish(f"{stream_name}.in", b"silent", reply=inbox)
    await nc.publish(f"{stream_name}.in", b"loud", reply=inbox, headers={"Liftlog-Ack": "leader"})
    msg = await sub.next_msg(timeout=10)
    assert json.loads(msg.data)["offset"] == 1  # only the overridden one acks
    with pytest.raises(nats.errors.TimeoutError):
        await sub.next_msg(timeout=0.5)
    bad = await _request(nc, f"{stream_name}.in", b"x", {"Liftlog-Ack": "sometimes"})
    assert bad["error"]["code"] == "invalid_request"


async def test_invalid_ack_header_is_not_stored(api, nc, stream_name):
    create_stream(api, stream_name)
    bad = await _request(nc, f"{stream_name}.in", b"x", {"Liftlog-Ack": "maybe"})
    assert bad["error"]["code"] == "invalid_request"
    ok = await _request(nc, f"{stream_name}.in", b"y")
    assert ok["offset"] == 0


async def test_msg_id_duplicates_acked_with_original_offset(api, nc, stream_name):
    create_stream(api, stream_name)
    first = await _request(nc, f"{stream_name}.in", b"a", {"Nats-Msg-Id": "order-1"})
    await _request(nc, f"{stream_name}.in", b"b")
    dup = await _request(nc, f"{stream_name}.in", b"a-again", {"Nats-Msg-Id": "order-1"})
    assert dup["offset"] == first["offset"] == 0
    assert fetch(api, stream_name)["high_watermark"] == 2


async def test_expected_offset_mismatch_stores_nothing(api, nc, stream_name):
    create_stream(api, stream_name)
    ok = await _request(nc, f"{stream_name}.in", b"a", {"Liftlog-Expected-Offset": "0"})
    assert ok["offset"] == 0
    bad = await _request(nc, f"{stream_name}.in", b"b", {"Liftlog-Expected-Offset": "0"})
    assert bad["error"]["code"] == "expected_offset_mismatch"
    garbage = await _request(nc, f"{stream_name}.in", b"b", {"Liftlog-Expected-Offset": "x"})
    assert garbage["error"]["code"] == "invalid_request"
    assert fetch(api, stream_name)["high_watermark"] == 1


async def test_oversize_record_gets_error_ack(api, nc, stream_name):
    create_stream(api, stream_name, max_record_bytes=100)
    bad = await _request(nc, f"{stream_name}.in", b"x" * 101)
    assert bad["error"]["code"] == "record_too_large"
    ok = await _request(nc, f"{stream_name}.in", b"x" * 100)
    assert ok["offset"] == 0


async def test_partitions_follow_subject_convention(api, nc, stream_name):
    create_stream(api, stream_name, subject=f"{stream_name}.in", partitions=3)
    a0 = await _request(nc, f"{stream_name}.in", b"p0")
    a2 = await _request(nc, f"{stream_name}.in.2", b"p2")
    assert (a0["partition"], a2["partition"]) == (0, 2)
    assert fetch(api, stream_name, 2)["records"][0]["value"] == "p2"
    assert fetch(api, stream_name, 1)["high_watermark"] == 0


async def test_wildcard_subject_records_every_match(api, nc, stream_name):
    create_stream(api, stream_name, subject=f"{stream_name}.*")
    await _request(nc, f"{stream_name}.eu", b"1")
    await _request(nc, f"{stream_name}.us", b"2")
    subjects = [r["subject"] for r in fetch(api, stream_name)["records"]]
    assert subjects == [f"{stream_name}.eu", f"{stream_name}.us"]


async def test_several_streams_on_one_subject_each_record(api, nc, stream_name, node):
    subject = f"{stream_name}.shared"
    create_stream(api, f"{stream_name}-a", subject=subject)
    create_stream(api, f"{stream_name}-b", subject=subject)
    async with Client(node.api_url) as client:
        ack_b = await client.publish(f"{stream_name}-b", b"x")
        assert ack_b.stream == f"{stream_name}-b"
    wait_for(lambda: fetch(api, f"{stream_name}-a")["high_watermark"] == 1, 10)
    assert fetch(api, f"{stream_name}-b")["high_watermark"] == 1


async def test_load_balanced_partitions_share_subject(api, nc, stream_name):
    create_stream(api, stream_name, subject=f"{stream_name}.lb", partitions=2, load_balance=True)
    for i in range(40):
        await _request(nc, f"{stream_name}.lb", str(i).encode())
    totals = [fetch(api, stream_name, p)["high_watermark"] for p in (0, 1)]
    assert sum(totals) == 40  # each message recorded exactly once, by one partition


async def test_producer_batch_one_ack_covers_offsets(api, node, stream_name):
    create_stream(api, stream_name)
    async with Client(node.api_url) as client:
        await client.publish(stream_name, b"single")
        ack = await client.publish_batch(
            stream_name,
            [f"b{i}".encode() for i in range(500)],
            keys=[f"k{i % 3}" for i in range(500)],
            headers=[{"h": str(i)} for i in range(500)],
        )
        assert (ack.offset, ack.count) == (1, 500)
        dup = await client.publish_batch(stream_name, [b"a", b"b"], msg_id="batch-1")
        again = await client.publish_batch(stream_name, [b"a", b"b"], msg_id="batch-1")
        assert (again.offset, again.count) == (dup.offset, dup.count) == (501, 2)
    body = fetch(api, stream_name, offset=1, max_records=500)
    assert body["high_watermark"] == 503
    assert [r["value"] for r in body["records"]] == [f"b{i}" for i in range(500)]
    assert body["records"][4]["key"] == "k1"
    assert body["records"][4]["headers"]["h"] == "4"


async def test_producer_batch_errors(api, node, nc, stream_name):
    create_stream(api, stream_name, max_record_bytes=10)
    async with Client(node.api_url) as client:
        with pytest.raises(RecordTooLargeError):
            await client.publish_batch(stream_name, [b"ok", b"x" * 11])
        with pytest.raises(ExpectedOffsetMismatchError):
            await client.publish(stream_name, b"v", expected_offset=5)
    bad = await _request(nc, f"{stream_name}.in", b"not arrow", {"Liftlog-Batch": "arrow"})
    assert bad["error"]["code"] == "invalid_request"
    assert fetch(api, stream_name)["high_watermark"] == 0


async def test_paused_stream_records_nothing_until_resumed(api, nc, stream_name):
    create_stream(api, stream_name)
    await _request(nc, f"{stream_name}.in", b"before")
    assert api.post(f"/v1/streams/{stream_name}/pause").json()["paused"] is True
    await nc.publish(f"{stream_name}.in", b"while-paused")
    await nc.flush()
    assert fetch(api, stream_name, offset=0)["records"][0]["value"] == "before"  # still readable
    assert api.post(f"/v1/streams/{stream_name}/resume").json()["paused"] is False
    ack = await _request(nc, f"{stream_name}.in", b"after")
    assert ack["offset"] == 1
    assert [r["value"] for r in fetch(api, stream_name)["records"]] == ["before", "after"]


async def test_slow_consumer_drops_are_counted(make_node, nats_server, stream_name):
    from spark_log.config import IngestConfig

    node = make_node(ingest=IngestConfig(pending_msgs_limit=8, pending_bytes_limit=64 * 1024))
    with node_client(node.api_url, timeout=30) as api:
        create_stream(api, stream_name)
        nc = await nats.connect(nats_server.url, **nats_client_options())
        for _ in range(20):
            for i in range(2000):
                await nc.publish(f"{stream_name}.in", b"x" * 512, headers={"n": str(i)})
            await nc.flush()

        def drops() -> float:
            text = api.get("/metrics").text
            found = re.findall(r"liftlog_slow_consumer_drops_total\{[^}]*\} ([0-9.e+]+)", text)
            return sum(float(v) for v in found)

        await nc.drain()
        wait_for(lambda: drops() > 0, 15, message="slow-consumer drops counted")
        # every message is either recorded or counted as dropped: nothing is lost silently
        wait_for(
            lambda: fetch(api, stream_name)["high_watermark"] + drops() == 40_000,
            30,
            message="recorded + dropped == published",
        )
        assert "slow consumer" in node.log_path.read_text()


async def test_plain_publish_with_no_responders_is_the_clients_typed_error(nc, nats_server):
    """`liftlog publish --plain` on a subject nothing records: NoRespondersError, as the
    client raises, not a generic UnavailableError."""
    from liftlog.cli.plain_publish import _request as plain_request
    from spark_log.errors import NoRespondersError

    with pytest.raises(NoRespondersError, match="nobody-records-this"):
        await plain_request(nc, "nobody-records-this.in", b"v", ("gone", 0, nats_server.url))
