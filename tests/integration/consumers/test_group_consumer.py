"""``Client.consume`` on three real nodes: members share a six-partition stream, rebalance
when one joins, and take over a killed member's partitions with exactly the records it
processed after its last commit delivered again."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from liftlog.bench.group_member import expected_redelivery, logged_commits, member_view
from spark_log.client import Client
from spark_log.client.group_consumer import GroupConsumer
from spark_log.groups_config import GroupsConfig
from tests.integration.conftest import create_stream, node_client
from tests.support.paths import REPO
from tests.support.waiting import wait_for_async

GROUPS = GroupsConfig(min_session_timeout_ms=1_000)
SESSION_MS = 2_000
"""The killed member's session: short, so that its partitions move soon."""
STEADY_SESSION_MS = 15_000
"""Members that never die: a session a loaded two-core machine cannot starve (a member whose
heartbeats do not get through in time rightly loses its partitions, and with them the
test's promise of no duplicates)."""
MOVE_SLACK_S = 20.0
PARTITIONS = 6
Seen = list[tuple[int, int, int]]  # (member, partition, offset)


@pytest.fixture
def cluster(make_node: Any) -> list[Any]:
    return [make_node(i, groups=GROUPS) for i in (1, 2, 3)]


async def _publish(client: Client, stream: str, per_partition: int, first: int = 0) -> None:
    for p in range(PARTITIONS):
        values = [f"{p}-{i}" for i in range(first, first + per_partition)]
        await client.publish_batch(stream, values, partition=p)


def _member(
    client: Client, group: str, stream: str, session_ms: int = STEADY_SESSION_MS, **options: Any
) -> GroupConsumer:
    return client.consume(
        group,
        [stream],
        auto_offset_reset="earliest",
        session_timeout_ms=session_ms,
        wait_ms=200,
        **options,
    )


async def _run(index: int, consumer: GroupConsumer, seen: Seen, manual: bool) -> None:
    async for record in consumer:
        seen.append((index, record.partition, record.offset))
        if manual:
            await consumer.commit()


def _all(per_partition: int) -> set[tuple[int, int]]:
    return {(p, o) for p in range(PARTITIONS) for o in range(per_partition)}


async def _stop(consumers: list[GroupConsumer], tasks: list[asyncio.Task[None]]) -> None:
    for consumer in consumers:
        await consumer.close()
    await asyncio.gather(*tasks)  # each iteration ended when its consumer closed


@pytest.mark.parametrize(
    "manual",
    [
        pytest.param(False, id="auto-commit"),
        pytest.param(True, id="manual-commit", marks=pytest.mark.slow),  # make test-slow
    ],
)
async def test_members_share_partitions_and_rebalance_without_duplicates(
    cluster: list[Any], stream_name: str, manual: bool
) -> None:
    with node_client(cluster[0].api_url) as api:
        create_stream(api, stream_name, partitions=PARTITIONS)
    group = f"g-{stream_name}"
    seen: Seen = []
    async with Client(servers=[n.api_url for n in cluster]) as client:
        await _publish(client, stream_name, 100)
        options = {"auto_commit": not manual, "auto_commit_interval_s": 0.2}
        consumers = [_member(client, group, stream_name, **options) for _ in range(3)]
        tasks = [asyncio.create_task(_run(i, c, seen, manual)) for i, c in enumerate(consumers)]
        try:
            await wait_for_async(
                lambda: {(p, o) for _, p, o in seen} >= _all(100) and
                sorted(len(c.assignment) for c in consumers) == [2, 2, 2],
                timeout_s=30, message="every record processed by three members",
            )  # fmt: skip
            await _publish(client, stream_name, 50, first=100)
            fourth = _member(client, group, stream_name, **options)
            consumers.append(fourth)
            tasks.append(asyncio.create_task(_run(3, fourth, seen, manual)))
            await wait_for_async(
                lambda: {(p, o) for _, p, o in seen} >= _all(150) and
                sorted(len(c.assignment) for c in consumers) == [1, 1, 2, 2],
                timeout_s=30, message="the records after the 4th joined, processed",
            )  # fmt: skip
        finally:
            await _stop(consumers, tasks)
        counts = Counter((p, o) for _, p, o in seen)
        assert set(counts) == _all(150)
        assert [tp for tp, n in counts.items() if n > 1] == []
        with node_client(cluster[1].api_url) as api:
            described = api.get(f"/v1/groups/{group}").json()
        assert described["members"] == []
        assert {(r["partition"], r["committed"]) for r in described["partitions"]} == {
            (p, 149) for p in range(PARTITIONS)
        }


