"""The commit-safety decision: which options are refused outright, and the verdict on a
probe's outcome. A store that ignores If-None-Match cannot be had on this machine (SeaweedFS
enforces it, and delta-rs refuses to commit with conditional puts disabled), so the verdict
on an overwriting store is checked here on the outcome such a store produces; the probe itself
runs for real against SeaweedFS in tests/integration/lake/test_lake_s3.py."""

from __future__ import annotations

import pytest

from spark_log.errors import LakeError
from spark_log.lake.commit_safety import (
    PROBE_WRITERS,
    ProbeOutcome,
    check_commit_safety,
    judge,
    refuse_unsafe_options,
)
from spark_log.lake.errors import UnsafeLakeStoreError
from spark_log.lake.storage import LakeStorage

URI = "s3://bucket/lake"


def test_local_lakes_are_not_probed(tmp_path):
    check_commit_safety(LakeStorage(str(tmp_path)))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "options",
    [{}, {"conditional_put": "etag"}, {"conditional_put": "dynamo:locks"},
     {"conditional_put": "disabled", "aws_s3_locking_provider": "dynamodb"}],
)  # fmt: skip
def test_options_that_keep_put_if_absent_pass(options):
    refuse_unsafe_options(LakeStorage(URI, options))


@pytest.mark.parametrize("mode", ["disabled", "none", "ETag-typo"])
def test_options_that_turn_put_if_absent_off_are_refused(mode):
    with pytest.raises(UnsafeLakeStoreError, match="conditional_put") as caught:
        refuse_unsafe_options(LakeStorage(URI, {"conditional_put": mode}))
    assert caught.value.code == "unsafe_lake_store" and URI in caught.value.message


def test_one_winner_and_the_rest_refused_is_safe():
    judge(URI, ProbeOutcome(committed=1, refused=PROBE_WRITERS - 1, rows=1))
    judge(URI, ProbeOutcome(committed=PROBE_WRITERS, refused=0, rows=PROBE_WRITERS))


def test_a_winner_whose_row_is_gone_means_an_overwritten_commit():
    with pytest.raises(UnsafeLakeStoreError, match="does not enforce put-if-absent"):
        judge(URI, ProbeOutcome(committed=PROBE_WRITERS, refused=0, rows=1))


def test_no_winner_at_all_is_not_a_verdict_but_a_transient_error():
    with pytest.raises(LakeError) as caught:
        judge(URI, ProbeOutcome(committed=0, refused=PROBE_WRITERS, rows=0))
    assert not isinstance(caught.value, UnsafeLakeStoreError)
