"""Counting what each side acknowledged, so the replicated run can hold the stored records
against it: an acked record missing from a replica is a loss, whatever the throughput."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from liftlog.bench.publish.publishers import Publisher
from spark_log.client import Ack, Client


class AckTally:
    """Records acked per side, warm-ups included (they are stored too)."""

    def __init__(self) -> None:
        self._acked: Counter[str] = Counter()

    def add(self, side: str, records: int) -> None:
        self._acked[side] += records

    def acked(self, side: str) -> int:
        return self._acked[side]


class CountingPublisher:
    """A Publisher that adds each acked record to the tally (failed publishes are not counted:
    they may or may not be stored, and only acked ones are promised)."""

    def __init__(self, inner: Publisher, tally: AckTally, side: str) -> None:
        self.label = inner.label
        self._inner = inner
        self._tally = tally
        self._side = side

    async def publish(self, value: bytes) -> None:
        await self._inner.publish(value)
        self._tally.add(self._side, 1)


class CountingBatchSender:
    """``Client.publish_batch`` that adds the records of each acked batch to the tally."""

    def __init__(self, client: Client, tally: AckTally, side: str) -> None:
        self._client = client
        self._tally = tally
        self._side = side

    async def publish_batch(
        self, stream: str, values: Iterable[bytes | str], *, timeout_s: float | None = None
    ) -> Ack | None:
        ack = await self._client.publish_batch(stream, values, timeout_s=timeout_s)
        if ack is not None:
            self._tally.add(self._side, ack.count)
        return ack
