"""docs/deployment.md's config files are files the real programs accept: every ``node.toml``
loads with the node's own loader (and describes the three-host layout), and the
nats-server.conf block passes ``nats-server -t``."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_log.config import NodeConfig, load_node_config
from tests.support.docs.blocks import REPO, Block, parse
from tests.support.docs.nats_conf import nats_conf_errors

DEPLOYMENT = REPO / "docs" / "deployment.md"
HOSTS = 3


def _blocks(lang: str) -> list[Block]:
    return [b for b in parse(DEPLOYMENT).blocks if b.lang == lang]


NODE_BLOCKS = _blocks("toml")


def _load(block: Block, tmp_path: Path) -> NodeConfig:
    path = tmp_path / "node.toml"
    path.write_text(block.text)
    return load_node_config(path)


@pytest.mark.parametrize("block", NODE_BLOCKS, ids=[b.where for b in NODE_BLOCKS])
def test_every_node_toml_loads(block: Block, tmp_path: Path) -> None:
    config = _load(block, tmp_path)
    assert len(config.nats_servers) == HOSTS
    assert config.api_advertised_url and config.advertised_api_url != config.api_url
    assert config.nats.user and config.lake.uri.startswith("s3://")


def test_the_three_nodes_form_one_cluster(tmp_path: Path) -> None:
    configs = [_load(block, tmp_path) for block in NODE_BLOCKS]
    assert sorted(c.broker_id for c in configs) == list(range(1, HOSTS + 1))
    assert len({c.zk_connect for c in configs}) == 1 and len({c.lake.uri for c in configs}) == 1
    assert len({frozenset(c.nats_servers) for c in configs}) == 1  # same servers, own first
    assert len({c.nats_servers[0] for c in configs}) == HOSTS


def test_nats_server_conf_is_valid(tmp_path: Path) -> None:
    [block] = _blocks("conf")
    assert nats_conf_errors(block.text, tmp_path) == ""


def test_zoo_cfg_lists_the_ensemble() -> None:
    [block] = _blocks("properties")
    lines = dict(line.split("=", 1) for line in block.text.splitlines() if "=" in line)
    assert [lines[f"server.{n}"] for n in range(1, HOSTS + 1)] == [
        f"10.0.0.1{n}:2888:3888" for n in range(1, HOSTS + 1)
    ]
    assert "srvr" in lines["4lw.commands.whitelist"]
