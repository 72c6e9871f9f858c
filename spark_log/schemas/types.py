"""Schema formats and compatibility levels, spelled as Confluent's registry spells them."""

from __future__ import annotations

from enum import StrEnum

from spark_log.schemas.errors import InvalidCompatibilityLevelError


class SchemaType(StrEnum):
    """A schema's format. PROTOBUF is named so requests using it get a clear refusal."""

    AVRO = "AVRO"
    JSON = "JSON"
    PROTOBUF = "PROTOBUF"


class CompatibilityLevel(StrEnum):
    """Which earlier versions a new version must stay compatible with, and in which direction."""

    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"
    NONE = "NONE"


def parse_level(text: str) -> CompatibilityLevel:
    """The level named by ``text`` (case-insensitive, as Confluent accepts it)."""
    try:
        return CompatibilityLevel(text.strip().upper())
    except ValueError:
        known = ", ".join(level.value for level in CompatibilityLevel)
        raise InvalidCompatibilityLevelError(
            f"invalid compatibility level {text!r}; expected one of {known}"
        ) from None
