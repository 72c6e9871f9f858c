"""Lake storage options from the Spark session conf: ``spark.liftlog.lake.<NAME>``.

Credentials and endpoints are a property of the environment a session runs in, not of a query:
they belong in ``spark-defaults.conf``, ``--conf`` or ``spark.conf.set`` once per session, not
in every ``.option(...)``. Names are those of ``spark_log.storage_options`` (case-insensitive),
checked against the same allowlist, so a misspelt key is an error rather than a silently
ignored one. Explicit options always win: a reader's ``lake.<NAME>`` option, a compaction's
``--lake-option`` or target options; then the session conf; then the standard ``AWS_*``
environment (a compaction's), then the credentials file's ``[lake]`` table.

Spark 4.3 hands a Python data source only the options given to the reader (the planner and
the tasks run in Python workers that cannot see the session), so the reader takes the
session's values through ``lake_reader_options(spark)``; the compaction job, which holds the
session, reads them itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from datasource.errors import InvalidOptionError
from spark_log.client.credentials_file import credentials_file_lake
from spark_log.errors import ConfigError
from spark_log.storage_options import checked_storage_options

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SESSION_LAKE_PREFIX = "spark.liftlog.lake."
"""``spark.conf.set("spark.liftlog.lake.aws_access_key_id", ...)``."""
READER_LAKE_PREFIX = "lake."
"""The reader's own prefix (``datasource.options.LAKE_OPTION_PREFIX``)."""


def lake_options_from_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """The ``spark.liftlog.lake.<NAME>`` entries of ``conf`` as storage options (lower-case
    names); InvalidOptionError naming an unsupported key."""
    found = {
        key[len(SESSION_LAKE_PREFIX) :]: value
        for key, value in conf.items()
        if key.lower().startswith(SESSION_LAKE_PREFIX)
    }
    try:
        return checked_storage_options(found, SESSION_LAKE_PREFIX.rstrip("."))
    except ConfigError as exc:
        raise InvalidOptionError(f"Spark session conf: {exc.message}") from exc


def session_lake_options(spark: SparkSession) -> dict[str, str]:
    """The session's ``spark.liftlog.lake.*`` conf as storage options (see the module doc)."""
    return lake_options_from_conf(spark.conf.getAll)


def lake_reader_options(spark: SparkSession, credentials_file: str | None = None) -> dict[str, str]:
    """The session's lake options over the credentials file's ``[lake]`` (``credentials_file``
    or ``LIFTLOG_CREDENTIALS_FILE``) as ``lake.<NAME>`` reader options, for
    ``spark.read.format("liftlog").options(**lake_reader_options(spark))``; an ``.option``
    given after it wins, as Spark's later options do."""
    options = {**credentials_file_lake(credentials_file), **session_lake_options(spark)}
    return {f"{READER_LAKE_PREFIX}{k}": v for k, v in options.items()}
