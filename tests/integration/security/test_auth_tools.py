"""Credentials in the users' tools, auth on: the `liftlog auth` / `liftlog acl` commands end
to end, the Python client and the Spark source with a token (and a clear error without)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.errors import PySparkException

from spark_log.client.sync_client import SyncClient
from spark_log.errors import (
    AclNotFoundError,
    ForbiddenError,
    TokenNotFoundError,
    UnauthenticatedError,
)
from tests.support.auth_stack import PROPAGATION_TIMEOUT_S, AuthCluster, start_auth_cluster
from tests.support.spark_session import liftlog_reader, spark
from tests.support.stacks import plain_stack_only
from tests.support.waiting import wait_for

__all__ = ["spark"]

LIFTLOG = str(Path(sys.executable).parent / "liftlog")

NO_AMBIENT_CREDENTIALS = plain_stack_only(
    "fails without a token only when none is ambient: on the secured stack Spark's Python "
    "workers inherit the session's admin token and CA from the environment"
)


@pytest.fixture(scope="module")
def cluster(zookeeper, nats_server, tmp_path_factory, secure_material) -> Iterator[AuthCluster]:
    yield from start_auth_cluster(
        zookeeper, nats_server, tmp_path_factory.mktemp("tools"), secure_material=secure_material
    )


def _cli(cluster: AuthCluster, *args: str, env: dict[str, str] | None = None):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LIFTLOG_")}
    return subprocess.run(
        [LIFTLOG, *args, "--server", cluster.api_urls[0]],
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, **(env or {})},
    )


def test_auth_and_acl_commands_end_to_end(cluster, tmp_path):
    admin = ("--token", cluster.admin_token)
    refused = _cli(cluster, "auth", "token", "list")
    assert refused.returncode == 1 and "unauthenticated" in refused.stderr
    created = _cli(cluster, "auth", "token", "create", "cli-user", "--description", "ci", *admin)
    assert created.returncode == 0, created.stderr
    token = created.stdout.splitlines()[-1]
    token_id = token.split("_")[1]
    assert f"token {token_id} for cli-user" in created.stdout
    listing = _cli(cluster, "auth", "token", "list", *admin)
    assert token_id in listing.stdout and "cli-user" in listing.stdout
    assert token not in listing.stdout
    # the token from the environment, then from a credentials file
    whoami = _cli(cluster, "auth", "whoami", env={"LIFTLOG_TOKEN": token})
    assert whoami.stdout.strip() == "cli-user (auth enabled)", whoami.stderr
    creds = tmp_path / "credentials.toml"
    creds.write_text(f'token = "{token}"\n')
    assert _cli(cluster, "auth", "whoami", "--credentials-file", str(creds)).returncode == 0
    forbidden = _cli(cluster, "stream", "list", "--token", token)
    assert forbidden.returncode == 0 and "m-" not in forbidden.stdout  # sees nothing
    cluster_call = ("cluster", "decommission", "9", "--dry-run", "--token", token)
    assert "forbidden" in _cli(cluster, *cluster_call).stderr
    added = _cli(
        cluster,
        *("acl", "add", "--principal", "cli-user", "--action", "cluster_admin"),
        *("--resource", "cluster", *admin),
    )
    assert added.returncode == 0, added.stderr
    acl_id = added.stdout.split()[1].rstrip(":")
    assert acl_id in _cli(cluster, "acl", "list", *admin).stdout
    wait_for(
        lambda: (
            _cli(cluster, *cluster_call).returncode != 1
            or "forbidden" not in _cli(cluster, *cluster_call).stderr
        ),
        PROPAGATION_TIMEOUT_S,
        message="the ACL to apply",
    )
    assert _cli(cluster, "acl", "remove", acl_id, *admin).returncode == 0
    assert acl_id not in _cli(cluster, "acl", "list", *admin).stdout
    deny = _cli(
        cluster,
        *("acl", "add", "--principal", "*", "--action", "publish"),
        *("--resource", "stream:x-*", "--deny", *admin),
    )
    assert "deny * publish on stream:x-*" in deny.stdout
    assert _cli(cluster, "auth", "token", "revoke", token_id, *admin).returncode == 0
    wait_for(
        lambda: "unauthenticated" in _cli(cluster, "auth", "whoami", "--token", token).stderr,
        PROPAGATION_TIMEOUT_S,
        message="the revoked token to be refused",
    )
    missing = _cli(cluster, "auth", "token", "revoke", token_id, *admin)
    assert missing.returncode == 1 and "token_not_found" in missing.stderr


def test_the_python_client_takes_a_token(cluster):
    url = cluster.api_urls[0]
    with SyncClient(url, token="llt_00_wrong") as wrong, pytest.raises(UnauthenticatedError):
        wrong.list_streams()
    _token_id, token = cluster.new_token("py-user")
    with SyncClient(url, token=token) as client, pytest.raises(ForbiddenError):
        client.describe_stream("anything")
    with SyncClient(url, token=cluster.admin_token) as admin:
        assert isinstance(admin.list_streams(), list)


def test_the_python_client_manages_tokens_and_acls(cluster):
    url = cluster.api_urls[0]
    with SyncClient(url, token=cluster.admin_token) as admin:
        created = admin.create_token("py-admin-made", "from the client")
        assert created.token not in repr(created)
        assert created.token_id in {t.token_id for t in admin.list_tokens()}
        entry = admin.add_acl("py-admin-made", "describe", "stream:py-*")
        assert admin.add_acl("py-admin-made", "describe", "stream:py-*") == entry  # no-op
        assert [a for a in admin.list_acls() if a.principal == "py-admin-made"] == [entry]
        with SyncClient(url, token=created.token) as user:
            assert user.whoami().principal == "py-admin-made"
        assert admin.remove_acl(entry.acl_id).removed
        assert admin.revoke_token(created.token_id).revoked
        with pytest.raises(AclNotFoundError):
            admin.remove_acl(entry.acl_id)
        with pytest.raises(TokenNotFoundError):
            admin.revoke_token(created.token_id)


@NO_AMBIENT_CREDENTIALS
def test_the_spark_source_reads_with_a_token_and_fails_clearly_without(cluster, spark, tmp_path):
    stream = "spark-auth"
    with cluster.admin() as admin:
        assert (
            admin.post("/v1/streams", json={"name": stream, "subject": "sa.in"}).status_code == 201
        )
        records = [{"value": "aGk="}] * 5
        resp = admin.post(f"/v1/streams/{stream}/partitions/0/records", json={"records": records})
        assert resp.status_code == 200, resp.text
    _token_id, token = cluster.new_token("reader")
    for action in ("describe", "consume"):
        cluster.allow("reader", action, f"stream:{stream}")
    url = cluster.api_urls[0]
    rows = wait_for(
        lambda: liftlog_reader(spark, url, stream, token=token).count() == 5,
        PROPAGATION_TIMEOUT_S,
        message="the reader's ACLs to apply",
    )
    assert rows
    with pytest.raises(PySparkException) as failure:
        liftlog_reader(spark, url, stream).count()
    assert "UnauthenticatedError" in str(failure.value)
    assert "the Spark option token" in str(failure.value)
    plan = liftlog_reader(spark, url, stream, token=token)._jdf.queryExecution().toString()
    assert token not in plan
    # the streaming source takes the same option
    stream_df = (
        spark.readStream.format("liftlog")
        .option("servers", url)
        .option("stream", stream)
        .option("startingOffsets", "earliest")
        .option("token", token)
        .load()
    )
    query = (
        stream_df.writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120) and query.exception() is None
    assert spark.read.parquet(str(tmp_path / "out")).count() == 5


@NO_AMBIENT_CREDENTIALS
def test_the_spark_sink_writes_with_a_token_and_fails_clearly_without(cluster, spark):
    stream = "sink-auth"
    with cluster.admin() as admin:
        created = admin.post("/v1/streams", json={"name": stream, "subject": "sink.in"})
        assert created.status_code == 201, created.text
    _token_id, token = cluster.new_token("writer")
    for action in ("describe", "publish"):
        cluster.allow("writer", action, f"stream:{stream}")
    df = spark.createDataFrame([("k1", "v1"), ("k2", "v2")], "key string, value string")
    url = cluster.api_urls[0]

    def write(**options: str) -> None:
        writer = df.write.format("liftlog").mode("append").option("servers", url)
        for name, value in {"stream": stream, **options}.items():
            writer = writer.option(name, value)
        writer.save()

    with pytest.raises(PySparkException) as failure:
        write()
    assert "authentication required" in str(failure.value)
    assert "the Spark option token" in str(failure.value)
    wait_for(
        lambda: _written(lambda: write(token=token)),
        PROPAGATION_TIMEOUT_S,
        message="the writer's ACLs to apply",
    )
    with cluster.admin() as admin:
        view = admin.get(f"/v1/streams/{stream}").json()
    assert view["partitions"][0]["high_watermark"] == 2


def _written(write) -> bool:
    try:
        write()
    except PySparkException as exc:
        if "forbidden" in str(exc):
            return False
        raise
    return True
