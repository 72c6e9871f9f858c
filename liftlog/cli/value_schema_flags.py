"""``stream create`` and ``stream alter`` flags of the spec's nested ``value_schema``.

Every flag of the spec is named after its field and stored under the field's name (so the
create body and error messages follow the spec: ``liftlog.cli.flags``); ``value_schema`` is
an object, so four flags fill its members into one dict stored under ``value_schema``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from spark_log.value_schema import ON_INVALID, VALUE_FORMATS

FIELD = "value_schema"
# flag → the member of ``value_schema`` it sets
MEMBERS = {
    "--value-schema-subject": "subject",
    "--value-schema-format": "format",
    "--on-invalid": "on_invalid",
    "--dead-letter-stream": "dead_letter_stream",
}


class _Member(argparse.Action):
    """Stores its value as one member of the ``value_schema`` dict."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        current = getattr(namespace, self.dest, None)
        binding = dict(current) if isinstance(current, dict) else {}
        binding[MEMBERS[self.option_strings[0]]] = values
        setattr(namespace, self.dest, binding)


def add_value_schema_flags(parser: argparse.ArgumentParser, default: object = None) -> None:
    """The four flags; any of them binds the stream (the others keep their defaults on
    create, their current values on alter). ``default``: argparse.SUPPRESS on alter."""
    group = parser.add_argument_group(
        "typed values", "bind the stream's values to a registered schema (docs/schemas.md)"
    )
    group.add_argument(
        "--value-schema-subject",
        dest=FIELD,
        action=_Member,
        default=default,
        metavar="SUBJECT",
        help="the registry subject the values follow (default: <stream>-value)",
    )
    group.add_argument(
        "--value-schema-format",
        dest=FIELD,
        action=_Member,
        default=default,
        choices=VALUE_FORMATS,
        help="avro (Confluent's wire format) or json (default: avro)",
    )
    group.add_argument(
        "--on-invalid",
        dest=FIELD,
        action=_Member,
        default=default,
        choices=ON_INVALID,
        help="an invalid record is refused with schema_violation, or stored in "
        "--dead-letter-stream (default: refuse)",
    )
    group.add_argument(
        "--dead-letter-stream",
        dest=FIELD,
        action=_Member,
        default=default,
        metavar="NAME",
        help="where --on-invalid dead_letter stores invalid records (default: none)",
    )


def merged_binding(current: dict[str, Any] | None, given: dict[str, Any]) -> dict[str, Any]:
    """An alter's ``value_schema``: the members given over the stream's current binding (a
    dead-letter stream is dropped when ``--on-invalid refuse`` is given alone)."""
    binding = {**(current or {}), **given}
    if given.get("on_invalid") == "refuse" and "dead_letter_stream" not in given:
        binding.pop("dead_letter_stream", None)
    return binding
