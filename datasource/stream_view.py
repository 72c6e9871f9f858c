"""What the cluster says about a stream right now: leaders, offsets, lake.

One ``describe`` plus one ``cluster`` call over REST (any node answers both), read as the
API's own models and turned into planning values, so planning code never digs through JSON
and a missing leader is a clear error at the point where a query actually needs it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from spark_log.api_models import ClusterInfo, PartitionState, StreamDescription
from spark_log.client.rest import RestClient
from spark_log.errors import UnavailableError
from spark_log.value_schema import ValueSchema, default_subject


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
    binding = bound_value_schema(body, stream)
    return StreamView(stream, partitions, lake_uri, body.encryption, binding)


def bound_value_schema(body: StreamDescription, stream: str) -> ValueSchema | None:
    """The stream's ``value_schema``, its subject filled in (None: unbound); the description
    may hold it as its JSON object."""
    binding: object = body.value_schema
    if isinstance(binding, dict):
        binding = ValueSchema(**binding)
    if not isinstance(binding, ValueSchema):
        return None
    if binding.subject:
        return binding
    return dataclasses.replace(binding, subject=default_subject(stream))


def _partition_view(state: PartitionState, urls: dict[int, str]) -> PartitionView:
    return PartitionView(
        partition=state.partition,
        leader_url=urls.get(state.leader),
        high_watermark=state.high_watermark,
        log_start_offset=state.log_start_offset,
        lake_offset=state.lake_offset,
    )
