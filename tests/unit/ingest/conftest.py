"""Shared pieces of the ingest unit tests: a clock the test moves by hand."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pytest

from tests.support.waiting import wait_for_async

T = TypeVar("T")

START_MS = 1_700_000_000_000


class ManualClock:
    """An ``ingest.clock.Clock`` that only moves when the test says so."""

    def __init__(self, now_ms: int = START_MS) -> None:
        self.wall_ms = now_ms
        self.monotonic = 1_000.0

    def now_ms(self) -> int:
        return self.wall_ms

    def monotonic_s(self) -> float:
        return self.monotonic

    def advance(self, ms: int) -> None:
        self.wall_ms += ms
        self.monotonic += ms / 1000


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


async def eventually(predicate: Callable[[], T], timeout_s: float = 10.0, what: str = "it") -> T:
    """Poll ``predicate`` on the event loop until it is truthy (never a fixed sleep)."""
    return await wait_for_async(predicate, timeout_s, message=what)


class RecordingIntake:
    """A stand-in for the node's NATS intake: records subscriptions and what is published."""

    def __init__(self) -> None:
        self.subjects: dict[int, str] = {}
        self.sent: list[tuple[str, bytes]] = []

    def subscribe(self, subject: str, queue: str, handler: object) -> int:
        sid = len(self.subjects) + 1
        self.subjects[sid] = subject
        return sid

    def unsubscribe(self, sid: int) -> None:
        self.subjects.pop(sid, None)

    def publish(self, subject: str, payload: bytes) -> None:
        self.sent.append((subject, payload))
