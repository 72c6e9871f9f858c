"""Rebuilding the ``Nats-Msg-Id`` window from a log: log in, window out.

The log is real (files under tmp_path), written with the leader's own Sequencer, so the test
reads back exactly the headers a leader stores; no NATS and no event loop are involved.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from ingest.produce.dedup import DedupWindow
from ingest.produce.dedup_rebuild import rebuild_dedup_window
from ingest.produce.request import ProduceRequest, normalize_batch_table
from ingest.produce.sequencer import Sequencer
from spark_log.config import LogConfig
from spark_log.log import PartitionLog
from spark_log.stream_spec import StreamSpec
from tests.unit.ingest.conftest import ManualClock

SPEC = StreamSpec(name="s", subject="s.in")
WINDOW_MS = 60_000
READ_BYTES = 1024 * 1024


def _single(value: bytes, msg_id: str | None = None) -> ProduceRequest:
    headers = {"Nats-Msg-Id": msg_id} if msg_id else None
    return ProduceRequest("s.in", None, "all", msg_id, None, value=value, headers=headers)


def _batch(values: list[bytes], msg_id: str) -> ProduceRequest:
    table = normalize_batch_table(pa.table({"value": values}), SPEC)
    return ProduceRequest("s.in", None, "all", msg_id, None, records=table)


@pytest.fixture
def log(tmp_path: Path) -> Iterator[PartitionLog]:
    opened = PartitionLog.open(tmp_path / "p0", LogConfig())
    yield opened
    opened.close()


def _write(log: PartitionLog, items: list[ProduceRequest], now_ms: int) -> None:
    """Append ``items`` as a leader would; the writer's own window is thrown away."""
    sequencer = Sequencer(SPEC, DedupWindow(WINDOW_MS, 100), _no_errors)
    cycle = sequencer.sequence(items, log.log_end_offset, leader_epoch=0, now=now_ms, isr_ok=True)
    log.append_many(cycle.batches)


def _no_errors(req: ProduceRequest, exc: Exception) -> None:
    raise AssertionError(f"unexpected refusal {exc!r}")


def test_an_empty_log_gives_an_empty_window(log: PartitionLog, clock: ManualClock):
    window = rebuild_dedup_window(log, WINDOW_MS, 100, clock.now_ms(), READ_BYTES)
    assert len(window) == 0


def test_ids_of_singles_and_batches_come_back_with_offsets_and_counts(log, clock):
    _write(
        log,
        [_single(b"a", "m1"), _single(b"plain"), _batch([b"x", b"y", b"z"], "b1")],
        clock.now_ms(),
    )
    _write(log, [_single(b"c", "m2")], clock.now_ms())  # a second cycle: a second stored batch
    window = rebuild_dedup_window(log, WINDOW_MS, 100, clock.now_ms(), READ_BYTES)
    assert len(window) == 3
    m1, b1, m2 = (window.lookup(i, clock.now_ms()) for i in ("m1", "b1", "m2"))
    assert m1 is not None and (m1.offset, m1.count) == (0, 1)
    assert b1 is not None and (b1.offset, b1.count) == (2, 3)
    assert m2 is not None and (m2.offset, m2.count) == (5, 1)


def test_ids_older_than_the_window_are_not_learned(log, clock):
    old = clock.now_ms()
    _write(log, [_single(b"old", "m-old")], old)
    clock.advance(WINDOW_MS + 1)
    _write(log, [_single(b"new", "m-new")], clock.now_ms())
    window = rebuild_dedup_window(log, WINDOW_MS, 100, clock.now_ms(), READ_BYTES)
    assert window.lookup("m-old", clock.now_ms()) is None
    entry = window.lookup("m-new", clock.now_ms())
    assert entry is not None and entry.offset == 1


def test_the_window_keeps_its_size_bound_newest_first(log, clock):
    _write(log, [_single(f"v{i}".encode(), f"m{i}") for i in range(5)], clock.now_ms())
    window = rebuild_dedup_window(log, WINDOW_MS, 2, clock.now_ms(), READ_BYTES)
    assert len(window) == 2
    assert window.lookup("m0", clock.now_ms()) is None
    assert window.lookup("m4", clock.now_ms()) is not None


def test_small_reads_still_cover_the_whole_log(log, clock):
    for i in range(4):
        _write(log, [_single(f"v{i}".encode(), f"m{i}")], clock.now_ms())
    window = rebuild_dedup_window(log, WINDOW_MS, 100, clock.now_ms(), read_bytes=1)
    assert len(window) == 4
