"""Blocks of consecutive free ports, for stacks whose node API ports follow one another.

The node API ports of a multi-node stack are consecutive (``api_port + i``), so they cannot
come from ``free_port()``: its neighbours are in the kernel's ephemeral range, where an outgoing
connection (a node dialling NATS or ZooKeeper while the others start) may take one between the
check and the node's bind ("address already in use"). Below that range the kernel never hands
a port out on its own.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

from spark_log.errors import ProcessStartError

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
        if all(port_is_free(host, base + i) for i in range(count)):
            return base
    raise ProcessStartError(f"found no {count} consecutive free ports in {low}..{high - 1}")


def _ephemeral_low() -> int:
    try:
        return int(EPHEMERAL_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return DEFAULT_EPHEMERAL_LOW


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could bind ``host:port`` now. SO_REUSEADDR as servers set it, so the
    TIME_WAIT leftovers of a stack that just stopped do not count as busy."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True
