"""Record payloads: incompressible and deterministic, so runs compare and nothing compresses."""

from __future__ import annotations

import random

PAYLOAD_SEED = 20_240_601


def payload(size: int) -> bytes:
    """``size`` pseudo-random bytes, the same for every run (seeded by the size)."""
    return random.Random(PAYLOAD_SEED + size).randbytes(size)


def size_label(size: int) -> str:
    """``100 B``, ``1 KiB``: how the docs and the table name a record size."""
    if size % 1024 == 0:
        return f"{size // 1024} KiB"
    return f"{size} B"
