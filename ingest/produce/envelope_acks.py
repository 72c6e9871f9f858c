"""Acks of enveloped publishes: Liftbridge's ``Ack`` in an Ack envelope, sent to the ack inbox.

A publish that came in Liftbridge's envelope names where its ack goes (``ackInbox``) and what
the ack echoes (``correlationId``, ``ackPolicy``). A Liftbridge client parses nothing else, so
its successes and its refusals both leave in that shape, never as Liftlog's JSON.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_log.errors import (
    DecryptionError,
    EncryptionUnavailableError,
    ExpectedOffsetMismatchError,
    KeyUnavailableError,
    LiftlogError,
    RecordTooLargeError,
)
from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge.envelope import encode_ack

NS_PER_MS = 1_000_000

ACK_ERROR_BY_CODE: dict[str, pb.Ack.Error.ValueType] = {
    ExpectedOffsetMismatchError.code: pb.Ack.INCORRECT_OFFSET,
    RecordTooLargeError.code: pb.Ack.TOO_LARGE,
    KeyUnavailableError.code: pb.Ack.ENCRYPTION,
    EncryptionUnavailableError.code: pb.Ack.ENCRYPTION,
    DecryptionError.code: pb.Ack.ENCRYPTION,
}
"""Liftbridge's ack errors by our error code; every other refusal is ``UNKNOWN``."""


@dataclass(frozen=True, slots=True)
class EnvelopeAck:
    """What every ``Ack`` of one Liftbridge publish says besides its offset and commit time: an
    enveloped publish with an ack inbox carries one (None on a plain publish), and so does a
    publish over the gRPC API."""

    stream: str
    partition_subject: str
    msg_subject: str
    """The NATS subject the publish came on."""
    ack_inbox: str
    correlation_id: str
    ack_policy: pb.AckPolicy.ValueType
    reception_ns: int
    """When the leader took the publish in, Unix nanoseconds."""

    def ack(
        self, offset: int, commit_ns: int, ack_error: pb.Ack.Error.ValueType = pb.Ack.OK
    ) -> pb.Ack:
        """The ``Ack`` of this publish at ``offset`` (``ack_error``: why it was refused)."""
        return pb.Ack(
            stream=self.stream,
            partitionSubject=self.partition_subject,
            msgSubject=self.msg_subject,
            offset=offset,
            ackInbox=self.ack_inbox,
            correlationId=self.correlation_id,
            ackPolicy=self.ack_policy,
            receptionTimestamp=self.reception_ns,
            commitTimestamp=commit_ns,
            ackError=ack_error,
        )

    def complete(self, ack: pb.Ack, commit_ns: int) -> pb.Ack:
        """An ack that came back from another node, with every field it left empty filled
        in from the publish. A proto3 merge copies only the fields ``ack`` set; the inbox
        stays the client's (the leader acked on the forwarding node's)."""
        full = self.ack(ack.offset, commit_ns)
        full.MergeFrom(ack)
        full.ackInbox = self.ack_inbox
        return full


def ack_error(exc: LiftlogError) -> pb.Ack.Error.ValueType:
    return ACK_ERROR_BY_CODE.get(exc.code, pb.Ack.UNKNOWN)


def encode_envelope_ack(answer: EnvelopeAck, offset: int, commit_ns: int) -> bytes:
    """The enveloped ``Ack`` of a stored record (``commit_ns``: when it is sent)."""
    return encode_ack(answer.ack(offset, commit_ns))


def encode_envelope_error(answer: EnvelopeAck, exc: LiftlogError, now_ns: int) -> bytes:
    """The enveloped ``Ack`` of a refused publish: no offset, ``ackError`` says why."""
    return encode_ack(answer.ack(0, now_ns, ack_error(exc)))
