"""A fetched record with its value decoded by the stream's schema (``decode=True``)."""

from __future__ import annotations

from dataclasses import dataclass

from spark_log.log import Record


@dataclass(frozen=True, slots=True)
class DecodedRecord(Record):
    """A ``Record`` (``value`` still the stored bytes, so code written for records keeps
    working) with ``decoded``: the value a framed record's schema (by its id) or, on a bound
    stream, plain JSON gives; on an unbound stream an unframed value's bytes unchanged."""

    decoded: object

    @classmethod
    def of(cls, record: Record, decoded: object) -> DecodedRecord:
        return cls(
            record.offset,
            record.timestamp,
            record.key,
            record.value,
            record.headers,
            record.subject,
            decoded,
        )
