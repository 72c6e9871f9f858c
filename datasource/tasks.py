"""The unit of work of one Spark task: an offset range of one partition, and where to read it.

A task reads either from the lake (Parquet files the planner chose from one Delta snapshot)
or from the partition leader's log (the tail above the lake offset). Both kinds are plain
picklable values that carry everything an executor needs, ``ReadSettings`` included: Spark
pickles the reader for the executors before it asks for the partitions (and a streaming
reader only once per query), so state a reader sets while planning never reaches ``read()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyspark.sql.datasource import InputPartition

from datasource.row_filter import RowFilter
from spark_log.client.credentials import ClientCredentials
from spark_log.lake.storage import LakeStorage

if TYPE_CHECKING:
    from datasource.typed_plan import TypedRead

LAKE = "lake"
TAIL = "tail"


@dataclass(frozen=True)
class ReadSettings:
    """What every task of one read shares."""

    servers: str
    stream: str
    include_headers: bool
    fail_on_data_loss: bool
    lake_uri: str | None
    """The Delta table as the executors see it (None: no lake)."""
    rows: RowFilter = field(default_factory=RowFilter)
    lake_options: tuple[tuple[str, str], ...] = ()
    """The lake's object-store options (``lake.<NAME>`` reader options)."""
    credentials: ClientCredentials = field(default_factory=ClientCredentials)
    """What the tasks present to the nodes (the token stays out of ``repr``)."""
    encrypted: bool = False
    """The stream encrypts values at rest: lake tasks decrypt them (datasource.lake_keys)."""
    typed: TypedRead | None = None
    """A typed read's layout (datasource.typed_plan); None: Kafka's binary columns."""
    typed_lake_columns: tuple[str, ...] = ()
    """A binary read of a typed lake table: the typed columns its rows' values are serialised
    from again (datasource.typed_binary)."""

    @property
    def lake_storage(self) -> LakeStorage | None:
        """How the executors reach the lake's files (None: no lake)."""
        if self.lake_uri is None:
            return None
        return LakeStorage(self.lake_uri, dict(self.lake_options))


@dataclass
class ReadTask(InputPartition):
    """Offsets ``[start, end)`` of ``partition`` from the lake (``files``) or the tail."""

    settings: ReadSettings
    partition: int
    start: int
    end: int
    source: str
    files: tuple[str, ...] = ()
    leader_url: str | None = None

    @property
    def records(self) -> int:
        """Offsets covered (records, unless compaction removed some from the lake)."""
        return self.end - self.start
