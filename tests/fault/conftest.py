"""Fault tests run real nodes with the integration fixtures."""

from tests.integration.conftest import make_node, stream_name  # noqa: F401
