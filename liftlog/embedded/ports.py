"""Free ports for the servers a stack starts, never the same one twice from this process.

A port is only known free until someone binds it, and a stack picks all its ports before it
starts anything. Every port handed out here (single or in a block) is remembered, so two picks
made before either port is bound (a server's client and monitor ports, a NATS cluster's route
block and the nodes' API block) never return one port twice; the race with other processes
remains, and a server that loses it fails its start with "address already in use".

The node API ports of a multi-node stack are consecutive (``api_port + i``), so they cannot
come from ``free_port()``: its neighbours are in the kernel's ephemeral range, where an outgoing
connection (a node dialling NATS or ZooKeeper while the others start) may take one between the
check and the node's bind ("address already in use"). Below that range the kernel never hands
a port out on its own.
"""

from __future__ import annotations

import random
import socket
import threading
from collections import deque
from pathlib import Path

from spark_log.errors import ProcessStartError

EXPLICIT_PORT_LOW = 20_000
PORT_BLOCK_ATTEMPTS = 200
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL_LOW = 32_768
FREE_PORT_ATTEMPTS = 1000
HANDED_OUT_MEMORY = 4096  # far more than any stack binds at once, far fewer than the range

_handed_out_lock = threading.Lock()
_handed_out: deque[int] = deque(maxlen=HANDED_OUT_MEMORY)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port the OS offered as free a moment ago, not handed out here lately."""
    for _ in range(FREE_PORT_ATTEMPTS):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if _claim([port]):
            return port
    raise ProcessStartError(f"the OS offered no port not already handed out ({host})")


def free_port_block(count: int, host: str = "127.0.0.1") -> int:
    """The first of ``count`` consecutive ports, all free now, below the ephemeral range."""
    low, high = EXPLICIT_PORT_LOW, _ephemeral_low()
    if high - low <= count:  # an unusual ephemeral range: take what is left above 1024
        low, high = 1024, 65_536
    for _ in range(PORT_BLOCK_ATTEMPTS):
        base = random.randrange(low, high - count)
        block = [base + i for i in range(count)]
        if all(port_is_free(host, port) for port in block) and _claim(block):
            return base
    raise ProcessStartError(f"found no {count} consecutive free ports in {low}..{high - 1}")


def _claim(ports: list[int]) -> bool:
    """Remember ``ports`` as handed out, unless one of them already was."""
    with _handed_out_lock:
        if any(port in _handed_out for port in ports):
            return False
        _handed_out.extend(ports)
        return True


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
