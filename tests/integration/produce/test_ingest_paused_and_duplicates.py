"""Raw NATS publishers against a real node: paused streams answer ``stream_paused``, and
``Nats-Msg-Id`` duplicates are acknowledged with ``"duplicate": true`` (JetStream's shape)."""

from __future__ import annotations

import json
import re

import httpx
import nats
import pyarrow as pa

from tests.integration.conftest import create_stream, fetch
from tests.support.waiting import wait_for


def _arrow_batch(values: list[bytes]) -> bytes:
    """A producer batch as a plain client would build it: an Arrow IPC stream of values."""
    table = pa.table({"value": pa.array(values, pa.binary())})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


async def _request(
    nc: nats.NATS, subject: str, data: bytes, headers: dict[str, str] | None = None
) -> dict:
    msg = await nc.request(subject, data, timeout=10, headers=headers)
    return json.loads(msg.data)


def _paused_ack(stream: str, partition: int) -> dict:
    return {
        "stream": stream,
        "partition": partition,
        "error": {"code": "stream_paused", "message": f"stream {stream} is paused"},
    }


def _paused_drops(api: httpx.Client, stream: str) -> float:
    pattern = rf'liftlog_paused_drops_total\{{[^}}]*stream="{re.escape(stream)}"[^}}]*\}} (\S+)'
    return sum(float(v) for v in re.findall(pattern, api.get("/metrics").text))


async def test_paused_stream_answers_every_request_with_stream_paused(api, nc, stream_name):
    create_stream(api, stream_name)
    subject = f"{stream_name}.in"
    assert (await _request(nc, subject, b"before"))["offset"] == 0
    assert api.post(f"/v1/streams/{stream_name}/pause").json()["paused"] is True

    assert await _request(nc, subject, b"one") == _paused_ack(stream_name, 0)
    batch = _arrow_batch([b"b1", b"b2", b"b3"])
    answer = await _request(nc, subject, batch, {"Liftlog-Batch": "arrow"})
    assert answer == _paused_ack(stream_name, 0)
    await nc.publish(subject, b"no-reply")
    await nc.flush()
    wait_for(lambda: _paused_drops(api, stream_name) == 1, 10, message="one paused drop")
    assert fetch(api, stream_name)["high_watermark"] == 1
    assert fetch(api, stream_name)["log_start_offset"] == 0

    assert api.post(f"/v1/streams/{stream_name}/resume").json()["paused"] is False
    assert await _request(nc, subject, b"after") == {
        "stream": stream_name,
        "partition": 0,
        "offset": 1,
    }
    answer = await _request(nc, subject, batch, {"Liftlog-Batch": "arrow"})
    assert answer == {"stream": stream_name, "partition": 0, "offset": 2, "count": 3}
    values = [r["value"] for r in fetch(api, stream_name)["records"]]
    assert values == ["before", "after", "b1", "b2", "b3"]
    assert _paused_drops(api, stream_name) == 1


async def test_paused_load_balanced_stream_answers_from_every_partition(api, nc, stream_name):
    subject = f"{stream_name}.lb"
    create_stream(api, stream_name, subject=subject, partitions=2, load_balance=True)
    api.post(f"/v1/streams/{stream_name}/pause").raise_for_status()
    answers = [await _request(nc, subject, str(i).encode()) for i in range(20)]
    assert all(a["error"] == _paused_ack(stream_name, 0)["error"] for a in answers), answers
    assert {a["partition"] for a in answers} <= {0, 1}
    assert [fetch(api, stream_name, p)["high_watermark"] for p in (0, 1)] == [0, 0]

    api.post(f"/v1/streams/{stream_name}/resume").raise_for_status()
    acks = [await _request(nc, subject, str(i).encode()) for i in range(20)]
    assert all("error" not in a for a in acks), acks
    assert sum(fetch(api, stream_name, p)["high_watermark"] for p in (0, 1)) == 20


async def test_duplicate_single_record_ack_says_duplicate(api, nc, stream_name):
    create_stream(api, stream_name)
    subject = f"{stream_name}.in"
    first = await _request(nc, subject, b"a", {"Nats-Msg-Id": "order-1"})
    assert first == {"stream": stream_name, "partition": 0, "offset": 0}
    assert await _request(nc, subject, b"b") == {"stream": stream_name, "partition": 0, "offset": 1}
    again = await _request(nc, subject, b"a-again", {"Nats-Msg-Id": "order-1"})
    assert again == {"stream": stream_name, "partition": 0, "offset": 0, "duplicate": True}
    leader_ack = await _request(
        nc, subject, b"a-3", {"Nats-Msg-Id": "order-1", "Liftlog-Ack": "leader"}
    )
    assert leader_ack == again
    assert fetch(api, stream_name)["high_watermark"] == 2


async def test_duplicate_producer_batch_ack_says_duplicate(api, nc, stream_name):
    create_stream(api, stream_name)
    subject = f"{stream_name}.in"
    headers = {"Liftlog-Batch": "arrow", "Nats-Msg-Id": "batch-1"}
    assert (await _request(nc, subject, b"first"))["offset"] == 0
    first = await _request(nc, subject, _arrow_batch([b"x", b"y"]), headers)
    assert first == {"stream": stream_name, "partition": 0, "offset": 1, "count": 2}
    again = await _request(nc, subject, _arrow_batch([b"x", b"y"]), headers)
    assert again == {
        "stream": stream_name,
        "partition": 0,
        "offset": 1,
        "count": 2,
        "duplicate": True,
    }
    assert fetch(api, stream_name)["high_watermark"] == 3


async def test_a_paused_stream_beside_an_active_one_on_the_subject_leaves_the_answer_to_it(
    api, nc, stream_name
):
    """Every request gets the active stream's ack (a stored record is never reported refused)
    and only that stream stores it; with both paused, the refusal comes back again."""
    subject = f"{stream_name}.shared"
    paused, active = f"{stream_name}-p", f"{stream_name}-a"
    create_stream(api, paused, subject=subject)
    create_stream(api, active, subject=subject)
    api.post(f"/v1/streams/{paused}/pause").raise_for_status()
    answers = [await _request(nc, subject, f"v{i}".encode()) for i in range(20)]
    assert answers == [{"stream": active, "partition": 0, "offset": i} for i in range(20)]
    assert fetch(api, paused)["high_watermark"] == 0
    assert fetch(api, active)["high_watermark"] == 20

    api.post(f"/v1/streams/{active}/pause").raise_for_status()
    answer = await _request(nc, subject, b"both paused")
    assert answer["error"]["code"] == "stream_paused"
