"""``spark.readStream.format("liftlog")``: AvailableNow with limits, restart from a checkpoint
across a lake export with no loss and no duplicate, trigger delays, and visible lag."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from datasource.lag import RecordsBehindListener, records_behind, total_records_behind
from tests.support.datasource_data import (
    create,
    expected_places,
    flush,
    lake_node,
    publish,
    rows_by_place,
    value_of,
)
from tests.support.spark_session import spark
from tests.support.waiting import wait_for

__all__ = ["lake_node", "spark"]

QUERY_TIMEOUT_S = 120


def stream_reader(spark, api: str, stream: str, **options):
    reader = spark.readStream.format("liftlog").option("servers", api).option("stream", stream)
    for name, value in options.items():
        reader = reader.option(name, str(value))
    return reader.load()


def run_available_now(spark, df, sink_dir, checkpoint):
    query = (
        df.writeStream.format("parquet")
        .option("path", str(sink_dir))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(QUERY_TIMEOUT_S), "the AvailableNow query did not finish"
    assert query.exception() is None
    return query


def sunk(spark, sink_dir) -> dict[tuple[int, int], object]:
    return rows_by_place(spark.read.parquet(str(sink_dir)).collect())


def test_available_now_restart_across_export(spark, lake_node, tmp_path):
    api = lake_node.api_url
    stream = f"events-{uuid.uuid4().hex[:6]}"
    create(api, stream, partitions=2)
    publish(api, stream, {0: 400, 1: 200})
    df = stream_reader(spark, api, stream, startingOffsets="earliest", maxOffsetsPerTrigger=200)
    listener = RecordsBehindListener()
    spark.streams.addListener(listener)
    try:
        first = run_available_now(spark, df, tmp_path / "out", tmp_path / "ck")
        wait_for(lambda: str(first.id) in listener.latest, message="the listener's progress")
    finally:
        spark.streams.removeListener(listener)
    inputs = [p["numInputRows"] for p in first.recentProgress if p["numInputRows"]]
    assert sum(inputs) == 600 and max(inputs) <= 200 and len(inputs) >= 3
    behind = [total_records_behind(p["sources"][0]) for p in first.recentProgress]
    assert behind[0] == 600 - inputs[0]  # Kafka's split of the cap: 133 + 66 of 400 + 200
    assert behind[-1] == 0 and behind == sorted(behind, reverse=True)
    assert records_behind(first.lastProgress["sources"][0]) == {stream: {0: 0, 1: 0}}
    assert set(sunk(spark, tmp_path / "out")) == expected_places({0: (0, 400), 1: (0, 200)})

    flush(api, stream)  # the records read so far move to the lake: offsets stay valid
    publish(api, stream, {0: 100, 1: 300})
    flush(api, stream)
    publish(api, stream, {0: 50})  # and some only in the log
    second = run_available_now(spark, df, tmp_path / "out", tmp_path / "ck")
    assert sum(p["numInputRows"] for p in second.recentProgress) == 450
    rows = sunk(spark, tmp_path / "out")
    assert set(rows) == expected_places({0: (0, 550), 1: (0, 500)})
    assert all(row["value"] == value_of(p, o) for (p, o), row in rows.items())


def test_restart_reads_history_from_the_lake(spark, lake_node, tmp_path):
    """A query started from earliest after the log's records were exported reads its first
    batches from the lake and the rest from the log, seamlessly."""
    api = lake_node.api_url
    stream = f"late-{uuid.uuid4().hex[:6]}"
    create(api, stream, partitions=1)
    publish(api, stream, {0: 300})
    flush(api, stream)
    publish(api, stream, {0: 120})
    df = stream_reader(spark, api, stream, startingOffsets="earliest", maxOffsetsPerTrigger=250)
    run_available_now(spark, df, tmp_path / "out", tmp_path / "ck")
    assert set(sunk(spark, tmp_path / "out")) == expected_places({0: (0, 420)})


def test_available_now_ignores_min_offsets(spark, lake_node, tmp_path):
    api = lake_node.api_url
    stream = f"few-{uuid.uuid4().hex[:6]}"
    create(api, stream, partitions=1)
    publish(api, stream, {0: 30})
    df = stream_reader(spark, api, stream, startingOffsets="earliest", minOffsetsPerTrigger=10_000)
    run_available_now(spark, df, tmp_path / "out", tmp_path / "ck")
    assert len(sunk(spark, tmp_path / "out")) == 30


def test_min_offsets_wait_for_the_trigger_delay(spark, lake_node, tmp_path):
    api = lake_node.api_url
    stream = f"slow-{uuid.uuid4().hex[:6]}"
    create(api, stream, partitions=1)
    delay_s = 3.0
    df = stream_reader(
        spark, api, stream, minOffsetsPerTrigger=1000, maxTriggerDelay=f"{int(delay_s)}s"
    )
    query = (
        df.writeStream.format("memory")
        .queryName(stream.replace("-", "_"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        wait_for(lambda: query.recentProgress, timeout_s=60, message="the first trigger")
        publish(api, stream, {0: 10})  # far below the minimum: waits for the delay
        table = stream.replace("-", "_")
        wait_for(lambda: spark.table(table).count() == 10, timeout_s=60, message="10 rows")
        # the delay runs from the batch before (Spark's clock, as the query saw it)
        # the first batch that loaded rows held them back, however many batches took them
        progress = {p["batchId"]: p for p in query.recentProgress}
        loaded = min((b for b, p in progress.items() if p["numInputRows"] > 0), default=None)
        assert loaded is not None and loaded - 1 in progress, progress
        waited = _batch_time(progress[loaded]) - _batch_time(progress[loaded - 1])
        assert waited >= delay_s - 0.5, progress
    finally:
        query.stop()


def _batch_time(progress: dict) -> float:
    return dt.datetime.fromisoformat(progress["timestamp"]).timestamp()


def test_offsets_that_went_backwards(spark, lake_node, tmp_path):
    """A checkpoint ahead of the stream (deleted and re-created) is data loss, as in Kafka;
    with failOnDataLoss=false the query waits for the stream to pass its offsets again."""
    api = lake_node.api_url
    stream = f"reborn-{uuid.uuid4().hex[:6]}"
    create(api, stream, partitions=1)
    publish(api, stream, {0: 50})
    out, checkpoint = tmp_path / "out", tmp_path / "ck"
    run_available_now(
        spark, stream_reader(spark, api, stream, startingOffsets="earliest"), out, checkpoint
    )
    _recreate(api, stream)
    publish(api, stream, {0: 10})
    strict = stream_reader(spark, api, stream, startingOffsets="earliest")
    query = (
        strict.writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception, match="DataLossError"):
        query.awaitTermination(QUERY_TIMEOUT_S)
    lenient = stream_reader(spark, api, stream, startingOffsets="earliest", failOnDataLoss="false")
    run_available_now(spark, lenient, out, checkpoint)
    assert len(sunk(spark, out)) == 50


def _recreate(api: str, stream: str) -> None:
    import asyncio

    from spark_log.client import Client

    async def run() -> None:
        async with Client(api) as client:
            await client.delete_stream(stream)

    asyncio.run(run())
    create(api, stream, partitions=1)
