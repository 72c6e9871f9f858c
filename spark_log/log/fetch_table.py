"""Fetched records as one Arrow table, built from the stored Arrow batches themselves.

The REST Arrow fetch and the Spark tail read ship records in bulk. Turning stored batches into
Python ``Record`` objects and back into Arrow cost more than the read itself; here each stored
batch is decoded zero-copy, sliced to the asked range and given an ``offset`` column, so no
per-record Python work happens at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from spark_log.log.batch import HEADERS_TYPE
from spark_log.log.records import Record, rows_in_range

if TYPE_CHECKING:
    from spark_log.crypto.value_cipher import ValueCipher

FETCH_SCHEMA = pa.schema(
    [
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("ms", tz="UTC")),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", HEADERS_TYPE),
        ("subject", pa.string()),
    ]
)
"""Columns of an Arrow fetch response (``offset`` first, then the stored record columns)."""


def table_from_batches(
    data: bytes | bytearray | memoryview,
    start_offset: int,
    end_offset: int,
    max_records: int,
    *,
    verify: bool = True,
    cipher: ValueCipher | None = None,
) -> pa.Table:
    """Records with ``start_offset <= offset < end_offset`` (end = the HW), at most
    ``max_records``, in FETCH_SCHEMA.

    ``data`` is what PartitionLog.read returns: whole batches, the first of which may start
    before ``start_offset`` and the last may reach past the HW (the same contract as
    ``records_from_batches``, so both fetch forms return exactly the same records).
    """
    if start_offset >= end_offset:
        return FETCH_SCHEMA.empty_table()
    pieces = [
        with_offsets(piece.rows, piece.first_offset)
        for piece in rows_in_range(
            data, start_offset, end_offset, max_records, verify=verify, cipher=cipher
        )
    ]
    return pa.Table.from_batches(pieces, schema=FETCH_SCHEMA)


def with_offsets(rows: pa.RecordBatch, first_offset: int) -> pa.RecordBatch:
    """Stored ``rows`` (RECORD_SCHEMA) as FETCH_SCHEMA, numbered densely from ``first_offset``."""
    count = rows.num_rows
    offsets = pa.array(np.arange(first_offset, first_offset + count, dtype=np.int64))
    timestamps = rows.column(0).cast(FETCH_SCHEMA.field("timestamp").type)
    columns = [offsets, timestamps, rows.column(1), rows.column(2), rows.column(3), rows.column(4)]
    return pa.RecordBatch.from_arrays(columns, schema=FETCH_SCHEMA)


def encode_fetch_table(table: pa.Table | None) -> bytes:
    """An Arrow IPC stream of ``table`` (an empty stream with the schema when None)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, FETCH_SCHEMA) as writer:
        writer.write_table(table if table is not None else FETCH_SCHEMA.empty_table())
    data: bytes = sink.getvalue().to_pybytes()
    return data


def records_of_fetch_table(table: pa.Table) -> list[Record]:
    """FETCH_SCHEMA rows as Records (what a JSON fetch and the client's iterators hand out)."""
    if table.num_rows == 0:
        return []
    cols = {name: table.column(name).to_pylist() for name in table.column_names}
    timestamps = table.column("timestamp").cast(pa.int64()).to_pylist()
    return [
        Record(
            offset=cols["offset"][i],
            timestamp=timestamps[i],
            key=cols["key"][i],
            value=cols["value"][i],
            headers=[(h["key"], h["value"]) for h in cols["headers"][i] or []],
            subject=cols["subject"][i],
        )
        for i in range(table.num_rows)
    ]