async def test_a_killed_member_s_partitions_move_and_only_uncommitted_records_repeat(
    cluster: list[Any], stream_name: str, tmp_path: Path
) -> None:
    per_partition = 400
    with node_client(cluster[0].api_url) as api:
        create_stream(api, stream_name, partitions=PARTITIONS)
    group = f"g-{stream_name}"
    out = tmp_path / "member.log"
    out.touch()
    servers = ",".join(n.api_url for n in cluster)
    seen: Seen = []
    seen_at: dict[int, float] = {}
    async with Client(servers=[n.api_url for n in cluster]) as client:
        await _publish(client, stream_name, per_partition)
        proc = subprocess.Popen(
            [sys.executable, "-m", "liftlog.bench.group_member", servers, group, stream_name,
             str(out), "7", str(SESSION_MS), "0.02"],
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        consumers: list[GroupConsumer] = []
        tasks: list[asyncio.Task[None]] = []
        try:
            await wait_for_async(
                lambda: len(member_view(out)[1]) >= 100,
                timeout_s=30, message="the member process consuming",
            )  # fmt: skip
            for i in (1, 2):
                consumers.append(_member(client, group, stream_name, auto_commit=False))
                tasks.append(asyncio.create_task(_run(i, consumers[-1], seen, manual=True)))

            def stable_and_working() -> bool:
                held, processed = member_view(out)
                return (
                    len(held) == 2
                    and sorted(len(c.assignment) for c in consumers) == [2, 2]
                    and len(seen) > 50
                    and any(p in held for p, _ in processed[-20:])
                )

            await wait_for_async(stable_and_working, timeout_s=30, message="three members")
            proc.send_signal(signal.SIGKILL)
            killed_at = time.monotonic()
            proc.wait(timeout=10)
            with node_client(cluster[2].api_url) as api:
                offsets = api.get(f"/v1/groups/{group}/offsets").json()["offsets"]
            held, processed = member_view(out)
            # the coordinator's committed offsets right after the kill: what it acknowledged
            acked = {o["partition"]: o["offset"] for o in offsets if o["partition"] in held}
            before = len(seen)

            def taken_over() -> bool:
                for _, p, _o in seen[before:]:
                    seen_at.setdefault(p, time.monotonic())
                return set(seen_at) >= held

            await wait_for_async(taken_over, timeout_s=30, message="the partitions moved")
            moved_s = max(seen_at[p] for p in held) - killed_at
            print(f"\nkilled member's partitions consumed again {moved_s:.2f}s after the kill")
            # detected by the session timeout, then one heartbeat and one fetch later consumed
            # (the slack is for a loaded machine: a 45 s default session would exceed it)
            assert moved_s < SESSION_MS / 1000 + MOVE_SLACK_S
            await wait_for_async(
                lambda: {(p, o) for _, p, o in seen} | set(processed) >= _all(per_partition),
                timeout_s=60, message="every record processed",
            )  # fmt: skip
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
            await _stop(consumers, tasks)
    logged = logged_commits(out)
    for p in held:  # a commit the process logged was acknowledged (and maybe one more)
        assert logged.get(p, -1) <= (acked[p] if acked[p] is not None else -1)
    counts = Counter([(p, o) for _, p, o in seen] + processed)
    assert set(counts) == _all(per_partition), "a record was skipped"
    twice = {tp for tp, n in counts.items() if n > 1}
    expected = expected_redelivery(processed, held, acked)
    print(f"re-delivered {len(twice)} records; expected from the last commit: {len(expected)}")
    assert twice == expected
    assert max(counts.values()) <= 2
