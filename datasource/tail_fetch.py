"""Executor side: committed records of one partition from its leader, as Arrow, over REST.

A leader can move while a task runs (failover, controlled shutdown). Offsets below the HW are
committed on every in-sync replica, so the task simply asks the new leader for the same offset:
it rediscovers the leader and retries, for a bounded time, and never skips or repeats a record.
"""

from __future__ import annotations

import time

import pyarrow as pa

from datasource.errors import TailReadError
from datasource.stream_view import describe
from spark_log.client.credentials import ClientCredentials
from spark_log.client.rest import RestClient
from spark_log.errors import LiftlogError, NotLeaderError, UnavailableError
from spark_log.wire import ARROW_STREAM_MEDIA_TYPE

FETCH_MAX_RECORDS = 100_000
"""Records asked per request (a node caps it at its ``ingest.max_fetch_records``)."""
FETCH_MAX_BYTES = 64 * 1024 * 1024
"""Bytes asked per request (a node caps it at its ``ingest.max_fetch_bytes``)."""
LEADER_WAIT_S = 60.0
"""How long a task looks for a partition leader before it fails (Spark may then retry it)."""
RETRY_BACKOFF_MIN_S = 0.1
RETRY_BACKOFF_MAX_S = 2.0
REQUEST_TIMEOUT_S = 30.0


class TailFetcher:
    """Fetches ``[offset, offset + limit)`` of one partition from whichever node leads it."""

    def __init__(
        self,
        servers: str,
        stream: str,
        partition: int,
        leader_url: str | None,
        credentials: ClientCredentials | None = None,
    ) -> None:
        self.rest = RestClient(servers, REQUEST_TIMEOUT_S, credentials)
        self.stream = stream
        self.partition = partition
        self.leader_url = leader_url
        self._path = f"/v1/streams/{stream}/partitions/{partition}/records"

    def fetch(self, offset: int, limit: int) -> pa.Table:
        """At most ``limit`` records from ``offset`` (empty at the HW); OffsetOutOfRangeError
        when the log no longer (or not yet) holds ``offset``."""
        deadline = time.monotonic() + LEADER_WAIT_S
        backoff = RETRY_BACKOFF_MIN_S
        while True:
            try:
                return self._fetch_once(offset, limit)
            except (NotLeaderError, UnavailableError) as exc:
                if time.monotonic() + backoff > deadline:
                    raise TailReadError(
                        f"no leader of {self.stream}/{self.partition} served offset {offset} "
                        f"within {LEADER_WAIT_S:.0f}s: {exc.message}"
                    ) from exc
                time.sleep(backoff)
                backoff = min(backoff * 2, RETRY_BACKOFF_MAX_S)
                self._rediscover()

    def _fetch_once(self, offset: int, limit: int) -> pa.Table:
        if self.leader_url is None:
            self._rediscover()
            if self.leader_url is None:
                raise UnavailableError(f"{self.stream}/{self.partition} has no live leader")
        response = self.rest.request(
            "GET",
            self._path,
            params={
                "offset": offset,
                "max_records": min(limit, FETCH_MAX_RECORDS),
                "max_bytes": FETCH_MAX_BYTES,
            },
            headers={"Accept": ARROW_STREAM_MEDIA_TYPE},
            server=self.leader_url,
        )
        return pa.ipc.open_stream(pa.py_buffer(response.body)).read_all()

    def _rediscover(self) -> None:
        """Ask any node who leads now (a failed describe leaves the old guess in place)."""
        try:
            self.leader_url = describe(self.rest, self.stream).partition(self.partition).leader_url
        except LiftlogError:
            return
