"""PublishAsync on one node: hundreds in flight, every correlation id answered, each refusal an
``asyncError`` on a stream that goes on."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import httpx

from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge import api_pb2_grpc
from tests.integration.conftest import create_stream, fetch
from tests.support.waiting import wait_for

IN_FLIGHT = 300
DEADLINE_S = 30.0


async def _requests(requests: list[pb.PublishRequest]) -> AsyncIterator[pb.PublishRequest]:
    for request in requests:
        yield request


async def _answers(
    lb: api_pb2_grpc.APIStub, requests: list[pb.PublishRequest]
) -> dict[str, pb.PublishResponse]:
    """Every answer of one PublishAsync call (the client half-closes after the last request)
    by correlation id; a repeated id fails the test."""
    answers: dict[str, pb.PublishResponse] = {}
    async for response in lb.PublishAsync(_requests(requests), timeout=DEADLINE_S):
        assert response.correlationId not in answers
        answers[response.correlationId] = response
    return answers


async def test_hundreds_in_flight_are_each_answered_with_their_ack(
    lb: api_pb2_grpc.APIStub, api: httpx.Client, stream_name: str
) -> None:
    create_stream(api, stream_name)
    call = lb.PublishAsync(timeout=DEADLINE_S)
    for i in range(IN_FLIGHT):  # every request out before any answer is read
        await call.write(
            pb.PublishRequest(stream=stream_name, value=b"%d" % i, correlationId=f"c{i}")
        )
    answers = [await call.read() for _ in range(IN_FLIGHT)]
    await call.done_writing()
    assert await call.read() is grpc.aio.EOF
    assert sorted(a.correlationId for a in answers) == sorted(f"c{i}" for i in range(IN_FLIGHT))
    assert all(not a.HasField("asyncError") for a in answers)
    assert sorted(a.ack.offset for a in answers) == list(range(IN_FLIGHT))
    by_offset = {a.ack.offset: a.correlationId for a in answers}
    records = fetch(api, stream_name, max_records=IN_FLIGHT)["records"]
    assert {r["offset"]: f"c{r['value']}" for r in records} == by_offset


async def test_each_refusal_is_an_async_error_and_the_stream_goes_on(
    lb: api_pb2_grpc.APIStub, api: httpx.Client, stream_name: str
) -> None:
    occ = f"{stream_name}-occ"
    create_stream(api, stream_name)
    create_stream(api, occ, optimistic_concurrency_control=True)
    requests = [
        pb.PublishRequest(stream=stream_name, value=b"first", correlationId="ok-1"),
        pb.PublishRequest(stream=f"{stream_name}-none", correlationId="missing"),
        pb.PublishRequest(stream=stream_name, partition=9, correlationId="no-partition"),
        pb.PublishRequest(stream="", correlationId="no-stream"),
        pb.PublishRequest(stream=stream_name, headers={"b": b"\xff"}, correlationId="binary"),
        pb.PublishRequest(stream=occ, value=b"x", expectedOffset=0, correlationId="occ-0"),
        pb.PublishRequest(stream=occ, value=b"x", expectedOffset=5, correlationId="occ-bad"),
        pb.PublishRequest(stream=occ, value=b"x", ackPolicy=pb.NONE, correlationId="occ-none"),
        pb.PublishRequest(stream=stream_name, value=b"last", correlationId="ok-2"),
    ]
    answers = await _answers(lb, requests)
    codes = {
        cid: pb.PublishAsyncError.Code.Name(a.asyncError.code)
        for cid, a in answers.items()
        if a.HasField("asyncError")
    }
    assert codes == {
        "missing": "NOT_FOUND",
        "no-partition": "NOT_FOUND",
        "no-stream": "BAD_REQUEST",
        "binary": "BAD_REQUEST",
        "occ-bad": "INCORRECT_OFFSET",
        "occ-none": "BAD_REQUEST",
    }
    assert {cid: answers[cid].ack.offset for cid in ("ok-1", "ok-2", "occ-0")} == {
        "ok-1": 0,
        "ok-2": 1,
        "occ-0": 0,
    }
    assert [r["value"] for r in fetch(api, stream_name)["records"]] == ["first", "last"]
    assert len(fetch(api, occ)["records"]) == 1


async def test_a_read_only_stream_is_refused_as_readonly(
    lb: api_pb2_grpc.APIStub, api: httpx.Client, stream_name: str
) -> None:
    create_stream(api, stream_name)
    api.post(f"/v1/streams/{stream_name}/readonly").raise_for_status()
    answers = await _answers(lb, [pb.PublishRequest(stream=stream_name, correlationId="ro")])
    assert answers["ro"].asyncError.code == pb.PublishAsyncError.READONLY


async def test_acks_none_is_stored_and_never_answered(
    lb: api_pb2_grpc.APIStub, api: httpx.Client, stream_name: str
) -> None:
    create_stream(api, stream_name)
    requests = [
        pb.PublishRequest(stream=stream_name, value=b"quiet", ackPolicy=pb.NONE, correlationId="n"),
        pb.PublishRequest(stream=stream_name, value=b"loud", correlationId="l"),
    ]
    assert set(await _answers(lb, requests)) == {"l"}
    wait_for(lambda: len(fetch(api, stream_name)["records"]) == 2, message="both records stored")


async def test_a_half_close_right_after_the_requests_still_gets_every_ack(
    lb: api_pb2_grpc.APIStub, api: httpx.Client, stream_name: str
) -> None:
    create_stream(api, stream_name)
    requests = [
        pb.PublishRequest(stream=stream_name, value=b"x", ackPolicy=pb.ALL, correlationId=f"a{i}")
        for i in range(50)
    ]
    answers = await _answers(lb, requests)
    assert sorted(a.ack.offset for a in answers.values()) == list(range(50))
