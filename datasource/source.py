"""The ``liftlog`` data source: the one class Spark instantiates (``format("liftlog")``).

It only parses options and hands out readers and writers; the modules behind them are imported
when Spark asks for them, so loading the class (which Spark's lookup does for every
``pyspark_*`` module, and which one failing import would break for all of them) stays cheap.
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from datasource.errors import InvalidOptionError
from datasource.options import (
    batch_options,
    include_headers,
    sink_options,
    stream_options,
)

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
        if options.filter_pushdown:
            return LiftlogPushdownBatchReader(options)
        return LiftlogBatchReader(options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        from datasource.stream_reader import LiftlogStreamReader

        return LiftlogStreamReader(stream_options(self.options))

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


def _refuse_overwrite(overwrite: bool) -> None:
    if overwrite:
        raise InvalidOptionError(
            "a stream is append-only: write with .mode('append') (or outputMode('append'))"
        )
