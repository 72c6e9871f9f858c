"""The processes under test: the embedded stack (NATS with JetStream, ZooKeeper, one node)
and, when it starts and confirms the setting, a second nats-server with JetStream fsyncing
every message. Everything is stopped on exit, by PID, whatever happened.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from liftlog.bench.jetstream import SyncAlwaysNatsServer, syncs_always
from liftlog.bench.progress import Progress
from liftlog.embedded.ports import free_port
from liftlog.embedded.standalone import Standalone
from spark_log.errors import LiftlogError


@dataclass
class BenchStack:
    standalone: Standalone
    sync_server: SyncAlwaysNatsServer | None
    notes: list[str] = field(default_factory=list)

    @property
    def api_url(self) -> str:
        return self.standalone.node(1).api_url

    @property
    def node_pid(self) -> int:
        return self.standalone.node(1).pid


@contextlib.contextmanager
def bench_stack(root: Path, progress: Progress) -> Iterator[BenchStack]:
    """Start everything; yield; stop everything (the sync server first, then the stack)."""
    standalone = Standalone(
        nodes=1,
        data_dir=root / "stack",
        nats_port=free_port(),
        zk_port=free_port(),
        api_port=free_port(),
        jetstream=True,
    )
    progress.say("starting NATS (JetStream), ZooKeeper and one Liftlog node (fsync=always) ...")
    with standalone, contextlib.ExitStack() as cleanup:
        for name, url in standalone.endpoints():
            progress.say(f"  {name:<14} {url}")
        sync_server, notes = _start_sync_server(root / "nats-sync-always", progress)
        if sync_server is not None:
            cleanup.callback(sync_server.stop)
        yield BenchStack(standalone, sync_server, notes)


def _start_sync_server(
    data_dir: Path, progress: Progress
) -> tuple[SyncAlwaysNatsServer | None, list[str]]:
    """The optional third column: dropped, with the reason noted, if it cannot be had."""
    server = SyncAlwaysNatsServer(data_dir)
    progress.say("starting a second nats-server with JetStream sync_interval: always ...")
    try:
        server.start()
        confirmed = syncs_always(server.monitor_url)
    except LiftlogError as exc:
        server.stop()
        return None, [f"JetStream sync=always column dropped: {exc}"]
    if not confirmed:
        server.stop()
        return None, ["JetStream sync=always column dropped: /varz did not report sync_always"]
    progress.say(f"  {'nats sync=always':<14} {server.url} (varz: sync_always=true)")
    return server, []
