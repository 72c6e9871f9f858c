"""The unavailability timeline: when publishers of a class tried and nobody got an ack.

Between two consecutive successful completions (and before the first / after the last), the
class was unavailable from the first attempt in flight in that stretch until the next ack (the
last attempt's end if none came), if that is longer than a threshold. Normal latency makes
gaps well under the threshold, so only real outages (an election, a partition, a minority
side) show up.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from tests.support.jepsen.history import Attempt

DEFAULT_UNAVAILABLE_THRESHOLD_S = 1.0


@dataclass(frozen=True, slots=True)
class Outage:
    """One stretch without an acknowledgement, in monotonic seconds (``start`` inclusive)."""

    start: float
    end: float
    attempts: int
    """Attempts of the class in flight during the stretch."""

    @property
    def seconds(self) -> float:
        return self.end - self.start


def outages(
    attempts: Sequence[Attempt], threshold_s: float = DEFAULT_UNAVAILABLE_THRESHOLD_S
) -> list[Outage]:
    """Stretches longer than ``threshold_s`` with attempts in flight and no ack completing."""
    if not attempts:
        return []
    first = min(a.start_mono for a in attempts)
    last = max(a.end_mono for a in attempts)
    acks = sorted(a.end_mono for a in attempts if a.acknowledged)
    bounds = [first, *acks, last]
    found = []
    for after, end in itertools.pairwise(bounds):
        if end - after <= threshold_s:
            continue  # an outage starts at or after ``after``: this stretch is too short
        busy = [a for a in attempts if a.start_mono < end and a.end_mono > after]
        if not busy:
            continue
        # unavailable from when someone first tried (not from the last ack: nobody may
        # have been asking for a while) until the next ack
        start = max(after, min(a.start_mono for a in busy))
        if end - start > threshold_s:
            found.append(Outage(start, end, len(busy)))
    return found
