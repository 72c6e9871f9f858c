"""Who is calling an RPC, and whether they may: the gRPC side of ingest/api/auth.py.

Credentials: the ``authorization`` metadata (``Bearer <token>``), or else the verified client
certificate of an mTLS connection (the TLS front, tls_front.py), whose subject CN is the
principal; a call that sent a token is judged by it alone. The caller's token is left in the
context variable that node-to-node calls forward (each RPC runs in its own task, so its own
context), so a call forwarded to another node is judged there as the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from ingest.admin.node_view import NodeView
from ingest.api.auth import require
from ingest.groups.node_services import ConsumerServices
from ingest.liftbridge.rpc_acl import RPC_RULES, RpcRule
from ingest.liftbridge.tls_front import certificate_principal
from ingest.security.node_auth import ANONYMOUS_PRINCIPAL
from ingest.security.node_credentials import caller_token
from spark_log.auth import Action
from spark_log.errors import ForbiddenError, UnauthenticatedError

AUTHORIZATION = "authorization"
BEARER = "bearer"


@dataclass
class RpcCall:
    """One RPC being served: the node, its shared services, and the caller."""

    node: NodeView
    services: ConsumerServices
    principal: str
    context: grpc.aio.ServicerContext[object, object]
    method: str

    def require(self, action: Action, resource: str) -> None:
        """ForbiddenError (PERMISSION_DENIED) unless the caller may."""
        if self.node.auth.enabled:
            require(self.node.auth, self.principal, action, resource)

    def allows(self, action: Action, resource: str) -> bool:
        return not self.node.auth.enabled or self.node.auth.allows(self.principal, action, resource)

    def authorize(self, request: object) -> None:
        """Judge one request of a request stream (a ``per_request`` rule) by the RPC's rule:
        ForbiddenError (PERMISSION_DENIED) naming principal, action and resource."""
        if self.node.auth.enabled:
            _judge(self, _rule(self.method), request)


def open_call(
    node: NodeView,
    services: ConsumerServices,
    method: str,
    request: object | None,
    context: grpc.aio.ServicerContext[object, object],
) -> RpcCall:
    """Authenticate the caller and judge the RPC by its rule; ``request`` is None for a
    request stream, whose rule must be ``per_request`` (its handler judges each request)."""
    call = RpcCall(node, services, ANONYMOUS_PRINCIPAL, context, method)
    if not node.auth.enabled:
        return call
    call.principal = authenticate(node, context)
    rule = _rule(method)
    if rule.per_request:
        return call
    if request is None:
        raise ForbiddenError(f"RPC {method} has no rule for a stream of requests")
    _judge(call, rule, request)
    return call


def _rule(method: str) -> RpcRule:
    rule = RPC_RULES.get(method)
    if rule is None:
        raise ForbiddenError(f"RPC {method} has no authorization rule")
    return rule


def _judge(call: RpcCall, rule: RpcRule, request: object) -> None:
    if rule.action is None:
        return
    for resource in rule.resources(request):
        call.require(rule.action, resource)


def authenticate(node: NodeView, context: grpc.aio.ServicerContext[object, object]) -> str:
    """The caller's principal, or UnauthenticatedError (UNAUTHENTICATED)."""
    token = _bearer_token(context)
    caller_token.set(token or "")  # this RPC's task only: a cert caller forwards nothing
    if token is not None:
        return node.auth.principal_for_token(token)
    from_cert = certificate_principal(context.peer())
    if from_cert is None:
        raise UnauthenticatedError(
            "authentication required: send the metadata 'authorization: Bearer <token>' "
            "or a client certificate of the cluster's CA"
        )
    return from_cert


def _bearer_token(context: grpc.aio.ServicerContext[object, object]) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key.lower() != AUTHORIZATION:
            continue
        text = value.decode() if isinstance(value, bytes) else value
        scheme, _, token = text.strip().partition(" ")
        if scheme.lower() != BEARER or not token.strip():
            raise UnauthenticatedError("the authorization metadata must be 'Bearer <token>'")
        return token.strip()
    return None
