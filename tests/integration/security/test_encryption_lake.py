"""An encrypted stream's lake: its Parquet files are modular-encrypted (the ``value`` column
under a column key wrapped by the partition's data key, the footer plaintext), readers without
the key still read the clear columns and statistics, pyarrow with the KMS client and the data
key reads everything, the `liftlog` Spark source returns plaintext, and compaction keeps the
files encrypted."""

from __future__ import annotations

import base64
import dataclasses
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from datasource.compaction import compact_stream
from datasource.compaction.errors import CompactionError
from datasource.compaction.target import describe_target
from liftlog.embedded.seaweedfs import S3Credentials
from spark_log.client.rest import RestClient
from spark_log.config import LakeConfig
from spark_log.crypto import new_data_key
from spark_log.crypto.parquet_kms import PartitionFileCrypto
from spark_log.errors import DecryptionError
from tests.integration.conftest import create_stream, node_client
from tests.integration.lake.test_lake_s3 import MANUAL
from tests.support.compaction_race import QUIET
from tests.support.encryption_cluster import encrypted_node_overrides, new_master_key
from tests.support.lake_stores import open_delta, s3_lake

SECRET = "lake-secret-payload"
COUNT = 25
NEVER_S = 3600.0
HUGE_BYTES = 1 << 40
LAKE = LakeConfig(export_interval_s=NEVER_S, export_min_bytes=HUGE_BYTES)


def publish(api: Any, stream: str, rows: list[tuple[str, str]]) -> None:
    published = api.post(
        f"/v1/streams/{stream}/partitions/0/records",
        json={"records": [{"key": k, "value": v} for k, v in rows]},
        params={"encoding": "utf-8"},
    )
    assert published.status_code == 200, published.text


def flush(api: Any, stream: str) -> tuple[int, str]:
    """Export everything; (partition 0's lake offset, table URI)."""
    flushed = api.post(f"/v1/streams/{stream}/flush")
    assert flushed.status_code == 200, flushed.text
    return flushed.json()["partitions"][0]["lake_offset"], flushed.json()["lake"]["uri"]


def data_key(api: Any, stream: str) -> bytes:
    key = api.get(f"/v1/streams/{stream}/partitions/0/data-key")
    assert key.status_code == 200, key.text
    return base64.b64decode(key.json()["data_key"])


def lake_files(uri: str) -> list[str]:
    return [f.removeprefix("file://") for f in DeltaTable(uri).file_uris()]


def read_with_key(path: str, stream: str, key: bytes) -> pa.Table:
    crypto = PartitionFileCrypto(stream, 0, key)
    return pq.read_table(path, decryption_properties=crypto.decryption_properties())


def assert_modular_encrypted(path: str, stream: str) -> None:
    """Plaintext footer naming a column key for ``value``; that column unreadable without it."""
    data = Path(path).read_bytes()
    assert SECRET.encode() not in data
    assert data[-4:] == b"PAR1"  # a plaintext footer ("PARE": an encrypted one)
    column_key = rb'\x05value.{1,3}\{"keyMaterialType":"PKMT1","internalStorage":true,'
    column_key += rb'"isFooterKey":false,"masterKeyID":"liftlog/' + stream.encode() + rb'/0"'
    assert re.search(column_key, data, re.DOTALL)
    with pytest.raises(OSError, match="decrypt"):
        pq.read_table(path, columns=["value"])


def source_rows(spark: Any, api_url: str, stream: str) -> list[tuple[int, str, str]]:
    frame = spark.read.format("liftlog").option("servers", api_url).option("stream", stream)
    rows = frame.load().select("offset", "key", "value").collect()
    return sorted((r["offset"], r["key"].decode(), r["value"].decode()) for r in rows)


def test_lake_files_are_modular_encrypted_and_readable_with_the_data_key(
    make_node, stream_name, spark
):
    node = make_node(1, lake=LAKE, **encrypted_node_overrides(new_master_key()))
    expected = [(f"k{i}", f"{SECRET}-{i}") for i in range(COUNT)]
    with node_client(node.api_url, timeout=60) as api:
        create_stream(api, stream_name, encryption=True)
        publish(api, stream_name, expected)
        lake_offset, uri = flush(api, stream_name)
        assert lake_offset == COUNT
        key = data_key(api, stream_name)

    (path,) = lake_files(uri)
    assert_modular_encrypted(path, stream_name)
    # without the key: the footer, its statistics and the clear columns
    metadata = pq.ParquetFile(path).metadata
    offsets = metadata.row_group(0).column(metadata.schema.names.index("offset")).statistics
    assert (metadata.num_rows, offsets.min, offsets.max) == (COUNT, 0, COUNT - 1)
    clear = pq.read_table(path, columns=["offset", "key"]).sort_by("offset")
    assert clear.column("key").to_pylist() == [k.encode() for k, _ in expected]
    (action,) = pa.table(DeltaTable(uri).get_add_actions(flatten=True)).to_pylist()
    assert (action["min.offset"], action["max.offset"]) == (0, COUNT - 1)
    assert DeltaTable(uri).transaction_version(f"liftlog:{stream_name}:0") == COUNT

    # a standard reader with the data key: pyarrow's CryptoFactory and the KMS client
    table = read_with_key(path, stream_name, key).sort_by("offset")
    assert table.column("value").to_pylist() == [v.encode() for _, v in expected]
    with pytest.raises(DecryptionError, match="does not authenticate"):
        read_with_key(path, stream_name, new_data_key())

    want = [(i, k, v) for i, (k, v) in enumerate(expected)]
    assert source_rows(spark, node.api_url, stream_name) == want


