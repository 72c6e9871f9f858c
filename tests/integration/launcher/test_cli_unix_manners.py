"""The command line behaves as Unix tools do: ``tail -n N`` prints the last N records (``--max
N`` the first N), a reader that closes the pipe early ends the command quietly, and a publish
without an ack to a stream that drops it says so on stderr. Real node, real ``liftlog``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import httpx

from liftlog.embedded.node import NodeProcess
from tests.integration.conftest import create_stream, fetch
from tests.support.waiting import wait_for

CLI_TIMEOUT_S = 60
DROP_TIMEOUT_S = 10
LIFTLOG = str(Path(sys.executable).parent / "liftlog")
PIPE_RECORDS = 3000  # ~200 KB of lines: more than a pipe's buffer holds


def _cli(*args: str, server: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LIFTLOG, *args, "--server", server],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )


def _records(*args: str, server: str) -> list[tuple[int, int, str]]:
    """(partition, offset, value) of each line ``tail --json`` prints."""
    done = _cli("tail", *args, "--json", server=server)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return [(r["partition"], r["offset"], r["value"]) for r in lines]


def _publish(server: str, stream: str, partition: int, *values: str) -> None:
    done = _cli("publish", stream, *values, "--partition", str(partition), server=server)
    assert done.returncode == 0, done.stderr


def test_tail_n_prints_the_last_records_and_max_the_first(
    node: NodeProcess, api: httpx.Client, stream_name: str
) -> None:
    server = node.api_url
    create_stream(api, stream_name, partitions=2)
    for partition in (0, 1):
        _publish(server, stream_name, partition, *(f"p{partition}-{i}" for i in range(5)))
    every = _records(stream_name, server=server)
    assert len(every) == 10
    assert _records(stream_name, "-n", "3", server=server) == every[-3:]
    assert _records(stream_name, "--lines", "20", server=server) == every
    assert _records(stream_name, "-n", "0", server=server) == []
    assert _records(stream_name, "--max", "3", server=server) == every[:3]
    assert _records(stream_name, "--partition", "1", "-n", "2", server=server) == [
        (1, 3, "p1-3"),
        (1, 4, "p1-4"),
    ]
    # the last 2 up to an offset stop, and from a start that leaves fewer than 2
    assert _records(stream_name, "--partition", "0", "--until", "2", "-n", "2", server=server) == [
        (0, 1, "p0-1"),
        (0, 2, "p0-2"),
    ]
    assert _records(stream_name, "--partition", "0", "--from", "4", "-n", "2", server=server) == [
        (0, 4, "p0-4")
    ]


def test_tail_n_then_follows_to_the_stop(
    node: NodeProcess, api: httpx.Client, stream_name: str
) -> None:
    server = node.api_url
    create_stream(api, stream_name)
    _publish(server, stream_name, 0, *(f"v{i}" for i in range(5)))
    tail = subprocess.Popen(
        [LIFTLOG, "tail", stream_name, "-n", "2", "--until", "6", "--json", "--server", server],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(CLI_TIMEOUT_S, tail.kill)  # readline must not wait for ever
    watchdog.start()
    try:
        assert tail.stdout is not None
        first = [json.loads(tail.stdout.readline())["offset"] for _ in range(2)]
        assert first == [3, 4]  # the last two, printed before the stop is reached
        _publish(server, stream_name, 0, "v5", "v6")
        rest, err = tail.communicate(timeout=CLI_TIMEOUT_S)
    finally:
        watchdog.cancel()
        tail.kill()
        tail.wait()
    assert tail.returncode == 0, err
    assert [json.loads(line)["offset"] for line in rest.splitlines()] == [5, 6]


def test_tail_refuses_bad_counts(node: NodeProcess, api: httpx.Client, stream_name: str) -> None:
    server = node.api_url
    create_stream(api, stream_name)
    both = _cli("tail", stream_name, "-n", "3", "--max", "2", server=server)
    assert both.returncode == 1
    assert "liftlog: invalid_request: -n prints the last N records, --max the first N" in (
        both.stderr
    )
    negative = _cli("tail", stream_name, "-n", "-1", server=server)
    assert negative.returncode == 2
    assert "argument -n/--lines: wants 0 or more records, got -1" in negative.stderr


def test_a_reader_that_closes_the_pipe_ends_tail_quietly(
    node: NodeProcess, api: httpx.Client, stream_name: str
) -> None:
    server = node.api_url
    create_stream(api, stream_name)
    values = "".join(f"record-{i}\n" for i in range(PIPE_RECORDS))
    publish = subprocess.run(
        [LIFTLOG, "publish", stream_name, "--batch", "--server", server],
        input=values,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )
    assert publish.returncode == 0, publish.stderr
    # `liftlog tail | head -1`: the reader takes one line and closes its end
    tail = subprocess.Popen(
        [LIFTLOG, "tail", stream_name, "--server", server],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert tail.stdout is not None
    first = tail.stdout.readline()
    tail.stdout.close()
    try:
        _, err = tail.communicate(timeout=CLI_TIMEOUT_S)
    finally:
        tail.kill()
        tail.wait()
    assert b"record-0" in first
    assert tail.returncode in (0, 141), err
    assert b"Traceback" not in err and b"Exception ignored" not in err, err
    assert err == b""


def _drops(api: httpx.Client, metric: str, stream: str) -> float:
    pattern = rf'{metric}\{{[^}}]*stream="{re.escape(stream)}"[^}}]*\}} (\S+)'
    return sum(float(v) for v in re.findall(pattern, api.get("/metrics").text))


def test_an_unacked_publish_to_a_paused_or_read_only_stream_warns(
    node: NodeProcess, api: httpx.Client, stream_name: str
) -> None:
    server = node.api_url
    create_stream(api, stream_name)
    assert api.post(f"/v1/streams/{stream_name}/pause").json()["paused"] is True
    paused = _cli("publish", stream_name, "lost", "--ack-policy", "none", server=server)
    assert paused.returncode == 0, paused.stderr
    assert paused.stdout == "published (no ack requested)\n"
    assert paused.stderr == (
        f"liftlog: warning: stream {stream_name} is paused: 1 record was published without an "
        "ack and not stored (no ack, so no error came back); run `liftlog stream resume "
        f"{stream_name}`, or publish with --ack-policy leader to see the refusal\n"
    )
    wait_for(
        lambda: _drops(api, "liftlog_paused_drops_total", stream_name) == 1,
        DROP_TIMEOUT_S,
        message="the node to drop the record",
    )

    assert api.post(f"/v1/streams/{stream_name}/resume").json()["paused"] is False
    assert api.post(f"/v1/streams/{stream_name}/readonly").json()["read_only"] is True
    read_only = _cli(
        "publish", stream_name, "a", "b", "--ack-policy", "none", "--batch", server=server
    )
    assert read_only.returncode == 0, read_only.stderr
    assert f"stream {stream_name} is read-only: 2 records were published" in read_only.stderr
    assert f"run `liftlog stream readwrite {stream_name}`" in read_only.stderr
    wait_for(
        lambda: _drops(api, "liftlog_readonly_drops_total", stream_name) > 0,
        DROP_TIMEOUT_S,
        message="the node to drop the batch",
    )

    assert api.post(f"/v1/streams/{stream_name}/readwrite").json()["read_only"] is False
    stored = _cli("publish", stream_name, "kept", "--ack-policy", "none", server=server)
    assert stored.returncode == 0 and stored.stderr == "", stored.stderr
    wait_for(
        lambda: fetch(api, stream_name)["high_watermark"] == 1,
        DROP_TIMEOUT_S,
        message="the record published to the active stream",
    )
    assert [r["value"] for r in fetch(api, stream_name)["records"]] == ["kept"]
