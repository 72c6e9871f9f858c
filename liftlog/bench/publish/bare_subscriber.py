"""A bare nats-py subscriber that only counts: the yardstick for fire-and-forget recording.

Run as its own process (``python bare_subscriber.py URL SUBJECT COUNT IDLE_S TIMEOUT_S``) so
it has a core's worth of Python to itself, like the Liftlog node. It imports nothing but
nats-py and the standard library on purpose: it is what "just subscribing" costs.

Protocol on stdout: ``ready`` once subscribed, then one JSON line with the count, the
``time.monotonic()`` of the first and last message (CLOCK_MONOTONIC is system-wide on Linux,
so the parent can compare it with its own clock) and the CPU seconds spent since ``ready``
(reported by the process itself: it has exited by the time the parent could look).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass

import nats
import nats.errors
from nats.aio.msg import Msg

# Generous client-side buffers: a drop here would make the yardstick, not Liftlog, look slow.
PENDING_BYTES_LIMIT = 1024 * 1024 * 1024


@dataclass
class Count:
    """What the subscriber saw: printed as its one JSON line (``SubscriberCount`` reads it)."""

    count: int = 0
    first: float | None = None
    last: float | None = None
    slow_consumer: int = 0
    cpu_s: float = 0.0


async def count_messages(
    url: str, subject: str, count: int, idle_s: float, timeout_s: float
) -> Count:
    state = Count()
    done = asyncio.Event()

    async def on_msg(_msg: Msg) -> None:
        now = time.monotonic()
        if state.first is None:
            state.first = now
        state.last = now
        state.count += 1
        if state.count >= count:
            done.set()

    async def on_error(exc: Exception) -> None:
        if isinstance(exc, nats.errors.SlowConsumerError):
            state.slow_consumer += 1

    nc = await nats.connect(url, error_cb=on_error, max_reconnect_attempts=0)
    await nc.subscribe(
        subject, cb=on_msg, pending_msgs_limit=count + 1, pending_bytes_limit=PENDING_BYTES_LIMIT
    )
    await nc.flush()
    print("ready", flush=True)
    cpu_at_ready = time.process_time()
    deadline = time.monotonic() + timeout_s
    while not done.is_set() and time.monotonic() < deadline:
        last = state.last
        if last is not None and time.monotonic() - last > idle_s:
            break
        try:
            await asyncio.wait_for(done.wait(), 0.5)
        except TimeoutError:
            continue
    state.cpu_s = time.process_time() - cpu_at_ready
    await nc.close()
    return state


def main(argv: list[str]) -> int:
    url, subject, count, idle_s, timeout_s = argv
    state = asyncio.run(count_messages(url, subject, int(count), float(idle_s), float(timeout_s)))
    print(json.dumps(asdict(state)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
