"""The REST API fuzzed from its own OpenAPI document on a real node (schemathesis): no 5xx, every
status documented, every body matching its schema. Three ways in: a node with auth off, a node
with auth on called with the admin token, and the same node called without a credential, where
every route but the probes and the API description must answer a conforming 401.

``LIFTLOG_FUZZ=deep`` (``make fuzz``) sends many more cases per operation.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from schemathesis import GenerationMode

from ingest.api.route_acl import OPEN_PATHS  # what anyone may read without a credential
from liftlog.embedded.node import NodeProcess
from spark_log.auth_config import AuthConfig
from spark_log.config import IngestConfig
from tests.integration.conftest import _node_factory
from tests.support.api_fuzz import fuzz_operations, load_schema

# long: run by make fuzz (and make test-slow), not make test
pytestmark = [pytest.mark.slow, pytest.mark.fuzz]

TOKEN = "fuzz-admin-token-0123456789abcdef"
DEEP = os.environ.get("LIFTLOG_FUZZ", "") == "deep"
EXAMPLES_PER_OPERATION = int(os.environ.get("LIFTLOG_FUZZ_API_EXAMPLES", "300" if DEEP else "30"))
STREAMS = {"fz-one": 1, "fz-two": 2}
FETCH_WAIT_MAX_MS = 200  # a generated wait_ms must not hold a case for 30 s
# operations that remove what later ones use go last
LAST = ("DELETE", "/v1/cluster/controlled-shutdown", "/v1/cluster/decommission")


def _start(request: pytest.FixtureRequest, auth: AuthConfig) -> Iterator[NodeProcess]:
    zookeeper = request.getfixturevalue("zookeeper")
    nats_server = request.getfixturevalue("nats_server")
    root: Path = request.getfixturevalue("tmp_path_factory").mktemp("fuzz")
    factory = _node_factory(
        zookeeper,
        nats_server,
        root,
        f"/liftlog-fuzz-{uuid.uuid4().hex[:12]}",
        request.getfixturevalue("secure_material"),
    )
    make = next(factory)
    yield make(1, auth=auth, ingest=IngestConfig(max_wait_ms=FETCH_WAIT_MAX_MS))
    next(factory, None)


@pytest.fixture(scope="module")
def open_node(request: pytest.FixtureRequest) -> Iterator[NodeProcess]:
    yield from _start(request, AuthConfig(enabled=False))


@pytest.fixture(scope="module")
def secured_node(request: pytest.FixtureRequest) -> Iterator[NodeProcess]:
    yield from _start(request, AuthConfig(enabled=True, bootstrap_token=TOKEN))


def _admin_headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def _ensure_streams(api_url: str, headers: dict[str, str]) -> None:
    """The streams cases aim at exist again (a DELETE case may have removed one), with their
    spec (an alter case may have changed it: such a stream is created afresh), resumed and
    writable."""
    with httpx.Client(base_url=api_url, headers=headers, timeout=30) as client:
        for name, partitions in STREAMS.items():
            body = {"name": name, "subject": f"{name}.in", "partitions": partitions}
            created = client.post("/v1/streams", json=body)
            if created.status_code == 409:
                client.delete(f"/v1/streams/{name}")
                created = client.post("/v1/streams", json=body)
            assert created.status_code in (200, 201), created.text
            client.post(f"/v1/streams/{name}/resume")
            client.post(f"/v1/streams/{name}/readwrite")
            if created.status_code == 201:
                records = {"records": [{"key": "k", "value": "v"}] * 3}
                published = client.post(
                    f"/v1/streams/{name}/partitions/0/records",
                    json=records,
                    params={"encoding": "utf-8", "ack_policy": "leader"},
                )
                assert published.status_code == 200, published.text


def _order(operation: Any) -> tuple[int, str]:
    last = operation.method.upper() in LAST or operation.path in LAST
    return (1 if last else 0, operation.label)


def _no_auth_refusal(_case: Any, response: Any) -> str | None:
    if response.status_code in (401, 403):
        return f"an authorized caller was refused with {response.status_code}"
    return None


def _must_be_401(case: Any, response: Any) -> str | None:
    if case.path in OPEN_PATHS:
        return None
    if response.status_code != 401:
        return f"no credential, yet {response.status_code} instead of 401"
    if response.json().get("error", {}).get("code") != "unauthenticated":
        return f"401 without the error body: {response.text[:200]}"
    return None


def _run(
    node: NodeProcess,
    headers: dict[str, str],
    extra_check: Any,
    setup: Any,
    modes: tuple[GenerationMode, ...] = tuple(GenerationMode),
) -> None:
    schema = load_schema(node.api_url, headers)
    report = fuzz_operations(
        schema,
        node.api_url,
        headers=headers,
        examples_per_operation=EXAMPLES_PER_OPERATION,
        path_parameters={"stream": "fz-one", "partition": 0},
        extra_check=extra_check,
        before_operation=setup,
        operation_order=_order,
        modes=modes,
        derandomize=not DEEP,  # the same cases in `make test`; new ones in every deep run
    )
    print(f"\nschemathesis: {report.summary()}")  # the run's size, for the record
    assert report.operations > 0 and report.cases >= report.operations
    failures = "\n".join(f"{op}:\n  " + "\n  ".join(found) for op, found in report.failures.items())
    assert not report.failures, f"{len(report.failures)} operations failed:\n{failures}"


def test_api_fuzz_with_auth_disabled(open_node):
    _run(open_node, {}, _no_auth_refusal, lambda: _ensure_streams(open_node.api_url, {}))


def test_api_fuzz_with_the_admin_token(secured_node):
    headers = _admin_headers()
    _run(
        secured_node,
        headers,
        _no_auth_refusal,
        lambda: _ensure_streams(secured_node.api_url, headers),
    )


def test_api_fuzz_without_a_credential_is_401_everywhere(secured_node):
    _ensure_streams(secured_node.api_url, _admin_headers())
    _run(secured_node, {}, _must_be_401, None, (GenerationMode.POSITIVE,))


def test_api_fuzz_without_a_credential_and_malformed_bodies_is_401_everywhere(secured_node):
    _run(secured_node, {}, _must_be_401, None, (GenerationMode.NEGATIVE,))
