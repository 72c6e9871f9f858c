"""One real local Spark session for every data source test (import the ``spark`` fixture).

Starting Spark and its first Python data source lookup cost several seconds, so the session
is shared by the whole test run (and by any other module's fixture that uses getOrCreate).
``local[2,4]``: two worker threads, and a failed task is retried up to four times, as on a
cluster (the sink's idempotent-retry test needs a retry). Workers run this interpreter, so
they import the repository's ``pyspark_liftlog``.
"""

from __future__ import annotations

import os
import sys

import pytest
from pyspark.sql import SparkSession

from datasource.local_spark import local_session

SPARK_MASTER = "local[2,4]"


def _session() -> SparkSession:
    return local_session("liftlog-tests", SPARK_MASTER)


_cleanup_registered: list[bool] = []


@pytest.fixture
def spark(request: pytest.FixtureRequest) -> SparkSession:
    """The running session: started on first use, and started again if another module's
    fixture stopped it (getOrCreate replaces a stopped session); stopped when the run ends."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    if not _cleanup_registered:
        request.config.add_cleanup(_stop_active)
        _cleanup_registered.append(True)
    return _session()


def _stop_active() -> None:
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


def liftlog_reader(spark: SparkSession, api_url: str, stream: str, **options: object):
    """``spark.read.format("liftlog")`` with servers, stream and ``options`` set."""
    reader = spark.read.format("liftlog").option("servers", api_url).option("stream", stream)
    for name, value in options.items():
        reader = reader.option(name, str(value).lower() if isinstance(value, bool) else str(value))
    return reader.load()
