"""Key compaction on a real node's lake: known record sets published over REST, exported by
flush, compacted by the Spark job (local[2], one session for the module), and read back with
deltalake/pyarrow and with Spark from the Parquet files the snapshot lists."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from datasource.compaction import (
    CompactionOptions,
    CompactionSchedule,
    CompactionTarget,
    compact_stream,
)
from datasource.compaction.execute import execute_plan
from datasource.compaction.output import COMPACTED_PREFIX
from datasource.compaction.plan import plan_compaction
from datasource.compaction.report import COMPACTED, SKIPPED
from datasource.compaction.target import describe_target
from liftlog import cli
from spark_log.api_models import FlushResult
from spark_log.client.rest import RestClient
from spark_log.lake.compaction_state import COMPACTION_METADATA_KEY, compaction_app_id
from spark_log.lake.errors import LakeCommitConflictError
from spark_log.lake.rewrite import RewriteSnapshot
from spark_log.lake.storage import LakeStorage
from tests.integration.conftest import create_stream, node_client
from tests.support.compaction_race import QUIET, compact_twice_at_once
from tests.support.waiting import wait_for

HOUR_MS = 3_600_000
RETENTION_MS = HOUR_MS
Record = tuple[int, int, str | None, str]  # partition, offset, key, value


# ----------------------------------------------------------------------------- helpers


def publish(
    api: httpx.Client, stream: str, partition: int, rows: list[tuple[str | None, str]]
) -> list[Record]:
    """Publish (key, value) rows to one partition; return them with their offsets."""
    resp = api.post(
        f"/v1/streams/{stream}/partitions/{partition}/records",
        json={
            "records": [{"key": k, "value": v} if k is not None else {"value": v} for k, v in rows]
        },
        params={"encoding": "utf-8"},
    )
    assert resp.status_code == 200, resp.text
    offsets = resp.json()["offsets"]
    return [(partition, o, k, v) for o, (k, v) in zip(offsets, rows, strict=True)]


def flush(api: httpx.Client, stream: str) -> list[int | None]:
    resp = api.post(f"/v1/streams/{stream}/flush")
    assert resp.status_code == 200, resp.text
    return [p.lake_offset for p in FlushResult.from_json(resp.json()).partitions]


def target_of(api: httpx.Client, stream: str) -> CompactionTarget:
    return describe_target(RestClient(str(api.base_url)), stream)


def latest_per_key(records: list[Record], tombstones_expired: bool) -> set[tuple[int, int]]:
    """The model: (partition, offset) of every record compaction must keep."""
    latest: dict[tuple[int, str], Record] = {}
    kept = set()
    for r in records:
        p, offset, key, _value = r
        if key is None:
            kept.add((p, offset))
        elif (p, key) not in latest or latest[(p, key)][1] < offset:
            latest[(p, key)] = r
    for p, offset, _key, value in latest.values():
        if value or not tombstones_expired:
            kept.add((p, offset))
    return kept


def table_files(uri: str) -> list[dict[str, Any]]:
    return pa.table(DeltaTable(uri).get_add_actions(flatten=True)).to_pylist()


def table_rows(uri: str) -> list[tuple[int, int, bytes | None, bytes]]:
    """Every row of the latest snapshot, read with pyarrow from the files it lists."""
    rows = []
    for f in table_files(uri):
        part = pq.read_table(Path(uri) / f["path"], columns=["offset", "key", "value"])
        p = int(f["partition.partition"])
        rows.extend((p, r["offset"], r["key"], r["value"]) for r in part.to_pylist())
    return sorted(rows, key=lambda r: (r[0], r[1]))


def spark_rows(spark: Any, uri: str) -> list[tuple[int, int]]:
    files = [str(Path(uri) / f["path"]) for f in table_files(uri)]
    frame = spark.read.option("basePath", uri).parquet(*files)
    return sorted((r.partition, r.offset) for r in frame.select("partition", "offset").collect())


def compactions(uri: str) -> list[dict[str, Any]]:
    """The compaction commits (not optimize) in the table's history, newest first."""
    return [
        h[COMPACTION_METADATA_KEY]
        for h in DeltaTable(uri).history()
        if h.get(COMPACTION_METADATA_KEY, {}).get("operation") == "compaction"
    ]


