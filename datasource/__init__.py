"""PySpark's ``liftlog`` data source: batch and streaming reads, and a sink.

``spark.read.format("liftlog")`` works as soon as the package is installed (Spark finds the
``pyspark_liftlog`` module); elsewhere one line registers it::

    from datasource import LiftlogDataSource
    spark.dataSource.register(LiftlogDataSource)

The session's ``spark.liftlog.lake.<NAME>`` conf reaches a read through
``.options(**lake_reader_options(spark))``. See docs/spark.md for options, columns and
semantics.
"""

from datasource.session_conf import lake_reader_options
from datasource.source import SOURCE_NAME, LiftlogDataSource

__all__ = ["SOURCE_NAME", "LiftlogDataSource", "lake_reader_options"]
