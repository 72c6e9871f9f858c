"""Every ``[limits]`` key on a real node: a request over a bound gets a typed error naming the
key, a request within it succeeds."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from liftlog.embedded.node import NodeProcess
from spark_log.limits_config import LimitsConfig
from tests.integration.conftest import NodeFactory, node_client

MAX_REQUEST_BYTES = 2048
LIMITS = LimitsConfig(
    max_request_bytes=MAX_REQUEST_BYTES,
    max_stream_name_length=12,
    max_streams=2,
    max_partitions_per_stream=2,
    max_partitions_total=3,
)


@pytest.fixture
def limited(make_node: NodeFactory) -> Iterator[httpx.Client]:
    node: NodeProcess = make_node(1, limits=LIMITS)
    with node_client(node.api_url, timeout=30) as client:
        yield client


def _create(api: httpx.Client, name: str, partitions: int = 1) -> httpx.Response:
    return api.post(
        "/v1/streams", json={"name": name, "subject": f"{name}.in", "partitions": partitions}
    )


def _error(resp: httpx.Response, status: int, code: str, key: str) -> None:
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert error["code"] == code
    assert key in error["message"]


def test_request_bodies_over_max_request_bytes_are_413_on_every_route(limited):
    padding = "x" * MAX_REQUEST_BYTES
    declared = limited.post("/v1/streams", json={"name": "s", "subject": padding})
    _error(declared, 413, "request_too_large", "limits.max_request_bytes")

    def chunks() -> Iterator[bytes]:  # no Content-Length: the node counts what arrives
        for _ in range(4):
            yield b"x" * (MAX_REQUEST_BYTES // 2)

    chunked = limited.post("/v1/cluster/decommission", content=chunks())
    _error(chunked, 413, "request_too_large", "limits.max_request_bytes")
    assert _create(limited, "small").status_code == 201
    publish = limited.post(
        "/v1/streams/small/partitions/0/records",
        json={"records": [{"value": padding}]},
        params={"encoding": "utf-8"},
    )
    _error(publish, 413, "request_too_large", "limits.max_request_bytes")
    within = limited.post(
        "/v1/streams/small/partitions/0/records",
        json={"records": [{"value": "ok"}]},
        params={"encoding": "utf-8", "ack_policy": "leader"},
    )
    assert within.status_code == 200, within.text


def test_stream_names_over_max_stream_name_length_are_refused(limited):
    _error(_create(limited, "n" * 13), 422, "invalid_request", "limits.max_stream_name_length")
    assert _create(limited, "n" * 12).status_code == 201


def test_partitions_over_max_partitions_per_stream_are_refused(limited):
    _error(_create(limited, "wide", 3), 422, "invalid_request", "limits.max_partitions_per_stream")
    assert _create(limited, "wide", 2).status_code == 201


def test_creates_past_max_partitions_total_and_max_streams_are_refused(limited):
    assert _create(limited, "first", 2).status_code == 201
    _error(_create(limited, "second", 2), 409, "limit_exceeded", "limits.max_partitions_total")
    assert _create(limited, "second", 1).status_code == 201
    _error(_create(limited, "third", 1), 409, "limit_exceeded", "limits.max_streams")
    assert _create(limited, "first", 2).status_code == 200  # idempotent at the limit
    assert limited.delete("/v1/streams/second").status_code == 200
    assert _create(limited, "third", 1).status_code == 201
