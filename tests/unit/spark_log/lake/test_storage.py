"""LakeStorage: one URI and one set of options, as delta-rs and pyarrow want them."""

from __future__ import annotations

import pyarrow.fs as pafs
import pytest

from spark_log.errors import LakeError
from spark_log.lake.storage import LakeStorage

S3_OPTIONS = {
    "AWS_ENDPOINT_URL": "http://127.0.0.1:8333",
    "AWS_ACCESS_KEY_ID": "id",
    "AWS_SECRET_ACCESS_KEY": "secret",
    "AWS_ALLOW_HTTP": "true",
}


def test_a_local_lake_has_no_options_and_a_local_filesystem(tmp_path):
    storage = LakeStorage(str(tmp_path))
    assert storage.is_local and storage.delta_options() == {}
    filesystem, path = storage.filesystem()
    assert isinstance(filesystem, pafs.LocalFileSystem) and path == str(tmp_path)


def test_an_s3_lake_commits_with_conditional_puts_unless_told_otherwise():
    assert LakeStorage("s3://b/lake", S3_OPTIONS).delta_options()["conditional_put"] == "etag"
    chosen = LakeStorage("s3://b/lake", {**S3_OPTIONS, "conditional_put": "dynamo:t"})
    assert chosen.delta_options()["conditional_put"] == "dynamo:t"


def test_an_object_store_lake_bounds_each_store_call_unless_told_otherwise():
    """A hung store must fail a round within seconds, not hold the lake's threads for
    object_store's 180 s retry budget per request."""
    options = LakeStorage("s3://b/lake", S3_OPTIONS).delta_options()
    assert (options["timeout"], options["connect_timeout"], options["retry_timeout"]) == (
        "30s",
        "5s",
        "30s",
    )
    chosen = LakeStorage("s3://b/lake", {**S3_OPTIONS, "RETRY_TIMEOUT": "2m"}).delta_options()
    assert chosen["retry_timeout"] == "2m"


def test_option_names_are_case_insensitive_and_frozen():
    storage = LakeStorage("s3://b/lake", S3_OPTIONS)
    assert storage.options["aws_access_key_id"] == "id"
    with pytest.raises(TypeError):
        storage.options["x"] = "y"  # type: ignore[index]


def test_s3_paths_are_bucket_relative_and_share_the_options():
    storage = LakeStorage("s3://b/lake", S3_OPTIONS)
    filesystem, path = storage.at("s3://b/lake/t@1").filesystem_for("s3://b/lake/t@1/f.parquet")
    assert isinstance(filesystem, pafs.S3FileSystem)
    assert path == "b/lake/t@1/f.parquet"


def test_plain_http_needs_an_explicit_yes():
    options = {k: v for k, v in S3_OPTIONS.items() if k != "AWS_ALLOW_HTTP"}
    with pytest.raises(LakeError, match="AWS_ALLOW_HTTP"):
        LakeStorage("s3://b/lake", options).filesystem()
