"""A lake pyarrow has no filesystem for is refused before Spark starts, with a typed error;
object stores pyarrow can open are not refused any more."""

from __future__ import annotations

import pytest

from datasource.compaction import CompactionOptions, UnsupportedLakeError, compact_stream
from datasource.compaction.settings import CompactionTarget

NO_SPARK = None  # the refusal comes first: no session is needed to see it


def test_an_unknown_scheme_is_refused_with_a_clear_error():
    target = CompactionTarget("s", "nosuchstore://bucket/lake/s@1", 1, 1)
    with pytest.raises(UnsupportedLakeError, match="pyarrow") as caught:
        compact_stream(NO_SPARK, target, CompactionOptions())  # type: ignore[arg-type]
    assert caught.value.code == "unsupported_lake"
