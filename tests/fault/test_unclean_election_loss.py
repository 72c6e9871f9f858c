"""The unclean election's dry run never claims that nothing is lost when it cannot know.

With min ISR 1, a leader whose follower stopped answering shrinks the ISR to itself and goes
on acknowledging alone. Once that leader is SIGKILLed, only it ever held those records: the
dry run must say the loss is unknowable (a lower bound), and the election must then lose
exactly the records the old leader acknowledged alone.
"""

from __future__ import annotations

import subprocess
import sys

import httpx

from tests.fault.test_failover import _all_records, _create_stream_find_leader, _describe
from tests.support.waiting import wait_for

ALONE = 3


def _election(node, stream: str, broker: int, confirm: bool = False) -> dict:
    params = {"broker_id": broker, "confirm": "true" if confirm else "false"}
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        resp = api.post(f"/v1/streams/{stream}/partitions/0/unclean-election", params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()


def _post(api: httpx.Client, stream: str, value: str) -> int:
    resp = api.post(
        f"/v1/streams/{stream}/partitions/0/records",
        json={"records": [{"value": value}]},
        params={"encoding": "utf-8"},
    )
    assert resp.status_code == 200, resp.text
    (offset,) = resp.json()["offsets"]
    return offset


def _replicated(leader, follower, stream: str, leo: int) -> bool:
    leos = _describe(leader, stream)["replica_log_end_offsets"]
    return leos.get(str(follower.broker_id)) == leo


def _local_view(node, stream: str) -> dict:
    with httpx.Client(base_url=node.api_url, timeout=10) as api:
        return api.get(f"/v1/streams/{stream}/partitions/0").json()


def _cli_dry_run(node, stream: str) -> str:
    cli = [sys.executable, "-m", "liftlog.cli", "stream", "elect-unclean", stream]
    cli += ["--partition", "0", "--broker", str(node.broker_id), "--server", node.api_url]
    done = subprocess.run(cli, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_dry_run_says_the_loss_is_unknowable_after_a_lone_leader_dies(make_node, stream_name):
    nodes = [make_node(i, replica_lag_time_max_s=1.5) for i in (1, 2)]
    leader, (follower,) = _create_stream_find_leader(
        nodes, stream_name, replication_factor=2, min_isr=1
    )
    leader_id = leader.broker_id
    with httpx.Client(base_url=leader.api_url, timeout=30) as api:
        assert _post(api, stream_name, "kept") == 0
        wait_for(lambda: _replicated(leader, follower, stream_name, 1), 20)
        healthy = _election(leader, stream_name, follower.broker_id)
        # the old ISR answers: the figure is exact (and refused on confirm: a clean choice)
        assert healthy["loss_bound"] == "exact" and healthy["loss_known"] is True
        assert healthy["offsets_known_lost"] == 0
        follower.pause()  # SIGSTOP: it stops fetching, the leader shrinks the ISR to itself
        wait_for(
            lambda: _describe(leader, stream_name)["isr"] == [leader_id],
            30,
            message="the silent follower leaves the ISR",
        )
        alone = {f"alone-{i}": _post(api, stream_name, f"alone-{i}") for i in range(ALONE)}
    assert sorted(alone.values()) == [1, 2, 3]
    leader.kill()
    follower.resume()
    wait_for(
        lambda: _describe(follower, stream_name)["leader"] == -1,
        30,
        message="offline: the only ISR member is dead",
    )
    report = _local_view(follower, stream_name)["last_leader_report"]
    assert report["leader"] == leader_id and report["high_watermark"] <= 1

    dry = _election(follower, stream_name, follower.broker_id)
    assert dry["elected"] is False
    assert dry["candidate_log_end_offset"] == 1
    assert dry["loss_bound"] == "at_least" and dry["loss_known"] is False
    assert dry["offsets_known_lost"] == 0  # only a lower bound, and said to be one
    assert dry["last_isr"] == [leader_id] and dry["unreachable_isr"] == [leader_id]
    explanation = dry["loss_explanation"]
    assert f"Broker {leader_id} is unreachable and was the only ISR member" in explanation
    assert "the total cannot be known" in explanation
    printed = _cli_dry_run(follower, stream_name)
    assert "offsets known to be lost: at least (the total cannot be known) 0" in printed
    assert _describe(follower, stream_name)["leader"] == -1  # dry runs changed nothing

    done = _election(follower, stream_name, follower.broker_id, confirm=True)
    assert done["elected"] is True and done["leader"] == follower.broker_id
    wait_for(lambda: _describe(follower, stream_name)["leader"] == follower.broker_id, 30)
    kept = [r["value"] for r in _all_records(follower, stream_name)]
    assert kept == ["kept"]
    lost = [value for value in alone if value not in kept]
    assert len(lost) == ALONE >= dry["offsets_known_lost"]  # the statement was true


def _reassign(node, stream: str, replicas: list[int]) -> None:
    body = {"partitions": [{"partition": 0, "replicas": replicas}]}
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        resp = api.post(f"/v1/streams/{stream}/reassign", json=body)
    assert resp.status_code < 300, resp.text


def test_dry_run_counts_the_loss_exactly_while_the_old_leader_answers(make_node, stream_name):
    """A live leader alone in the ISR and a reachable replica behind it (a replica a
    reassignment adds, held back by the throttle): the leader's own LEO gives the exact loss,
    and electing that replica once the leader is dead loses exactly that many records."""
    nodes = [make_node(i, reassignment_throttle_bytes_per_s=1) for i in (1, 2)]
    leader, (behind,) = _create_stream_find_leader(
        nodes, stream_name, replication_factor=1, min_isr=1
    )
    leader_id = leader.broker_id
    with httpx.Client(base_url=leader.api_url, timeout=30) as api:
        assert _post(api, stream_name, "kept") == 0
        _reassign(leader, stream_name, [leader_id, behind.broker_id])
        # one fetch copies the record, then the 1 B/s throttle holds the replica back
        wait_for(
            lambda: _local_view(behind, stream_name).get("log_end_offset") == 1,
            30,
            message="the added replica copied the first record",
        )
        alone = {f"alone-{i}": _post(api, stream_name, f"alone-{i}") for i in range(ALONE)}
    assert _describe(leader, stream_name)["isr"] == [leader_id]
    assert _local_view(behind, stream_name)["log_end_offset"] == 1

    exact = _election(leader, stream_name, behind.broker_id)
    assert exact["loss_bound"] == "exact" and exact["loss_known"] is True
    assert exact["offsets_known_lost"] == ALONE
    assert f"exactly {ALONE} offsets are lost" in exact["loss_explanation"]
    assert f"broker {leader_id}'s log end offset" in exact["loss_explanation"]

    leader.kill()
    wait_for(
        lambda: _describe(behind, stream_name)["leader"] == -1,
        30,
        message="offline: the only ISR member is dead",
    )
    unknowable = _election(behind, stream_name, behind.broker_id)
    assert unknowable["loss_bound"] == "at_least"
    assert unknowable["unreachable_isr"] == [leader_id]
    done = _election(behind, stream_name, behind.broker_id, confirm=True)
    assert done["elected"] is True
    wait_for(lambda: _describe(behind, stream_name)["leader"] == behind.broker_id, 30)
    kept = [r["value"] for r in _all_records(behind, stream_name)]
    assert kept == ["kept"]
    assert len([v for v in alone if v not in kept]) == exact["offsets_known_lost"]
