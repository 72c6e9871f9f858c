"""Liftbridge's NATS envelope on real nodes: enveloped publishes stored with their key, value
and headers, enveloped acks on the ack inbox per ack policy, optimistic concurrency, refusals
as ``Ack`` errors, corrupt envelopes refused and stored nowhere, plain messages unchanged."""

from __future__ import annotations

import base64
import re
import time

import httpx
import nats
import nats.errors
import pytest

from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge.envelope import MAGIC, encode_ack, encode_publish
from tests.integration.conftest import create_stream, fetch, node_client
from tests.support.liftbridge_envelope import ack_inbox, json_answer, next_ack, publish_enveloped
from tests.support.waiting import wait_for

NS_PER_MS = 1_000_000


def _high_watermark(api: httpx.Client, stream: str) -> int:
    hw: int = fetch(api, stream)["high_watermark"]
    return hw


def _metric(api: httpx.Client, name: str, stream: str) -> float:
    text = api.get("/metrics").text
    pattern = rf'{name}\{{[^}}]*stream="{re.escape(stream)}"[^}}]*\}} (\S+)'
    match = re.search(pattern, text)
    return float(match.group(1)) if match else 0.0


async def test_an_enveloped_publish_is_stored_with_its_key_value_and_headers(api, nc, stream_name):
    create_stream(api, stream_name)
    subject = f"{stream_name}.in"
    message = pb.Message(
        key=b"user-7", value=b"hello", headers={"trace": b"t-1", "place": "été".encode()}
    )
    await publish_enveloped(nc, subject, message)
    await publish_enveloped(nc, subject, pb.Message(value=b"no key, no headers"))
    wait_for(lambda: _high_watermark(api, stream_name) == 2, message="two enveloped records")
    first, second = fetch(api, stream_name)["records"]
    assert (first["key"], first["value"], first["subject"]) == ("user-7", "hello", subject)
    assert first["headers"] == {"trace": "t-1", "place": "été"}
    assert (second["key"], second["value"], second["headers"]) == (None, "no key, no headers", {})


async def test_the_ack_goes_to_the_ack_inbox_with_every_field(api, nc, stream_name):
    create_stream(api, stream_name, subject=f"{stream_name}.*")
    inbox, sub = await ack_inbox(nc)
    reply_inbox, reply_sub = await ack_inbox(nc)
    message = pb.Message(
        value=b"v", ackInbox=inbox, correlationId="c-42", ackPolicy=pb.LEADER, stream="ignored"
    )
    before_ns = time.time_ns()
    await publish_enveloped(nc, f"{stream_name}.eu", message, crc=True, reply=reply_inbox)
    ack = await next_ack(sub)
    after_ns = time.time_ns()
    assert ack.stream == stream_name
    assert (ack.partitionSubject, ack.msgSubject) == (f"{stream_name}.*", f"{stream_name}.eu")
    assert (ack.offset, ack.ackInbox, ack.correlationId) == (0, inbox, "c-42")
    assert (ack.ackPolicy, ack.ackError) == (pb.LEADER, pb.Ack.OK)
    # the node stamps whole milliseconds
    assert before_ns - NS_PER_MS <= ack.receptionTimestamp <= ack.commitTimestamp <= after_ns
    # the NATS reply subject got nothing: the next answer on it is a plain request's
    await json_answer(nc, f"{stream_name}.eu", b"plain")
    await nc.publish(f"{stream_name}.eu", b"plain again", reply=reply_inbox)
    first_reply = await reply_sub.next_msg(timeout=10)
    assert b'"offset":2' in first_reply.data


async def test_a_partition_acks_with_its_own_subject(api, nc, stream_name):
    create_stream(api, stream_name, partitions=3)
    inbox, sub = await ack_inbox(nc)
    subject = f"{stream_name}.in.2"
    await publish_enveloped(nc, subject, pb.Message(value=b"p2", ackInbox=inbox))
    ack = await next_ack(sub)
    assert (ack.partitionSubject, ack.msgSubject, ack.offset) == (subject, subject, 0)
    assert fetch(api, stream_name, 2)["records"][0]["value"] == "p2"


