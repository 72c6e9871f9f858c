"""Durations written the way Spark's Kafka options take them (``"15m"``, ``"30s"``, ``"500ms"``).

``maxTriggerDelay`` is parsed by Spark's ``JavaUtils.timeStringAsMs`` for Kafka; accepting the
same spellings means a Kafka query's option value works here unchanged.
"""

from __future__ import annotations

import re

from datasource.errors import InvalidOptionError

_UNITS_S = {
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "m": 60.0,
    "min": 60.0,
    "mins": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "h": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
    "d": 86400.0,
    "day": 86400.0,
    "days": 86400.0,
}
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$")


def parse_duration_s(text: str, option: str) -> float:
    """Seconds in ``text``; a bare number is milliseconds, as in Spark's parser."""
    match = _DURATION_RE.match(text.lower())
    if match is None or match.group(2) not in ("", *_UNITS_S):
        raise InvalidOptionError(
            f"{option} must be a duration like '15m', '30s' or '500ms'; got {text!r}"
        )
    amount, unit = float(match.group(1)), match.group(2)
    return amount * (_UNITS_S[unit] if unit else 1e-3)
