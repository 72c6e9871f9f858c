"""The JetStream side: its streams, and a second nats-server that fsyncs every message.

JetStream's file store does not fsync per message by default (``sync_interval`` is two
minutes); Liftlog's default fsyncs before it acks. The ``sync_interval: always`` server makes
the like-for-like durability comparison; it can only be set in a config file, hence the
subclass. The server's own ``/varz`` confirms the setting took effect.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import nats.errors
from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig

from liftlog.bench.errors import BenchError
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.embedded.nats import NatsServer
from liftlog.embedded.ports import free_port

VARZ_TIMEOUT_S = 5.0
STREAM_CREATE_TIMEOUT_S = 30.0
STREAM_CREATE_RETRY_S = 0.5
SYNC_ALWAYS_CONFIG = """\
# Written by liftlog bench: JetStream with an fsync before every ack.
jetstream {{
  store_dir: "{store_dir}"
  sync_interval: always
}}
"""


class SyncAlwaysNatsServer(NatsServer):
    """nats-server with JetStream and ``sync_interval: always`` (config file + the usual flags)."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(
            free_port(), data_dir, jetstream=False, log_path=data_dir / "nats-sync-always.log"
        )
        self.name = f"nats-server sync=always :{self.port}"

    def _config_text(self) -> str:
        store = str(self.data_dir / "jetstream").replace("\\", "\\\\").replace('"', '\\"')
        return super()._config_text() + SYNC_ALWAYS_CONFIG.format(store_dir=store)


def varz(monitor_url: str) -> JsonObject:
    """The server's ``/varz`` (version, JetStream config, slow-consumer count)."""
    try:
        with urllib.request.urlopen(f"{monitor_url}/varz", timeout=VARZ_TIMEOUT_S) as resp:
            return dict(json.loads(resp.read()))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise BenchError(f"cannot read {monitor_url}/varz: {exc}") from exc


def syncs_always(monitor_url: str) -> bool:
    """True when the server reports JetStream fsyncing every write."""
    config = varz(monitor_url).get("jetstream", {}).get("config", {})
    return bool(config.get("sync_always"))


async def create_js_stream(
    js: JetStreamContext, name: str, subject: str, replicas: int = 1
) -> None:
    """A file-storage stream on its own subject (the setup under test): one replica on the
    single server, ``replicas`` on the R3 cluster."""
    try:
        await js.add_stream(
            StreamConfig(
                name=name, subjects=[subject], storage=StorageType.FILE, num_replicas=replicas
            )
        )
    except nats.errors.Error as exc:
        raise BenchError(f"cannot create JetStream stream {name} on {subject}: {exc}") from exc


async def create_js_stream_when_ready(
    js: JetStreamContext,
    name: str,
    subject: str,
    replicas: int,
    timeout_s: float = STREAM_CREATE_TIMEOUT_S,
) -> None:
    """``create_js_stream``, retried: right after a cluster elected its meta leader it may
    still answer "insufficient resources" or time out while the peers catch up."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await create_js_stream(js, name, subject, replicas)
            return
        except BenchError:
            if time.monotonic() >= deadline:
                raise
        await asyncio.sleep(STREAM_CREATE_RETRY_S)
