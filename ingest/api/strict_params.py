"""Unknown query parameters and body fields are refused (422 naming them) on every route.

FastAPI ignores query parameters a route does not declare, so ``?ofset=5`` silently read from
offset 0. One app-wide dependency compares each request with what the matched route declares
(its own parameters and its dependencies'), so no route keeps a list of its own. Declared JSON
bodies refuse unknown fields through their models (``extra="forbid"``); a route that declares
no body refuses one, naming its fields.
"""

from __future__ import annotations

import json

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from spark_log.errors import InvalidRequestError


async def refuse_unknown_params(request: Request) -> None:
    """App-wide dependency: InvalidRequestError (422) naming every undeclared input."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    _refuse_unknown_query(request, route)
    if has_body(request) and not takes_body(route):
        _refuse_body(await request.body(), request, route)


def has_body(request: Request) -> bool:
    """Whether the request carries a body at all (a GET, the fetch long-poll included, does
    not): only then is it worth reading one to refuse it."""
    headers = request.headers
    if "transfer-encoding" in headers:
        return True
    length = headers.get("content-length")
    try:
        return length is not None and int(length) > 0
    except ValueError:
        return True  # malformed: let the body check see it


def _refuse_unknown_query(request: Request, route: APIRoute) -> None:
    declared = declared_query_params(route)
    unknown = sorted({name for name in request.query_params if name not in declared})
    if unknown:
        raise InvalidRequestError(
            f"unknown query parameter {_names(unknown)} for {request.method} {route.path} "
            f"(accepted: {', '.join(sorted(declared)) or 'none'})"
        )


def _refuse_body(body: bytes, request: Request, route: APIRoute) -> None:
    if not body.strip():
        return
    try:
        fields = json.loads(body)
    except ValueError:
        fields = None
    if fields == {}:
        return
    what = f"unknown body field {_names(sorted(fields))}" if isinstance(fields, dict) else "a body"
    raise InvalidRequestError(f"{request.method} {route.path} takes no body; got {what}")


_DECLARED_ATTR = "_liftlog_declared_query_params"


def declared_query_params(route: APIRoute) -> frozenset[str]:
    """The query parameter names (aliases) ``route`` declares, dependencies included; walked
    once per route object and kept on it (routes are unhashable, so no dict cache)."""
    declared: frozenset[str] | None = getattr(route, _DECLARED_ATTR, None)
    if declared is None:
        declared = frozenset(_query_names(route.dependant))
        setattr(route, _DECLARED_ATTR, declared)
    return declared


def takes_body(route: APIRoute) -> bool:
    """A body declared as a parameter, or documented by hand (publish reads its own)."""
    return route.body_field is not None or "requestBody" in (route.openapi_extra or {})


def _query_names(dependant: Dependant) -> set[str]:
    names = {param.alias for param in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


def _names(names: list[str]) -> str:
    return ", ".join(repr(n) for n in names)
