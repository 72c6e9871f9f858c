"""A compaction of an ``s3://`` lake with no key anywhere is refused in one line before
delta-rs would look for one on the network."""

from __future__ import annotations

import pytest

from datasource.compaction.lake_credentials import (
    LakeCredentialsMissingError,
    check_lake_credentials,
)

S3_TABLE = "s3://liftlog/lake/orders@1"


def test_an_s3_lake_without_a_key_is_refused_naming_the_flag_and_the_file() -> None:
    with pytest.raises(LakeCredentialsMissingError) as raised:
        check_lake_credentials(S3_TABLE, {"aws_endpoint_url": "http://127.0.0.1:1"}, {})
    message = raised.value.message
    assert "--lake-option" in message and "credentials file" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("uri", "options", "environ"),
    [
        (S3_TABLE, {"aws_access_key_id": "liftlog"}, {}),
        (S3_TABLE, {}, {"AWS_PROFILE": "analytics"}),
        (S3_TABLE, {}, {"AWS_EC2_METADATA_DISABLED": "false"}),
        ("/tmp/lake/orders@1", {}, {}),
    ],
)
def test_a_key_or_another_aws_source_or_a_local_lake_passes(
    uri: str, options: dict[str, str], environ: dict[str, str]
) -> None:
    check_lake_credentials(uri, options, environ)
