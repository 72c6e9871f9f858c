"""An unauthenticated client cannot make a node hold request bodies: chunked bodies are
counted as the app reads them, not buffered ahead of routing and authentication, so the
node's memory does not grow with what strangers send (nor with ``max_request_bytes``)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from spark_log.auth_config import AuthConfig
from spark_log.limits_config import LimitsConfig
from tests.integration.conftest import NodeFactory

MIB = 1024 * 1024
MAX_REQUEST_BYTES = 64 * MIB
UNDER_LIMIT_BODIES = 6
UNDER_LIMIT_BYTES = 32 * MIB
OVER_LIMIT_BODIES = 2
OVER_LIMIT_BYTES = 80 * MIB
ALLOWED_GROWTH_BYTES = 64 * MIB
"""Well below the ~320 MiB buffering these bodies (up to the limit) would hold."""
CHUNK = b"x" * MIB


def _peak_rss_bytes(pid: int) -> int:
    """The process's peak resident set (VmHWM): a buffer freed before we look still counts."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM in /proc/{pid}/status")


async def _chunks(size: int) -> AsyncIterator[bytes]:
    """No Content-Length: the body arrives chunked, as a client hiding its size would send it."""
    for _ in range(size // MIB):
        yield CHUNK


async def _send_all(url: str) -> list[int]:
    sizes = [UNDER_LIMIT_BYTES] * UNDER_LIMIT_BODIES + [OVER_LIMIT_BYTES] * OVER_LIMIT_BODIES
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        answers = await asyncio.gather(
            *(client.post("/v1/streams", content=_chunks(size)) for size in sizes)
        )
    return [answer.status_code for answer in answers]


def test_unauthenticated_chunked_bodies_do_not_grow_the_nodes_memory(make_node: NodeFactory):
    node = make_node(
        1,
        auth=AuthConfig(enabled=True, bootstrap_token=secrets.token_urlsafe(24)),
        limits=LimitsConfig(max_request_bytes=MAX_REQUEST_BYTES),
    )
    before = _peak_rss_bytes(node.pid)
    statuses = asyncio.run(_send_all(node.api_url))
    growth = _peak_rss_bytes(node.pid) - before
    assert set(statuses) <= {401, 413}, statuses
    assert growth < ALLOWED_GROWTH_BYTES, f"peak RSS grew {growth / MIB:.0f} MiB"
