"""What a new leader waits for before it loads an internal stream into memory: its HW.

The coordinators of Liftlog's internal streams (cursors and groups in ``__cursors``, the
activity publisher of ``__activity``) rebuild their state from the log when they start
leading, and must read committed records only.
"""

from __future__ import annotations

import time

from ingest.replica.replica import PartitionReplica
from spark_log.errors import CoordinatorLoadingError

# a wait for the HW long-polls in steps this long, checking the leadership between them
HW_WAIT_STEP_MS = 500


async def await_log_committed(replica: PartitionReplica, timeout_s: float) -> int:
    """Wait until a new leader's HW covers the log end it had when asked; returns that end.

    A new leader's log may hold records its predecessor appended but never committed; they
    become committed (or are cut by the leader-epoch rules on the followers, never here) once
    the ISR has them. What it loads into memory must be committed, as Kafka's coordinators
    load only up to the HW (COORDINATOR_LOAD_IN_PROGRESS until then)."""
    epoch = replica.state.leader_epoch
    end = replica.log.log_end_offset
    deadline = time.monotonic() + timeout_s
    while replica.log.high_watermark < end:
        if not replica.state.leads_at(epoch):
            raise replica.state.not_leader_error()
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0:
            raise CoordinatorLoadingError(
                f"{replica.state.name}: the new leader's HW {replica.log.high_watermark} has "
                f"not reached its log end {end} yet; retry"
            )
        # a read at the HW long-polls until the HW moves (or the step ends)
        await replica.fetch(replica.log.high_watermark, 1, 1, min(left_ms, HW_WAIT_STEP_MS))
    return end
