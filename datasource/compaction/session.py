"""The SparkSession ``liftlog compact`` runs on when no session exists yet.

A session already running in the process (a notebook's, a test's) is used as it is and left
running; one built here is stopped when the command ends.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from datasource.compaction.job import spark_settings

APP_NAME = "liftlog-compact"
SHUFFLE_PARTITIONS = 8
"""Small: the shuffles carry (partition, offset) pairs and the surviving rows only, and AQE
coalesces them further."""


def get_or_build_session(master: str) -> tuple[SparkSession, bool]:
    """The active session, or a new one on ``master``; the flag says whether it is new."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(APP_NAME)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS))
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in spark_settings().items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session, True
