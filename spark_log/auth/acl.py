"""ACL entries and the authorization rule: principal x action x resource, deny by default.

An entry names a principal (exact, or ``*`` for every authenticated principal), an action,
a resource pattern (``cluster``, or ``stream:<glob>`` with fnmatch globs: ``stream:orders-*``)
and ``allow`` or ``deny``. As in Kafka, a matching deny wins over any allow, and with no
matching allow the answer is no. Super users (Kafka's ``super.users``) skip the ACLs. An allow
of an action that reads or changes a stream also allows ``describe`` on it (``IMPLIES``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from spark_log.auth.tokens import check_principal
from spark_log.errors import InvalidRequestError

CLUSTER_RESOURCE = "cluster"
STREAM_RESOURCE_PREFIX = "stream:"
SCHEMA_RESOURCE_PREFIX = "schema:"
ANY_PRINCIPAL = "*"


class Action(StrEnum):
    """What a route does, in Liftbridge's words mapped to Liftlog's routes."""

    CREATE = "create"
    DELETE = "delete"
    ALTER = "alter"
    PAUSE = "pause"
    RESUME = "resume"
    FLUSH = "flush"
    PUBLISH = "publish"
    CONSUME = "consume"
    DESCRIBE = "describe"
    CLUSTER_ADMIN = "cluster_admin"
    AUTH_ADMIN = "auth_admin"


class Permission(StrEnum):
    ALLOW = "allow"
    DENY = "deny"


# Kafka's READ, WRITE, DELETE and ALTER imply DESCRIBE: whoever may use a resource may see it.
IMPLIES: dict[Action, frozenset[Action]] = {
    Action.CONSUME: frozenset({Action.DESCRIBE}),
    Action.PUBLISH: frozenset({Action.DESCRIBE}),
    Action.DELETE: frozenset({Action.DESCRIBE}),
    Action.ALTER: frozenset({Action.DESCRIBE}),
}


def granting_actions(action: Action) -> frozenset[Action]:
    """The actions whose allow permits ``action``: itself and those that imply it."""
    return frozenset({action} | {a for a, implied in IMPLIES.items() if action in implied})


def stream_resource(name: str) -> str:
    """The resource a stream route acts on: ``stream:<name>``."""
    return f"{STREAM_RESOURCE_PREFIX}{name}"


def schema_resource(subject: str) -> str:
    """The resource a schema registry route acts on: ``schema:<subject>`` (Confluent's
    subject resource)."""
    return f"{SCHEMA_RESOURCE_PREFIX}{subject}"


def check_resource_pattern(pattern: str) -> None:
    """``cluster``, ``stream:<glob>`` or ``schema:<glob>`` with a non-empty glob;
    InvalidRequestError otherwise."""
    if pattern == CLUSTER_RESOURCE:
        return
    for prefix in (STREAM_RESOURCE_PREFIX, SCHEMA_RESOURCE_PREFIX):
        if pattern.startswith(prefix) and pattern[len(prefix) :]:
            return
    raise InvalidRequestError(
        f"resource {pattern!r} must be 'cluster', 'stream:<name or glob>' (stream:orders-*) "
        "or 'schema:<subject or glob>' (schema:orders-value)"
    )


@dataclass(frozen=True)
class AclEntry:
    """One rule; ``acl_id`` names it for listing and removal."""

    acl_id: str
    principal: str
    action: Action
    resource: str
    permission: Permission = Permission.ALLOW

    def __post_init__(self) -> None:
        if self.principal != ANY_PRINCIPAL:
            check_principal(self.principal)
        check_resource_pattern(self.resource)
        try:
            object.__setattr__(self, "action", Action(self.action))
            object.__setattr__(self, "permission", Permission(self.permission))
        except ValueError as exc:
            raise InvalidRequestError(
                f"{exc}; actions: {', '.join(Action)}; permissions: allow, deny"
            ) from exc

    def matches(self, principal: str, action: Action, resource: str) -> bool:
        """Whether this entry speaks about ``principal`` doing ``action`` on ``resource``."""
        return self.action == action and self.applies_to(principal, resource)

    def applies_to(self, principal: str, resource: str) -> bool:
        """Whether this entry speaks about ``principal`` and ``resource``, whatever the action."""
        return self.principal in (principal, ANY_PRINCIPAL) and resource_matches(
            self.resource, resource
        )


def resource_matches(pattern: str, resource: str) -> bool:
    """``cluster`` matches only itself; ``stream:<glob>`` matches stream resources by glob
    (case-sensitive, as stream names are)."""
    if pattern == CLUSTER_RESOURCE or resource == CLUSTER_RESOURCE:
        return pattern == resource
    return fnmatch.fnmatchcase(resource, pattern)


def authorize(
    principal: str,
    action: Action,
    resource: str,
    acls: Iterable[AclEntry],
    super_users: Iterable[str],
) -> bool:
    """Super users may do everything; otherwise a deny of ``action`` refuses, an allow of it
    or of an action implying it permits, and nothing matching refuses (deny by default). As
    in Kafka, a deny names its own action only: denying ``consume`` leaves ``describe``."""
    if principal in set(super_users):
        return True
    granting = granting_actions(action)
    allowed = False
    for entry in acls:
        if not entry.applies_to(principal, resource):
            continue
        if entry.permission == Permission.DENY:
            if entry.action == action:
                return False
        elif entry.action in granting:
            allowed = True
    return allowed
