"""An encrypted stream's lake files on real Delta tables (delta-rs on local files): the export
writes them with Parquet modular encryption and commits them with the partition's app
transaction (the same compare-and-set as a clear export), and packing keeps them encrypted
or refuses."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from spark_log.crypto import new_data_key
from spark_log.crypto.parquet_kms import PartitionFileCrypto
from spark_log.lake import LakeCommitConflictError, LakeTable, app_id
from spark_log.lake.encrypted_export import ExportCommit, export_encrypted
from spark_log.lake.errors import EncryptedLakeKeysError
from spark_log.lake.extract import LakeRange
from spark_log.lake.packing import pack_small_files
from spark_log.lake.rewrite import RewriteSnapshot
from spark_log.lake.storage import LakeStorage
from tests.unit.spark_log.lake.test_lake_table import allowed, rows

DATA_KEY = new_data_key()


@pytest.fixture
def table(tmp_path) -> LakeTable:
    table = LakeTable(str(tmp_path / "lake" / "s@1"), "s")
    table.ensure_exists()
    return table


def crypto(partition: int = 0) -> PartitionFileCrypto:
    return PartitionFileCrypto("s", partition, DATA_KEY)


def export(table: LakeTable, start: int, end: int, snapshot=None) -> int:
    """Export ``[start, end)`` as the exporter does: a table with one chunk per stored batch
    (one record each here)."""
    one_per_batch = pa.Table.from_batches(rows(0, start, end).to_batches(max_chunksize=1))
    chunk = LakeRange(start, end, one_per_batch, 0)
    commit = ExportCommit(0, allowed, {"start_offset": start})
    return export_encrypted(
        snapshot or table.snapshot(), LakeStorage(table.uri), chunk, crypto(), commit
    )


def data_files(uri: str) -> list[Path]:
    return sorted(Path(uri).glob("partition=0/*.parquet"))


def values(uri: str) -> dict[int, bytes]:
    """Every committed row's value, read with the partition's keys."""
    found: dict[int, bytes] = {}
    for f in DeltaTable(uri).file_uris():
        read = pq.read_table(f, decryption_properties=crypto().decryption_properties())
        found.update(zip(read["offset"].to_pylist(), read["value"].to_pylist(), strict=True))
    return found


def test_an_export_commits_an_encrypted_file_with_its_app_transaction(table):
    version = export(table, 0, 10)
    dt = DeltaTable(table.uri)
    assert version == dt.version() and dt.transaction_version(app_id("s", 0)) == 10
    assert dt.history(1)[0]["liftlog"] == {"start_offset": 0}
    (action,) = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    assert (action["min.offset"], action["max.offset"], action["num_records"]) == (0, 9, 10)
    assert action["null_count.offset"] == 0
    assert action.get("null_count.value") is None  # an encrypted column has no statistics
    (path,) = data_files(table.uri)
    data = path.read_bytes()
    # a clear value column holds all ten values; ciphertext holds a 2-byte one by chance only
    assert sum(b"v%d" % o in data for o in range(10)) < 10
    assert pq.ParquetFile(path).metadata.num_row_groups == 1  # not one per stored batch
    assert pq.read_table(path, columns=["offset"])["offset"].to_pylist() == list(range(10))
    with pytest.raises(OSError, match="decrypt"):
        pq.read_table(path, columns=["value"])
    assert values(table.uri) == {o: b"v%d" % o for o in range(10)}


def test_an_export_against_a_stale_snapshot_loses_and_deletes_its_file(table):
    stale = table.snapshot()
    export(table, 0, 10)
    with pytest.raises(LakeCommitConflictError):
        export(table, 0, 10, snapshot=stale)
    assert len(data_files(table.uri)) == 1
    assert table.exported_offsets(1) == {0: 10}


def test_packing_an_encrypted_stream_keeps_its_files_encrypted(table):
    for start in range(0, 30, 10):
        export(table, start, start + 10)
    storage = LakeStorage(table.uri)
    with pytest.raises(EncryptedLakeKeysError):
        pack_small_files(storage, "s", 1 << 20, 5, encrypted=True)
    outcome = pack_small_files(storage, "s", 1 << 20, 5, encrypted=True, crypto_for=crypto)
    assert (outcome.files_removed, outcome.files_added) == (3, 1)
    (packed,) = RewriteSnapshot.open(storage, "s").files()
    assert (packed.records, packed.min_offset, packed.max_offset) == (30, 0, 29)
    with pytest.raises(OSError, match="decrypt"):
        pq.read_table(packed.location, columns=["value"])
    assert values(table.uri) == {o: b"v%d" % o for o in range(30)}
