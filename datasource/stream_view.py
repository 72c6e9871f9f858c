"""What the cluster says about a stream right now: leaders, offsets, lake.

One ``describe`` plus one ``cluster`` call over REST (any node answers both), read as the
API's own models and turned into planning values, so planning code never digs through JSON
and a missing leader is a clear error at the point where a query actually needs it.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_log.api_models import ClusterInfo, PartitionState, StreamDescription
from spark_log.client.rest import RestClient
from spark_log.errors import UnavailableError
from spark_log.value_schema import ValueSchema


@dataclass(frozen=True)
class PartitionView:
    """One partition as its leader reports it (offsets None while it has no live leader)."""

    partition: int
    leader_url: str | None
    high_watermark: int | None
    log_start_offset: int | None
    lake_offset: int | None

    def require_offsets(self, stream: str) -> tuple[int, int]:
        """(log start, HW); UnavailableError while the partition has no answering leader."""
        if self.high_watermark is None or self.log_start_offset is None:
            raise UnavailableError(
                f"{stream}/{self.partition} has no live leader to report its offsets; "
                "retry when the partition is back online"
            )
        return self.log_start_offset, self.high_watermark


@dataclass(frozen=True)
class StreamView:
    stream: str
    partitions: tuple[PartitionView, ...]
    lake_uri: str | None
    encrypted: bool = False
    """Values are encrypted at rest (the lake files are Parquet modular-encrypted)."""
    value_schema: ValueSchema | None = None
    """The stream's binding to a registered schema, its subject filled in (None: unbound)."""

    def partition(self, p: int) -> PartitionView:
        return self.partitions[p]

    @property
    def partition_count(self) -> int:
        return len(self.partitions)


def describe(rest: RestClient, stream: str) -> StreamView:
    """The stream's current view (StreamNotFoundError from the node if it does not exist)."""
    body = StreamDescription.from_json(rest.get_json(f"/v1/streams/{stream}"))
    urls = ClusterInfo.from_json(rest.get_json("/v1/cluster")).api_urls()
    partitions = tuple(
        _partition_view(p, urls) for p in sorted(body.partitions, key=lambda p: p.partition)
    )
    lake_uri = body.lake.uri if body.lake is not None else None
    return StreamView(stream, partitions, lake_uri, body.encryption, body.spec.value_schema)


def _partition_view(state: PartitionState, urls: dict[int, str]) -> PartitionView:
    return PartitionView(
        partition=state.partition,
        leader_url=urls.get(state.leader),
        high_watermark=state.high_watermark,
        log_start_offset=state.log_start_offset,
        lake_offset=state.lake_offset,
    )
