"""A local SparkSession set up the way every Liftlog entry point wants it.

The workers must run this interpreter (the one with pyarrow and the ``liftlog`` source
installed), the UI and progress bars stay off, timestamps are shown in UTC like the lake's,
and shuffles stay small on a laptop-sized ``local[n]``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[2]"
DEFAULT_SHUFFLE_PARTITIONS = 2


def local_session(
    app_name: str,
    master: str = DEFAULT_MASTER,
    shuffle_partitions: int = DEFAULT_SHUFFLE_PARTITIONS,
    extra: Mapping[str, str] | None = None,
) -> SparkSession:
    """Get or create the session (an existing one is returned as it is, as Spark does)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
