"""Authentication ahead of body parsing, so a caller without a credential gets 401 whatever
body it sends.

FastAPI reads and parses a route's declared JSON body before it runs any dependency, so a
malformed body on a route that declares one (stream create, reassign, token and ACL admin, ...)
was answered 422 before the app-wide auth dependency could answer 401: a stranger learned which
bodies a route takes. Routes built from this class authenticate first; the dependency still
authenticates and authorizes as before (a second token lookup, on admin routes only: routes
that read their own body, publish included, are left as they are).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

from ingest.api.auth import authenticate
from ingest.api.route_acl import rule_for

if TYPE_CHECKING:
    from ingest.security.node_auth import NodeAuth

# FastAPI's own handler type (a coroutine function; its send and yield types are Any there)
Handler = Callable[[Request], Coroutine[Any, Any, Response]]


def authenticating_route_class(auth: NodeAuth) -> type[APIRoute]:
    """An APIRoute class whose routes with a declared body authenticate before parsing it."""

    class AuthenticateFirstRoute(APIRoute):
        def get_route_handler(self) -> Handler:
            handler: Handler = super().get_route_handler()
            rule = rule_for(next(iter(self.methods or {"GET"})), self.path)
            if self.body_field is None or (rule is not None and rule.open):
                return handler

            async def authenticated(request: Request) -> Response:
                if auth.enabled:
                    authenticate(auth, request)  # UnauthenticatedError: 401 before any 422
                return await handler(request)

            return authenticated

    return AuthenticateFirstRoute
