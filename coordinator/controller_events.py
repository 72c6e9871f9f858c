"""The controller's events and its one serial, bounded queue.

Every piece of controller work is an event taken from one queue by one task, so controller
decisions never interleave (Kafka's ControllerEventManager): a broker change cannot race a
controlled shutdown over the same partition state.

Notices ("something changed, re-read") come from ZooKeeper watches. They are level-triggered,
so a notice already waiting in the queue absorbs the same notice again: the queue holds at most
one of each kind, however fast watches fire. Requests (controlled shutdown, unclean election,
preferred election, rescan) carry a future for the answer; at most ``max_requests`` wait at
once, beyond that a request is refused (ControllerBusyError) rather than queued without bound.
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass

from coordinator.controller_actions import ScanResult
from coordinator.errors import ControllerBusyError
from coordinator.preferred_leader import PreferredOutcome
from coordinator.znodes import PartitionState

DEFAULT_CONTROLLER_MAX_REQUESTS = 64


class Notice(enum.Enum):
    """Level-triggered "re-read" events; the handler reads ZooKeeper, never the event."""

    CONTROLLER_CHANGED = "controller_changed"  # /v1/controller changed: campaign or check seat
    BROKERS_CHANGED = "brokers_changed"  # /v1/brokers/ids children changed
    STREAMS_CHANGED = "streams_changed"  # a stream or a partition state changed
    SESSION_LOST = "session_lost"  # the session expired: the seat (if any) is gone
    SESSION_CONNECTED = "session_connected"  # (re)connected: check the seat, re-scan
    LEADER_IMBALANCE_CHECK = "leader_imbalance_check"  # the periodic auto leader rebalance
    REASSIGNMENTS_CHANGED = "reassignments_changed"  # /v1/reassignments children changed


@dataclass
class ControlledShutdown:
    """Move leadership off ``broker_id``; answers how many partitions it still leads."""

    broker_id: int
    reply: asyncio.Future[int]


@dataclass
class UncleanElection:
    """The explicit admin action: elect an out-of-sync replica of one offline partition."""

    stream: str
    partition: int
    broker_id: int | None
    reply: asyncio.Future[PartitionState]


@dataclass
class PreferredElection:
    """Move leadership back to the preferred replica of one stream's partitions (all, or
    ``partition``); answers each partition's outcome."""

    stream: str
    partition: int | None
    reply: asyncio.Future[tuple[PreferredOutcome, ...]]


@dataclass
class Rescan:
    """Re-apply the leader rules to every partition now; answers the scan's result."""

    reply: asyncio.Future[ScanResult]


Request = ControlledShutdown | UncleanElection | PreferredElection | Rescan
Event = Notice | Request


class EventQueue:
    """FIFO of events; notices coalesce, requests are bounded. Loop-thread use only."""

    def __init__(self, max_requests: int = DEFAULT_CONTROLLER_MAX_REQUESTS) -> None:
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self._pending: set[Notice] = set()
        self._requests = 0
        self._max_requests = max_requests

    def notify(self, notice: Notice) -> None:
        """Queue ``notice`` unless the same notice is already waiting (it covers this one)."""
        if notice in self._pending:
            return
        self._pending.add(notice)
        self._queue.put_nowait(notice)

    def submit(self, request: Request) -> None:
        """Queue a request, or refuse it with ControllerBusyError when too many wait."""
        if self._requests >= self._max_requests:
            raise ControllerBusyError(
                f"the controller has {self._requests} requests waiting; retry later"
            )
        self._requests += 1
        self._queue.put_nowait(request)

    async def get(self) -> Event:
        """The next event. A notice taken out may be queued again by a change from now on."""
        event = await self._queue.get()
        if isinstance(event, Notice):
            self._pending.discard(event)
        else:
            self._requests -= 1
        return event

    def drain_requests(self) -> list[Request]:
        """Take every waiting request out (on stop, to answer them with an error)."""
        requests = []
        while not self._queue.empty():
            event = self._queue.get_nowait()
            if not isinstance(event, Notice):
                requests.append(event)
        self._pending.clear()
        self._requests = 0
        return requests
