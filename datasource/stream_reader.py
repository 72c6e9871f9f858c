"""``spark.readStream.format("liftlog")``: micro-batches of a stream with Kafka's semantics.

Offsets are each partition's next offset, ``{"<stream>": {"<p>": n}}``: plain log positions,
valid whoever leads and whether the records sit in the log or already in the lake, so a query
restarted from its checkpoint continues at exactly the next record. Spark calls everything but
``read()`` in one long-lived Python process per query, on the driver, so the AvailableNow
target and the time of the last batch live on this object between calls; ``read()`` runs on
executors with the tasks' own copies of what it needs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from datasource.admission import cap_offsets, should_wait
from datasource.offsets import from_stream_offset, to_stream_offset
from datasource.options import StreamOptions
from datasource.stream_plan import (
    checked_available,
    head_offsets,
    initial_offsets,
    plan_micro_batch,
)
from datasource.task_read import as_schema, read_task
from datasource.tasks import ReadTask
from datasource.typed_checkpoint import check_started_schema, with_schema
from datasource.typed_plan import TypedRead
from spark_log.client.rest import RestClient
from spark_log.client.schema_registry import RegistryClient
from spark_log.json_types import JsonObject


class LiftlogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(
        self,
        options: StreamOptions,
        arrow_schema: pa.Schema | None = None,
        typed: TypedRead | None = None,
    ) -> None:
        self.options = options
        self.typed = typed
        """A typed read's columns, planned when the query started (None: Kafka's)."""
        self.arrow_schema = arrow_schema
        """The Arrow form of a user schema that declares more columns nullable (None: ours)."""
        self._target: dict[int, int] | None = None
        """AvailableNow: the heads when the query started; batches stop there."""
        self._latest: dict[int, int] | None = None
        """The heads seen by the last ``latestOffset`` (reported for lag)."""
        self._last_trigger_s: float | None = None
        """When a batch last ran (monotonic); None lets the first one run at once, as Kafka's."""

    def _rest(self) -> RestClient:
        return RestClient(self.options.servers, credentials=self.options.credentials)

    def _offset(self, offsets: dict[int, int]) -> dict[str, object]:
        """An offset to checkpoint: the partitions', and a typed query's schema versions."""
        return with_schema(to_stream_offset(self.options.stream, offsets), self.typed)

    def _check_schema(self, start: JsonObject) -> None:
        """A restarted typed query fails when its columns would change (typed_checkpoint)."""
        if self.typed is not None:
            registry = RegistryClient(self._rest())
            check_started_schema(self.options.stream, start, self.typed, registry)

    def initialOffset(self) -> dict[str, object]:  # noqa: N802 - Spark's name
        return self._offset(initial_offsets(self.options, self._rest()))

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        opts = self.options
        if opts.max_offsets_per_trigger is not None:
            return ReadMaxRows(opts.max_offsets_per_trigger)
        if opts.min_offsets_per_trigger is not None:
            return ReadMinRows(opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        heads = head_offsets(self.options, self._rest())
        self._target = {p: h for p, h in heads.items() if h is not None}

    def latestOffset(self, start: JsonObject, limit: ReadLimit) -> dict[str, object]:  # noqa: N802
        """The end of the next batch: the heads, capped by ``maxOffsetsPerTrigger``, held back
        below ``minOffsetsPerTrigger`` until ``maxTriggerDelay`` (not under AvailableNow)."""
        self._check_schema(start)
        opts = self.options
        begin = from_stream_offset(opts.stream, start)
        available = checked_available(opts, begin, head_offsets(opts, self._rest()))
        self._latest = dict(available)
        if self._target is not None:
            available = _capped_at_target(available, self._target, begin)
        end = cap_offsets(begin, available, self._cap(limit))
        pending = sum(end[p] - begin.get(p, 0) for p in end)
        now = time.monotonic()
        if self._holds_back(limit, pending, now):
            end = {p: begin.get(p, 0) for p in end}
        else:
            self._last_trigger_s = now  # Kafka's clock: restarts whenever a batch may run
        return self._offset(end)

    def _cap(self, limit: ReadLimit) -> int | None:
        """Records the batch may hold: Spark's ReadMaxRows, else none (ReadAllAvailable is
        Trigger.Once asking for everything)."""
        if isinstance(limit, ReadMaxRows):
            return limit.max_rows
        if isinstance(limit, ReadAllAvailable):
            return None
        return self.options.max_offsets_per_trigger

    def _holds_back(self, limit: ReadLimit, pending: int, now: float) -> bool:
        """minOffsetsPerTrigger + maxTriggerDelay; ignored under AvailableNow, which must
        drain to its target however few records are left."""
        if self._target is not None or isinstance(limit, ReadAllAvailable):
            return False
        opts = self.options
        waited = math.inf if self._last_trigger_s is None else now - self._last_trigger_s
        return should_wait(pending, opts.min_offsets_per_trigger, waited, opts.max_trigger_delay_s)

    def reportLatestOffset(self) -> dict[str, object] | None:  # noqa: N802
        """The heads last seen: ``latestOffset`` minus ``endOffset`` in the progress is the
        records-behind lag (see datasource.lag)."""
        if self._latest is None:
            return None
        return self._offset(self._latest)

    def partitions(self, start: JsonObject, end: JsonObject) -> Sequence[InputPartition]:
        self._check_schema(start)
        opts = self.options
        begin = from_stream_offset(opts.stream, start)
        finish = from_stream_offset(opts.stream, end)
        return list(plan_micro_batch(opts, self._rest(), begin, finish, self.typed))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, ReadTask):
            yield from as_schema(read_task(partition), self.arrow_schema)

    def commit(self, end: JsonObject) -> None:
        """Nothing to release: the source keeps no per-batch state (Spark checkpoints offsets)."""


def _capped_at_target(
    available: dict[int, int], target: dict[int, int], begin: dict[int, int]
) -> dict[int, int]:
    """AvailableNow: never past the heads seen when the run started (nor behind the start)."""
    return {p: min(a, max(target.get(p, a), begin.get(p, 0))) for p, a in available.items()}
