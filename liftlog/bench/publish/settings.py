"""The knobs of one run: every default a named constant, every count and wait bounded.

A full run (50,000 records, two sizes) has to stay within about five minutes on a 2-core
machine, and a smoke run (2,000 records) within a minute, so the durations derive from
``records`` rather than being fixed.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_log.errors import InvalidRequestError
from spark_log.stream_spec import DEFAULT_MAX_RECORD_BYTES

DEFAULT_RECORDS = 50_000
DEFAULT_SIZES: tuple[int, ...] = (100, 1024)
MAX_RECORDS = 5_000_000
# In-flight publishes per acked measurement, identical for Liftlog and JetStream.
ACK_WINDOW = 256
BATCH_RECORDS = 1000
BATCHES_IN_FLIGHT = 4
# Producer batches are ~10x faster than single publishes: send this many times ``records`` so
# the batch run lasts long enough (seconds, not a fraction of one) to mean something.
BATCH_RECORDS_FACTOR = 4
# Per-message acked runs alternate Liftlog and JetStream this many times; the median round is
# reported (all rounds are in the JSON): on a shared 2-core machine one round is too noisy.
ACKED_ROUNDS = 3
LATENCY_RATE_PER_S = 1000
LATENCY_DURATION_S = 5.0
# Fire-and-forget: flush (PING/PONG) every so many publishes so the publisher really sends.
FIRE_FORGET_FLUSH_EVERY = 2000
WARMUP_MESSAGES = 200
ACK_TIMEOUT_S = 10.0
# Give up waiting for the HW to reach the published count when it stops moving this long.
RECORDING_STALL_S = 15.0
HW_POLL_INTERVAL_S = 0.02
SUBSCRIBER_READY_TIMEOUT_S = 30.0
SUBSCRIBER_IDLE_S = 10.0
# A phase may take this long plus records / PHASE_MIN_RATE_PER_S seconds before it is cut.
PHASE_BASE_TIMEOUT_S = 60.0
PHASE_MIN_RATE_PER_S = 200


@dataclass(frozen=True)
class BenchSettings:
    """What one run measures; validated so a typo cannot start a day-long run."""

    records: int = DEFAULT_RECORDS
    sizes: tuple[int, ...] = DEFAULT_SIZES
    ack_window: int = ACK_WINDOW
    acked_rounds: int = ACKED_ROUNDS
    batch_records: int = BATCH_RECORDS
    batches_in_flight: int = BATCHES_IN_FLIGHT
    batch_records_factor: int = BATCH_RECORDS_FACTOR
    latency_rate_per_s: int = LATENCY_RATE_PER_S
    latency_duration_s: float = LATENCY_DURATION_S
    flush_every: int = FIRE_FORGET_FLUSH_EVERY

    def __post_init__(self) -> None:
        if not 1 <= self.records <= MAX_RECORDS:
            raise InvalidRequestError(f"records must be in 1..{MAX_RECORDS}, got {self.records}")
        if not self.sizes:
            raise InvalidRequestError("give at least one record size")
        for size in self.sizes:
            if not 1 <= size <= DEFAULT_MAX_RECORD_BYTES:
                raise InvalidRequestError(
                    f"record size must be in 1..{DEFAULT_MAX_RECORD_BYTES} bytes, got {size}"
                )
        for name in (
            "ack_window",
            "acked_rounds",
            "batch_records",
            "batch_records_factor",
            "batches_in_flight",
            "latency_rate_per_s",
            "flush_every",
        ):
            if getattr(self, name) < 1:
                raise InvalidRequestError(f"{name} must be >= 1")
        if self.latency_duration_s <= 0:
            raise InvalidRequestError("latency_duration_s must be > 0")

    @property
    def latency_messages(self) -> int:
        """Messages of the paced latency run: the configured duration, at most ``records``."""
        return max(1, min(self.records, int(self.latency_rate_per_s * self.latency_duration_s)))

    @property
    def batch_total_records(self) -> int:
        """Records sent as producer batches (rounded up to whole batches when sent)."""
        return self.records * self.batch_records_factor

    @property
    def phase_timeout_s(self) -> float:
        """The longest any one measurement may run before the benchmark gives up on it."""
        return PHASE_BASE_TIMEOUT_S + self.records / PHASE_MIN_RATE_PER_S
