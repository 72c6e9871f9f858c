"""Lake options from the Spark session conf (``spark.liftlog.lake.<NAME>``): the same
allowlist as the reader's ``lake.<NAME>`` options, and explicit options win over them."""

from __future__ import annotations

import pytest

from datasource.compaction.settings import CompactionTarget
from datasource.errors import InvalidOptionError
from datasource.session_conf import lake_options_from_conf

CONF = {
    "spark.liftlog.lake.AWS_ENDPOINT_URL": "http://127.0.0.1:8333",
    "spark.liftlog.lake.aws_region": "eu-west-1",
    "spark.sql.session.timeZone": "UTC",
    "spark.liftlog.other": "not a lake option",
}


def test_only_the_lake_prefix_is_taken_with_lower_case_names():
    assert lake_options_from_conf(CONF) == {
        "aws_endpoint_url": "http://127.0.0.1:8333",
        "aws_region": "eu-west-1",
    }


def test_an_unknown_key_is_refused_by_its_full_conf_name():
    with pytest.raises(InvalidOptionError) as caught:
        lake_options_from_conf({"spark.liftlog.lake.aws_endpoint": "http://x"})
    assert caught.value.code == "invalid_option"
    assert "unknown key spark.liftlog.lake.aws_endpoint;" in caught.value.message
    assert "aws_endpoint_url" in caught.value.message  # the supported names are listed


def test_explicit_options_win_over_the_session_which_wins_over_the_environment():
    target = CompactionTarget(
        "s", "s3://b/lake/s@1", 1, 1,
        storage_options={"AWS_REGION": "from-flag"},
        environment_options={"aws_region": "from-env", "aws_endpoint_url": "env-endpoint",
                             "aws_access_key_id": "env-key"},
    )  # fmt: skip
    session = {"aws_region": "from-session", "aws_endpoint_url": "session-endpoint"}
    options = target.with_session_options(session).storage.options
    assert options == {
        "aws_region": "from-flag",
        "aws_endpoint_url": "session-endpoint",
        "aws_access_key_id": "env-key",
    }
    assert target.with_session_options({}) is target
