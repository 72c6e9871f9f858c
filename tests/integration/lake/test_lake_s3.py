"""An ``s3://`` lake on a real S3 server (SeaweedFS): export, flush and describe, the identity
check, the commit-safety check and its refusal, and the ``liftlog`` Spark source reading
history from the bucket and the tail from the node.

The nodes get the endpoint and credentials from ``[lake.storage_options]`` only; the test
process reads the tables with the same options (``tests.support.lake_stores``), never through its
environment, so a node path that forgot the options fails here.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pyarrow import fs

from datasource import lake_reader_options
from datasource.errors import InvalidOptionError
from datasource.session_conf import SESSION_LAKE_PREFIX
from liftlog.embedded.seaweedfs import S3Credentials, SeaweedFsServer, create_bucket
from spark_log.api_models import StreamDescription
from spark_log.lake import LakeCommitConflictError, LakeTable
from spark_log.lake.commit_safety import PROBE_DIR, check_commit_safety
from spark_log.lake.identity import IDENTITY_FILE, read_lake_id
from spark_log.lake.storage import LakeStorage
from spark_log.storage_options import AWS_SECRET_ACCESS_KEY
from tests.integration.conftest import create_stream, node_client
from tests.integration.lake.test_lake_export import (
    HUGE_BYTES,
    NEVER_S,
    check_rows_match,
    flush_with_cli,
    lake_rows,
    metric,
    publish_known_records,
)
from tests.support.lake_stores import open_delta, s3_lake
from tests.unit.spark_log.lake.test_lake_table import allowed, rows

MANUAL = {"export_interval_s": NEVER_S, "export_min_bytes": HUGE_BYTES, "retry_backoff_max_s": 1.0}
UNSAFE_REFUSALS = "liftlog_lake_unsafe_store_refusals_total"
UTF8 = {"encoding": "utf-8"}


def _describe(api: httpx.Client, name: str) -> StreamDescription:
    resp = api.get(f"/v1/streams/{name}")
    assert resp.status_code == 200, resp.text
    return StreamDescription.from_json(resp.json())


def _refusals(api: httpx.Client) -> float:
    lines = [ln for ln in api.get("/metrics").text.splitlines() if ln.startswith(UNSAFE_REFUSALS)]
    return float(lines[0].split()[-1]) if lines else 0.0


async def test_export_flush_and_describe_on_an_s3_lake(
    make_node, stream_name, s3_bucket: tuple[str, S3Credentials], capsys
):
    bucket, credentials = s3_bucket
    lake = s3_lake(bucket, credentials)
    node = make_node(lake=lake.config(**MANUAL))
    with node_client(node.api_url, timeout=60) as api:
        create_stream(api, stream_name, partitions=2)
        expected = await publish_known_records(node.api_url, stream_name)
        flushed = flush_with_cli(node.api_url, stream_name, capsys)
        assert [(p.partition, p.lake_offset) for p in flushed.partitions] == [(0, 30), (1, 60)]
        described = _describe(api, stream_name)
        assert described.lake is not None and described.lake.export_refused is None
        uri = described.lake.uri
        assert uri.startswith(f"s3://{bucket}/lake/")
        assert [p.lake_offset for p in described.partitions] == [30, 60]
        assert [p.lake_start_offset for p in described.partitions] == [0, 0]
        raw = api.get(f"/v1/streams/{stream_name}").text
        assert credentials.secret_access_key not in raw, "describe leaked the lake's secret"
        rows = lake_rows(uri)
        for p in (0, 1):
            check_rows_match(rows, api, stream_name, p, expected[p])
        assert _refusals(api) == 0
    assert read_lake_id(lake.storage) is not None, f"no {IDENTITY_FILE} in the bucket"
    assert _objects_under(lake.storage, PROBE_DIR) == [], "the commit probe was left behind"


def _objects_under(storage: LakeStorage, relative: str = "") -> list[str]:
    filesystem, root = storage.filesystem()
    where = f"{root}/{relative}".rstrip("/")
    infos = filesystem.get_file_info(fs.FileSelector(where, allow_not_found=True, recursive=True))
    return [info.path for info in infos]


def test_a_node_pointed_at_another_bucket_does_not_export(
    make_node, stream_name, s3_server: SeaweedFsServer
):
    credentials = s3_server.credentials
    first, other = f"{stream_name[:20]}-a", f"{stream_name[:20]}-b"
    for bucket in (first, other):
        create_bucket(credentials, bucket)
    node = make_node(lake=s3_lake(first, credentials).config(**MANUAL))
    with node_client(node.api_url, timeout=60) as api:
        create_stream(api, stream_name)
        api.post(
            f"/v1/streams/{stream_name}/partitions/0/records",
            json={"records": [{"value": "x"}]},
            params={"encoding": "utf-8"},
        )
        assert api.post(f"/v1/streams/{stream_name}/flush").status_code == 200
    node.stop()
    node = make_node(lake=s3_lake(other, credentials).config(**MANUAL))  # an empty bucket
    with node_client(node.api_url, timeout=60) as api:
        refused = api.post(f"/v1/streams/{stream_name}/flush")
        assert refused.status_code == 503, refused.text
        message = refused.json()["error"]["message"]
        assert "will not export" in message and f"s3://{other}/lake" in message
    assert read_lake_id(s3_lake(other, credentials).storage) is None


def test_an_s3_lake_whose_options_disable_conditional_puts_is_refused(
    make_node, stream_name, s3_bucket: tuple[str, S3Credentials]
):
    """The user turned put-if-absent off: nothing is committed, flush says why with its own
    code, describe shows the refusal, and the metric counts it."""
    bucket, credentials = s3_bucket
    lake = s3_lake(bucket, credentials)
    node = make_node(lake=lake.config(**MANUAL, storage_options={"conditional_put": "disabled"}))
    with node_client(node.api_url, timeout=60) as api:
        create_stream(api, stream_name)
        api.post(
            f"/v1/streams/{stream_name}/partitions/0/records",
            json={"records": [{"value": "x"}]},
            params={"encoding": "utf-8"},
        )
        refused = api.post(f"/v1/streams/{stream_name}/flush")
        assert refused.status_code == 503, refused.text
        error = refused.json()["error"]
        assert error["code"] == "unsafe_lake_store"
        assert f"s3://{bucket}/lake" in error["message"] and "conditional_put" in error["message"]
        described = _describe(api, stream_name)
        assert described.lake is not None
        assert (described.lake.export_refused or "").startswith("unsafe_lake_store: ")
        assert _refusals(api) >= 1
        assert metric(api, "liftlog_lake_commits_total", stream_name) == 0
    assert _objects_under(lake.storage) == [], "something was written to the unsafe lake"


def _node_with_history(
    make_node: Any, lake: Any, stream: str, history: list[str], tail: list[str]
) -> Any:
    """A node on the S3 lake whose ``stream`` holds ``history`` in the lake (flushed) and
    ``tail`` in its log only: what a read of lake and tail together needs."""
    node = make_node(lake=lake.config(**MANUAL))
    with node_client(node.api_url, timeout=60) as api:
        create_stream(api, stream)
        url = f"/v1/streams/{stream}/partitions/0/records"
        api.post(url, json={"records": [{"value": v} for v in history]}, params=UTF8)
        assert api.post(f"/v1/streams/{stream}/flush").status_code == 200
        api.post(url, json={"records": [{"value": v} for v in tail]}, params=UTF8)
    return node


@pytest.mark.usefixtures("spark")
async def test_the_liftlog_source_reads_lake_and_tail_from_an_s3_lake(
    make_node, stream_name, s3_bucket: tuple[str, S3Credentials], spark
):
    bucket, credentials = s3_bucket
    lake = s3_lake(bucket, credentials)
    history = [f"h{i}" for i in range(20)]
    node = _node_with_history(make_node, lake, stream_name, history, [f"t{i}" for i in range(5)])
    reader = spark.read.format("liftlog").option("servers", node.api_url)
    for name, value in lake.options.items():
        reader = reader.option(f"lake.{name}", value)
    frame = reader.option("stream", stream_name).load()
    got = sorted((r.offset, bytes(r.value).decode()) for r in frame.collect())
    assert got == [(i, f"h{i}") for i in range(20)] + [(20 + i, f"t{i}") for i in range(5)]
    from_time = reader.option("stream", stream_name).option("startingTimestamp", "0").load()
    assert from_time.count() == 25


def test_the_export_compare_and_set_holds_on_s3(s3_bucket: tuple[str, S3Credentials]):
    """The adapter-level race of tests/unit/spark_log/lake/test_lake_table.py on the real S3
    store: of two exporters of one partition on one snapshot only the first commits; another
    partition's commit on a stale snapshot is retried at the next version."""
    bucket, credentials = s3_bucket
    lake = s3_lake(bucket, credentials)
    check_commit_safety(lake.storage)
    table = LakeTable(f"{lake.uri}/s@1", "s", lake.storage)
    table.ensure_exists()
    stale, fresh = table.snapshot(), table.snapshot()
    fresh.append(rows(0, 0, 5), 0, 5, allowed, {})
    with pytest.raises(LakeCommitConflictError, match="Concurrent transaction"):
        stale.append(rows(0, 0, 5), 0, 5, allowed, {})
    stale.append(rows(1, 0, 3), 1, 3, allowed, {})
    assert table.exported_offsets(2) == {0: 5, 1: 3}
    assert open_delta(table.uri).to_pyarrow_table().num_rows == 8