def publish_known_records(api: httpx.Client, stream: str) -> list[Record]:
    """Three exports per partition: keys overwritten across files, keyless records (one of
    them empty, which is not a tombstone), and tombstones that are a key's latest record."""
    rounds = [
        [("k1", "a1"), ("k2", "a2"), (None, "free-1"), ("k3", "a3"), ("k1", "b1"), ("k4", "a4")],
        [("k2", ""), ("k3", "b3"), (None, ""), ("k5", "a5"), ("k5", ""), ("k1", "c1")],
        [("k4", ""), ("k6", "a6"), (None, "free-2"), ("k2", "again")],
    ]
    records: list[Record] = []
    for rows in rounds:
        records += publish(api, stream, 0, rows)
        records += publish(api, stream, 1, [(k and f"p1-{k}", v) for k, v in rows[:3]])
        flush(api, stream)
    return records


# ----------------------------------------------------------------------------- tests


def test_compaction_keeps_latest_per_key_keyless_records_and_fresh_tombstones(
    node, api, stream_name, spark
):
    create_stream(api, stream_name, partitions=2, compaction=True, delete_retention_ms=RETENTION_MS)
    records = publish_known_records(api, stream_name)
    assert flush(api, stream_name) == [16, 9]
    target = target_of(api, stream_name)
    uri = target.table_uri
    files_before = table_files(uri)

    report = compact_stream(spark, target, QUIET)

    assert report.committed and report.tombstones_removed == 0
    assert [
        (p.partition, p.status, p.records_before, p.records_after, p.files_removed)
        for p in report.partitions
    ] == [
        (0, COMPACTED, 16, 9, len([f for f in files_before if f["partition.partition"] == 0])),
        (1, COMPACTED, 9, 8, len([f for f in files_before if f["partition.partition"] == 1])),
    ]
    want = latest_per_key(records, tombstones_expired=False)
    rows = table_rows(uri)
    assert {(p, o) for p, o, _, _ in rows} == want and len(rows) == len(want)
    by_offset = {(p, o): (k, v) for p, o, k, v in rows}
    assert by_offset[(0, 15)] == (b"k2", b"again")  # a later value after a tombstone
    assert by_offset[(0, 8)] == (None, b"")  # keyless and empty: not a tombstone
    assert by_offset[(0, 10)] == (b"k5", b"")  # the tombstone itself stays for now
    assert spark_rows(spark, uri) == sorted(want)

    files = table_files(uri)
    assert all(
        f["path"].startswith(f"partition={f['partition.partition']}/{COMPACTED_PREFIX}")
        for f in files
    )
    for f in files:
        offsets = [o for p, o, _, _ in rows if p == f["partition.partition"]]
        assert (f["num_records"], f["min.offset"], f["max.offset"]) == (
            len(offsets),
            min(offsets),
            max(offsets),
        )
        assert f["min.timestamp"] is not None and f["max.timestamp"] >= f["min.timestamp"]
    (meta,) = compactions(uri)
    assert meta["partitions"]["0"]["records_before"] == 16
    assert DeltaTable(uri).transaction_version(f"liftlog:{stream_name}:0") == 16  # export's

    again = compact_stream(spark, target, QUIET)  # idempotent: nothing new, nothing committed
    assert not again.committed and again.message == "nothing to compact"
    assert {p.status for p in again.partitions} == {SKIPPED}
    assert table_files(uri) == files

    later = int(time.time() * 1000) + 2 * HOUR_MS  # past the delete retention
    expired = compact_stream(spark, target, QUIET, now_ms=later)
    assert expired.committed and expired.tombstones_removed == 4  # k4, k5 and p1's k2, k4
    assert {(p, o) for p, o, _, _ in table_rows(uri)} == latest_per_key(records, True)
    assert not compact_stream(spark, target, QUIET, now_ms=later).committed


