"""Liftlog's core: records and partition logs, config, errors, wire names and the client."""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"
__all__ = ["Ack", "Client", "Cursor", "Record", "SyncClient", "__version__"]

if TYPE_CHECKING:
    from spark_log.api_models import Ack
    from spark_log.client import Client
    from spark_log.client.positions import Cursor
    from spark_log.client.sync_client import SyncClient
    from spark_log.log import Record


def __getattr__(name: str) -> object:
    """Import the clients lazily so ``spark_log.config`` stays cheap for tools that only need
    it (each import a literal one, so the import-rule test can follow it)."""
    if name == "Record":
        from spark_log.log import Record

        return Record
    if name in ("Ack", "Client", "Cursor", "SyncClient"):
        from spark_log import client

        return getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
