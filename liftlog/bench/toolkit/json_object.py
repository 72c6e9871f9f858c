"""The benchmarks' one loosely typed value: a JSON object, as the ``json`` module reads and
writes it. The module types the values no further than ``Any``, and the result documents the
benchmarks build are read back (printed, summarized) the same way, so the looseness is named
once here rather than spelt at every use."""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]
