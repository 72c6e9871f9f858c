"""Which action on which resource every REST route is, in one table.

A route not in the table is refused to everyone (fail closed) and a unit test compares the
table with the app's routes, so a new route cannot be forgotten. Resources are ``cluster`` or
``stream:{stream}`` (the path parameter) or ``stream:{body.name}`` (the stream being created).
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_log.auth import CLUSTER_RESOURCE, Action


@dataclass(frozen=True)
class RouteRule:
    """``open``: no credential needed (health probes). ``action`` None: any authenticated
    principal (the route filters its answer, or speaks about the caller only)."""

    action: Action | None = None
    resource: str = CLUSTER_RESOURCE
    open: bool = False


OPEN = RouteRule(open=True)
AUTHENTICATED = RouteRule()
STREAM = "stream:{stream}"
NEW_STREAM = "stream:{body.name}"  # the stream a create names in its body
CLUSTER = CLUSTER_RESOURCE
SUBJECT = "schema:{subject}"
CURSOR_ROUTE = "/v1/streams/{stream}/partitions/{partition}/cursors/{cursor_id}"


def _on_stream(action: Action) -> RouteRule:
    return RouteRule(action, STREAM)


def _on_subject(action: Action) -> RouteRule:
    return RouteRule(action, SUBJECT)


def _on_cluster(action: Action) -> RouteRule:
    return RouteRule(action, CLUSTER)


ROUTE_RULES: dict[tuple[str, str], RouteRule] = {
    ("GET", "/healthz"): OPEN,
    ("GET", "/readyz"): OPEN,
    # the API's description and its viewers (FastAPI serves /openapi.json outside the routes)
    ("GET", "/docs"): OPEN,
    ("GET", "/docs/oauth2-redirect"): OPEN,
    ("GET", "/redoc"): OPEN,
    ("GET", "/metrics"): _on_cluster(Action.DESCRIBE),
    # discovery (brokers, their URLs, the controller), as Kafka's metadata request: every
    # client needs it to find partition leaders, so any authenticated principal may ask
    ("GET", "/v1/cluster"): AUTHENTICATED,
    ("POST", "/v1/cluster/controlled-shutdown"): _on_cluster(Action.CLUSTER_ADMIN),
    ("POST", "/v1/cluster/decommission"): _on_cluster(Action.CLUSTER_ADMIN),
    ("GET", "/v1/cluster/activity"): _on_cluster(Action.DESCRIBE),
    ("PUT", "/v1/cluster/activity"): _on_cluster(Action.CLUSTER_ADMIN),
    ("POST", "/v1/streams"): RouteRule(Action.CREATE, NEW_STREAM),
    ("GET", "/v1/streams"): AUTHENTICATED,  # lists only the streams the caller may describe
    ("GET", "/v1/streams/{stream}"): _on_stream(Action.DESCRIBE),
    ("DELETE", "/v1/streams/{stream}"): _on_stream(Action.DELETE),
    ("POST", "/v1/streams/{stream}/pause"): _on_stream(Action.PAUSE),
    ("POST", "/v1/streams/{stream}/resume"): _on_stream(Action.RESUME),
    ("PATCH", "/v1/streams/{stream}"): _on_stream(Action.ALTER),
    ("POST", "/v1/streams/{stream}/readonly"): _on_stream(Action.ALTER),
    ("POST", "/v1/streams/{stream}/readwrite"): _on_stream(Action.ALTER),
    ("POST", "/v1/streams/{stream}/flush"): _on_stream(Action.FLUSH),
    ("POST", "/v1/streams/{stream}/partitions/{partition}/flush"): _on_stream(Action.FLUSH),
    ("GET", "/v1/streams/{stream}/partitions/{partition}"): _on_stream(Action.DESCRIBE),
    ("GET", "/v1/streams/{stream}/partitions/{partition}/records"): _on_stream(Action.CONSUME),
    ("POST", "/v1/streams/{stream}/partitions/{partition}/records"): _on_stream(Action.PUBLISH),
    # Kafka's OffsetFetch needs Describe on the topic, OffsetCommit needs Read
    ("GET", CURSOR_ROUTE): _on_stream(Action.DESCRIBE),
    ("PUT", CURSOR_ROUTE): _on_stream(Action.CONSUME),
    ("DELETE", CURSOR_ROUTE): _on_stream(Action.CONSUME),
    ("POST", "/v1/streams/{stream}/partitions/{partition}/unclean-election"): _on_cluster(
        Action.CLUSTER_ADMIN
    ),
    ("POST", "/v1/streams/{stream}/elect-preferred"): _on_cluster(Action.CLUSTER_ADMIN),
    ("POST", "/v1/streams/{stream}/reassign"): _on_cluster(Action.CLUSTER_ADMIN),
    ("DELETE", "/v1/streams/{stream}/reassign"): _on_cluster(Action.CLUSTER_ADMIN),
    ("GET", "/v1/streams/{stream}/reassign"): _on_stream(Action.DESCRIBE),
    ("GET", "/v1/auth/whoami"): AUTHENTICATED,
    ("POST", "/v1/auth/tokens"): _on_cluster(Action.AUTH_ADMIN),
    ("GET", "/v1/auth/tokens"): _on_cluster(Action.AUTH_ADMIN),
    ("DELETE", "/v1/auth/tokens/{token_id}"): _on_cluster(Action.AUTH_ADMIN),
    ("GET", "/v1/acls"): _on_cluster(Action.AUTH_ADMIN),
    ("POST", "/v1/acls"): _on_cluster(Action.AUTH_ADMIN),
    ("DELETE", "/v1/acls/{acl_id}"): _on_cluster(Action.AUTH_ADMIN),
    ("POST", "/v1/encryption/rotate"): _on_cluster(Action.CLUSTER_ADMIN),
    ("GET", "/v1/streams/{stream}/partitions/{partition}/data-key"): _on_stream(Action.CONSUME),
    # consumer groups: the routes check each stream involved (ingest/api/group_routes.py)
    ("POST", "/v1/groups/{group}/members"): AUTHENTICATED,
    ("POST", "/v1/groups/{group}/members/{member_id}/heartbeat"): AUTHENTICATED,
    ("DELETE", "/v1/groups/{group}/members/{member_id}"): AUTHENTICATED,
    ("POST", "/v1/groups/{group}/offsets"): AUTHENTICATED,
    ("GET", "/v1/groups/{group}/offsets"): AUTHENTICATED,
    ("POST", "/v1/groups/{group}/offsets/reset"): AUTHENTICATED,
    ("GET", "/v1/groups"): AUTHENTICATED,  # group names only
    ("GET", "/v1/groups/{group}"): AUTHENTICATED,
    ("DELETE", "/v1/groups/{group}"): _on_cluster(Action.DELETE),
    # the schema registry, at the root as Confluent's (Confluent's subject resource is
    # schema:<subject>; registering a version alters the subject)
    ("GET", "/schemas/types"): AUTHENTICATED,
    # a schema by id: the route answers only if the caller may describe a subject holding it
    ("GET", "/schemas/ids/{schema_id}"): AUTHENTICATED,
    ("GET", "/schemas/ids/{schema_id}/schema"): AUTHENTICATED,
    ("GET", "/schemas/ids/{schema_id}/subjects"): AUTHENTICATED,
    ("GET", "/schemas/ids/{schema_id}/versions"): AUTHENTICATED,
    ("GET", "/subjects"): AUTHENTICATED,  # lists only the subjects the caller may describe
    ("POST", "/subjects/{subject}"): _on_subject(Action.DESCRIBE),
    ("DELETE", "/subjects/{subject}"): _on_subject(Action.DELETE),
    ("GET", "/subjects/{subject}/versions"): _on_subject(Action.DESCRIBE),
    ("POST", "/subjects/{subject}/versions"): _on_subject(Action.ALTER),
    ("GET", "/subjects/{subject}/versions/{version}"): _on_subject(Action.DESCRIBE),
    ("GET", "/subjects/{subject}/versions/{version}/schema"): _on_subject(Action.DESCRIBE),
    ("GET", "/subjects/{subject}/versions/{version}/referencedby"): _on_subject(Action.DESCRIBE),
    ("DELETE", "/subjects/{subject}/versions/{version}"): _on_subject(Action.DELETE),
    ("GET", "/mode"): AUTHENTICATED,
    ("GET", "/config"): AUTHENTICATED,
    ("PUT", "/config"): _on_cluster(Action.CLUSTER_ADMIN),
    ("DELETE", "/config"): _on_cluster(Action.CLUSTER_ADMIN),
    ("GET", "/config/{subject}"): _on_subject(Action.DESCRIBE),
    ("PUT", "/config/{subject}"): _on_subject(Action.ALTER),
    ("DELETE", "/config/{subject}"): _on_subject(Action.ALTER),
    ("POST", "/compatibility/subjects/{subject}/versions/{version}"): _on_subject(Action.DESCRIBE),
    ("POST", "/compatibility/subjects/{subject}/versions"): _on_subject(Action.DESCRIBE),
}

# What anyone may read without a credential: the probes and the API's description.
OPEN_PATHS = ("/healthz", "/readyz", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc")


def rule_for(method: str, path: str) -> RouteRule | None:
    """The rule of a route (its path template), None when the table lacks it."""
    return ROUTE_RULES.get((method.upper(), path))
