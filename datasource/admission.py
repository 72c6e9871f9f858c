"""Admission control for micro-batches: how far the next batch may go.

Spark 4.3 passes one ReadLimit and has no composite limit, so Kafka's combination of
``maxOffsetsPerTrigger`` with ``minOffsetsPerTrigger`` + ``maxTriggerDelay`` is rebuilt here, by
hand, with Kafka's arithmetic: the cap is shared among partitions in proportion to how far
behind each is (never starving a small one), and a batch below the minimum waits until the
delay since the last batch has passed. Pure functions, so the rules are unit-tested.
"""

from __future__ import annotations

import math
from collections.abc import Mapping


def cap_offsets(
    start: Mapping[int, int], available: Mapping[int, int], max_records: int | None
) -> dict[int, int]:
    """End offsets at most ``available``, with at most ~``max_records`` records in total
    (Kafka's ``rateLimit``: each partition's share is proportional to its backlog; a share
    below one record is rounded up so every partition with data moves)."""
    backlog = {p: max(0, available[p] - start.get(p, 0)) for p in available}
    end = {p: start.get(p, 0) + backlog[p] for p in available}
    total = sum(backlog.values())
    if max_records is None or total <= max_records:
        return end
    for p, size in backlog.items():
        share = max_records * size / total
        step = math.ceil(share) if share < 1 else math.floor(share)
        end[p] = min(available[p], start.get(p, 0) + step)
    return end


def should_wait(
    pending: int, min_records: int | None, since_last_trigger_s: float, max_delay_s: float
) -> bool:
    """Whether a batch of ``pending`` records waits for more (``minOffsetsPerTrigger``), which
    it does until ``maxTriggerDelay`` has passed since the last batch ran."""
    if min_records is None or pending >= min_records:
        return False
    return since_last_trigger_s < max_delay_s
