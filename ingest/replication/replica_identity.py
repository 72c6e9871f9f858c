"""What every replication peer knows of the replica it works for: whose, which, which epoch.

The fetcher (follower side) and the fetch server (leader side) each depend on a narrow
protocol instead of the whole replica; this is the part both share.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class ReplicaIdentity(Protocol):
    """A partition replica's broker, stream, partition and current leader epoch."""

    @property
    def broker_id(self) -> int: ...

    @property
    def stream_name(self) -> str: ...

    @property
    def partition(self) -> int: ...

    @property
    def leader_epoch(self) -> int: ...
