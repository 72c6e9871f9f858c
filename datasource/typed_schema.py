"""The columns of a typed read: the lake table's, as Spark declares them.

A typed DataFrame has exactly the typed lake table's columns (``partition``, ``offset``,
``timestamp``, ``key``, [``headers``,] ``subject``, ``schema_id``, ``invalid_value``, the raw
``value`` when the binding keeps it, then the value's fields), so a query reads the same
table whether it goes through the lake's files or through this source. No ``stream`` column:
the table has none, and a value field may be called so.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from datasource.typed_plan import TypedRead
from spark_log.lake.typed_layout import RAW_VALUE_COLUMN

HEADERS_COLUMN = "headers"
PARTITION_COLUMN = "partition"


def typed_columns(typed: TypedRead, include_headers: bool) -> pa.Schema:
    """The table's columns a read returns (``headers`` only when asked)."""
    return pa.schema([f for f in typed.table_schema if include_headers or f.name != HEADERS_COLUMN])


def typed_struct(typed: TypedRead, include_headers: bool) -> StructType:
    """The DataFrame's schema."""
    return from_arrow_schema(typed_columns(typed, include_headers))


def typed_arrow_schema(typed: TypedRead, include_headers: bool) -> pa.Schema:
    """The Arrow schema Spark expects every batch in (its names for list and map parts)."""
    return to_arrow_schema(typed_struct(typed, include_headers), timezone="UTC")


def typed_lake_columns(typed: TypedRead, include_headers: bool) -> list[str]:
    """The columns a lake file is read for: the table's (the partition is in the path) and the
    raw value, which a file written before the binding holds instead of typed columns."""
    names = [n for n in typed_columns(typed, include_headers).names if n != PARTITION_COLUMN]
    return names if RAW_VALUE_COLUMN in names else [*names, RAW_VALUE_COLUMN]
