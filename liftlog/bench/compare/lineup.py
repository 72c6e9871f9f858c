"""What ``liftlog bench --replication N`` lines up: one node beside JetStream, or three beside a
JetStream R3 cluster.

Everything the two runs do differently is here, as data (the sides, the defaults) and one
small strategy (the JetStream peer), so the stack, the size run, the report and the verdicts
are one code path. What follows from the replication factor itself: a replicated run checks
every replica against the acked count; a single node records fire-and-forget traffic beside
a bare subscriber.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from liftlog.bench.compare.peers import ClusterPeers, PeerStart, SingleServerPeers
from liftlog.bench.compare.sides import (
    JETSTREAM,
    JETSTREAM_R3,
    JETSTREAM_SYNC,
    LIFTLOG,
    LIFTLOG_RF3,
    Side,
)
from liftlog.bench.publish.settings import DEFAULT_RECORDS, LATENCY_RATE_PER_S, BenchSettings

# The replicated run starts six more processes and its sides are slower per record, so it
# measures fewer records per phase to stay within about four minutes on two cores.
REPLICATED_DEFAULT_RECORDS = 20_000
# A moderate rate both replicated sides sustain with room to spare on two cores, so latency
# is the cost of one replicated write rather than of a queue building up.
REPLICATED_LATENCY_RATE_PER_S = 500


@dataclass(frozen=True)
class Lineup:
    """The sides of one run (Liftlog first, then the JetStream sides) and its defaults."""

    replication_factor: int
    liftlog: Side
    jetstream: tuple[Side, ...]
    peers: PeerStart
    default_records: int
    latency_rate_per_s: int
    # The settings the JSON records beside the measured knobs.
    settings_notes: tuple[tuple[str, object], ...]

    @property
    def replicated(self) -> bool:
        return self.replication_factor > 1

    @property
    def sides(self) -> tuple[Side, ...]:
        return (self.liftlog, *self.jetstream)

    @property
    def reference(self) -> Side:
        """The JetStream side Liftlog's ratios and targets are held against (default sync)."""
        return self.jetstream[0]

    def settings(self, records: int | None, sizes: Sequence[int]) -> BenchSettings:
        """The run's settings: this line-up's defaults where the user gave none."""
        return BenchSettings(
            records=self.default_records if records is None else records,
            sizes=tuple(sizes),
            latency_rate_per_s=self.latency_rate_per_s,
        )

    def notes(self, settings: BenchSettings) -> list[str]:
        """Say plainly where the replicated run measures less than the single-node one."""
        if not self.replicated or settings.records >= DEFAULT_RECORDS:
            return []
        return [
            f"{settings.records:,} records per measurement (the single-node run uses "
            f"{DEFAULT_RECORDS:,}): fewer, to keep the replicated run within about "
            "four minutes"
        ]


SINGLE_NODE = Lineup(
    replication_factor=1,
    liftlog=LIFTLOG,
    jetstream=(JETSTREAM, JETSTREAM_SYNC),
    peers=SingleServerPeers(JETSTREAM, JETSTREAM_SYNC),
    default_records=DEFAULT_RECORDS,
    latency_rate_per_s=LATENCY_RATE_PER_S,
    settings_notes=(
        ("node_fsync", "always"),
        ("liftlog_ack_policy", "all"),
        ("jetstream_storage", "file, 1 replica"),
    ),
)
REPLICATED = Lineup(
    replication_factor=3,
    liftlog=LIFTLOG_RF3,
    jetstream=(JETSTREAM_R3,),
    peers=ClusterPeers(JETSTREAM_R3),
    default_records=REPLICATED_DEFAULT_RECORDS,
    latency_rate_per_s=REPLICATED_LATENCY_RATE_PER_S,
    settings_notes=(
        ("replication_factor", 3),
        ("node_fsync", "always"),
        ("liftlog_ack_policy", "all"),
        ("jetstream_storage", "file, 3 replicas, default sync"),
    ),
)
LINEUPS: dict[int, Lineup] = {
    lineup.replication_factor: lineup for lineup in (SINGLE_NODE, REPLICATED)
}
