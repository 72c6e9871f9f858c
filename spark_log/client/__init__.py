"""Liftlog's Python client: ``Client`` (asyncio), ``SyncClient``, group consumers, cursors,
positions and the REST transport every Liftlog tool shares.

The names below load on first use, so a module that needs only the REST transport
(``spark_log.client.rest``: the nodes, the Spark source) does not import the NATS client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["Ack", "Client", "Cursor", "Fetched", "GroupConsumer", "SyncClient"]

if TYPE_CHECKING:
    from spark_log.api_models import Ack
    from spark_log.client.client import Client
    from spark_log.client.fetched import Fetched
    from spark_log.client.group_consumer import GroupConsumer
    from spark_log.client.positions import Cursor
    from spark_log.client.sync_client import SyncClient


def __getattr__(name: str) -> object:
    """Each name imported on first use (literal imports, which the import-rule test follows)."""
    if name == "Ack":
        from spark_log.api_models import Ack

        return Ack
    if name in ("Client", "Fetched"):
        from spark_log.client import client, fetched

        return client.Client if name == "Client" else fetched.Fetched
    if name == "GroupConsumer":
        from spark_log.client.group_consumer import GroupConsumer

        return GroupConsumer
    if name == "Cursor":
        from spark_log.client.positions import Cursor

        return Cursor
    if name == "SyncClient":
        from spark_log.client.sync_client import SyncClient

        return SyncClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
