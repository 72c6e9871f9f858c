"""The lake's store options of a compaction run: flags over the AWS environment, for s3://
lakes only, and misspelt names refused."""

from __future__ import annotations

import pytest

from datasource.compaction.errors import InvalidCompactionOptionError
from datasource.compaction.lake_options import parse_lake_options, with_environment
from datasource.compaction.settings import CompactionTarget
from spark_log.errors import ConfigError

ENV = {
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
    "AWS_ACCESS_KEY_ID": "from-env",
    "AWS_SECRET_ACCESS_KEY": "env-secret",
    "AWS_DEFAULT_REGION": "eu-west-1",
    "HOME": "/root",
}


def test_flags_are_key_value_pairs_with_delta_rs_names():
    assert parse_lake_options(["AWS_REGION=us-east-1", "aws_allow_http=true"]) == {
        "aws_region": "us-east-1",
        "aws_allow_http": "true",
    }
    assert parse_lake_options(["AWS_SECRET_ACCESS_KEY=a=b"]) == {"aws_secret_access_key": "a=b"}


@pytest.mark.parametrize("pair", ["AWS_REGION", "=x"])
def test_a_flag_without_key_and_value_is_refused(pair):
    with pytest.raises(InvalidCompactionOptionError, match="KEY=VALUE"):
        parse_lake_options([pair])


def test_a_misspelt_option_is_refused_not_ignored():
    with pytest.raises(ConfigError, match=r"unknown key --lake-option\.aws_endpoint;"):
        parse_lake_options(["AWS_ENDPOINT=http://x"])


def test_s3_lakes_take_the_environment_and_flags_win():
    merged = with_environment("s3://b/lake/s@1", {"AWS_ACCESS_KEY_ID": "from-flag"}, ENV)
    assert merged == {
        "aws_access_key_id": "from-flag",
        "aws_endpoint_url": "http://127.0.0.1:9000",
        "aws_secret_access_key": "env-secret",
        "aws_region": "eu-west-1",
    }


def test_other_lakes_ignore_the_aws_environment():
    assert with_environment("/lake/s@1", {}, ENV) == {}
    assert with_environment("gs://b/lake/s@1", {}, ENV) == {}


def test_a_target_never_shows_its_secrets():
    target = CompactionTarget("s", "s3://b/s@1", 1, 1, storage_options={"k": "hunter2"})
    assert "hunter2" not in repr(target)
    assert target.storage.options == {"k": "hunter2"}


def test_describe_keeps_flags_and_environment_apart_so_the_session_can_sit_between():
    from datasource.compaction.lake_options import from_environment

    assert from_environment("s3://b/lake/s@1", ENV) == {
        "aws_endpoint_url": "http://127.0.0.1:9000",
        "aws_access_key_id": "from-env",
        "aws_secret_access_key": "env-secret",
        "aws_region": "eu-west-1",
    }
    assert from_environment("/lake/s@1", ENV) == {}
