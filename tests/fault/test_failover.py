"""Failover on real 3-node clusters: leader kill -9 under acks=all load, min ISR refusals."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from typing import Any

import httpx
import pytest

from liftlog.embedded.node import NodeProcess
from spark_log.client import Client
from spark_log.errors import LiftlogError, NotEnoughReplicasError
from tests.integration.conftest import create_stream
from tests.support.acked_load import AckedLoad
from tests.support.waiting import DEFAULT_WAIT_INTERVAL_S, wait_for, wait_for_async

PUBLISHERS = 16
ACKED_PER_ROUND = 300


def _describe(node, stream: str) -> dict:
    with httpx.Client(base_url=node.api_url, timeout=10) as api:
        return api.get(f"/v1/streams/{stream}").json()["partitions"][0]


def _create_stream_find_leader(
    nodes: list[NodeProcess], stream: str, **spec: Any
) -> tuple[NodeProcess, list[NodeProcess]]:
    """Create ``stream`` through the first node; its partition 0 leader and the other nodes.

    The controller picks the leader, and a fault test must know which process it hurts.
    """
    with httpx.Client(base_url=nodes[0].api_url, timeout=30) as api:
        created = create_stream(api, stream, **spec)
    leader_id = created["partitions"][0]["leader"]
    leader = next(n for n in nodes if n.broker_id == leader_id)
    return leader, [n for n in nodes if n is not leader]


def _all_records(node, stream: str) -> list[dict]:
    records, offset = [], 0
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        while True:
            body = api.get(
                f"/v1/streams/{stream}/partitions/0/records",
                params={
                    "offset": offset,
                    "max_records": 10000,
                    "encoding": "utf-8",
                    "from_follower": "true",
                },
            ).json()
            if not body["records"]:
                return records
            records.extend(body["records"])
            offset = body["next_offset"]


class Load(AckedLoad):
    """acks=all publishers that record every acknowledged (value, offset)."""

    def __init__(self, client: Client, stream: str) -> None:
        self.ack_times: list[float] = []
        self.failures: list[tuple[float, str]] = []  # (monotonic time, error code)
        super().__init__(client, stream, PUBLISHERS)

    async def _run(self, worker: int) -> None:
        seq = 0
        while not self.stop.is_set():
            value = f"w{worker}-{seq}"
            seq += 1
            try:
                ack = await self.client.publish(self.stream, value, timeout_s=2)
            except LiftlogError as exc:
                self.failures.append((time.monotonic(), exc.code))
                continue
            self.ack_times.append(time.monotonic())
            self._record(value, ack.offset)


async def _kill_leader_round(nodes, stream: str, load: Load) -> float:
    """SIGKILL the leader; return seconds from the kill to the first ack after it."""
    before = _describe(nodes[0] if nodes[0].is_running() else nodes[1], stream)
    leader = next(n for n in nodes if n.broker_id == before["leader"])
    survivors = [n for n in nodes if n is not leader]
    await load.wait_acked(len(load.acked) + ACKED_PER_ROUND, 60)
    killed_at = time.monotonic()
    leader.kill()

    def new_leader() -> bool:
        state = _describe(survivors[0], stream)
        return state["leader"] not in (before["leader"], -1)

    wait_for(new_leader, 30, message="a new leader from the ISR")
    after = _describe(survivors[0], stream)
    assert after["leader_epoch"] > before["leader_epoch"]
    assert after["leader"] in before["isr"]
    await load.wait_acked(len(load.acked) + ACKED_PER_ROUND, 60)
    first_ack = min(t for t in load.ack_times if t > killed_at)
    leader.start()  # the old leader returns as a follower and truncates by epoch
    wait_for(
        lambda: sorted(_describe(survivors[0], stream)["isr"]) == [1, 2, 3],
        60,
        message="the old leader rejoins the ISR",
    )
    return first_ack - killed_at


async def _check_no_acked_loss(nodes, stream: str, acked: dict[str, int]) -> None:
    hw = _describe(nodes[0], stream)["high_watermark"]
    for node in nodes:
        wait_for(
            lambda node=node: len(_all_records(node, stream)) >= hw,
            30,
            message=f"broker {node.broker_id} caught up to the HW",
        )
    logs = [[(r["offset"], r["value"]) for r in _all_records(n, stream)][:hw] for n in nodes]
    assert logs[0] == logs[1] == logs[2], "replicas differ below the HW"
    by_value = dict((v, o) for o, v in logs[0])
    counts = Counter(v for _o, v in logs[0])
    for value, offset in acked.items():
        assert by_value.get(value) == offset, f"acked {value}@{offset} lost or moved"
        assert counts[value] == 1


async def _failover_rounds(make_node, stream_name: str, rounds: int) -> list[float]:
    nodes = [make_node(i, replica_lag_time_max_s=3.0) for i in (1, 2, 3)]
    with httpx.Client(base_url=nodes[0].api_url, timeout=30) as api:
        create_stream(api, stream_name, replication_factor=3)
    servers = ",".join(n.api_url for n in nodes)
    times = []
    async with Client(servers, ack_timeout_s=2) as client:
        load = Load(client, stream_name)
        for _ in range(rounds):
            times.append(await _kill_leader_round(nodes, stream_name, load))
        await load.finish()
    await _check_no_acked_loss(nodes, stream_name, load.acked)
    return times


async def test_leader_kill9_under_acks_all_load_loses_nothing(make_node, stream_name):
    times = await _failover_rounds(make_node, stream_name, rounds=1)
    print(f"failover (kill -9 -> first ack on the new leader): {times[0]:.2f}s")


@pytest.mark.slow
async def test_leader_kill9_five_times_in_a_row(make_node, stream_name):
    times = sorted(await _failover_rounds(make_node, stream_name, rounds=5))
    print(f"failover over 5 runs: p50 {times[2]:.2f}s max {times[-1]:.2f}s")


async def test_min_isr_refuses_acks_all_and_holds_the_hw(make_node, stream_name):
    nodes = [make_node(i, replica_lag_time_max_s=1.5) for i in (1, 2)]
    leader, (follower,) = _create_stream_find_leader(
        nodes, stream_name, replication_factor=2, min_isr=2
    )
    leader_id = leader.broker_id
    # no retries: the refusal itself is under test (the client retries it by default)
    async with Client(leader.api_url, ack_timeout_s=5, delivery_timeout_s=0) as client:
        ok = await client.publish(stream_name, b"both-up")
        assert ok.offset == 0
        follower.kill()
        wait_for(
            lambda: _describe(leader, stream_name)["isr"] == [leader_id],
            30,
            message="the dead follower leaves the ISR",
        )
        with pytest.raises(NotEnoughReplicasError):
            await client.publish(stream_name, b"refused")
        leader_ack = await client.publish(stream_name, b"leader-only", ack_policy="leader")
        assert _describe(leader, stream_name)["high_watermark"] == 1  # HW held
        assert leader_ack.offset == 1  # the refused record took no offset
        follower.start()
        wait_for(
            lambda: sorted(_describe(leader, stream_name)["isr"]) == [1, 2],
            30,
            message="the follower rejoins",
        )
        again = await client.publish(stream_name, b"both-up-again")
    assert again.offset > leader_ack.offset


@pytest.mark.slow
async def test_a_min_isr_refusal_stores_nothing_and_a_retry_stores_once(make_node, stream_name):
    """RF 3, min ISR 2, both followers killed: an acks=all publish without a msg id is refused
    before the append, so after the ISR heals the log does not hold it, and publishing it
    again (by hand, or by the client's own retries riding out the outage) stores it once."""
    nodes = [make_node(i, replica_lag_time_max_s=1.5) for i in (1, 2, 3)]
    leader, followers = _create_stream_find_leader(
        nodes, stream_name, replication_factor=3, min_isr=2
    )
    leader_id = leader.broker_id
    servers = ",".join(n.api_url for n in nodes)
    async with (
        Client(servers, ack_timeout_s=5, delivery_timeout_s=0) as once,
        Client(servers, ack_timeout_s=5, delivery_timeout_s=90) as retrying,
    ):
        assert (await once.publish(stream_name, "before")).offset == 0
        for follower in followers:
            follower.kill()
        wait_for(
            lambda: _describe(leader, stream_name)["isr"] == [leader_id],
            30,
            message="both dead followers leave the ISR",
        )
        with pytest.raises(NotEnoughReplicasError):
            await once.publish(stream_name, "refused")
        assert _describe(leader, stream_name)["log_end_offset"] == 1  # nothing appended
        ridden_out = asyncio.create_task(retrying.publish(stream_name, "retried"))
        await wait_for_async(
            lambda: _min_isr_refusals(leader, stream_name) >= 2,
            30,
            interval_s=0.1,
            message="the retrying publish refused at least once",
        )
        for follower in followers:
            await asyncio.to_thread(follower.start)  # the retries go on meanwhile
        retried = await ridden_out  # the client's retries outlast the outage
        wait_for(
            lambda: sorted(_describe(leader, stream_name)["isr"]) == [1, 2, 3],
            60,
            message="the followers rejoin the ISR",
        )
        again = await once.publish(stream_name, "refused")
    assert retried.offset == 1 and again.offset == 2
    values = Counter(r["value"] for r in _all_records(leader, stream_name))
    assert values == Counter({"before": 1, "retried": 1, "refused": 1})


async def _collect_all_replies(nc, subject: str, values: list[bytes], wait_s: float) -> list:
    """Publish each value with its own inbox and keep EVERY reply (a zombie may answer too)."""
    replies: list[tuple[bytes, dict]] = []
    subs = []
    for value in values:
        inbox = nc.new_inbox()

        async def on_reply(msg, value=value) -> None:
            import json

            replies.append((value, json.loads(msg.data)))

        subs.append(await nc.subscribe(inbox, cb=on_reply))
        await nc.publish(subject, value, reply=inbox)
    await nc.flush()
    # observe for a bounded window: a zombie's late acks are exactly what this looks for
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.Event().wait(), wait_s)
    for sub in subs:
        await sub.unsubscribe()
    return replies


