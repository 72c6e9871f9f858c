"""The leader-epoch cache against a brute-force model of OffsetsForLeaderEpoch."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_log.log.checkpoint import read_epoch_checkpoint
from spark_log.log.epoch_cache import LeaderEpochCache
from spark_log.log.errors import CheckpointError, LeaderEpochRegressionError


def model_end_offset(entries: list[tuple[int, int]], epoch: int, leo: int) -> tuple[int, int]:
    """Kafka's answer, written as directly as possible."""
    if epoch < 0 or not entries or epoch > entries[-1][0]:
        return -1, -1
    if epoch == entries[-1][0]:
        return epoch, leo
    higher = next(e for e in entries if e[0] > epoch)
    lower = [e for e in entries if e[0] <= epoch]
    return (lower[-1][0] if lower else epoch), higher[1]


@st.composite
def epoch_histories(draw: st.DrawFn) -> list[tuple[int, int]]:
    epochs = sorted(draw(st.sets(st.integers(0, 30), max_size=8)))
    starts = sorted(
        draw(
            st.lists(st.integers(0, 1000), min_size=len(epochs), max_size=len(epochs), unique=True)
        )
    )
    return list(zip(epochs, starts, strict=True))


@given(epoch_histories(), st.integers(-2, 35), st.integers(0, 2000))
@settings(max_examples=200, deadline=None)
def test_end_offset_for_matches_the_model(entries, epoch, extra):
    leo = (entries[-1][1] if entries else 0) + extra
    cache = LeaderEpochCache(Path("/nonexistent/never-written"), entries)
    assert cache.end_offset_for(epoch, leo) == model_end_offset(entries, epoch, leo)


def test_examples_from_kip_101(tmp_path: Path):
    cache = LeaderEpochCache(tmp_path / "c", [(1, 0), (3, 100), (6, 250)])
    assert cache.end_offset_for(6, 300) == (6, 300)
    assert cache.end_offset_for(3, 300) == (3, 250)
    assert cache.end_offset_for(4, 300) == (3, 250)  # largest epoch <= 4 is 3
    assert cache.end_offset_for(0, 300) == (0, 0)  # older than all: first start offset
    assert cache.end_offset_for(7, 300) == (-1, -1)
    assert LeaderEpochCache(tmp_path / "d", []).end_offset_for(0, 0) == (-1, -1)


def test_assign_persists_and_refuses_to_go_backwards(tmp_path: Path):
    path = tmp_path / "leader-epoch-checkpoint"
    cache = LeaderEpochCache(path, [])
    cache.assign(2, 0)
    cache.assign(2, 50)  # same epoch: no new entry
    cache.assign(5, 80)
    assert read_epoch_checkpoint(path) == [(2, 0), (5, 80)]
    assert path.read_text() == "0\n2\n2 0\n5 80\n"
    with pytest.raises(LeaderEpochRegressionError):
        cache.assign(4, 90)
    cache.assign(7, 80)  # same start as epoch 5: epoch 5 wrote nothing there
    assert cache.entries == [(2, 0), (7, 80)]


def test_truncate_from_end_and_start(tmp_path: Path):
    cache = LeaderEpochCache(tmp_path / "c", [(1, 0), (3, 100), (6, 250)])
    cache.truncate_from_start(150)
    assert cache.entries == [(3, 150), (6, 250)]
    cache.truncate_from_start(150)
    assert cache.entries == [(3, 150), (6, 250)]
    cache.truncate_from_end(250)
    assert cache.entries == [(3, 150)]
    assert LeaderEpochCache.load(tmp_path / "c").entries == [(3, 150)]  # type: ignore[union-attr]
    cache.clear()
    assert cache.latest_epoch is None


@pytest.mark.parametrize(
    "text",
    ["", "1\n0\n", "0\n2\n1 0\n", "0\n1\nx y\n", "0\n2\n3 0\n2 10\n", "0\n1\n-1 0\n"],
)
def test_corrupt_checkpoints_are_refused(tmp_path: Path, text: str):
    path = tmp_path / "c"
    path.write_text(text)
    with pytest.raises(CheckpointError):
        LeaderEpochCache.load(path)
