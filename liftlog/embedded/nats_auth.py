"""nats-server authorization and TLS for a secured stack: who may publish and subscribe where.

Two kinds of users:

- **node** users (the ingest nodes) subscribe to everything (a stream may record any subject,
  and the replication wire lives under ``_LIFTLOG.>``) but publish only on ``_LIFTLOG.>``
  (fetch and epoch requests, and their responses: a node's own reply inboxes are
  ``_LIFTLOG.<cluster>.inbox.…``) and ``_INBOX.>`` (acks on publishers' reply inboxes).
- **publisher** users (applications, ``liftlog publish``, the Spark sink) publish on the
  streams' subjects only (``publisher_subjects``, ``>`` by default) and never on ``_LIFTLOG.>``
  (no forged fetches or fetch responses) nor ``_INBOX.>`` (no acks in a node's name); they
  subscribe to ``_INBOX.>`` only, so they receive their acks but not the replication traffic
  (requests and responses all under ``_LIFTLOG.>``) nor the streams' raw messages. They do
  see each other's acks (no record data); a per-application ``inbox_prefix`` and subscribe
  permission would keep those apart too.

A NATS request needs nothing more: the requester publishes on the request subject (naming its
inbox as reply subject, which the server does not check against publish permissions) and
subscribes to its inbox. ``allow_responses`` (the server lets a user answer the messages it
received) is not used for nodes because the server then tracks every reply subject it
delivered with a reply until answered or expired, a per-message cost on the ingest path.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

from spark_log.errors import ConfigError
from spark_log.fetch_wire import SUBJECT_PREFIX
from spark_log.nats_config import NatsCredentials

ALL_SUBJECTS = ">"
INBOX_SUBJECTS = "_INBOX.>"
INTERNAL_SUBJECTS = f"{SUBJECT_PREFIX}.>"
# where nats-server waits for the answer to an auth callout (the nodes answer logins)
CALLOUT_REPLY_SUBJECTS = "$SYS._INBOX.>"
# the server's own APIs (JetStream, system account): never for a publisher
SERVER_API_SUBJECTS = ("$JS.>", "$JSC.>", "$KV.>", "$O.>", "$SYS.>")
DEFAULT_NODE_USER = "liftlog-node"
DEFAULT_PUBLISHER_USER = "liftlog-publisher"
DEFAULT_SYSTEM_USER = "liftlog-system"
CALLOUT_ACCOUNT = "LIFTLOG"
SYSTEM_ACCOUNT = "SYS"
GENERATED_PASSWORD_BYTES = 32


@dataclass(frozen=True)
class NatsPermissions:
    """A user's subject permissions; deny wins over allow (nats-server's rule)."""

    publish_allow: tuple[str, ...] = ()
    publish_deny: tuple[str, ...] = ()
    subscribe_allow: tuple[str, ...] = ()
    subscribe_deny: tuple[str, ...] = ()


def node_permissions() -> NatsPermissions:
    """An ingest node: subscribes to any subject, publishes requests and replies only
    (replication replies under ``_LIFTLOG.>``, acks under ``_INBOX.>``, answers to the auth
    callout under ``$SYS._INBOX.>``)."""
    return NatsPermissions(
        publish_allow=(INTERNAL_SUBJECTS, INBOX_SUBJECTS, CALLOUT_REPLY_SUBJECTS),
        subscribe_allow=(ALL_SUBJECTS,),
    )


def publisher_permissions(subjects: Sequence[str] = (ALL_SUBJECTS,)) -> NatsPermissions:
    """A publisher: ``subjects`` minus Liftlog's and the server's own, and its reply inboxes."""
    if not subjects:
        raise ConfigError("a publisher needs at least one subject pattern")
    return NatsPermissions(
        publish_allow=tuple(subjects),
        publish_deny=(INTERNAL_SUBJECTS, INBOX_SUBJECTS, *SERVER_API_SUBJECTS),
        subscribe_allow=(INBOX_SUBJECTS,),
        subscribe_deny=(INTERNAL_SUBJECTS,),
    )


@dataclass(frozen=True)
class NatsUser:
    """One entry of ``authorization.users``: a name + password, or an NKey public key."""

    permissions: NatsPermissions
    user: str = ""
    password: str = field(default="", repr=False)
    nkey: str = ""

    def __post_init__(self) -> None:
        if bool(self.user) == bool(self.nkey):
            raise ConfigError("a NATS user has either user + password or an nkey, not both")
        if self.user and not self.password:
            raise ConfigError(f"NATS user {self.user!r} needs a password")

    def render(self) -> str:
        """The user's map in nats-server's config syntax (strings JSON-quoted)."""
        who = (
            f"nkey: {_q(self.nkey)}"
            if self.nkey
            else f"user: {_q(self.user)}, password: {_q(self.password)}"
        )
        return f"{{ {who}, permissions: {_render_permissions(self.permissions)} }}"


@dataclass(frozen=True)
class NatsServerTls:
    """The server's certificate and key, the CA it trusts for clients and routes, and whether
    it demands a client certificate (``verify``: mTLS)."""

    cert_file: str
    key_file: str
    ca_file: str
    verify: bool = False

    def render(self) -> str:
        lines = [
            f"  cert_file: {_q(self.cert_file)}",
            f"  key_file: {_q(self.key_file)}",
            f"  ca_file: {_q(self.ca_file)}",
            f"  verify: {'true' if self.verify else 'false'}",
        ]
        return "{\n" + "\n".join(lines) + "\n}"


@dataclass(frozen=True)
class NatsCalloutServer:
    """Logins handed to the nodes (auth callout): ``issuer`` is the public account key the
    nodes sign their answers with; the server's ``users`` (the nodes) and ``system_user`` log
    in by password, everyone else by a Liftlog token, judged by the nodes. The nodes and the
    clients they authorize share the account ``LIFTLOG``; ``system_user`` is in the system
    account, through which the nodes disconnect clients whose rights changed."""

    issuer: str
    system_user: NatsUser

    def render(self, users: Sequence[NatsUser]) -> str:
        auth_users = [u.user or u.nkey for u in (*users, self.system_user)]
        node_users = "\n".join(f"      {u.render()}" for u in users)
        return (
            "accounts {\n"
            f"  {CALLOUT_ACCOUNT}: {{\n    users = [\n{node_users}\n    ]\n  }}\n"
            f"  {SYSTEM_ACCOUNT}: {{ users = [ {self.system_user.render()} ] }}\n"
            "}\n"
            f"system_account: {SYSTEM_ACCOUNT}\n"
            "authorization {\n  auth_callout {\n"
            f"    issuer: {_q(self.issuer)}\n    account: {CALLOUT_ACCOUNT}\n"
            f"    auth_users: {_list(auth_users)}\n  }}\n}}\n"
        )


@dataclass(frozen=True)
class NatsServerSecurity:
    """What a secured nats-server adds to its config: TLS, and users with permissions or one
    shared ``token`` (nats-server's single-token mode: whoever has it may do everything, so
    it suits a deployment with nodes only, never one with publishers to keep apart). With
    ``callout``, ``users`` are the nodes and every other login is judged by them."""

    users: tuple[NatsUser, ...] = ()
    tls: NatsServerTls | None = None
    token: str = field(default="", repr=False)
    callout: NatsCalloutServer | None = None

    def __post_init__(self) -> None:
        if self.users and self.token:
            raise ConfigError("nats-server authorization takes users or a token, not both")
        if self.callout and not self.users:
            raise ConfigError("an auth callout needs the nodes' users, which answer it")

    def config_text(self) -> str:
        """The ``tls`` and ``authorization`` blocks (empty when nothing is set)."""
        text = f"tls {self.tls.render()}\n" if self.tls else ""
        if self.callout:
            text += self.callout.render(self.users)
        elif self.users:
            users = "\n".join(f"    {u.render()}" for u in self.users)
            text += f"authorization {{\n  users = [\n{users}\n  ]\n}}\n"
        if self.token:
            text += f"authorization {{\n  token: {_q(self.token)}\n}}\n"
        return text


@dataclass(frozen=True)
class SecureNats:
    """A secured server's settings and the credentials to hand out: ``node`` for the ingest
    nodes' ``[nats]`` table, ``publisher`` for clients (``LIFTLOG_NATS_*``)."""

    security: NatsServerSecurity
    node: NatsCredentials
    publisher: NatsCredentials
    system: NatsCredentials | None = None


