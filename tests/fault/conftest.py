"""Fault tests run real nodes with the integration fixtures."""

from tests.integration.conftest import make_node, stream_name, test_lake  # noqa: F401
