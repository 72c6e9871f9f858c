"""A stream's binding to a registered value schema: which subject its values follow, in
which format, and what the leader does with a record that does not match.

``subject`` defaults to ``<stream>-value`` (Confluent's TopicNameStrategy), so Confluent's
serializers configured with the stream's name as topic register and find the same schema.
``on_invalid``: ``refuse`` answers an invalid record with a ``schema_violation`` error ack
and stores nothing. ``dead_letter`` names a ``dead_letter_stream`` for such records; the
leader does not route to it yet, so they are refused the same way. ``keep_raw_value`` keeps
the value's bytes in the lake table's ``value`` column beside its typed columns (off: the
typed columns are the value there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from spark_log.errors import InvalidRequestError

ValueFormat = Literal["avro", "json"]
OnInvalid = Literal["refuse", "dead_letter"]
VALUE_FORMATS: tuple[str, ...] = ("avro", "json")
ON_INVALID: tuple[str, ...] = ("refuse", "dead_letter")
SUBJECT_SUFFIX = "-value"
MAX_SUBJECT_LENGTH = 255


def default_subject(stream: str) -> str:
    """Confluent's TopicNameStrategy for values: ``<topic>-value``."""
    return f"{stream}{SUBJECT_SUFFIX}"


@dataclass(frozen=True)
class ValueSchema:
    """``value_schema`` of a stream spec (``{"subject", "format", "on_invalid",
    "dead_letter_stream", "keep_raw_value"}``); an empty ``subject`` is filled in by the spec."""

    # unknown keys in a REST body are refused, as everywhere in the API (pydantic reads
    # this; a plain dict keeps the core free of pydantic)
    __pydantic_config__: ClassVar[dict[str, str]] = {"extra": "forbid"}

    subject: str = ""
    format: ValueFormat = "avro"
    on_invalid: OnInvalid = "refuse"
    dead_letter_stream: str | None = None
    keep_raw_value: bool = False

    def __post_init__(self) -> None:
        if self.format not in VALUE_FORMATS:
            raise InvalidRequestError(
                f'"value_schema.format" must be one of {", ".join(VALUE_FORMATS)}'
            )
        if self.on_invalid not in ON_INVALID:
            raise InvalidRequestError(
                f'"value_schema.on_invalid" must be one of {", ".join(ON_INVALID)}'
            )
        if len(self.subject) > MAX_SUBJECT_LENGTH or not self.subject.isprintable():
            raise InvalidRequestError(
                f'"value_schema.subject" must be printable, at most {MAX_SUBJECT_LENGTH} characters'
            )
        if (self.on_invalid == "dead_letter") != (self.dead_letter_stream is not None):
            raise InvalidRequestError(
                '"value_schema.on_invalid": "dead_letter" needs "dead_letter_stream" (and only it)'
            )

    @property
    def schema_type(self) -> str:
        """The registry's name of the format (``AVRO``, ``JSON``)."""
        return self.format.upper()
