"""Which action on which resource every RPC of ``proto.API`` is, in one table.

As the REST route table (ingest/api/route_acl.py), each RPC needs what its REST route needs:
an RPC missing from the table is refused to everyone, and a unit test compares the table with
the service's methods. ``field`` names the request field holding the stream (a repeated field:
every stream it lists is judged); a rule without one judges ``cluster``. ``action`` None admits
any authenticated principal: the handler filters its answer or judges each stream it touches,
as the matching REST route does. ``per_request``: a stream of requests, judged request by
request by the handler (``RpcCall.authorize``), the door only authenticating.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from spark_log.auth import CLUSTER_RESOURCE, Action, stream_resource


@dataclass(frozen=True)
class RpcRule:
    action: Action | None = None
    field: str | None = None
    per_request: bool = False

    def resources(self, request: object) -> list[str]:
        """The resources this rule judges ``request`` on (none: a repeated field left
        empty, which the handler refuses as a bad request)."""
        if self.field is None:
            return [CLUSTER_RESOURCE]
        value = getattr(request, self.field, "")
        names: Iterable[object] = [value] if isinstance(value, str) else value
        return [stream_resource(str(name)) for name in names]


AUTHENTICATED = RpcRule()


def _on_stream(action: Action, field: str = "stream") -> RpcRule:
    return RpcRule(action, field)


RPC_RULES: dict[str, RpcRule] = {
    # POST /v1/streams, DELETE /v1/streams/{stream}, POST .../pause
    "CreateStream": _on_stream(Action.CREATE, "name"),
    "DeleteStream": _on_stream(Action.DELETE, "name"),
    "PauseStream": _on_stream(Action.PAUSE, "name"),
    # POST .../readonly and .../readwrite
    "SetStreamReadonly": _on_stream(Action.ALTER, "name"),
    # GET .../records (a group member's subscription too)
    "Subscribe": _on_stream(Action.CONSUME),
    # discovery, as GET /v1/cluster and GET /v1/streams: any authenticated principal, the
    # answer listing only the streams (and groups' streams) the caller may describe
    "FetchMetadata": AUTHENTICATED,
    # GET /v1/streams/{stream}/partitions/{partition}
    "FetchPartitionMetadata": _on_stream(Action.DESCRIBE),
    # POST .../records
    "Publish": _on_stream(Action.PUBLISH),
    # POST .../records per request, each refusal an asyncError on the stream
    "PublishAsync": RpcRule(Action.PUBLISH, "stream", per_request=True),
    # a NATS subject, not a stream: the handler requires publish on every stream recording
    # the subject and refuses a subject no stream records (the node's NATS login is no
    # caller's to borrow)
    "PublishToSubject": AUTHENTICATED,
    # PUT and GET .../cursors/{cursor_id}: Kafka's OffsetCommit needs Read on the topic,
    # OffsetFetch Describe
    "SetCursor": _on_stream(Action.CONSUME),
    "FetchCursor": _on_stream(Action.DESCRIBE),
    # POST /v1/groups/{group}/members: consume on every stream joined
    "JoinConsumerGroup": _on_stream(Action.CONSUME, "streams"),
    # DELETE and heartbeat of /v1/groups/{group}/members/{member_id}: the handler passes
    # the group service a consume check on the member's streams, as those routes do
    "LeaveConsumerGroup": AUTHENTICATED,
    "FetchConsumerGroupAssignments": AUTHENTICATED,
    # a member telling that the coordinator is unreachable: the handler requires consume on
    # the group's streams, as for the member's other calls
    "ReportConsumerGroupCoordinator": AUTHENTICATED,
}
