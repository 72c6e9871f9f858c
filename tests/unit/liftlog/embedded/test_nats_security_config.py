"""NATS credentials ([nats], LIFTLOG_NATS_*), the connect options they become, and the
nats-server authorization a secured stack renders (pure logic; the server itself is
exercised in tests/integration/security/test_nats_permissions.py)."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest

from ingest.nats_connect import nats_connect_options
from liftlog.embedded.certs import generate_stack_certs
from liftlog.embedded.nats_auth import (
    CALLOUT_REPLY_SUBJECTS,
    INBOX_SUBJECTS,
    INTERNAL_SUBJECTS,
    NatsServerSecurity,
    NatsServerTls,
    NatsUser,
    node_permissions,
    publisher_permissions,
    secure_nats,
    with_client_cert,
)
from spark_log.config import NodeConfig
from spark_log.errors import ConfigError
from spark_log.fetch_wire import cluster_token, is_internal_reply, node_inbox_prefix
from spark_log.nats_config import NatsCredentials, nats_credentials_from_env
from spark_log.nats_options import nats_auth_options
from spark_log.subjects import subject_matches
from spark_log.typed_config import from_mapping


def _config(**nats: Any) -> NodeConfig:
    return from_mapping(NodeConfig, {"broker_id": 1, "data_dir": "/tmp/node", "nats": nats})


@pytest.mark.parametrize(
    ("nats", "message"),
    [
        ({"token": "t", "nkey_seed_file": "/n.nk"}, "one way"),
        ({"user": "u", "password": "p", "creds_file": "/n.creds"}, "one way"),
        ({"tls_cert_file": "/c.pem"}, "together"),
        ({"tls_key_file": "/c.key"}, "together"),
        ({"tls_ca": "/ca.pem"}, "unknown key"),
    ],
)
def test_bad_nats_settings_are_refused_at_load(nats: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _config(**nats)


def test_an_nkey_seed_file_becomes_nkeys_seed() -> None:
    assert nats_auth_options(NatsCredentials(nkey_seed_file="/etc/node.nk")) == {
        "nkeys_seed": "/etc/node.nk"
    }


def test_tls_settings_become_a_verifying_context_with_the_client_certificate(
    temp_dir: Path,
) -> None:
    certs = generate_stack_certs(temp_dir, [1])
    options = nats_auth_options(
        NatsCredentials(
            token="t",
            tls_ca_file=certs.ca_file,
            tls_cert_file=certs.nodes[1].cert_file,
            tls_key_file=certs.nodes[1].key_file,
            tls_hostname="localhost",
        )
    )
    context = options["tls"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert options["tls_hostname"] == "localhost" and options["token"] == "t"


def test_a_missing_ca_file_is_a_config_error_naming_the_key(temp_dir: Path) -> None:
    with pytest.raises(ConfigError, match="tls_ca_file"):
        nats_auth_options(NatsCredentials(tls_ca_file=str(temp_dir / "absent.pem")))


def test_clients_read_credentials_from_the_environment() -> None:
    env = {"LIFTLOG_NATS_USER": "pub", "LIFTLOG_NATS_PASSWORD": "s3cret"}
    assert nats_credentials_from_env(env) == NatsCredentials(user="pub", password="s3cret")
    assert nats_credentials_from_env({}) == NatsCredentials()
    with pytest.raises(ConfigError, match="LIFTLOG_NATS_"):
        nats_credentials_from_env({"LIFTLOG_NATS_USER": "pub"})


def test_secrets_never_reach_repr() -> None:
    secured = secure_nats(None)
    shown = repr(secured)
    for secret in (secured.node.password, secured.publisher.password):
        assert len(secret) >= 32 and secret not in shown


def test_node_and_publisher_passwords_are_fresh_and_distinct() -> None:
    first, second = secure_nats(None), secure_nats(None)
    passwords = {first.node.password, first.publisher.password, second.node.password}
    assert len(passwords) == 3


@pytest.mark.parametrize(
    ("subject", "publish", "subscribe"),
    [
        ("orders.eu", True, False),  # a stream's subject
        ("_LIFTLOG.c1.fetch.orders.0.1", False, False),  # the replication wire
        ("_INBOX.abc.1", False, True),  # someone's ack or fetch response inbox
        ("$JS.API.STREAM.CREATE.x", False, False),  # the server's own API
    ],
)
def test_publisher_permissions(subject: str, publish: bool, subscribe: bool) -> None:
    rules = publisher_permissions()
    assert _allowed(rules.publish_allow, rules.publish_deny, subject) is publish
    assert _allowed(rules.subscribe_allow, rules.subscribe_deny, subject) is subscribe


def test_node_permissions_cover_requests_and_replies_only() -> None:
    rules = node_permissions()
    assert rules.publish_allow == (INTERNAL_SUBJECTS, INBOX_SUBJECTS, CALLOUT_REPLY_SUBJECTS)
    assert _allowed(rules.subscribe_allow, rules.subscribe_deny, "orders.eu")
    assert not _allowed(rules.publish_allow, rules.publish_deny, "orders.eu")


def test_a_nodes_request_replies_arrive_where_only_nodes_may_subscribe() -> None:
    """Fetch responses (every stream's records) go to the node's inbox prefix: the node may
    subscribe and answer there, a publisher may not subscribe there."""
    config = from_mapping(NodeConfig, {"broker_id": 1, "data_dir": "/d", "zk_root": "/a"})
    prefix = nats_connect_options(config)["inbox_prefix"]
    assert prefix == node_inbox_prefix(cluster_token("/a"))
    reply = f"{prefix}.Zk3nqAvWxkTNnTbCFYAfK0.1"
    node, publisher = node_permissions(), publisher_permissions()
    assert _allowed(node.publish_allow, node.publish_deny, reply)
    assert _allowed(node.subscribe_allow, node.subscribe_deny, reply)
    assert not _allowed(publisher.subscribe_allow, publisher.subscribe_deny, reply)
    assert is_internal_reply(reply)


@pytest.mark.parametrize(
    ("reply", "internal"),
    [
        ("_INBOX.abc.1", False),  # a publisher's own inbox
        ("app.replies.1", False),  # an application's own reply subject
        ("_LIFTLOGX.a", False),  # only the namespace's own first token counts
        ("_LIFTLOG.c1.fetch.orders.0.1", True),  # the replication wire
        ("_LIFTLOG", True),
        ("$JS.API.STREAM.DELETE.x", True),  # the server's own API
    ],
)
def test_internal_reply_subjects(reply: str, internal: bool) -> None:
    assert is_internal_reply(reply) is internal


def test_publisher_subjects_narrow_what_it_may_publish() -> None:
    rules = publisher_permissions(["orders.>"])
    assert _allowed(rules.publish_allow, rules.publish_deny, "orders.eu")
    assert not _allowed(rules.publish_allow, rules.publish_deny, "payments.eu")
    with pytest.raises(ConfigError, match="at least one"):
        publisher_permissions([])


def test_rendered_config_names_users_tls_and_permissions() -> None:
    tls = NatsServerTls("/tls/nats.pem", "/tls/nats.key", "/tls/ca.pem", verify=True)
    text = secure_nats(tls, ["orders.>"]).security.config_text()
    assert 'cert_file: "/tls/nats.pem"' in text and "verify: true" in text
    assert 'user: "liftlog-node"' in text and 'user: "liftlog-publisher"' in text
    assert 'deny: ["_LIFTLOG.>", "_INBOX.>"' in text
    assert 'allow: ["orders.>"]' in text


def test_tls_credentials_carry_the_ca_and_a_client_certificate() -> None:
    tls = NatsServerTls("/tls/nats.pem", "/tls/nats.key", "/tls/ca.pem")
    node = with_client_cert(secure_nats(tls).node, "/tls/node-1.pem", "/tls/node-1.key")
    assert node.tls_ca_file == "/tls/ca.pem" and node.tls_cert_file == "/tls/node-1.pem"
    assert node.user == "liftlog-node"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"user": "u"}, "password"),
        ({"user": "u", "password": "p", "nkey": "UABC"}, "not both"),
        ({}, "not both"),
    ],
)
def test_a_user_has_one_identity(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        NatsUser(node_permissions(), **kwargs)


def test_users_and_a_token_exclude_each_other() -> None:
    user = NatsUser(node_permissions(), user="u", password="p")
    with pytest.raises(ConfigError, match="not both"):
        NatsServerSecurity(users=(user,), token="t")


def _allowed(allow: tuple[str, ...], deny: tuple[str, ...], subject: str) -> bool:
    """nats-server's rule for a literal subject: some allow matches and no deny does."""
    return any(subject_matches(p, subject) for p in allow) and not any(
        subject_matches(p, subject) for p in deny
    )
