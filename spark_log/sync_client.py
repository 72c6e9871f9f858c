"""``spark_log.SyncClient``: the client for scripts and notebooks that do not use asyncio.

Every call runs the async ``Client`` on one event loop in a background daemon thread (see
``loop_thread``), so a script gets plain return values and plain iterators while the NATS
connection and its ack subscription live across calls. Use it as a context manager::

    with SyncClient("http://127.0.0.1:9644") as client:
        ack = client.publish("orders", b"...")
        for record in client.subscribe("orders", start=ack.offset, stop_at_end=True):
            ...
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from spark_log.api_models import Ack, ClusterInfo, FlushResult, StreamDescription, StreamSummary
from spark_log.client import (
    DEFAULT_ACK_TIMEOUT_S,
    DEFAULT_FETCH_RECORDS,
    DEFAULT_POLL_WAIT_MS,
    Client,
    Fetched,
    Start,
)
from spark_log.log import Record
from spark_log.loop_thread import LoopThread
from spark_log.rest import DEFAULT_SERVER


class SyncClient:
    """Blocking facade over ``Client`` with the same operations and the same typed errors."""

    def __init__(
        self,
        servers: str | list[str] = DEFAULT_SERVER,
        nats_url: str | None = None,
        ack_timeout_s: float = DEFAULT_ACK_TIMEOUT_S,
    ) -> None:
        self._loop = LoopThread("liftlog-sync-client")
        try:
            self._client = self._loop.run(_make_client(servers, nats_url, ack_timeout_s))
        except BaseException:
            self._loop.stop()  # no client, so nothing else would ever stop the thread
            raise

    @property
    def client(self) -> Client:
        """The async client underneath (its coroutines must run on this client's loop)."""
        return self._client

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Drain the NATS connection and stop the background loop (idempotent)."""
        if self._loop.running:
            try:
                self._loop.run(self._client.close())
            finally:
                self._loop.stop()

    # ----------------------------------------------------------------- admin

    def create_stream(self, name: str, subject: str, **options: Any) -> StreamDescription:
        """Create a stream (idempotent for an identical spec); returns its description."""
        return self._loop.run(self._client.create_stream(name, subject, **options))

    def delete_stream(self, name: str) -> None:
        self._loop.run(self._client.delete_stream(name))

    def list_streams(self) -> list[StreamSummary]:
        return self._loop.run(self._client.list_streams())

    def describe_stream(self, name: str) -> StreamDescription:
        return self._loop.run(self._client.describe_stream(name))

    def pause_stream(self, name: str) -> StreamDescription:
        return self._loop.run(self._client.pause_stream(name))

    def resume_stream(self, name: str) -> StreamDescription:
        return self._loop.run(self._client.resume_stream(name))

    def flush_stream(self, name: str) -> FlushResult:
        return self._loop.run(self._client.flush_stream(name))

    def cluster(self) -> ClusterInfo:
        return self._loop.run(self._client.cluster())

    # ----------------------------------------------------------------- publish

    def publish(
        self,
        stream: str,
        value: bytes | str,
        *,
        key: bytes | str | None = None,
        headers: Mapping[str, str] | None = None,
        partition: int | None = None,
        ack_policy: str | None = None,
        msg_id: str | None = None,
        expected_offset: int | None = None,
        timeout_s: float | None = None,
    ) -> Ack | None:
        """Publish one record; returns its Ack (None with ``ack_policy="none"``)."""
        return self._loop.run(
            self._client.publish(
                stream,
                value,
                key=key,
                headers=headers,
                partition=partition,
                ack_policy=ack_policy,
                msg_id=msg_id,
                expected_offset=expected_offset,
                timeout_s=timeout_s,
            )
        )

    def publish_batch(
        self,
        stream: str,
        values: Iterable[bytes | str],
        *,
        keys: Iterable[bytes | str | None] | None = None,
        headers: Iterable[Mapping[str, str] | None] | None = None,
        partition: int | None = None,
        ack_policy: str | None = None,
        msg_id: str | None = None,
        timeout_s: float | None = None,
    ) -> Ack | None:
        """Publish many records as one NATS message with one ack."""
        return self._loop.run(
            self._client.publish_batch(
                stream,
                list(values),
                keys=None if keys is None else list(keys),
                headers=None if headers is None else list(headers),
                partition=partition,
                ack_policy=ack_policy,
                msg_id=msg_id,
                timeout_s=timeout_s,
            )
        )

    def publish_table(
        self,
        stream: str,
        table: pa.Table,
        *,
        partition: int,
        ack_policy: str | None = None,
        msg_id: str | None = None,
        timeout_s: float | None = None,
    ) -> Ack | None:
        """Publish an Arrow table as one producer batch to ``partition``."""
        return self._loop.run(
            self._client.publish_table(
                stream,
                table,
                partition=partition,
                ack_policy=ack_policy,
                msg_id=msg_id,
                timeout_s=timeout_s,
            )
        )

    # ----------------------------------------------------------------- consume

    def fetch(
        self,
        stream: str,
        partition: int = 0,
        offset: int | None = None,
        *,
        timestamp_ms: int | None = None,
        max_records: int = DEFAULT_FETCH_RECORDS,
        wait_ms: int = 0,
    ) -> Fetched:
        """One fetch of committed records."""
        return self._loop.run(
            self._client.fetch(
                stream,
                partition,
                offset,
                timestamp_ms=timestamp_ms,
                max_records=max_records,
                wait_ms=wait_ms,
            )
        )

    def start_offset(self, stream: str, partition: int, start: Start) -> int:
        return self._loop.run(self._client.start_offset(stream, partition, start))

    def subscribe(
        self,
        stream: str,
        partition: int = 0,
        start: Start = "earliest",
        *,
        poll_wait_ms: int = DEFAULT_POLL_WAIT_MS,
        fetch_max_records: int = DEFAULT_FETCH_RECORDS,
        max_records: int | None = None,
        stop_at_end: bool = False,
    ) -> Iterator[Record]:
        """A plain iterator of committed records (see ``Client.subscribe`` for the bounds);
        without ``max_records`` or ``stop_at_end`` it follows the partition until closed."""
        records = self._client.subscribe(
            stream,
            partition,
            start,
            poll_wait_ms=poll_wait_ms,
            fetch_max_records=fetch_max_records,
            max_records=max_records,
            stop_at_end=stop_at_end,
        )
        return _SyncIterator(self._loop, records)


class _SyncIterator(Iterator[Record]):
    """Steps an async iterator on the client's loop; ``close`` ends it early."""

    def __init__(self, loop: LoopThread, records: AsyncIterator[Record]) -> None:
        self._loop = loop
        self._records = records
        self._done = False

    def __next__(self) -> Record:
        record = None if self._done else self._loop.run(_next_or_end(self._records))
        if record is None:
            self._done = True
            raise StopIteration
        return record

    def close(self) -> None:
        """Stop following the partition (the pending fetch is abandoned)."""
        if not self._done:
            self._done = True
            aclose = getattr(self._records, "aclose", None)
            if aclose is not None and self._loop.running:
                self._loop.run(aclose())

    def __enter__(self) -> _SyncIterator:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


async def _next_or_end(records: AsyncIterator[Record]) -> Record | None:
    """The next record, or None at the end (StopAsyncIteration is not sent across threads)."""
    try:
        return await anext(records)
    except StopAsyncIteration:
        return None


async def _make_client(servers: str | list[str], nats_url: str | None, timeout_s: float) -> Client:
    """Build the client on its loop, so everything it creates belongs there."""
    return Client(servers, nats_url=nats_url, ack_timeout_s=timeout_s)
