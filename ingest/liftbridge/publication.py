"""One checked Liftbridge publish on its way to its partition's leader.

Publish, PublishAsync and PublishToSubject all end in the same ``Publication``: where it goes
(the checked target), what it carries, and what its ack says. ``forwarded`` marks a publish
another node sent on to this one as the partition's leader: if this node no longer leads the
partition it refuses it (FAILED_PRECONDITION) instead of forwarding it again.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.liftbridge.publish_checks import PublishTarget
from ingest.produce.envelope_acks import EnvelopeAck


@dataclass(frozen=True, slots=True)
class Publication:
    """One checked publish on its way to its partition."""

    target: PublishTarget
    key: bytes
    value: bytes
    fields: EnvelopeAck
    forwarded: bool = False
