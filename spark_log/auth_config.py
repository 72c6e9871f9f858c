"""Who may call a node's REST API: the ``[auth]`` table of a node config (docs/security.md).

Authentication is on unless a config says ``enabled = false`` in so many words: a node that
anyone reaching its port could wipe must be a deliberate choice, never a forgotten key.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spark_log.auth.tokens import check_principal
from spark_log.errors import ConfigError, InvalidRequestError

DEFAULT_SUPER_USERS = ("admin",)
# A bootstrap token is a super user's password that never expires: too short a one could be
# guessed by anyone who reaches a node's port.
MIN_BOOTSTRAP_TOKEN_LENGTH = 16


@dataclass(frozen=True)
class AuthConfig:
    """``enabled``: check credentials on every route but the health probes.
    ``bootstrap_token`` / ``bootstrap_token_file``: a credential for the principal ``admin``
    known before any token exists in ZooKeeper (secret: kept out of ``repr``).
    ``super_users``: principals allowed every action whatever the ACLs say (Kafka's
    ``super.users``)."""

    enabled: bool = True
    bootstrap_token: str = field(default="", repr=False)
    bootstrap_token_file: str = ""
    super_users: tuple[str, ...] = DEFAULT_SUPER_USERS

    def __post_init__(self) -> None:
        if self.bootstrap_token and self.bootstrap_token_file:
            raise ConfigError("auth: set bootstrap_token or bootstrap_token_file, not both")
        check_bootstrap_token(self.bootstrap_token, "auth.bootstrap_token")
        for name in self.super_users:
            try:
                check_principal(name)
            except InvalidRequestError as exc:
                raise ConfigError(f"auth.super_users: {exc.message}") from exc


def check_bootstrap_token(token: str, source: str) -> None:
    """Empty (no bootstrap token) or at least MIN_BOOTSTRAP_TOKEN_LENGTH characters; the
    message names where it came from, never the token."""
    if token and len(token) < MIN_BOOTSTRAP_TOKEN_LENGTH:
        raise ConfigError(
            f"{source} must be at least {MIN_BOOTSTRAP_TOKEN_LENGTH} characters "
            f"(got {len(token)}); generate one with: python3 -c "
            "'import secrets; print(secrets.token_urlsafe(32))'"
        )