async def _publish_until_acked(client: Client, stream: str, value: bytes, timeout_s: float):
    """The cluster is writable again once one acks=all publish succeeds (bounded retries)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return await client.publish(stream, value, timeout_s=2)
        except LiftlogError:
            if time.monotonic() > deadline:
                raise


async def _request_until_answered(nc, subject: str, value: bytes, timeout_s: float):
    """A new stream's leader subscribes to its subject shortly after the create returns:
    until it does, NATS answers "no responders", and nothing was stored."""
    import nats

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return await nc.request(subject, value, timeout=10)
        except nats.errors.NoRespondersError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(DEFAULT_WAIT_INTERVAL_S)


@pytest.mark.slow
async def test_sigstopped_leader_acknowledges_nothing_after_being_deposed(
    make_node, nats_server, stream_name
):
    import nats

    nodes = [make_node(i) for i in (1, 2, 3)]
    with httpx.Client(base_url=nodes[0].api_url, timeout=30) as api:
        created = create_stream(api, stream_name, replication_factor=3)
    old_id = created["partitions"][0]["leader"]
    old = next(n for n in nodes if n.broker_id == old_id)
    other = next(n for n in nodes if n is not old)
    subject = f"{stream_name}.in"
    nc = await nats.connect(nats_server.url)
    try:
        await _request_until_answered(nc, subject, b"before", timeout_s=30)
        old.pause()  # SIGSTOP past the session timeout: ZooKeeper expires it
        wait_for(
            lambda: _describe(other, stream_name)["leader"] not in (old_id, -1),
            40,
            message="a new leader while the old one is stopped",
        )
        old.resume()  # SIGCONT: a zombie that still holds its NATS subscription
        async with Client(other.api_url, ack_timeout_s=2) as client:
            await _publish_until_acked(client, stream_name, b"probe", 30)
        values = [f"after-{i}".encode() for i in range(20)]
        replies = await _collect_all_replies(nc, subject, values, wait_s=5)
    finally:
        await nc.drain()
    new_log = {r["offset"]: r["value"].encode() for r in _all_records(other, stream_name)}
    successes = [(v, a) for v, a in replies if "error" not in a]
    assert successes, "the new leader acknowledged the writes"
    for value, ack in successes:
        assert new_log.get(ack["offset"]) == value, f"a deposed leader acked {value!r} {ack}"


@pytest.mark.slow
async def test_rolling_restart_keeps_the_partition_writable(make_node, stream_name):
    nodes = [make_node(i) for i in (1, 2, 3)]
    with httpx.Client(base_url=nodes[0].api_url, timeout=30) as api:
        create_stream(api, stream_name, replication_factor=3)
    servers = ",".join(n.api_url for n in nodes)
    async with Client(servers, ack_timeout_s=2) as client:
        load = Load(client, stream_name)
        await load.wait_acked(200, 60)
        for node in nodes:
            # blocking calls go to threads so the publishers keep running meanwhile
            await asyncio.to_thread(node.stop)  # SIGTERM: controlled shutdown moves leaders
            await asyncio.to_thread(node.start)
            await asyncio.to_thread(
                wait_for,
                lambda node=node: sorted(_describe(node, stream_name)["isr"]) == [1, 2, 3],
                60,
                message="the restarted broker rejoins the ISR",
            )
            await load.wait_acked(len(load.acked) + 100, 60)
        await load.finish()
    gaps = [b - a for a, b in zip(load.ack_times, load.ack_times[1:], strict=False)]
    print(f"rolling restart: longest gap between acks {max(gaps):.2f}s")
    await _check_no_acked_loss(nodes, stream_name, load.acked)


def test_offline_partition_needs_explicit_unclean_election(make_node, stream_name):
    import subprocess
    import sys

    nodes = [make_node(i, replica_lag_time_max_s=1.5) for i in (1, 2)]
    leader, (follower,) = _create_stream_find_leader(
        nodes, stream_name, replication_factor=2, min_isr=1
    )
    leader_id = leader.broker_id
    url = f"/v1/streams/{stream_name}/partitions/0/records"
    with httpx.Client(base_url=leader.api_url, timeout=30) as api:
        api.post(url, json={"records": [{"value": "kept"}]}, params={"encoding": "utf-8"})
        wait_for(
            lambda: (
                _describe(leader, stream_name)["replica_log_end_offsets"].get(
                    str(follower.broker_id)
                )
                == 1
            ),
            20,
            message="the follower has the first record",
        )
        follower.kill()
        wait_for(
            lambda: _describe(leader, stream_name)["isr"] == [leader_id],
            30,
            message="the dead follower leaves the ISR",
        )
        for i in range(3):
            api.post(
                url,
                json={"records": [{"value": f"only-on-leader-{i}"}]},
                params={"encoding": "utf-8"},
            )
    leader.kill()
    follower.start()
    wait_for(
        lambda: _describe(follower, stream_name)["offline"],
        30,
        message="no live in-sync replica: offline, not silently elected",
    )
    state = _describe(follower, stream_name)
    assert state["leader"] == -1
    cli = [
        sys.executable,
        "-m",
        "liftlog.cli",
        "stream",
        "elect-unclean",
        stream_name,
        "--partition",
        "0",
        "--server",
        follower.api_url,
    ]
    dry = subprocess.run(cli, capture_output=True, text=True, timeout=60, check=False)
    assert dry.returncode == 0, dry.stderr
    assert "offsets known to be lost" in dry.stdout and "dry run" in dry.stdout
    # the leader acknowledged alone and is dead: never "0 lost", only an unknowable bound
    assert "at least (the total cannot be known)" in dry.stdout
    assert f"Broker {leader_id} is unreachable and was the only ISR member" in dry.stdout
    assert _describe(follower, stream_name)["leader"] == -1  # the dry run changed nothing
    done = subprocess.run(
        [*cli, "--confirm"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert f"elected broker {follower.broker_id}" in done.stdout
    wait_for(lambda: _describe(follower, stream_name)["leader"] == follower.broker_id, 30)
    with httpx.Client(base_url=follower.api_url, timeout=30) as api:
        body = api.get(url, params={"encoding": "utf-8"}).json()
    assert [r["value"] for r in body["records"]] == ["kept"]  # the leader-only tail is lost


def _min_isr_refusals(node, stream: str) -> float:
    """The leader's count of publishes refused with ``not_enough_replicas``."""
    import re

    with httpx.Client(base_url=node.api_url, timeout=10) as api:
        text = api.get("/metrics").text
    pattern = r"^liftlog_produce_errors_total\{([^}]*)\} (\S+)$"
    return sum(
        float(value)
        for labels, value in re.findall(pattern, text, re.M)
        if f'stream="{stream}"' in labels and 'code="not_enough_replicas"' in labels
    )


