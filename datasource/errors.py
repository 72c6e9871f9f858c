"""Typed errors of the ``liftlog`` Spark data source.

They refine :class:`spark_log.errors.LiftlogError`, so a Spark task failure shows the same
``code: message`` words a REST or NATS client sees; Spark prints the message of the Python
exception that failed the planner or the task, so every message names the stream, partition
and offsets involved.
"""

from __future__ import annotations

from spark_log.errors import LiftlogError


class DataSourceError(LiftlogError):
    """Base of every error the data source raises itself."""

    code = "datasource_error"


class InvalidOptionError(DataSourceError):
    """An option is unknown, missing or malformed (checked before any work is planned)."""

    code = "invalid_option"


class DataLossError(DataSourceError):
    """Records a query asked for are gone: below the log start with no lake holding them, or
    the partition's offsets went backwards (stream re-created, unclean election). Raised only
    with ``failOnDataLoss=true``; otherwise the reader skips to what still exists."""

    code = "data_loss"


class LakeReadError(DataSourceError):
    """The stream's Delta table or one of its Parquet files could not be read."""

    code = "lake_read_failed"


class CorruptRecordsError(DataSourceError):
    """Rows from the lake or the tail lack a field every record has (a null offset, value,
    timestamp or subject): the files or the fetch answer are damaged, and Spark would read the
    null as garbage in a column it was told cannot be null."""

    code = "corrupt_records"


class TailReadError(DataSourceError):
    """The partition leader's records could not be fetched within the bounded retries."""

    code = "tail_read_failed"


class PublishError(DataSourceError):
    """The sink could not publish rows with acks=all (the task fails; Spark may retry it)."""

    code = "publish_failed"


class SchemaError(DataSourceError):
    """The DataFrame written to the sink lacks ``value`` or has a column of the wrong type."""

    code = "invalid_schema"


class SchemaChangedError(DataSourceError):
    """A bound stream's values cannot be given the columns a query has: the subject's schema
    changed in a way the query's columns cannot follow (a streaming query restarted after a
    new version widened them), or its versions have no typed layout at all."""

    code = "schema_changed"
