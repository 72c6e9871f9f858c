"""Consumer read throughput: the same number of stored records read back from each side.

Liftlog is read two ways: through the client (``Client.subscribe`` from the earliest record, a
``Record`` per record, as an application reads) and as raw REST Arrow fetches (one Arrow table
per fetch, rows counted, as Spark and bulk readers read). JetStream is read by a pull consumer
(no acks, batches of ``READ_BATCH``), the way a JetStream application reads a backlog. Every
side reads records it stored during the publishing measurements, so nothing is published here.
"""

from __future__ import annotations

import asyncio
import time

import nats.errors
import nats.js.errors
import pyarrow.ipc as ipc
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from liftlog.bench.errors import BenchError
from liftlog.bench.toolkit.stats import Throughput
from spark_log.client import Client
from spark_log.client.rest import RestClient
from spark_log.wire import ARROW_STREAM_MEDIA_TYPE

CONSUMER_READY_TIMEOUT_S = 30.0
CONSUMER_READY_POLL_S = 0.05
READ_CLIENT = "liftlog_client_subscribe"
READ_ARROW = "liftlog_rest_arrow"
READ_PULL = "jetstream_pull_consumer"
READ_TITLES = {
    READ_CLIENT: "Liftlog Client.subscribe",
    READ_ARROW: "Liftlog REST Arrow fetches",
    READ_PULL: "JetStream pull consumer",
}
READ_BATCH = 1000
READ_TIMEOUT_S = 30.0
FETCH_TIMEOUT_S = 5.0


async def read_with_client(client: Client, stream: str, records: int, size: int) -> Throughput:
    """``records`` records through ``Client.subscribe`` from the earliest one."""
    started = time.perf_counter()
    count = 0
    async with asyncio.timeout(READ_TIMEOUT_S):
        async for _record in client.subscribe(stream, start="earliest", max_records=records):
            count += 1
    return Throughput(count, size, time.perf_counter() - started)


async def read_arrow(api_url: str, stream: str, records: int, size: int) -> Throughput:
    """``records`` records as REST Arrow fetches of up to ``READ_BATCH`` rows each."""
    return await asyncio.to_thread(_read_arrow, api_url, stream, records, size)


def _read_arrow(api_url: str, stream: str, records: int, size: int) -> Throughput:
    rest = RestClient(api_url, FETCH_TIMEOUT_S)
    path = f"/v1/streams/{stream}/partitions/0/records"
    started = time.perf_counter()
    count = 0
    deadline = started + READ_TIMEOUT_S
    while count < records and time.perf_counter() < deadline:
        params = {"offset": count, "max_records": min(READ_BATCH, records - count)}
        resp = rest.request("GET", path, params=params, headers={"Accept": ARROW_STREAM_MEDIA_TYPE})
        rows = ipc.open_stream(resp.body).read_all().num_rows
        if rows == 0:
            raise BenchError(f"{stream} holds {count} records, fewer than {records}")
        count += rows
    return Throughput(count, size, time.perf_counter() - started)


async def read_jetstream(
    js: JetStreamContext, stream: str, subject: str, records: int, size: int
) -> Throughput:
    """``records`` records through a pull consumer from the first message, without acks."""
    config = ConsumerConfig(ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL)
    sub = await js.pull_subscribe(subject, stream=stream, config=config)
    try:
        await _consumer_ready(sub)
        started = time.perf_counter()
        count = 0
        async with asyncio.timeout(READ_TIMEOUT_S):
            while count < records:
                batch = min(READ_BATCH, records - count)
                count += len(await sub.fetch(batch, timeout=FETCH_TIMEOUT_S))
    except (TimeoutError, nats.errors.Error) as exc:
        raise BenchError(f"the JetStream pull consumer of {stream} failed: {exc!r}") from exc
    finally:
        await sub.unsubscribe()
    return Throughput(count, size, time.perf_counter() - started)


async def _consumer_ready(sub: JetStreamContext.PullSubscription) -> None:
    """Until the new consumer has a leader: on a JetStream cluster its fetches are answered
    503 while its replicas elect one, and that wait is not reading."""
    deadline = time.monotonic() + CONSUMER_READY_TIMEOUT_S
    while True:
        try:
            info = await sub.consumer_info()
        except nats.js.errors.ServiceUnavailableError:
            info = None
        if info is not None and (info.cluster is None or info.cluster.leader):
            return
        if time.monotonic() > deadline:
            raise BenchError("the JetStream pull consumer got no leader")
        await asyncio.sleep(CONSUMER_READY_POLL_S)