def _replica_fetches_in_flight(api: httpx.Client) -> float:
    import re

    text = api.get("/metrics").text
    found = re.findall(r"^liftlog_replica_fetches_in_flight (\S+)$", text, re.M)
    return float(found[0]) if found else 0.0


def test_returning_replica_truncates_its_divergent_tail(make_node, stream_name):
    nodes = [make_node(i) for i in (1, 2, 3)]
    with httpx.Client(base_url=nodes[0].api_url, timeout=30) as api:
        created = create_stream(api, stream_name, replication_factor=3)
    old_id = created["partitions"][0]["leader"]
    old = next(n for n in nodes if n.broker_id == old_id)
    followers = [n for n in nodes if n is not old]
    url = f"/v1/streams/{stream_name}/partitions/0/records"
    with httpx.Client(base_url=old.api_url, timeout=30) as api:
        for i in range(3):
            api.post(
                url, json={"records": [{"value": f"committed-{i}"}]}, params={"encoding": "utf-8"}
            )
        for f in followers:
            f.pause()  # the followers stop fetching (briefly: their sessions stay alive)
        try:
            # no follower fetch may still be waiting at the leader: it would carry the tail
            wait_for(
                lambda: _replica_fetches_in_flight(api) == 0,
                3,
                message="the paused followers' last fetches were answered",
            )
            divergent = api.post(  # acked by the leader alone, never replicated
                url,
                json={"records": [{"value": f"divergent-{i}"} for i in range(4)]},
                params={"encoding": "utf-8", "ack_policy": "leader"},
            )
            assert divergent.status_code == 200
            old.kill()
        finally:
            for f in followers:
                f.resume()
    wait_for(
        lambda: _describe(followers[0], stream_name)["leader"] not in (old_id, -1),
        30,
        message="a new leader from the ISR",
    )
    new_id = _describe(followers[0], stream_name)["leader"]
    new = next(n for n in nodes if n.broker_id == new_id)
    with httpx.Client(base_url=new.api_url, timeout=30) as api:
        for i in range(2):
            resp = api.post(
                url, json={"records": [{"value": f"new-{i}"}]}, params={"encoding": "utf-8"}
            )
            assert resp.status_code == 200, resp.text
    old.start()  # returns as a follower: truncates by leader epoch, then fetches
    wait_for(
        lambda: sorted(_describe(new, stream_name)["isr"]) == [1, 2, 3],
        60,
        message="the old leader rejoins the ISR",
    )
    logs = [[r["value"] for r in _all_records(n, stream_name)] for n in nodes]
    expected = ["committed-0", "committed-1", "committed-2", "new-0", "new-1"]
    assert logs[0] == logs[1] == logs[2] == expected
    assert "truncating divergent tail" in old.log_path.read_text()


