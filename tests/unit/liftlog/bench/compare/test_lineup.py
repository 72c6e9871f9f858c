"""The line-ups: one per replication factor, their defaults and what they say about them."""

from __future__ import annotations

import pytest

from liftlog.bench.compare.lineup import LINEUPS, REPLICATED, SINGLE_NODE
from spark_log.errors import InvalidRequestError


def test_one_line_up_per_replication_factor() -> None:
    assert LINEUPS == {1: SINGLE_NODE, 3: REPLICATED}
    assert [s.key for s in SINGLE_NODE.sides] == [
        "liftlog",
        "jetstream",
        "jetstream_sync_always",
    ]
    assert [s.key for s in REPLICATED.sides] == ["liftlog_rf3", "jetstream_r3"]


def test_each_line_up_fills_in_its_own_defaults() -> None:
    single = SINGLE_NODE.settings(None, [100])
    replicated = REPLICATED.settings(None, [100])
    assert (single.records, single.latency_rate_per_s) == (50_000, 1000)
    assert (replicated.records, replicated.latency_rate_per_s) == (20_000, 500)
    assert REPLICATED.settings(700, [100, 1024]).records == 700


def test_only_a_replicated_run_notes_that_it_measures_fewer_records() -> None:
    assert SINGLE_NODE.notes(SINGLE_NODE.settings(2000, [100])) == []
    (note,) = REPLICATED.notes(REPLICATED.settings(None, [100]))
    assert note.startswith("20,000 records per measurement (the single-node run uses 50,000)")
    assert REPLICATED.notes(REPLICATED.settings(50_000, [100])) == []


def test_invalid_settings_are_refused() -> None:
    with pytest.raises(InvalidRequestError):
        SINGLE_NODE.settings(0, [100])


def test_stream_names_per_size() -> None:
    assert REPLICATED.liftlog.stream_for(100) == ("bench-rf3-100", "bench.liftlog.rf3.100")
    assert SINGLE_NODE.reference.stream_for(1024) == ("BENCH_1024", "bench.js.1024")
