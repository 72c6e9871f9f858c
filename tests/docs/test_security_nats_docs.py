"""docs/security.md's NATS section shows what the code does: its nats-server config passes
``nats-server -t``, its permissions are the ones ``liftlog.embedded.nats_auth`` renders, and
its ``[nats]`` table loads with the node's own loader."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from ingest.security.nats_jwt import new_account_seed
from liftlog.embedded.certs import generate_stack_certs
from liftlog.embedded.nats_auth import (
    CalloutSecrets,
    NatsUser,
    callout_nats,
    node_permissions,
    publisher_permissions,
)
from spark_log.config import NodeConfig
from spark_log.nats_config import NatsCredentials
from spark_log.typed_config import from_mapping
from tests.support.docs.blocks import REPO, Block, parse
from tests.support.docs.nats_conf import nats_conf_errors

SECURITY = REPO / "docs" / "security.md"
DOCUMENTED_TLS_DIR = "/etc/nats/tls/"
DOCUMENTED_PUBLISHER_SUBJECTS = ["orders.>"]


def _nats_section_blocks(lang: str, heading: str = "NATS") -> list[Block]:
    """The ``lang`` blocks of security.md's section ``## <heading>``."""
    text = SECURITY.read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.index("\n## ", start + 1)
    first, last = text[:start].count("\n") + 1, text[:end].count("\n") + 1
    return [b for b in parse(SECURITY).blocks if b.lang == lang and first < b.line < last]


def _squeezed(text: str) -> str:
    """Whitespace and commas are optional separators in nats-server's syntax."""
    return re.sub(r"[\s,]+", "", text)


def test_the_documented_server_config_is_valid(temp_dir: Path) -> None:
    [block] = _nats_section_blocks("conf")
    certs = generate_stack_certs(temp_dir / "tls", [1])
    real = {"nats.pem": certs.nats.cert_file, "nats.key": certs.nats.key_file}
    real["ca.pem"] = certs.ca_file
    text = block.text
    for name, path in real.items():
        text = text.replace(DOCUMENTED_TLS_DIR + name, path)
    assert nats_conf_errors(text, temp_dir) == ""


def test_the_documented_permissions_are_the_rendered_ones() -> None:
    [block] = _nats_section_blocks("conf")
    documented = _squeezed(block.text)
    for permissions in (node_permissions(), publisher_permissions(DOCUMENTED_PUBLISHER_SUBJECTS)):
        rendered = NatsUser(permissions, nkey="U").render()
        expected = _squeezed(rendered.split("permissions:", 1)[1])[: -len("}")]
        assert "permissions:" + expected in documented


def test_the_documented_nats_table_loads() -> None:
    [block] = [b for b in _nats_section_blocks("text") if b.text.startswith("[nats]")]

    table = tomllib.loads(block.text)
    config = from_mapping(NodeConfig, {"broker_id": 1, "data_dir": "/tmp/node", **table})
    assert config.nats.user == "liftlog-node" and config.nats.tls_cert_file


def _token_logins_blocks(lang: str) -> list[Block]:
    return _nats_section_blocks(lang, "NATS logins with Liftlog tokens")


def test_the_documented_callout_config_is_valid_and_the_rendered_one(temp_dir: Path) -> None:
    """The token-logins server config passes ``nats-server -t`` and is what the embedded
    stack renders (passwords and issuer aside)."""
    [block] = _token_logins_blocks("conf")
    assert nats_conf_errors(block.text, temp_dir) == ""
    issuer = re.search(r'issuer: "(A[A-Z0-9]+)"', block.text)
    assert issuer is not None
    secrets_ = CalloutSecrets("change-me-nodes", "change-me-system", issuer.group(1))
    rendered = callout_nats(None, secrets_, NatsCredentials()).security.config_text()
    assert _squeezed(rendered) == _squeezed(block.text)


def test_the_documented_nats_auth_table_loads(temp_dir: Path) -> None:
    [block] = [b for b in _token_logins_blocks("text") if b.text.startswith("[nats_auth]")]
    table = tomllib.loads(block.text)
    seed = temp_dir / "issuer.nk"
    seed.write_text(new_account_seed())
    table["nats_auth"]["issuer_seed_file"] = str(seed)  # the documented path is an example
    config = from_mapping(NodeConfig, {"broker_id": 1, "data_dir": "/tmp/node", **table})
    assert config.nats_auth.enabled and config.nats_auth.account == "LIFTLOG"
    assert config.nats_auth.system_user == "liftlog-system"
