"""What the checker concludes: counts, a few examples per anomaly, and a verdict.

Kept as plain data so a scenario can dump it with the history (``report.py``) and a reader
can see, without rerunning anything, which records went wrong and where.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tests.support.jepsen.unavailability import Outage

MAX_EXAMPLES = 5

# anomaly names (stable: they are JSON keys and table columns)
LOST = "lost"
LOST_WEAK = "lost_weak_acks"
MOVED = "acked_at_other_offset"
MOVED_WEAK = "acked_at_other_offset_weak_acks"
DUPLICATED = "duplicated"
MOVED_ACROSS_REPLICAS = "offset_differs_across_replicas"
GAPS = "gaps"
DIVERGENT = "divergent"
UNKNOWN = "unknown_records"
FAILED_BUT_STORED = "failed_but_stored"
LEADER_UNKNOWN = "final_leader_unknown"  # a violation: nothing to judge the records against
ACKED_UNCOMMITTED = "acked_uncommitted_at_end"  # information: in the leader's log above its HW


@dataclass
class Anomaly:
    """Every instance of one kind of anomaly: how many, and the first few."""

    name: str
    violation: bool
    """True when it breaks an invariant; False when it is information (weaker acks)."""
    count: int = 0
    examples: list[Any] = field(default_factory=list)

    def add(self, example: Any) -> None:
        self.count += 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(example)

    def to_json(self) -> dict[str, Any]:
        return {"violation": self.violation, "count": self.count, "examples": self.examples}


@dataclass
class CheckResult:
    """The verdict on one run: ``valid`` unless a violation has a non-zero count."""

    must_survive: tuple[str, ...]
    attempts: int = 0
    acknowledged: int = 0
    """Acknowledged records of the must-survive acks levels."""
    acknowledged_by_acks: dict[str, int] = field(default_factory=dict)
    lost_by_acks: dict[str, int] = field(default_factory=dict)
    outcomes: dict[str, int] = field(default_factory=dict)
    anomalies: dict[str, Anomaly] = field(default_factory=dict)
    outages: list[Outage] = field(default_factory=list)

    def anomaly(self, name: str, *, violation: bool) -> Anomaly:
        """The anomaly ``name`` (created empty on first use, so every checked kind is listed)."""
        if name not in self.anomalies:
            self.anomalies[name] = Anomaly(name, violation)
        return self.anomalies[name]

    def count(self, name: str) -> int:
        found = self.anomalies.get(name)
        return 0 if found is None else found.count

    @property
    def valid(self) -> bool:
        return not any(a.violation and a.count for a in self.anomalies.values())

    @property
    def lost(self) -> int:
        return self.count(LOST)

    @property
    def duplicated(self) -> int:
        return self.count(DUPLICATED)

    @property
    def divergent(self) -> int:
        return self.count(DIVERGENT)

    @property
    def seconds_unavailable(self) -> float:
        return sum(o.seconds for o in self.outages)

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "must_survive": list(self.must_survive),
            "attempts": self.attempts,
            "acknowledged": self.acknowledged,
            "acknowledged_by_acks": self.acknowledged_by_acks,
            "lost_by_acks": self.lost_by_acks,
            "outcomes": self.outcomes,
            "anomalies": {name: a.to_json() for name, a in sorted(self.anomalies.items())},
            "seconds_unavailable": round(self.seconds_unavailable, 3),
            "outages": [
                {
                    "start": o.start,
                    "end": o.end,
                    "seconds": round(o.seconds, 3),
                    "attempts": o.attempts,
                }
                for o in self.outages
            ],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, default=str)

    def summary(self) -> str:
        """A few lines a person reads first in a failure report."""
        lines = [
            f"{'VALID' if self.valid else 'INVALID'} "
            f"(must survive: acks={'/'.join(self.must_survive)})",
            f"attempts {self.attempts}: {_counts(self.outcomes)}",
            f"acknowledged records by acks: {_counts(self.acknowledged_by_acks)}",
            f"lost acknowledged records by acks: {_counts(self.lost_by_acks)}",
        ]
        for name, a in sorted(self.anomalies.items()):
            if a.count:
                kind = "VIOLATION" if a.violation else "info"
                lines.append(f"  {kind} {name}: {a.count}, e.g. {a.examples}")
        lines.append(
            f"unavailable {self.seconds_unavailable:.2f}s in {len(self.outages)} outage(s)"
            + "".join(f"\n  {o.seconds:.2f}s, {o.attempts} attempts" for o in self.outages)
        )
        return "\n".join(lines)


def _counts(counts: dict[str, int]) -> str:
    """``a 3, b 1`` (sorted), or ``none``."""
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"
