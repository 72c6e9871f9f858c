"""Rewriting a typed table's files keeps its layout: small files written under two schema
versions packed into one file with every column (the older rows null in the newer ones), and
tombstones told apart from values in typed rows as in untyped ones."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable

from spark_log.lake import LakeTable
from spark_log.lake.packing import pack_small_files
from spark_log.lake.rewrite import RewriteSnapshot
from spark_log.lake.storage import LakeStorage
from spark_log.lake.tombstones import tombstones
from spark_log.lake.typed_layout import TYPED_BASE_SCHEMA
from spark_log.schemas import frame
from tests.unit.spark_log.lake.test_typed_export import V1, V2, Registry, commit, lake_rows


def test_packing_a_typed_tables_small_files_keeps_its_columns(tmp_path):
    table = LakeTable(str(tmp_path / "orders@1"), "orders")
    table.ensure_exists(TYPED_BASE_SCHEMA)
    registry = Registry()
    v1 = registry.add(1, V1)
    commit(table, [frame(1, v1.encode({"id": 1, "offset": "a"}))], registry)
    v2 = registry.add(2, V2)
    commit(table, [frame(2, v2.encode({"id": 2, "offset": "b", "note": "n"}))], registry, 1)
    storage = LakeStorage(table.uri)
    schema = RewriteSnapshot.open(storage, "orders").schema()

    outcome = pack_small_files(storage, "orders", 1 << 20, 5)

    assert (outcome.files_removed, outcome.files_added) == (2, 1)
    assert pa.schema(DeltaTable(table.uri).schema().to_arrow()) == schema
    (location,) = DeltaTable(table.uri).file_uris()
    assert pq.read_schema(location.removeprefix("file://")).names == [
        n for n in schema.names if n != "partition"
    ]
    rows = DeltaTable(table.uri).to_pyarrow_table().sort_by("offset").to_pylist()
    assert [(r["id"], r["value_offset"], r["note"], r["schema_id"]) for r in rows] == [
        (1, "a", None, 1),
        (2, "b", "n", 2),
    ]


def test_tombstones_in_untyped_and_typed_rows():
    untyped = lake_rows([b"", b"x"]).to_batches()[0]
    assert tombstones(untyped).tolist() == [True, False]
    typed = pa.record_batch(
        {
            "schema_id": pa.array([None, 1, None, None], pa.int64()),
            "invalid_value": pa.array([None, None, b"junk", None], pa.binary()),
            "value": pa.array([None, None, None, b"raw"], pa.binary()),  # kept from some rows
        }
    )
    assert tombstones(typed).tolist() == [True, False, False, False]
    without_raw = typed.drop_columns(["value"])
    assert tombstones(without_raw).tolist() == [True, False, False, True]
