"""The leader's tail cache answers only from whole cached batches, never past what was added."""

from __future__ import annotations

from ingest.replication.tail_cache import TailCache
from spark_log.log.batch import build_record_batch, encode_batch, iter_batches


def _batch(base: int, count: int, size: int = 10) -> bytes:
    rb = build_record_batch(
        [1_000] * count, [None] * count, [b"v" * size] * count, [None] * count, ["s"] * count
    )
    return encode_batch(base, 0, rb)


def _bases(data: bytes) -> list[int]:
    return [header.base_offset for header, _view in iter_batches(data, verify=True)]


def test_reads_from_a_batch_boundary_to_the_end() -> None:
    cache = TailCache()
    cache.add([_batch(0, 3), _batch(3, 2)])
    cache.add([_batch(5, 4)])
    assert _bases(cache.read(3, 1 << 20) or b"") == [3, 5]
    assert _bases(cache.read(0, 1 << 20) or b"") == [0, 3, 5]


def test_misses_inside_a_batch_before_the_cache_and_at_the_end() -> None:
    cache = TailCache()
    cache.add([_batch(10, 3), _batch(13, 2)])
    assert cache.read(11, 1 << 20) is None  # mid-batch: the log reader handles it
    assert cache.read(9, 1 << 20) is None
    assert cache.read(15, 1 << 20) is None  # the log end: nothing to send
    assert TailCache().read(0, 1 << 20) is None


def test_max_bytes_keeps_at_least_one_batch() -> None:
    first, second = _batch(0, 3), _batch(3, 3)
    cache = TailCache()
    cache.add([first, second])
    assert cache.read(0, 1) == first
    assert cache.read(0, len(first) + len(second)) == first + second


def test_evicts_oldest_beyond_its_budget_and_restarts_on_a_gap() -> None:
    batches = [_batch(i * 2, 2, size=100) for i in range(10)]
    cache = TailCache(max_bytes=3 * len(batches[0]))
    cache.add(batches)
    assert cache.read(0, 1 << 20) is None
    assert _bases(cache.read(14, 1 << 20) or b"") == [14, 16, 18]
    cache.add([_batch(40, 1)])  # not contiguous (a new leadership's log): start over
    assert cache.read(18, 1 << 20) is None
    assert _bases(cache.read(40, 1 << 20) or b"") == [40]
    cache.clear()
    assert cache.read(40, 1 << 20) is None


def test_trim_drops_only_batches_every_follower_holds() -> None:
    cache = TailCache()
    cache.add([_batch(0, 3), _batch(3, 3), _batch(6, 3)])
    cache.trim_below(4)  # inside the second batch: it stays
    assert cache.read(0, 1 << 20) is None
    assert _bases(cache.read(3, 1 << 20) or b"") == [3, 6]
    cache.trim_below(9)
    assert cache.read(6, 1 << 20) is None
