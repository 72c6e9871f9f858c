"""Acks per policy: ``leader`` and ``none`` after the append, ``all`` once the HW passes.

The router is the one place a sequenced request is answered, on its NATS reply subject (the ack
inbox of a Liftbridge enveloped publish, answered in Liftbridge's shape) or on the future of a
request that came from REST; requests waiting for the HW park in its purgatory, so acks follow
the HW in offset order without a scan.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ingest.produce.envelope_acks import encode_envelope_ack, encode_envelope_error
from ingest.produce.purgatory import Purgatory
from ingest.produce.request import ProduceAck, ProduceRequest
from ingest.produce.sequencer import Sequenced
from spark_log.errors import LiftlogError, NotEnoughReplicasAfterAppendError

AckSender = Callable[[str, bytes], None]


class AckRouter:
    """Sends acks per policy: ``leader`` after the append, ``all`` when the HW passes them."""

    def __init__(
        self,
        prefix: bytes,
        send: AckSender,
        encode_ack: Callable[[bytes, int, int | None], bytes],
        encode_error: Callable[[LiftlogError], bytes],
        encode_duplicate_ack: Callable[[bytes, int, int | None], bytes],
        answered: Callable[[ProduceRequest], None] = lambda req: None,
        now_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        """``answered`` is told of every request answered (the ack latency is observed there);
        ``now_ns`` stamps an enveloped ack's commit time (Unix nanoseconds)."""
        self._prefix = prefix
        self._now_ns = now_ns
        self._answered = answered
        self._send = send
        self._encode_ack = encode_ack
        self._encode_duplicate_ack = encode_duplicate_ack
        self._encode_error = encode_error
        self.purgatory: Purgatory[Sequenced] = Purgatory(self.success, self._fail_item)

    def error(self, req: ProduceRequest, exc: LiftlogError) -> None:
        if req.future is not None:
            if not req.future.done():
                req.future.set_exception(exc)
                self._answered(req)
        elif req.reply:
            envelope = req.envelope
            if envelope is None:
                self._send(req.reply, self._encode_error(exc))
            else:
                self._send(req.reply, encode_envelope_error(envelope, exc, self._now_ns()))
            self._answered(req)

    def _fail_item(self, item: Sequenced, exc: LiftlogError) -> None:
        self.error(item.request, exc)

    def success(self, item: Sequenced) -> None:
        req = item.request
        if req.future is not None:
            if not req.future.done():
                req.future.set_result(ProduceAck(item.offset, item.count, item.duplicate))
                self._answered(req)
        elif req.reply:
            envelope = req.envelope
            if envelope is None:
                count = item.count if req.records is not None else None
                encode = self._encode_duplicate_ack if item.duplicate else self._encode_ack
                self._send(req.reply, encode(self._prefix, item.offset, count))
            else:
                payload = encode_envelope_ack(envelope, item.offset, self._now_ns())
                self._send(req.reply, payload)
            self._answered(req)

    def after_append(
        self, sequenced: list[Sequenced], end_offset: int, hw: int, isr_ok: bool
    ) -> None:
        """Route each request: ack now (``leader``/``none``), refuse, or park until commit.

        ``isr_ok`` is read after the append. The writer refused acks=all requests before the
        append if the ISR was already too small, so False here means the ISR shrank while the
        cycle was being appended: those records are stored but cannot be committed now, and
        are refused with ``not_enough_replicas_after_append``. Requests parked earlier stay
        parked when the ISR shrinks (as in Kafka): they are acknowledged if it heals and the
        HW passes them, or the publisher's ack timeout ends the wait.
        """
        for item in sequenced:
            req = item.request
            if req.reply is None and req.future is None:
                continue  # a plain publish: nobody to acknowledge
            policy = req.ack_policy
            if policy == "none":
                if req.future is not None:
                    self.success(item)
            elif policy == "leader":
                self.success(item)
            elif item.offset + item.count <= hw:
                self.success(item)  # committed already (a duplicate of an older record)
            elif not isr_ok:
                self.error(
                    req,
                    NotEnoughReplicasAfterAppendError(
                        "the in-sync replica set fell below min_isr after the append; the "
                        "record is stored and is committed if the ISR heals"
                    ),
                )
            else:
                # a duplicate of a record still uncommitted waits for this cycle's end
                target = end_offset if item.duplicate else item.offset + item.count
                self.purgatory.add(target, item)
