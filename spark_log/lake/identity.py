"""The lake's identity file: ``<lake>/_liftlog_lake.json`` holding the id ZooKeeper records.

A Delta table cannot say which cluster it belongs to, and a lake path cannot say which storage
it is on. A small file at the lake's root, written once, can: a node whose lake lacks it, or
holds another id, is not looking at the lake the cluster exports to. Read and written through
pyarrow's filesystems, the same ones the Spark source reads the lake with, so any URI works.
"""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pyarrow.fs as pafs

from spark_log.errors import LakeError
from spark_log.lake.errors import UnsupportedLakeSchemeError
from spark_log.lake.storage import LakeStorage

IDENTITY_FILE = "_liftlog_lake.json"
FORMAT_VERSION = 1
UNSUPPORTED_SCHEME = "Unrecognized filesystem type"
"""How pyarrow says it has no filesystem for a scheme (other ArrowInvalid: a malformed URI)."""


def identity_path(lake_uri: str) -> str:
    return f"{lake_uri.rstrip('/')}/{IDENTITY_FILE}"


def read_lake_id(lake: str | LakeStorage) -> str | None:
    """The id in the lake's identity file; None when there is none. An empty file counts as
    none: it is what a writer that crashed right after creating it leaves behind."""
    filesystem, path = _resolve(_storage(lake))
    try:
        with filesystem.open_input_stream(path) as stream:
            raw = stream.read()
    except FileNotFoundError:
        return None
    except (OSError, pa.ArrowException) as exc:
        raise LakeError(f"cannot read the lake's identity file {path}: {exc}") from exc
    return _parse(raw, path) if raw else None


def write_lake_id(lake: str | LakeStorage, lake_id: str) -> None:
    """Write the identity file whole: on a local filesystem through a temporary file moved into
    place (readers never see it half written; the lake's directory is created first), on an
    object store with one PUT, which is atomic by itself."""
    filesystem, path = _resolve(_storage(lake))
    body = json.dumps({"version": FORMAT_VERSION, "lake_id": lake_id}).encode()
    try:
        if isinstance(filesystem, pafs.LocalFileSystem):
            filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
            temporary = f"{path}.{uuid.uuid4().hex}.tmp"
            _write(filesystem, temporary, body)
            filesystem.move(temporary, path)
        else:
            _write(filesystem, path, body)
    except (OSError, pa.ArrowException) as exc:
        raise LakeError(f"cannot write the lake's identity file {path}: {exc}") from exc


def _write(filesystem: pafs.FileSystem, path: str, body: bytes) -> None:
    with filesystem.open_output_stream(path) as stream:
        stream.write(body)


def _storage(lake: str | LakeStorage) -> LakeStorage:
    return LakeStorage(lake) if isinstance(lake, str) else lake


def _resolve(storage: LakeStorage) -> tuple[pafs.FileSystem, str]:
    """The identity file's filesystem and path: an S3 lake's through its own options (endpoint,
    credentials), other URIs through pyarrow's defaults."""
    uri = identity_path(storage.uri)
    if storage.is_s3:
        return storage.filesystem_for(uri)
    if "://" not in uri:
        return pafs.LocalFileSystem(), uri
    try:
        resolved: tuple[pafs.FileSystem, str] = pafs.FileSystem.from_uri(uri)
    except pa.ArrowInvalid as exc:
        if UNSUPPORTED_SCHEME in str(exc):
            raise UnsupportedLakeSchemeError(
                f"pyarrow has no filesystem for {uri.split('://')[0]}:// ({exc})"
            ) from exc
        raise LakeError(f"cannot open the lake at {uri}: {exc}") from exc
    except (OSError, pa.ArrowException) as exc:
        raise LakeError(f"cannot open the lake at {uri}: {exc}") from exc
    return resolved


def _parse(raw: bytes, path: str) -> str:
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise LakeError(f"the lake's identity file {path} is not JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
        raise LakeError(f"the lake's identity file {path} has an unknown format: {raw[:200]!r}")
    lake_id = data.get("lake_id")
    if not isinstance(lake_id, str) or not lake_id:
        raise LakeError(f"the lake's identity file {path} has no lake_id")
    return lake_id
