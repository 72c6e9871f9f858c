"""Every RPC of ``proto.API`` has an authorization rule, the same as its REST route's, and the
door (``open_call``) authenticates and judges by it: a new RPC cannot be served without
deciding who may call it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from google.protobuf.descriptor import FieldDescriptor

from coordinator.auth_store import AuthSnapshot
from ingest.api.route_acl import CURSOR_ROUTE, NEW_STREAM, ROUTE_RULES, STREAM
from ingest.liftbridge.calls import RpcCall, open_call
from ingest.liftbridge.rpc_acl import RPC_RULES
from ingest.security.node_auth import NodeAuth
from ingest.security.node_credentials import caller_token
from spark_log.auth import AclEntry, Action
from spark_log.auth_config import AuthConfig
from spark_log.errors import ForbiddenError, UnauthenticatedError
from spark_log.liftbridge import api_pb2 as pb

SERVICE = pb.DESCRIPTOR.services_by_name["API"]
STREAM_PATH = "/v1/streams/{stream}"
PARTITION_PATH = f"{STREAM_PATH}/partitions/{{partition}}"
BOOTSTRAP = "boot-secret-0123456789"

# the REST route doing what each RPC does (the RPCs without one are checked below)
REST_TWIN: dict[str, tuple[str, str]] = {
    "CreateStream": ("POST", "/v1/streams"),
    "DeleteStream": ("DELETE", STREAM_PATH),
    "PauseStream": ("POST", f"{STREAM_PATH}/pause"),
    "SetStreamReadonly": ("POST", f"{STREAM_PATH}/readonly"),
    "Subscribe": ("GET", f"{PARTITION_PATH}/records"),
    "FetchMetadata": ("GET", "/v1/cluster"),
    "FetchPartitionMetadata": ("GET", PARTITION_PATH),
    "Publish": ("POST", f"{PARTITION_PATH}/records"),
    "PublishAsync": ("POST", f"{PARTITION_PATH}/records"),
    "SetCursor": ("PUT", CURSOR_ROUTE),
    "FetchCursor": ("GET", CURSOR_ROUTE),
    "JoinConsumerGroup": ("POST", "/v1/groups/{group}/members"),
    "LeaveConsumerGroup": ("DELETE", "/v1/groups/{group}/members/{member_id}"),
    "FetchConsumerGroupAssignments": (
        "POST",
        "/v1/groups/{group}/members/{member_id}/heartbeat",
    ),
}


def test_every_rpc_has_a_rule_and_every_rule_an_rpc() -> None:
    methods = {method.name for method in SERVICE.methods}
    assert sorted(methods - set(RPC_RULES)) == []
    assert sorted(set(RPC_RULES) - methods) == []


@pytest.mark.parametrize("rpc", sorted(REST_TWIN))
def test_an_rpc_needs_what_its_rest_route_needs(rpc: str) -> None:
    rule, route = RPC_RULES[rpc], ROUTE_RULES[REST_TWIN[rpc]]
    if rpc == "JoinConsumerGroup":  # the REST route checks every stream of its body itself
        assert route.action is None
        assert (rule.action, rule.field) == (Action.CONSUME, "streams")
        return
    assert rule.action == route.action
    assert (rule.field is not None) == (route.resource in (STREAM, NEW_STREAM))


def test_the_rpcs_without_a_rest_twin_are_judged_by_their_handlers() -> None:
    assert set(RPC_RULES) - set(REST_TWIN) == {
        "PublishToSubject",
        "ReportConsumerGroupCoordinator",
    }
    assert RPC_RULES["PublishToSubject"].action is None
    assert RPC_RULES["ReportConsumerGroupCoordinator"].action is None


def test_only_publish_async_is_judged_request_by_request() -> None:
    per_request = {name for name, rule in RPC_RULES.items() if rule.per_request}
    assert (
        per_request == {m.name for m in SERVICE.methods if m.client_streaming} == {"PublishAsync"}
    )


@pytest.mark.parametrize("rpc", sorted(n for n, r in RPC_RULES.items() if r.field))
def test_a_rule_names_a_string_field_of_its_request(rpc: str) -> None:
    rule = RPC_RULES[rpc]
    field = SERVICE.methods_by_name[rpc].input_type.fields_by_name[str(rule.field)]
    assert field.type == FieldDescriptor.TYPE_STRING


def test_a_repeated_field_is_judged_stream_by_stream() -> None:
    request = pb.JoinConsumerGroupRequest(groupId="g", streams=["a", "b"])
    assert RPC_RULES["JoinConsumerGroup"].resources(request) == ["stream:a", "stream:b"]
    create = pb.CreateStreamRequest(name="orders", subject="orders")
    assert RPC_RULES["CreateStream"].resources(create) == ["stream:orders"]
    assert RPC_RULES["FetchMetadata"].resources(pb.FetchMetadataRequest()) == ["cluster"]


class _Context:
    """The two things the door reads of a gRPC call: its metadata and its peer."""

    def __init__(self, token: str | None = None, raw: str | None = None) -> None:
        value = raw if raw is not None else f"Bearer {token}" if token else None
        self._metadata = (("authorization", value),) if value is not None else ()

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def peer(self) -> str:
        return "ipv4:127.0.0.1:50000"


def _node(*acls: AclEntry) -> SimpleNamespace:
    auth = NodeAuth(AuthConfig(enabled=True, bootstrap_token=BOOTSTRAP), None)  # type: ignore[arg-type]
    auth.cache._snapshot = AuthSnapshot({}, acls)  # the state a refresh leaves
    return SimpleNamespace(auth=auth)


def _open(node: SimpleNamespace, rpc: str, request: object | None, context: _Context) -> RpcCall:
    return open_call(node, None, rpc, request, context)  # type: ignore[arg-type]


def test_the_door_wants_a_credential() -> None:
    node = _node()
    with pytest.raises(UnauthenticatedError, match="authorization: Bearer"):
        _open(node, "FetchMetadata", pb.FetchMetadataRequest(), _Context())
    with pytest.raises(UnauthenticatedError, match="invalid, unknown or revoked"):
        _open(node, "FetchMetadata", pb.FetchMetadataRequest(), _Context("llt_01_nope"))
    with pytest.raises(UnauthenticatedError, match="must be 'Bearer <token>'"):
        _open(node, "FetchMetadata", pb.FetchMetadataRequest(), _Context(raw=f"Basic {BOOTSTRAP}"))


def test_the_door_judges_by_the_rule_and_names_who_may_not_what() -> None:
    node = _node()
    call = _open(node, "DeleteStream", pb.DeleteStreamRequest(name="s"), _Context(BOOTSTRAP))
    assert call.principal == "admin"
    node.auth.config = AuthConfig(enabled=True, bootstrap_token=BOOTSTRAP, super_users=())
    with pytest.raises(ForbiddenError) as refused:
        _open(node, "DeleteStream", pb.DeleteStreamRequest(name="s"), _Context(BOOTSTRAP))
    assert "'admin' may not delete on 'stream:s'" in refused.value.message


def test_a_join_needs_consume_on_every_stream() -> None:
    node = _node(AclEntry("01", "admin", Action.CONSUME, "stream:a"))
    node.auth.config = AuthConfig(enabled=True, bootstrap_token=BOOTSTRAP, super_users=())
    join = pb.JoinConsumerGroupRequest(groupId="g", consumerId="c", streams=["a"])
    _open(node, "JoinConsumerGroup", join, _Context(BOOTSTRAP))
    join.streams.append("b")
    with pytest.raises(ForbiddenError, match="stream:b"):
        _open(node, "JoinConsumerGroup", join, _Context(BOOTSTRAP))


def test_a_request_stream_is_judged_by_its_handler_request_by_request() -> None:
    node = _node(AclEntry("01", "admin", Action.PUBLISH, "stream:a"))
    node.auth.config = AuthConfig(enabled=True, bootstrap_token=BOOTSTRAP, super_users=())
    call = _open(node, "PublishAsync", None, _Context(BOOTSTRAP))
    call.authorize(pb.PublishRequest(stream="a"))
    with pytest.raises(ForbiddenError, match="may not publish on 'stream:b'"):
        call.authorize(pb.PublishRequest(stream="b"))
    with pytest.raises(ForbiddenError, match="stream of requests"):
        _open(node, "Publish", None, _Context(BOOTSTRAP))


def test_the_callers_token_is_what_forwarded_calls_carry() -> None:
    reset = caller_token.set("left-over")
    try:
        _open(_node(), "FetchMetadata", pb.FetchMetadataRequest(), _Context(BOOTSTRAP))
        assert caller_token.get() == BOOTSTRAP
    finally:
        caller_token.reset(reset)