@pytest.mark.usefixtures("spark")
async def test_the_liftlog_source_takes_lake_options_from_the_session_conf(
    make_node, stream_name, s3_bucket: tuple[str, S3Credentials], spark
):
    """``spark.liftlog.lake.<NAME>`` set once on the session reaches a read through
    ``lake_reader_options(spark)``; a ``lake.<NAME>`` option given on the reader wins over
    it; an unsupported name is refused by its full conf name."""
    bucket, credentials = s3_bucket
    lake = s3_lake(bucket, credentials)
    node = _node_with_history(make_node, lake, stream_name, [f"h{i}" for i in range(10)], ["tail"])
    conf = {f"{SESSION_LAKE_PREFIX}{name}": value for name, value in lake.options.items()}
    conf[f"{SESSION_LAKE_PREFIX}{AWS_SECRET_ACCESS_KEY}"] = "not-the-secret"
    try:
        for key, value in conf.items():
            spark.conf.set(key, value)
        reader = (
            spark.read.format("liftlog")
            .options(**lake_reader_options(spark))
            .option("servers", node.api_url)
            .option("stream", stream_name)
        )
        # endpoint, key id and region come from the session only (the bucket is unreachable
        # without them); the secret the session gets wrong is the reader's, which wins
        fixed = reader.option(f"lake.{AWS_SECRET_ACCESS_KEY}", credentials.secret_access_key)
        got = sorted((r.offset, bytes(r.value).decode()) for r in fixed.load().collect())
        assert got == [(i, f"h{i}") for i in range(10)] + [(10, "tail")]

        spark.conf.set(f"{SESSION_LAKE_PREFIX}aws_endpoint", "http://misspelt")
        with pytest.raises(InvalidOptionError, match=r"unknown key spark\.liftlog\.lake\.aws_"):
            lake_reader_options(spark)
    finally:
        for key in [*conf, f"{SESSION_LAKE_PREFIX}aws_endpoint"]:
            spark.conf.unset(key)
