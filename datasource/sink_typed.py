"""The typed sink: a DataFrame whose columns are the value's fields, written to a bound stream.

Each row's value fields (columns named as a typed read names them: ``value_<name>`` for a
field named like a lake column; ``key``, ``headers`` and ``partition`` route the record as in
the binary sink; the lake's other columns, such as ``offset``, are ignored, so a typed read
writes back as it is) are serialised with the subject's latest schema and framed with its id,
exactly as the client's typed publish does (``spark_log.client.typed_values.serialize``). The
driver checks the columns against that schema before any task runs.
"""

from __future__ import annotations

from typing import cast

import pyarrow as pa
from pyspark.sql.types import StructType

from datasource.errors import PublishError, SchemaError
from datasource.options import BINARY, TYPED, SinkOptions
from datasource.sink_rows import check_record_columns
from datasource.typed_datum import row_datums, value_columns
from spark_log.api_models import StreamDescription
from spark_log.client.rest import RestClient
from spark_log.client.schema_registry import LatestSchema, RegistryClient
from spark_log.client.typed_values import serialize
from spark_log.errors import LiftlogError
from spark_log.json_types import JsonValue
from spark_log.lake.typed_layout import RAW_VALUE_COLUMN, column_name
from spark_log.schemas.arrow_types import value_arrow_type
from spark_log.value_schema import ValueSchema


def sink_binding(options: SinkOptions, schema: StructType) -> ValueSchema | None:
    """The binding a write serialises rows with (None: rows carry their ``value``), its
    columns checked against the subject's latest schema."""
    if options.value_format == BINARY:
        return None
    rest = RestClient(options.servers, credentials=options.credentials)
    body = StreamDescription.from_json(rest.get_json(f"/v1/streams/{options.stream}"))
    binding = body.spec.value_schema
    if binding is None:
        if options.value_format == TYPED:
            raise SchemaError(
                f"valueFormat=typed needs a stream bound to a schema, and stream "
                f"{options.stream} has no value_schema: write a 'value' column instead"
            )
        return None
    if options.value_format is None and RAW_VALUE_COLUMN in schema.names:
        return None
    check_typed_columns(schema, binding, RegistryClient(rest).latest(binding.subject))
    return binding


def check_typed_columns(schema: StructType, binding: ValueSchema, latest: LatestSchema) -> None:
    """Every value column names a field of the latest schema, and there is one at least."""
    check_record_columns(schema)
    document = cast(JsonValue, latest.parsed.document)
    fields = value_arrow_type(str(latest.parsed.schema_type), document).names
    given = value_columns(pa.schema([pa.field(n, pa.null()) for n in schema.names]))
    unknown = sorted(column for column, name in given if name not in fields)
    if unknown or not given:
        expected = ", ".join(column_name(f) for f in fields)
        problem = f"columns {unknown} are no fields of it" if unknown else "no column is a field"
        raise SchemaError(
            f"the rows are serialised with the latest schema of subject {binding.subject!r} "
            f"(id {latest.schema_id}), and {problem}; its fields' columns: {expected} (plus "
            "key, headers, partition)"
        )


def with_serialised_values(
    batch: pa.RecordBatch, stream: str, binding: ValueSchema, latest: LatestSchema
) -> pa.RecordBatch:
    """``batch`` with a ``value`` column: each row's value fields serialised and framed."""
    datums = row_datums(batch, value_columns(batch.schema))
    try:
        values = [serialize(stream, binding, latest, datum) for datum in datums]
    except LiftlogError as exc:
        raise PublishError(
            f"a row does not fit the latest schema of subject {binding.subject!r} (id "
            f"{latest.schema_id}): {exc.code}: {exc.message}"
        ) from exc
    return batch.append_column(RAW_VALUE_COLUMN, pa.array(values, pa.binary()))
