"""A consumer group member in a process of its own, for the tests and the benchmark that
``kill -9`` it, and the reading of what it logged.

Usage: ``python -m liftlog.bench.group_member SERVERS GROUP STREAM OUT COMMIT_EVERY SESSION_MS
DELAY_S``.
It writes one line per event to OUT, flushed at once so a kill loses none it wrote:
``ASSIGN s p`` / ``REVOKE s p`` from the rebalance callbacks, ``P s p o`` after processing
a record (before asking for the next), and ``COMMIT s p o`` after each acknowledged manual
commit (every COMMIT_EVERY records).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from spark_log.client import Client
from spark_log.client.group_session import StreamPartition


def _writer(out: TextIO, tag: str) -> Callable[[list[StreamPartition]], None]:
    def write(partitions: list[StreamPartition]) -> None:
        for tp in partitions:
            out.write(f"{tag} {tp.stream} {tp.partition}\n")
        out.flush()

    return write


async def main(argv: list[str]) -> None:
    servers, group, stream, path, every, session_ms, delay_s = argv
    with open(path, "a", encoding="utf-8") as out:
        async with (
            Client(servers=servers.split(",")) as client,
            client.consume(
                group,
                [stream],
                auto_commit=False,
                auto_offset_reset="earliest",
                session_timeout_ms=int(session_ms),
                on_assign=_writer(out, "ASSIGN"),
                on_revoke=_writer(out, "REVOKE"),
                wait_ms=200,
            ) as consumer,
        ):
            count = 0
            async for record in consumer:
                await asyncio.sleep(float(delay_s))  # the work a record takes
                out.write(f"P {record.stream} {record.partition} {record.offset}\n")
                out.flush()
                count += 1
                if count % int(every) == 0:
                    for tp, offset in (await consumer.commit()).items():
                        out.write(f"COMMIT {tp.stream} {tp.partition} {offset}\n")
                    out.flush()


def _events(path: Path) -> Iterator[list[str]]:
    for line in path.read_text().splitlines():
        yield line.split()


def member_view(path: Path) -> tuple[set[int], list[tuple[int, int]]]:
    """The partitions the process held last and the (partition, offset) records it processed."""
    held: set[int] = set()
    processed: list[tuple[int, int]] = []
    for event in _events(path):
        if event[0] == "ASSIGN":
            held.add(int(event[2]))
        elif event[0] == "REVOKE":
            held.discard(int(event[2]))
        elif event[0] == "P":
            processed.append((int(event[2]), int(event[3])))
    return held, processed


def logged_commits(path: Path) -> dict[int, int]:
    """partition → the last commit the process logged as acknowledged."""
    return {int(e[2]): int(e[3]) for e in _events(path) if e[0] == "COMMIT"}


def expected_redelivery(
    processed: list[tuple[int, int]], held: set[int], committed: dict[int, int | None]
) -> set[tuple[int, int]]:
    """What a killed member's successors must deliver again: every record it processed on the
    partitions it held, after the group's committed offset for them."""

    def floor(p: int) -> int:
        offset = committed.get(p)
        return -1 if offset is None else offset

    return {(p, o) for p, o in processed if p in held and o > floor(p)}


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
