"""Liftbridge's enveloped publishes, taken in by a partition leader.

A NATS message whose payload starts with the envelope's magic number is a Liftbridge client's
publish: its key, value, headers and ack instructions travel inside the protobuf, not in NATS
headers. It is decoded whole or refused with ``EnvelopeError``, and then becomes the same
``ProduceRequest`` as any other publish, carrying an ``EnvelopeAck`` that says how to answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ingest.produce.envelope_acks import EnvelopeAck
from ingest.produce.request import ProduceRequest, check_record_size
from spark_log.errors import InvalidRequestError
from spark_log.fetch_wire import is_internal_reply
from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge.envelope import EnvelopeError, decode_publish
from spark_log.stream_spec import MAX_SUBJECT_LENGTH, StreamSpec

POLICY_BY_ACK_POLICY: dict[int, str] = {pb.LEADER: "leader", pb.ALL: "all", pb.NONE: "none"}
"""Liftbridge's AckPolicy as our ack policy (LEADER, the protobuf default, is ``leader``)."""
NO_EXPECTED_OFFSET = -1
_PLAIN_TOKEN = re.compile(r"^[^\s.*>]+$")
"""A ``Message.offset`` of -1: the publisher expects no particular offset."""


@dataclass(frozen=True, slots=True)
class EnvelopedPublish:
    """A decoded Publish envelope: the ``Message``, its headers as text, and its answer
    (None: no ack inbox, so refusals go to the NATS reply subject as JSON)."""

    message: pb.Message
    headers: dict[str, str] | None
    answer: EnvelopeAck | None


def open_envelope(
    subject: str, data: bytes, spec: StreamSpec, partition: int, reception_ns: int
) -> EnvelopedPublish:
    """Decode a Publish envelope received on ``subject``; ``EnvelopeError`` if it is corrupt
    (including an unknown ack policy and a header value that is not UTF-8)."""
    message = decode_publish(data)
    if message.ackPolicy not in POLICY_BY_ACK_POLICY:
        raise EnvelopeError(f"Liftbridge Publish envelope: unknown ack policy {message.ackPolicy}")
    answer = None
    if message.ackInbox:
        check_subject(message.ackInbox, "Liftbridge Publish envelope: ackInbox", EnvelopeError)
        answer = EnvelopeAck(
            stream=spec.name,
            partition_subject=spec.partition_subject(partition),
            msg_subject=subject,
            ack_inbox=message.ackInbox,
            correlation_id=message.correlationId,
            ack_policy=message.ackPolicy,
            reception_ns=reception_ns,
        )
    return EnvelopedPublish(message, _text_headers(message), answer)


def request_from_envelope(
    subject: str, reply: str | None, enveloped: EnvelopedPublish, spec: StreamSpec
) -> ProduceRequest:
    """The produce request of a decoded envelope; a typed error (answered on the ack inbox)
    if the stream refuses it. Without an ack inbox a stored publish is not acknowledged, as
    in Liftbridge, while a refusal still reaches the NATS reply subject."""
    message, answer = enveloped.message, enveloped.answer
    occ = spec.optimistic_concurrency_control
    if occ and message.ackPolicy == pb.NONE:
        raise InvalidRequestError(
            f"stream {spec.name} uses optimistic concurrency control: a publish must ask "
            "for an ack (ack policy LEADER or ALL, not NONE)"
        )
    check_record_size(len(message.value), spec)
    expected = message.offset if occ and message.offset != NO_EXPECTED_OFFSET else None
    return ProduceRequest(
        subject=subject,
        reply=answer.ack_inbox if answer is not None else reply,
        ack_policy=POLICY_BY_ACK_POLICY[message.ackPolicy] if answer is not None else "none",
        msg_id=None,
        expected_offset=expected,
        key=message.key or None,
        value=message.value,
        headers=enveloped.headers,
        envelope=answer,
    )


def _text_headers(message: pb.Message) -> dict[str, str] | None:
    """The Message's ``map<string, bytes>`` headers as our text headers."""
    return text_headers(message.headers, EnvelopeError, "Liftbridge Publish envelope: ")


def text_headers(
    headers: Mapping[str, bytes],
    error: type[InvalidRequestError] = InvalidRequestError,
    where: str = "",
) -> dict[str, str] | None:
    """Liftbridge's byte headers as Liftlog's text headers (None: no headers); a value that
    is not UTF-8 is refused with ``error``, since Liftlog stores headers as text."""
    if not headers:
        return None
    decoded: dict[str, str] = {}
    for name, value in headers.items():
        try:
            decoded[name] = value.decode()
        except UnicodeDecodeError as exc:
            raise error(f"{where}header {name[:40]!r} is not UTF-8 text") from exc
    return decoded


def check_plain_subject(
    subject: str, what: str, error: type[InvalidRequestError] = InvalidRequestError
) -> None:
    """One subject a client may have the node publish on: well formed (``check_subject``)
    and outside the nodes' and the server's namespaces."""
    check_subject(subject, what, error)
    if is_internal_reply(subject):
        raise error(f"{what} {subject!r} is in Liftlog's or the NATS server's namespace")


def check_subject(
    subject: str, what: str, error: type[InvalidRequestError] = InvalidRequestError
) -> None:
    """One NATS subject: printable, non-empty tokens without whitespace or wildcards. A
    subject from a client goes into a ``PUB`` line the node writes: a space or a line break
    in it would add commands of the client's making, sent under the node's login."""
    too_long = len(subject.encode()) > MAX_SUBJECT_LENGTH
    if (
        too_long
        or not subject.isprintable()
        or not all(map(_PLAIN_TOKEN.match, subject.split(".")))
    ):
        raise error(
            f"{what} {subject[:60]!r} is not one NATS subject (dot-separated tokens without "
            f"whitespace or wildcards, at most {MAX_SUBJECT_LENGTH} bytes)"
        )
