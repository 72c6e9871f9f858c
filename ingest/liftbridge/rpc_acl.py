"""Which action on which resource every RPC of ``proto.API`` is, in one table.

As the REST route table (ingest/api/route_acl.py): an RPC missing from the table is refused to
everyone, and a unit test compares the table with the service's methods. ``field`` names the
request field that holds the stream; RPCs without one are judged on ``cluster``, or (action
None) admit any authenticated principal and check each stream they touch themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_log.auth import CLUSTER_RESOURCE, Action, stream_resource


@dataclass(frozen=True)
class RpcRule:
    action: Action | None = None
    field: str | None = None

    def resource(self, request: object) -> str:
        """The resource this rule judges ``request`` on."""
        if self.field is None:
            return CLUSTER_RESOURCE
        return stream_resource(str(getattr(request, self.field, "")))


AUTHENTICATED = RpcRule()

RPC_RULES: dict[str, RpcRule] = {
    "CreateStream": RpcRule(Action.CREATE, "name"),
    "DeleteStream": RpcRule(Action.DELETE, "name"),
    "PauseStream": RpcRule(Action.PAUSE, "name"),
    "SetStreamReadonly": RpcRule(Action.ALTER, "name"),
    "Subscribe": RpcRule(Action.CONSUME, "stream"),
    # discovery, as GET /v1/cluster: the answer lists only the streams the caller may describe
    "FetchMetadata": AUTHENTICATED,
    "FetchPartitionMetadata": RpcRule(Action.DESCRIBE, "stream"),
    "Publish": RpcRule(Action.PUBLISH, "stream"),
    # judged per request on the stream, each refusal an asyncError on the stream
    "PublishAsync": RpcRule(Action.PUBLISH, "stream"),
    # a subject, not a stream: publish is checked on every stream recording it
    "PublishToSubject": AUTHENTICATED,
    # Kafka's OffsetCommit needs Read on the topic, OffsetFetch needs Describe
    "SetCursor": RpcRule(Action.CONSUME, "stream"),
    "FetchCursor": RpcRule(Action.DESCRIBE, "stream"),
    # the group RPCs check consume on each stream of the group, as the REST group routes
    "JoinConsumerGroup": AUTHENTICATED,
    "LeaveConsumerGroup": AUTHENTICATED,
    "FetchConsumerGroupAssignments": AUTHENTICATED,
    "ReportConsumerGroupCoordinator": AUTHENTICATED,
}
