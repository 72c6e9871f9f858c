"""The ingest clock: the system clock reads real time; a manual clock satisfies the Protocol."""

from __future__ import annotations

import time

from ingest.clock import SYSTEM_CLOCK, Clock, SystemClock
from tests.unit.ingest.conftest import ManualClock


def test_system_clock_reads_wall_and_monotonic_time():
    before = time.time_ns() // 1_000_000
    now = SYSTEM_CLOCK.now_ms()
    after = time.time_ns() // 1_000_000
    assert before <= now <= after
    first = SYSTEM_CLOCK.monotonic_s()
    assert SYSTEM_CLOCK.monotonic_s() >= first
    assert isinstance(SYSTEM_CLOCK, SystemClock)


def test_manual_clock_moves_only_when_told(clock: ManualClock):
    as_protocol: Clock = clock  # type-checks structurally: the unit tests' clock is a Clock
    start = as_protocol.now_ms()
    assert as_protocol.now_ms() == start
    clock.advance(1500)
    assert as_protocol.now_ms() == start + 1500
    assert as_protocol.monotonic_s() == 1001.5
