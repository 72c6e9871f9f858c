"""The benchmark's one error type, so the CLI can report a failed run in one line."""

from __future__ import annotations

from spark_log.errors import LiftlogError


class BenchError(LiftlogError):
    """A measurement could not run to completion (a stack that did not start, a timeout)."""

    code = "bench_failed"
