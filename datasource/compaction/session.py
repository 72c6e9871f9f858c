"""The SparkSession ``liftlog compact`` runs on when no session exists yet.

A session already running in the process (a notebook's, a test's) is used as it is and left
running; one built here is stopped when the command ends.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from datasource.compaction.job import spark_settings
from datasource.local_spark import local_session

APP_NAME = "liftlog-compact"
SHUFFLE_PARTITIONS = 8
"""Small: the shuffles carry (partition, offset) pairs and the surviving rows only, and AQE
coalesces them further."""


def get_or_build_session(master: str) -> tuple[SparkSession, bool]:
    """The active session, or a new one on ``master``; the flag says whether it is new."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    session = local_session(APP_NAME, master, SHUFFLE_PARTITIONS, spark_settings())
    return session, True
