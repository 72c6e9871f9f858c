"""gufo-liftbridge publishing without pause, as an application would through a failover.

Usage: ``gufo_load.py BROKERS STREAM STOP_FILE``. It publishes batches of numbered values with
PublishAsync (``publish_bulk``, AckPolicy.ALL) until STOP_FILE exists. Each ack is printed at
once as a JSON line ``{"ack": VALUE, "offset": N}``, each failed batch as ``{"failure": ...}``;
the last line is ``{"result": {"acked": {VALUE: OFFSET}, "failures": [...]}}``. On a failed
batch it drops its connections (the client then starts again from a broker of BROKERS) and
goes on with new values: the test checks that every acked value is stored at its offset.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from grpc.aio import AioRpcError
from gufo.liftbridge.client import LiftbridgeClient
from gufo.liftbridge.error import LiftbridgeError
from gufo.liftbridge.types import AckPolicy

BATCH = 10
BATCH_TIMEOUT_S = 5.0


def emit(line: dict[str, Any]) -> None:
    print(json.dumps(line), flush=True)


async def publish_batch(
    client: LiftbridgeClient, stream: str, first: int, acked: dict[str, int]
) -> list[str]:
    """One batch of values ``v-first`` onwards; the async errors it got back."""
    requests = [
        client.get_publish_request(
            f"v-{n}".encode(), stream=stream, correlation_id=f"v-{n}", ack_policy=AckPolicy.ALL
        )
        for n in range(first, first + BATCH)
    ]
    errors = []
    async for response in client.publish_bulk(requests):  # type: ignore[arg-type]
        if response.HasField("asyncError"):
            errors.append(f"{response.correlationId}: {response.asyncError}")
            continue
        acked[response.correlationId] = response.ack.offset
        emit({"ack": response.correlationId, "offset": response.ack.offset})
    return errors


async def run(brokers: list[str], stream: str, stop_file: str) -> dict[str, Any]:
    client = LiftbridgeClient(brokers, publish_async_ack_timeout=BATCH_TIMEOUT_S)
    acked: dict[str, int] = {}
    failures: list[str] = []
    first = 0
    while not os.path.exists(stop_file):
        try:
            errors = await asyncio.wait_for(
                publish_batch(client, stream, first, acked), BATCH_TIMEOUT_S
            )
        except (LiftbridgeError, AioRpcError, TimeoutError) as exc:
            errors = [f"{type(exc).__name__}: {exc}"[:300]]
            await client.close()  # start again from a seed broker
        first += BATCH
        for error in errors:
            failures.append(error)
            emit({"failure": error})
    await client.close()
    return {"acked": acked, "failures": failures}


if __name__ == "__main__":
    emit({"result": asyncio.run(run(sys.argv[1].split(","), sys.argv[2], sys.argv[3]))})