@dataclass(frozen=True)
class CalloutSecrets:
    """What a stack with token logins keeps across restarts: the nodes' and the system
    user's passwords and the public key of the issuer the nodes sign logins with."""

    node_password: str = field(repr=False)
    system_password: str = field(repr=False)
    issuer: str


def callout_nats(
    tls: NatsServerTls | None, secrets_: CalloutSecrets, publisher: NatsCredentials
) -> SecureNats:
    """A server whose logins, but the nodes' and the system user's, are Liftlog tokens
    judged by the nodes (auth callout). ``publisher`` is what clients log in with (a token)."""
    node = NatsCredentials(user=DEFAULT_NODE_USER, password=secrets_.node_password)
    system = NatsCredentials(user=DEFAULT_SYSTEM_USER, password=secrets_.system_password)
    everything = NatsPermissions(publish_allow=(ALL_SUBJECTS,), subscribe_allow=(ALL_SUBJECTS,))
    callout = NatsCalloutServer(secrets_.issuer, NatsUser(everything, system.user, system.password))
    users = (NatsUser(node_permissions(), node.user, node.password),)
    ca = {"tls_ca_file": tls.ca_file} if tls else {}
    return SecureNats(
        NatsServerSecurity(users, tls, callout=callout),
        dataclasses.replace(node, **ca),
        dataclasses.replace(publisher, **ca),
        dataclasses.replace(system, **ca),
    )


