"""Encryption at rest on real nodes: ciphertext in segments, plaintext for readers, replicas
that copy the leader's bytes, a new leader that decrypts, master-key rotation without
rewriting data, and a clear refusal without a master key."""

from __future__ import annotations

import dataclasses
import json

import pytest

from liftlog import cli
from spark_log.client import Client
from spark_log.encryption_config import EncryptionConfig
from tests.integration.conftest import create_stream, node_client
from tests.support.encryption_cluster import (
    NO_AUTH,
    encrypted_node_overrides,
    fetch_values,
    files_contain,
    new_master_key,
    segment_digests,
    segment_files,
    tamper_first_value,
)
from tests.support.waiting import wait_for

SECRET = "top-secret-payload"
KEY_MARKER = "clear-key-marker"


def test_an_encrypted_stream_without_a_master_key_is_refused(
    make_node, stream_name, capsys: pytest.CaptureFixture[str]
):
    node = make_node(1, auth=NO_AUTH)
    argv = ["stream", "create", stream_name, "--subject", f"{stream_name}.in", "--encryption"]
    assert cli.main([*argv, "--server", node.api_url]) == 1
    assert "liftlog: encryption_unavailable:" in capsys.readouterr().err
    with node_client(node.api_url, timeout=30) as api:
        body = {"name": stream_name, "subject": f"{stream_name}.in", "encryption": True}
        resp = api.post("/v1/streams", json=body)
        assert resp.status_code == 400, resp.text
        error = resp.json()["error"]
        assert error["code"] == "encryption_unavailable"
        assert "master key" in error["message"]
        assert api.get(f"/v1/streams/{stream_name}").status_code == 404


async def test_values_are_ciphertext_on_disk_and_plaintext_for_readers(make_node, stream_name):
    key = new_master_key()
    nodes = [make_node(i, **encrypted_node_overrides(key)) for i in (1, 2)]
    with node_client(nodes[0].api_url, timeout=30) as api:
        created = create_stream(api, stream_name, replication_factor=2, min_isr=1, encryption=True)
    assert created["encryption"] is True
    leader_id = created["partitions"][0]["leader"]
    leader = next(n for n in nodes if n.broker_id == leader_id)
    follower = next(n for n in nodes if n.broker_id != leader_id)
    async with Client(leader.api_url) as client:
        for i in range(20):
            await client.publish(stream_name, f"{SECRET}-{i}", key=f"{KEY_MARKER}-{i}")
        await client.publish_batch(stream_name, [f"{SECRET}-b{i}" for i in range(30)])
    expected = [f"{SECRET}-{i}" for i in range(20)] + [f"{SECRET}-b{i}" for i in range(30)]
    assert fetch_values(leader.api_url, stream_name) == expected
    wait_for(
        lambda: fetch_values(follower.api_url, stream_name, from_follower="true") == expected,
        20,
        message="the follower serves the decrypted records",
    )
    leader_files = segment_files(leader.config.data_dir, stream_name)
    follower_files = segment_files(follower.config.data_dir, stream_name)
    assert leader_files and follower_files
    for files in (leader_files, follower_files):
        assert not files_contain(files, SECRET.encode())
        assert files_contain(files, KEY_MARKER.encode())  # keys stay clear: the grep works
    # followers append the leader's bytes unchanged
    assert [p.read_bytes() for p in leader_files] == [p.read_bytes() for p in follower_files]

    leader.stop()
    wait_for(
        lambda: _leader_of(follower.api_url, stream_name) == follower.broker_id,
        30,
        message="the follower takes over",
    )
    assert fetch_values(follower.api_url, stream_name) == expected
    async with Client(follower.api_url) as client:
        await client.publish(stream_name, f"{SECRET}-after-failover")
    assert fetch_values(follower.api_url, stream_name)[-1] == f"{SECRET}-after-failover"
    assert not files_contain(segment_files(follower.config.data_dir, stream_name), SECRET.encode())


def test_rotation_rewraps_keys_without_rewriting_data(
    make_node, stream_name, capsys: pytest.CaptureFixture[str]
):
    old_key, new_key = new_master_key(), new_master_key()
    node = make_node(1, **encrypted_node_overrides(old_key))
    with node_client(node.api_url, timeout=30) as api:
        create_stream(api, stream_name, partitions=2, encryption=True)
        resp = api.post(
            f"/v1/streams/{stream_name}/partitions/0/records",
            json={"records": [{"value": f"{SECRET}-{i}"} for i in range(10)]},
            params={"encoding": "utf-8"},
        )
        assert resp.status_code == 200, resp.text
    expected = [f"{SECRET}-{i}" for i in range(10)]
    wait_for(lambda: fetch_values(node.api_url, stream_name) == expected, message="committed")
    node.stop()
    before = segment_digests(node.config.data_dir, stream_name)
    assert before

    node.config = dataclasses.replace(
        node.config, encryption=EncryptionConfig(master_key=new_key, previous_master_key=old_key)
    )
    node.start()
    with node_client(node.api_url, timeout=30) as api:
        rotated = api.post("/v1/encryption/rotate")
        assert rotated.status_code == 200, rotated.text
        assert (rotated.json()["rewrapped"], rotated.json()["unchanged"]) == (2, 0)
    capsys.readouterr()
    assert cli.main(["encryption", "rotate", "--json", "--server", node.api_url]) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["rewrapped"], again["unchanged"]) == (0, 2)
    node.stop()

    node.config = dataclasses.replace(node.config, encryption=EncryptionConfig(master_key=new_key))
    node.start()
    assert fetch_values(node.api_url, stream_name) == expected
    node.stop()
    assert segment_digests(node.config.data_dir, stream_name) == before

    # the old key alone no longer opens the data: a clear, typed refusal
    node.config = dataclasses.replace(node.config, encryption=EncryptionConfig(master_key=old_key))
    node.start()
    with node_client(node.api_url, timeout=30) as api:
        resp = api.get(f"/v1/streams/{stream_name}/partitions/0/records")
        assert resp.status_code == 503, resp.text
        assert resp.json()["error"]["code"] == "key_unavailable"


def _leader_of(api_url: str, stream: str) -> int | None:
    with node_client(api_url, timeout=10) as api:
        resp = api.get(f"/v1/streams/{stream}")
    if resp.status_code != 200:
        return None
    state = resp.json()["partitions"][0]
    return None if state["offline"] else state["leader"]


def test_a_tampered_value_on_disk_is_refused_not_returned(make_node, stream_name):
    """Flip one ciphertext byte in the segment and fix the batch CRC, as someone with disk
    access could: the fetch fails with decryption_failed instead of returning garbage."""
    node = make_node(1, **encrypted_node_overrides(new_master_key()))
    with node_client(node.api_url, timeout=30) as api:
        create_stream(api, stream_name, encryption=True)
        resp = api.post(
            f"/v1/streams/{stream_name}/partitions/0/records",
            json={"records": [{"value": f"{SECRET}-{i}"} for i in range(3)]},
            params={"encoding": "utf-8"},
        )
        assert resp.status_code == 200, resp.text
    wait_for(lambda: len(fetch_values(node.api_url, stream_name)) == 3, message="committed")
    node.stop()
    (segment,) = segment_files(node.config.data_dir, stream_name)
    tamper_first_value(segment)
    node.start()
    with node_client(node.api_url, timeout=30) as api:
        resp = api.get(f"/v1/streams/{stream_name}/partitions/0/records")
    assert resp.status_code == 500, resp.text
    assert resp.json()["error"]["code"] == "decryption_failed"
    assert SECRET not in resp.text
