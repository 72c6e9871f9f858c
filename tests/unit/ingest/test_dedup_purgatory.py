"""The dedup window and the produce purgatory (pure logic)."""

from __future__ import annotations

from ingest.dedup import DedupWindow
from ingest.purgatory import PendingAck, Purgatory
from spark_log.errors import NotLeaderError


def test_dedup_window_expires_by_time_and_size():
    window = DedupWindow(window_ms=1000, max_ids=2)
    window.add("a", 0, 1, timestamp_ms=0)
    assert window.lookup("a", now_ms=1000).offset == 0
    assert window.lookup("a", now_ms=1001) is None
    window.add("b", 1, 1, 10)
    window.add("c", 2, 5, 20)
    assert window.lookup("a", 20) is None  # evicted by size
    assert window.lookup("c", 20).count == 5
    window.expire(now_ms=1015)
    assert len(window) == 1
    window.forget_from(2)
    assert len(window) == 0


def test_purgatory_releases_in_offset_order():
    done: list[int] = []
    failed: list[str] = []
    purgatory = Purgatory()
    for end in (1, 3, 7):
        purgatory.add(
            PendingAck(end, lambda e=end: done.append(e), lambda exc: failed.append(exc.code))
        )
    assert purgatory.release(3) == 2
    assert done == [1, 3]
    purgatory.fail_all(NotLeaderError("gone"))
    assert failed == ["not_leader"]
    assert len(purgatory) == 0
