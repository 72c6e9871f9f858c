"""Stateful property test: random operation sequences against a plain-Python model of the log.

Tiny segments (1 KiB) make almost every append roll, so reads, truncations, retention and
recovery constantly cross segment boundaries. After every step the log's offsets, HW and
epoch cache must equal the model's; reads, timestamp lookups and epoch lookups are checked
against brute force over the model.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from spark_log.log import PartitionLog, iter_batches, records_from_batches
from spark_log.log.retention import RetentionLimits, SegmentStats

from .conftest import BASE_TS, Clock, make_batch, tiny_config, value_of
from .test_epoch_cache import model_end_offset
from .test_retention import model as retention_model


@dataclass
class ModelBatch:
    base: int
    count: int
    epoch: int
    timestamps: list[int]
    size: int

    @property
    def next(self) -> int:
        return self.base + self.count


@dataclass
class Model:
    log_start: int = 0
    batches: list[ModelBatch] = field(default_factory=list)
    hw: int = 0
    checkpointed_hw: int = 0
    epochs: list[tuple[int, int]] = field(default_factory=list)

    @property
    def leo(self) -> int:
        return self.batches[-1].next if self.batches else self.log_start

    @property
    def latest_epoch(self) -> int:
        return self.epochs[-1][0] if self.epochs else 0

    def timestamps(self) -> dict[int, int]:
        return {b.base + i: ts for b in self.batches for i, ts in enumerate(b.timestamps)}

    def batch_index(self, offset: int) -> int:
        return next(i for i, b in enumerate(self.batches) if b.next > offset)

    def append(self, batch: ModelBatch) -> None:
        if not self.epochs or batch.epoch > self.epochs[-1][0]:
            self.epochs = [e for e in self.epochs if e[1] < batch.base] + [
                (batch.epoch, batch.base)
            ]
        self.batches.append(batch)

    def cut(self, offset: int) -> None:
        """Drop batches at/after ``offset`` (a batch boundary)."""
        self.batches = [b for b in self.batches if b.base < offset]
        self.epochs = [e for e in self.epochs if e[1] < offset]
        self.hw = min(self.hw, self.leo)
        self.checkpointed_hw = min(self.checkpointed_hw, self.hw)

    def start_at(self, offset: int) -> None:
        self.log_start = offset
        self.batches = []
        self.epochs = []
        self.hw = offset
        self.checkpointed_hw = min(self.checkpointed_hw, offset)

    def drop_before(self, offset: int) -> None:
        self.log_start = offset
        self.batches = [b for b in self.batches if b.base >= offset]
        below = [e for e in self.epochs if e[1] <= offset]
        if below:
            self.epochs = [(below[-1][0], offset)] + [e for e in self.epochs if e[1] > offset]

    def after_restart(self) -> None:
        self.epochs = [e for e in self.epochs if e[1] < self.leo]
        self.drop_before(self.log_start)
        self.hw = min(max(self.checkpointed_hw, self.log_start), self.leo)
        self.checkpointed_hw = min(self.checkpointed_hw, self.hw)


class PartitionLogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="liftlog-prop-"))
        self.generation = 0
        self.clock = Clock()
        self.config = tiny_config()
        self.log = PartitionLog.open(self._next_dir(), self.config, now_ms=self.clock)
        self.model = Model()
        self.next_ts = BASE_TS

    def _next_dir(self) -> Path:
        self.generation += 1
        return self.root / f"gen{self.generation}"

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)

    # ------------------------------------------------------------------ writes

    def _new_batch(
        self, count: int, epoch_bump: int, value_size: int, ts_jitter: int
    ) -> tuple[bytes, ModelBatch]:
        base = self.model.leo
        epoch = self.model.latest_epoch + epoch_bump
        self.next_ts += 50
        timestamps = [self.next_ts + ts_jitter * (i % 2) - 30 * i for i in range(count)]
        data = make_batch(base, count, epoch=epoch, ts=timestamps, value_size=value_size)
        return data, ModelBatch(base, count, epoch, timestamps, len(data))

    @rule(
        count=st.integers(1, 6),
        epoch_bump=st.sampled_from([0, 0, 0, 1, 2]),
        value_size=st.integers(0, 400),
        ts_jitter=st.integers(-500, 500),
    )
    def append(self, count: int, epoch_bump: int, value_size: int, ts_jitter: int) -> None:
        data, batch = self._new_batch(count, epoch_bump, value_size, ts_jitter)
        header = self.log.append(data)
        assert header.base_offset == batch.base
        self.model.append(batch)

    @rule(sizes=st.lists(st.integers(1, 4), min_size=2, max_size=5), value_size=st.integers(0, 300))
    def append_many(self, sizes: list[int], value_size: int) -> None:
        pending = []
        for count in sizes:
            data, batch = self._new_batch(count, 0, value_size, 0)
            self.model.append(batch)
            pending.append(data)
        self.log.append_many(pending)

    @rule(data=st.data())
    def truncate_to(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(0, self.model.leo + 2))
        self.log.truncate_to(offset)
        if offset >= self.model.leo:
            return
        if offset < self.model.log_start:
            self.model.start_at(offset)
            return
        self.model.cut(self.model.batches[self.model.batch_index(offset)].base)

    @rule(offset=st.integers(0, 200))
    def truncate_fully(self, offset: int) -> None:
        self.log.truncate_fully_and_start_at(offset)
        self.model.start_at(offset)

    @rule(data=st.data())
    def set_high_watermark(self, data: st.DataObject) -> None:
        hw = data.draw(st.integers(0, self.model.leo + 3))
        self.log.set_high_watermark(hw)
        self.model.hw = max(self.model.hw, min(max(hw, self.model.log_start), self.model.leo))

    @rule()
    def checkpoint_high_watermark(self) -> None:
        self.log.checkpoint_high_watermark()
        self.model.checkpointed_hw = self.model.hw

    @rule()
    def flush(self) -> None:
        self.log.flush()
        assert self.log.flushed_offset == self.model.leo

    @rule(
        kind=st.sampled_from(["ms", "bytes", "messages"]),
        fraction=st.floats(0, 1.2),
        lake=st.none() | st.integers(0, 300),
        commit_all=st.booleans(),
    )
    def retention(self, kind: str, fraction: float, lake: int | None, commit_all: bool) -> None:
        if commit_all:
            self.log.set_high_watermark(self.model.leo)
            self.model.hw = self.model.leo
        self.clock.now_ms = self.next_ts
        stats = self._segment_stats()
        scale = {
            "ms": 50 * len(self.model.batches),
            "bytes": sum(s.size_bytes for s in stats),
            "messages": self.model.leo - self.model.log_start,
        }[kind]
        limits = RetentionLimits(**{f"retention_{kind}": int(fraction * scale)})
        expected = retention_model(stats, limits, self.clock.now_ms, self.model.hw, lake)
        deleted = self.log.delete_old_segments(
            retention_ms=limits.retention_ms,
            retention_bytes=limits.retention_bytes,
            retention_messages=limits.retention_messages,
            max_deletable_offset=lake,
        )
        event(f"retention deleted {min(deleted, 2)}+ segments")
        assert deleted == expected
        if deleted:
            new_start = stats[deleted].base_offset
            assert new_start <= self.model.hw and (lake is None or new_start <= lake)
            self.model.drop_before(new_start)

    def _segment_stats(self) -> list[SegmentStats]:
        """Segments as the directory shows them, timestamps from the model."""
        bases = sorted(int(p.name[:20]) for p in self.log.directory.glob("*.log"))
        ends = [*bases[1:], self.model.leo]
        timestamps = self.model.timestamps()
        return [
            SegmentStats(
                base,
                end,
                os.path.getsize(self.log.directory / f"{base:020d}.log"),
                max((timestamps[o] for o in range(base, end)), default=-1),
            )
            for base, end in zip(bases, ends, strict=True)
        ]

    # ------------------------------------------------------------------ restarts

    @rule()
    def close_and_reopen(self) -> None:
        self.log.close()
        self.model.checkpointed_hw = self.model.hw
        self.log = PartitionLog.open(self.log.directory, self.config, now_ms=self.clock)
        self.model.after_restart()

    @rule(damage=st.sampled_from(["none", "torn", "flip", "garbage"]), data=st.data())
    def crash_and_recover(self, damage: str, data: st.DataObject) -> None:
        """Restart from a copy of the directory taken while the log was open (a crash),
        optionally damaging the tail of the last segment first."""
        image = self._next_dir()
        shutil.copytree(self.log.directory, image)
        last = max(image.glob("*.log"))
        last_base = int(last.name[:20])
        tail = [b for b in self.model.batches if b.base >= last_base]
        if damage != "none" and tail:
            victim = tail[-1]
            size = os.path.getsize(last)
            with open(last, "r+b") as f:
                if damage == "torn":
                    f.truncate(size - data.draw(st.integers(1, victim.size - 1)))
                elif damage == "flip":
                    f.seek(size - data.draw(st.integers(1, victim.size)))
                    byte = f.read(1)
                    f.seek(-1, os.SEEK_CUR)
                    f.write(bytes([byte[0] ^ 0x5A]))
            if damage == "garbage":
                with open(last, "ab") as f:
                    f.write(random.Random(size).randbytes(data.draw(st.integers(1, 60))))
            else:
                self.model.cut(victim.base)
        self.log.close()
        self.log = PartitionLog.open(image, self.config, now_ms=self.clock)
        self.model.after_restart()

    # ------------------------------------------------------------------ reads

    @precondition(lambda self: self.model.leo > self.model.log_start)
    @rule(data=st.data(), max_bytes=st.integers(0, 4000), use_hw=st.booleans())
    def read(self, data: st.DataObject, max_bytes: int, use_hw: bool) -> None:
        model = self.model
        start = data.draw(st.integers(model.log_start, model.leo))
        upper = model.hw if use_hw else None
        got = self.log.read(start, max_bytes, upper)
        bound = model.leo if upper is None else min(upper, model.leo)
        if start >= bound:
            assert got == b""
            return
        headers = [h for h, _ in iter_batches(got)]
        first = model.batch_index(start)
        expected = model.batches[first : first + len(headers)]
        assert [h.base_offset for h in headers] == [b.base for b in expected]
        assert all(h.base_offset < bound for h in headers)
        assert len(headers) == 1 or len(got) <= max_bytes
        following = model.batches[first + len(headers) : first + len(headers) + 1]
        if following and following[0].base < bound:
            assert len(got) + following[0].size > max_bytes  # the read was not cut short
        self._check_records(got, start, bound)

    def _check_records(self, data: bytes, start: int, bound: int) -> None:
        timestamps = self.model.timestamps()
        records = records_from_batches(data, start, bound, 1 << 20)
        assert records and records[0].offset == start
        for expected, record in enumerate(records, start):
            assert record.offset == expected
            assert record.value.rstrip(b"x") == value_of(expected)
            assert record.timestamp == timestamps[expected]

    @rule(delta=st.integers(-3000, 1000))
    def offset_for_timestamp(self, delta: int) -> None:
        target = self.next_ts + delta
        timestamps = self.model.timestamps()
        expected = min((o for o, ts in timestamps.items() if ts >= target), default=None)
        assert self.log.offset_for_timestamp(target) == expected

    @rule(epoch=st.integers(-1, 12))
    def end_offset_for_epoch(self, epoch: int) -> None:
        expected = model_end_offset(self.model.epochs, epoch, self.model.leo)
        assert self.log.end_offset_for_epoch(epoch) == expected

    # ------------------------------------------------------------------ invariants

    @invariant()
    def offsets_match_the_model(self) -> None:
        assert self.log.log_start_offset == self.model.log_start
        assert self.log.log_end_offset == self.model.leo
        assert self.log.high_watermark == self.model.hw
        assert self.log.epoch_entries == self.model.epochs
        assert self.log.size_bytes == sum(b.size for b in self.model.batches)


PartitionLogMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestPartitionLog = PartitionLogMachine.TestCase
