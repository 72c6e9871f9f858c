"""What a Liftbridge ``PublishRequest`` asks for, checked before anything is stored.

Liftbridge's server checks a publish before it puts it on NATS: a stream named and known, the
partition known, not read-only, an ack asked for on an optimistic-concurrency stream. The same
checks run here on the node's view of every stream (its last reconcile, which every node
keeps), so a refused publish stores nothing wherever its partition is led. Liftbridge's
headers are bytes and Liftlog's are text: a header that is not UTF-8 is refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.znodes import NO_LEADER, StreamRecord
from ingest.admin.node_view import NodeView
from ingest.admin.streams import refuse_internal
from ingest.liftbridge.acks import ack_policy_name
from ingest.produce.envelope_intake import check_plain_subject, text_headers
from ingest.produce.request import check_record_size
from spark_log.errors import (
    InvalidRequestError,
    PartitionNotFoundError,
    StreamNotFoundError,
    StreamReadOnlyError,
)
from spark_log.liftbridge import api_pb2 as pb
from spark_log.stream_spec import StreamSpec

NO_EXPECTED_OFFSET = -1
"""Liftbridge's ``expectedOffset`` that asks for no check."""
INBOX_TOKEN = "_INBOX"


@dataclass(frozen=True, slots=True)
class PublishTarget:
    """The partition a checked publish goes to, and how it is to be stored."""

    record: StreamRecord
    partition: int
    leader: int
    ack_policy: str
    expected_offset: int | None
    headers: dict[str, str] | None

    @property
    def spec(self) -> StreamSpec:
        return self.record.spec

    @property
    def subject(self) -> str:
        return self.record.spec.partition_subject(self.partition)


def publish_target(node: NodeView, request: pb.PublishRequest) -> PublishTarget:
    """The checked target of ``request``, or the typed error Liftbridge refuses it with."""
    name = request.stream
    if not name:
        raise InvalidRequestError("no stream provided")
    refuse_internal(name, "published to (only the nodes write it)")
    view = node.replicas.streams.get(name)
    if view is None:
        raise StreamNotFoundError(f"stream {name!r} does not exist")
    spec = view.record.spec
    if not 0 <= request.partition < spec.partitions:
        raise PartitionNotFoundError(
            f"stream {name!r} has no partition {request.partition} (partitions: {spec.partitions})"
        )
    if view.record.read_only:
        raise StreamReadOnlyError(f"stream {name} is read-only")
    policy = ack_policy_name(request.ackPolicy)
    if spec.optimistic_concurrency_control and policy == "none":
        raise InvalidRequestError(
            f"stream {name} has optimistic concurrency control: a publish must ask for an ack "
            "(ackPolicy LEADER or ALL, not NONE)"
        )
    check_record_size(len(request.value), spec)
    state = view.states.get(request.partition)
    return PublishTarget(
        record=view.record,
        partition=request.partition,
        leader=state.leader if state is not None else NO_LEADER,
        ack_policy=policy,
        expected_offset=expected_offset(request.expectedOffset, spec),
        headers=text_headers(request.headers),
    )


def expected_offset(value: int, spec: StreamSpec) -> int | None:
    """The offset the record must get: only on a stream with optimistic concurrency control,
    and not for -1 (Liftbridge ignores ``expectedOffset`` everywhere else)."""
    if not spec.optimistic_concurrency_control or value == NO_EXPECTED_OFFSET:
        return None
    return value


def check_ack_inbox(subject: str) -> None:
    """A client's ``ackInbox`` (empty: none): a plain subject outside Liftlog's and the
    server's namespaces, since the node publishes the ack there in its own name."""
    if subject:
        check_plain_subject(subject, "ackInbox")


def check_publish_subject(subject: str) -> None:
    """The subject of a PublishToSubject: plain, and no inbox (the node would publish there
    what looks like an ack) nor a subject of Liftlog or of the server."""
    if not subject:
        raise InvalidRequestError("no subject provided")
    check_plain_subject(subject, "subject")
    if subject.split(".", 1)[0] == INBOX_TOKEN:
        raise InvalidRequestError(f"subject {subject!r} is an inbox: nothing is published there")
