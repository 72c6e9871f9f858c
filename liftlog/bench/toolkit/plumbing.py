"""What the benchmark modes (single node, replicated) need around the measurements: a data
directory, a plain NATS connection, the load average and the JSON file."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import nats
import nats.errors
from nats.aio.client import Client as NatsClient

from liftlog.bench.toolkit.json_object import JsonObject
from spark_log.errors import UnavailableError


@contextlib.contextmanager
def data_root(data_dir: str | Path | None) -> Iterator[Path]:
    """The given directory (kept), else a temporary one (removed afterwards)."""
    if data_dir is not None:
        root = Path(data_dir)
        root.mkdir(parents=True, exist_ok=True)
        yield root
        return
    with tempfile.TemporaryDirectory(prefix="liftlog-bench-") as tmp:
        yield Path(tmp)


@contextlib.asynccontextmanager
async def nats_connection(url: str) -> AsyncIterator[NatsClient]:
    """A plain nats-py connection (the JetStream side's publisher), closed on exit."""
    try:
        nc = await nats.connect(url, max_reconnect_attempts=0)
    except (nats.errors.Error, OSError) as exc:
        raise UnavailableError(f"cannot connect to NATS at {url}: {exc}") from exc
    try:
        yield nc
    finally:
        await nc.close()


def loadavg() -> str:
    """The 1/5/15-minute load averages: other work on a shared machine shows up here."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def write_json(json_path: str | Path, body: JsonObject) -> Path:
    """Write the results (creating the directory); returns the path for the closing line."""
    path = Path(json_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body, indent=2) + "\n")
    return path
