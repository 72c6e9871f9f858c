"""Fuzzing recovery: a crashed log whose segment bytes were damaged, cut or extended reopens
without crashing, ends at the last good batch before the damage, and never serves a record
that is not the one written at its offset."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_log.errors import CorruptRecordError
from spark_log.log import PartitionLog, records_from_batches
from spark_log.log.layout import CLEAN_SHUTDOWN_FILE, RECOVERY_POINT_FILE
from tests.support.fuzz_profiles import fuzz_settings

from .conftest import make_batch, tiny_config, value_of

pytestmark = pytest.mark.fuzz

CONFIG = tiny_config(segment_bytes=4096, index_interval_bytes=256)
BATCHES = 12
PER_BATCH = 3

Damage = tuple[str, int, int]


def _damage() -> st.SearchStrategy[Damage]:
    """(kind, where as a fraction of the file in 1/1000, amount)."""
    return st.tuples(
        st.sampled_from(["flip", "truncate", "append", "zero"]),
        st.integers(0, 999),
        st.integers(1, 255),
    )


@given(st.lists(_damage(), min_size=1, max_size=3), st.booleans())
@fuzz_settings(quick_examples=60)
def test_damaged_segments_recover_to_good_records_only(damages, forget_recovery_point):
    with tempfile.TemporaryDirectory(prefix="liftlog-fuzz-") as root:
        directory = _crashed_log(Path(root))
        if forget_recovery_point:  # rescan everything, as after a crash before any flush
            (directory / RECOVERY_POINT_FILE).unlink(missing_ok=True)
        segments = sorted(directory.glob("*.log"))
        for i, (kind, where, amount) in enumerate(damages):
            _apply(segments[(where + i) % len(segments)], kind, where, amount)
        log = PartitionLog.open(directory, CONFIG)
        try:
            _check_served_records(log)
            log.append(make_batch(log.log_end_offset, 2))  # and it takes writes again
            assert log.log_end_offset >= 2
        finally:
            log.close()


def _crashed_log(root: Path) -> Path:
    live = root / "live"
    log = PartitionLog.open(live, CONFIG)
    for _ in range(BATCHES):
        log.append(make_batch(log.log_end_offset, PER_BATCH, value_size=60))
    log.flush()
    image = root / "image"
    shutil.copytree(live, image)
    log.close()
    (image / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)
    return image


def _apply(path: Path, kind: str, where: int, amount: int) -> None:
    data = bytearray(path.read_bytes())
    position = len(data) * where // 1000
    if kind == "flip" and data:
        data[position] ^= amount
    elif kind == "zero":
        data[position : position + amount] = bytes(len(data[position : position + amount]))
    elif kind == "truncate":
        del data[position:]
    else:
        data[position:position] = bytes([amount]) * amount
    path.write_bytes(bytes(data))


def _check_served_records(log: PartitionLog) -> None:
    """Each offset reads back as the value written there, or the read refuses (a damaged
    segment below the recovery point is adopted unscanned, and its CRC catches the damage)."""
    for offset in range(log.log_start_offset, log.log_end_offset):
        try:
            data = log.read(offset, 1 << 20)
            records = records_from_batches(data, offset, log.log_end_offset, 1)
        except CorruptRecordError:
            continue
        assert [r.offset for r in records] == [offset]
        assert records[0].value.rstrip(b"x") == value_of(offset)
