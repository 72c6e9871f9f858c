"""NATS subject matching, for deciding which streams record a published subject.

``*`` matches exactly one token and ``>`` one or more trailing tokens, as nats-server does.
"""

from __future__ import annotations

TOKEN_SEPARATOR = "."
SINGLE_TOKEN_WILDCARD = "*"
TAIL_WILDCARD = ">"


def subject_matches(pattern: str, subject: str) -> bool:
    """True when a subscription on ``pattern`` receives a message published on ``subject``."""
    wanted = pattern.split(TOKEN_SEPARATOR)
    tokens = subject.split(TOKEN_SEPARATOR)
    for i, token in enumerate(wanted):
        if token == TAIL_WILDCARD:
            return len(tokens) > i
        if i >= len(tokens) or (token != SINGLE_TOKEN_WILDCARD and token != tokens[i]):
            return False
    return len(tokens) == len(wanted)
