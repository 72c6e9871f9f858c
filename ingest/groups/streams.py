"""What a group coordinator needs to know about the streams its groups subscribe to.

Partition counts decide the assignment (a stream that grew or was deleted changes it), and a
committed offset is tied to the stream's incarnation (its creation time), as every cursor is.
Both come from ZooKeeper and are re-read at most every ``ttl_s``: heartbeats ask on every call,
and a count a second old only delays a rebalance by that second. Offsets (HW, earliest, by
time) come from the partitions' leaders through the same paths as ``describe`` and a fetch.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from ingest.admin import streams as admin
from ingest.admin.node_view import NodeView
from ingest.peer_calls import call_peer
from ingest.security.node_credentials import outgoing_credentials
from spark_log.api_models import FetchResponse, PartitionState
from spark_log.client.rest import RestClient
from spark_log.errors import StreamNotFoundError, UnavailableError

DEFAULT_TTL_S = 1.0
LEADER_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class StreamFacts:
    partitions: int
    created_at_ms: int


class GroupStreams:
    """A short-lived cache of stream facts (None: the stream does not exist)."""

    def __init__(self, node: NodeView, ttl_s: float = DEFAULT_TTL_S) -> None:
        self._node = node
        self._ttl_s = ttl_s
        self._cache: dict[str, tuple[float, StreamFacts | None]] = {}

    async def facts(self, stream: str) -> StreamFacts | None:
        cached = self._cache.get(stream)
        now = time.monotonic()
        if cached is not None and now - cached[0] < self._ttl_s:
            return cached[1]
        try:
            record = await asyncio.to_thread(self._node.store.get, stream)
            facts: StreamFacts | None = StreamFacts(record.spec.partitions, record.created_at_ms)
        except StreamNotFoundError:
            facts = None
        self._cache[stream] = (now, facts)
        return facts

    async def require(self, stream: str) -> StreamFacts:
        """The stream's facts, read afresh; StreamNotFoundError when it does not exist."""
        self._cache.pop(stream, None)
        facts = await self.facts(stream)
        if facts is None:
            raise StreamNotFoundError(f"stream {stream!r} does not exist")
        return facts

    async def counts(self, streams: set[str]) -> dict[str, int]:
        """Partition counts of the streams that exist."""
        out: dict[str, int] = {}
        for stream in sorted(streams):
            facts = await self.facts(stream)
            if facts is not None:
                out[stream] = facts.partitions
        return out

    async def partition_states(self, stream: str) -> list[PartitionState]:
        """Each partition with the offsets its leader reports (HW null while it has none)."""
        return list((await admin.describe_stream(self._node, stream, compaction=False)).partitions)

    async def offset_for_timestamp(self, stream: str, state: PartitionState, ts_ms: int) -> int:
        """The first offset whose timestamp is at or after ``ts_ms`` (the HW when none is)."""
        urls = {b.broker_id: b.api_url for b in await self._node.live_brokers()}
        url = urls.get(state.leader)
        if url is None:
            raise UnavailableError(f"{stream}/{state.partition} has no live leader")
        client = RestClient(url, LEADER_TIMEOUT_S, outgoing_credentials(self._node.config))
        path = f"/v1/streams/{stream}/partitions/{state.partition}/records"
        response = await call_peer(
            client.get_json, path, params={"timestamp": ts_ms, "max_records": 1}
        )
        fetched = FetchResponse.from_json(response)
        return fetched.records[0].offset if fetched.records else fetched.next_offset


def earliest_offset(state: PartitionState) -> int | None:
    """The first readable offset: the lake's first when it holds records below the log."""
    firsts = [o for o in (state.lake_start_offset, state.log_start_offset) if o is not None]
    return min(firsts) if firsts else None