async def test_ack_policies_leader_all_and_none(api, nc, stream_name):
    create_stream(api, stream_name, ack_policy="none")  # the envelope's policy rules
    inbox, sub = await ack_inbox(nc)
    subject = f"{stream_name}.in"
    for policy in (pb.NONE, pb.LEADER, pb.ALL):
        name = pb.AckPolicy.Name(policy)
        message = pb.Message(value=name.encode(), ackInbox=inbox, correlationId=name)
        message.ackPolicy = policy
        await publish_enveloped(nc, subject, message)
    acks = [await next_ack(sub), await next_ack(sub)]
    # NONE stored its record unacknowledged: the first ack on the inbox is LEADER's
    assert [(a.correlationId, a.offset, a.ackPolicy) for a in acks] == [
        ("LEADER", 1, pb.LEADER),
        ("ALL", 2, pb.ALL),
    ]
    assert all(a.ackError == pb.Ack.OK for a in acks)
    wait_for(lambda: _high_watermark(api, stream_name) == 3, message="three records")


async def test_without_an_ack_inbox_a_stored_publish_is_not_acknowledged(api, nc, stream_name):
    create_stream(api, stream_name)
    subject = f"{stream_name}.in"
    reply, sub = await ack_inbox(nc)
    await publish_enveloped(nc, subject, pb.Message(value=b"quiet"), reply=reply)
    await nc.publish(subject, b"plain", reply=reply)
    first = await sub.next_msg(timeout=10)
    assert first.data == f'{{"stream":"{stream_name}","partition":0,"offset":1}}'.encode()


async def test_optimistic_concurrency_honours_the_expected_offset(api, nc, stream_name):
    create_stream(api, stream_name, optimistic_concurrency_control=True)
    inbox, sub = await ack_inbox(nc)
    subject = f"{stream_name}.in"

    async def publish(offset: int, policy: int = pb.LEADER) -> pb.Ack:
        message = pb.Message(value=b"x", offset=offset, ackInbox=inbox, correlationId=str(offset))
        message.ackPolicy = policy
        await publish_enveloped(nc, subject, message)
        return await next_ack(sub)

    assert (await publish(0)).offset == 0
    stale = await publish(0)
    assert (stale.ackError, stale.correlationId, stale.offset) == (pb.Ack.INCORRECT_OFFSET, "0", 0)
    assert (await publish(-1)).offset == 1  # -1: no expectation
    ahead = await publish(5)
    assert ahead.ackError == pb.Ack.INCORRECT_OFFSET
    unacked = await publish(2, pb.NONE)  # OCC needs an ack: NONE is refused
    assert (unacked.ackError, unacked.ackPolicy) == (pb.Ack.UNKNOWN, pb.NONE)
    last = await publish(2, pb.ALL)
    assert (last.offset, last.ackError) == (2, pb.Ack.OK)
    assert _high_watermark(api, stream_name) == 3


async def test_without_optimistic_concurrency_the_offset_is_ignored(api, nc, stream_name):
    create_stream(api, stream_name)
    inbox, sub = await ack_inbox(nc)
    await publish_enveloped(
        nc, f"{stream_name}.in", pb.Message(value=b"x", offset=5, ackInbox=inbox)
    )
    ack = await next_ack(sub)
    assert (ack.offset, ack.ackError) == (0, pb.Ack.OK)


