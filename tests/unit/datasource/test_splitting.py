"""Tasks cover every segment exactly once; lake tasks follow file boundaries."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from datasource.lake_view import LakeFile, LakeView
from datasource.splitting import Segment, chunks, lake_tasks, split, task_size
from datasource.tasks import LAKE, TAIL, ReadSettings

SETTINGS = ReadSettings("http://a:1", "s", False, True, "/lake")


def lake_file(p: int, lo: int, hi: int, records: int | None = None) -> LakeFile:
    return LakeFile(f"/lake/{p}-{lo}", p, lo, hi - 1, None, None, records or hi - lo)


def covered(tasks) -> list[int]:
    return sorted(o for t in tasks for o in range(t.start, t.end))


def test_lake_below_the_lake_offset_tail_above():
    lake = LakeView("/lake", 3, {0: 100}, {0: (lake_file(0, 0, 60), lake_file(0, 60, 100))})
    tasks = split(SETTINGS, [Segment(0, 10, 150)], lake, {0: "http://leader"}, per_task=1000)
    assert [(t.source, t.start, t.end) for t in tasks] == [(LAKE, 10, 100), (TAIL, 100, 150)]
    assert tasks[0].files == ("/lake/0-0", "/lake/0-60")
    assert tasks[1].leader_url == "http://leader"


def test_files_are_grouped_whole_and_big_files_cut():
    files = [lake_file(0, 0, 40), lake_file(0, 40, 80), lake_file(0, 80, 300)]
    tasks = lake_tasks(SETTINGS, 0, 0, 300, files, per_task=100)
    assert [(t.start, t.end) for t in tasks] == [(0, 80), (80, 180), (180, 280), (280, 300)]
    assert tasks[0].files == ("/lake/0-0", "/lake/0-40")
    assert all(t.files == ("/lake/0-80",) for t in tasks[1:])


def test_ranges_no_file_holds_get_no_task():
    files = [lake_file(0, 0, 10), lake_file(0, 500, 510)]  # compaction emptied the middle
    tasks = lake_tasks(SETTINGS, 0, 0, 510, files, per_task=10)
    assert covered(tasks) == [o for t in tasks for o in range(t.start, t.end)]
    assert all(t.files for t in tasks)


@given(
    sizes=st.lists(st.integers(1, 50), min_size=1, max_size=8),
    start=st.integers(0, 40),
    span=st.integers(0, 400),
    per_task=st.integers(1, 120),
)
def test_lake_tasks_cover_the_range_exactly_once(sizes, start, span, per_task):
    files, lo = [], 0
    for size in sizes:
        files.append(lake_file(0, lo, lo + size))
        lo += size
    end = min(start + span, lo)
    tasks = lake_tasks(SETTINGS, 0, start, end, files, per_task)
    assert covered(tasks) == list(range(start, max(start, end)))


def test_chunks_and_min_partitions():
    assert chunks(5, 17, 5) == [(5, 10), (10, 15), (15, 17)]
    segments = [Segment(0, 0, 100), Segment(1, 0, 20)]
    assert task_size(segments, 1000, None) == 1000
    assert task_size(segments, 1000, 4) == 30
    assert task_size(segments, 10, 4) == 10
