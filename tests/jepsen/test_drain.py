"""The drain on logs written with the storage code: every record, the HW, the epochs, and the
original directory left exactly as the node left it."""

from __future__ import annotations

from pathlib import Path

from spark_log.config import LogConfig
from spark_log.log import PartitionLog, build_record_batch, encode_batch
from spark_log.log.layout import CLEAN_SHUTDOWN_FILE
from tests.support.jepsen.drain import drain, stream_dir

STREAM = "orders"


def _write(directory: Path, batches: list[tuple[int, list[bytes]]], hw: int) -> None:
    """Append (epoch, values) batches, set the HW and close cleanly, as a node would."""
    with PartitionLog.open(directory, LogConfig()) as log:
        for epoch, values in batches:
            n = len(values)
            rows = build_record_batch([1] * n, [None] * n, values, [None] * n, ["s"] * n)
            log.append(encode_batch(log.log_end_offset, epoch, rows))
        log.set_high_watermark(hw)


def test_drain_reads_every_replica_with_its_hw_and_epochs(tmp_path: Path) -> None:
    partition = tmp_path / "b1" / "streams" / f"{STREAM}@200" / "0"
    _write(partition, [(0, [b"w0-0", b"w0-1"]), (2, [b"w1-0"])], hw=2)
    _write(tmp_path / "b1" / "streams" / f"{STREAM}@100" / "0", [(0, [b"old"])], hw=1)
    _write(tmp_path / "b2" / "streams" / f"{STREAM}@200" / "1", [(0, [b"w2-0"])], hw=1)
    before = sorted(p.name for p in partition.iterdir())

    drained = drain([(1, tmp_path / "b1"), (2, tmp_path / "b2"), (3, tmp_path / "b3")], STREAM)

    one = drained[1][0]
    assert one.records == ((0, b"w0-0"), (1, b"w0-1"), (2, b"w1-0"))
    assert (one.log_start_offset, one.log_end_offset, one.high_watermark) == (0, 3, 2)
    assert one.checkpointed_high_watermark == 2
    assert one.epochs == ((0, 0), (2, 2))
    assert one.clean_shutdown
    assert drained[2][1].records == ((0, b"w2-0"),)
    assert {b: sorted(p) for b, p in drained.items()} == {1: [0], 2: [1], 3: []}
    # the newest incarnation is drained, and the original is untouched (marker still there)
    assert stream_dir(tmp_path / "b1", STREAM) == partition.parent
    assert sorted(p.name for p in partition.iterdir()) == before
    assert (partition / CLEAN_SHUTDOWN_FILE).exists()
