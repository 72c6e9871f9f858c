"""``spark.read.format("liftlog")``: the batch readers (plain, and with filter pushdown).

Two classes because Spark 4.3 refuses a reader that defines ``pushFilters`` unless
``spark.sql.python.filterPushdown.enabled`` is true, and a data source cannot read that setting:
the ``filterPushdown`` option picks the pushdown reader. That reader hands every filter back to
Spark (Spark still evaluates all of them) and only uses them to skip partitions, offsets, files
and rows, so its answers are the plain reader's answers, minus work. See docs/spark.md for
Spark 4.3's plan-caching bug that makes pushdown unsafe on a reused DataFrame.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition

from datasource.batch_plan import plan_batch
from datasource.options import BatchOptions
from datasource.pushdown import Pruning, pruning_from_filters
from datasource.task_read import as_schema, read_task
from datasource.tasks import ReadTask
from datasource.typed_plan import TypedRead


class LiftlogBatchReader(DataSourceReader):
    """Plans history from the lake plus the tail from the leaders; reads Arrow batches."""

    def __init__(
        self,
        options: BatchOptions,
        arrow_schema: pa.Schema | None = None,
        typed: TypedRead | None = None,
    ) -> None:
        self.options = options
        self.typed = typed
        """A typed read's columns (None: Kafka's)."""
        self.arrow_schema = arrow_schema
        """The Arrow form of a user schema that declares more columns nullable (None: ours)."""
        self.pruning: Pruning | None = None

    def partitions(self) -> Sequence[InputPartition]:
        return list(plan_batch(self.options, self.pruning, self.typed).tasks)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, ReadTask):  # no task at all arrives as InputPartition(None)
            yield from as_schema(read_task(partition), self.arrow_schema)


class LiftlogPushdownBatchReader(LiftlogBatchReader):
    """The batch reader with ``pushFilters`` (``filterPushdown=true``)."""

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:  # noqa: N802 - Spark's name
        """Learn what the filters let the read skip; return them all for Spark to evaluate."""
        self.pruning = pruning_from_filters(list(filters))
        return list(filters)
