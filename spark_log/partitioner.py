"""Key → partition: one mapping shared by every client, the Spark sink and the nodes.

It lives apart from the client so that the nodes (which route a cursor to its ``__cursors``
partition with it) need not import the client.
"""

from __future__ import annotations

import zlib


def partition_for_key(key: bytes, partitions: int) -> int:
    """Stable key → partition mapping (CRC-32, the same in every client)."""
    return zlib.crc32(key) % partitions
