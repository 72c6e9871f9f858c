"""How hard the fuzz tests try: few examples in ``make test``, many in ``make fuzz``.

``LIFTLOG_FUZZ=deep`` (what ``make fuzz`` sets) picks the long profile, of
``LIFTLOG_FUZZ_EXAMPLES`` examples per test (default 5000). The settings are
applied per test (as decorators), never loaded globally, so other property tests keep theirs.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

FUZZ_ENV = "LIFTLOG_FUZZ"
EXAMPLES_ENV = "LIFTLOG_FUZZ_EXAMPLES"
_QUICK_EXAMPLES = 150
_DEEP_EXAMPLES = int(os.environ.get(EXAMPLES_ENV, "5000"))

_DEEP = os.environ.get(FUZZ_ENV, "") == "deep"


def fuzz_settings(quick_examples: int = _QUICK_EXAMPLES) -> settings:
    """Settings for one fuzz test: ``quick_examples`` normally, many more when deep."""
    return settings(
        max_examples=_DEEP_EXAMPLES if _DEEP else quick_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        derandomize=not _DEEP,
    )
