"""NATS logins answered by the nodes (auth callout), without a server: the JWTs on the wire,
the grant a principal's ACLs give, and which rights changes disconnect open connections."""

from __future__ import annotations

import base64
import json
import secrets
import time
from pathlib import Path

import nkeys
import pytest

from coordinator.auth_store import AuthSnapshot
from ingest.security import nats_jwt
from ingest.security.nats_callout import CalloutResponder
from ingest.security.nats_grants import (
    INBOX_SUBJECTS,
    NatsGrant,
    grant_for,
    publish_refusal,
    stream_subjects,
)
from ingest.security.nats_revocation import Rights, rights_changed
from ingest.security.node_auth import NodeAuth
from spark_log.auth import AclEntry, Action, Permission, new_token
from spark_log.auth.tokens import TokenRecord
from spark_log.auth_config import AuthConfig
from spark_log.errors import ConfigError, ForbiddenError
from spark_log.nats_auth_config import NatsAuthConfig
from spark_log.stream_spec import StreamSpec

SERVER_ID = "server-id-not-checked-here"


def _server_seed() -> str:
    return nkeys.encode_seed(secrets.token_bytes(32), nkeys.PREFIX_BYTE_SERVER).decode()


def _user_key() -> str:
    raw = bytearray([nkeys.PREFIX_BYTE_USER]) + secrets.token_bytes(32)
    raw += bytes(nkeys.crc16_checksum(raw))
    return base64.b32encode(bytes(raw)).decode().rstrip("=")


def _auth(tmp: Path, acls: list[AclEntry]) -> tuple[NodeAuth, dict[str, str]]:
    """A node's auth with tokens of alice and bob and ``acls``, as a refresh leaves it."""
    auth = NodeAuth(AuthConfig(enabled=True, bootstrap_token="boot-0123456789abcdef"), None)  # type: ignore[arg-type]
    tokens, texts = {}, {}
    for principal in ("alice", "bob"):
        issued = new_token()
        tokens[issued.token_id] = TokenRecord(issued.token_id, principal, issued.sha256, 0)
        texts[principal] = issued.text
    auth.cache._snapshot = AuthSnapshot(tokens, tuple(acls))
    auth.cache._refreshed_at = time.monotonic()
    return auth, texts


def _responder(tmp: Path, auth: NodeAuth, streams: list[StreamSpec]) -> CalloutResponder:
    seed_file = tmp / "issuer.nk"
    seed_file.write_text(nats_jwt.new_account_seed())
    config = NatsAuthConfig(issuer_seed_file=str(seed_file), account="LIFTLOG")
    return CalloutResponder(config, auth, lambda: streams)


def _request(connect: dict[str, str]) -> tuple[str, str]:
    user = _user_key()
    body = {
        "server_id": {"id": SERVER_ID, "name": "n", "host": "127.0.0.1"},
        "user_nkey": user,
        "client_info": {"host": "127.0.0.1", "id": 7},
        "connect_opts": connect,
        "type": "authorization_request",
        "version": 2,
    }
    claims = {"sub": "issuer", "aud": "nats-authorization-request", "nats": body}
    return nats_jwt.encode(claims, _server_seed()), user


def _acl(principal: str, action: Action, resource: str, deny: bool = False) -> AclEntry:
    permission = Permission.DENY if deny else Permission.ALLOW
    return AclEntry(secrets.token_hex(8), principal, action, resource, permission)


ORDERS = StreamSpec(name="orders", subject="orders", partitions=3)
AUDIT = StreamSpec(name="audit", subject="audit.*")


def test_a_jwt_round_trips_and_a_tampered_one_is_refused() -> None:
    seed = nats_jwt.new_account_seed()
    token = nats_jwt.encode({"sub": "x", "nats": {"type": "user"}}, seed)
    claims = nats_jwt.decode(token, nkeys.PREFIX_BYTE_ACCOUNT)
    assert claims["iss"] == nats_jwt.public_key(seed) and claims["jti"]
    header, body, signature = token.split(".")
    forged = json.loads(base64.urlsafe_b64decode(body + "=="))
    forged["sub"] = "y"
    forged_body = base64.urlsafe_b64encode(json.dumps(forged).encode()).decode().rstrip("=")
    with pytest.raises(nats_jwt.NatsJwtError, match="signature"):
        nats_jwt.decode(f"{header}.{forged_body}.{signature}", nkeys.PREFIX_BYTE_ACCOUNT)
    with pytest.raises(nats_jwt.NatsJwtError, match="expected role"):
        nats_jwt.decode(token, nkeys.PREFIX_BYTE_SERVER)  # an account signed it, not a server
    with pytest.raises(nats_jwt.NatsJwtError):
        nats_jwt.decode("not.a-jwt", nkeys.PREFIX_BYTE_SERVER)


def test_a_grant_lists_the_subjects_of_the_streams_the_acls_allow(tmp_path: Path) -> None:
    assert stream_subjects(ORDERS) == ["orders", "orders.1", "orders.2"]
    acls = [
        _acl("bob", Action.PUBLISH, "stream:*"),
        _acl("bob", Action.PUBLISH, "stream:audit", deny=True),  # deny wins
        _acl("bob", Action.CONSUME, "stream:audit"),
    ]
    auth, _ = _auth(tmp_path, acls)
    grant = grant_for(lambda a, r: auth.allows("bob", a, r), [ORDERS, AUDIT])
    assert grant == NatsGrant(("orders", "orders.1", "orders.2"), (INBOX_SUBJECTS, "audit.*"))
    nobody = grant_for(lambda a, r: auth.allows("alice", a, r), [ORDERS, AUDIT]).claims()
    assert nobody["pub"] == {"deny": [">"]}  # an empty allow would mean "everything"
    assert "_LIFTLOG.>" in grant.claims()["pub"]["deny"]
    assert "$SYS.>" in grant.claims()["sub"]["deny"]


