"""Typed errors of the lake, refining :class:`spark_log.errors.LakeError` (same code, so the
REST mapping needs no new entry, while the exporter can still tell a lost race apart)."""

from __future__ import annotations

from spark_log.errors import LakeError


class LakeCommitConflictError(LakeError):
    """Another writer moved this partition's app transaction first (a concurrent commit of
    the same app id, or the table's version is not the one this export started from): the
    exporter re-reads the table's version and continues from there."""


class LakeIdentityError(LakeError):
    """This node's lake is not the one the cluster exports to (its identity file is missing or
    holds another id than ZooKeeper's lake record): exporting here would split the stream's
    history over two lakes, so the node does not export until its ``lake.uri`` is fixed."""


class UnsupportedLakeSchemeError(LakeError):
    """pyarrow has no filesystem for the lake's URI scheme (delta-rs may still write there,
    e.g. ``az://``): the lake's identity cannot be checked, and the Spark source, which reads
    lake files with pyarrow, cannot read it either."""


class UnsafeLakeStoreError(LakeError):
    """The lake's store does not make Delta commits atomic (no put-if-absent for
    ``_delta_log`` entries, or options that turn it off): two exporters could both commit one
    version and one commit would be lost, so the node refuses to export there at all."""

    code = "unsafe_lake_store"


class EncryptedLakeKeysError(LakeError):
    """An encrypted stream's lake files were to be rewritten (compaction, packing) without
    the partition's data keys: refused, since the rewrite could neither read the encrypted
    values nor write them encrypted again, and must never write them in clear."""

    code = "encrypted_lake_keys_missing"


class LakeFileReadError(LakeError):
    """A lake file, or the table's Delta log, could not be read (a store error, a damaged
    file, a key that does not decrypt it)."""


class LakeFileGoneError(LakeFileReadError):
    """A file of the snapshot being read no longer exists: a compaction replaced it and a
    vacuum deleted it since the snapshot was loaded. Reading a newer snapshot finds the
    rows the compaction kept in the file that replaced it."""


class LakeValueRebuildError(LakeError):
    """A typed lake row's value cannot be rebuilt from its columns: its schema id is no longer
    in the registry (deleted permanently), no registry is at hand, or the columns do not encode
    with that schema. The read is refused rather than answered with other bytes."""
