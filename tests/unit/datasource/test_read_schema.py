"""A user's ``.schema(...)``: the source's own, more nullable (relabelled), or refused up front."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.errors import PySparkRuntimeError
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    LongType,
    StringType,
    StructField,
    StructType,
)
from pyspark.sql.worker.plan_data_source_read import records_to_arrow_batches

from datasource.batch_reader import LiftlogBatchReader, LiftlogPushdownBatchReader
from datasource.errors import InvalidOptionError
from datasource.schema import output_struct, to_output_batch
from datasource.source import LiftlogDataSource
from datasource.stream_reader import LiftlogStreamReader
from datasource.task_read import as_schema
from spark_log.log.fetch_table import FETCH_SCHEMA

BASE = {"servers": "http://a:1", "stream": "orders", "valueFormat": "binary"}
"""``binary``: the source does not ask a node whether the stream is bound to a schema."""
HEADERS = {**BASE, "includeHeaders": "true"}


def _all_nullable(schema: StructType) -> StructType:
    """What a Kafka-style (or DDL-string) schema of the same columns looks like."""
    return StructType([StructField(f.name, f.dataType, True) for f in schema.fields])


def _replaced(schema: StructType, name: str, field: StructField) -> StructType:
    return StructType([field if f.name == name else f for f in schema.fields])


def _output_batch(include_headers: bool) -> pa.RecordBatch:
    rows = pa.RecordBatch.from_pydict(
        {
            "offset": [7, 8],
            "timestamp": pa.array([1, 2], pa.timestamp("ms", tz="UTC")),
            "key": [b"k", None],
            "value": [b"v", b"w"],
            "headers": [None, [{"key": "h", "value": b"x"}]],
            "subject": ["a", "b"],
        },
        schema=FETCH_SCHEMA,
    )
    return to_output_batch(rows, "orders", 0, include_headers)


def _spark_accepts(batches: list[pa.RecordBatch], schema: StructType) -> list[pa.RecordBatch]:
    """Spark's own check of a Python source's Arrow batches (it raises on a mismatch)."""
    return list(records_to_arrow_batches(iter(batches), 100, schema, None))


@pytest.mark.parametrize("options", [BASE, HEADERS, {**BASE, "filterPushdown": "true"}])
def test_the_sources_own_schema_is_taken_as_is_by_a_batch_read(options):
    source = LiftlogDataSource(options)
    reader = source.reader(source.schema())
    assert isinstance(reader, LiftlogBatchReader) and reader.arrow_schema is None
    assert isinstance(reader, LiftlogPushdownBatchReader) == ("filterPushdown" in options)


@pytest.mark.parametrize("options", [BASE, HEADERS])
def test_the_sources_own_schema_is_taken_as_is_by_a_stream_read(options):
    source = LiftlogDataSource(options)
    reader = source.streamReader(source.schema())
    assert isinstance(reader, LiftlogStreamReader) and reader.arrow_schema is None


@pytest.mark.parametrize("include_headers", [False, True])
def test_an_all_nullable_schema_is_honoured_by_relabelling_the_batches(include_headers):
    source = LiftlogDataSource(HEADERS if include_headers else BASE)
    given = _all_nullable(output_struct(include_headers))
    for reader in (source.reader(given), source.streamReader(given)):
        assert reader.arrow_schema.equals(to_arrow_schema(given, timezone="UTC"))
        batch = _output_batch(include_headers)
        out = _spark_accepts(list(as_schema([batch], reader.arrow_schema)), given)
        assert out[0].schema.equals(to_arrow_schema(given, timezone="UTC"))
        assert out[0].to_pydict() == batch.to_pydict()


def test_without_relabelling_spark_refuses_a_more_nullable_schema():
    given = _all_nullable(output_struct(False))
    with pytest.raises(PySparkRuntimeError, match="DATA_SOURCE_RETURN_SCHEMA_MISMATCH"):
        _spark_accepts([_output_batch(False)], given)
    assert _spark_accepts(list(as_schema([_output_batch(False)], None)), output_struct(False))


def _refused(options: dict[str, str], given: StructType, why: str) -> str:
    source = LiftlogDataSource(options)
    with pytest.raises(InvalidOptionError, match=why) as batch_error:
        source.reader(given)
    with pytest.raises(InvalidOptionError, match=why):
        source.streamReader(given)
    message = str(batch_error.value)
    assert "Drop .schema(...)" in message
    assert source.schema().simpleString() in message
    return message


def test_a_nullable_column_declared_not_null_is_refused():
    own = output_struct(False)
    given = _replaced(own, "key", StructField("key", BinaryType(), nullable=False))
    _refused(BASE, given, "'key' is declared NOT NULL")


def test_other_columns_are_refused():
    own = output_struct(True)
    kafka_names = _replaced(own, "stream", StructField("topic", StringType()))
    _refused(HEADERS, kafka_names, "columns are .*'topic'")
    _refused(BASE, own, "columns are .*'headers'")  # headers without includeHeaders
    reordered = StructType([own["value"], own["key"], *own.fields[2:]])
    _refused(HEADERS, reordered, "columns are")
    _refused(HEADERS, StructType([own["value"]]), "columns are")


def test_other_types_are_refused():
    own = output_struct(False)
    as_long = _replaced(own, "timestamp", StructField("timestamp", LongType()))
    _refused(BASE, as_long, "'timestamp' is bigint, the source's is timestamp")


def test_a_nested_nullability_difference_is_refused_and_shown():
    strict_items = ArrayType(output_struct(True)["headers"].dataType.elementType, False)
    given = _replaced(output_struct(True), "headers", StructField("headers", strict_items))
    message = _refused(HEADERS, given, "'headers' is")
    assert '"containsNull": false' in message or '"containsNull":false' in message