def secure_nats(
    tls: NatsServerTls | None, publisher_subjects: Sequence[str] = (ALL_SUBJECTS,)
) -> SecureNats:
    """A node user and a publisher user with fresh random passwords, and TLS when given.

    With TLS both credentials trust the server's CA; when ``tls.verify`` asks clients for a
    certificate, give each node its own with ``with_client_cert``.
    """
    node = NatsCredentials(user=DEFAULT_NODE_USER, password=generated_password())
    publisher = NatsCredentials(user=DEFAULT_PUBLISHER_USER, password=generated_password())
    users = (
        NatsUser(node_permissions(), node.user, node.password),
        NatsUser(publisher_permissions(publisher_subjects), publisher.user, publisher.password),
    )
    ca = {"tls_ca_file": tls.ca_file} if tls else {}
    return SecureNats(
        NatsServerSecurity(users, tls),
        dataclasses.replace(node, **ca),
        dataclasses.replace(publisher, **ca),
    )


def with_client_cert(
    credentials: NatsCredentials, cert_file: str, key_file: str
) -> NatsCredentials:
    """``credentials`` presenting a client certificate (for a server with ``verify``)."""
    return dataclasses.replace(credentials, tls_cert_file=cert_file, tls_key_file=key_file)


def generated_password() -> str:
    """A random password (URL-safe, so it needs no quoting anywhere)."""
    return secrets.token_urlsafe(GENERATED_PASSWORD_BYTES)


def _render_permissions(permissions: NatsPermissions) -> str:
    publish = _render_rule(permissions.publish_allow, permissions.publish_deny)
    subscribe = _render_rule(permissions.subscribe_allow, permissions.subscribe_deny)
    return f"{{ publish: {publish}, subscribe: {subscribe} }}"


def _render_rule(allow: Sequence[str], deny: Sequence[str]) -> str:
    """An allow/deny map; an empty list is left out (an empty ``allow`` would mean nothing
    to nats-server, which reads a missing one as "everything not denied")."""
    rules = (("allow", allow), ("deny", deny))
    return "{ " + ", ".join(f"{name}: {_list(s)}" for name, s in rules if s) + " }"


def _list(subjects: Sequence[str]) -> str:
    return "[" + ", ".join(_q(s) for s in subjects) + "]"


def _q(value: str) -> str:
    """A quoted string nats-server's parser reads back unchanged."""
    return json.dumps(value)
