"""How a cursor is stored in ``__cursors``: its key, its value and its partition.

A cursor is a consumer's own bookmark: the offset of the **last record it processed** in one
stream partition (Liftbridge's SetCursor/FetchCursor), so it resumes at ``offset + 1``. ``-1``
says "nothing processed yet" (resume at 0) and differs from a cursor never set, which has no
record at all.

The record key is ``<cursor id>\\0<stream>\\0<partition>`` (NUL cannot appear in any of them),
so the last record of a key is the cursor's value and a key-compacted log keeps exactly the
live cursors. The ``__cursors`` partition is chosen by the **cursor id alone** (Kafka routes a
group by its id the same way): every partition's cursor of one id, and so every offset of one
consumer group, lands in one ``__cursors`` partition, whose leader can write them together
and is the group's coordinator.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from spark_log.errors import InvalidRequestError
from spark_log.json_types import JsonObject
from spark_log.partitioner import partition_for_key

MAX_CURSOR_ID_LENGTH = 256
NOTHING_PROCESSED = -1
"""A cursor set to -1: the consumer starts at offset 0 (set, unlike a cursor never set)."""
_SEPARATOR = "\0"


@dataclass(frozen=True)
class CursorValue:
    """``stream_created_at_ms`` ties the cursor to one incarnation of the stream: a stream
    deleted and created again under the same name does not inherit its predecessor's cursors."""

    offset: int
    stream_created_at_ms: int
    set_at_ms: int

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "v": 1,
                "offset": self.offset,
                "stream_created_at_ms": self.stream_created_at_ms,
                "set_at_ms": self.set_at_ms,
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> CursorValue:
        body: JsonObject = json.loads(data)
        return cls(
            offset=int(body["offset"]),
            stream_created_at_ms=int(body["stream_created_at_ms"]),
            set_at_ms=int(body["set_at_ms"]),
        )


def validate_cursor_id(cursor_id: str) -> None:
    """Printable, at most 256 characters: it travels in URL paths and record keys."""
    if not cursor_id or len(cursor_id) > MAX_CURSOR_ID_LENGTH or not cursor_id.isprintable():
        raise InvalidRequestError(
            f"invalid cursor id {cursor_id[:60]!r}: 1 to {MAX_CURSOR_ID_LENGTH} printable "
            "characters"
        )
    if "/" in cursor_id:
        raise InvalidRequestError(f"invalid cursor id {cursor_id!r}: '/' is not allowed")


def validate_cursor_offset(offset: int) -> None:
    if offset < NOTHING_PROCESSED:
        raise InvalidRequestError(
            f"a cursor offset is the last offset processed, or -1 for none: got {offset}"
        )


def cursor_key(cursor_id: str, stream: str, partition: int) -> bytes:
    return _SEPARATOR.join((cursor_id, stream, str(partition))).encode()


def cursors_partition(cursor_id: str, partitions: int) -> int:
    """The ``__cursors`` partition holding every cursor of ``cursor_id``."""
    return partition_for_key(cursor_id.encode(), partitions)
