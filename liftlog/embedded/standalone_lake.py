"""Where ``liftlog standalone`` puts the lake: ``<data-dir>/lake`` (``--lake local``, the
default) or a bucket on its embedded SeaweedFS (``--lake s3``).

The S3 lake's endpoint and generated credentials go into every node's config file as
``[lake.storage_options]`` (files readable by their owner only), never into code: a node reads
them as it would a production store's.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pyarrow as pa

from liftlog.embedded.client_files import lake_storage_options
from liftlog.embedded.seaweedfs import S3Credentials, create_bucket
from liftlog.embedded.standalone_defaults import LAKE_LOCAL as LAKE_LOCAL
from liftlog.embedded.standalone_defaults import LAKE_S3 as LAKE_S3
from liftlog.embedded.standalone_secure import write_secret
from spark_log.config import LakeConfig
from spark_log.errors import ProcessStartError
from spark_log.lake.storage import CONDITIONAL_PUT_ETAG, CONDITIONAL_PUT_OPTION

STANDALONE_LAKE_BUCKET = "liftlog"
STANDALONE_LAKE_PREFIX = "lake"
S3_SECRET_FILE_NAME = "s3-secret-key"


def s3_lake_uri() -> str:
    return f"s3://{STANDALONE_LAKE_BUCKET}/{STANDALONE_LAKE_PREFIX}"


def s3_lake_config(credentials: S3Credentials) -> LakeConfig:
    """Every node's lake on the embedded store: its endpoint (plain HTTP on this machine, so
    allowed explicitly) and its credentials; conditional puts are checked by each node."""
    return LakeConfig(
        uri=s3_lake_uri(),
        storage_options={
            **lake_storage_options(credentials),
            CONDITIONAL_PUT_OPTION: CONDITIONAL_PUT_ETAG,
        },
    )


def kept_s3_secret(seaweedfs_dir: Path) -> str:
    """The embedded store's secret key, made once and kept in ``seaweedfs_dir``: a restart
    on the same data directory keeps the key the user was shown (``lake.env`` still works)."""
    path = seaweedfs_dir / S3_SECRET_FILE_NAME
    try:
        kept = path.read_text().strip()
    except FileNotFoundError:
        kept = ""
    if kept:
        return kept
    secret = secrets.token_urlsafe(24)
    write_secret(path, secret + "\n")
    return secret


def create_lake_bucket(credentials: S3Credentials) -> None:
    """The lake's bucket (kept when it exists: a restart on the same data dir)."""
    try:
        create_bucket(credentials, STANDALONE_LAKE_BUCKET)
    except (OSError, pa.ArrowException) as exc:
        raise ProcessStartError(
            f"cannot create the lake bucket {STANDALONE_LAKE_BUCKET} "
            f"on {credentials.endpoint_url}: {exc}"
        ) from exc
