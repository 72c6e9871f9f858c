"""Judge a run: the history of attempts against every drained replica. Pure: no I/O.

The committed log of a partition is its final leader's records below that leader's HW (the
final leader is given, or taken to be the replica with the highest HW). Invariants, for the
acks levels that must survive (acks=all in a safe configuration):

- every acknowledged record is in the committed log, at the acknowledged offset;
- no record id is stored twice in one log below its HW (the workload never retries itself,
  so only the system can have duplicated it);
- below the HW, replicas hold identical records and each record at the same offset;
- offsets in every replica are dense from its log start to its LEO;
- nothing is stored that nobody published;
- a failure whose code promises nothing was stored left nothing in the committed log.

Acknowledged records lost under weaker acks (acks=leader) are reported as information: that
is what the weaker level trades for latency.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from tests.support.jepsen import result as r
from tests.support.jepsen.history import ACKS_ALL, FAILED, Attempt, History, record_id_of
from tests.support.jepsen.replicas import Replicas, ReplicaState, by_partition
from tests.support.jepsen.result import CheckResult
from tests.support.jepsen.unavailability import DEFAULT_UNAVAILABLE_THRESHOLD_S, outages

DEFINITELY_NOT_STORED = frozenset(
    {
        "no_responders",
        "not_enough_replicas",
        "stream_paused",
        "record_too_large",
        "invalid_request",
        "stream_not_found",
        "partition_not_found",
        "expected_offset_mismatch",
    }
)
"""Error codes whose failure promises the record was not appended (``spark_log.errors``);
``not_leader``, ``timeout`` and ``not_enough_replicas_after_append`` promise nothing."""

OffsetsById = dict[str, list[int]]


def final_leader(replicas: Sequence[ReplicaState]) -> ReplicaState:
    """The replica whose committed log is the reference: highest HW, then LEO, then the
    lowest broker id (a safe system's replicas agree below the smaller HW anyway)."""
    return max(replicas, key=lambda s: (s.high_watermark, s.log_end_offset, -s.broker_id))


def committed_ids(state: ReplicaState) -> OffsetsById:
    """record id -> its offsets below the replica's HW."""
    found: OffsetsById = {}
    for offset, payload in state.committed():
        found.setdefault(record_id_of(payload), []).append(offset)
    return found


def check(
    history: History,
    replicas: Replicas,
    must_survive: Iterable[str] = (ACKS_ALL,),
    *,
    leaders: Mapping[int, int] | None = None,
    unavailable_threshold_s: float = DEFAULT_UNAVAILABLE_THRESHOLD_S,
) -> CheckResult:
    """The verdict on one run; ``leaders`` maps partition -> final leader's broker id."""
    levels = tuple(must_survive)
    attempts = history.snapshot()
    result = CheckResult(levels, attempts=len(attempts))
    result.outcomes = dict(Counter(a.outcome for a in attempts))
    partitions = by_partition(replicas)
    final = {p: _leader_of(result, p, states, leaders) for p, states in partitions.items()}
    committed = {p: committed_ids(state) for p, state in final.items()}
    uncommitted = {p: uncommitted_ids(state) for p, state in final.items()}
    check_acknowledged(result, attempts, committed, levels, uncommitted)
    check_failed_but_stored(result, attempts, committed)
    for states in partitions.values():
        check_duplicates(result, states)
        check_gaps(result, states)
        check_divergence(result, states)
        check_offsets_across_replicas(result, states)
    check_unknown(result, partitions.values(), history.published_ids())
    must = [a for a in attempts if a.acks in levels]
    result.outages = outages(must, unavailable_threshold_s)
    return result


def _leader_of(
    result: CheckResult,
    partition: int,
    states: Sequence[ReplicaState],
    leaders: Mapping[int, int] | None,
) -> ReplicaState:
    """The named final leader's replica. With ``leaders`` given, a partition it does not name
    (offline at the end, or nobody answered) is a violation: the fallback below is a guess
    that could hide a loss, so the run cannot pass on it."""
    if leaders is None:
        return final_leader(states)
    named = [s for s in states if s.broker_id == leaders.get(partition)]
    if not named:
        result.anomaly(r.LEADER_UNKNOWN, violation=True).add(
            {"partition": partition, "named": leaders.get(partition)}
        )
        return final_leader(states)
    return named[0]


def uncommitted_ids(state: ReplicaState) -> set[tuple[int, str]]:
    """(offset, record id) of the records at or above the replica's HW."""
    return {(o, record_id_of(p)) for o, p in state.records if o >= state.high_watermark}


def check_acknowledged(
    result: CheckResult,
    attempts: Sequence[Attempt],
    committed: Mapping[int, OffsetsById],
    levels: Sequence[str],
    uncommitted: Mapping[int, set[tuple[int, str]]] | None = None,
) -> None:
    """Each acknowledged record must be committed at its acked offset. One the final leader
    holds at that offset above its HW (the run ended before the HW caught up; a leader never
    truncates its own log) is information, not a loss."""
    for attempt in attempts:
        must = attempt.acks in levels
        for rid, partition, offset in attempt.acked_offsets():
            _bump(result.acknowledged_by_acks, attempt.acks)
            result.acknowledged += must
            offsets = committed.get(partition, {}).get(rid)
            example = {"id": rid, "partition": partition, "offset": offset, "attempt": attempt.id}
            if not offsets and (offset, rid) in (uncommitted or {}).get(partition, set()):
                result.anomaly(r.ACKED_UNCOMMITTED, violation=False).add(example)
            elif not offsets:
                _bump(result.lost_by_acks, attempt.acks)
                result.anomaly(r.LOST if must else r.LOST_WEAK, violation=must).add(example)
            elif offset not in offsets:
                moved = r.MOVED if must else r.MOVED_WEAK
                result.anomaly(moved, violation=must).add({**example, "stored_at": offsets})
    result.anomaly(r.LOST, violation=True)
    result.anomaly(r.MOVED, violation=True)


def check_failed_but_stored(
    result: CheckResult, attempts: Sequence[Attempt], committed: Mapping[int, OffsetsById]
) -> None:
    """A failure that promised nothing was stored, yet its records are committed."""
    found = result.anomaly(r.FAILED_BUT_STORED, violation=True)
    for attempt in attempts:
        if attempt.outcome != FAILED or attempt.error_code not in DEFINITELY_NOT_STORED:
            continue
        for rid in attempt.record_ids:
            where = {p: ids[rid] for p, ids in committed.items() if rid in ids}
            if where:
                found.add({"id": rid, "code": attempt.error_code, "stored_at": where})


def check_duplicates(result: CheckResult, states: Sequence[ReplicaState]) -> None:
    """One record id at two or more offsets of one log, below that log's HW."""
    found = result.anomaly(r.DUPLICATED, violation=True)
    for state in states:
        for rid, offsets in committed_ids(state).items():
            if len(offsets) > 1:
                found.add(
                    {"broker": state.broker_id, "partition": state.partition, "id": rid,
                     "offsets": offsets}
                )  # fmt: skip


def check_gaps(result: CheckResult, states: Sequence[ReplicaState]) -> None:
    """Offsets must run densely from the log start to the LEO in every replica."""
    found = result.anomaly(r.GAPS, violation=True)
    for state in states:
        expected = state.log_start_offset
        for offset, _payload in state.records:
            if offset != expected:
                found.add(_gap(state, expected, offset))
            expected = offset + 1
        if expected != state.log_end_offset:
            found.add(_gap(state, expected, state.log_end_offset))


def _gap(state: ReplicaState, expected: int, found: int) -> dict[str, int]:
    return {"broker": state.broker_id, "partition": state.partition, "expected": expected,
            "found": found}  # fmt: skip


def check_divergence(result: CheckResult, states: Sequence[ReplicaState]) -> None:
    """Two replicas must hold the same payload at every offset below the smaller HW."""
    found = result.anomaly(r.DIVERGENT, violation=True)
    for a, b in itertools.combinations(states, 2):
        low = max(a.log_start_offset, b.log_start_offset)
        high = min(a.high_watermark, b.high_watermark)
        left, right = dict(a.records), dict(b.records)
        for offset in range(low, high):
            if left.get(offset) != right.get(offset):
                found.add(
                    {"brokers": [a.broker_id, b.broker_id], "partition": a.partition,
                     "offset": offset, "payloads": [_show(left.get(offset)),
                                                    _show(right.get(offset))]}
                )  # fmt: skip


def _show(payload: bytes | None) -> str | None:
    return None if payload is None else record_id_of(payload)


def check_offsets_across_replicas(result: CheckResult, states: Sequence[ReplicaState]) -> None:
    """One record id committed at different offsets on different replicas."""
    found = result.anomaly(r.MOVED_ACROSS_REPLICAS, violation=True)
    where: dict[str, dict[int, list[int]]] = {}
    for state in states:
        for rid, offsets in committed_ids(state).items():
            where.setdefault(rid, {})[state.broker_id] = offsets
    for rid, by_broker in where.items():
        if len({tuple(offsets) for offsets in by_broker.values()}) > 1:
            found.add({"partition": states[0].partition, "id": rid, "offsets": by_broker})


def check_unknown(
    result: CheckResult, partitions: Iterable[Sequence[ReplicaState]], published: set[str]
) -> None:
    """Stored records (committed or not) that no attempt published."""
    found = result.anomaly(r.UNKNOWN, violation=True)
    seen: set[tuple[int, int, str]] = set()
    for states in partitions:
        for state in states:
            for offset, payload in state.records:
                rid = record_id_of(payload)
                key = (state.partition, offset, rid)
                if rid not in published and key not in seen:
                    seen.add(key)
                    found.add({"partition": state.partition, "offset": offset, "id": rid})


def _bump(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1