def test_follower_with_wiped_log_catches_up_and_rejoins(make_node, stream_name):
    import shutil
    from pathlib import Path

    nodes = [make_node(i, replica_lag_time_max_s=2.0) for i in (1, 2, 3)]
    leader, followers = _create_stream_find_leader(nodes, stream_name, replication_factor=3)
    victim = followers[0]
    url = f"/v1/streams/{stream_name}/partitions/0/records"
    with httpx.Client(base_url=leader.api_url, timeout=30) as api:
        api.post(
            url,
            json={"records": [{"value": f"r{i}"} for i in range(100)]},
            params={"encoding": "utf-8"},
        )
    victim.stop()
    for stream_dir in (Path(victim.config.data_dir) / "streams").glob(f"{stream_name}@*"):
        shutil.rmtree(stream_dir)  # the disk was replaced
    with httpx.Client(base_url=leader.api_url, timeout=30) as api:
        api.post(url, json={"records": [{"value": "while-away"}]}, params={"encoding": "utf-8"})
    victim.start()
    wait_for(
        lambda: sorted(_describe(leader, stream_name)["isr"]) == [1, 2, 3],
        60,
        message="the wiped follower caught up and rejoined the ISR",
    )
    values = [r["value"] for r in _all_records(victim, stream_name)]
    assert values == [f"r{i}" for i in range(100)] + ["while-away"]