def test_records_above_the_boundary_are_untouched_and_exports_continue(
    node, api, stream_name, spark
):
    create_stream(api, stream_name, compaction=True)
    first = publish(api, stream_name, 0, [("a", str(i)) for i in range(10)])
    flush(api, stream_name)
    second = publish(api, stream_name, 0, [("a", f"x{i}") for i in range(5)])
    assert flush(api, stream_name) == [15]
    target = target_of(api, stream_name)

    report = compact_stream(
        spark, target, CompactionOptions(boundary_offset=10, optimize=False, vacuum=False)
    )
    assert report.committed and report.partitions[0].boundary == 10
    # below 10 only offset 9 (the latest "a" there) stays; 10..14 are above the boundary
    assert [o for _, o, _, _ in table_rows(target.table_uri)] == [9, 10, 11, 12, 13, 14]

    third = publish(api, stream_name, 0, [("a", "y")])
    assert flush(api, stream_name) == [16]  # the exporter appends after a compaction
    report = compact_stream(spark, target, QUIET)
    assert report.partitions[0].boundary == 16
    assert [o for _, o, _, _ in table_rows(target.table_uri)] == [third[0][1]]
    assert len(first + second + third) == 16


def test_export_and_compaction_race_loses_nothing(node, api, stream_name, spark):
    create_stream(api, stream_name, partitions=2, compaction=True)
    published: list[Record] = []
    published += publish(api, stream_name, 0, [(f"k{i % 7}", f"v{i}") for i in range(40)])
    flush(api, stream_name)
    target = target_of(api, stream_name)
    # first deterministically: an export commits between the compaction's snapshot and its commit
    snapshot = RewriteSnapshot.open(LakeStorage(target.table_uri), stream_name)
    plan = plan_compaction(snapshot, target, QUIET, int(time.time() * 1000))
    published += publish(api, stream_name, 0, [("k1", "after-the-snapshot")])
    assert flush(api, stream_name) == [41, 0]
    report = execute_plan(spark, snapshot, plan, QUIET, lambda _: None)
    assert report.committed and report.committed_version > plan.snapshot_version + 1
    assert [o for _, o, _, _ in table_rows(target.table_uri)] == [*range(33, 40), 40]
    # then exports and compactions (with packing) concurrently
    stop = threading.Event()
    errors: list[BaseException] = []

    def export_forever() -> None:
        with node_client(str(api.base_url), timeout=60) as client:
            round_ = 0
            while not stop.is_set() or round_ < 3:
                for p in (0, 1):
                    rows = [
                        (f"k{(round_ + i) % 7}" if i % 5 else None, f"r{round_}-{i}")
                        for i in range(20)
                    ]
                    published.extend(publish(client, stream_name, p, rows))
                flush(client, stream_name)
                round_ += 1

    def guarded() -> None:
        try:
            export_forever()
        except (AssertionError, httpx.HTTPError) as exc:  # reported in the main thread
            errors.append(exc)

    exporter = threading.Thread(target=guarded, name="export-loop")
    exporter.start()
    try:
        wait_for(lambda: len(published) > 80, 30, message="exports under way")
        reports = [compact_stream(spark, target, CompactionOptions(vacuum=False)) for _ in range(2)]
    finally:
        stop.set()
        exporter.join(60)
    assert not errors, errors
    assert any(r.committed for r in reports)
    lake = flush(api, stream_name)
    counts = [sum(1 for p, *_ in published if p == q) for q in (0, 1)]
    assert lake == counts  # every export landed, none repeated

    offsets = [(p, o) for p, o, _, _ in table_rows(target.table_uri)]
    assert len(offsets) == len(set(offsets)), "duplicate offsets after the race"
    present = set(offsets)
    superseded = {
        (p, o)
        for p, o, k, _ in published
        if k is not None and any(q == p and k2 == k and o2 > o for q, o2, k2, _ in published)
    }
    every = {(p, o) for p, o, _, _ in published}
    assert every - superseded <= present <= every


def test_two_racing_compactions_commit_exactly_once(node, api, stream_name, spark):
    create_stream(api, stream_name, compaction=True)
    for i in range(3):
        publish(api, stream_name, 0, [(f"k{j}", f"{i}-{j}") for j in range(6)])
        flush(api, stream_name)
    target = target_of(api, stream_name)
    root = Path(target.table_uri)
    now = int(time.time() * 1000)
    first = RewriteSnapshot.open(LakeStorage(target.table_uri), stream_name)
    second = RewriteSnapshot.open(LakeStorage(target.table_uri), stream_name)
    plan_a = plan_compaction(first, target, QUIET, now)
    plan_b = plan_compaction(second, target, QUIET, now + 1)
    assert plan_a.snapshot_version == plan_b.snapshot_version

    won = execute_plan(spark, first, plan_a, QUIET, lambda _: None)
    assert won.committed
    with pytest.raises(LakeCommitConflictError):
        execute_plan(spark, second, plan_b, QUIET, lambda _: None)
    assert not list(root.glob(f"partition=0/{COMPACTED_PREFIX}{plan_b.run_id}-*"))  # cleaned up
    assert [o for _, o, _, _ in table_rows(target.table_uri)] == list(range(12, 18))
    assert len(compactions(target.table_uri)) == 1

    # truly concurrent: whichever order, one commit and no duplicates
    publish(api, stream_name, 0, [(f"k{j}", "new") for j in range(6)])
    flush(api, stream_name)
    reports, failures = compact_twice_at_once(spark, target, 120)
    assert not failures and len(reports) == 2
    assert sum(r.committed for r in reports) == 1
    assert [o for _, o, _, _ in table_rows(target.table_uri)] == list(range(18, 24))
    assert len(compactions(target.table_uri)) == 2


