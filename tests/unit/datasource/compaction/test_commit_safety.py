"""The compaction's commit-safety decision: where it probes, what it refuses, and that local
lakes are never probed. The probe itself runs against SeaweedFS in
tests/integration/lake/test_compaction_s3.py."""

from __future__ import annotations

import pytest

from datasource.compaction.commit_safety import (
    COMPACTION_ACTION,
    lake_root,
    require_commit_safety,
)
from spark_log.lake.commit_safety import PROBE_WRITERS, ProbeOutcome, judge
from spark_log.lake.errors import UnsafeLakeStoreError
from spark_log.lake.storage import LakeStorage

TABLE = "s3://bucket/lake/orders@1700000000000"


@pytest.mark.parametrize(
    ("table", "root"),
    [(TABLE, "s3://bucket/lake"), (f"{TABLE}/", "s3://bucket/lake"),
     ("s3://bucket/orders@1", "s3://bucket"), ("s3://bucket", "s3://bucket"),
     ("/data/lake/orders@1", "/data/lake"), ("orders@1", "orders@1")],
)  # fmt: skip
def test_the_probe_runs_at_the_lake_root_never_inside_the_table(table, root):
    storage = LakeStorage(table, {"aws_region": "eu-west-1"})
    assert lake_root(storage) == LakeStorage(root, {"aws_region": "eu-west-1"})


def test_a_local_lake_is_never_probed(tmp_path):
    table = tmp_path / "lake" / "orders@1"
    table.mkdir(parents=True)
    require_commit_safety(LakeStorage(str(table)))
    assert list((tmp_path / "lake").iterdir()) == [table]
    assert list(table.iterdir()) == []


@pytest.mark.parametrize("mode", ["disabled", "none"])
def test_options_without_put_if_absent_refuse_the_compaction_before_any_request(mode):
    with pytest.raises(UnsafeLakeStoreError) as caught:
        require_commit_safety(LakeStorage(TABLE, {"conditional_put": mode}))
    assert caught.value.code == "unsafe_lake_store"
    assert caught.value.message.startswith(f"refusing to {COMPACTION_ACTION} s3://bucket/lake:")
    assert "--lake-option" in caught.value.message


def test_an_overwritten_probe_commit_refuses_the_compaction():
    with pytest.raises(UnsafeLakeStoreError, match="does not enforce put-if-absent") as caught:
        judge("s3://bucket/lake", ProbeOutcome(PROBE_WRITERS, 0, 1), COMPACTION_ACTION)
    assert caught.value.message.startswith("refusing to commit a compaction to s3://bucket/lake")
