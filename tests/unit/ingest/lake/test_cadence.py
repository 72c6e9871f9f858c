"""When a leader exports: by size of the unexported committed bytes, by age of the oldest
unexported record, and at once for a backlog it did not append itself."""

from __future__ import annotations

from ingest.lake.cadence import ExportCadence

MIN_BYTES = 1000
INTERVAL_MS = 10_000
T0 = 1_000_000


def cadence(tracked_from: int = 0) -> ExportCadence:
    return ExportCadence(MIN_BYTES, INTERVAL_MS, tracked_from)


def test_nothing_committed_is_never_due():
    c = cadence()
    c.appended(0, 10, 5000, T0)
    assert not c.due(0, 0, T0 + 10 * INTERVAL_MS)  # appended, not committed
    assert c.ms_until_due(0, 0, T0) is None


def test_due_by_size_of_the_committed_bytes():
    c = cadence()
    c.appended(0, 10, 600, T0)
    c.appended(10, 20, 600, T0)
    assert not c.due(0, 10, T0)  # only 600 committed bytes
    assert c.pending_bytes(0, 20) == 1200
    assert c.due(0, 20, T0)


def test_due_by_age_of_the_oldest_unexported_record():
    c = cadence()
    c.appended(0, 10, 10, T0)
    c.appended(10, 20, 10, T0 + 5000)
    assert not c.due(0, 20, T0 + INTERVAL_MS - 1)
    assert c.ms_until_due(0, 20, T0 + 4000) == INTERVAL_MS - 4000
    assert c.due(0, 20, T0 + INTERVAL_MS)
    c.exported(10)  # the first cycle is in the lake: the second one's age counts now
    assert not c.due(10, 20, T0 + INTERVAL_MS)
    assert c.ms_until_due(10, 20, T0 + INTERVAL_MS) == 5000


def test_a_backlog_appended_before_tracking_is_due_at_once():
    c = cadence(tracked_from=50)
    assert c.due(0, 10, T0)
    c.appended(50, 60, 1, T0)
    assert c.due(40, 60, T0)
    assert not c.due(50, 60, T0)


def test_a_gap_in_the_appends_restarts_tracking():
    c = cadence()
    c.appended(0, 10, 1, T0)
    c.appended(20, 30, 1, T0)  # 10..20 never seen (a truncation): unknown, hence due
    assert c.due(10, 30, T0)
    c.appended(30, 40, 1, T0)
    assert not c.due(30, 40, T0)


def test_appends_after_everything_was_exported_are_tracked():
    c = cadence()
    c.appended(0, 10, 1, T0)
    c.exported(10)
    c.appended(10, 20, 1, T0)
    assert not c.due(10, 20, T0)
    assert c.due(10, 20, T0 + INTERVAL_MS)


def test_bookkeeping_stays_bounded_and_exact_after_compaction():
    c = cadence()
    for i in range(5000):
        c.appended(i * 2, i * 2 + 2, 3, T0 + i)
    c.exported(8000)
    assert c.pending_bytes(8000, 10_000) == 3000
    assert c.due(8000, 10_000, T0)
    assert not c.due(8000, 8500, T0 + 4000)  # 750 bytes, oldest appended at T0 + 4000
