"""An encrypted stream's lake: the Parquet files hold only ciphertext values, the `liftlog`
Spark source returns plaintext, and pyarrow with the partition's data key decrypts them."""

from __future__ import annotations

import base64
from pathlib import Path

import pyarrow.parquet as pq
from deltalake import DeltaTable

from spark_log.config import LakeConfig
from spark_log.crypto import ValueCipher
from tests.integration.conftest import create_stream, node_client
from tests.integration.encryption_cluster import encrypted_node_overrides, new_master_key

SECRET = "lake-secret-payload"
COUNT = 25
NEVER_S = 3600.0
HUGE_BYTES = 1 << 40


def test_lake_files_are_encrypted_and_the_source_decrypts(make_node, stream_name, spark):
    lake = LakeConfig(export_interval_s=NEVER_S, export_min_bytes=HUGE_BYTES)
    node = make_node(1, lake=lake, **encrypted_node_overrides(new_master_key()))
    expected = [f"{SECRET}-{i}" for i in range(COUNT)]
    with node_client(node.api_url, timeout=60) as api:
        create_stream(api, stream_name, encryption=True)
        published = api.post(
            f"/v1/streams/{stream_name}/partitions/0/records",
            json={"records": [{"key": f"k{i}", "value": v} for i, v in enumerate(expected)]},
            params={"encoding": "utf-8"},
        )
        assert published.status_code == 200, published.text
        flushed = api.post(f"/v1/streams/{stream_name}/flush")
        assert flushed.status_code == 200, flushed.text
        assert flushed.json()["partitions"][0]["lake_offset"] == COUNT
        uri = flushed.json()["lake"]["uri"]
        key = api.get(f"/v1/streams/{stream_name}/partitions/0/data-key")
        assert key.status_code == 200, key.text
        data_key = base64.b64decode(key.json()["data_key"])

    files = [uri.removeprefix("file://") for uri in DeltaTable(uri).file_uris()]
    assert files
    for path in files:
        assert SECRET.encode() not in Path(path).read_bytes()

    # a standard reader with the key: pyarrow reads the file, AES-GCM opens each value
    table = pq.read_table(files[0], columns=["offset", "value"]).sort_by("offset")
    cipher = ValueCipher(data_key)
    offsets, values = table.column("offset").to_pylist(), table.column("value").to_pylist()
    assert all(SECRET.encode() not in v for v in values)
    assert [cipher.decrypt(v, o).decode() for o, v in zip(offsets, values, strict=True)] == [
        expected[o] for o in offsets
    ]

    frame = (
        spark.read.format("liftlog")
        .option("servers", node.api_url)
        .option("stream", stream_name)
        .load()
    )
    rows = sorted(frame.select("offset", "value").collect())
    assert [(r["offset"], r["value"].decode()) for r in rows] == list(enumerate(expected))
