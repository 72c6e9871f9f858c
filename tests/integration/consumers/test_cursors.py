"""Durable cursors on three real nodes: set and read through any node, the ``__cursors``
stream they live in, and the refusals a user can run into."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from spark_log.client import Client, Cursor
from spark_log.cursor_record import cursors_partition
from spark_log.errors import CursorNotFoundError
from spark_log.stream_spec import CURSORS_STREAM
from tests.integration.conftest import create_stream, node_client

LIFTLOG = str(Path(sys.executable).parent / "liftlog")
CURSORS = 4


def _path(stream: str, partition: int, cursor_id: str) -> str:
    return f"/v1/streams/{stream}/partitions/{partition}/cursors/{cursor_id}"


def _error(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    code: str = resp.json()["error"]["code"]
    return code


@pytest.fixture(scope="module")
def cluster(make_module_node: Any) -> list[Any]:
    return [make_module_node(i) for i in (1, 2, 3)]


def test_a_cursor_never_set_is_not_offset_zero(cluster: list[Any], stream_name: str) -> None:
    with node_client(cluster[0].api_url) as api:
        create_stream(api, stream_name, partitions=2)
        path = _path(stream_name, 1, "billing")
        assert _error(api.get(path), 404) == "cursor_not_found"
        assert api.put(path, json={"offset": 0}).json()["offset"] == 0
        assert api.get(path).json()["offset"] == 0
        assert api.put(path, json={"offset": -1}).json()["offset"] == -1
        assert api.get(path).json()["offset"] == -1
        api.put(path, json={"offset": 41})
        got = api.get(path).json()
        assert (got["stream"], got["partition"], got["cursor_id"], got["offset"]) == (
            stream_name,
            1,
            "billing",
            41,
        )
        assert got["set_at_ms"] > 0
        assert _error(api.get(_path(stream_name, 0, "billing")), 404) == "cursor_not_found"
        assert api.delete(path).json()["deleted"] is True
        assert _error(api.get(path), 404) == "cursor_not_found"


def test_every_node_reads_what_any_node_set(cluster: list[Any], stream_name: str) -> None:
    """Cursor ids spread over every ``__cursors`` partition: each node serves the ones it
    leads and forwards the others, so all three answer the same."""
    ids = [f"consumer-{i}" for i in range(16)]
    assert len({cursors_partition(i, CURSORS) for i in ids}) == CURSORS
    with node_client(cluster[0].api_url) as api:
        create_stream(api, stream_name)
    for i, cursor_id in enumerate(ids):
        with node_client(cluster[i % 3].api_url) as api:
            resp = api.put(_path(stream_name, 0, cursor_id), json={"offset": 100 + i})
            assert resp.status_code == 200, resp.text
    for node in cluster:
        with node_client(node.api_url) as api:
            got = [api.get(_path(stream_name, 0, c)).json()["offset"] for c in ids]
            assert got == [100 + i for i in range(len(ids))]
    with node_client(cluster[1].api_url) as api:
        described = api.get(f"/v1/streams/{CURSORS_STREAM}").json()
    assert described["internal"] is True
    assert len(described["partitions"]) == CURSORS
    assert all(len(p["replicas"]) == 3 for p in described["partitions"])
    assert {p["leader"] for p in described["partitions"]} <= {1, 2, 3}


def test_cursors_stream_is_internal(cluster: list[Any], stream_name: str) -> None:
    with node_client(cluster[0].api_url) as api:
        create_stream(api, stream_name)
        api.put(_path(stream_name, 0, "c"), json={"offset": 1}).raise_for_status()
        listed = [s["name"] for s in api.get("/v1/streams").json()["streams"]]
        assert CURSORS_STREAM not in listed and stream_name in listed
        everything = api.get("/v1/streams", params={"internal": "true"}).json()["streams"]
        assert CURSORS_STREAM in [s["name"] for s in everything]
        refusals = [
            api.delete(f"/v1/streams/{CURSORS_STREAM}"),
            api.patch(f"/v1/streams/{CURSORS_STREAM}", json={"retention_ms": 1000}),
            api.post(f"/v1/streams/{CURSORS_STREAM}/pause"),
            api.post(f"/v1/streams/{CURSORS_STREAM}/readonly"),
            api.post(
                f"/v1/streams/{CURSORS_STREAM}/partitions/0/records",
                json={"records": [{"key": "Yw==", "value": "e30="}]},
            ),
        ]
        assert [_error(r, 409) for r in refusals] == ["internal_stream"] * 5
        created = api.post("/v1/streams", json={"name": CURSORS_STREAM, "subject": "anything"})
        assert _error(created, 422) == "invalid_request"
        assert api.get(_path(stream_name, 0, "c")).json()["offset"] == 1


def test_bad_cursor_requests_are_refused(cluster: list[Any], stream_name: str) -> None:
    with node_client(cluster[0].api_url) as api:
        create_stream(api, stream_name)
        assert _error(api.get(_path("no-such-stream", 0, "c")), 404) == "stream_not_found"
        assert _error(api.get(_path(stream_name, 5, "c")), 404) == "partition_not_found"
        too_low = api.put(_path(stream_name, 0, "c"), json={"offset": -2})
        assert _error(too_low, 422) == "invalid_request"
        unknown = api.put(_path(stream_name, 0, "c"), json={"offset": 1, "extra": 1})
        assert _error(unknown, 422) == "invalid_request"
        long_id = api.put(_path(stream_name, 0, "x" * 300), json={"offset": 1})
        assert _error(long_id, 422) == "invalid_request"


def test_a_recreated_stream_does_not_inherit_cursors(cluster: list[Any], stream_name: str) -> None:
    with node_client(cluster[0].api_url) as api:
        create_stream(api, stream_name)
        api.put(_path(stream_name, 0, "c"), json={"offset": 7}).raise_for_status()
        api.delete(f"/v1/streams/{stream_name}").raise_for_status()
        create_stream(api, stream_name)
        assert _error(api.get(_path(stream_name, 0, "c")), 404) == "cursor_not_found"


async def test_client_and_cli_cursors(cluster: list[Any], stream_name: str) -> None:
    async with Client(cluster[2].api_url) as client:
        await client.create_stream(stream_name, f"{stream_name}.in", partitions=3)
        assert await client.fetch_cursor("app", stream_name, 2) is None
        view = await client.set_cursor("app", stream_name, 2, 9)
        assert view.offset == 9
        assert await client.fetch_cursor("app", stream_name, 2) == 9
    server = ["--server", cluster[0].api_url]
    out = _cli("cursor", "get", stream_name, "2", "app", *server)
    assert out.strip() == f"cursor app on {stream_name}/2: 9"
    _cli("cursor", "set", stream_name, "2", "app", "12", *server)
    async with Client(cluster[1].api_url) as client:
        assert await client.fetch_cursor("app", stream_name, 2) == 12
    _cli("cursor", "delete", stream_name, "2", "app", *server)
    out = _cli("cursor", "get", stream_name, "2", "app", "--json", *server)
    assert '"offset": null' in out


def _cli(*args: str) -> str:
    done = subprocess.run([LIFTLOG, *args], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_reads_start_after_a_cursor(cluster: list[Any], stream_name: str) -> None:
    """``cursor`` as a start: REST ``?cursor=``, ``Client.subscribe(start=Cursor(...))`` and
    ``liftlog tail --from cursor:ID`` resume after the cursor's offset."""
    async with Client(cluster[0].api_url) as client:
        await client.create_stream(stream_name, f"{stream_name}.in")
        for i in range(10):
            await client.publish(stream_name, f"v{i}", partition=0)
        await client.set_cursor("app", stream_name, 0, 4)
        after = [
            r.offset
            async for r in client.subscribe(stream_name, 0, start=Cursor("app"), stop="latest")
        ]
        assert after == [5, 6, 7, 8, 9]
        unset = client.subscribe(stream_name, 0, start=Cursor("nobody"), stop="latest")
        assert [r.offset async for r in unset] == list(range(10))
        with pytest.raises(CursorNotFoundError):
            await client.start_offset(stream_name, 0, Cursor("nobody", if_unset=None))
        leader = (await client.describe_stream(stream_name)).partitions[0].leader
    url = next(n.api_url for n in cluster if n.broker_id == leader)
    records = f"/v1/streams/{stream_name}/partitions/0/records"
    with node_client(url) as api:
        got = api.get(records, params={"cursor": "app", "encoding": "utf-8"}).json()
        assert [r["offset"] for r in got["records"]] == [5, 6, 7, 8, 9]
        assert _error(api.get(records, params={"cursor": "nobody"}), 404) == "cursor_not_found"
        fallback = api.get(records, params={"cursor": "nobody", "start": "latest"}).json()
        assert [r["offset"] for r in fallback["records"]] == [9]
        both = api.get(records, params={"cursor": "app", "offset": 1})
        assert _error(both, 422) == "invalid_request"
    tail = _cli(
        "tail",
        stream_name,
        "--from",
        "cursor:app",
        "--until",
        "latest",
        "--json",
        "--server",
        cluster[1].api_url,
    )
    assert [json.loads(line)["offset"] for line in tail.splitlines()] == [5, 6, 7, 8, 9]
