"""The dedup window and the produce purgatory (pure logic)."""

from __future__ import annotations

from ingest.produce.dedup import DedupWindow
from ingest.produce.purgatory import Purgatory
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
    done: list[str] = []
    failed: list[tuple[str, str]] = []
    purgatory: Purgatory[str] = Purgatory(
        done.append, lambda item, exc: failed.append((item, exc.code))
    )
    for end, item in ((1, "a"), (3, "b"), (7, "c")):
        purgatory.add(end, item)
    assert purgatory.release(3) == 2
    assert done == ["a", "b"]
    purgatory.fail_all(NotLeaderError("gone"))
    assert failed == [("c", "not_leader")]
    assert len(purgatory) == 0
