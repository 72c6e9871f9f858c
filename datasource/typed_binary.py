"""Executor side: a binary read's ``value`` for rows of a typed lake table.

A bound stream's lake table keeps the value as typed columns, and its raw bytes only when the
binding asks. A binary read (``valueFormat=binary``) of such rows gets each value as the node's
lake read tier does (``spark_log.lake.typed_reencode``): serialised again with the schema id
the row was decoded with, in Confluent's wire format (an Avro value comes back as the bytes
published, a value published as plain JSON comes back framed), the kept bytes of a value that
did not decode, an empty value for a tombstone. Schemas come from the registry by id.
"""

from __future__ import annotations

import pyarrow as pa

from datasource.errors import CorruptRecordsError
from datasource.typed_lookup import RegistrySchemas
from spark_log.client.schema_registry import RegistryClient
from spark_log.errors import LiftlogError
from spark_log.lake.typed_layout import RAW_VALUE_COLUMN, SCHEMA_ID_COLUMN
from spark_log.lake.typed_reencode import raw_values


def with_raw_values(rows: pa.RecordBatch, registry: RegistryClient) -> pa.RecordBatch:
    """``rows`` of a typed lake file with their ``value`` column (as they are when the file
    has it)."""
    names = rows.schema.names
    if RAW_VALUE_COLUMN in names or SCHEMA_ID_COLUMN not in names:
        return rows
    try:
        values = raw_values(pa.Table.from_batches([rows]), RegistrySchemas(registry, frozenset()))
    except LiftlogError as exc:
        raise CorruptRecordsError(
            f"typed lake rows cannot be serialised again: {exc.message}; read the stream "
            "with valueFormat=typed"
        ) from exc
    return rows.append_column(RAW_VALUE_COLUMN, values)
