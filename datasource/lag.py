"""Records-behind lag of a ``liftlog`` streaming query, from its progress.

Spark 4.3's Python sources cannot publish custom source metrics, but every progress carries the
source's ``latestOffset`` (the heads ``reportLatestOffset`` saw) beside its ``endOffset`` (where
the batch stopped), both ``{"<stream>": {"<p>": n}}``: their difference is how many committed
records the query has not processed yet, per partition.

    spark.streams.addListener(RecordsBehindListener())   # logs and keeps the last lag
    records_behind(query.lastProgress["sources"][0])     # or compute it from any progress
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping

from pyspark.sql.streaming.listener import (
    QueryIdleEvent,
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
    StreamingQueryListener,
)

log = logging.getLogger("liftlog.lag")

Lag = dict[str, dict[int, int]]
"""Records behind per stream and partition."""


def records_behind(source: object) -> Lag | None:
    """Per stream and partition, committed records not yet processed; None when the source's
    progress has no liftlog offsets (another source, or no batch yet). ``source`` is one
    source of a progress: a dict (``lastProgress``), a ``SourceProgress`` or any object with
    ``latestOffset`` and ``endOffset`` attributes."""
    latest = _offsets(_field(source, "latestOffset"))
    end = _offsets(_field(source, "endOffset"))
    if latest is None or end is None:
        return None
    lag: Lag = {}
    for stream, heads in latest.items():
        done = end.get(stream, {})
        lag[stream] = {p: max(0, head - done.get(p, 0)) for p, head in heads.items()}
    return lag


def total_records_behind(source: object) -> int | None:
    lag = records_behind(source)
    return None if lag is None else sum(sum(parts.values()) for parts in lag.values())


class RecordsBehindListener(StreamingQueryListener):
    """Keeps (and logs, or hands to ``on_lag``) every liftlog source's lag after each batch.

    ``latest`` maps a query id to the lag of its last progress (kept after the query ends)."""

    def __init__(self, on_lag: Callable[[str, Lag], None] | None = None) -> None:
        self.on_lag = on_lag
        self.latest: dict[str, Lag] = {}

    def onQueryStarted(self, event: QueryStartedEvent) -> None:  # noqa: N802 - Spark's name
        """Nothing to do until a batch reports progress."""

    def onQueryProgress(self, event: QueryProgressEvent) -> None:  # noqa: N802
        progress = event.progress
        for source in progress.sources:
            lag = records_behind(source)
            if lag is None:
                continue
            query = str(progress.id)
            self.latest[query] = lag
            log.info("query %s: records behind %s", query, lag)
            if self.on_lag is not None:
                self.on_lag(query, lag)

    def onQueryIdle(self, event: QueryIdleEvent) -> None:  # noqa: N802
        """Idle queries report no new offsets."""

    def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:  # noqa: N802
        """The last lag stays readable (an AvailableNow run ends right after its batches)."""


def _field(source: object, name: str) -> object:
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def _offsets(value: object) -> dict[str, dict[int, int]] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, dict):
        return None
    parsed: dict[str, dict[int, int]] = {}
    for stream, parts in value.items():
        if stream.startswith("$"):
            continue  # not a stream: a typed query's schema record (datasource.typed_checkpoint)
        if not isinstance(parts, dict):
            return None
        try:
            parsed[stream] = {int(p): int(n) for p, n in parts.items()}
        except (TypeError, ValueError):
            return None
    return parsed
