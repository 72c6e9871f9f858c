"""What the benchmark modes (single node, replicated) need around the measurements: a data
directory, a plain NATS connection, the load average, the JSON file and free ports."""

from __future__ import annotations

import contextlib
import json
import os
import random
import socket
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import nats
import nats.errors
from nats.aio.client import Client as NatsClient

from spark_log.bench.errors import BenchError
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


def write_json(json_path: str | Path, body: dict[str, Any]) -> Path:
    """Write the results (creating the directory); returns the path for the closing line."""
    path = Path(json_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body, indent=2) + "\n")
    return path


# The node API ports of a 3-node stack are consecutive (``api_port + i``), so they cannot come
# from free_port(): its neighbours are in the kernel's ephemeral range, where an outgoing
# connection (a node dialling NATS or ZooKeeper while the others start) may take one between
# the check and the node's bind ("address already in use"). Below that range the kernel never
# hands a port out on its own.
EXPLICIT_PORT_LOW = 20_000
PORT_BLOCK_ATTEMPTS = 200
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL_LOW = 32_768


def free_port_block(count: int, host: str = "127.0.0.1") -> int:
    """The first of ``count`` consecutive ports, all free now, below the ephemeral range."""
    low, high = EXPLICIT_PORT_LOW, _ephemeral_low()
    if high - low <= count:  # an unusual ephemeral range: take what is left above 1024
        low, high = 1024, 65_536
    for _ in range(PORT_BLOCK_ATTEMPTS):
        base = random.randrange(low, high - count)
        if all(_bindable(host, base + i) for i in range(count)):
            return base
    raise BenchError(f"found no {count} consecutive free ports in {low}..{high - 1}")


def _ephemeral_low() -> int:
    try:
        return int(EPHEMERAL_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return DEFAULT_EPHEMERAL_LOW


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True
