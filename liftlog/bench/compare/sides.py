"""The columns of ``liftlog bench``: each side's key in the results, its title and its streams.

A side is data, so the single-node and the replicated runs differ only in which sides they
line up (see ``lineup``), never in the code that measures, reports or judges them.
"""

from __future__ import annotations

from dataclasses import dataclass

# The processes whose CPU every measurement reports (see toolkit.cpu.CpuMeter).
PUBLISHER, NATS, NATS_SYNC, NODE = "publisher", "nats-server", "nats-server-sync", "node"


@dataclass(frozen=True)
class Side:
    """One column of the report: the key its figures are stored under, its title, the names of
    its stream and subject per record size (``{size}`` is replaced), and the NATS process it
    publishes through (None when its own servers are its replicas, as in a JetStream cluster)."""

    key: str
    title: str
    stream: str
    subject: str
    nats: str | None
    # Measured in the first per-message round only: fsyncing every message is slow.
    one_round: bool = False

    def stream_for(self, size: int) -> tuple[str, str]:
        """(stream, subject) of this side for one record size."""
        return self.stream.format(size=size), self.subject.format(size=size)


LIFTLOG = Side("liftlog", "Liftlog", "bench-{size}", "bench.liftlog.{size}", NATS)
JETSTREAM = Side("jetstream", "JetStream", "BENCH_{size}", "bench.js.{size}", NATS)
JETSTREAM_SYNC = Side(
    "jetstream_sync_always",
    "JetStream sync=always",
    "BENCH_SYNC_{size}",
    "bench.jssync.{size}",
    NATS_SYNC,
    one_round=True,
)
LIFTLOG_RF3 = Side(
    "liftlog_rf3", "Liftlog RF=3", "bench-rf3-{size}", "bench.liftlog.rf3.{size}", NATS
)
JETSTREAM_R3 = Side("jetstream_r3", "JetStream R3", "BENCH_R3_{size}", "bench.js.r3.{size}", None)
