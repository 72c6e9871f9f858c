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
    any_source_options,
    batch_options,
    include_headers,
    sink_options,
    stream_options,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from datasource.options import SinkOptions
    from datasource.typed_plan import TypedRead
    from spark_log.value_schema import ValueSchema

SOURCE_NAME = "liftlog"


class LiftlogDataSource(DataSource):
    """Reads a stream's history (lake) and tail (nodes); writes rows to a stream."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return self._source_struct(include_headers(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        from datasource.batch_reader import LiftlogBatchReader, LiftlogPushdownBatchReader

        options = batch_options(self.options)
        expected = self._source_struct(options.include_headers)
        arrow_schema = checked_read_schema(schema, options.include_headers, expected)
        typed = self._typed_read()
        if options.filter_pushdown:
            return LiftlogPushdownBatchReader(options, arrow_schema, typed)
        return LiftlogBatchReader(options, arrow_schema, typed)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        from datasource.stream_reader import LiftlogStreamReader

        options = stream_options(self.options)
        expected = self._source_struct(options.include_headers)
        arrow_schema = checked_read_schema(schema, options.include_headers, expected)
        return LiftlogStreamReader(options, arrow_schema, self._typed_read())

    def _source_struct(self, headers: bool) -> StructType:
        """Kafka's columns, or a typed read's (the lake table's)."""
        from datasource.schema import output_struct
        from datasource.typed_schema import typed_struct

        typed = self._typed_read()
        return output_struct(headers) if typed is None else typed_struct(typed, headers)

    def _typed_read(self) -> TypedRead | None:
        """The typed layout, planned once per DataFrame: ``schema()`` runs first and Spark
        pickles this object after it, so the readers see the same plan."""
        from datasource.typed_plan import plan_typed

        planned: tuple[TypedRead | None] | None = getattr(self, "_typed_planned", None)
        if planned is None:
            planned = (plan_typed(any_source_options(self.options)),)
            self._typed_planned = planned
        return planned[0]

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from datasource.sink import LiftlogArrowWriter

        _refuse_overwrite(overwrite)
        options = sink_options(self.options)
        return LiftlogArrowWriter(options, _checked_sink_binding(options, schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802
        from datasource.sink import LiftlogStreamArrowWriter

        _refuse_overwrite(overwrite)
        options = sink_options(self.options)
        return LiftlogStreamArrowWriter(options, _checked_sink_binding(options, schema))


def checked_read_schema(
    requested: StructType, include_headers: bool, expected: StructType | None = None
) -> pa.Schema | None:
    """The Arrow schema read batches must carry for ``requested``; None: the source's own.

    Spark hands ``reader``/``streamReader`` the user's ``.schema(...)`` (else ours) and then
    wants every batch in exactly its Arrow form, nullability included. The same columns with
    more of them nullable can be honoured by relabelling the batches; anything else is refused
    here, rather than as Spark's opaque DATA_SOURCE_RETURN_SCHEMA_MISMATCH in the first task.
    """
    from pyspark.sql.pandas.types import to_arrow_schema

    from datasource.schema import output_struct

    if expected is None:
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


def _checked_sink_binding(options: SinkOptions, schema: StructType) -> ValueSchema | None:
    """The binding typed rows are serialised with (None: a binary write, its ``value``
    column checked), refused before any task runs when the columns do not fit."""
    from datasource.sink_rows import check_sink_schema
    from datasource.sink_typed import sink_binding

    binding = sink_binding(options, schema)
    if binding is None:
        check_sink_schema(schema)
    return binding


def _refuse_overwrite(overwrite: bool) -> None:
    if overwrite:
        raise InvalidOptionError(
            "a stream is append-only: write with .mode('append') (or outputMode('append'))"
        )
