"""Wait, online, until a stream's replicas agree before the stack is stopped for the drain.

A scenario that stops the stack while followers still fetch would drain replicas that differ
for no fault of the system. Quiescent here means, for every partition, each replica's own
view (``GET /v1/streams/{s}/partitions/{p}`` on its broker) has LEO == HW == the leader's LEO.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from tests.support.waiting import wait_for

QUIESCENCE_TIMEOUT_S = 30.0
QUIESCENCE_POLL_S = 0.1
REST_TIMEOUT_S = 5.0


def _get(url: str, path: str) -> dict[str, Any] | None:
    """The JSON body, or None when the broker does not answer (it is part of the wait)."""
    try:
        resp = httpx.get(url + path, timeout=REST_TIMEOUT_S)
    except httpx.HTTPError:
        return None
    return resp.json() if resp.status_code == 200 else None


def _partition_settled(api_urls: Mapping[int, str], stream: str, state: dict[str, Any]) -> bool:
    leader = state["leader"]
    if leader not in api_urls or state.get("offline"):
        return False
    path = f"/v1/streams/{stream}/partitions/{state['partition']}"
    views = [_get(api_urls[b], path) for b in state["replicas"] if b in api_urls]
    if any(v is None for v in views) or len(views) != len(state["replicas"]):
        return False
    leader_view = next(v for v in views if v is not None and v["broker"] == leader)
    target = leader_view["log_end_offset"]
    return all(
        v is not None and v["log_end_offset"] == v["high_watermark"] == target for v in views
    )


def is_quiescent(api_urls: Mapping[int, str], stream: str) -> bool:
    """Whether every partition's replicas all have LEO == HW == the leader's LEO right now."""
    for url in api_urls.values():
        described = _get(url, f"/v1/streams/{stream}")
        if described is not None:
            return all(_partition_settled(api_urls, stream, p) for p in described["partitions"])
    return False


def wait_quiescent(
    api_urls: Mapping[int, str], stream: str, timeout_s: float = QUIESCENCE_TIMEOUT_S
) -> None:
    """Poll until ``is_quiescent`` (AssertionError after ``timeout_s``); ``api_urls`` maps
    broker id to its REST URL."""
    wait_for(
        lambda: is_quiescent(api_urls, stream),
        timeout_s,
        QUIESCENCE_POLL_S,
        message=f"every replica of {stream} at LEO == HW == the leader's LEO",
    )