def test_compaction_of_an_encrypted_stream_writes_encrypted_files(make_node, stream_name, spark):
    node = make_node(1, lake=LAKE, **encrypted_node_overrides(new_master_key()))
    first = [(f"k{i % 4}", f"{SECRET}-a{i}") for i in range(8)]
    second = [(f"k{i % 4}", f"{SECRET}-b{i}") for i in range(4)]
    with node_client(node.api_url, timeout=60) as api:
        create_stream(api, stream_name, encryption=True, compaction=True)
        publish(api, stream_name, first)
        flush(api, stream_name)
        publish(api, stream_name, second)
        lake_offset, uri = flush(api, stream_name)
        assert lake_offset == 12
        key = data_key(api, stream_name)
    assert len(lake_files(uri)) == 2

    target = describe_target(RestClient(node.api_url), stream_name)
    assert target.encrypted and target.keys is not None
    report = compact_stream(spark, target, QUIET)
    assert report.committed

    files = lake_files(uri)
    assert len(files) == 1
    for path in files:
        assert_modular_encrypted(path, stream_name)
    latest = [(8 + i, k, v) for i, (k, v) in enumerate(second)]
    compacted = read_with_key(files[0], stream_name, key).sort_by("offset")
    assert compacted.column("offset").to_pylist() == [o for o, _, _ in latest]
    assert compacted.column("value").to_pylist() == [v.encode() for _, _, v in latest]
    assert source_rows(spark, node.api_url, stream_name) == latest


def test_an_encrypted_stream_is_not_compacted_without_its_keys(make_node, stream_name, spark):
    """A target that cannot fetch the data keys is refused, never rewritten in clear."""
    node = make_node(1, lake=LAKE, **encrypted_node_overrides(new_master_key()))
    with node_client(node.api_url, timeout=60) as api:
        create_stream(api, stream_name, encryption=True, compaction=True)
        publish(api, stream_name, [("k", "one"), ("k", "two")])
        _lake_offset, uri = flush(api, stream_name)
    target = describe_target(RestClient(node.api_url), stream_name)
    keyless = dataclasses.replace(target, keys=None)
    with pytest.raises(CompactionError, match="is encrypted"):
        compact_stream(spark, keyless, QUIET)
    (path,) = lake_files(uri)
    assert_modular_encrypted(path, stream_name)


def test_an_encrypted_stream_on_an_s3_lake(
    make_node, stream_name, s3_bucket: tuple[str, S3Credentials], spark
):
    """The exporter writes its encrypted files through the lake's S3 filesystem, and the
    source reads them (by offset and by time: the time search reads only clear columns)."""
    bucket, credentials = s3_bucket
    lake = s3_lake(bucket, credentials)
    node = make_node(1, lake=lake.config(**MANUAL), **encrypted_node_overrides(new_master_key()))
    expected = [(f"k{i}", f"{SECRET}-{i}") for i in range(COUNT)]
    with node_client(node.api_url, timeout=60) as api:
        create_stream(api, stream_name, encryption=True)
        publish(api, stream_name, expected)
        lake_offset, uri = flush(api, stream_name)
        assert lake_offset == COUNT
    (location,) = open_delta(uri).file_uris()
    filesystem, path = lake.storage.filesystem_for(location)
    with filesystem.open_input_file(path) as source:
        data = source.read()
    assert SECRET.encode() not in data and data[-4:] == b"PAR1"
    reader = spark.read.format("liftlog").option("servers", node.api_url)
    for name, value in lake.options.items():
        reader = reader.option(f"lake.{name}", value)
    for frame in (
        reader.option("stream", stream_name).load(),
        reader.option("stream", stream_name).option("startingTimestamp", "0").load(),
    ):
        got = sorted((r.offset, bytes(r.value).decode()) for r in frame.collect())
        assert got == [(i, v) for i, (_, v) in enumerate(expected)]