@pytest.mark.slow
async def test_controller_failover_during_leader_failover(make_node, stream_name):
    nodes = [make_node(i) for i in (1, 2, 3)]
    with httpx.Client(base_url=nodes[0].api_url, timeout=30) as api:
        controller = api.get("/v1/cluster").json()["controller"]
        # find a stream whose leader is the controller: one kill, two failovers at once
        name = None
        for i in range(12):
            candidate = f"{stream_name}-{i}"
            created = create_stream(api, candidate, replication_factor=3)
            if created["partitions"][0]["leader"] == controller:
                name = candidate
                break
    assert name is not None, "no stream led by the controller"
    victim = next(n for n in nodes if n.broker_id == controller)
    survivor = next(n for n in nodes if n is not victim)
    servers = ",".join(n.api_url for n in nodes)
    async with Client(servers, ack_timeout_s=2) as client:
        load = Load(client, name)
        await load.wait_acked(200, 60)
        victim.kill()

        def failed_over() -> bool:
            with httpx.Client(base_url=survivor.api_url, timeout=10) as api:
                new_controller = api.get("/v1/cluster").json()["controller"]
            leader = _describe(survivor, name)["leader"]
            return new_controller not in (None, controller) and leader not in (controller, -1)

        await asyncio.to_thread(
            wait_for, failed_over, 40, message="a new controller elected a new leader"
        )
        await load.wait_acked(len(load.acked) + 200, 60)
        await load.finish()
    victim.start()
    wait_for(
        lambda: sorted(_describe(survivor, name)["isr"]) == [1, 2, 3],
        60,
        message="the old controller rejoins as a follower",
    )
    await _check_no_acked_loss(nodes, name, load.acked)
