"""Spark's entry point for ``format("liftlog")``.

Spark 4.3 imports every installed top-level module named ``pyspark_*`` and registers its
``DefaultSource`` under ``DefaultSource.name()``. Keep this module a bare re-export: an import
error here would disable every auto-registered data source in the session, not only this one.
"""

from datasource.source import LiftlogDataSource as DefaultSource

__all__ = ["DefaultSource"]
