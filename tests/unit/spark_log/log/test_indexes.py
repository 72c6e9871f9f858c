"""Offset and time indexes: lookups, persistence and the sanity checks that gate trusting them."""

from __future__ import annotations

from pathlib import Path

from spark_log.log.offset_index import OffsetIndex
from spark_log.log.time_index import TimeIndex


def test_offset_index_lookup_is_a_floor_with_segment_start_fallback(tmp_path: Path):
    index = OffsetIndex(tmp_path / "x.index", 100)
    for offset, position in [(110, 500), (120, 1100), (135, 2000)]:
        index.append(offset, position)
    assert index.lookup(100) == (100, 0)
    assert index.lookup(109) == (100, 0)
    assert index.lookup(110) == (110, 500)
    assert index.lookup(134) == (120, 1100)
    assert index.lookup(10**9) == (135, 2000)


def test_offset_index_persists_relative_entries_and_reloads(tmp_path: Path):
    index = OffsetIndex(tmp_path / "x.index", 2**40)
    index.append(2**40 + 5, 100)
    index.persist(fsync=True)
    index.append(2**40 + 9, 300)
    index.persist(fsync=False)
    assert (tmp_path / "x.index").stat().st_size == 16
    loaded = OffsetIndex(tmp_path / "x.index", 2**40)
    assert loaded.load()
    assert list(loaded.keys) == [2**40 + 5, 2**40 + 9] and list(loaded.values) == [100, 300]
    assert loaded.is_sane(file_size=400, next_offset_bound=2**40 + 10)


def test_offset_index_truncation_rewrites_the_file(tmp_path: Path):
    index = OffsetIndex(tmp_path / "x.index", 0)
    for i in range(1, 6):
        index.append(i * 10, i * 100)
    index.persist(fsync=False)
    index.truncate_to(30)
    index.persist(fsync=False)
    assert (tmp_path / "x.index").stat().st_size == 16
    assert list(index.keys) == [10, 20]


def test_offset_index_sanity_rejects_bad_files(tmp_path: Path):
    path = tmp_path / "x.index"
    index = OffsetIndex(path, 0)
    assert not index.load()  # missing
    path.write_bytes(b"\x00" * 7)
    assert not index.load()  # not whole entries
    for entries, size, bound in [
        ([(5, 100), (4, 200)], 1000, None),  # offsets go backwards
        ([(5, 100), (6, 100)], 1000, None),  # positions do not increase
        ([(5, 100), (6, 2000)], 1000, None),  # position past the file
        ([(5, 100), (60, 200)], 1000, 50),  # offset past the next segment
        ([(0, 0)], 1000, None),  # the first batch is never indexed
    ]:
        bad = OffsetIndex(path, 0)
        for entry in entries:
            bad.append(*entry)
        bad.persist(fsync=False)
        assert bad.load()
        assert not bad.is_sane(size, bound), entries


def test_time_index_lookup_finds_the_last_entry_strictly_below(tmp_path: Path):
    index = TimeIndex(tmp_path / "x.timeindex", 0)
    for ts, offset in [(1000, 10), (2000, 20), (3000, 35)]:
        index.maybe_append(ts, offset)
    index.maybe_append(2500, 40)  # max did not grow: no entry
    assert len(index) == 3 and index.last_timestamp == 3000
    assert index.offset_before(1000) is None
    assert index.offset_before(1001) == 10
    assert index.offset_before(2000) == 10
    assert index.offset_before(10**15) == 35


def test_time_index_persist_load_and_sanity(tmp_path: Path):
    index = TimeIndex(tmp_path / "x.timeindex", 50)
    index.maybe_append(1000, 60)
    index.maybe_append(2000, 70)
    index.persist(fsync=True)
    loaded = TimeIndex(tmp_path / "x.timeindex", 50)
    assert loaded.load() and loaded.is_sane(next_offset_bound=80)
    assert not loaded.is_sane(next_offset_bound=70)
    loaded.truncate_to(70)
    assert list(loaded.keys) == [1000]