async def test_a_record_too_large_is_refused_with_too_large(api, nc, stream_name):
    create_stream(api, stream_name, max_record_bytes=100)
    inbox, sub = await ack_inbox(nc)
    subject = f"{stream_name}.in"
    big = pb.Message(value=b"x" * 101, ackInbox=inbox, correlationId="big")
    await publish_enveloped(nc, subject, big)
    refused = await next_ack(sub)
    assert (refused.ackError, refused.correlationId) == (pb.Ack.TOO_LARGE, "big")
    await publish_enveloped(nc, subject, pb.Message(value=b"x" * 100, ackInbox=inbox))
    ack = await next_ack(sub)
    assert (ack.offset, ack.ackError) == (0, pb.Ack.OK)


def _corrupt_envelopes() -> dict[str, tuple[bytes, str]]:
    """Each kind of corrupt envelope and what its refusal says."""
    good = encode_publish(pb.Message(value=b"v", ackInbox="_INBOX.never"), crc=True)
    bad_crc = good[:-1] + bytes((good[-1] ^ 1,))
    version = good[:4] + b"\x07" + good[5:]
    bad_len = MAGIC + bytes((0, 40, 0, 0)) + b"\x1a\x01v"
    text = pb.Message(value=b"v", headers={"h": b"\xff"}, ackInbox="_INBOX.never")
    return {
        "bad CRC": (bad_crc, "CRC-32C mismatch"),
        "unknown version": (version, "unknown version 7"),
        "truncated header": (good[:6], "truncated header"),
        "bad header length": (bad_len, "header length 40"),
        "wrong message type": (encode_ack(pb.Ack(stream="s")), "message type 1"),
        "undecodable": (MAGIC + bytes((0, 8, 0, 0)) + b"\x1a\x64ab", "undecodable protobuf"),
        "header not UTF-8": (encode_publish(text), "not UTF-8"),
    }


@pytest.mark.parametrize("kind", list(_corrupt_envelopes()))
async def test_a_corrupt_envelope_is_refused_and_stored_nowhere(api, nc, stream_name, kind):
    create_stream(api, stream_name)
    subject = f"{stream_name}.in"
    data, says = _corrupt_envelopes()[kind]
    answer = await json_answer(nc, subject, data)
    assert (answer["stream"], answer["partition"]) == (stream_name, 0)
    assert answer["error"]["code"] == "invalid_request"
    assert says in answer["error"]["message"]
    assert _high_watermark(api, stream_name) == 0
    ok = await json_answer(nc, subject, b"after")
    assert ok["offset"] == 0  # nothing of the corrupt envelope was stored before it


async def test_a_corrupt_envelope_without_a_reply_is_counted(api, nc, stream_name):
    create_stream(api, stream_name)
    subject = f"{stream_name}.in"
    bad_crc, _ = _corrupt_envelopes()["bad CRC"]
    await nc.publish(subject, bad_crc)
    await nc.flush()
    wait_for(
        lambda: _metric(api, "liftlog_envelope_drops_total", stream_name) == 1,
        message="one counted envelope drop",
    )
    assert (await json_answer(nc, subject, b"after"))["offset"] == 0


async def test_a_plain_message_with_an_envelopes_content_is_stored_as_is(api, nc, stream_name):
    create_stream(api, stream_name)
    subject = f"{stream_name}.in"
    body = pb.Message(key=b"k", value=b"v", ackInbox="_INBOX.x").SerializeToString()
    near_miss = MAGIC[:3] + b"\x00" + body  # one byte off the magic number
    for i, payload in enumerate((body, near_miss)):
        assert await json_answer(nc, subject, payload) == {
            "stream": stream_name,
            "partition": 0,
            "offset": i,
        }
    records = fetch(api, stream_name, encoding="base64")["records"]
    assert [base64.b64decode(r["value"]) for r in records] == [body, near_miss]
    assert [r["key"] for r in records] == [None, None]


async def test_an_internal_ack_inbox_is_neither_answered_nor_stored(api, nc, stream_name):
    create_stream(api, stream_name)
    subject = f"{stream_name}.in"
    await publish_enveloped(nc, subject, pb.Message(value=b"forged", ackInbox="$JS.API.X"))
    assert (await json_answer(nc, subject, b"genuine"))["offset"] == 0
    assert _metric(api, "liftlog_internal_reply_drops_total", stream_name) == 1


