"""One checked Liftbridge publish on its way to its partition's leader.

Publish, PublishAsync and PublishToSubject all end in the same ``Publication``: where it goes
(the checked target), what it carries, and what its ack says. ``forwarded`` marks a publish
another node sent on to this one as the partition's leader: if this node no longer leads the
partition it refuses it (FAILED_PRECONDITION) instead of forwarding it again.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.liftbridge.publish_checks import NO_EXPECTED_OFFSET, PublishTarget
from ingest.produce.envelope_acks import EnvelopeAck


@dataclass(frozen=True, slots=True)
class Publication:
    """One checked publish on its way to its partition."""

    target: PublishTarget
    key: bytes
    value: bytes
    fields: EnvelopeAck
    forwarded: bool = False

    @property
    def byte_headers(self) -> dict[str, bytes]:
        """The headers as Liftbridge's messages carry them (bytes values)."""
        return {name: value.encode() for name, value in (self.target.headers or {}).items()}

    @property
    def wire_expected_offset(self) -> int:
        """The expected offset a message sent on carries: -1 unless the stream checks it, so
        the leader never checks an offset the client did not ask for."""
        expected = self.target.expected_offset
        return NO_EXPECTED_OFFSET if expected is None else expected