def test_the_answer_is_a_user_signed_by_the_issuer_with_the_principals_grant(
    tmp_path: Path,
) -> None:
    auth, texts = _auth(tmp_path, [_acl("bob", Action.PUBLISH, "stream:orders")])
    responder = _responder(tmp_path, auth, [ORDERS])
    for connect in ({"user": "bob", "pass": texts["bob"]}, {"auth_token": texts["bob"]}):
        request, user_key = _request(connect)
        answer = nats_jwt.decode(responder.answer(request), nkeys.PREFIX_BYTE_ACCOUNT)
        assert answer["iss"] == responder.issuer
        assert (answer["sub"], answer["aud"]) == (user_key, SERVER_ID)
        user = nats_jwt.decode(answer["nats"]["jwt"], nkeys.PREFIX_BYTE_ACCOUNT)
        assert (user["sub"], user["aud"], user["name"]) == (user_key, "LIFTLOG", "bob")
        assert user["nats"]["pub"]["allow"] == ["orders", "orders.1", "orders.2"]


@pytest.mark.parametrize(
    ("connect", "reason"),
    [
        ({}, "no Liftlog token"),
        ({"auth_token": "llt_0000000000000000_guess"}, "invalid, unknown or revoked"),
        ({"user": "alice", "pass": "BOB"}, "is not the token's principal"),
    ],
)
def test_a_refused_login_is_an_error_answer(tmp_path: Path, connect: dict, reason: str) -> None:
    auth, texts = _auth(tmp_path, [])
    connect = {k: texts["bob"] if v == "BOB" else v for k, v in connect.items()}
    request, _ = _request(connect)
    answer = nats_jwt.decode(
        _responder(tmp_path, auth, []).answer(request), nkeys.PREFIX_BYTE_ACCOUNT
    )
    assert reason in answer["nats"]["error"] and "jwt" not in answer["nats"]


def test_a_request_not_signed_by_a_server_is_not_answered(tmp_path: Path) -> None:
    auth, _ = _auth(tmp_path, [])
    forged = nats_jwt.encode({"sub": "x", "nats": {}}, nats_jwt.new_account_seed())
    with pytest.raises(nats_jwt.NatsJwtError):
        _responder(tmp_path, auth, []).answer(forged)


def test_which_changes_disconnect_open_connections() -> None:
    old, new = NatsGrant(("orders",), (INBOX_SUBJECTS,)), NatsGrant((), (INBOX_SUBJECTS,))
    before = Rights(old, frozenset({"t1"}))
    assert not rights_changed(None, set(), Rights(old, frozenset({"t1"})))  # a new principal
    assert not rights_changed(before, set(), Rights(old, frozenset({"t1", "t2"})))  # new token
    assert rights_changed(before, set(), Rights(new, frozenset({"t1"})))  # grant changed
    assert rights_changed(before, set(), Rights(old, frozenset({"t2"})))  # t1 revoked
    assert rights_changed(before, set(), None)  # every token gone
    # granted and taken away again between two looks: the login granted in between counts
    assert rights_changed(None, {(old, "t1")}, Rights(new, frozenset({"t1"})))
    assert not rights_changed(None, {(new, "")}, Rights(new, frozenset()))  # bootstrap token


def test_the_node_refuses_a_named_principal_without_publish(tmp_path: Path) -> None:
    auth, _ = _auth(tmp_path, [_acl("bob", Action.PUBLISH, "stream:orders")])
    assert publish_refusal(auth, "orders", "bob") is None
    refusal = publish_refusal(auth, "orders", "alice")
    assert isinstance(refusal, ForbiddenError) and "alice" in refusal.message


def test_the_config_is_checked_when_loaded(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        NatsAuthConfig(issuer_seed_file=str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="together"):
        NatsAuthConfig(system_user="sys")
    not_a_seed = tmp_path / "seed"
    not_a_seed.write_text("SUAEXAMPLE")
    with pytest.raises(ConfigError, match="account seed"):
        NatsAuthConfig(issuer_seed_file=str(not_a_seed)).issuer_seed()
    assert not NatsAuthConfig().enabled


def test_logins_are_remembered_with_the_tokens_that_can_be_revoked(tmp_path: Path) -> None:
    """A bootstrap token shaped like a stored one is no stored token: counting its id as
    revoked would disconnect every admin connection at every check."""
    bootstrap = new_token().text
    auth = NodeAuth(AuthConfig(enabled=True, bootstrap_token=bootstrap), None)  # type: ignore[arg-type]
    stored = new_token()
    record = TokenRecord(stored.token_id, "bob", stored.sha256, 0)
    auth.cache._snapshot = AuthSnapshot({stored.token_id: record}, ())
    auth.cache._refreshed_at = time.monotonic()
    responder = _responder(tmp_path, auth, [])
    responder.authorize({"auth_token": bootstrap})
    responder.authorize({"user": "bob", "pass": stored.text})
    issued = responder.take_issued()
    assert {t for _g, t in issued["admin"]} == {""}
    assert {t for _g, t in issued["bob"]} == {stored.token_id}
    assert responder.take_issued() == {}
