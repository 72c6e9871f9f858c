"""Calls to other nodes run on their own threads, never in the loop's default executor."""

from __future__ import annotations

import threading

import pytest

from ingest.peer_calls import call_peer
from spark_log.errors import UnavailableError


def _thread_name(suffix: str) -> str:
    return threading.current_thread().name + suffix


def _refuse() -> None:
    raise UnavailableError("the peer is gone")


async def test_a_peer_call_runs_on_a_peer_thread_and_returns_its_value():
    assert (await call_peer(_thread_name, "!")).startswith("liftlog-peer")
    assert (await call_peer(_thread_name, suffix="?")).endswith("?")


async def test_a_peer_call_raises_what_the_call_raised():
    with pytest.raises(UnavailableError, match="gone"):
        await call_peer(_refuse)
