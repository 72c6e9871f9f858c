"""Calls of gufo-liftbridge (its own venv, tests/support/client_venvs.py) from a test.

Each call runs one operation of clients/gufo_client.py against the brokers given and returns
its result; a failure of the client becomes an AssertionError carrying the error and what the
client logged, which names the RPC and the status the node answered.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from liftlog.embedded.node import NodeProcess
from liftlog.embedded.server_group import start_together
from tests.support.client_scripts import run_client_script
from tests.support.client_venvs import GUFO_LIFTBRIDGE

SCRIPT = "gufo_client.py"
SCRIPT_SLACK_S = 15.0
"""A script's own deadline plus this bounds its process (interpreter start, imports, close)."""


def start_cluster(make_node: Any, size: int = 3) -> list[NodeProcess]:
    """``size`` nodes started in parallel (brokers 1..size)."""
    nodes = [make_node(broker_id, start=False) for broker_id in range(1, size + 1)]
    start_together(nodes)
    return nodes


def brokers_of(nodes: Sequence[NodeProcess]) -> str:
    """The brokers argument of the client: every node's advertised gRPC address."""
    return ",".join(n.config.advertised_liftbridge_address for n in nodes)


def gufo_answer(brokers: str, operation: str, timeout_s: float = 20.0, **args: Any) -> Any:
    """The whole answer of one operation: ``{"result": ...}`` or ``{"error": ..., "log": ...}``."""
    return run_client_script(
        GUFO_LIFTBRIDGE,
        SCRIPT,
        brokers,
        operation,
        json.dumps({**args, "timeout": timeout_s}),
        timeout_s=timeout_s + SCRIPT_SLACK_S,
    )


def gufo(brokers: str, operation: str, timeout_s: float = 20.0, **args: Any) -> Any:
    """The result of one operation; its failure as an AssertionError naming what went wrong."""
    answer = gufo_answer(brokers, operation, timeout_s, **args)
    if "error" in answer:
        raise AssertionError(
            f"gufo-liftbridge {operation} {args} failed: {json.dumps(answer['error'])}\n"
            + "\n".join(answer.get("log", []))
        )
    return answer["result"]


def gufo_error(brokers: str, operation: str, timeout_s: float = 20.0, **args: Any) -> Any:
    """The error of an operation that must fail (an AssertionError if it succeeded)."""
    answer = gufo_answer(brokers, operation, timeout_s, **args)
    if "error" not in answer:
        raise AssertionError(f"gufo-liftbridge {operation} {args} succeeded: {answer['result']}")
    return answer["error"]


def bulk_records(prefix: str, count: int, partition: int = 0) -> list[dict[str, Any]]:
    """``count`` records for ``publish_bulk``, each its own value and correlation id."""
    return [
        {"value": f"{prefix}-{i}", "correlationId": f"{prefix}-c{i}", "partition": partition}
        for i in range(count)
    ]
