"""A small client of the schema registry every node serves at the root of its REST port.

It speaks Confluent's registry API over the client's own REST plumbing (the same server list,
token and TLS as every other call), so the CLI and typed publish and decode need no second
configuration. Registry errors come back as the typed errors of ``spark_log.schemas.errors``.
Schemas by id never change, so they are cached for good; a subject's latest version only for
``latest_ttl_s``, so a new version is picked up soon without a lookup per record.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from spark_log.client.rest import RestClient
from spark_log.errors import InvalidRequestError, LiftlogError
from spark_log.json_types import JsonValue
from spark_log.schemas import ParsedSchema, SchemaType, parse_schema
from spark_log.schemas.errors import (
    IncompatibleSchemaError,
    InvalidCompatibilityLevelError,
    InvalidSchemaError,
    InvalidVersionError,
    SchemaNotFoundError,
    SchemaRegistryError,
    SchemaVersionNotSoftDeletedError,
    SchemaVersionSoftDeletedError,
    SubjectLevelNotFoundError,
    SubjectNotFoundError,
    SubjectNotSoftDeletedError,
    SubjectSoftDeletedError,
    VersionNotFoundError,
)

DEFAULT_LATEST_TTL_S = 10.0
LATEST = "latest"
_INCOMPATIBLE_PREFIX = "schema is incompatible with an earlier version: "
_REGISTRY_ERRORS: dict[str, type[SchemaRegistryError]] = {
    cls.code: cls
    for cls in (
        SubjectNotFoundError,
        VersionNotFoundError,
        SchemaNotFoundError,
        SubjectSoftDeletedError,
        SubjectNotSoftDeletedError,
        SchemaVersionSoftDeletedError,
        SchemaVersionNotSoftDeletedError,
        SubjectLevelNotFoundError,
        InvalidSchemaError,
        InvalidVersionError,
        InvalidCompatibilityLevelError,
    )
}


@dataclass(frozen=True)
class RegisteredSchema:
    """One version of a subject, or (``subject`` "" and ``version`` 0) a schema by id."""

    subject: str
    version: int
    schema_id: int
    schema_type: SchemaType
    schema: str

    def to_json(self) -> dict[str, object]:
        """Confluent's shape of a version (``schemaType`` always named)."""
        return {
            "subject": self.subject,
            "version": self.version,
            "id": self.schema_id,
            "schemaType": str(self.schema_type),
            "schema": self.schema,
        }


@dataclass(frozen=True)
class LatestSchema:
    """A subject's latest version, parsed, as typed publish serialises with it."""

    schema_id: int
    parsed: ParsedSchema


class RegistryClient:
    """Blocking calls to the registry (an async caller runs them in a thread)."""

    def __init__(self, rest: RestClient, latest_ttl_s: float = DEFAULT_LATEST_TTL_S) -> None:
        self.rest = rest
        self.latest_ttl_s = latest_ttl_s
        self._by_id: dict[int, ParsedSchema] = {}
        self._latest: dict[str, tuple[float, LatestSchema]] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ Confluent's calls

    def register(
        self, subject: str, schema_text: str, schema_type: SchemaType | str = SchemaType.AVRO
    ) -> RegisteredSchema:
        """Register ``schema_text`` under ``subject``: the version and id it got (the existing
        ones for a schema registered already). IncompatibleSchemaError with the reasons when
        the subject's compatibility level refuses it, InvalidSchemaError when it is invalid."""
        body = {"schema": schema_text, "schemaType": _type_name(schema_type)}
        answer = self._call("POST", f"{_subject_path(subject)}/versions", body)
        self.forget_latest(subject)
        return _registered(answer, subject)

    def subjects(self, deleted: bool = False) -> list[str]:
        """Subjects with a live version (``deleted``: soft-deleted ones too)."""
        return [str(s) for s in _list(self._call("GET", "/subjects", params=_flag(deleted)))]

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        path = f"{_subject_path(subject)}/versions"
        return [int(str(v)) for v in _list(self._call("GET", path, params=_flag(deleted)))]

    def version(self, subject: str, version: int | str = LATEST) -> RegisteredSchema:
        """One version of ``subject`` (``"latest"``: the newest live one)."""
        path = f"{_subject_path(subject)}/versions/{_version_text(version)}"
        return _registered(self._call("GET", path), subject)

    def schema_by_id(self, schema_id: int) -> RegisteredSchema:
        """The schema with the global id ``schema_id`` (subject "" and version 0)."""
        answer = self._call("GET", f"/schemas/ids/{int(schema_id)}")
        return _registered({**_object(answer), "id": schema_id, "version": 0}, "")

    def check(
        self,
        subject: str,
        schema_text: str,
        schema_type: SchemaType | str = SchemaType.AVRO,
        version: int | str | None = None,
    ) -> tuple[bool, list[str]]:
        """Whether ``schema_text`` could be registered under ``subject`` (``version``: checked
        against that version alone), and why not."""
        path = f"/compatibility{_subject_path(subject)}/versions"
        if version is not None:
            path += f"/{_version_text(version)}"
        body = {"schema": schema_text, "schemaType": _type_name(schema_type)}
        answer = _object(self._call("POST", path, body, params={"verbose": "true"}))
        messages = [str(m) for m in _list(answer.get("messages", []))]
        return bool(answer.get("is_compatible")), messages

    def delete(
        self, subject: str, version: int | str | None = None, permanent: bool = False
    ) -> list[int]:
        """Soft-delete ``subject`` (every version) or one ``version`` of it; ``permanent``
        removes what was soft-deleted before (Confluent's order: soft first). Returns the
        versions deleted."""
        path = _subject_path(subject)
        if version is not None:
            path += f"/versions/{_version_text(version)}"
        params: dict[str, object] | None = {"permanent": "true"} if permanent else None
        answer = self._call("DELETE", path, params=params)
        self.forget_latest(subject)
        if isinstance(answer, list):
            return [int(str(v)) for v in answer]
        return [int(str(answer))]

    # ------------------------------------------------------------------ cached, parsed

    def parsed_by_id(self, schema_id: int) -> ParsedSchema:
        """The parsed schema of ``schema_id``, fetched once (an id never changes)."""
        parsed = self.cached_by_id(schema_id)
        if parsed is not None:
            return parsed
        found = self.schema_by_id(schema_id)
        parsed = parse_schema(found.schema_type, found.schema)
        with self._lock:
            self._by_id[schema_id] = parsed
        return parsed

    def latest(self, subject: str) -> LatestSchema:
        """The latest version of ``subject``, parsed; re-read after ``latest_ttl_s``."""
        cached = self.cached_latest(subject)
        if cached is not None:
            return cached
        now = time.monotonic()
        found = self.version(subject, LATEST)
        # an id never changes: a version seen before is not parsed again after the TTL
        parsed = self.cached_by_id(found.schema_id) or parse_schema(found.schema_type, found.schema)
        latest = LatestSchema(found.schema_id, parsed)
        with self._lock:
            self._latest[subject] = (now, latest)
            self._by_id.setdefault(found.schema_id, latest.parsed)
        return latest

    def cached_by_id(self, schema_id: int) -> ParsedSchema | None:
        """The parsed schema of ``schema_id`` if fetched already (no network)."""
        with self._lock:
            return self._by_id.get(schema_id)

    def cached_latest(self, subject: str) -> LatestSchema | None:
        """The subject's latest version if read within ``latest_ttl_s`` (no network)."""
        with self._lock:
            cached = self._latest.get(subject)
        if cached is None or time.monotonic() - cached[0] >= self.latest_ttl_s:
            return None
        return cached[1]

    def forget_latest(self, subject: str) -> None:
        """Re-read the subject's latest version on next use."""
        with self._lock:
            self._latest.pop(subject, None)

    # ------------------------------------------------------------------ plumbing

    def _call(
        self,
        method: str,
        path: str,
        body: object = None,
        params: dict[str, object] | None = None,
    ) -> JsonValue:
        with _registry_errors():
            return self.rest.request(method, path, json_body=body, params=params).json()