async def test_an_ack_inbox_carrying_protocol_lines_is_refused_and_sends_nothing(
    api, nc, stream_name
):
    """An ack inbox goes into a PUB line the node writes: one with a line break would add
    commands under the node's login, so the envelope is refused whole, stored nowhere."""
    create_stream(api, stream_name)
    subject = f"{stream_name}.in"
    planted = await nc.subscribe(f"{stream_name}.planted")
    forged = f"x 0\r\n\r\nPUB {stream_name}.planted 5\r\nhello\r\nPUB y"
    data = encode_publish(pb.Message(value=b"v", ackInbox=forged))
    answer = await json_answer(nc, subject, data)
    assert answer["error"]["code"] == "invalid_request"
    assert "ackInbox" in answer["error"]["message"]
    assert (await json_answer(nc, subject, b"after"))["offset"] == 0
    await nc.flush()
    with pytest.raises(nats.errors.TimeoutError):
        await planted.next_msg(timeout=0.2)  # nothing was published in the node's name


async def test_paused_and_read_only_streams_answer_with_an_ack_error(api, nc, stream_name):
    create_stream(api, stream_name)
    subject = f"{stream_name}.in"
    inbox, sub = await ack_inbox(nc)
    api.post(f"/v1/streams/{stream_name}/pause").raise_for_status()
    await publish_enveloped(nc, subject, pb.Message(value=b"x", ackInbox=inbox, correlationId="p"))
    paused = await next_ack(sub)
    assert (paused.ackError, paused.correlationId, paused.stream) == (
        pb.Ack.UNKNOWN,
        "p",
        stream_name,
    )
    no_inbox = await json_answer(nc, subject, encode_publish(pb.Message(value=b"x")))
    assert no_inbox["error"]["code"] == "stream_paused"
    api.post(f"/v1/streams/{stream_name}/resume").raise_for_status()
    api.post(f"/v1/streams/{stream_name}/readonly").raise_for_status()
    await publish_enveloped(nc, subject, pb.Message(value=b"x", ackInbox=inbox, correlationId="r"))
    read_only = await next_ack(sub)
    assert (read_only.ackError, read_only.correlationId) == (pb.Ack.UNKNOWN, "r")
    no_inbox = await json_answer(nc, subject, encode_publish(pb.Message(value=b"x")))
    assert no_inbox["error"]["code"] == "stream_readonly"
    assert _high_watermark(api, stream_name) == 0


async def test_acks_all_on_a_replicated_stream_wait_for_both_replicas(make_node, nc, stream_name):
    nodes = [make_node(i) for i in (1, 2)]
    with node_client(nodes[0].api_url) as api:
        create_stream(api, stream_name, replication_factor=2, min_isr=2)
        inbox, sub = await ack_inbox(nc)
        for i in range(3):
            message = pb.Message(value=f"r{i}".encode(), ackInbox=inbox, correlationId=str(i))
            message.ackPolicy = pb.ALL
            await publish_enveloped(nc, f"{stream_name}.in", message, crc=True)
        acks = [await next_ack(sub) for _ in range(3)]
        assert [(a.correlationId, a.offset, a.ackError) for a in acks] == [
            (str(i), i, pb.Ack.OK) for i in range(3)
        ]
        assert all(a.ackPolicy == pb.ALL for a in acks)
    # acknowledged = committed: both replicas hold all three (a follower learns the HW on
    # its next fetch, hence the poll)
    for each in nodes:
        with node_client(each.api_url) as api:
            wait_for(
                lambda api=api: (
                    [r["value"] for r in fetch(api, stream_name, from_follower="true")["records"]]
                    == ["r0", "r1", "r2"]
                ),
                message=f"every record readable on broker {each.broker_id}",
            )
