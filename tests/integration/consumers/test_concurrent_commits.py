"""Many cursor commits at once through one node of three: every commit stored, no ISR change.

The node that takes the commits forwards three in four of them to the leaders of the other
``__cursors`` partitions, and those leaders answer once this node's follower replicas hold the
records. Forwards once waited in the executor the follower appends needed, so the appends
queued behind the forwards waiting for them, the leaders shrank their ISRs, and commits
crawled (``ingest.peer_calls``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from spark_log.client import Client
from tests.integration.conftest import create_stream, node_client
from tests.support.scrape import scrape, total

WRITERS = 16
COMMITS_PER_WRITER = 15
LAG_S = 2.0
"""Short, so that a follower starved for two seconds is shrunk out (and counted)."""


async def test_concurrent_commits_keep_every_isr(make_node: Any, stream_name: str) -> None:
    nodes = [make_node(i, replica_lag_time_max_s=LAG_S) for i in (1, 2, 3)]
    with node_client(nodes[0].api_url) as api:
        create_stream(api, stream_name)
    async with Client(nodes[0].api_url) as client:
        await client.set_cursor("warm-up", stream_name, 0, 0)  # creates __cursors, RF 3

        async def writer(w: int) -> None:
            for offset in range(COMMITS_PER_WRITER):
                await client.set_cursor(f"writer-{w}", stream_name, 0, offset)

        await asyncio.wait_for(asyncio.gather(*(writer(w) for w in range(WRITERS))), 120)
        stored = [await client.fetch_cursor(f"writer-{w}", stream_name, 0) for w in range(WRITERS)]
    assert stored == [COMMITS_PER_WRITER - 1] * WRITERS
    for node in nodes:
        with node_client(node.api_url) as api:
            seen = scrape(api)
        assert total(seen, "liftlog_isr_shrinks_total") == 0, f"broker {node.broker_id}"
        assert total(seen, "liftlog_under_replicated_partitions") == 0
