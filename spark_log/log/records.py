"""Records as Python objects, decoded column-wise from concatenated batches.

Fetch paths (REST, NATS, the Spark tail) turn read() bytes into records; decoding whole columns
with ``to_pylist`` is several times faster than touching Arrow scalars row by row.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import pyarrow as pa

from spark_log.errors import KeyUnavailableError
from spark_log.log.batch import RECORD_SCHEMA, VALUE_COLUMN, decode_records, iter_batches

if TYPE_CHECKING:
    from spark_log.crypto.value_cipher import ValueCipher

Header = tuple[str, bytes]


@dataclass(frozen=True, slots=True)
class Record:
    """One record at its offset; ``headers`` is empty (never None) when a record has none."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes
    headers: list[Header]
    subject: str


def records_from_batches(
    data: bytes | bytearray | memoryview,
    start_offset: int,
    end_offset: int,
    max_records: int,
    *,
    verify: bool = True,
    cipher: ValueCipher | None = None,
) -> list[Record]:
    """Records with ``start_offset <= offset < end_offset`` (end = the HW), at most ``max_records``.

    ``data`` is what PartitionLog.read returns: whole batches, the first of which may start
    before ``start_offset`` (reads return whole batches) and the last may reach past the HW.
    """
    out: list[Record] = []
    pieces = rows_in_range(
        data, start_offset, end_offset, max_records, verify=verify, cipher=cipher
    )
    for piece in pieces:
        out.extend(records_of(piece.rows, piece.first_offset))
    return out


class RangeSlice(NamedTuple):
    """The rows of one stored batch that fall inside a range."""

    first_offset: int
    rows: pa.RecordBatch
    stored_bytes: int
    """The whole stored batch's size (what reading it cost, whatever part was taken)."""


def rows_in_range(
    data: bytes | bytearray | memoryview,
    start_offset: int,
    end_offset: int,
    max_records: int,
    *,
    verify: bool = True,
    cipher: ValueCipher | None = None,
) -> Iterator[RangeSlice]:
    """Each stored batch's slice inside the range, at most ``max_records`` rows in all: the
    one walk every reader of the log shares (Records and Arrow fetches, lake export).

    Encrypted batches are decrypted here with ``cipher`` (the partition's data key), so no
    reader can hand out ciphertext as a value; without a cipher they are refused (the lake
    export too: its files are encrypted by Parquet, not by keeping these ciphertexts)."""
    taken = 0
    for header, view in iter_batches(data, verify=verify):
        room = max_records - taken
        if room <= 0 or header.base_offset >= end_offset:
            break
        if header.next_offset <= start_offset:
            continue
        lo = max(start_offset - header.base_offset, 0)
        hi = min(end_offset - header.base_offset, header.record_count, lo + room)
        rows = decode_records(view).slice(lo, hi - lo)
        if header.encrypted:
            rows = _decrypted(rows, header.base_offset + lo, cipher)
        yield RangeSlice(header.base_offset + lo, rows, header.size)
        taken += hi - lo


def _decrypted(
    rows: pa.RecordBatch, first_offset: int, cipher: ValueCipher | None
) -> pa.RecordBatch:
    if cipher is None:
        raise KeyUnavailableError(
            f"the batch holding offset {first_offset} is encrypted and no data key was given"
        )
    plain = cipher.decrypt_values(rows.column(VALUE_COLUMN), first_offset)
    return rows.set_column(VALUE_COLUMN, RECORD_SCHEMA.field(VALUE_COLUMN), plain)


def records_of(rows: pa.RecordBatch, first_offset: int) -> list[Record]:
    """``rows`` (RECORD_SCHEMA) as Records numbered densely from ``first_offset``."""
    timestamps = rows.column(0).to_pylist()
    keys = rows.column(1).to_pylist()
    values = rows.column(2).to_pylist()
    headers = header_lists(rows.column(3))
    subjects = rows.column(4).to_pylist()
    offsets = range(first_offset, first_offset + rows.num_rows)
    return list(map(Record, offsets, timestamps, keys, values, headers, subjects))


def header_lists(column: pa.ListArray) -> list[list[Header]]:
    """Per-row lists of (name, value) from a (possibly sliced) headers column, vectorised.

    The flattened names and values are converted once; each row then takes a slice of the
    shared pair list, so no Arrow scalar is touched per header.
    """
    count = len(column)
    if column.null_count == count:
        return [[] for _ in range(count)]
    offsets = column.offsets.to_pylist()
    first = offsets[0]
    entries = column.values.slice(first, offsets[-1] - first)
    names, values = (field.to_pylist() for field in entries.flatten())
    pairs = list(zip(names, values, strict=True))
    rows = [pairs[offsets[i] - first : offsets[i + 1] - first] for i in range(count)]
    if column.null_count:
        valid = column.is_valid().to_pylist()
        rows = [row if ok else [] for row, ok in zip(rows, valid, strict=True)]
    return rows
