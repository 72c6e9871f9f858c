"""The ``liftlog`` data source: the one class Spark instantiates (``format("liftlog")``).

It only parses options and hands out readers and writers; the modules behind them are imported
when Spark asks for them, so loading the class (which Spark's lookup does for every
``pyspark_*`` module, and which one failing import would break for all of them) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructField, StructType

from datasource.errors import InvalidOptionError
from datasource.options import (
    batch_options,
    include_headers,
    sink_options,
    stream_options,
)

if TYPE_CHECKING:
    import pyarrow as pa

SOURCE_NAME = "liftlog"


class LiftlogDataSource(DataSource):
    """Reads a stream's history (lake) and tail (nodes); writes rows to a stream."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        from datasource.schema import output_struct

        return output_struct(include_headers(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        from datasource.batch_reader import LiftlogBatchReader, LiftlogPushdownBatchReader

        options = batch_options(self.options)
        arrow_schema = checked_read_schema(schema, options.include_headers)
        if options.filter_pushdown:
            return LiftlogPushdownBatchReader(options, arrow_schema)
        return LiftlogBatchReader(options, arrow_schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        from datasource.stream_reader import LiftlogStreamReader

        options = stream_options(self.options)
        return LiftlogStreamReader(options, checked_read_schema(schema, options.include_headers))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from datasource.sink import LiftlogArrowWriter
        from datasource.sink_rows import check_sink_schema

        _refuse_overwrite(overwrite)
        check_sink_schema(schema)
        return LiftlogArrowWriter(sink_options(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802
        from datasource.sink import LiftlogStreamArrowWriter
        from datasource.sink_rows import check_sink_schema

        _refuse_overwrite(overwrite)
        check_sink_schema(schema)
        return LiftlogStreamArrowWriter(sink_options(self.options))


def checked_read_schema(requested: StructType, include_headers: bool) -> pa.Schema | None:
    """The Arrow schema read batches must carry for ``requested``; None: the source's own.

    Spark hands ``reader``/``streamReader`` the user's ``.schema(...)`` (else ours) and then
    wants every batch in exactly its Arrow form, nullability included. The same columns with
    more of them nullable can be honoured by relabelling the batches; anything else is refused
    here, rather than as Spark's opaque DATA_SOURCE_RETURN_SCHEMA_MISMATCH in the first task.
    """
    from pyspark.sql.pandas.types import to_arrow_schema

    from datasource.schema import output_struct

    expected = output_struct(include_headers)
    if requested == expected:
        return None
    problem = _schema_problem(requested, expected)
    if problem is not None:
        nullable = ", ".join(f.name for f in expected.fields if f.nullable)
        raise InvalidOptionError(
            f"the schema given with .schema(...) does not fit the liftlog source: {problem}. "
            f"Drop .schema(...): the source declares its own, {expected.simpleString()} "
            f"(nullable: {nullable}); a given schema must have exactly these columns and types, "
            "and may only declare more of them nullable"
        )
    return to_arrow_schema(requested, timezone="UTC")


def _schema_problem(requested: StructType, expected: StructType) -> str | None:
    """Why batches in ``expected`` cannot be relabelled as ``requested`` (None: they can).

    Only a top-level column may be declared nullable where ours is not: a nested difference
    would need a real cast, and a column declared NOT NULL that can hold nulls would make Spark
    read garbage."""
    if requested.names != expected.names:
        return f"its columns are {requested.names}, the source's are {expected.names}"
    for asked, ours in zip(requested.fields, expected.fields, strict=True):
        if asked.dataType != ours.dataType:
            return _type_problem(asked, ours)
        if ours.nullable and not asked.nullable:
            return f"column {ours.name!r} is declared NOT NULL, but records may lack it"
    return None


def _type_problem(asked: StructField, ours: StructField) -> str:
    """The two types as SQL text, or as JSON when only their nested nullability differs (which
    the SQL text does not show)."""
    given, own = asked.dataType.simpleString(), ours.dataType.simpleString()
    if given == own:
        given, own = asked.dataType.json(), ours.dataType.json()
    return f"column {ours.name!r} is {given}, the source's is {own}"


def _refuse_overwrite(overwrite: bool) -> None:
    if overwrite:
        raise InvalidOptionError(
            "a stream is append-only: write with .mode('append') (or outputMode('append'))"
        )
