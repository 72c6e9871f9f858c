"""The lake export through real nodes: known record sets published over NATS and REST, sealed
and exported by `liftlog stream flush`, then read back from the Delta table with deltalake,
Polars, DuckDB and Spark (Parquet files of the snapshot); export cadence by age and by size;
restart; retention bounded by the lake; a failing lake that recovers; the lake disabled."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import duckdb
import httpx
import polars as pl
import pytest
from deltalake import DeltaTable

from liftlog import cli
from spark_log.api_models import FlushResult, StreamDescription
from spark_log.client import Client
from spark_log.config import LakeConfig, LogConfig
from tests.integration.conftest import create_stream, node_client
from tests.support.lake_stores import LakeUnderTest, open_delta
from tests.support.waiting import wait_for

NEVER_S = 3600.0  # an export interval no test waits for
HUGE_BYTES = 1 << 40


def describe(api: httpx.Client, name: str) -> StreamDescription:
    resp = api.get(f"/v1/streams/{name}")
    assert resp.status_code == 200, resp.text
    return StreamDescription.from_json(resp.json())


def flush(api: httpx.Client, name: str) -> FlushResult:
    resp = api.post(f"/v1/streams/{name}/flush")
    assert resp.status_code == 200, resp.text
    return FlushResult.from_json(resp.json())


def lake_uri(answer: StreamDescription | FlushResult) -> str:
    assert answer.lake is not None, "the lake is disabled"
    return answer.lake.uri


def lake_offsets(api: httpx.Client, name: str) -> list[int | None]:
    return [p.lake_offset for p in describe(api, name).partitions]


def committed_records(api: httpx.Client, name: str, partition: int) -> list[dict[str, Any]]:
    """Every committed record of a partition over REST (utf-8: the test data is text)."""
    records: list[dict[str, Any]] = []
    offset = describe(api, name).partition(partition).log_start_offset
    while True:
        body = api.get(
            f"/v1/streams/{name}/partitions/{partition}/records",
            params={"offset": offset, "max_records": 10_000, "encoding": "utf-8"},
        ).json()
        if not body["records"]:
            return records
        records.extend(body["records"])
        offset = body["next_offset"]


def metric(api: httpx.Client, name: str, stream: str) -> float:
    pattern = rf'^{name}\{{partition="0",stream="{re.escape(stream)}"\}} (\S+)$'
    found = re.findall(pattern, api.get("/metrics").text, re.M)
    return float(found[0]) if found else 0.0


def lake_rows(uri: str) -> list[dict[str, Any]]:
    table = open_delta(uri).to_pyarrow_table()
    return sorted(table.to_pylist(), key=lambda r: (r["partition"], r["offset"]))


def utc(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC)


def flush_with_cli(server: str, name: str, capsys: pytest.CaptureFixture[str]) -> FlushResult:
    capsys.readouterr()
    assert cli.main(["stream", "flush", name, "--json", "--server", server]) == 0
    return FlushResult.from_json(json.loads(capsys.readouterr().out))


async def publish_known_records(server: str, name: str) -> dict[int, list[dict[str, Any]]]:
    """Partition 0: single records over NATS with keys and headers; partition 1: producer
    batches. Returns what each partition must hold, in offset order."""
    expected: dict[int, list[dict[str, Any]]] = {0: [], 1: []}
    async with Client(server) as client:
        for i in range(30):
            key = None if i % 4 == 0 else f"key-{i % 5}"
            headers = {"n": str(i), "kind": "single"} if i % 3 else None
            ack = await client.publish(name, f"value-{i}", key=key, headers=headers, partition=0)
            assert ack is not None and ack.offset == i
            expected[0].append({"value": f"value-{i}", "key": key, "headers": headers or {}})
        for b in range(3):
            values = [f"batch-{b}-{j}" for j in range(20)]
            keys = [f"bk-{j % 3}" if j % 2 else None for j in range(20)]
            ack = await client.publish_batch(name, values, keys=keys, partition=1)
            assert ack is not None and ack.offset == 20 * b
            expected[1].extend(
                {"value": v, "key": k, "headers": None} for v, k in zip(values, keys, strict=True)
            )
    return expected


def check_rows_match(
    rows: list[dict[str, Any]], api: httpx.Client, name: str, p: int, expected: list[dict[str, Any]]
) -> None:
    """Lake rows of partition p against the log (offsets, timestamps, headers) and against
    what was published (values, keys, user headers): dense from 0, nothing extra."""
    mine = [r for r in rows if r["partition"] == p]
    stored = committed_records(api, name, p)
    assert (
        [r["offset"] for r in mine] == list(range(len(expected))) == [r["offset"] for r in stored]
    )
    for row, record, want in zip(mine, stored, expected, strict=True):
        assert row["value"] == want["value"].encode() == record["value"].encode()
        assert row["key"] == (want["key"].encode() if want["key"] else None)
        assert row["timestamp"] == utc(record["timestamp"])
        assert row["timestamp"].utcoffset() == dt.timedelta(0)
        assert row["subject"] == record["subject"]
        lake_headers = {h["key"]: h["value"].decode() for h in row["headers"] or []}
        assert lake_headers == record["headers"]
        for k, v in (want["headers"] or {}).items():
            assert lake_headers[k] == v


async def test_flush_exports_every_record_readable_by_deltalake_polars_duckdb_and_spark(
    make_node, stream_name, capsys, spark
):
    node = make_node(lake=LakeConfig(export_interval_s=NEVER_S, export_min_bytes=HUGE_BYTES))
    with node_client(node.api_url, timeout=60) as api:
        create_stream(api, stream_name, partitions=2)
        expected = await publish_known_records(node.api_url, stream_name)
        flushed = flush_with_cli(node.api_url, stream_name, capsys)
        assert [(p.partition, p.lake_offset) for p in flushed.partitions] == [
            (0, 30),
            (1, 60),
        ]
        body = describe(api, stream_name)
        uri = lake_uri(body)
        assert uri == lake_uri(flushed) and uri.startswith(node.config.lake.uri)
        assert [p.lake_offset for p in body.partitions] == [30, 60]
        assert [p.lake_start_offset for p in body.partitions] == [0, 0]
        capsys.readouterr()
        assert cli.main(["stream", "describe", stream_name, "--server", node.api_url]) == 0
        printed = capsys.readouterr().out
        assert f"lake table: {uri}" in printed and "LAKE" in printed

        rows = lake_rows(uri)  # deltalake
        for p in (0, 1):
            check_rows_match(rows, api, stream_name, p, expected[p])
        assert len(rows) == 90

    frame = pl.read_delta(uri).sort(["partition", "offset"])  # Polars
    assert frame.schema["timestamp"] == pl.Datetime("us", "UTC")
    assert frame.select(["partition", "offset", "value", "key"]).rows() == [
        (r["partition"], r["offset"], r["value"], r["key"]) for r in rows
    ]

    con = duckdb.connect()  # DuckDB over the Delta snapshot (deltalake lists the files)
    con.register("snapshot", DeltaTable(uri).to_pyarrow_dataset())
    duck = con.sql(
        'select "partition", "offset", "value", epoch_us("timestamp") from snapshot '
        'order by "partition", "offset"'
    ).fetchall()
    assert duck == [
        (r["partition"], r["offset"], r["value"], _micros(r["timestamp"])) for r in rows
    ]

    files = DeltaTable(uri).file_uris()  # Spark: the Parquet files the snapshot lists
    frame = spark.read.option("basePath", uri).parquet(*files)
    got = (
        frame.selectExpr(
            "cast(partition as int) as p", "offset", "value", "key", "unix_micros(timestamp) as us"
        )
        .orderBy("p", "offset")
        .collect()
    )
    assert [(r.p, r.offset, bytes(r.value), _bytes(r.key), r.us) for r in got] == [
        (r["partition"], r["offset"], r["value"], r["key"], _micros(r["timestamp"])) for r in rows
    ]


def _micros(ts: dt.datetime) -> int:
    return int(ts.timestamp()) * 1_000_000 + ts.microsecond


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


def test_records_are_exported_by_age_without_a_flush(make_node, stream_name):
    node = make_node(lake=LakeConfig(export_interval_s=1.0, export_min_bytes=HUGE_BYTES))
    with node_client(node.api_url, timeout=30) as api:
        create_stream(api, stream_name)
        url = f"/v1/streams/{stream_name}/partitions/0/records"
        api.post(
            url,
            json={"records": [{"value": f"r{i}"} for i in range(10)]},
            params={"encoding": "utf-8"},
        )
        wait_for(
            lambda: lake_offsets(api, stream_name) == [10],
            20,
            message="the age trigger exported the records",
        )
        api.post(url, json={"records": [{"value": "late"}]}, params={"encoding": "utf-8"})
        wait_for(
            lambda: lake_offsets(api, stream_name) == [11],
            20,
            message="a later record follows by age too",
        )
        uri = lake_uri(describe(api, stream_name))
    assert [r["value"] for r in lake_rows(uri)] == [f"r{i}".encode() for i in range(10)] + [b"late"]


def test_records_are_exported_by_size_without_a_flush(make_node, stream_name):
    node = make_node(lake=LakeConfig(export_interval_s=NEVER_S, export_min_bytes=16 * 1024))
    with node_client(node.api_url, timeout=30) as api:
        create_stream(api, stream_name)
        url = f"/v1/streams/{stream_name}/partitions/0/records"
        for i in range(8):  # ~4 KiB per request: the fourth one crosses 16 KiB
            api.post(
                url,
                json={"records": [{"value": f"{i}-{j}-" + "x" * 400} for j in range(10)]},
                params={"encoding": "utf-8"},
            )
        wait_for(
            lambda: (lake_offsets(api, stream_name)[0] or 0) >= 30,
            20,
            message="the size trigger exported the records",
        )
        assert metric(api, "liftlog_lake_commits_total", stream_name) >= 1


def test_a_restarted_node_keeps_its_lake_offset_and_continues_without_duplicates(
    make_node, stream_name, test_lake: LakeUnderTest
):
    node = make_node(lake=test_lake.config(export_interval_s=NEVER_S, export_min_bytes=HUGE_BYTES))
    url = f"/v1/streams/{stream_name}/partitions/0/records"
    with node_client(node.api_url, timeout=30) as api:
        create_stream(api, stream_name)
        api.post(
            url,
            json={"records": [{"value": f"a{i}"} for i in range(10)]},
            params={"encoding": "utf-8"},
        )
        assert flush(api, stream_name).partitions[0].lake_offset == 10
    node.restart()
    with node_client(node.api_url, timeout=30) as api:
        assert lake_offsets(api, stream_name) == [10]
        api.post(
            url,
            json={"records": [{"value": f"b{i}"} for i in range(5)]},
            params={"encoding": "utf-8"},
        )
        flushed = flush(api, stream_name)
        assert flushed.partitions[0].lake_offset == 15
        uri = lake_uri(flushed)
    rows = lake_rows(uri)
    assert [r["offset"] for r in rows] == list(range(15))
    assert [r["value"] for r in rows] == [f"a{i}".encode() for i in range(10)] + [
        f"b{i}".encode() for i in range(5)
    ]
    spans = [
        (h["liftlog"]["start_offset"], h["liftlog"]["end_offset"])
        for h in reversed(open_delta(uri).history())
        if "liftlog" in h
    ]
    assert spans == [(0, 10), (10, 15)]


def test_retention_deletes_only_segments_the_lake_holds(
    make_node, stream_name, test_lake: LakeUnderTest
):
    node = make_node(
        log=LogConfig(segment_bytes=2048, retention_check_interval_ms=100),
        lake=test_lake.config(export_interval_s=NEVER_S, export_min_bytes=HUGE_BYTES),
    )
    url = f"/v1/streams/{stream_name}/partitions/0/records"
    with node_client(node.api_url, timeout=30) as api:
        create_stream(api, stream_name, retention_messages=50)

        def publish(prefix: str) -> None:
            for i in range(40):
                body = {"records": [{"value": f"{prefix}{i}-{j}" + "x" * 40} for j in range(5)]}
                assert api.post(url, json=body, params={"encoding": "utf-8"}).status_code == 200

        def log_start() -> int:
            return describe(api, stream_name).partition(0).log_start_offset

        def retention_ran(times: int) -> None:
            seen = metric(api, "liftlog_retention_checks_total", stream_name)
            wait_for(
                lambda: metric(api, "liftlog_retention_checks_total", stream_name) >= seen + times,
                20,
                message=f"retention ran {times} more times",
            )

        publish("a")
        retention_ran(5)
        assert log_start() == 0  # nothing in the lake yet: nothing deleted
        assert flush(api, stream_name).partitions[0].lake_offset == 200
        wait_for(lambda: log_start() > 0, 20, message="retention deleted exported segments")
        publish("b")  # 200 more, not exported: retention wants all but 50 gone
        retention_ran(5)
        start = log_start()
        assert 0 < start <= 200
        kept = committed_records(api, stream_name, 0)
        assert kept[0]["offset"] == start and kept[-1]["offset"] == 399
        uri = lake_uri(describe(api, stream_name))
    assert [r["offset"] for r in lake_rows(uri)] == list(range(200))


def test_a_failing_lake_is_counted_and_retried_while_ingest_goes_on(
    make_node, stream_name, tmp_path
):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the lake's directory should be")
    node = make_node(
        lake=LakeConfig(uri=str(blocker / "lake"), export_interval_s=0.5, retry_backoff_max_s=1.0)
    )
    url = f"/v1/streams/{stream_name}/partitions/0/records"
    with node_client(node.api_url, timeout=30) as api:
        create_stream(api, stream_name)
        for i in range(5):
            resp = api.post(
                url, json={"records": [{"value": f"r{i}"}]}, params={"encoding": "utf-8"}
            )
            assert resp.status_code == 200, resp.text  # ingest never waits for the lake
        wait_for(
            lambda: metric(api, "liftlog_lake_export_errors_total", stream_name) >= 2,
            20,
            message="export failures counted",
        )
        resp = api.post(f"/v1/streams/{stream_name}/flush")
        assert resp.status_code == 503 and resp.json()["error"]["code"] == "lake_error"
        assert "lake export failed" in Path(node.log_path).read_text()
        blocker.unlink()  # the store comes back
        wait_for(
            lambda: lake_offsets(api, stream_name) == [5],
            30,
            message="the export recovered after the lake came back",
        )
        uri = lake_uri(describe(api, stream_name))
    assert [r["value"] for r in lake_rows(uri)] == [f"r{i}".encode() for i in range(5)]


def test_with_the_lake_disabled_nothing_is_exported(make_node, stream_name):
    node = make_node(lake=LakeConfig(enabled=False))
    with node_client(node.api_url, timeout=30) as api:
        create_stream(api, stream_name)
        api.post(
            f"/v1/streams/{stream_name}/partitions/0/records",
            json={"records": [{"value": "x"}]},
            params={"encoding": "utf-8"},
        )
        body = describe(api, stream_name)
        assert body.lake is None and body.partition(0).lake_offset is None
        flushed = api.post(f"/v1/streams/{stream_name}/flush").json()
        assert flushed["lake"] is None
        assert flushed["partitions"] == [
            {"partition": 0, "high_watermark": 1, "log_start_offset": 0, "lake_offset": None}
        ]
    assert not Path(node.config.lake.uri).exists()
