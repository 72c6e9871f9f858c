"""Key compaction of an ``s3://`` lake on a real S3 server (SeaweedFS), with no Hadoop
connector: the job's Spark tasks read and write the lake files through pyarrow, delta-rs
commits with the lake's storage options. Tables are laid out as partition leaders export them
(``s3_lake``), and every result is read back through deltalake."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pyarrow.fs as pafs
import pytest

from datasource.compaction import CompactionOptions, CompactionSchedule, compact_stream
from datasource.compaction.execute import execute_plan
from datasource.compaction.output import COMPACTED_PREFIX
from datasource.compaction.plan import plan_compaction
from datasource.compaction.report import COMPACTED, SKIPPED
from datasource.compaction.settings import CompactionTarget
from datasource.session_conf import SESSION_LAKE_PREFIX
from liftlog import cli
from liftlog.embedded.seaweedfs import S3Credentials
from spark_log.api_models import StreamDescription
from spark_log.client.rest import RestClient
from spark_log.config import LakeConfig
from spark_log.lake.commit_safety import PROBE_DIR
from spark_log.lake.compaction_state import compaction_app_id
from spark_log.lake.errors import LakeCommitConflictError, UnsafeLakeStoreError
from spark_log.lake.rewrite import RewriteSnapshot
from spark_log.lake.storage import LakeStorage
from tests.integration.conftest import create_stream, node_client
from tests.support.compaction_race import QUIET, compact_twice_at_once
from tests.support.s3_lake import Row, S3StreamTable, s3_options
from tests.support.waiting import wait_for

HOUR_MS = 3_600_000
EXPORT_ROUNDS = (
    [("k1", "a1"), ("k2", "a2"), (None, "free-1"), ("k3", "a3"), ("k1", "b1"), ("k4", "a4")],
    [("k2", ""), ("k3", "b3"), (None, ""), ("k5", "a5"), ("k5", ""), ("k1", "c1")],
    [("k4", ""), ("k6", "a6"), (None, "free-2"), ("k2", "again")],
)


def latest_per_key(records: list[Row], tombstones_expired: bool) -> set[tuple[int, int]]:
    """The model: (partition, offset) of every record compaction must keep."""
    latest: dict[tuple[int, str], Row] = {}
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


@pytest.fixture
def lake(s3_bucket: tuple[str, S3Credentials], request: pytest.FixtureRequest) -> S3StreamTable:
    bucket, creds = s3_bucket
    return S3StreamTable.new(bucket, creds, request.node.name[:40].replace("_", "-"), 2)


def export_known_records(lake: S3StreamTable) -> list[Row]:
    records: list[Row] = []
    for rows in EXPORT_ROUNDS:
        records += lake.export(0, rows)
        records += lake.export(1, [(k and f"p1-{k}", v) for k, v in rows[:3]])
    return records


def test_compaction_on_s3_keeps_latest_per_key_with_stats_packing_and_vacuum(lake, spark):
    records = export_known_records(lake)
    target = lake.target()
    files_before = lake.files()

    report = compact_stream(spark, target, QUIET)

    assert report.committed and report.tombstones_removed == 0
    assert [
        (p.partition, p.status, p.records_before, p.records_after) for p in report.partitions
    ] == [
        (0, COMPACTED, 16, 9),
        (1, COMPACTED, 9, 8),
    ]
    assert report.partitions[0].files_removed == 3 and len(files_before) == 6
    assert set(lake.offsets()) == latest_per_key(records, tombstones_expired=False)
    by_offset = {(p, o): (k, v) for p, o, k, v in lake.rows()}
    assert by_offset[(0, 15)] == (b"k2", b"again") and by_offset[(0, 8)] == (None, b"")
    assert by_offset[(0, 10)] == (b"k5", b"")  # a fresh tombstone stays
    for f in lake.files():
        assert f["path"].startswith(f"partition={f['partition.partition']}/{COMPACTED_PREFIX}")
        offsets = [o for p, o in lake.offsets() if p == f["partition.partition"]]
        assert (f["num_records"], f["min.offset"], f["max.offset"]) == (
            len(offsets),
            min(offsets),
            max(offsets),
        )
        assert f["min.timestamp"] is not None
    assert lake.delta().transaction_version(f"liftlog:{lake.stream}:0") == 16  # the export's
    (meta,) = lake.compactions()
    assert meta["partitions"]["0"]["records_before"] == 16

    again = compact_stream(spark, target, QUIET)
    assert not again.committed and {p.status for p in again.partitions} == {SKIPPED}

    later = int(time.time() * 1000) + 2 * HOUR_MS  # past the delete retention
    expired = compact_stream(
        spark, target, CompactionOptions(vacuum_retention_hours=0), now_ms=later
    )
    assert expired.committed and expired.tombstones_removed == 4
    assert set(lake.offsets()) == latest_per_key(records, tombstones_expired=True)
    assert expired.maintenance is not None and expired.maintenance.error is None
    assert expired.maintenance.vacuumed_files >= len(files_before)
    assert lake.stored_parquet() == sorted(f["path"] for f in lake.files())  # vacuumed


def test_small_files_are_packed_on_s3(lake, spark):
    for i in range(3):
        lake.export(0, [(None, f"free-{i}"), (f"k{i}", "v")])
    report = compact_stream(spark, lake.target(), CompactionOptions(vacuum=False), now_ms=None)
    assert report.maintenance is not None and report.maintenance.error is None
    assert not report.committed  # nothing superseded: the files stay as they are
    assert (report.maintenance.optimize_files_removed, report.maintenance.optimize_files_added) == (
        3,
        1,
    )
    assert lake.offsets() == [(0, o) for o in range(6)]
    ((packed),) = lake.files()
    assert (packed["num_records"], packed["min.offset"], packed["max.offset"]) == (6, 0, 5)


def test_two_racing_compactions_on_s3_commit_exactly_once(lake, spark):
    for i in range(3):
        lake.export(0, [(f"k{j}", f"{i}-{j}") for j in range(6)])
    target = lake.target()
    now = int(time.time() * 1000)
    first = RewriteSnapshot.open(target.storage, target.stream)
    second = RewriteSnapshot.open(target.storage, target.stream)
    assert first is not None and second is not None
    plan_a = plan_compaction(first, target, QUIET, now)
    plan_b = plan_compaction(second, target, QUIET, now + 1)

    assert execute_plan(spark, first, plan_a, QUIET, lambda _: None).committed
    with pytest.raises(LakeCommitConflictError):
        execute_plan(spark, second, plan_b, QUIET, lambda _: None)
    left = [p for p in lake.stored_parquet() if f"{COMPACTED_PREFIX}{plan_b.run_id}-" in p]
    assert left == []  # the loser deleted what it wrote
    assert [o for _, o in lake.offsets()] == list(range(12, 18))
    assert len(lake.compactions()) == 1

    lake.export(0, [(f"k{j}", "new") for j in range(6)])
    reports, failures = compact_twice_at_once(spark, target, 180)
    assert not failures and len(reports) == 2
    assert sum(r.committed for r in reports) == 1
    assert [o for _, o in lake.offsets()] == list(range(18, 24))
    assert len(lake.compactions()) == 2


def test_export_and_compaction_race_on_s3_loses_nothing(lake, spark):
    published: list[Row] = lake.export(0, [(f"k{i % 7}", f"v{i}") for i in range(40)])
    target = lake.target()
    snapshot = RewriteSnapshot.open(target.storage, target.stream)
    assert snapshot is not None
    plan = plan_compaction(snapshot, target, QUIET, int(time.time() * 1000))
    published += lake.export(0, [("k1", "after-the-snapshot")])  # between snapshot and commit
    report = execute_plan(spark, snapshot, plan, QUIET, lambda _: None)
    assert report.committed and report.committed_version > plan.snapshot_version + 1
    assert [o for _, o in lake.offsets()] == [*range(33, 40), 40]

    stop = threading.Event()
    errors: list[BaseException] = []

    def export_forever() -> None:
        round_ = 0
        while not stop.is_set() or round_ < 3:
            for p in (0, 1):
                rows = [
                    (f"k{(round_ + i) % 7}" if i % 5 else None, f"r{round_}-{i}") for i in range(20)
                ]
                published.extend(lake.export(p, rows))
            round_ += 1

    def guarded() -> None:
        try:
            export_forever()
        except Exception as exc:  # noqa: BLE001 - reported in the main thread
            errors.append(exc)

    exporter = threading.Thread(target=guarded, name="s3-export-loop")
    exporter.start()
    try:
        wait_for(lambda: len(published) > 120, 60, message="exports under way")
        reports = [compact_stream(spark, target, CompactionOptions(vacuum=False)) for _ in range(2)]
    finally:
        stop.set()
        exporter.join(120)
    assert not errors, errors
    assert any(r.committed for r in reports)
    table = lake.delta()
    for p in (0, 1):  # every export's app transaction landed
        assert table.transaction_version(f"liftlog:{lake.stream}:{p}") == lake.ends[p]
    offsets = lake.offsets()
    assert len(offsets) == len(set(offsets)), "duplicate offsets after the race"
    superseded = {
        (p, o)
        for p, o, k, _ in published
        if k is not None and any(q == p and k2 == k and o2 > o for q, o2, k2, _ in published)
    }
    every = {(p, o) for p, o, _, _ in published}
    assert every - superseded <= set(offsets) <= every


# ------------------------------------------------ the CLI and --watch against a node's S3 lake


@pytest.fixture
def s3_node_api(make_node, s3_bucket) -> Iterator[tuple[httpx.Client, str, S3Credentials]]:
    """A node whose lake is the bucket (describe names the s3:// tables); its REST client."""
    bucket, creds = s3_bucket
    node = make_node(lake=LakeConfig(uri=f"s3://{bucket}/lake", storage_options=s3_options(creds)))
    with node_client(node.api_url, timeout=30) as client:
        yield client, bucket, creds


def described_table(api: httpx.Client, stream: str, creds: S3Credentials) -> S3StreamTable:
    """The stream's table where describe says it is, written here as exports would."""
    described = StreamDescription.from_json(api.get(f"/v1/streams/{stream}").json())
    assert described.lake is not None and described.lake.uri.startswith("s3://")
    storage = LakeStorage(described.lake.uri, s3_options(creds))
    return S3StreamTable(storage, stream, len(described.partitions))


def lake_option_flags(creds: S3Credentials) -> list[str]:
    flags: list[str] = []
    for key, value in s3_options(creds).items():
        flags += ["--lake-option", f"{key}={value}"]
    return flags


def test_cli_compacts_an_s3_lake_with_lake_options(s3_node_api, stream_name, spark, capsys):
    api, _bucket, creds = s3_node_api
    create_stream(api, stream_name, compaction=True, delete_retention_ms=1000)
    lake = described_table(api, stream_name, creds)
    for i in range(3):
        lake.export(0, [("same", f"v{i}"), (None, f"free{i}")])
    server = str(api.base_url)

    once = ["compact", stream_name, "--server", server, "--master", "local[2]"]
    code = cli.main([*once, "--vacuum-retention-hours", "0", *lake_option_flags(creds)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "partition 0: below offset 6: 6 -> 4 records; 3 file(s) removed, 1 added" in out
    assert "committed table version" in out and "vacuum: 3 file(s) deleted" in out
    assert lake.offsets() == [(0, 1), (0, 3), (0, 4), (0, 5)]
    assert lake.stored_parquet() == sorted(f["path"] for f in lake.files())

    again = ["compact", stream_name, "--server", server, "--json", *lake_option_flags(creds)]
    assert cli.main(again) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["committed"] is False and body["message"] == "nothing to compact"


def test_watch_compacts_an_s3_lake_with_options_from_the_environment(
    s3_node_api, stream_name, spark, monkeypatch
):
    api, _bucket, creds = s3_node_api
    create_stream(api, stream_name, compaction=True, compaction_interval_s=3600)
    lake = described_table(api, stream_name, creds)
    lake.export(0, [("k", "1"), ("k", "2")])
    for key, value in s3_options(creds).items():  # the standard AWS_* environment only
        monkeypatch.setenv(key.upper(), value)
    client = RestClient(str(api.base_url))
    schedule = CompactionSchedule(spark, client, QUIET, lambda _: None, only_stream=stream_name)
    ticks: list[Any] = []
    stop = threading.Event()
    runner = threading.Thread(target=schedule.run, args=(stop, 0.5, ticks.append))
    runner.start()
    try:
        wait_for(lambda: ticks and (ticks[0].reports or ticks[0].errors), 120, message="a tick")
    finally:
        stop.set()
        runner.join(60)
    assert ticks[0].errors == {} and [r.committed for r in ticks[0].reports] == [True]
    assert lake.offsets() == [(0, 1)]
    assert lake.delta().transaction_version(compaction_app_id(stream_name)) is not None


def _paths_under(storage: LakeStorage, uri: str) -> list[str]:
    """Every object under ``uri`` on the store (pyarrow's view of the bucket)."""
    filesystem, path = storage.filesystem_for(uri)
    selector = pafs.FileSelector(path, recursive=True, allow_not_found=True)
    return [info.path for info in filesystem.get_file_info(selector)]


def test_compaction_checks_put_if_absent_once_at_the_lake_root(lake, spark):
    """The store is probed once per run, before Spark, where exporters probe (the lake's
    ``_liftlog/commit-probe``), and the probe leaves nothing behind, in the table least of all."""
    export_known_records(lake)
    lines: list[str] = []

    report = compact_stream(spark, lake.target(), QUIET, lines.append)

    assert report.committed
    checks = [line for line in lines if "enforces put-if-absent" in line]
    assert checks == [f"checking that {lake.uri} enforces put-if-absent for Delta commits"]
    assert lines.index(checks[0]) < next(i for i, x in enumerate(lines) if x.startswith("Spark:"))
    lake_uri = lake.uri.rsplit("/", 1)[0]
    assert _paths_under(lake.storage, f"{lake_uri}/{PROBE_DIR}") == []
    assert not [p for p in _paths_under(lake.storage, lake.uri) if "_liftlog" in p]


def test_compaction_refuses_a_store_configured_without_put_if_absent(lake, spark):
    """Options that turn put-if-absent off are refused with the exporters' typed error before
    Spark starts; the table keeps its version and its files."""
    export_known_records(lake)
    version, files = lake.delta().version(), lake.files()
    options = {**lake.storage.options, "conditional_put": "disabled"}
    target = lake.target()
    unsafe = CompactionTarget(
        target.stream, target.table_uri, target.partitions, target.delete_retention_ms,
        storage_options=options,
    )  # fmt: skip
    lines: list[str] = []

    with pytest.raises(UnsafeLakeStoreError) as caught:
        compact_stream(spark, unsafe, QUIET, lines.append)

    assert caught.value.code == "unsafe_lake_store"
    assert caught.value.message.startswith("refusing to commit a compaction to s3://")
    assert "conditional_put = 'disabled'" in caught.value.message
    assert not [line for line in lines if line.startswith("Spark:")]
    assert lake.delta().version() == version and lake.files() == files


def test_compaction_takes_lake_options_from_the_session_conf(lake, spark):
    """A target without store options compacts with ``spark.liftlog.lake.<NAME>`` from the
    session (the driver's planning, the probe, the tasks and the commit all reach the store)."""
    records = export_known_records(lake)
    bare = CompactionTarget(lake.stream, lake.uri, lake.partitions, HOUR_MS)
    conf = {f"{SESSION_LAKE_PREFIX}{k}": v for k, v in lake.storage.options.items()}
    try:
        for key, value in conf.items():
            spark.conf.set(key, value)
        report = compact_stream(spark, bare, QUIET)
    finally:
        for key in conf:
            spark.conf.unset(key)
    assert report.committed
    assert set(lake.offsets()) == latest_per_key(records, tombstones_expired=False)
