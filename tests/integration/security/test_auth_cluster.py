"""Tokens and ACLs changed through one node apply on every node within seconds (ZooKeeper
watches), and calls one node forwards to another carry the caller's credentials."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.auth_stack import PROPAGATION_TIMEOUT_S, AuthCluster, start_auth_cluster
from tests.support.waiting import wait_for


@pytest.fixture(scope="module")
def cluster(zookeeper, nats_server, tmp_path_factory, secure_material) -> Iterator[AuthCluster]:
    root = tmp_path_factory.mktemp("auth3")
    yield from start_auth_cluster(
        zookeeper,
        nats_server,
        root,
        3,
        bootstrap_everywhere=False,
        secure_material=secure_material,
    )


def _status(cluster: AuthCluster, node: int, token: str, path: str) -> int:
    with cluster.client(node, token) as api:
        return api.get(path).status_code


def test_acl_and_token_revoked_on_node_a_are_refused_on_node_c(cluster):
    token_id, token = cluster.new_token("zed")  # returns once every node accepts it
    assert _status(cluster, 2, token, "/metrics") == 403
    acl_id = cluster.allow("zed", "describe", "cluster")  # through node A (index 0)
    wait_for(
        lambda: _status(cluster, 2, token, "/metrics") == 200,
        PROPAGATION_TIMEOUT_S,
        message="node C to apply the new ACL",
    )
    with cluster.admin(0) as node_a:
        assert node_a.delete(f"/v1/acls/{acl_id}").status_code == 200
    wait_for(
        lambda: _status(cluster, 2, token, "/metrics") == 403,
        PROPAGATION_TIMEOUT_S,
        message="node C to apply the ACL removal",
    )
    with cluster.admin(0) as node_a:
        assert node_a.delete(f"/v1/auth/tokens/{token_id}").status_code == 200
    wait_for(
        lambda: _status(cluster, 2, token, "/v1/auth/whoami") == 401,
        PROPAGATION_TIMEOUT_S,
        message="node C to refuse the revoked token",
    )
    assert _status(cluster, 1, token, "/v1/auth/whoami") == 401


def test_forwarded_calls_carry_the_callers_token(cluster):
    """Describe asks each partition's leader for its offsets and flush runs on each leader:
    with auth on, those node-to-node calls must authenticate. Node C has no credential of its
    own (no bootstrap token), so its forwarded calls pass only as the caller."""
    stream = "fwd"
    with cluster.admin() as admin:
        body = {"name": stream, "subject": "fwd.in", "partitions": 3, "replication_factor": 3}
        assert admin.post("/v1/streams", json=body).status_code == 201
    for action in ("describe", "flush"):
        cluster.allow("fran", action, f"stream:{stream}")
    token = cluster.new_token("fran")[1]
    with cluster.client(2, token) as fran:

        def described() -> dict | None:
            resp = fran.get(f"/v1/streams/{stream}")
            assert resp.status_code == 200, resp.text
            parts = resp.json()["partitions"]
            return resp.json() if all(p["high_watermark"] is not None for p in parts) else None

        view = wait_for(described, PROPAGATION_TIMEOUT_S, message="every leader's offsets")
        leaders = {p["leader"] for p in view["partitions"]}
        assert len(leaders) > 1, "the partitions should be led by several nodes"
        flushed = fran.post(f"/v1/streams/{stream}/flush")
        assert flushed.status_code == 200, flushed.text
        assert len(flushed.json()["partitions"]) == 3


def test_an_unclean_election_needs_describe_on_every_replica(cluster):
    """The dry run reads each replica's view with the caller's token: a replica that refuses
    it fails the election instead of counting as silent (which could pick a shorter log)."""
    stream = "unclean-acl"
    with cluster.admin() as admin:
        body = {"name": stream, "subject": "unclean.in", "partitions": 1, "replication_factor": 3}
        assert admin.post("/v1/streams", json=body).status_code == 201
    cluster.allow("uma", "cluster_admin", "cluster")
    token = cluster.new_token("uma")[1]
    path = f"/v1/streams/{stream}/partitions/0/unclean-election"
    with cluster.client(2, token) as uma:
        refused = uma.post(path)
        assert refused.status_code == 403, refused.text
        assert "describe" in refused.json()["error"]["message"]
        cluster.allow("uma", "describe", f"stream:{stream}")
        wait_for(
            lambda: uma.post(path).status_code == 200,
            PROPAGATION_TIMEOUT_S,
            message="every replica to apply the describe grant",
        )
        assert uma.post(path).json()["elected"] is False
