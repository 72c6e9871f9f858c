"""Free ports for the servers a stack starts, never the same one twice from this process.

A port is only known free until someone binds it, and a stack picks all its ports before it
starts anything. Every port handed out here (single or in a block) is remembered, so two picks
made before either port is bound (a server's client and monitor ports, a NATS cluster's route
block and the nodes' API block) never return one port twice.

Ports are picked below the kernel's ephemeral range: there, an outgoing connection (a node
dialling NATS or ZooKeeper while the others start) may take a port between the check and the
server's bind ("address already in use"); below it the kernel never hands a port out on its
own. Processes that pick ports at the same time (a test run's parallel workers) are kept
apart by ``LIFTLOG_PORT_RANGE`` (``LOW-HIGH``): each picks from a range of its own.
"""

from __future__ import annotations

import os
import random
import socket
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from spark_log.errors import ConfigError, ProcessStartError

EXPLICIT_PORT_LOW = 20_000
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL_LOW = 32_768
PORT_RANGE_ENV = "LIFTLOG_PORT_RANGE"
# a port handed out is kept from others this long: far longer than a stack takes to bind what
# it picked, short enough that a long run never fills its range
HANDED_OUT_TTL_S = 300.0

_handed_out_lock = threading.Lock()
_handed_out: dict[int, float] = {}  # port -> when it was handed out (monotonic seconds)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free now, below the ephemeral range, not handed out here lately."""
    return free_port_block(1, host)


def free_port_block(count: int, host: str = "127.0.0.1") -> int:
    """The first of ``count`` consecutive ports, all free now, below the ephemeral range.

    Every block of the range is tried once, from a random start, so a range crowded with
    ports handed out lately still yields the free blocks it has; when none is left, the
    oldest half of what was handed out is forgotten (those stacks bound their ports long ago)
    and the range is tried again."""
    low, high = explicit_port_range()
    if high - low <= count:  # an unusual ephemeral range: take what is left above 1024
        low, high = 1024, 65_536
    for _ in range(2):
        base = _first_free_block(count, host, low, high)
        if base is not None:
            return base
        _forget_oldest_half()
    raise ProcessStartError(f"found no {count} consecutive free ports in {low}..{high - 1}")


def _first_free_block(count: int, host: str, low: int, high: int) -> int | None:
    """The first base, from a random one on and wrapping, whose block is free and unclaimed."""
    bases = high - low - count + 1
    start = random.randrange(bases)
    for step in range(bases):
        base = low + (start + step) % bases
        block = [base + i for i in range(count)]
        if _any_handed_out(block):
            continue
        if all(port_is_free(host, port) for port in block) and _claim(block):
            return base
    return None


def reserve(ports: Iterable[int]) -> None:
    """Keep ``ports`` from every later pick of this process: ports a caller chose itself
    (a launcher's command line), which its servers bind only later. Without this, a block
    picked for a server started first could take one of them."""
    now = time.monotonic()
    with _handed_out_lock:
        _handed_out.update(dict.fromkeys(ports, now))


def _any_handed_out(ports: list[int]) -> bool:
    with _handed_out_lock:
        return any(port in _handed_out for port in ports)


def _forget_oldest_half() -> None:
    with _handed_out_lock:
        oldest = sorted(_handed_out, key=_handed_out.__getitem__)[: (len(_handed_out) + 1) // 2]
        for port in oldest:
            del _handed_out[port]


def explicit_port_range() -> tuple[int, int]:
    """``[low, high)`` to pick from: ``LIFTLOG_PORT_RANGE`` when set, else from
    ``EXPLICIT_PORT_LOW`` up to the ephemeral range."""
    named = os.environ.get(PORT_RANGE_ENV, "")
    if not named:
        return EXPLICIT_PORT_LOW, _ephemeral_low()
    try:
        low, high = (int(part) for part in named.split("-"))
    except ValueError:
        raise ConfigError(
            f"{PORT_RANGE_ENV}={named!r}: expected LOW-HIGH, e.g. 20000-24999"
        ) from None
    if not 1024 <= low < high <= 65_535:
        raise ConfigError(f"{PORT_RANGE_ENV}={named!r}: expected 1024 <= LOW < HIGH <= 65535")
    return low, high + 1


def _claim(ports: list[int]) -> bool:
    """Remember ``ports`` as handed out, unless one of them already was lately."""
    now = time.monotonic()
    with _handed_out_lock:
        for port in [p for p, at in _handed_out.items() if now - at > HANDED_OUT_TTL_S]:
            del _handed_out[port]
        if any(port in _handed_out for port in ports):
            return False
        _handed_out.update(dict.fromkeys(ports, now))
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
