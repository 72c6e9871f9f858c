"""The checker on synthetic histories and replica sets: each anomaly found, a clean run valid.

Every case starts from the same clean run (``_clean``) and breaks exactly one thing, so each
test shows that this one fault, and nothing else, flips the verdict.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.jepsen import result as r
from tests.support.jepsen.checker import check
from tests.support.jepsen.history import (
    ACKS_ALL,
    ACKS_LEADER,
    ACKS_NONE,
    FAILED,
    INDETERMINATE,
    OK,
    Attempt,
    History,
    record_id,
    record_payload,
)
from tests.support.jepsen.replicas import ReplicaState
from tests.support.jepsen.report import table_header, table_row, write_report
from tests.support.jepsen.result import CheckResult
from tests.support.jepsen.unavailability import outages

BROKERS = (1, 2, 3)


def _attempt(
    aid: int,
    rids: list[str],
    *,
    acks: str = ACKS_ALL,
    outcome: str = OK,
    offset: int | None = None,
    start: float | None = None,
    end: float | None = None,
    code: str | None = None,
) -> Attempt:
    start = float(aid) / 10 if start is None else start
    return Attempt(
        id=aid,
        worker=0,
        acks=acks,
        with_msg_id=False,
        record_ids=tuple(rids),
        nats_url="nats://x",
        start_mono=start,
        end_mono=start + 0.05 if end is None else end,
        start_wall=1000 + start,
        end_wall=1000 + start + 0.05,
        outcome=outcome,
        partition=0 if offset is not None else None,
        offset=offset,
        error_code=code,
    )


def _replica(broker: int, rids: list[str], hw: int | None = None, start: int = 0) -> ReplicaState:
    records = tuple((start + i, record_payload(rid)) for i, rid in enumerate(rids))
    leo = start + len(rids)
    return ReplicaState(broker, 0, records, start, leo, leo if hw is None else hw)


def _ids(n: int) -> list[str]:
    return [record_id(0, i) for i in range(n)]


def _clean(n: int = 6) -> tuple[History, dict[int, dict[int, ReplicaState]]]:
    """n acks=all singles, acked at offsets 0..n-1, on three identical replicas."""
    history = History([_attempt(i, [rid], offset=i) for i, rid in enumerate(_ids(n))])
    return history, {b: {0: _replica(b, _ids(n))} for b in BROKERS}


def _with_leader(
    replicas: dict[int, dict[int, ReplicaState]], state: ReplicaState
) -> dict[int, dict[int, ReplicaState]]:
    return {**replicas, state.broker_id: {0: state}}


def test_a_clean_run_is_valid_with_no_anomaly() -> None:
    history, replicas = _clean()

    result = check(history, replicas)

    assert result.valid
    assert result.acknowledged == 6
    assert result.acknowledged_by_acks == {ACKS_ALL: 6}
    assert {name: a.count for name, a in result.anomalies.items() if a.count} == {}
    assert result.seconds_unavailable == 0


def test_an_acked_record_above_the_final_leaders_hw_is_uncommitted_not_lost() -> None:
    """The run ended before the final leader's HW caught up: a leader never truncates its own
    log, so the record is reported, not counted lost; gone from its log, it is lost."""
    history, replicas = _clean()
    # broker 1 has the highest HW, but its HW (5) leaves the last acked record uncommitted
    replicas = {b: {0: _replica(b, _ids(6), hw=4)} for b in BROKERS}
    replicas[1] = {0: _replica(1, _ids(6), hw=5)}

    result = check(history, replicas)

    assert result.valid and result.lost == 0
    assert result.anomalies[r.ACKED_UNCOMMITTED].examples[0]["id"] == record_id(0, 5)
    replicas[1] = {0: _replica(1, _ids(5), hw=5)}
    lost = check(history, replicas)
    assert not lost.valid
    assert lost.lost == 1
    assert lost.anomalies[r.LOST].examples[0]["id"] == record_id(0, 5)
    assert lost.lost_by_acks == {ACKS_ALL: 1}


def test_a_partition_without_a_named_final_leader_cannot_pass() -> None:
    history, replicas = _clean()
    assert check(history, replicas, leaders={0: 1}).valid
    result = check(history, replicas, leaders={})  # offline at the end, or nobody answered
    assert not result.valid
    assert result.count(r.LEADER_UNKNOWN) == 1


def test_a_lost_acks_leader_record_is_information_not_a_violation() -> None:
    history, replicas = _clean(5)
    history.append(_attempt(5, [record_id(0, 5)], acks=ACKS_LEADER, offset=5))

    result = check(history, replicas)

    assert result.valid
    assert result.lost == 0
    assert result.count(r.LOST_WEAK) == 1
    assert result.lost_by_acks == {ACKS_LEADER: 1}


def test_an_acked_record_stored_at_another_offset_is_a_violation() -> None:
    history, replicas = _clean()
    swapped = _ids(6)
    swapped[1], swapped[2] = swapped[2], swapped[1]
    replicas = {b: {0: _replica(b, swapped)} for b in BROKERS}

    result = check(history, replicas)

    assert not result.valid
    assert result.count(r.MOVED) == 2
    assert result.lost == 0


def test_one_id_twice_below_the_hw_is_a_duplicate_but_above_it_is_not() -> None:
    history, _replicas = _clean()
    twice = [*_ids(6), record_id(0, 3)]
    below = check(history, {b: {0: _replica(b, twice)} for b in BROKERS})
    above = check(history, {b: {0: _replica(b, twice, hw=6)} for b in BROKERS})

    assert not below.valid
    assert below.duplicated == 3  # one per replica
    assert below.anomalies[r.DUPLICATED].examples[0]["offsets"] == [3, 6]
    assert above.valid
    assert above.duplicated == 0


def test_a_record_at_different_offsets_on_two_replicas() -> None:
    history, replicas = _clean(3)
    history.append(_attempt(3, [record_id(0, 3)], outcome=INDETERMINATE))
    history.append(_attempt(4, [record_id(0, 4)], outcome=INDETERMINATE))
    replicas[1] = {0: _replica(1, [*_ids(3), record_id(0, 3), record_id(0, 4)])}
    replicas[2] = {0: _replica(2, [*_ids(3), record_id(0, 4), record_id(0, 3)])}

    result = check(history, replicas, leaders={0: 1})

    assert not result.valid
    assert result.count(r.MOVED_ACROSS_REPLICAS) == 2
    assert result.divergent == 2  # offsets 3 and 4 differ between brokers 1 and 2
    assert result.lost == 0


def test_a_missing_offset_inside_a_replica_is_a_gap() -> None:
    history, replicas = _clean()
    holed = _replica(2, _ids(6))
    holed = ReplicaState(2, 0, holed.records[:2] + holed.records[3:], 0, 6, 6)

    result = check(history, _with_leader(replicas, holed), leaders={0: 1})

    assert not result.valid
    assert result.count(r.GAPS) == 1
    assert result.anomalies[r.GAPS].examples[0] == {
        "broker": 2, "partition": 0, "expected": 2, "found": 3,
    }  # fmt: skip


def test_a_log_shorter_than_its_leo_is_a_gap() -> None:
    history, replicas = _clean()
    short = _replica(3, _ids(6))
    short = ReplicaState(3, 0, short.records, 0, 7, 6)

    result = check(history, _with_leader(replicas, short), leaders={0: 1})

    assert result.count(r.GAPS) == 1


def test_replicas_differing_below_the_smaller_hw_diverge_but_not_above_it() -> None:
    history, replicas = _clean(4)
    history.append(_attempt(4, [record_id(0, 4)], outcome=INDETERMINATE))
    history.append(_attempt(5, [record_id(0, 5)], outcome=INDETERMINATE))
    other = [*_ids(4), record_id(0, 5)]
    below = _with_leader(replicas, _replica(3, other))
    below[1] = {0: _replica(1, [*_ids(4), record_id(0, 4)])}
    above = _with_leader(below, _replica(3, other, hw=4))

    assert check(history, below, leaders={0: 1}).divergent == 1  # offset 4: 3 vs 1
    assert check(history, above, leaders={0: 1}).divergent == 0


def test_a_record_nobody_published_is_reported() -> None:
    history, replicas = _clean()
    replicas = {b: {0: _replica(b, [*_ids(6), "w9-999"])} for b in BROKERS}

    result = check(history, replicas)

    assert not result.valid
    assert result.count(r.UNKNOWN) == 1
    assert result.anomalies[r.UNKNOWN].examples[0] == {"partition": 0, "offset": 6, "id": "w9-999"}


def test_a_failure_that_promised_nothing_stored_must_not_be_committed() -> None:
    history, replicas = _clean(5)
    stored = record_id(0, 5)
    refused = _attempt(5, [stored], outcome=FAILED, code="not_enough_replicas")
    replicas = {b: {0: _replica(b, [*_ids(5), stored])} for b in BROKERS}
    history.append(refused)

    assert check(history, replicas).count(r.FAILED_BUT_STORED) == 1
    timed_out = _attempt(5, [stored], outcome=FAILED, code="timeout")
    maybe = History([*history.snapshot()[:5], timed_out])
    assert check(maybe, replicas).valid


def test_acks_none_sends_acknowledge_nothing() -> None:
    history, replicas = _clean(5)
    history.append(_attempt(5, [record_id(0, 5)], acks=ACKS_NONE))

    result = check(history, replicas)

    assert result.valid
    assert result.acknowledged_by_acks == {ACKS_ALL: 5}


def test_an_outage_is_a_stretch_over_the_threshold_with_attempts_and_no_ack() -> None:
    attempts = [
        _attempt(0, ["a"], offset=0, start=0.0, end=0.1),
        _attempt(1, ["b"], outcome=FAILED, code="not_enough_replicas", start=0.2, end=0.3),
        _attempt(2, ["c"], outcome=INDETERMINATE, start=0.4, end=2.4),
        _attempt(3, ["d"], offset=1, start=2.5, end=2.6),
        _attempt(4, ["e"], offset=2, start=2.7, end=3.0),
    ]

    found = outages(attempts, threshold_s=1.0)

    assert [(o.start, o.end, o.attempts) for o in found] == [(0.2, 2.6, 3)]
    assert outages(attempts, threshold_s=3.0) == []
    # nobody tried between the first ack and 2.5: a quiet stretch is not an outage
    assert outages([a for a in attempts if a.id not in (1, 2)], threshold_s=1.0) == []


def test_seconds_unavailable_count_only_the_must_survive_class() -> None:
    history, replicas = _clean(2)
    history.append(_attempt(9, ["w0-9"], acks=ACKS_LEADER, outcome=INDETERMINATE, end=5.0))
    history.append(_attempt(10, ["w0-10"], outcome=INDETERMINATE, start=1.0, end=3.5))

    result = check(history, replicas)

    assert round(result.seconds_unavailable, 2) == 2.5  # from the attempt at 1.0 to its end
    assert round(check(history, replicas, (ACKS_LEADER,)).seconds_unavailable, 2) == 4.1


def test_history_round_trips_through_json(tmp_path: Path) -> None:
    history, _replicas = _clean(3)
    history.append(_attempt(3, ["w0-3", "w0-4"], outcome=FAILED, code="no_responders"))
    path = tmp_path / "history.json"

    history.dump(path)
    loaded = History.load(path)

    assert loaded.attempts == history.attempts
    assert loaded.next_id() == 4


def test_the_report_writes_artefacts_and_a_table_row(tmp_path: Path) -> None:
    history, replicas = _clean()
    replicas[1] = {0: _replica(1, _ids(5), hw=5)}
    result = check(history, {1: replicas[1]})

    write_report(tmp_path / "run", history, result, replicas)

    body = json.loads((tmp_path / "run" / "result.json").read_text())
    assert body["valid"] is False
    assert body["anomalies"][r.LOST]["count"] == 1
    assert "INVALID" in (tmp_path / "run" / "summary.txt").read_text()
    assert "VIOLATION lost: 1" in result.summary()
    drained = json.loads((tmp_path / "run" / "replicas.json").read_text())
    assert drained["1"]["0"]["high_watermark"] == 5
    assert table_header().count("|") == table_row("x", [result]).count("|")
    assert table_row("leader-kill", [result, CheckResult(("all",))]) == (
        "| leader-kill | 2 | 6 | 1 | 0 | 0 | 0.00 |"
    )
