"""Consumer groups over REST on three real nodes: cooperative rebalancing, commit fencing,
session expiry, describe and reset, the CLI, and the coordinator's failover."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from spark_log.client.credentials import ClientCredentials
from spark_log.cursor_record import cursors_partition
from spark_log.groups_config import GroupsConfig
from spark_log.stream_spec import CURSORS_STREAM
from tests.integration.conftest import create_stream, node_client
from tests.support.auth_stack import start_auth_cluster
from tests.support.waiting import wait_for

LIFTLOG = str(Path(sys.executable).parent / "liftlog")
GROUPS = GroupsConfig(min_session_timeout_ms=1_000)
SHORT_SESSION_MS = 1_500
Owners = dict[tuple[str, int], str]
OTHER_ADDRESS = "127.0.0.2"
"""A member's source address the nodes (listening on 127.0.0.1) can tell apart."""


@dataclass
class Member:
    """A client's side of the protocol: it gives up revoking partitions at once, so its next
    heartbeat's ``owned`` is what it was last assigned."""

    member_id: str
    epoch: int
    assigned: dict[str, list[int]]
    revoking: dict[str, list[int]] = field(default_factory=dict)

    def take(self, body: dict[str, Any]) -> None:
        self.epoch = body["member_epoch"]
        self.assigned = body["assigned"]
        self.revoking = body["revoking"]

    def held(self) -> set[tuple[str, int]]:
        both = [self.assigned, self.revoking]
        return {(s, p) for by_stream in both for s, ps in by_stream.items() for p in ps}


