"""Tokens and ACLs in a real ZooKeeper: what is stored, and a second session's cache
following every change through its watches."""

from __future__ import annotations

import pytest

from coordinator import auth_store
from coordinator.auth_store import AuthCache
from coordinator.znodes import ACLS_PATH, AUTH_TOKENS_PATH
from spark_log.auth import Action, Permission, parse_token
from spark_log.errors import AclNotFoundError, InvalidRequestError, TokenNotFoundError
from tests.support.waiting import wait_for


def test_a_token_is_stored_as_a_digest_and_revoked_once(zk_session):
    issued, record = auth_store.create_token(zk_session, "alice", "ci", 1000)
    data, _version = zk_session.get_json(auth_store.token_path(issued.token_id))
    assert data == {
        "version": 1,
        "principal": "alice",
        "sha256": issued.sha256,
        "created_ms": 1000,
        "description": "ci",
    }
    assert issued.secret not in str(data)
    assert parse_token(issued.text) == issued
    assert auth_store.list_tokens(zk_session) == [record]
    auth_store.revoke_token(zk_session, issued.token_id)
    with pytest.raises(TokenNotFoundError):
        auth_store.revoke_token(zk_session, issued.token_id)
    with pytest.raises(TokenNotFoundError):
        auth_store.revoke_token(zk_session, "../acls")


def test_acls_are_checked_before_they_are_stored(zk_session):
    entry = auth_store.add_acl(zk_session, "bob", "consume", "stream:o-*", "deny")
    assert (entry.action, entry.permission) == (Action.CONSUME, Permission.DENY)
    with pytest.raises(InvalidRequestError):
        auth_store.add_acl(zk_session, "bob", "consume", "topic:o", "allow")
    assert auth_store.list_acls(zk_session) == [entry]
    auth_store.remove_acl(zk_session, entry.acl_id)
    with pytest.raises(AclNotFoundError):
        auth_store.remove_acl(zk_session, entry.acl_id)


def test_adding_an_acl_that_exists_returns_it_and_stores_nothing(zk_session):
    first = auth_store.add_acl(zk_session, "dave", "publish", "stream:p-*", "allow")
    again = auth_store.add_acl(zk_session, "dave", "publish", "stream:p-*", "allow")
    denied = auth_store.add_acl(zk_session, "dave", "publish", "stream:p-*", "deny")
    assert again == first
    assert denied.acl_id != first.acl_id
    assert sorted(a.acl_id for a in auth_store.list_acls(zk_session)) == sorted(
        [first.acl_id, denied.acl_id]
    )


def test_another_sessions_cache_follows_every_change(zk_session, make_zk_session):
    cache = AuthCache(make_zk_session())
    cache.start()
    try:
        snapshot = cache.snapshot
        assert snapshot is not None and not snapshot.tokens and not snapshot.acls
        issued, _ = auth_store.create_token(zk_session, "carol", "", 1)
        entry = auth_store.add_acl(zk_session, "carol", "publish", "stream:a", "allow")
        # a znode no reader understands is skipped, not fatal
        zk_session.create_json(f"{ACLS_PATH}/0bad", {"version": 99})
        wait_for(
            lambda: issued.token_id in cache.snapshot.tokens and cache.snapshot.acls == (entry,),
            message="the cache to see the new token and ACL",
        )
        auth_store.revoke_token(zk_session, issued.token_id)
        auth_store.remove_acl(zk_session, entry.acl_id)
        wait_for(
            lambda: not cache.snapshot.tokens and not cache.snapshot.acls,
            message="the cache to drop them",
        )
    finally:
        cache.stop()


def _malformed_acl() -> dict:
    return {"version": 1, "principal": 7, "action": "publish", "resource": "stream:a",
            "permission": "deny"}  # fmt: skip


def test_malformed_znodes_neither_stop_the_cache_nor_fail_open(zk_session, make_zk_session):
    cache = AuthCache(make_zk_session())
    cache.start()
    try:
        issued, _ = auth_store.create_token(zk_session, "dave", "", 1)
        # fields of the wrong type: once a TypeError that killed the refresher
        zk_session.create_json(
            f"{AUTH_TOKENS_PATH}/0bad1",
            {"version": 1, "principal": ["x"], "sha256": 1, "created_ms": "no", "description": 2},
        )
        zk_session.create_json(f"{ACLS_PATH}/0bad2", _malformed_acl())
        wait_for(
            lambda: (
                issued.token_id in cache.snapshot.tokens
                and cache.snapshot.unreadable_acls == ("0bad2",)
            ),
            message="the cache to read the good token and name the unreadable ACL",
        )
        assert "0bad1" not in cache.snapshot.tokens
        auth_store.revoke_token(zk_session, issued.token_id)
        wait_for(
            lambda: issued.token_id not in cache.snapshot.tokens,
            message="a later revocation to reach the cache",
        )
        auth_store.remove_acl(zk_session, "0bad2")
        wait_for(lambda: not cache.snapshot.unreadable_acls, message="the bad ACL to go")
    finally:
        cache.stop()
