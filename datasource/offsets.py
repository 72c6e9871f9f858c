"""Offset specifications in Kafka's words, and the streaming offset JSON.

Users write ``earliest``, ``latest`` or ``{"<stream>": {"0": 23, "1": -2}}`` (``-2`` earliest,
``-1`` latest), exactly as for Spark's Kafka source, so queries port over unchanged. Streaming
offsets use the same nested shape with string partition keys: Spark stores them through JSON,
which would turn integer keys into strings anyway, and the progress then reads like Kafka's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from datasource.errors import InvalidOptionError
from spark_log.json_types import JsonMapping

EARLIEST = -2
LATEST = -1
EARLIEST_WORD = "earliest"
LATEST_WORD = "latest"

StreamOffset: TypeAlias = dict[str, dict[str, int]]
"""A streaming offset as Spark checkpoints it: ``{stream: {"<p>": next offset}}``."""


@dataclass(frozen=True)
class OffsetSpec:
    """Where to start or end, per partition: ``default`` unless ``per_partition`` names it.

    Values are offsets (>= 0), ``EARLIEST`` or ``LATEST``.
    """

    default: int
    per_partition: Mapping[int, int] = field(default_factory=dict)

    def for_partition(self, partition: int) -> int:
        return self.per_partition.get(partition, self.default)


def parse_offset_spec(text: str | None, stream: str, option: str, default: int) -> OffsetSpec:
    """``earliest`` | ``latest`` | Kafka-style JSON for ``stream``; ``default`` when absent.

    Partitions the JSON does not name take ``default`` (earliest for a start, latest for an
    end), so a JSON that names only the partitions that matter is enough.
    """
    if text is None or not text.strip():
        return OffsetSpec(default)
    word = text.strip().lower()
    if word == EARLIEST_WORD:
        return OffsetSpec(EARLIEST)
    if word == LATEST_WORD:
        return OffsetSpec(LATEST)
    return OffsetSpec(default, _parse_json_offsets(text, stream, option))


def _parse_json_offsets(text: str, stream: str, option: str) -> dict[int, int]:
    example = f'{{"{stream}": {{"0": 23, "1": -2}}}}'
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidOptionError(
            f"{option} must be 'earliest', 'latest' or JSON like {example}: {exc}"
        ) from exc
    if not isinstance(data, dict) or set(data) != {stream}:
        raise InvalidOptionError(
            f"{option} must name exactly the stream {stream!r}, like {example}; got {text!r}"
        )
    offsets = parse_partition_offsets(data[stream], option)
    for partition, offset in offsets.items():
        if offset < EARLIEST:
            raise InvalidOptionError(
                f"{option}: offset {offset} of partition {partition} is invalid "
                "(use >= 0, -2 for earliest or -1 for latest)"
            )
    return offsets


def parse_partition_offsets(data: object, what: str) -> dict[int, int]:
    """``{"0": 23}`` → ``{0: 23}``, with a clear error for anything else."""
    if not isinstance(data, dict):
        raise InvalidOptionError(f"{what}: expected an object of partition → offset, got {data!r}")
    offsets: dict[int, int] = {}
    for key, value in data.items():
        try:
            partition = int(key)
        except (TypeError, ValueError) as exc:
            raise InvalidOptionError(f"{what}: partition {key!r} is not an integer") from exc
        if partition < 0 or isinstance(value, bool) or not isinstance(value, int):
            raise InvalidOptionError(f"{what}: bad entry {key!r}: {value!r}")
        offsets[partition] = value
    return offsets


def to_stream_offset(stream: str, offsets: Mapping[int, int]) -> StreamOffset:
    """The streaming offset Spark checkpoints: ``{stream: {"<p>": next offset}}``."""
    return {stream: {str(p): int(offsets[p]) for p in sorted(offsets)}}


def from_stream_offset(stream: str, offset: JsonMapping) -> dict[int, int]:
    """Read back ``to_stream_offset``'s shape (from a checkpoint, so from JSON)."""
    if stream not in offset:
        raise InvalidOptionError(
            f"the checkpointed offset {dict(offset)!r} is not for stream {stream!r}; "
            "use a new checkpoint location for a different stream"
        )
    return parse_partition_offsets(offset[stream], "checkpointed offset")
