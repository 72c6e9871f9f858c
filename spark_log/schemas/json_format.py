"""A JSON Schema, checked and applied with ``jsonschema``.

The draft is the one the schema's ``$schema`` names, draft-07 when it names none (as
Confluent's registry assumes). ``format`` stays an annotation, as the drafts define it; only
references inside the schema resolve, so validating never reaches the network.

A value is first checked by ``jsonschema_rs`` (Rust, about 15 times faster on a small
object: the publish path of a bound stream checks every record); only a value it finds
invalid goes through ``jsonschema``, which names the field and why. A schema the Rust
validator cannot take (a reference to another document) is checked by ``jsonschema`` alone.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema.exceptions
import jsonschema_rs
import referencing.exceptions
from jsonschema import Draft7Validator
from jsonschema.validators import validator_for

from spark_log.schemas.errors import InvalidSchemaError, SchemaViolationError
from spark_log.schemas.json_compatibility import json_reader_problems
from spark_log.schemas.json_text import dump_json, load_json, pointer
from spark_log.schemas.parsed import ParsedSchema
from spark_log.schemas.types import SchemaType


class JsonSchema:
    """A valid JSON Schema; see ``ParsedSchema`` for what each method promises."""

    def __init__(self, text: str) -> None:
        try:
            document: object = json.loads(text)
        except (ValueError, RecursionError) as error:
            raise InvalidSchemaError(f"JSON Schema is not JSON: {error}") from None
        if not isinstance(document, (dict, bool)):
            raise InvalidSchemaError("a JSON Schema must be an object or a boolean")
        self._document = document
        self._validator = _validator(document)
        self._fast = _fast_validator(document)
        self._canonical = json.dumps(document, sort_keys=True, separators=(",", ":"))

    @property
    def schema_type(self) -> SchemaType:
        return SchemaType.JSON

    @property
    def document(self) -> object:
        return self._document

    def canonical(self) -> str:
        """The document with sorted keys and no whitespace."""
        return self._canonical

    def decode(self, payload: bytes) -> object:
        """The JSON value of UTF-8 ``payload``, valid against this schema."""
        return self._valid(load_json(payload))

    def decode_json(self, text: bytes) -> object:
        return self.decode(text)

    def encode(self, value: object) -> bytes:
        self._valid(value)
        return dump_json(value)

    def reader_problems(self, writer: ParsedSchema) -> list[str]:
        if not isinstance(writer, JsonSchema):
            return [f"reader is {SchemaType.JSON}, writer is {writer.schema_type}"]
        return json_reader_problems(self._document, writer._document)

    def __repr__(self) -> str:
        return f"JsonSchema({self._canonical})"

    def _valid(self, value: object) -> object:
        fast = self._fast
        if fast is not None and fast.is_valid(value):
            return value
        try:
            error = jsonschema.exceptions.best_match(self._validator.iter_errors(value))
        except RecursionError:
            raise SchemaViolationError("", "value is nested too deeply") from None
        except referencing.exceptions.Unresolvable as unresolvable:
            raise SchemaViolationError(
                "", f"the schema has a reference that does not resolve: {unresolvable}"
            ) from None
        if error is not None:
            raise _violation(error)
        return value


def _violation(error: Any) -> SchemaViolationError:
    """The violation of jsonschema's ``error``; a missing required property is named itself."""
    path = list(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [name for name in error.validator_value if name not in error.instance]
        if missing:
            return SchemaViolationError(pointer([*path, missing[0]]), "missing required property")
    return SchemaViolationError(pointer(path), error.message)


def _fast_validator(document: dict[str, Any] | bool) -> Any:
    """The Rust validator of ``document``, or None when it cannot build one offline."""
    try:
        return jsonschema_rs.validator_for(
            document, validate_formats=False, retriever=_refuse_remote
        )
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError):
        return None


def _refuse_remote(uri: str, /) -> Any:
    """Validation never reaches the network: a remote reference is not followed."""
    raise ValueError(f"remote reference {uri} is not followed")


def _validator(document: dict[str, Any] | bool) -> Any:
    """The validator of the draft ``document`` names, after checking it against that draft."""
    cls = validator_for(document, default=Draft7Validator)
    try:
        cls.check_schema(document)
    except jsonschema.exceptions.SchemaError as error:
        where = pointer(list(error.absolute_path))
        raise InvalidSchemaError(
            f"invalid JSON Schema at {where or '/'}: {error.message}"
        ) from None
    except RecursionError:
        raise InvalidSchemaError("invalid JSON Schema: nested too deeply") from None
    return cls(document)
