"""Opening a lake file for reading, with the partition's decryption when the stream is
encrypted (``spark_log.crypto.parquet_kms``): the one place every reader of lake files
(the Spark source, compaction, packing) opens them, so none reads an encrypted file in a way
that could not decrypt it."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from spark_log.crypto.parquet_kms import PartitionFileCrypto


def open_parquet(
    source: str | pa.NativeFile, crypto: PartitionFileCrypto | None = None
) -> pq.ParquetFile:
    """``source`` (a path or an open input file) as a ParquetFile; ``crypto``: the partition's
    keys, for an encrypted stream's files (None: a clear stream).

    Without the keys an encrypted file's footer and clear columns still read; its ``value``
    column fails with an error (and its column metadata must not be touched: see
    ``spark_log.lake.file_stats``)."""
    if crypto is None:
        return pq.ParquetFile(source)
    return pq.ParquetFile(source, decryption_properties=crypto.decryption_properties())
