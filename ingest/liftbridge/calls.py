"""Who is calling an RPC, and whether they may: the gRPC side of ingest/api/auth.py.

Credentials: the ``authorization`` metadata (``Bearer <token>``), or else the verified client
certificate of an mTLS connection, whose subject CN is the principal. The caller's token is
left in the context variable that node-to-node calls forward, so a call forwarded to another
node is judged there as the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from ingest.admin.node_view import NodeView
from ingest.api.auth import require
from ingest.groups.node_services import ConsumerServices
from ingest.liftbridge.rpc_acl import RPC_RULES
from ingest.security.node_auth import ANONYMOUS_PRINCIPAL
from ingest.security.node_credentials import caller_token
from spark_log.auth import Action
from spark_log.auth.tokens import check_principal
from spark_log.errors import ForbiddenError, InvalidRequestError, UnauthenticatedError

AUTHORIZATION = "authorization"
BEARER = "bearer"
X509_COMMON_NAME = "x509_common_name"


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


def open_call(
    node: NodeView,
    services: ConsumerServices,
    method: str,
    request: object | None,
    context: grpc.aio.ServicerContext[object, object],
) -> RpcCall:
    """Authenticate the caller and judge the RPC by its rule (``request`` None: a
    client-streaming RPC, judged per request by its handler)."""
    call = RpcCall(node, services, ANONYMOUS_PRINCIPAL, context, method)
    if not node.auth.enabled:
        return call
    call.principal = authenticate(node, context)
    rule = RPC_RULES.get(method)
    if rule is None:
        raise ForbiddenError(f"RPC {method} has no authorization rule")
    if rule.action is not None and request is not None:
        call.require(rule.action, rule.resource(request))
    return call


def authenticate(node: NodeView, context: grpc.aio.ServicerContext[object, object]) -> str:
    """The caller's principal, or UnauthenticatedError (UNAUTHENTICATED)."""
    token = _bearer_token(context)
    if token is not None:
        caller_token.set(token)  # this RPC's context only
        return node.auth.principal_for_token(token)
    from_cert = _cert_principal(context)
    if from_cert is None:
        raise UnauthenticatedError(
            "authentication required: send the metadata 'authorization: Bearer <token>' "
            "or a client certificate"
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


def _cert_principal(context: grpc.aio.ServicerContext[object, object]) -> str | None:
    """The verified client certificate's CN (gRPC exposes only verified peers), or None;
    the same rule as REST: exactly one CN, and a valid principal name."""
    names = list(context.auth_context().get(X509_COMMON_NAME) or ())
    if len(names) != 1:
        return None
    name = bytes(names[0]).decode(errors="replace")
    try:
        check_principal(name)
    except InvalidRequestError:
        return None
    return name
