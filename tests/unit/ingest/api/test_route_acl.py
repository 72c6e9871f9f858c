"""Every REST route has an authorization rule, and every rule names a real route: a new
route cannot be added without deciding who may call it."""

from __future__ import annotations

from types import SimpleNamespace

from fastapi.routing import APIRoute

from ingest.api.app import create_app
from ingest.api.route_acl import OPEN_PATHS, ROUTE_RULES
from ingest.security.node_auth import NodeAuth
from spark_log.auth_config import AuthConfig
from spark_log.config import NodeConfig


def _app_routes() -> set[tuple[str, str]]:
    config = NodeConfig(broker_id=1, data_dir="/tmp/unused")
    node = SimpleNamespace(
        config=config,
        auth=NodeAuth(AuthConfig(enabled=False), None),  # type: ignore[arg-type]
        schemas=None,
    )
    app = create_app(node)  # type: ignore[arg-type]
    return {
        (method, route.path)
        for route in app.routes
        if isinstance(route, APIRoute)
        for method in route.methods
    }


def test_every_route_has_a_rule_and_every_rule_a_route() -> None:
    routes = _app_routes()
    assert sorted(routes - set(ROUTE_RULES)) == []
    assert sorted(set(ROUTE_RULES) - routes) == []


def test_only_health_probes_and_the_api_description_are_open() -> None:
    open_routes = {path for (_method, path), rule in ROUTE_RULES.items() if rule.open}
    assert open_routes | {"/openapi.json"} == set(OPEN_PATHS)
    # authenticated but no single action: the listing filters by describe, whoami is the
    # caller's own, the cluster's brokers are what every client needs to find leaders
    assert {k for k, r in ROUTE_RULES.items() if not r.open and r.action is None} == {
        ("GET", "/v1/streams"),
        ("GET", "/v1/cluster"),
        ("GET", "/v1/auth/whoami"),
    } | {
        # the registry: the listings filter by describe, a schema by id is shown only to
        # whoever may describe a subject holding it; the formats and mode are public facts
        (method, path)
        for (method, path) in ROUTE_RULES
        if (method == "GET" and path in ("/subjects", "/config", "/mode"))
        or path.startswith("/schemas/")
    } | {
        # consumer groups check each stream they involve in the route itself
        (method, path)
        for (method, path) in ROUTE_RULES
        if path.startswith("/v1/groups") and (method, path) != ("DELETE", "/v1/groups/{group}")
    }
    assert ROUTE_RULES[("GET", "/metrics")].action == "describe"
