"""Whether a new version of a subject's schema keeps the subject's compatibility level.

BACKWARD: consumers on the new schema read data written with the latest version. FORWARD:
consumers still on the latest version read data written with the new one. FULL: both. The
_TRANSITIVE forms apply the same test to every live version, not only the latest.
"""

from __future__ import annotations

from collections.abc import Sequence

from spark_log.schemas.parsed import ParsedSchema
from spark_log.schemas.types import CompatibilityLevel

_BACKWARD = {
    CompatibilityLevel.BACKWARD,
    CompatibilityLevel.BACKWARD_TRANSITIVE,
    CompatibilityLevel.FULL,
    CompatibilityLevel.FULL_TRANSITIVE,
}
_FORWARD = {
    CompatibilityLevel.FORWARD,
    CompatibilityLevel.FORWARD_TRANSITIVE,
    CompatibilityLevel.FULL,
    CompatibilityLevel.FULL_TRANSITIVE,
}
_TRANSITIVE = {
    CompatibilityLevel.BACKWARD_TRANSITIVE,
    CompatibilityLevel.FORWARD_TRANSITIVE,
    CompatibilityLevel.FULL_TRANSITIVE,
}


def check_compatibility(
    level: CompatibilityLevel,
    new: ParsedSchema,
    existing: Sequence[ParsedSchema],
    versions: Sequence[int] | None = None,
) -> list[str]:
    """Why ``new`` breaks ``level`` against ``existing`` (the live versions, oldest first);
    empty when it does not. ``versions`` numbers them in messages (default 1, 2, ...)."""
    if level is CompatibilityLevel.NONE or not existing:
        return []
    numbers = list(versions) if versions is not None else list(range(1, len(existing) + 1))
    pairs = list(zip(numbers, existing, strict=True))
    if level not in _TRANSITIVE:
        pairs = pairs[-1:]
    problems: list[str] = []
    for number, old in pairs:
        if level in _BACKWARD:
            problems += [f"version {number}: {p}" for p in new.reader_problems(old)]
        if level in _FORWARD:
            problems += [
                f"version {number} cannot read the new schema: {p}"
                for p in old.reader_problems(new)
            ]
    return problems