def test_cli_compacts_with_progress_and_maintenance(node, api, stream_name, spark, capsys):
    server = str(api.base_url)
    assert (
        cli.main(
            [
                "stream",
                "create",
                stream_name,
                "--subject",
                f"{stream_name}.in",
                "--compaction",
                "--compaction-interval-s",
                "3600",
                "--delete-retention-ms",
                "1000",
                "--server",
                server,
            ]
        )
        == 0
    )
    assert "compaction: on (every 3600s), delete retention 1000 ms" in capsys.readouterr().out
    for i in range(3):
        publish(api, stream_name, 0, [("same", f"v{i}"), (None, f"free{i}")])
        flush(api, stream_name)

    code = cli.main(
        [
            "compact",
            stream_name,
            "--server",
            server,
            "--master",
            "local[2]",
            "--vacuum-retention-hours",
            "0",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "partition 0: below offset 6: 6 -> 4 records; 3 file(s) removed, 1 added" in out
    assert "committed table version" in out and "vacuum: 3 file(s) deleted" in out
    uri = target_of(api, stream_name).table_uri
    on_disk = sorted(str(p.relative_to(uri)) for p in Path(uri).glob("partition=*/*.parquet"))
    assert on_disk == sorted(f["path"] for f in table_files(uri))  # vacuumed to the snapshot

    assert cli.main(["compact", stream_name, "--server", server, "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["committed"] is False and body["message"] == "nothing to compact"

    other = f"{stream_name}-off"
    create_stream(api, other)
    assert cli.main(["compact", other, "--server", server]) == 1
    # liftlog's CLI refuses it with one REST call, before Spark starts
    assert "compaction_disabled" in capsys.readouterr().err


def test_watch_compacts_due_streams_and_a_restart_waits_for_the_interval(
    node, api, stream_name, spark
):
    create_stream(api, stream_name, compaction=True, compaction_interval_s=3600)
    publish(api, stream_name, 0, [("k", "1"), ("k", "2")])
    flush(api, stream_name)
    client = RestClient(str(api.base_url))
    uri = target_of(api, stream_name).table_uri

    first = CompactionSchedule(spark, client, QUIET, lambda _: None, only_stream=stream_name)
    result = first.tick()
    assert [r.committed for r in result.reports] == [True]  # never compacted: due at once
    last_run = DeltaTable(uri).transaction_version(compaction_app_id(stream_name))

    publish(api, stream_name, 0, [("k", "3")])
    flush(api, stream_name)
    restarted = CompactionSchedule(spark, client, QUIET, lambda _: None, only_stream=stream_name)
    result = restarted.tick()
    assert result.reports == [] and 3000 < (result.next_due_s or 0) <= 3600
    assert DeltaTable(uri).transaction_version(compaction_app_id(stream_name)) == last_run

    an_hour_later = CompactionSchedule(
        spark,
        client,
        QUIET,
        lambda _: None,
        only_stream=stream_name,
        clock=lambda: time.time() + 3600,
    )
    ticks: list[Any] = []
    stop = threading.Event()
    runner = threading.Thread(target=an_hour_later.run, args=(stop, 0.5, ticks.append))
    runner.start()
    try:
        wait_for(lambda: ticks and ticks[0].reports, 120, message="the due stream compacted")
    finally:
        stop.set()
        runner.join(60)
    assert ticks[0].reports[0].committed
    assert [o for _, o, _, _ in table_rows(uri)] == [2]
