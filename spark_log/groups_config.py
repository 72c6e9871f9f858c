"""The ``[groups]`` table of a node config: consumer group session bounds (KIP-848's
``group.consumer.min/max.session.timeout.ms`` and heartbeat interval).

A member asks for a session timeout when it joins (``session_timeout_ms``); the coordinator
refuses one outside ``[min_session_timeout_ms, max_session_timeout_ms]``, and answers every
join and heartbeat with the interval at which the member should heartbeat.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_log.errors import ConfigError

DEFAULT_MIN_SESSION_TIMEOUT_MS = 3_000
DEFAULT_MAX_SESSION_TIMEOUT_MS = 300_000
DEFAULT_SESSION_TIMEOUT_MS = 45_000
DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000


@dataclass(frozen=True)
class GroupsConfig:
    """``session_timeout_ms``: a member's session when it does not ask for one. The
    heartbeat interval a member is told is ``heartbeat_interval_ms``, capped at a third of
    its session timeout."""

    min_session_timeout_ms: int = DEFAULT_MIN_SESSION_TIMEOUT_MS
    max_session_timeout_ms: int = DEFAULT_MAX_SESSION_TIMEOUT_MS
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS

    def __post_init__(self) -> None:
        if self.min_session_timeout_ms < 1:
            raise ConfigError("groups.min_session_timeout_ms must be >= 1")
        if self.max_session_timeout_ms < self.min_session_timeout_ms:
            raise ConfigError("groups.max_session_timeout_ms must be >= min_session_timeout_ms")
        if not (
            self.min_session_timeout_ms <= self.session_timeout_ms <= self.max_session_timeout_ms
        ):
            raise ConfigError(
                "groups.session_timeout_ms must be within "
                "[min_session_timeout_ms, max_session_timeout_ms]"
            )
        if self.heartbeat_interval_ms < 1:
            raise ConfigError("groups.heartbeat_interval_ms must be >= 1")
