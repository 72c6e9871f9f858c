"""The lakes integration and fault tests export to: a local directory, or a bucket on the real
S3 server (SeaweedFS) with its endpoint and credentials in ``[lake.storage_options]``.

Tests open the tables their nodes wrote with ``open_delta(uri)``: the options of an S3 lake are
looked up by its bucket here, never taken from the environment, so a node that forgot to pass
its options anywhere fails the test instead of being rescued by the test's own environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from deltalake import DeltaTable

from liftlog.embedded.seaweedfs import S3Credentials
from spark_log.config import LakeConfig
from spark_log.lake.storage import LakeStorage

LOCAL = "local"
S3 = "s3"
LAKE_KINDS = (LOCAL, S3)
_OPTIONS_BY_BUCKET: dict[str, dict[str, str]] = {}


def s3_options(credentials: S3Credentials) -> dict[str, str]:
    """What a node's ``[lake.storage_options]`` holds for the embedded store."""
    return {
        "AWS_ENDPOINT_URL": credentials.endpoint_url,
        "AWS_ACCESS_KEY_ID": credentials.access_key_id,
        "AWS_SECRET_ACCESS_KEY": credentials.secret_access_key,
        "AWS_REGION": credentials.region,
        "AWS_ALLOW_HTTP": "true",
    }


@dataclass(frozen=True)
class LakeUnderTest:
    """One lake location; ``config(...)`` is a node's ``[lake]`` for it."""

    kind: str
    uri: str
    options: dict[str, str] = field(default_factory=dict)

    def config(self, **settings: Any) -> LakeConfig:
        """A node's ``[lake]``; ``storage_options`` given here add to (or override) the lake's."""
        options = {**self.options, **settings.pop("storage_options", {})}
        return LakeConfig(uri=self.uri, storage_options=options, **settings)

    @property
    def storage(self) -> LakeStorage:
        return LakeStorage(self.uri, self.options)


def local_lake(root: Path) -> LakeUnderTest:
    return LakeUnderTest(LOCAL, str(root / "lake"))


def s3_lake(bucket: str, credentials: S3Credentials, prefix: str = "lake") -> LakeUnderTest:
    options = s3_options(credentials)
    _OPTIONS_BY_BUCKET[bucket] = options
    return LakeUnderTest(S3, f"s3://{bucket}/{prefix}", options)


def storage_options_for(uri: str) -> dict[str, str]:
    """An S3 lake's options by its bucket (empty for local paths)."""
    if not uri.startswith("s3://"):
        return {}
    return LakeStorage(uri, _OPTIONS_BY_BUCKET[urlparse(uri).netloc]).delta_options()


def open_delta(uri: str) -> DeltaTable:
    return DeltaTable(uri, storage_options=storage_options_for(uri))
