"""Starts the bare subscriber as a child process and collects its count (always reaped)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from liftlog.bench.errors import BenchError
from liftlog.bench.publish.settings import SUBSCRIBER_IDLE_S, SUBSCRIBER_READY_TIMEOUT_S
from liftlog.embedded.parent_death import dying_with_parent

SCRIPT = Path(__file__).with_name("bare_subscriber.py")
REAP_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class SubscriberCount:
    count: int
    first_at: float | None
    last_at: float | None
    slow_consumer_errors: int
    cpu_s: float


class BareSubscriber:
    """A running bare subscriber; ``result`` waits for its one JSON line."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def result(self, timeout_s: float) -> SubscriberCount:
        stdout = self.process.stdout
        if stdout is None:
            raise BenchError("bare subscriber has no stdout pipe")
        try:
            line = await asyncio.wait_for(stdout.readline(), timeout_s)
        except TimeoutError as exc:
            raise BenchError(f"bare subscriber gave no count within {timeout_s:.0f}s") from exc
        try:
            state = json.loads(line)
        except ValueError as exc:
            raise BenchError(f"bare subscriber printed {line!r}, not its count") from exc
        return SubscriberCount(
            state["count"], state["first"], state["last"], state["slow_consumer"], state["cpu_s"]
        )


@contextlib.asynccontextmanager
async def bare_subscriber(
    nats_url: str, subject: str, count: int, timeout_s: float, log_path: Path
) -> AsyncIterator[BareSubscriber]:
    """Start the subscriber, wait until it is subscribed, and kill it (by PID) on exit."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        # spawned by the loop's thread, which lives as long as the benchmark
        argv = [sys.executable, str(SCRIPT), nats_url, subject, str(count)]
        process = await asyncio.create_subprocess_exec(
            *dying_with_parent([*argv, str(SUBSCRIBER_IDLE_S), str(timeout_s)]),
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
        )
    try:
        await _wait_ready(process)
        yield BareSubscriber(process)
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), REAP_TIMEOUT_S)


async def _wait_ready(process: asyncio.subprocess.Process) -> None:
    if process.stdout is None:
        raise BenchError("bare subscriber has no stdout pipe")
    try:
        line = await asyncio.wait_for(process.stdout.readline(), SUBSCRIBER_READY_TIMEOUT_S)
    except TimeoutError as exc:
        raise BenchError("bare subscriber did not subscribe in time") from exc
    if line.strip() != b"ready":
        raise BenchError(f"bare subscriber failed to start (said {line!r}); see its log")
