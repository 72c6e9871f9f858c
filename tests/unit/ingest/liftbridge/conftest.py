"""Each test with the caller token it starts with: an RPC's door sets it for its caller, and
a test calling the door outside a task would otherwise leave it to the tests after it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ingest.security.node_credentials import caller_token


@pytest.fixture(autouse=True)
def _caller_token_restored() -> Iterator[None]:
    before = caller_token.set(caller_token.get())
    yield
    caller_token.reset(before)
