"""Authentication and authorization on real nodes, auth on: 401s, tokens created and revoked
over REST, and the principal x action x route matrix. Every test runs twice: on plain HTTP
nodes with a bootstrap admin token, and on the secured stack (``Standalone(secure=True)``:
HTTPS, mTLS, ZooKeeper and NATS secured), where client certificates name principals too."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from ingest.api.route_acl import CURSOR_ROUTE, OPEN_PATHS, ROUTE_RULES
from spark_log.auth_config import AuthConfig
from tests.integration.security.nats_login_probe import login, poll, refused_login
from tests.support.auth_stack import (
    PROPAGATION_TIMEOUT_S,
    AuthCluster,
    start_auth_cluster,
    start_secure_cluster,
)
from tests.support.waiting import wait_for

STREAM = "m-1"
OK = None  # allowed: whatever the route answers, never 401 or 403
GROUP = "m-group"
SUBJECT = f"{STREAM}-value"
SCHEMA = {"schema": '{"type": "string"}', "schemaType": "AVRO"}
SCHEMA_IDS: dict[str, int] = {}  # "id" -> the id SCHEMA got (registered by the fixture)
MAX_SESSION_MS = 300_000  # the members the fixture joins must outlive the matrix
# principal -> (heartbeating member id, its epoch, leaving member id), joined by the fixture
# to GROUP on STREAM so that each principal's heartbeat, commit and leave reach the stream check
GROUP_MEMBERS: dict[str, tuple[str, int, str]] = {}


@pytest.fixture(scope="module", params=["plain", "secure"])
def cluster(
    request, zookeeper, nats_server, tmp_path_factory, secure_material
) -> Iterator[AuthCluster]:
    if request.param == "secure":
        yield from start_secure_cluster()
    else:
        yield from start_auth_cluster(
            zookeeper,
            nats_server,
            tmp_path_factory.mktemp("auth"),
            secure_material=secure_material,
        )


def test_every_route_but_the_open_ones_needs_a_valid_token(cluster):
    with cluster.client() as anonymous:
        for path in OPEN_PATHS:
            assert anonymous.get(path).status_code == 200, path
        for (method, path), rule in ROUTE_RULES.items():
            if rule.open:
                continue
            resp = anonymous.request(method, path.replace("{", "x").replace("}", ""))
            assert resp.status_code == 401, (method, path, resp.text)
            assert resp.json()["error"]["code"] == "unauthenticated"
            assert resp.headers["www-authenticate"] == "Bearer"
    for header in ("Bearer llt_0123_wrong", "Bearer nonsense", "Basic YTpi", "Bearer"):
        with cluster.client() as api:
            resp = api.get("/v1/cluster", headers={"Authorization": header})
        assert resp.status_code == 401, header
        assert resp.json()["error"]["code"] == "unauthenticated"


def test_cluster_says_auth_is_enabled_and_whoami_names_the_admin(cluster):
    with cluster.admin() as api:
        assert api.get("/v1/cluster").json()["auth"] == "enabled"
        assert api.get("/v1/auth/whoami").json() == {"principal": "admin", "auth": "enabled"}


def test_a_token_created_over_rest_works_until_revoked(cluster):
    with cluster.admin() as admin:
        created = admin.post("/v1/auth/tokens", json={"principal": "tina", "description": "ci"})
        assert created.status_code == 201, created.text
        token, token_id = created.json()["token"], created.json()["token_id"]
        assert token.startswith(f"llt_{token_id}_")
        listing = admin.get("/v1/auth/tokens")
        assert listing.status_code == 200
        assert token_id in listing.text and token.split("_", 2)[2] not in listing.text
    with cluster.client(token=token) as tina:
        wait_for(
            lambda: tina.get("/v1/auth/whoami").status_code == 200,
            PROPAGATION_TIMEOUT_S,
            message="the token to be known",
        )
        assert tina.get("/v1/auth/whoami").json()["principal"] == "tina"
        forbidden = tina.get("/metrics")
        assert forbidden.status_code == 403
        message = forbidden.json()["error"]["message"]
        assert forbidden.json()["error"]["code"] == "forbidden"
        assert "tina" in message and "describe" in message and "cluster" in message
        with cluster.admin() as admin:
            assert admin.delete(f"/v1/auth/tokens/{token_id}").status_code == 200
            assert admin.delete(f"/v1/auth/tokens/{token_id}").status_code == 404
        wait_for(
            lambda: tina.get("/v1/auth/whoami").status_code == 401,
            PROPAGATION_TIMEOUT_S,
            message="the revoked token to be refused",
        )


def test_the_node_that_makes_a_change_applies_it_before_answering(cluster):
    """No wait: the answer comes after this node re-read the tokens and ACLs."""
    with cluster.admin() as admin:
        created = admin.post("/v1/auth/tokens", json={"principal": "ursula"})
        assert created.status_code == 201, created.text
        assert created.headers["cache-control"] == "no-store"
        token, token_id = created.json()["token"], created.json()["token_id"]
        with cluster.client(token=token) as ursula:
            assert ursula.get("/metrics").status_code == 403
            acl = admin.post(
                "/v1/acls",
                json={"principal": "ursula", "action": "describe", "resource": "cluster"},
            )
            assert acl.status_code == 201, acl.text
            assert ursula.get("/metrics").status_code == 200
            assert admin.delete(f"/v1/acls/{acl.json()['acl_id']}").status_code == 200
            assert ursula.get("/metrics").status_code == 403
            assert admin.delete(f"/v1/auth/tokens/{token_id}").status_code == 200
            assert ursula.get("/v1/auth/whoami").status_code == 401


def test_bad_acls_and_tokens_are_refused_with_422(cluster):
    with cluster.admin() as admin:
        for body in (
            {"principal": "a", "action": "fly", "resource": "cluster"},
            {"principal": "a", "action": "publish", "resource": "topic:x"},
            {"principal": "a b", "action": "publish", "resource": "stream:x"},
        ):
            assert admin.post("/v1/acls", json=body).status_code == 422, body
        assert admin.post("/v1/auth/tokens", json={"principal": "*"}).status_code == 422


# ------------------------------------------------------------------------------ the matrix


@dataclass(frozen=True)
class Call:
    """One request per route; ``ok`` is the status an allowed caller gets (OK: any but 401
    and 403, for routes whose success depends on the cluster's state)."""

    method: str
    route: str
    path: str
    ok: int | None
    body: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    needs: str | None = None
    """The permission in MAY's words, for a route that checks the streams it concerns itself
    (the route table only asks for a credential) or names an action on the cluster."""


def _group_calls(principal: str) -> list[Call]:
    """The consumer group routes: the stream checks happen inside them (group_routes.py)."""
    member, epoch, leaver = GROUP_MEMBERS.get(principal, ("none", 0, "none"))
    g = f"/v1/groups/{GROUP}"
    join = {"streams": [STREAM], "session_timeout_ms": MAX_SESSION_MS}
    commit = {
        "member_id": member,
        "member_epoch": epoch,
        "offsets": [{"stream": STREAM, "partition": 0, "offset": 0}],
    }
    heartbeat = {"member_epoch": epoch, "owned": {}}
    reset = {"stream": STREAM, "to": "earliest"}
    return [
        Call(
            "POST",
            "/v1/groups/{group}/members",
            f"/v1/groups/m-join-{principal}/members",
            200,
            join,
            needs="consume",
        ),
        Call(
            "POST",
            "/v1/groups/{group}/members/{member_id}/heartbeat",
            f"{g}/members/{member}/heartbeat",
            OK,
            heartbeat,
            needs="consume",
        ),
        Call("POST", "/v1/groups/{group}/offsets", f"{g}/offsets", OK, commit, needs="consume"),
        Call(
            "DELETE",
            "/v1/groups/{group}/members/{member_id}",
            f"{g}/members/{leaver}",
            200,
            needs="consume",
        ),
        Call("GET", "/v1/groups/{group}/offsets", f"{g}/offsets", 200),
        # the group has members: an allowed reset is refused with 409 group_not_empty
        Call(
            "POST",
            "/v1/groups/{group}/offsets/reset",
            f"{g}/offsets/reset",
            OK,
            reset,
            needs="alter",
        ),
        Call("GET", "/v1/groups", "/v1/groups", 200),
        Call("GET", "/v1/groups/{group}", g, 200),
        Call("DELETE", "/v1/groups/{group}", "/v1/groups/m-no-group", 404, needs="delete-cluster"),
    ]


def _schema_calls() -> list[Call]:
    """The registry's routes: subjects are ``schema:<subject>`` resources; a schema by id is
    shown only to whoever may describe a subject holding it (404 to the others)."""
    sid, sub, none = SCHEMA_IDS.get("id", 0), f"/subjects/{SUBJECT}", "/subjects/m-none-value"
    describe, alter, delete = "schema-describe", "schema-alter", "schema-delete"
    compat = "/compatibility/subjects/{subject}/versions"
    return [
        Call("GET", "/schemas/types", "/schemas/types", 200),
        Call("GET", "/schemas/ids/{schema_id}", f"/schemas/ids/{sid}", OK),
        Call("GET", "/schemas/ids/{schema_id}/schema", f"/schemas/ids/{sid}/schema", OK),
        Call("GET", "/schemas/ids/{schema_id}/subjects", f"/schemas/ids/{sid}/subjects", OK),
        Call("GET", "/schemas/ids/{schema_id}/versions", f"/schemas/ids/{sid}/versions", OK),
        Call("GET", "/subjects", "/subjects", 200),
        Call("POST", "/subjects/{subject}", sub, 200, SCHEMA, needs=describe),
        Call("DELETE", "/subjects/{subject}", none, 404, needs=delete),
        Call("GET", "/subjects/{subject}/versions", f"{sub}/versions", 200, needs=describe),
        Call("POST", "/subjects/{subject}/versions", f"{sub}/versions", 200, SCHEMA, needs=alter),
        Call(
            "GET",
            "/subjects/{subject}/versions/{version}",
            f"{sub}/versions/1",
            200,
            needs=describe,
        ),
        Call(
            "GET",
            "/subjects/{subject}/versions/{version}/schema",
            f"{sub}/versions/1/schema",
            200,
            needs=describe,
        ),
        Call(
            "GET",
            "/subjects/{subject}/versions/{version}/referencedby",
            f"{sub}/versions/1/referencedby",
            200,
            needs=describe,
        ),
        Call(
            "DELETE",
            "/subjects/{subject}/versions/{version}",
            f"{none}/versions/1",
            404,
            needs=delete,
        ),
        Call("GET", "/mode", "/mode", 200),
        Call("GET", "/config", "/config", 200),
        Call("PUT", "/config", "/config", 200, {"compatibility": "BACKWARD"}),
        Call("DELETE", "/config", "/config", 200),
        Call("GET", "/config/{subject}", f"/config/{SUBJECT}", OK, needs=describe),
        Call(
            "PUT",
            "/config/{subject}",
            f"/config/{SUBJECT}",
            200,
            {"compatibility": "FULL"},
            needs=alter,
        ),
        Call("DELETE", "/config/{subject}", f"/config/{SUBJECT}", OK, needs=alter),
        Call(
            "POST",
            compat + "/{version}",
            f"/compatibility/subjects/{SUBJECT}/versions/latest",
            200,
            SCHEMA,
            needs=describe,
        ),
        Call(
            "POST",
            compat,
            f"/compatibility/subjects/{SUBJECT}/versions",
            200,
            SCHEMA,
            needs=describe,
        ),
    ]


def _calls(principal: str) -> list[Call]:
    s = f"/v1/streams/{STREAM}"
    value = base64.b64encode(b"hi").decode()
    cursor = f"{s}/partitions/0/cursors/c-{principal}"
    return [
        *_group_calls(principal),
        *_schema_calls(),
        Call("GET", "/v1/cluster/activity", "/v1/cluster/activity", 200),
        Call("PUT", "/v1/cluster/activity", "/v1/cluster/activity", 200, {"enabled": False}),
        Call("PUT", CURSOR_ROUTE, cursor, 200, {"offset": 1}),
        Call("GET", CURSOR_ROUTE, cursor, OK),  # 404 for a principal that could not set it
        Call("DELETE", CURSOR_ROUTE, cursor, OK),
        Call("GET", "/metrics", "/metrics", 200),
        Call("GET", "/v1/cluster", "/v1/cluster", 200),
        Call(
            "POST",
            "/v1/cluster/controlled-shutdown",
            "/v1/cluster/controlled-shutdown",
            OK,
            {"broker_id": 999},
        ),
        Call(
            "POST",
            "/v1/cluster/decommission",
            "/v1/cluster/decommission",
            OK,
            {"broker_id": 999, "dry_run": True},
        ),
        Call(
            "POST",
            "/v1/streams",
            "/v1/streams",
            201,
            {"name": f"m-new-{principal}", "subject": f"m-new-{principal}.in"},
        ),
        Call("GET", "/v1/streams", "/v1/streams", 200),
        Call("GET", "/v1/streams/{stream}", s, 200),
        Call(
            "POST",
            "/v1/streams/{stream}/partitions/{partition}/records",
            f"{s}/partitions/0/records",
            200,
            {"records": [{"value": value}]},
        ),
        Call(
            "GET",
            "/v1/streams/{stream}/partitions/{partition}/records",
            f"{s}/partitions/0/records",
            200,
            params={"offset": 0},
        ),
        Call("GET", "/v1/streams/{stream}/partitions/{partition}", f"{s}/partitions/0", 200),
        Call("POST", "/v1/streams/{stream}/pause", f"{s}/pause", 200),
        Call("POST", "/v1/streams/{stream}/resume", f"{s}/resume", 200),
        Call("PATCH", "/v1/streams/{stream}", s, 200, {"retention_ms": None}),
        # readwrite right after readonly: the publishes of the next principal still go in
        Call("POST", "/v1/streams/{stream}/readonly", f"{s}/readonly", 200),
        Call("POST", "/v1/streams/{stream}/readwrite", f"{s}/readwrite", 200),
        Call("POST", "/v1/streams/{stream}/flush", f"{s}/flush", 200),
        Call(
            "POST",
            "/v1/streams/{stream}/partitions/{partition}/flush",
            f"{s}/partitions/0/flush",
            200,
        ),
        Call(
            "POST",
            "/v1/streams/{stream}/partitions/{partition}/unclean-election",
            f"{s}/partitions/0/unclean-election",
            OK,
        ),
        Call("POST", "/v1/streams/{stream}/elect-preferred", f"{s}/elect-preferred", OK),
        Call(
            "POST",
            "/v1/streams/{stream}/reassign",
            f"{s}/reassign",
            OK,
            {"partitions": [{"partition": 0, "replicas": [1]}]},
        ),
        Call("GET", "/v1/streams/{stream}/reassign", f"{s}/reassign", OK),
        Call("DELETE", "/v1/streams/{stream}/reassign", f"{s}/reassign", OK),
        Call("DELETE", "/v1/streams/{stream}", "/v1/streams/m-never-created", 404),
        Call("GET", "/v1/auth/whoami", "/v1/auth/whoami", 200),
        Call("POST", "/v1/auth/tokens", "/v1/auth/tokens", 201, {"principal": "dave"}),
        Call("GET", "/v1/auth/tokens", "/v1/auth/tokens", 200),
        Call("DELETE", "/v1/auth/tokens/{token_id}", "/v1/auth/tokens/ffff", 404),
        Call("GET", "/v1/acls", "/v1/acls", 200),
        Call(
            "POST",
            "/v1/acls",
            "/v1/acls",
            201,
            {"principal": "dave", "action": "describe", "resource": "cluster"},
        ),
        Call("DELETE", "/v1/acls/{acl_id}", "/v1/acls/ffff", 404),
        Call("POST", "/v1/encryption/rotate", "/v1/encryption/rotate", OK),
        Call(
            "GET",
            "/v1/streams/{stream}/partitions/{partition}/data-key",
            f"{s}/partitions/0/data-key",
            OK,
        ),
    ]


STREAM_ADMIN = ("create", "delete", "pause", "resume", "flush", "publish", "consume")
# What each principal may do, written out by hand (not computed by the code under test):
# alice runs the m-* streams and may describe the cluster; bob may publish and consume on
# m-* but a deny takes publishing on m-1 away again, and he describes m-1 (and sees it
# listed) only because consume and publish imply describe; carol may only describe; dora may consume
# but a deny of describe on m-1 wins over the describe consume implies; admin is a super
# user; nobody sends no token. "listed": m-1 is in the caller's GET /v1/streams.
MAY: dict[str, set[str]] = {
    "admin": {"*"},
    "alice": {
        *STREAM_ADMIN,
        "describe",
        "describe-cluster",
        "listed",
        "schema-describe",
        "schema-alter",
        "schema-delete",
    },
    "bob": {"consume", "describe", "listed"},
    "carol": {"describe", "listed", "schema-describe"},
    "dora": {"consume"},
}
# on the secured stack, carol also calls with a client certificate (CN carol) and no token
CERT_PRINCIPAL = "carol-cert"


def _needed(call: Call) -> str | None:
    """The permission a call needs in MAY's words (None: any authenticated principal)."""
    if call.needs is not None:
        return call.needs
    rule = ROUTE_RULES[(call.method, call.route)]
    if rule.action is None:
        return None
    if rule.resource == "cluster":
        return "describe-cluster" if rule.action == "describe" else str(rule.action)
    return str(rule.action)


def _may(principal: str) -> set[str]:
    return MAY["carol" if principal == CERT_PRINCIPAL else principal]


def _expected(principal: str, call: Call) -> str:
    if principal == "nobody":
        return "401"
    needed = _needed(call)
    may = _may(principal)
    if needed is None or "*" in may or needed in may:
        return "ok" if call.ok is None else str(call.ok)
    return "403"


def _seen(status: int, call: Call) -> str:
    if status in (401, 403):
        return str(status)
    return "ok" if call.ok is None else str(status)


@pytest.fixture(scope="module")
def principals(cluster) -> dict[str, dict[str, Any]]:
    """How each principal calls: ``cluster.client`` keyword arguments."""
    tokens: dict[str, dict[str, Any]] = {"admin": {"token": cluster.admin_token}, "nobody": {}}
    for name in ("alice", "bob", "carol", "dora"):
        tokens[name] = {"token": cluster.new_token(name)[1]}
    if cluster.ca is not None:
        tokens[CERT_PRINCIPAL] = {"cert": cluster.client_cert("carol")}
    for action in (*STREAM_ADMIN, "describe"):
        cluster.allow("alice", action, "stream:m-*")
    cluster.allow("alice", "describe", "cluster")
    for action in ("describe", "alter", "delete"):
        cluster.allow("alice", action, "schema:m-*")
    cluster.allow("carol", "describe", "schema:m-*")
    cluster.allow("bob", "publish", "stream:m-*")
    cluster.allow("bob", "consume", "stream:m-*")
    cluster.allow("bob", "publish", f"stream:{STREAM}", deny=True)
    cluster.allow("carol", "describe", "stream:m-*")
    cluster.allow("dora", "consume", "stream:m-*")
    cluster.allow("dora", "describe", f"stream:{STREAM}", deny=True)
    # every principal may describe the streams the matrix creates (none of them is m-1)
    cluster.allow("*", "describe", "stream:m-new-*")
    with cluster.admin() as admin:
        created = admin.post("/v1/streams", json={"name": STREAM, "subject": f"{STREAM}.in"})
        assert created.status_code == 201, created.text
        registered = admin.post(f"/subjects/{SUBJECT}/versions", json=SCHEMA)
        assert registered.status_code == 200, registered.text
        SCHEMA_IDS["id"] = registered.json()["id"]
        for principal in tokens:
            GROUP_MEMBERS[principal] = (*_join(admin), _join(admin)[0])
    return tokens


def _join(admin: httpx.Client) -> tuple[str, int]:
    body = {"streams": [STREAM], "session_timeout_ms": MAX_SESSION_MS}
    joined = admin.post(f"/v1/groups/{GROUP}/members", json=body)
    assert joined.status_code == 200, joined.text
    return joined.json()["member_id"], joined.json()["member_epoch"]


def test_the_authorization_matrix(cluster, principals):
    calls = _calls("x")
    covered = {(c.method, c.route) for c in calls}
    assert covered == {k for k, rule in ROUTE_RULES.items() if not rule.open}
    # the last ACL must be in force on the node before the table means anything
    with cluster.client(**principals["bob"]) as bob:
        wait_for(
            lambda: (
                bob.post(
                    f"/v1/streams/{STREAM}/partitions/0/records", json={"records": [{"value": ""}]}
                ).status_code
                == 403
            ),
            PROPAGATION_TIMEOUT_S,
            message="the deny ACL to apply",
        )
    rows, mismatches = [], []
    for principal, how in principals.items():
        with cluster.client(**how) as api:
            for call in _calls(principal):
                resp = api.request(call.method, call.path, json=call.body, params=call.params)
                expected, seen = _expected(principal, call), _seen(resp.status_code, call)
                rows.append((principal, call.method, call.route, expected, resp.status_code))
                if expected != seen:
                    mismatches.append((principal, call.method, call.path, expected, resp.text))
            if principal != "nobody":
                listed = STREAM in _listed(api)
                if listed != bool({"listed", "*"} & _may(principal)):
                    mismatches.append((principal, "GET", "/v1/streams", "listed", str(listed)))
    print(f"\nauthorization matrix: {len(rows)} principal x route cells")
    for principal, method, route, expected, status in rows:
        print(f"  {principal:<7} {method:<6} {route:<60} expected {expected:<4} got {status}")
    assert mismatches == []
    assert len(rows) == len(principals) * len(covered)


def _listed(api: httpx.Client) -> set[str]:
    listing = api.get("/v1/streams")
    assert listing.status_code == 200, listing.text
    return {s["name"] for s in listing.json()["streams"]}


def test_stream_listing_shows_only_what_the_caller_may_describe(cluster, principals):
    cluster.allow("erin", "consume", "stream:m-*")
    cluster.allow("erin", "describe", "stream:m-new-*", deny=True)
    token = cluster.new_token("erin")[1]
    gina = cluster.new_token("gina")[1]  # no ACL of her own
    with cluster.client(token=token) as erin, cluster.admin() as admin:
        every = _listed(admin)
        assert {STREAM, "m-new-admin", "m-new-alice"} <= every
        # consume implies describe on m-*, but a deny of describe hides m-new-* from erin
        wanted = {n for n in every if n.startswith("m-") and not n.startswith("m-new-")}
        assert _listed(erin) == wanted and STREAM in wanted
    with cluster.client(token=gina) as api:
        # '*' may describe the m-new-* streams, and nothing else
        assert _listed(api) == {n for n in every if n.startswith("m-new-")}


def test_plain_nodes_report_auth_disabled(make_node):
    node = make_node(1, auth=AuthConfig(enabled=False))  # plain HTTP on the secured stack too
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        assert api.get("/v1/cluster").json()["auth"] == "disabled"
        assert api.get("/v1/auth/whoami").json() == {"principal": "anonymous", "auth": "disabled"}


def test_openapi_says_how_to_authenticate(cluster):
    with cluster.client() as anonymous:
        spec = anonymous.get("/openapi.json").json()
    schemes = spec["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {**schemes["bearerAuth"], "type": "http", "scheme": "bearer"}
    assert schemes["clientCertificate"]["type"] == "mutualTLS"
    assert spec["paths"]["/healthz"]["get"]["security"] == []
    publish = spec["paths"]["/v1/streams/{stream}/partitions/{partition}/records"]["post"]
    assert {"bearerAuth": []} in publish["security"]
    assert "Needs `publish` on `stream:{stream}`." in publish["description"]
    describe = spec["paths"]["/v1/streams/{stream}"]["get"]["description"]
    implied = "(or `alter`, `consume`, `delete`, `publish`, which imply it)"
    assert f"Needs `describe` on `stream:{{stream}}` {implied}." in describe


# ------------------------------------------------------------------------- NATS logins

NATS_STREAM = "m-nats"
# principal -> subjects it may publish on and subscribe to, as its ACLs above say
NATS_PUBLISH = {
    "admin": {f"{STREAM}.in", f"{NATS_STREAM}.in"},
    "alice": {f"{STREAM}.in", f"{NATS_STREAM}.in"},  # she runs the m-* streams
    "bob": {f"{NATS_STREAM}.in"},  # publish on m-*, but a deny on m-1 wins
}
NATS_SUBSCRIBE = {
    "admin": {f"{STREAM}.in", f"{NATS_STREAM}.in"},
    "alice": {f"{STREAM}.in", f"{NATS_STREAM}.in"},
    "bob": {f"{STREAM}.in", f"{NATS_STREAM}.in"},
    "dora": {f"{STREAM}.in", f"{NATS_STREAM}.in"},
}
NATS_SUBJECTS = (f"{STREAM}.in", f"{NATS_STREAM}.in")
# nobody publishes on the replication wire or forges an ack, nor reads the server's API
NATS_NEVER_PUBLISH = ("_LIFTLOG.x.fetch", "_INBOX.someone.1", "$SYS.REQ.USER.AUTH")
NATS_NEVER_SUBSCRIBE = ("_LIFTLOG.>", "$SYS.>")


def test_the_nats_authorization_matrix(cluster, principals):
    """Logins to the secured stack's NATS are Liftlog tokens, judged by the nodes (auth
    callout): each principal's publish and subscribe rights follow its ACLs."""
    if not cluster.nats_url:
        pytest.skip("the plain cluster's NATS takes no logins")
    with cluster.admin() as admin:
        created = admin.post("/v1/streams", json={"name": NATS_STREAM, "subject": "m-nats.in"})
        assert created.status_code == 201, created.text
    rows = asyncio.run(_nats_matrix(cluster, principals))
    print(f"\nNATS authorization matrix: {len(rows)} principal x subject cells")
    for principal, op, subject, expected, seen in rows:
        print(f"  {principal:<7} {op:<9} {subject:<22} expected {expected!s:<5} got {seen}")
    assert [r for r in rows if r[3] != r[4]] == []


async def _nats_matrix(cluster, principals) -> list[tuple[str, str, str, bool, bool]]:
    url, ca = cluster.nats_url, cluster.ca_file
    bob = principals["bob"]["token"]

    async def bob_sees_the_new_stream() -> bool:
        probe = await login(url, ca, "bob", bob)
        try:
            return await probe.may_publish(f"{NATS_STREAM}.in")
        finally:
            await probe.nc.close()

    await poll(bob_sees_the_new_stream, PROPAGATION_TIMEOUT_S, "the new stream in bob's grant")
    rows: list[tuple[str, str, str, bool, bool]] = []
    for principal, how in principals.items():
        if how.get("token"):
            rows += await _nats_row(url, ca, principal, how["token"])
    for who, token in (("nobody", "llt_0000000000000000_not-a-token"), ("bob", "")):
        refused = await refused_login(url, ca, who, token or "wrong")
        rows.append((who, "login", "-", False, not refused))
    impostor = await refused_login(url, ca, "admin", bob)  # bob's token, admin's name
    rows.append(("bob-as-admin", "login", "-", False, not impostor))
    return rows


async def _nats_row(url: str, ca: str, principal: str, token: str) -> list[tuple[Any, ...]]:
    """One principal's cells, from a connection that kept its login throughout: a change
    made just before (the new stream) may still disconnect it once to log in again."""
    for _attempt in range(5):
        probe = await login(url, ca, principal, token)
        row: list[tuple[Any, ...]] = []
        try:
            for subject in (*NATS_SUBJECTS, *NATS_NEVER_PUBLISH):
                expected = subject in NATS_PUBLISH.get(principal, set())
                seen = await probe.may_publish(subject)
                if seen and subject in NATS_SUBJECTS:
                    seen = await probe.acked(subject)  # stored, not only unrefused
                row.append((principal, "publish", subject, expected, seen))
            for subject in (*NATS_SUBJECTS, *NATS_NEVER_SUBSCRIBE):
                expected = subject in NATS_SUBSCRIBE.get(principal, set())
                seen = await probe.may_subscribe(subject)
                row.append((principal, "subscribe", subject, expected, seen))
            if probe.reconnects == 0 and probe.nc.is_connected:
                return row
        finally:
            await probe.nc.close()
    raise AssertionError(f"{principal}'s connection kept logging in again")


def test_nats_rights_follow_acl_and_token_changes_on_open_connections(cluster, principals):
    """A change reaches connections already open: the controller disconnects the principal's
    connections, which log in again under the new rights (or are refused)."""
    if not cluster.nats_url:
        pytest.skip("the plain cluster's NATS takes no logins")
    delays = asyncio.run(_follow_changes(cluster))
    print(
        "\nNATS rights change applied on an open connection after (s): "
        + ", ".join(f"{what} {delay:.2f}" for what, delay in delays)
    )


async def _follow_changes(cluster) -> list[tuple[str, float]]:
    token_id, token = cluster.new_token("frank")
    subject = "m-frank.in"
    with cluster.admin() as admin:
        created = admin.post("/v1/streams", json={"name": "m-frank", "subject": subject})
        assert created.status_code == 201, created.text
    acl = cluster.allow("frank", "publish", "stream:m-frank")
    url, ca = cluster.nats_url, cluster.ca_file

    async def fresh_login_may_publish() -> bool:
        probe = await login(url, ca, "frank", token)
        try:
            return await probe.acked(subject)
        finally:
            await probe.nc.close()

    await poll(fresh_login_may_publish, PROPAGATION_TIMEOUT_S, "frank's publish ACL")
    frank = await login(url, ca, "frank", token)
    delays = []
    try:
        assert await frank.acked(subject)
        with cluster.admin() as admin:
            assert admin.delete(f"/v1/acls/{acl}").status_code in (200, 204)

        async def refused() -> bool:
            return not await frank.may_publish(subject)

        delays.append(("acl removed", await poll(refused, PROPAGATION_TIMEOUT_S, "the removal")))
        assert frank.reconnects >= 1  # the same connection, logged in again
        cluster.allow("frank", "publish", "stream:m-frank")

        async def allowed() -> bool:
            return await frank.acked(subject)

        delays.append(("acl added", await poll(allowed, PROPAGATION_TIMEOUT_S, "the new ACL")))
        with cluster.admin() as admin:
            assert admin.delete(f"/v1/auth/tokens/{token_id}").status_code in (200, 204)

        async def gone() -> bool:
            return not frank.nc.is_connected and bool(await refused_login(url, ca, "frank", token))

        delays.append(("token revoked", await poll(gone, PROPAGATION_TIMEOUT_S, "the revocation")))
    finally:
        await frank.nc.close()
    return delays


def test_a_node_refuses_a_record_naming_a_principal_that_may_not_publish(cluster, principals):
    """The node's second line behind NATS's permissions: a record naming its principal
    (``Liftlog-Principal``, as Liftlog's client sends it) is judged on that principal's
    publish ACL; here a super user's connection carries the records, so NATS lets all in."""
    if not cluster.nats_url:
        pytest.skip("the plain cluster's NATS takes no logins")
    acks = asyncio.run(_named_publishes(cluster, ("carol", "bob", "admin")))
    assert [_ack_code(a) for a in acks] == ["forbidden", "forbidden", "ok"], acks


async def _named_publishes(cluster, names: tuple[str, ...]) -> list[dict[str, Any]]:
    admin = await login(cluster.nats_url, cluster.ca_file, "admin", cluster.admin_token)
    try:
        replies = []
        for name in names:
            msg = await admin.nc.request(
                f"{STREAM}.in", b"named", timeout=5, headers={"Liftlog-Principal": name}
            )
            replies.append(json.loads(msg.data))
        return replies
    finally:
        await admin.nc.close()


def _ack_code(ack: dict[str, Any]) -> str:
    return str(ack["error"]["code"]) if "error" in ack else "ok"
