"""The tail and the lake contract at their edges: a task that asks the wrong node finds the
leader; records gone from the log are data loss unless a lake holds them; a lake's gaps from
key compaction are not loss."""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from pyspark.errors import PySparkException

from datasource.tail_fetch import TailFetcher
from spark_log.config import LakeConfig, LogConfig
from spark_log.lake.layout import LAKE_SCHEMA, app_id
from tests.support.datasource_data import create, describe, publish, value_of
from tests.support.spark_session import liftlog_reader, spark
from tests.support.waiting import wait_for

__all__ = ["spark"]

NO_LAKE = LakeConfig(enabled=False)
RETAINED_MESSAGES = 100


def test_tail_fetch_finds_the_leader(make_node):
    nodes = [make_node(1), make_node(2)]
    api = nodes[0].api_url
    stream = f"moved-{uuid.uuid4().hex[:6]}"
    create(api, stream, partitions=1)
    publish(api, stream, {0: 50})
    leader = describe(api, stream).partition(0).leader
    wrong = next(n.api_url for n in nodes if n.broker_id != leader)
    table = TailFetcher(api, stream, 0, leader_url=wrong).fetch(10, 100)
    assert table.column("offset").to_pylist() == list(range(10, 50))


@pytest.fixture
def trimmed(make_node):
    """A stream whose log start moved past 0 (retention, no lake): (api, stream, log start, HW).

    Batches of 25 records and segments of one or a few batches: whichever, retention of 100
    messages settles at log start 300 once all 400 records are in."""
    node = make_node(
        1,
        lake=NO_LAKE,
        log=LogConfig(segment_bytes=1024, retention_check_interval_ms=50),
    )
    stream = f"trim-{uuid.uuid4().hex[:6]}"
    create(node.api_url, stream, partitions=1, retention_messages=RETAINED_MESSAGES)
    publish(node.api_url, stream, {0: 400}, batch=25)
    settled = 400 - RETAINED_MESSAGES
    wait_for(
        lambda: describe(node.api_url, stream).partition(0).log_start_offset == settled,
        timeout_s=30,
        message=f"retention to move the log start to {settled}",
    )
    return node.api_url, stream, settled, 400


def test_offsets_below_the_log_start_are_data_loss(spark, trimmed):
    api, stream, log_start, hw = trimmed
    assert liftlog_reader(spark, api, stream).count() == hw - log_start  # earliest = log start
    from_zero = f'{{"{stream}": {{"0": 0}}}}'
    with pytest.raises(PySparkException, match="DataLossError"):
        liftlog_reader(spark, api, stream, startingOffsets=from_zero).count()
    skipped = liftlog_reader(spark, api, stream, startingOffsets=from_zero, failOnDataLoss=False)
    assert skipped.count() == hw - log_start


def test_a_lake_below_the_log_start_fills_it_and_gaps_are_not_loss(spark, trimmed, tmp_path):
    api, stream, log_start, hw = trimmed
    uri = str(tmp_path / "lake")
    kept = list(range(0, log_start, 2))  # a key compaction removed every odd offset
    _lake_table(uri, stream, kept, lake_offset=log_start)
    df = liftlog_reader(spark, api, stream, lakeUri=uri)
    rows = df.select("offset", "value").collect()
    assert sorted(r["offset"] for r in rows) == kept + list(range(log_start, hw))
    assert all(r["value"] == value_of(0, r["offset"]) for r in rows)


def test_a_lake_that_stops_short_leaves_a_hole(spark, trimmed, tmp_path):
    api, stream, log_start, hw = trimmed
    uri = str(tmp_path / "lake")
    short = log_start // 2
    _lake_table(uri, stream, list(range(short)), lake_offset=short)
    with pytest.raises(PySparkException, match=rf"offsets \[{short}, {log_start}\)"):
        liftlog_reader(spark, api, stream, lakeUri=uri).count()
    rest = liftlog_reader(spark, api, stream, lakeUri=uri, failOnDataLoss=False)
    assert rest.count() == short + (hw - log_start)


def _lake_table(uri: str, stream: str, offsets: list[int], lake_offset: int) -> None:
    """A stream's Delta table by the lake contract (what the exporter and compaction write)."""
    count = len(offsets)
    table = pa.table(
        [
            pa.array(np.zeros(count, dtype=np.int32)),
            pa.array(offsets, pa.int64()),
            pa.array(
                [1_700_000_000_000_000 + o for o in offsets], LAKE_SCHEMA.field("timestamp").type
            ),
            pa.array([None] * count, pa.binary()),
            pa.array([value_of(0, o) for o in offsets], pa.binary()),
            pa.nulls(count, LAKE_SCHEMA.field("headers").type),
            pa.array([f"{stream}.in"] * count, pa.string()),
        ],
        schema=LAKE_SCHEMA,
    )
    DeltaTable.create(uri, LAKE_SCHEMA, partition_by=["partition"], name=stream)
    write_deltalake(
        DeltaTable(uri),
        table,
        mode="append",
        commit_properties=CommitProperties(
            app_transactions=[Transaction(app_id(stream, 0), lake_offset)]
        ),
    )
