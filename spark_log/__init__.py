"""Liftlog's core: records and partition logs, config, errors, wire names and the client."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Ack", "Client", "Cursor", "Record", "SyncClient", "__version__"]

if TYPE_CHECKING:
    from spark_log.api_models import Ack
    from spark_log.client import Client
    from spark_log.log import Record
    from spark_log.positions import Cursor
    from spark_log.sync_client import SyncClient


def __getattr__(name: str) -> Any:
    """Import the clients lazily so ``spark_log.config`` stays cheap for tools that only need
    it."""
    if name in ("Client", "Ack"):
        from spark_log import client

        return getattr(client, name)
    if name == "SyncClient":
        from spark_log.sync_client import SyncClient

        return SyncClient
    if name == "Cursor":
        from spark_log.positions import Cursor

        return Cursor
    if name == "Record":
        from spark_log.log import Record

        return Record
    raise AttributeError(name)
