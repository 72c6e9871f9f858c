"""Fill a stream for the Spark read benchmark: N records of incompressible 100-byte values.

Values are random bytes (unique, so Parquet cannot dictionary-encode or compress them away)
and go out as producer batches of 10,000 records built straight from buffers, several in
flight at once: filling 10M records must not take longer than the reads it prepares.
"""

from __future__ import annotations

import asyncio
import os
import time

import numpy as np
import pyarrow as pa

from spark_log.client import Client

BATCH_RECORDS = 10_000
IN_FLIGHT = 8
KEY_BYTES = 8


def random_binary(count: int, width: int) -> pa.Array:
    """``count`` random values of ``width`` bytes, assembled from one buffer."""
    offsets = np.arange(count + 1, dtype=np.int32) * np.int32(width)
    return pa.BinaryArray.from_buffers(
        pa.binary(), count, [None, pa.py_buffer(offsets), pa.py_buffer(os.urandom(count * width))]
    )


async def fill(
    servers: str, stream: str, partitions: int, records: int, value_bytes: int, label: str
) -> float:
    """Publish ``records`` spread evenly over the partitions; returns the seconds it took."""
    started = time.monotonic()
    async with Client(servers) as client:
        slots = asyncio.Semaphore(IN_FLIGHT)
        done = 0

        async def send(partition: int, count: int) -> None:
            nonlocal done
            table = pa.table(
                {"key": random_binary(count, KEY_BYTES), "value": random_binary(count, value_bytes)}
            )
            try:
                await client.publish_table(stream, table, partition=partition, timeout_s=120)
            finally:
                slots.release()
            done += count
            if done % (records // 10 or 1) < count:
                print(f"  {label}: {done:,}/{records:,} published", flush=True)

        tasks = []
        for i, lo in enumerate(range(0, records, BATCH_RECORDS)):
            await slots.acquire()
            count = min(BATCH_RECORDS, records - lo)
            tasks.append(asyncio.create_task(send(i % partitions, count)))
        await asyncio.gather(*tasks)
    return time.monotonic() - started
