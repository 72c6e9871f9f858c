"""The node's commit-safety verdict: checked once, a refusal kept, counted on every refused
export, and reported as flush and describe show it (no network: these stores are decided by
their options alone; the probe runs against SeaweedFS in tests/integration/lake/test_lake_s3.py)."""

from __future__ import annotations

import pytest

from ingest.lake.commit_safety import LakeSafety
from ingest.metrics import NodeMetrics
from spark_log.lake.errors import UnsafeLakeStoreError
from spark_log.lake.storage import LakeStorage

REFUSALS = "liftlog_lake_unsafe_store_refusals_total"


def _refusals(metrics: NodeMetrics) -> float:
    return metrics.registry.get_sample_value(REFUSALS) or 0.0


def test_a_local_lake_is_safe_and_never_refused(tmp_path):
    metrics = NodeMetrics()
    safety = LakeSafety(LakeStorage(str(tmp_path)), metrics)
    safety.verify()
    safety.verify()
    assert safety.refusal is None and _refusals(metrics) == 0


def test_an_unsafe_store_is_refused_every_time_and_each_refusal_counted():
    metrics = NodeMetrics()
    storage = LakeStorage("s3://bucket/lake", {"conditional_put": "disabled"})
    safety = LakeSafety(storage, metrics)
    for expected in (1, 2):
        with pytest.raises(UnsafeLakeStoreError):
            safety.verify()
        assert _refusals(metrics) == expected
    assert (safety.refusal or "").startswith("unsafe_lake_store: refusing to export to s3://")
