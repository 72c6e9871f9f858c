"""PySpark's ``liftlog`` data source: batch and streaming reads, and a sink.

``spark.read.format("liftlog")`` works as soon as the package is installed (Spark finds the
``pyspark_liftlog`` module); elsewhere one line registers it::

    from datasource import LiftlogDataSource
    spark.dataSource.register(LiftlogDataSource)

See docs/spark.md for options, columns and semantics.
"""

from datasource.source import SOURCE_NAME, LiftlogDataSource

__all__ = ["SOURCE_NAME", "LiftlogDataSource"]
