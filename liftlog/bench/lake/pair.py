"""A local lake and an ``s3://`` lake side by side, for the benchmarks that compare them.

The S3 lake lives on the embedded SeaweedFS (``weed server -s3``) on this machine, reached
with the same options ``liftlog standalone --lake s3`` gives its nodes, so the difference
between the two columns is the object-store protocol and its requests, not a network. Both
lakes sit in one temporary directory that is removed, with the server stopped, whatever
happens.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from liftlog.bench.errors import BenchError
from liftlog.bench.toolkit.node_probe import peak_rss_mb
from liftlog.embedded.seaweedfs import SeaweedFsServer
from liftlog.embedded.standalone_lake import create_lake_bucket, s3_lake_config
from spark_log.config import LakeConfig
from spark_log.lake.storage import LakeStorage

LOCAL = "local"
S3 = "s3"
LAKES = (LOCAL, S3)
LAKE_TITLES = {LOCAL: "local lake", S3: "S3 lake (SeaweedFS)"}


@dataclass
class LakePair:
    """A local lake root and an S3 lake root with its store options, in one work directory."""

    work: Path
    server: SeaweedFsServer
    s3_config: LakeConfig
    seaweedfs_peak_rss_mb: float | None = None

    @property
    def local_root(self) -> Path:
        return self.work / "local-lake"

    def root(self, lake: str) -> str:
        """The lake's root URI (a local path, or ``s3://<bucket>/<prefix>``)."""
        if lake == LOCAL:
            return str(self.local_root)
        if lake == S3:
            return self.s3_config.uri
        raise BenchError(f"unknown lake {lake!r}; expected one of {LAKES}")

    def options(self, lake: str) -> dict[str, str]:
        """The lake's object-store options (delta-rs names; none for the local lake)."""
        return dict(self.s3_config.storage_options) if lake == S3 else {}

    def config(self, lake: str) -> LakeConfig:
        """A node's ``[lake]`` section for this lake (``dataclasses.replace`` sets the rest)."""
        return self.s3_config if lake == S3 else LakeConfig(uri=self.root(lake))

    def storage(self, lake: str, table: str) -> LakeStorage:
        """The table ``table`` under the lake's root, with the lake's options."""
        return LakeStorage(f"{self.root(lake)}/{table}", self.options(lake))


@contextmanager
def lake_pair(prefix: str) -> Iterator[LakePair]:
    """Start SeaweedFS with the lake's bucket in a fresh work directory; on the way out note
    the server's peak RSS, stop it and remove the directory."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    server = SeaweedFsServer(work / "seaweedfs")
    pair: LakePair | None = None
    try:
        print("starting SeaweedFS (S3 gateway) ...", flush=True)
        server.start()
        create_lake_bucket(server.credentials)
        pair = LakePair(work, server, s3_lake_config(server.credentials))
        pair.local_root.mkdir()
        yield pair
    finally:
        if pair is not None and server.is_running():
            pair.seaweedfs_peak_rss_mb = _rss_or_none(server.pid)
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def drop_table(storage: LakeStorage) -> None:
    """Free the store between runs, so later runs do not write into a fuller disk."""
    if storage.is_local:
        shutil.rmtree(storage.uri, ignore_errors=True)
        return
    filesystem, path = storage.filesystem()
    filesystem.delete_dir(path)


def _rss_or_none(pid: int) -> float | None:
    """Peak RSS when the process can still be read (a crashed server has none)."""
    try:
        return round(peak_rss_mb(pid), 1)
    except BenchError:
        return None
