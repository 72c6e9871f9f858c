"""Tokens and the authorization rule (pure logic)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_log.auth import (
    AclEntry,
    Action,
    Permission,
    authorize,
    digest_matches,
    new_token,
    parse_token,
    stream_resource,
)
from spark_log.errors import InvalidRequestError


def test_token_round_trips_and_hides_its_secret() -> None:
    token = new_token()
    assert parse_token(token.text) == token
    assert token.secret not in repr(token)
    assert digest_matches(token.secret, token.sha256)
    assert not digest_matches(token.secret + "x", token.sha256)


@given(st.text())
def test_parse_token_never_crashes_and_only_takes_the_format(text: str) -> None:
    parsed = parse_token(text)
    if parsed is not None:
        assert parsed.text == text and text.startswith("llt_")


@pytest.mark.parametrize("text", ["", "llt_", "llt__secret", "llt_id_", "xyz_id_secret", "abc"])
def test_malformed_tokens_are_refused(text: str) -> None:
    assert parse_token(text) is None


def _acl(principal: str, action: str, resource: str, permission: str = "allow") -> AclEntry:
    return AclEntry("id", principal, Action(action), resource, Permission(permission))


def test_deny_by_default_and_super_users_may_do_all() -> None:
    assert not authorize("alice", Action.PUBLISH, stream_resource("s"), [], ())
    assert authorize("admin", Action.AUTH_ADMIN, "cluster", [], ("admin",))


def test_glob_allow_and_deny_wins() -> None:
    acls = [
        _acl("alice", "publish", "stream:orders-*"),
        _acl("*", "publish", "stream:orders-secret", "deny"),
    ]
    assert authorize("alice", Action.PUBLISH, "stream:orders-eu", acls, ())
    assert not authorize("alice", Action.PUBLISH, "stream:orders-secret", acls, ())
    assert not authorize("alice", Action.CONSUME, "stream:orders-eu", acls, ())
    assert not authorize("bob", Action.PUBLISH, "stream:orders-eu", acls, ())


def test_cluster_resource_matches_only_itself() -> None:
    acls = [_acl("ops", "describe", "cluster")]
    assert authorize("ops", Action.DESCRIBE, "cluster", acls, ())
    assert not authorize("ops", Action.DESCRIBE, "stream:cluster", acls, ())
    streams_only = [_acl("ops", "describe", "stream:*")]
    assert not authorize("ops", Action.DESCRIBE, "cluster", streams_only, ())


@pytest.mark.parametrize(
    ("principal", "action", "resource", "permission"),
    [
        ("", "publish", "stream:a", "allow"),
        ("a b", "publish", "stream:a", "allow"),
        ("alice", "fly", "stream:a", "allow"),
        ("alice", "publish", "topic:a", "allow"),
        ("alice", "publish", "stream:", "allow"),
        ("alice", "publish", "stream:a", "maybe"),
    ],
)
def test_invalid_entries_are_refused(
    principal: str, action: str, resource: str, permission: str
) -> None:
    with pytest.raises(InvalidRequestError):
        AclEntry("id", principal, action, resource, permission)  # type: ignore[arg-type]


names = st.text(alphabet="abc-", min_size=1, max_size=4)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["alice", "bob", "*"]),
            st.sampled_from(list(Action)),
            st.one_of(st.just("cluster"), names.map(stream_resource), st.just("stream:*")),
            st.sampled_from(list(Permission)),
        ),
        max_size=6,
    ),
    st.sampled_from(["alice", "bob"]),
    st.sampled_from(list(Action)),
    st.one_of(st.just("cluster"), names.map(stream_resource)),
)
def test_authorize_is_exactly_allow_and_no_deny(
    rows: list[tuple[str, Action, str, Permission]],
    principal: str,
    action: Action,
    resource: str,
) -> None:
    acls = [AclEntry(f"id{i}", *row) for i, row in enumerate(rows)]
    matching = [a for a in acls if a.matches(principal, action, resource)]
    expected = any(a.permission == Permission.ALLOW for a in matching) and not any(
        a.permission == Permission.DENY for a in matching
    )
    assert authorize(principal, action, resource, acls, ()) == expected
    assert authorize(principal, action, resource, acls, (principal,))
