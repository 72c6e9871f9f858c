"""Where a benchmark reads or long-polls a partition: its leader's REST URL."""

from __future__ import annotations

from liftlog.bench.errors import BenchError
from spark_log.client import Client


async def leader_url(client: Client, stream: str, partition: int = 0) -> str:
    """The REST URL of the broker leading ``stream``/``partition`` now."""
    leader = (await client.describe_stream(stream)).partition(partition).leader
    url = (await client.cluster()).api_urls().get(leader)
    if url is None:
        raise BenchError(f"{stream}/{partition} has no live leader (leader: {leader})")
    return url
