"""What an unclean election loses: the figure the dry run can know, and whether it is exact.

An unclean election makes a replica outside the ISR lead; the others truncate to where their
logs diverge from its log (KIP-279), so every record they hold from that point on is gone. The
point is the candidate's log end offset (LEO) only when its log is a prefix of theirs: a
candidate that once led holds a tail of an older leader epoch, the others truncate below its
LEO, and its records then take offsets that held other records. Only the last ISR (or the
leader) can hold acknowledged records beyond it: acks=all needs every ISR member, acks=leader
(or acks=all with min ISR 1 and an ISR shrunk to the leader) only the leader. So the loss is
exact when each of them answers with an undamaged log that has the candidate's log as a
prefix (or is a prefix of it), and otherwise only a lower bound: a dead leader that
acknowledged alone may hold records nobody else has, and nobody can say how many.

Pure (the controller's state and the replicas' own views in, an assessment out) so that each
case is unit-tested without a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from coordinator.znodes import NO_LEADER
from coordinator.znodes import PartitionState as PartitionRecord
from spark_log.api_models import (
    EpochEntryView,
    LeaderReportView,
    RecoveryLossView,
    ReplicaView,
)

EXACT = "exact"
AT_LEAST = "at_least"


@dataclass(frozen=True)
class KnownEnd:
    """One figure that some replica knows: records below ``offset`` were held (or committed)
    in the log of ``broker`` (or in its leader's, which it was a prefix of)."""

    offset: int
    source: str
    broker: int


@dataclass(frozen=True)
class Divergence:
    """Where the candidate's log and ``broker``'s stop holding records of the same epochs."""

    broker: int
    offset: int
    candidate_epoch: int | None
    other_epoch: int | None


@dataclass(frozen=True)
class LossAssessment:
    offsets_known_lost: int
    loss_bound: str
    last_isr: tuple[int, ...]
    unreachable_isr: tuple[int, ...]
    explanation: str

    @property
    def loss_known(self) -> bool:
        return self.loss_bound == EXACT


def last_holders(state: PartitionRecord) -> tuple[int, ...]:
    """The replicas that can hold acknowledged records: the ISR and the leader.

    An ISR emptied by replicas that lost data at recovery names nobody, so then every replica
    counts (one of them held the acknowledged records before its loss).
    """
    holders = set(state.isr) | ({state.leader} - {NO_LEADER})
    return tuple(sorted(holders or set(state.replicas)))


def divergence_point(candidate: ReplicaView, other: ReplicaView) -> int | None:
    """The first offset at which the two logs hold records of different leader epochs, or
    the end of the shorter log when one is a prefix of the other (what a follower truncates
    to under KIP-279, iterated to the end); None when either did not report its epochs.

    Offsets below either log's first epoch entry (its log start) are not compared: one of
    the two no longer holds them, so no election can lose or reuse them.
    """
    if candidate.epoch_entries is None or other.epoch_entries is None:
        return None
    c_entries, o_entries = candidate.epoch_entries, other.epoch_entries
    c_end, o_end = candidate.log_end_offset or 0, other.log_end_offset or 0
    end = min(c_end, o_end)
    start = max(_first_start(c_entries, c_end), _first_start(o_entries, o_end))
    starts = {e.start_offset for e in (*c_entries, *o_entries) if start < e.start_offset < end}
    for offset in sorted({start, *starts}):
        if offset < end and _epoch_at(c_entries, offset) != _epoch_at(o_entries, offset):
            return offset
    return end


def assess_loss(
    state: PartitionRecord, views: Mapping[int, ReplicaView], candidate: int
) -> LossAssessment:
    """The offsets electing ``candidate`` loses, exact or as a lower bound, and why."""
    candidate_leo = views[candidate].log_end_offset or 0
    holders = last_holders(state)
    unreachable = tuple(b for b in holders if _log_end(views.get(b)) is None)
    damaged = {b: v.recovery_loss for b, v in sorted(views.items()) if v.recovery_loss}
    unknown = tuple(
        b for b in sorted(views) if (b == candidate or b in holders) and not _has_epochs(views[b])
    )
    diverged = _divergences(views, candidate)
    ends = _known_ends(views, holders)
    worst = max(ends, key=lambda e: e.offset - _agreed_end(views, candidate, e.broker))
    agreed = _agreed_end(views, candidate, worst.broker)
    lost = max(0, worst.offset - agreed)
    clean = not (unreachable or damaged or unknown or _holders_in(diverged, holders))
    bound = EXACT if clean and lost == _holder_excess(views, holders, candidate_leo) else AT_LEAST
    explanation = " ".join(
        [
            _loss_sentence(lost, bound, candidate, candidate_leo, worst, agreed),
            *_unreachable_sentences(state, unreachable, worst),
            *(_damage_sentence(b, loss) for b, loss in damaged.items()),
            *(
                _divergence_sentence(candidate, candidate_leo, d)
                for d in diverged
                if d.broker in holders or (bound == AT_LEAST and d.broker == worst.broker)
            ),
            *(_unknown_epochs_sentence(candidate, b) for b in unknown),
        ]
    )
    return LossAssessment(lost, bound, holders, unreachable, explanation)


def _first_start(entries: Sequence[EpochEntryView], log_end: int) -> int:
    return entries[0].start_offset if entries else log_end


def _epoch_at(entries: Sequence[EpochEntryView], offset: int) -> int | None:
    """The leader epoch that wrote ``offset`` (None below the first entry)."""
    found = None
    for entry in entries:
        if entry.start_offset > offset:
            break
        found = entry.epoch
    return found


def _has_epochs(view: ReplicaView) -> bool:
    return view.epoch_entries is not None


def _log_end(view: ReplicaView | None) -> int | None:
    return None if view is None else view.log_end_offset


def _agreed_end(views: Mapping[int, ReplicaView], candidate: int, broker: int) -> int:
    """Below which offset the candidate's log holds the records ``broker``'s figures count.

    Where the two logs really diverge, that point; otherwise the candidate's LEO (beyond
    ``broker``'s own log end, what its leader held is assumed to match the candidate's: the
    figure stays a lower bound).
    """
    c_view = views[candidate]
    c_leo = c_view.log_end_offset or 0
    other = views.get(broker)
    if broker == candidate or other is None:
        return c_leo
    point = divergence_point(c_view, other)
    if point is None or point >= min(c_leo, other.log_end_offset or 0):
        return c_leo
    return point


def _divergences(views: Mapping[int, ReplicaView], candidate: int) -> list[Divergence]:
    """Every answering replica whose log and the candidate's disagree below both LEOs."""
    c_view = views[candidate]
    found = []
    for broker, view in sorted(views.items()):
        point = divergence_point(c_view, view) if broker != candidate else None
        if point is None or point >= min(c_view.log_end_offset or 0, view.log_end_offset or 0):
            continue
        c_epoch = _epoch_at(c_view.epoch_entries or (), point)
        found.append(Divergence(broker, point, c_epoch, _epoch_at(view.epoch_entries or (), point)))
    return found


def _holders_in(diverged: list[Divergence], holders: tuple[int, ...]) -> bool:
    return any(d.broker in holders for d in diverged)


def _holder_excess(
    views: Mapping[int, ReplicaView], holders: tuple[int, ...], candidate_leo: int
) -> int:
    """The highest LEO of the answering last holders beyond the candidate's: the loss when
    the candidate's log is a prefix of theirs and no other figure claims more."""
    leos = [v.log_end_offset for b, v in views.items() if b in holders and v.log_end_offset]
    return max(0, max(leos, default=0) - candidate_leo)


def _known_ends(views: Mapping[int, ReplicaView], holders: tuple[int, ...]) -> list[KnownEnd]:
    """Every figure the reachable replicas give: their HWs, the LEOs of the last ISR, what a
    damaged replica had made durable, and the HW a leader last reported to a follower."""
    ends = [KnownEnd(0, "an empty log", NO_LEADER)]
    for broker, view in sorted(views.items()):
        if broker in holders and view.log_end_offset is not None:  # first: wins a tie
            ends.append(KnownEnd(view.log_end_offset, f"broker {broker}'s log end offset", broker))
        if view.high_watermark is not None:
            ends.append(KnownEnd(view.high_watermark, f"broker {broker}'s high watermark", broker))
        if view.recovery_loss is not None:
            durable = view.recovery_loss.durable_end_offset
            ends.append(KnownEnd(durable, f"what broker {broker} had made durable", broker))
        report = _current_report(view)
        if report is not None:
            ends.append(
                KnownEnd(
                    report.high_watermark,
                    f"the high watermark broker {report.leader} (leader epoch "
                    f"{report.leader_epoch}) last reported to broker {broker}, "
                    f"{report.age_ms / 1000:.1f}s ago",
                    broker,
                )
            )
    return ends


def _current_report(view: ReplicaView) -> LeaderReportView | None:
    """The leader's last HW report, unless the replica's log already holds records of a later
    leader epoch: then the report predates them (an earlier unclean election lost what it
    counted, or the replica led since) and counting it would overstate the loss."""
    report = view.last_leader_report
    if report is None or not view.epoch_entries:
        return report
    return report if report.leader_epoch >= view.epoch_entries[-1].epoch else None


def _loss_sentence(
    lost: int, bound: str, candidate: int, candidate_leo: int, best: KnownEnd, agreed: int
) -> str:
    figure = f"the best known end is offset {best.offset} ({best.source})"
    if agreed < candidate_leo:
        figure += f", and broker {candidate}'s log matches that log only below offset {agreed}"
    if bound == EXACT:
        return (
            f"Every replica that can hold records beyond broker {candidate}'s log end offset "
            f"{candidate_leo} answered, its log extends the candidate's, and {figure}: "
            f"exactly {lost} offsets are lost."
        )
    return (
        f"At least {lost} offsets are lost ({figure}; broker {candidate}'s log ends at "
        f"{candidate_leo}); the total cannot be known."
    )


def _unreachable_sentences(
    state: PartitionRecord, unreachable: tuple[int, ...], best: KnownEnd
) -> list[str]:
    if not unreachable:
        return []
    if len(unreachable) == 1 and tuple(state.isr) == unreachable:
        (broker,) = unreachable
        return [
            f"Broker {broker} is unreachable and was the only ISR member (the partition is at "
            f"leader epoch {state.leader_epoch}): it may have acknowledged records beyond "
            f"offset {best.offset} (acks=leader, or acks=all with min ISR 1) that no "
            "surviving replica has."
        ]
    names = ", ".join(str(b) for b in unreachable)
    return [
        f"Brokers {names} of the last ISR {list(state.isr)} are unreachable: they may hold "
        f"acknowledged records beyond offset {best.offset} that no surviving replica has."
    ]


def _damage_sentence(broker: int, loss: RecoveryLossView) -> str:
    return (
        f"Broker {broker} lost offsets {loss.first_lost_offset}..{loss.durable_end_offset} at "
        "recovery: what it acknowledged beyond them cannot be known."
    )


def _divergence_sentence(candidate: int, candidate_leo: int, d: Divergence) -> str:
    return (
        f"Broker {candidate}'s log diverges from broker {d.broker}'s at offset {d.offset} "
        f"(leader epoch {d.candidate_epoch} wrote it on broker {candidate}, epoch "
        f"{d.other_epoch} on broker {d.broker}): broker {d.broker} must truncate to "
        f"{d.offset}, below the candidate's log end offset {candidate_leo}, and the "
        "candidate's records from there on reuse offsets that held other records; the count "
        "assumes that truncation, so it is only a lower bound."
    )


def _unknown_epochs_sentence(candidate: int, broker: int) -> str:
    return (
        f"Broker {broker} did not say which leader epochs wrote its log (an older version): "
        f"whether broker {candidate}'s log diverges from the others' cannot be told."
    )