@contextmanager
def _registry_errors() -> Iterator[None]:
    """A registry error the REST layer rebuilt untyped (its code is not a core one) raised as
    its own type, with the HTTP status kept."""
    try:
        yield
    except LiftlogError as exc:
        typed = registry_error(exc)
        if typed is exc:
            raise
        raise typed from None


def registry_error(exc: LiftlogError) -> LiftlogError:
    """``exc`` as the registry's typed error its code names (``exc`` itself otherwise)."""
    if exc.code == IncompatibleSchemaError.code:
        typed: LiftlogError = IncompatibleSchemaError(
            [r for r in exc.message.removeprefix(_INCOMPATIBLE_PREFIX).split("; ") if r]
        )
    elif exc.code in _REGISTRY_ERRORS:
        typed = _REGISTRY_ERRORS[exc.code](exc.message)
    else:
        return exc
    typed.status = exc.status
    return typed


def _subject_path(subject: str) -> str:
    if not subject:
        raise InvalidRequestError("a subject name is required")
    return f"/subjects/{urllib.parse.quote(subject, safe='')}"


def _version_text(version: int | str) -> str:
    """``latest`` or a positive version number, as the registry's paths take them."""
    text = str(version).strip().lower()
    if text == LATEST or (text.isdigit() and int(text) > 0):
        return text
    raise InvalidVersionError(f"version must be a positive integer or 'latest', got {version!r}")


def _type_name(schema_type: SchemaType | str) -> str:
    text = str(schema_type).strip().upper()
    try:
        return str(SchemaType(text))
    except ValueError:
        known = ", ".join(t.value for t in SchemaType if t is not SchemaType.PROTOBUF)
        raise InvalidSchemaError(f"unknown schema type {schema_type!r}; expected {known}") from None


def _flag(deleted: bool) -> dict[str, object] | None:
    return {"deleted": "true"} if deleted else None


def _registered(answer: JsonValue, subject: str) -> RegisteredSchema:
    body = _object(answer)
    return RegisteredSchema(
        subject=str(body.get("subject", subject)),
        version=int(str(body.get("version", 0))),
        schema_id=int(str(body["id"])),
        schema_type=SchemaType(str(body.get("schemaType", SchemaType.AVRO))),
        schema=str(body["schema"]),
    )


def _object(answer: JsonValue) -> dict[str, JsonValue]:
    if not isinstance(answer, dict):
        raise SchemaRegistryError(f"the registry answered {answer!r}, not an object")
    return answer


def _list(answer: JsonValue) -> list[JsonValue]:
    if not isinstance(answer, list):
        raise SchemaRegistryError(f"the registry answered {answer!r}, not a list")
    return answer
