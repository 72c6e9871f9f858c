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

import functools
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator, Mapping
from typing import Any, Concatenate, ParamSpec, TypeVar

from spark_log.api_models import Ack, StreamDescription
from spark_log.client.client import (
    DEFAULT_ACK_TIMEOUT_S,
    DEFAULT_FETCH_RECORDS,
    DEFAULT_POLL_WAIT_MS,
    Client,
)
from spark_log.client.credentials import ClientCredentials, rest_credentials
from spark_log.client.loop_thread import LoopThread
from spark_log.client.nats_connect import DEFAULT_NATS_CONNECT_TIMEOUT_S
from spark_log.client.positions import Start, Stop, check_order, check_start, check_stop
from spark_log.client.publish_retry import DEFAULT_DELIVERY_TIMEOUT_S
from spark_log.client.schema_registry import RegistryClient
from spark_log.log import Record

P = ParamSpec("P")
R = TypeVar("R")


def _blocking(
    # asyncio types a coroutine's yield and send values as Any
    method: Callable[Concatenate[Client, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[SyncClient, P], R]:
    """``Client.method`` as a blocking ``SyncClient`` method: same signature, same errors."""

    def call(self: SyncClient, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._loop.run(method(self._client, *args, **kwargs))

    functools.update_wrapper(call, method)  # help() and inspect show Client's signature
    return call


class SyncClient:
    """Blocking facade over ``Client`` with the same operations and the same typed errors."""

    def __init__(
        self,
        servers: str | list[str] | None = None,
        nats_url: str | None = None,
        ack_timeout_s: float = DEFAULT_ACK_TIMEOUT_S,
        delivery_timeout_s: float | None = DEFAULT_DELIVERY_TIMEOUT_S,
        token: str | None = None,
        credentials: ClientCredentials | None = None,
        connect_timeout_s: float = DEFAULT_NATS_CONNECT_TIMEOUT_S,
    ) -> None:
        self._loop = LoopThread("liftlog-sync-client")
        try:
            self._client = self._loop.run(
                _make_client(
                    servers,
                    nats_url,
                    ack_timeout_s,
                    delivery_timeout_s,
                    rest_credentials(token, credentials),
                    connect_timeout_s,
                )
            )
        except BaseException:
            self._loop.stop()  # no client, so nothing else would ever stop the thread
            raise

    @property
    def schema_registry(self) -> RegistryClient:
        """The nodes' schema registry (blocking calls; see ``Client.schema_registry``)."""
        return self._client.schema_registry

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

    # ----------------------------------------------------------------- admin, publish, fetch
    # The same operations as ``Client`` with the same signatures, run to completion.

    def create_stream(self, name: str, subject: str, **options: object) -> StreamDescription:
        """Create a stream (``options`` as ``Client.create_stream``)."""
        return self._loop.run(self._client.create_stream(name, subject, **options))

    def alter_stream(self, name: str, **changes: object) -> StreamDescription:
        """Change alterable spec fields (``changes`` as ``Client.alter_stream``)."""
        return self._loop.run(self._client.alter_stream(name, **changes))

    delete_stream = _blocking(Client.delete_stream)
    list_streams = _blocking(Client.list_streams)
    describe_stream = _blocking(Client.describe_stream)
    pause_stream = _blocking(Client.pause_stream)
    resume_stream = _blocking(Client.resume_stream)
    set_read_only = _blocking(Client.set_read_only)
    flush_stream = _blocking(Client.flush_stream)
    reassign = _blocking(Client.reassign)
    reassignment_status = _blocking(Client.reassignment_status)
    cancel_reassignment = _blocking(Client.cancel_reassignment)
    cluster = _blocking(Client.cluster)
    publish = _blocking(Client.publish)
    publish_table = _blocking(Client.publish_table)
    serialize_value = _blocking(Client.serialize_value)
    decode_value = _blocking(Client.decode_value)
    fetch = _blocking(Client.fetch)
    start_offset = _blocking(Client.start_offset)
    create_token = _blocking(Client.create_token)
    list_tokens = _blocking(Client.list_tokens)
    revoke_token = _blocking(Client.revoke_token)
    whoami = _blocking(Client.whoami)
    add_acl = _blocking(Client.add_acl)
    list_acls = _blocking(Client.list_acls)
    remove_acl = _blocking(Client.remove_acl)
    set_cursor = _blocking(Client.set_cursor)
    fetch_cursor = _blocking(Client.fetch_cursor)
    delete_cursor = _blocking(Client.delete_cursor)

    def publish_batch(
        self,
        stream: str,
        values: Iterable[object],
        *,
        keys: Iterable[bytes | str | None] | None = None,
        headers: Iterable[Mapping[str, str] | None] | None = None,
        partition: int | None = None,
        ack_policy: str | None = None,
        msg_id: str | None = None,
        timeout_s: float | None = None,
    ) -> Ack | None:
        """Publish many records as one NATS message with one ack (values as ``publish``
        takes them: bytes and text unchanged, other values serialised with the schema)."""
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

    # ----------------------------------------------------------------- consume

    def subscribe(
        self,
        stream: str,
        partition: int = 0,
        start: Start = "earliest",
        *,
        stop: Stop | None = None,
        poll_wait_ms: int = DEFAULT_POLL_WAIT_MS,
        fetch_max_records: int = DEFAULT_FETCH_RECORDS,
        max_records: int | None = None,
        stop_at_end: bool = False,
        decode: bool = False,
    ) -> Iterator[Record]:
        """A plain iterator of committed records (see ``Client.subscribe`` for the start and
        stop positions); without a stop, ``max_records`` or ``stop_at_end`` it follows the
        partition until closed. Bad positions raise here, not at the first record.
        ``decode``: DecodedRecords, ``decoded`` each value decoded by its schema."""
        check_order(check_start(start), check_stop(stop))
        records = self._client.subscribe(
            stream,
            partition,
            start,
            stop=stop,
            poll_wait_ms=poll_wait_ms,
            fetch_max_records=fetch_max_records,
            max_records=max_records,
            stop_at_end=stop_at_end,
            decode=decode,
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


async def _make_client(
    servers: str | list[str] | None,
    nats_url: str | None,
    timeout_s: float,
    delivery_timeout_s: float | None,
    credentials: ClientCredentials,
    connect_timeout_s: float,
) -> Client:
    """Build the client on its loop, so everything it creates belongs there."""
    return Client(
        servers,
        nats_url=nats_url,
        ack_timeout_s=timeout_s,
        delivery_timeout_s=delivery_timeout_s,
        credentials=credentials,
        connect_timeout_s=connect_timeout_s,
    )