def _error(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    code: str = resp.json()["error"]["code"]
    return code


def _client_from(base_url: str, address: str) -> httpx.Client:
    """A node's client whose requests come from ``address`` (another loopback address)."""
    verify = ClientCredentials.resolve().ssl_context() or True
    transport = httpx.HTTPTransport(local_address=address, verify=verify)
    return node_client(base_url, transport=transport)


def _join(api: httpx.Client, group: str, stream: str, **extra: Any) -> Member:
    resp = api.post(f"/v1/groups/{group}/members", json={"streams": [stream], **extra})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    member = Member(body["member_id"], 0, {})
    member.take(body)
    return member


def _heartbeat(api: httpx.Client, group: str, member: Member) -> None:
    resp = api.post(
        f"/v1/groups/{group}/members/{member.member_id}/heartbeat",
        json={"member_epoch": member.epoch, "owned": member.assigned},
    )
    assert resp.status_code == 200, resp.text
    member.take(resp.json())


def _round(api: httpx.Client, group: str, members: list[Member]) -> None:
    """One heartbeat per member; no partition is held by two members after any of them."""
    for member in members:
        _heartbeat(api, group, member)
        held = [tp for m in members for tp in m.held()]
        assert len(held) == len(set(held)), f"a partition is held twice: {sorted(held)}"


def _settle(api: httpx.Client, group: str, members: list[Member]) -> dict[str, Any]:
    def stable() -> dict[str, Any] | None:
        _round(api, group, members)
        described: dict[str, Any] = api.get(f"/v1/groups/{group}").json()
        return described if described["state"] == "stable" else None

    return wait_for(stable, message=f"group {group} stable")


def _owners(members: list[Member]) -> Owners:
    return {tp: m.member_id for m in members for tp in m.held()}


def _publish(cluster: list[Any], stream: str, partition: int, count: int) -> None:
    """``count`` records, published at the partition's leader."""
    with node_client(cluster[0].api_url) as api:
        leader = api.get(f"/v1/streams/{stream}").json()["partitions"][partition]["leader"]
    records = [{"value": f"r{i}"} for i in range(count)]
    path = f"/v1/streams/{stream}/partitions/{partition}/records"
    with node_client(cluster[leader - 1].api_url) as api:
        resp = api.post(path, json={"records": records}, params={"encoding": "utf-8"})
        resp.raise_for_status()


def _cli(*args: str) -> str:
    done = subprocess.run([LIFTLOG, *args], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def cluster(make_node: Any) -> list[Any]:
    return [make_node(i, groups=GROUPS) for i in (1, 2, 3)]


def test_group_lifecycle(cluster: list[Any], stream_name: str) -> None:
    group = "billing"
    apis = [node_client(n.api_url) for n in cluster]
    api = apis[0]
    try:
        create_stream(api, stream_name, partitions=6)
        members = [_join(apis[i], group, stream_name) for i in range(3)]
        _settle(api, group, members)
        assert sorted(len(m.held()) for m in members) == [2, 2, 2]
        before = _owners(members)

        # a 4th member, from another address through a node that forwards to the coordinator:
        # only the partitions it gets move, never two owners at once
        coordinator = api.get(f"/v1/groups/{group}").json()["coordinator"]
        via = cluster[0] if coordinator != 1 else cluster[1]  # broker ids 1, 2, 3
        with _client_from(via.api_url, OTHER_ADDRESS) as elsewhere:
            members.append(_join(elsewhere, group, stream_name, client_id="billing-4"))
        _settle(api, group, members)
        after = _owners(members)
        moved = {tp for tp in after if after[tp] != before.get(tp)}
        assert moved and all(after[tp] == members[3].member_id for tp in moved)
        assert sorted(len(m.held()) for m in members) == [1, 1, 2, 2]

        # commits: fenced by epoch and membership
        first = members[0]
        stream, partitions = next(iter(first.assigned.items()))
        offsets = [{"stream": stream, "partition": partitions[0], "offset": 4}]
        commit = f"/v1/groups/{group}/offsets"
        stale = {"member_id": first.member_id, "member_epoch": first.epoch + 1, "offsets": offsets}
        assert _error(apis[2].post(commit, json=stale), 409) == "stale_member_epoch"
        others = [
            {"stream": stream, "partition": p, "offset": 1} for p in members[1].assigned[stream]
        ]
        foreign = {"member_id": first.member_id, "member_epoch": first.epoch, "offsets": others}
        assert _error(apis[2].post(commit, json=foreign), 409) == "stale_member_epoch"
        unknown = {"member_id": "nobody", "member_epoch": first.epoch, "offsets": offsets}
        assert _error(apis[2].post(commit, json=unknown), 409) == "fenced_member"
        _publish(cluster, stream_name, partitions[0], 10)
        good = {"member_id": first.member_id, "member_epoch": first.epoch, "offsets": offsets}
        assert apis[2].post(commit, json=good).status_code == 200
        cursor = f"/v1/streams/{stream_name}/partitions/0/cursors/__group:{group}"
        assert _error(api.put(cursor, json={"offset": 1}), 409) == "group_managed"
        fetched = api.get(commit, params={"stream": stream_name}).json()["offsets"]
        assert {(o["partition"], o["offset"]) for o in fetched if o["offset"] is not None} == {
            (partitions[0], 4)
        }

        # describe: committed offset, high watermark and lag
        def lag_row() -> dict[str, Any] | None:
            rows = api.get(f"/v1/groups/{group}").json()["partitions"]
            row: dict[str, Any] = next(p for p in rows if p["partition"] == partitions[0])
            return row if row["high_watermark"] == 10 else None

        row = wait_for(lag_row, message="the published records committed")
        assert (row["committed"], row["lag"]) == (4, 5)
        described = api.get(f"/v1/groups/{group}").json()
        assert row["member_id"] == first.member_id
        assert len(described["members"]) == 4
        clients = {m["member_id"]: (m["client_id"], m["client_host"]) for m in described["members"]}
        assert clients.pop(members[3].member_id) == ("billing-4", OTHER_ADDRESS)
        assert set(clients.values()) == {(None, "127.0.0.1")}  # joined without a client id

        # the 4th leaves: its partitions go back to the others
        leaver = members.pop()
        left = apis[2].delete(f"/v1/groups/{group}/members/{leaver.member_id}")
        assert left.json() == {"group": group, "member_id": leaver.member_id, "left": True}
        _settle(api, group, members)
        assert sorted(len(m.held()) for m in members) == [2, 2, 2]

        # the stream grows: its new partitions are assigned at the next heartbeats
        grown = api.patch(f"/v1/streams/{stream_name}", json={"partitions": 9})
        assert grown.status_code == 200, grown.text

        def spread() -> bool:
            _round(api, group, members)
            return sorted(len(m.assigned.get(stream_name, [])) for m in members) == [3, 3, 3]

        wait_for(spread, message="the new partitions assigned")

        # a member that stops heartbeating is expired after its session
        quiet = _join(apis[2], group, stream_name, session_timeout_ms=SHORT_SESSION_MS)

        def expired() -> bool:
            _round(api, group, members)
            listed = api.get(f"/v1/groups/{group}").json()["members"]
            return quiet.member_id not in {m["member_id"] for m in listed}

        wait_for(expired, message="the quiet member's session to expire")
        gone = apis[1].post(
            f"/v1/groups/{group}/members/{quiet.member_id}/heartbeat",
            json={"member_epoch": quiet.epoch, "owned": {}},
        )
        assert _error(gone, 409) == "fenced_member"

        # reset: refused while the group has members, applied once they left
        reset = f"/v1/groups/{group}/offsets/reset"
        plan = {"stream": stream_name, "to": "earliest", "execute": True}
        assert _error(api.post(reset, json=plan), 409) == "group_not_empty"
        assert _error(api.delete(f"/v1/groups/{group}"), 409) == "group_not_empty"
        for member in members:
            apis[0].delete(f"/v1/groups/{group}/members/{member.member_id}").raise_for_status()
        listing = api.get("/v1/groups")
        assert listing.status_code == 200, listing.text
        listed = {g["group"]: g for g in listing.json()["groups"]}
        assert (listed[group]["members"], listed[group]["state"]) == (0, "empty")
        server = ["--server", cluster[1].api_url]
        out = _cli("group", "describe", group, *server)
        header = "STREAM  PARTITION  MEMBER  CLIENT-ID  HOST  COMMITTED  HIGH_WATERMARK  LAG"
        assert re.search(header.replace("  ", r"\s+"), out), out
        row = rf"{stream_name}\s+{partitions[0]}\s+-\s+-\s+-\s+4\s+10\s+5"
        assert re.search(row, out), out
        assert group in _cli("group", "list", *server)
        out = _cli(
            "group",
            "reset-offsets",
            group,
            "--stream",
            stream_name,
            "--to-offset",
            "3",
            "--partitions",
            str(partitions[0]),
            *server,
        )
        assert "plan only" in out
        assert (
            api.get(commit, params={"stream": stream_name}).json()["offsets"][partitions[0]][
                "offset"
            ]
            == 4
        )
        _cli(
            "group",
            "reset-offsets",
            group,
            "--stream",
            stream_name,
            "--to-earliest",
            "--execute",
            *server,
        )
        fetched = api.get(commit, params={"stream": stream_name}).json()["offsets"]
        assert [o["offset"] for o in fetched] == [-1] * 9
        assert api.delete(f"/v1/groups/{group}").json() == {"group": group, "deleted": True}
        assert _error(api.get(f"/v1/groups/{group}"), 404) == "group_not_found"
    finally:
        for client in apis:
            client.close()


def test_members_survive_coordinator_failover(cluster: list[Any], stream_name: str) -> None:
    group = "failover"
    with node_client(cluster[0].api_url) as api:
        create_stream(api, stream_name, partitions=4)
        members = [_join(api, group, stream_name) for _ in range(2)]
        _settle(api, group, members)
        first = members[0]
        stream, partitions = next(iter(first.assigned.items()))
        offsets = [{"stream": stream, "partition": p, "offset": 7} for p in partitions]
        body = {"member_id": first.member_id, "member_epoch": first.epoch, "offsets": offsets}
        api.post(f"/v1/groups/{group}/offsets", json=body).raise_for_status()
        described = api.get(f"/v1/streams/{CURSORS_STREAM}").json()
        index = cursors_partition(f"__group:{group}", len(described["partitions"]))
        coordinator = described["partitions"][index]["leader"]
        assert api.get(f"/v1/groups/{group}").json()["coordinator"] == coordinator
    cluster[coordinator - 1].kill()
    survivor = next(n for n in cluster if n.broker_id != coordinator)
    with node_client(survivor.api_url) as api:

        def heartbeats() -> bool:
            for member in members:
                resp = api.post(
                    f"/v1/groups/{group}/members/{member.member_id}/heartbeat",
                    json={"member_epoch": member.epoch, "owned": member.assigned},
                )
                if resp.status_code != 200:
                    assert resp.status_code in (421, 503), resp.text
                    return False
                member.take(resp.json())
            return True

        wait_for(heartbeats, timeout_s=30, interval_s=0.2, message="heartbeats at a new leader")
        described = api.get(f"/v1/groups/{group}").json()
        assert described["coordinator"] != coordinator
        assert {m["member_id"] for m in described["members"]} == {m.member_id for m in members}
        fetched = api.get(f"/v1/groups/{group}/offsets").json()["offsets"]
        assert {(o["partition"], o["offset"]) for o in fetched if o["offset"] is not None} == {
            (p, 7) for p in partitions
        }


def test_group_routes_check_each_stream(
    zookeeper: Any, nats_server: Any, tmp_path: Path, secure_material: Any
) -> None:
    """``consume`` on every stream a member joins or commits, ``describe`` filters what a
    describe shows, ``alter`` for a reset, ``delete`` on the cluster for a group delete."""
    stack = start_auth_cluster(zookeeper, nats_server, tmp_path, secure_material=secure_material)
    cluster = next(stack)
    try:
        with cluster.admin() as admin:
            create_stream(admin, "acl-a", partitions=2)
            create_stream(admin, "acl-b", partitions=2)
            member = _join(admin, "shared", "acl-a")
            admin.post(
                "/v1/groups/shared/members", json={"streams": ["acl-a", "acl-b"]}
            ).raise_for_status()
        _token_id, token = cluster.new_token("app")
        for action in ("consume", "describe"):
            cluster.allow("app", action, "stream:acl-a")
        with cluster.client(token=token) as app:
            wait_for(
                lambda: app.post("/v1/groups/g/members", json={"streams": ["acl-a"]}).is_success,
                message="the ACLs to reach the node",
            )
            denied = app.post("/v1/groups/g/members", json={"streams": ["acl-a", "acl-b"]})
            assert _error(denied, 403) == "forbidden"
            described = app.get("/v1/groups/shared").json()
            assert {p["stream"] for p in described["partitions"]} == {"acl-a"}
            commit = {
                "member_id": member.member_id,
                "member_epoch": member.epoch,
                "offsets": [{"stream": "acl-b", "partition": 0, "offset": 1}],
            }
            assert _error(app.post("/v1/groups/shared/offsets", json=commit), 403) == "forbidden"
            reset = {"stream": "acl-a", "to": "earliest"}
            assert _error(app.post("/v1/groups/g/offsets/reset", json=reset), 403) == "forbidden"
            assert _error(app.delete("/v1/groups/g"), 403) == "forbidden"
    finally:
        next(stack, None)
