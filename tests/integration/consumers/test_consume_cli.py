"""``liftlog consume`` as real processes: two members share a stream, ``group describe`` names
each member's client id and host and counts the lag of partitions nothing was committed for,
and a member stopped with SIGTERM (or SIGINT) leaves the group, so its partitions move at once,
long before its session would time out."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from liftlog import cli
from spark_log.api_models import GroupDescription
from tests.integration.conftest import create_stream
from tests.support.waiting import wait_for

SESSION_TIMEOUT_MS = 60_000
MOVE_TIMEOUT_S = 25.0
"""Well below the session timeout: only a leave moves partitions this soon."""
JOIN_TIMEOUT_S = 30.0
EXIT_TIMEOUT_S = 20.0
PARTITIONS = 3
WAITING = {0: 3, 1: 2, 2: 0}
"""Records published per partition before any member joins; none is ever committed."""


def _describe(api: httpx.Client, group: str) -> GroupDescription | None:
    """The group; None until its first member joined."""
    resp = api.get(f"/v1/groups/{group}")
    if resp.status_code == 404:
        return None
    assert resp.status_code == 200, resp.text
    return GroupDescription.from_json(resp.json())


def _assigned(described: GroupDescription | None) -> dict[str, int]:
    """Each member's client id and how many partitions it holds, once the group is stable."""
    if described is None or described.state != "stable":
        return {}
    return {
        m.client_id or "": sum(len(ps) for ps in m.assigned.values()) for m in described.members
    }


@pytest.fixture
def members(tmp_path: Path) -> Iterator[Any]:
    """Starts ``liftlog consume`` processes; kills any still running at the end."""
    started: list[subprocess.Popen[str]] = []

    def start(server: str, group: str, stream: str, client_id: str) -> subprocess.Popen[str]:
        log = (tmp_path / f"{client_id}.err").open("w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "liftlog.cli", "consume", group, stream, "--server", server,
             "--client-id", client_id, "--session-timeout-ms", str(SESSION_TIMEOUT_MS)],
            stdout=subprocess.DEVNULL,
            stderr=log,
            text=True,
        )  # fmt: skip
        log.close()
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=EXIT_TIMEOUT_S)


def test_consume_members_show_client_and_leave_on_sigterm_and_sigint(
    node, api, stream_name, members, capsys, tmp_path
):
    create_stream(api, stream_name, partitions=PARTITIONS)
    for partition, count in WAITING.items():
        for i in range(count):
            resp = api.post(
                f"/v1/streams/{stream_name}/partitions/{partition}/records",
                json={"records": [{"value": f"v{i}"}]},
                params={"encoding": "utf-8"},
            )
            assert resp.status_code == 200, resp.text
    group = f"g-{stream_name}"
    server = str(api.base_url)
    first = members(server, group, stream_name, "cli-a")
    second = members(server, group, stream_name, "cli-b")
    wait_for(
        lambda: (
            sorted(_assigned(_describe(api, group))) == ["cli-a", "cli-b"]
            and all(_assigned(_describe(api, group)).values())
        ),
        timeout_s=JOIN_TIMEOUT_S,
        message="both members holding partitions",
    )

    assert cli.main(["group", "describe", group, "--server", server]) == 0
    lines = capsys.readouterr().out.splitlines()
    headers = [line.split() for line in lines if line.startswith(("STREAM", "MEMBER"))]
    assert headers[0][2:5] == ["MEMBER", "CLIENT-ID", "HOST"]
    assert headers[1][:3] == ["MEMBER", "CLIENT-ID", "HOST"]
    rows = [line.split() for line in lines if line.startswith(stream_name)]
    assert len(rows) == PARTITIONS
    for row in rows:  # STREAM PARTITION MEMBER CLIENT-ID HOST COMMITTED HIGH_WATERMARK LAG
        assert row[3] in ("cli-a", "cli-b") and row[4] == "127.0.0.1"
        assert row[5] == "-"  # nothing committed ...
        assert row[7] == str(WAITING[int(row[1])])  # ... and the waiting records count as lag

    first.send_signal(signal.SIGTERM)
    wait_for(
        lambda: _assigned(_describe(api, group)) == {"cli-b": PARTITIONS},
        timeout_s=MOVE_TIMEOUT_S,
        message="every partition moved to the remaining member",
    )
    assert first.wait(timeout=EXIT_TIMEOUT_S) == 0
    assert "left group" in (tmp_path / "cli-a.err").read_text()

    second.send_signal(signal.SIGINT)
    wait_for(
        lambda: getattr(_describe(api, group), "state", None) == "empty",
        timeout_s=MOVE_TIMEOUT_S,
        message="the last member left",
    )
    assert second.wait(timeout=EXIT_TIMEOUT_S) == 0
