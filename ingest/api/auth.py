"""The app-wide dependency that authenticates every request and authorizes it by the route
table (ingest/api/route_acl.py), before the route's own parameters are even checked.

Credentials: ``Authorization: Bearer <token>``, or else a verified client certificate
(mTLS), whose subject CN is the principal. A request that sent a bearer token is judged by
it alone. The caller's principal is left on ``request.state.principal`` and the caller's
bearer token in a context variable, which node-to-node calls made on the caller's behalf
forward (ingest/security/node_credentials.py).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from fastapi import Request
from fastapi.routing import APIRoute

from ingest.api.client_cert import client_cert_principal
from ingest.api.route_acl import NEW_STREAM, STREAM, SUBJECT, RouteRule, rule_for
from ingest.security.node_auth import ANONYMOUS_PRINCIPAL, NodeAuth
from ingest.security.node_credentials import caller_token
from spark_log.auth import schema_resource, stream_resource
from spark_log.errors import ForbiddenError, UnauthenticatedError

if TYPE_CHECKING:
    from spark_log.auth import Action

BEARER = "bearer"


def auth_dependency(auth: NodeAuth) -> Callable[[Request], Awaitable[None]]:
    """The dependency for ``create_app``'s ``dependencies``."""

    async def authenticate_and_authorize(request: Request) -> None:
        route = request.scope.get("route")
        if not isinstance(route, APIRoute):
            return
        rule = rule_for(request.method, route.path)
        if rule is not None and rule.open:
            return
        if not auth.enabled:
            request.state.principal = ANONYMOUS_PRINCIPAL
            return
        principal = authenticate(auth, request)
        request.state.principal = principal
        if rule is None:
            raise ForbiddenError(f"{request.method} {route.path} has no authorization rule")
        if rule.action is not None:
            resource = await _resource(rule, request)
            require(auth, principal, rule.action, resource)

    return authenticate_and_authorize


def authenticate(auth: NodeAuth, request: Request) -> str:
    """The caller's principal, or UnauthenticatedError (401)."""
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, token = header.strip().partition(" ")
        if scheme.lower() != BEARER or not token.strip():
            raise UnauthenticatedError("the Authorization header must be 'Bearer <token>'")
        caller_token.set(token.strip())  # set only for this request's context
        return auth.principal_for_token(token.strip())
    from_cert = client_cert_principal(request)
    if from_cert is None:
        raise UnauthenticatedError(
            "authentication required: send 'Authorization: Bearer <token>' (the CLI's "
            "--token, the client's token=, the Spark option token, or LIFTLOG_TOKEN) "
            "or a client certificate"
        )
    return from_cert


def require(auth: NodeAuth, principal: str, action: Action, resource: str) -> None:
    """ForbiddenError (403) naming principal, action and resource unless allowed."""
    if not auth.allows(principal, action, resource):
        raise ForbiddenError(
            f"principal {principal!r} may not {action} on {resource!r} "
            "(no ACL allows it, or one denies it)"
        )


async def _resource(rule: RouteRule, request: Request) -> str:
    if rule.resource == NEW_STREAM:
        return stream_resource(await _body_name(request))
    if rule.resource == STREAM:
        return stream_resource(str(request.path_params.get("stream", "")))
    if rule.resource == SUBJECT:
        return schema_resource(str(request.path_params.get("subject", "")))
    return rule.resource


async def _body_name(request: Request) -> str:
    """The ``name`` of a JSON body (FastAPI read and cached it already); empty when there is
    none, so a malformed body is still judged (on ``stream:``) before its 422."""
    try:
        data = json.loads(await request.body() or b"{}")
    except ValueError:
        return ""
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else ""


def principal_of(request: Request) -> str:
    """The principal the dependency found (``anonymous`` with auth disabled)."""
    return str(getattr(request.state, "principal", ANONYMOUS_PRINCIPAL))
