"""What a principal may publish and subscribe to on NATS, derived from its Liftlog ACLs.

A stream records its subject (partition 0, or every partition when load-balanced) and
``<subject>.<p>`` for partition p, so ``publish`` on a stream grants publishing on those
subjects and ``consume`` grants subscribing to them; every principal receives its acks on
``_INBOX.>``. Liftlog's replication wire (``_LIFTLOG.>``), the acks' inboxes (publishing
there would forge a node's ack) and the server's own APIs (``$...``) are denied to all,
super users included: nats-server lets a deny win over any allow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ingest.security.node_auth import NodeAuth
from spark_log.auth import Action, stream_resource
from spark_log.errors import ForbiddenError, LiftlogError
from spark_log.fetch_wire import SUBJECT_PREFIX
from spark_log.stream_spec import StreamSpec

ALL_SUBJECTS = ">"
INBOX_SUBJECTS = "_INBOX.>"
INTERNAL_SUBJECTS = f"{SUBJECT_PREFIX}.>"
SERVER_SUBJECTS = ("$JS.>", "$JSC.>", "$KV.>", "$O.>", "$SYS.>")
PUBLISH_DENY = (INTERNAL_SUBJECTS, INBOX_SUBJECTS, *SERVER_SUBJECTS)
SUBSCRIBE_DENY = (INTERNAL_SUBJECTS, *SERVER_SUBJECTS)

Allows = Callable[[Action, str], bool]


@dataclass(frozen=True)
class NatsGrant:
    """Subject permissions in nats-server's terms (deny wins). An empty ``publish`` means
    nothing may be published: rendered as a deny of everything, since nats-server reads a
    rule without allow as "all that is not denied"."""

    publish: tuple[str, ...]
    subscribe: tuple[str, ...]

    def claims(self) -> dict[str, Any]:
        """The ``pub`` and ``sub`` permissions of a NATS user JWT."""
        publish = (
            {"allow": list(self.publish), "deny": list(PUBLISH_DENY)}
            if self.publish
            else {"deny": [ALL_SUBJECTS]}
        )
        subscribe = {"allow": list(self.subscribe), "deny": list(SUBSCRIBE_DENY)}
        return {"pub": publish, "sub": subscribe}


def super_user_grant() -> NatsGrant:
    return NatsGrant(publish=(ALL_SUBJECTS,), subscribe=(ALL_SUBJECTS,))


def grant_for(allows: Allows, streams: Iterable[StreamSpec]) -> NatsGrant:
    """The subjects of the streams ``allows`` lets the principal publish to and consume."""
    publish: list[str] = []
    subscribe: list[str] = [INBOX_SUBJECTS]
    for spec in sorted(streams, key=lambda s: s.name):
        if spec.internal:
            continue  # its subject is under _LIFTLOG: the nodes write it, nobody publishes
        resource = stream_resource(spec.name)
        subjects = stream_subjects(spec)
        if allows(Action.PUBLISH, resource):
            publish += [s for s in subjects if s not in publish]
        if allows(Action.CONSUME, resource):
            subscribe += [s for s in subjects if s not in subscribe]
    return NatsGrant(tuple(publish), tuple(subscribe))


def stream_subjects(spec: StreamSpec) -> list[str]:
    """Every subject the stream's partitions listen on, in partition order."""
    subjects: list[str] = []
    for partition in range(spec.partitions):
        subject = spec.partition_subject(partition)
        if subject not in subjects:
            subjects.append(subject)
    return subjects


def specs_of(streams: Mapping[str, Any]) -> list[StreamSpec]:
    """The specs of a node's stream views (``ReplicaManager.streams``)."""
    return [view.record.spec for view in streams.values()]


def publish_refusal(auth: NodeAuth, stream: str, principal: str) -> LiftlogError | None:
    """The node's second line: why ``principal`` may not publish to ``stream`` (None when it
    may). NATS already refused such a publish when the server asked the nodes (auth
    callout); this catches a server configured otherwise, for clients naming their principal."""
    try:
        if auth.allows(principal, Action.PUBLISH, stream_resource(stream)):
            return None
    except LiftlogError as exc:
        return exc
    return ForbiddenError(f"principal {principal!r} may not publish to stream {stream!r}")
