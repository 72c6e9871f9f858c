"""The group RPCs' argument checks and the caller's address, without a node."""

from __future__ import annotations

import pytest

from ingest.liftbridge.groups import _peer_host, _require_member
from spark_log.errors import InvalidRequestError


@pytest.mark.parametrize(
    ("peer", "host"),
    [
        ("ipv4:127.0.0.1:5555", "127.0.0.1"),
        ("ipv6:[::1]:5555", "::1"),
        ("unix:/tmp/sock", None),
        ("", None),
    ],
)
def test_the_peer_host(peer: str, host: str | None) -> None:
    assert _peer_host(peer) == host


@pytest.mark.parametrize(
    ("group", "consumer"),
    [("", "c"), ("g", ""), ("g", "a/b"), ("g", "x" * 257), ("g", "tab\there"), ("a/b", "c")],
)
def test_missing_or_unusable_ids_are_invalid(group: str, consumer: str) -> None:
    with pytest.raises(InvalidRequestError):
        _require_member(group, consumer)
