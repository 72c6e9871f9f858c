"""Fuzzing stream specs, which arrive from REST bodies and CLI flags: any name, subject and
numbers end in ``invalid_request`` or in a spec that NATS, the file system and int64 storage
can all take."""

from __future__ import annotations

import math

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from spark_log.errors import InvalidRequestError
from spark_log.stream_spec import (
    MAX_SPEC_INT,
    MAX_STREAM_NAME_LENGTH,
    MAX_SUBJECT_LENGTH,
    StreamSpec,
)
from tests.support.fuzz_profiles import fuzz_settings

pytestmark = pytest.mark.fuzz

_SUBJECT_PARTS = st.sampled_from(["orders", "*", ">", "", " ", "a b", "\x00", "é", "x" * 300])


def _subjects() -> st.SearchStrategy[str]:
    joined = st.lists(_SUBJECT_PARTS, min_size=1, max_size=6).map(".".join)
    return (
        joined
        | st.from_regex(r"[a-z]{1,8}(\.[a-z*]{1,8}){0,3}", fullmatch=True)
        | st.text(max_size=40)
    )


def _numbers() -> st.SearchStrategy[int]:
    return st.integers(1, 10**9) | st.integers(-5, 5) | st.integers(2**62, 2**66) | st.integers()


@given(
    name=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,20}", fullmatch=True)
    | st.text(max_size=8)
    | st.text(alphabet="ab.-_", min_size=190, max_size=210),
    subject=_subjects(),
    partitions=st.integers(1, 4) | st.integers(0, 2000),
    retention_ms=st.none() | _numbers(),
    max_record_bytes=_numbers(),
    compaction_interval_s=st.none() | st.floats(min_value=0.1, max_value=1e6) | st.floats(),
)
@fuzz_settings(quick_examples=300)
def test_any_spec_is_refused_or_safe_to_store(
    name, subject, partitions, retention_ms, max_record_bytes, compaction_interval_s
):
    try:
        spec = StreamSpec(
            name=name,
            subject=subject,
            partitions=partitions,
            retention_ms=retention_ms,
            max_record_bytes=max_record_bytes,
            compaction=compaction_interval_s is not None,
            compaction_interval_s=compaction_interval_s,
            load_balance=partitions > 1 and subject.endswith(">"),
        )
    except InvalidRequestError:
        event("refused")
        return
    event("accepted")
    assert 0 < len(spec.name) <= MAX_STREAM_NAME_LENGTH and spec.name.isascii()
    for partition in range(spec.partitions):
        subject_p = spec.partition_subject(partition)
        assert subject_p.isprintable() and not any(c.isspace() for c in subject_p)
        assert len(subject_p.encode()) <= MAX_SUBJECT_LENGTH + len(f".{partition}")
    assert 0 < spec.max_record_bytes <= MAX_SPEC_INT
    assert spec.retention_ms is None or 0 < spec.retention_ms <= MAX_SPEC_INT
    assert spec.compaction_interval_s is None or math.isfinite(spec.compaction_interval_s)
    assert StreamSpec.from_json(spec.to_json()) == spec
