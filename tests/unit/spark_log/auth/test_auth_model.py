"""Tokens and the authorization rule (pure logic)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_log.auth import (
    IMPLIES,
    AclEntry,
    Action,
    Permission,
    authorize,
    digest_matches,
    granting_actions,
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


@pytest.mark.parametrize("action", ["consume", "publish", "delete", "alter"])
def test_using_a_stream_implies_describing_it(action: str) -> None:
    acls = [_acl("bob", action, "stream:orders-*")]
    assert authorize("bob", Action.DESCRIBE, "stream:orders-eu", acls, ())
    assert not authorize("bob", Action.DESCRIBE, "stream:audit", acls, ())
    assert not authorize("carol", Action.DESCRIBE, "stream:orders-eu", acls, ())


@pytest.mark.parametrize("action", ["create", "pause", "resume", "flush", "describe"])
def test_other_actions_imply_nothing(action: str) -> None:
    acls = [_acl("bob", action, "stream:s")]
    others = set(Action) - {Action(action)}
    assert not any(authorize("bob", other, "stream:s", acls, ()) for other in others)


def test_consume_implies_nothing_but_describe() -> None:
    acls = [_acl("bob", "consume", "stream:s")]
    allowed = {a for a in Action if authorize("bob", a, "stream:s", acls, ())}
    assert allowed == {Action.CONSUME, Action.DESCRIBE}


def test_a_deny_of_describe_wins_over_the_implied_allow() -> None:
    acls = [_acl("bob", "consume", "stream:*"), _acl("*", "describe", "stream:secret", "deny")]
    assert authorize("bob", Action.CONSUME, "stream:secret", acls, ())
    assert not authorize("bob", Action.DESCRIBE, "stream:secret", acls, ())
    assert authorize("bob", Action.DESCRIBE, "stream:public", acls, ())


def test_a_deny_names_its_own_action_only() -> None:
    """As in Kafka: denying consume takes consume away, not the describe its allow implies."""
    acls = [_acl("bob", "consume", "stream:s"), _acl("bob", "consume", "stream:s", "deny")]
    assert not authorize("bob", Action.CONSUME, "stream:s", acls, ())
    assert authorize("bob", Action.DESCRIBE, "stream:s", acls, ())


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
    allowing = [a for a in IMPLIES if action in IMPLIES[a]] + [action]
    allows = any(
        a.permission == Permission.ALLOW and a.matches(principal, b, resource)
        for a in acls
        for b in allowing
    )
    denied = any(
        a.permission == Permission.DENY and a.matches(principal, action, resource) for a in acls
    )
    expected = allows and not denied
    assert set(allowing) == granting_actions(action)
    assert authorize(principal, action, resource, acls, ()) == expected
    assert authorize(principal, action, resource, acls, (principal,))
