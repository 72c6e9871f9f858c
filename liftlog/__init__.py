"""Liftlog's application layer: the `liftlog` CLI, the embedded stack, the demo, the benchmarks.

It sits above the four library packages (``spark_log`` ← ``coordinator`` ← ``ingest``;
``spark_log`` ← ``datasource``) and is the only place that may import all of them, so the
core stays free of kazoo, pyspark and fastapi.
"""

from __future__ import annotations

from spark_log import __version__

__all__ = ["__version__"]
