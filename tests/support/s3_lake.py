"""Stream tables on the test S3 server (SeaweedFS), laid out the way partition leaders export
them: ``LAKE_SCHEMA``, partitioned by ``partition``, each export one append committed with the
partition's app transaction (its version: the partition's lake offset). Read back through
deltalake with the lake's storage options."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import CommitFailedError
from pyarrow import fs as pafs

from datasource.compaction import CompactionTarget
from liftlog.embedded.seaweedfs import S3Credentials
from spark_log.lake.compaction_state import COMPACTION_METADATA_KEY
from spark_log.lake.layout import LAKE_SCHEMA, PARTITION_COLUMN, app_id, table_uri
from spark_log.lake.storage import LakeStorage
from spark_log.storage_options import (
    AWS_ACCESS_KEY_ID,
    AWS_ALLOW_HTTP,
    AWS_ENDPOINT_URL,
    AWS_REGION,
    AWS_SECRET_ACCESS_KEY,
)

Row = tuple[int, int, str | None, str]  # partition, offset, key, value
EXPORT_ATTEMPTS = 20


def s3_options(creds: S3Credentials) -> dict[str, str]:
    return {
        AWS_ENDPOINT_URL: creds.endpoint_url,
        AWS_ACCESS_KEY_ID: creds.access_key_id,
        AWS_SECRET_ACCESS_KEY: creds.secret_access_key,
        AWS_REGION: creds.region,
        AWS_ALLOW_HTTP: "true",
    }


class S3StreamTable:
    """One stream's table in the bucket, with an exporter's view of each partition's end."""

    def __init__(self, storage: LakeStorage, stream: str, partitions: int) -> None:
        """The table at ``storage`` (created unless it exists: a node may have made it)."""
        self.stream = stream
        self.partitions = partitions
        self.storage = storage
        self.ends = [0] * partitions
        DeltaTable.create(
            storage.uri,
            LAKE_SCHEMA,
            partition_by=[PARTITION_COLUMN],
            mode="ignore",
            name=stream,
            storage_options=self.storage.delta_options(),
        )

    @classmethod
    def new(cls, bucket: str, creds: S3Credentials, stream: str, partitions: int) -> S3StreamTable:
        """A fresh table in the bucket's lake, named as the exporter names it."""
        uri = table_uri(f"s3://{bucket}/lake", stream, int(time.time() * 1000))
        return cls(LakeStorage(uri, s3_options(creds)), stream, partitions)

    @property
    def uri(self) -> str:
        return self.storage.uri

    def target(self, **settings: Any) -> CompactionTarget:
        settings.setdefault("delete_retention_ms", 3_600_000)
        return CompactionTarget(
            self.stream, self.uri, self.partitions, storage_options=self.storage.options, **settings
        )

    def export(
        self, partition: int, rows: list[tuple[str | None, str]], timestamp_ms: int | None = None
    ) -> list[Row]:
        """Append ``(key, value)`` rows at the partition's next offsets, in one commit."""
        start = self.ends[partition]
        end = start + len(rows)
        stamp_us = (timestamp_ms or int(time.time() * 1000)) * 1000
        data = pa.table(
            {
                "partition": pa.array([partition] * len(rows), pa.int32()),
                "offset": pa.array(range(start, end), pa.int64()),
                "timestamp": pa.array([stamp_us] * len(rows), pa.timestamp("us", tz="UTC")),
                "key": pa.array([None if k is None else k.encode() for k, _ in rows], pa.binary()),
                "value": pa.array([v.encode() for _, v in rows], pa.binary()),
                "headers": pa.nulls(len(rows), LAKE_SCHEMA.field("headers").type),
                "subject": pa.array([self.stream] * len(rows), pa.string()),
            },
            schema=LAKE_SCHEMA,
        )
        self._commit(data, partition, start, end)
        self.ends[partition] = end
        return [(partition, o, k, v) for o, (k, v) in zip(range(start, end), rows, strict=True)]

    def _commit(self, data: pa.Table, partition: int, start: int, end: int) -> None:
        """The exporter's commit: check the partition's app transaction on a fresh snapshot,
        append against it; a lost race (delta-rs counts an append as reading the whole table,
        so a compaction's removes since the snapshot fail it) re-reads and tries again."""
        app = app_id(self.stream, partition)
        for _ in range(EXPORT_ATTEMPTS):
            table = self.delta()
            landed = table.transaction_version(app)
            if landed == end:
                return
            assert landed == (start or None), f"{app} is at {landed}, expected {start}"
            try:
                write_deltalake(
                    table,
                    data,
                    mode="append",
                    commit_properties=CommitProperties(
                        custom_metadata={"liftlog": {"export": uuid.uuid4().hex}},
                        app_transactions=[Transaction(app, end)],
                    ),
                )
                return
            except CommitFailedError:
                continue
        raise AssertionError(f"{app}: no export commit landed in {EXPORT_ATTEMPTS} attempts")

    def delta(self) -> DeltaTable:
        return DeltaTable(self.uri, storage_options=self.storage.delta_options())

    def rows(self) -> list[tuple[int, int, bytes | None, bytes]]:
        """Every row of the latest snapshot, through deltalake, in (partition, offset) order."""
        table = self.delta().to_pyarrow_table(columns=["partition", "offset", "key", "value"])
        rows = [(r["partition"], r["offset"], r["key"], r["value"]) for r in table.to_pylist()]
        return sorted(rows, key=lambda r: (r[0], r[1]))

    def offsets(self) -> list[tuple[int, int]]:
        return [(p, o) for p, o, _, _ in self.rows()]

    def files(self) -> list[dict[str, Any]]:
        return pa.table(self.delta().get_add_actions(flatten=True)).to_pylist()

    def stored_parquet(self) -> list[str]:
        """Every Parquet object under the table's partition directories (committed or not)."""
        fs, root = self.storage.filesystem()
        found = fs.get_file_info(pafs.FileSelector(root, recursive=True))
        return sorted(
            f.path[len(root) + 1 :]
            for f in found
            if f.path.endswith(".parquet") and f"/{PARTITION_COLUMN}=" in f.path
        )

    def compactions(self) -> list[dict[str, Any]]:
        """The compaction commits (not packing) in the history, newest first."""
        return [
            h[COMPACTION_METADATA_KEY]
            for h in self.delta().history()
            if h.get(COMPACTION_METADATA_KEY, {}).get("operation") == "compaction"
        ]
