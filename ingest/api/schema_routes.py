"""The schema registry, at the root of every node's REST port, as Confluent's registry
serves it, so a client configured with a node's URL alone works.

Each route translates to ``coordinator.schemas.registry.SchemaRegistry`` (blocking ZooKeeper
work, run in a thread). Registry errors answer in Confluent's body (``{"error_code": 40401,
"message": ...}``, ``ingest.api.errors``). Who may do what: describe, alter or delete on
``schema:<subject>`` (``ingest/api/route_acl.py``); the listings only name the subjects the
caller may describe.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from enum import Enum
from typing import TypeVar

from fastapi import FastAPI, Request

from coordinator.schemas.registry import RegisteredVersion, SchemaRegistry
from coordinator.schemas.znodes import StoredSchema
from ingest.api.auth import principal_of
from ingest.api.schema_models import ConfigBody, SchemaBody
from ingest.security.node_auth import NodeAuth
from spark_log.auth import Action, schema_resource
from spark_log.json_types import JsonObject
from spark_log.schemas import (
    CompatibilityLevel,
    InvalidSchemaError,
    SchemaNotFoundError,
    SchemaType,
    parse_level,
)
from spark_log.schemas.errors import SubjectLevelNotFoundError

T = TypeVar("T")
TAGS: list[str | Enum] = ["schema registry"]
SUPPORTED_TYPES = [str(SchemaType.JSON), str(SchemaType.AVRO)]


def install_schema_routes(app: FastAPI, registry: SchemaRegistry, auth: NodeAuth) -> None:
    _schema_id_routes(app, registry, auth)
    _subject_routes(app, registry, auth)
    _version_routes(app, registry)
    _config_routes(app, registry)
    _compatibility_routes(app, registry)


async def _run(call: Callable[[], T]) -> T:
    return await asyncio.to_thread(call)


def _schema_json(stored: StoredSchema) -> JsonObject:
    """A schema as Confluent answers it: ``schemaType`` only when not Avro."""
    body: JsonObject = {"schema": stored.schema}
    if stored.schema_type != SchemaType.AVRO:
        body["schemaType"] = str(stored.schema_type)
    return body


def _version_json(found: RegisteredVersion) -> JsonObject:
    return {
        "subject": found.subject,
        "version": found.version,
        "id": found.schema_id,
        **_schema_json(found.schema),
    }


def _checked(body: SchemaBody) -> SchemaBody:
    """Confluent's data-contract fields are refused unless empty: ignoring a rule would
    claim a guarantee the registry does not give."""
    if body.metadata or body.rule_set:
        raise InvalidSchemaError("schema metadata and rule sets are not supported")
    return body


def _schema_id_routes(app: FastAPI, registry: SchemaRegistry, auth: NodeAuth) -> None:
    @app.get("/schemas/types", tags=TAGS)
    async def schema_types() -> list[str]:
        """The schema formats this registry accepts."""
        return SUPPORTED_TYPES

    def visible(request: Request, schema_id: int, deleted: bool) -> list[tuple[str, int]]:
        """Where the id is registered, among the subjects the caller may describe; an id
        under none of them is not found (its text may be private to a subject)."""
        places = registry.subject_versions_of_id(schema_id)
        principal = principal_of(request)
        allowed = [
            (s, v)
            for s, v in places
            if not auth.enabled or auth.allows(principal, Action.DESCRIBE, schema_resource(s))
        ]
        if (places and not allowed) or (auth.enabled and not places):
            raise SchemaNotFoundError(f"Schema {schema_id} not found")
        return [(s, v.version) for s, v in allowed if deleted or not v.deleted]

    @app.get("/schemas/ids/{schema_id}", tags=TAGS)
    async def schema_by_id(
        request: Request,
        schema_id: int,
        subject: str | None = None,
        format: str | None = None,
        reference_format: str | None = None,
    ) -> JsonObject:
        """The schema with this id (ids are global and never reused)."""
        stored = await _run(lambda: registry.schema_by_id(schema_id))
        await _run(lambda: visible(request, schema_id, True))
        return _schema_json(stored)

    @app.get("/schemas/ids/{schema_id}/schema", tags=TAGS)
    async def raw_schema_by_id(
        request: Request, schema_id: int, subject: str | None = None
    ) -> object:
        """The schema text alone, as JSON."""
        stored = await _run(lambda: registry.schema_by_id(schema_id))
        await _run(lambda: visible(request, schema_id, True))
        return _raw(stored)

    @app.get("/schemas/ids/{schema_id}/subjects", tags=TAGS)
    async def subjects_of_id(
        request: Request, schema_id: int, subject: str | None = None, deleted: bool = False
    ) -> list[str]:
        places = await _run(lambda: visible(request, schema_id, deleted))
        return sorted({s for s, _v in places if subject is None or s == subject})

    @app.get("/schemas/ids/{schema_id}/versions", tags=TAGS)
    async def versions_of_id(
        request: Request, schema_id: int, subject: str | None = None, deleted: bool = False
    ) -> list[JsonObject]:
        places = await _run(lambda: visible(request, schema_id, deleted))
        return [{"subject": s, "version": v} for s, v in places if subject is None or s == subject]


def _raw(stored: StoredSchema) -> object:
    """``.../schema`` answers the schema itself: its JSON document."""
    try:
        return json.loads(stored.schema)
    except ValueError:
        return stored.schema


def _subject_routes(app: FastAPI, registry: SchemaRegistry, auth: NodeAuth) -> None:
    @app.get("/subjects", tags=TAGS)
    async def subjects(
        request: Request,
        subjectPrefix: str = "",  # noqa: N803  (Confluent's parameter names)
        deleted: bool = False,
        deletedOnly: bool = False,  # noqa: N803
        deleted_only: bool = False,  # the name Confluent's Python client sends
        offset: int = 0,
        limit: int = -1,
    ) -> list[str]:
        """Subjects with a live version (``deleted=true``: soft-deleted ones too), among those
        the caller may describe."""
        only = deletedOnly or deleted_only
        names = registry.subjects(deleted=deleted or only, prefix=subjectPrefix)
        if only:
            live = set(registry.subjects(prefix=subjectPrefix))
            names = [n for n in names if n not in live]
        principal = principal_of(request)
        names = [
            n
            for n in names
            if not auth.enabled or auth.allows(principal, Action.DESCRIBE, schema_resource(n))
        ]
        return names[offset:] if limit < 0 else names[offset : offset + limit]

    @app.post("/subjects/{subject}", tags=TAGS)
    async def lookup(
        subject: str,
        body: SchemaBody,
        normalize: bool = False,
        deleted: bool = False,
        format: str | None = None,
    ) -> JsonObject:
        """Which version of the subject holds this schema (40403 when none does)."""
        _checked(body)
        found = await _run(
            lambda: registry.lookup(subject, body.schema_type, body.schema_text, deleted=deleted)
        )
        return _version_json(found)

    @app.delete("/subjects/{subject}", tags=TAGS)
    async def delete_subject(subject: str, permanent: bool = False) -> list[int]:
        """Soft-delete every version (then, with ``permanent=true``, remove them)."""
        return await _run(lambda: registry.delete_subject(subject, permanent=permanent))

    @app.get("/mode", tags=TAGS)
    async def mode() -> JsonObject:
        """Always READWRITE: the registry has no import or read-only mode."""
        return {"mode": "READWRITE"}


def _version_routes(app: FastAPI, registry: SchemaRegistry) -> None:
    @app.get("/subjects/{subject}/versions", tags=TAGS)
    async def versions(
        subject: str,
        deleted: bool = False,
        deletedOnly: bool = False,  # noqa: N803
        deleted_only: bool = False,  # the name Confluent's Python client sends
        offset: int = 0,
        limit: int = -1,
    ) -> list[int]:
        only = deletedOnly or deleted_only
        found = registry.versions(subject, deleted=deleted or only)
        if only:
            found = registry.soft_deleted_versions(subject)
        return found[offset:] if limit < 0 else found[offset : offset + limit]

    @app.post("/subjects/{subject}/versions", tags=TAGS)
    async def register(
        subject: str,
        body: SchemaBody,
        normalize: bool = False,
        format: str | None = None,
    ) -> JsonObject:
        """Register a schema under the subject: its id (the existing one for a schema
        registered already); 409 with the reasons when the subject's compatibility level
        refuses it, 422 when it is not a valid schema."""
        _checked(body)
        found = await _run(
            lambda: registry.register(subject, body.schema_type, body.schema_text, body.references)
        )
        return {"id": found.schema_id, "version": found.version, **_schema_json(found.schema)}

    @app.get("/subjects/{subject}/versions/{version}", tags=TAGS)
    async def version(
        subject: str,
        version: str,
        deleted: bool = False,
        format: str | None = None,
    ) -> JsonObject:
        found = await _run(lambda: registry.version(subject, version, deleted=deleted))
        return _version_json(found)

    @app.get("/subjects/{subject}/versions/{version}/schema", tags=TAGS)
    async def version_schema(subject: str, version: str, deleted: bool = False) -> object:
        found = await _run(lambda: registry.version(subject, version, deleted=deleted))
        return _raw(found.schema)

    @app.get("/subjects/{subject}/versions/{version}/referencedby", tags=TAGS)
    async def referenced_by(
        subject: str, version: str, offset: int = 0, limit: int = -1
    ) -> list[int]:
        """Always empty: schema references are not supported."""
        await _run(lambda: registry.version(subject, version))
        return []

    @app.delete("/subjects/{subject}/versions/{version}", tags=TAGS)
    async def delete_version(subject: str, version: str, permanent: bool = False) -> int:
        return await _run(lambda: registry.delete_version(subject, version, permanent=permanent))


def _config_routes(app: FastAPI, registry: SchemaRegistry) -> None:
    @app.get("/config", tags=TAGS)
    async def global_config() -> JsonObject:
        return {"compatibilityLevel": str(registry.level())}

    @app.put("/config", tags=TAGS)
    async def set_global_config(body: ConfigBody) -> JsonObject:
        level = parse_level(body.compatibility)
        await _run(lambda: registry.set_level(None, level))
        return {"compatibility": str(level)}

    @app.delete("/config", tags=TAGS)
    async def delete_global_config() -> JsonObject:
        """Back to the default (BACKWARD); answers the level it replaced."""
        before = registry.level()
        await _run(lambda: registry.set_level(None, None))
        return {"compatibilityLevel": str(before)}

    @app.get("/config/{subject}", tags=TAGS)
    async def subject_config(subject: str, defaultToGlobal: bool = False) -> JsonObject:  # noqa: N803
        own = registry.subject_level(subject)
        if own is None and not defaultToGlobal:
            raise SubjectLevelNotFoundError(
                f"Subject '{subject}' does not have subject-level compatibility configured"
            )
        return {"compatibilityLevel": str(own or registry.level())}

    @app.put("/config/{subject}", tags=TAGS)
    async def set_subject_config(subject: str, body: ConfigBody) -> JsonObject:
        level = parse_level(body.compatibility)
        await _run(lambda: registry.set_level(subject, level))
        return {"compatibility": str(level)}

    @app.delete("/config/{subject}", tags=TAGS)
    async def delete_subject_config(subject: str) -> JsonObject:
        own = registry.subject_level(subject)
        if own is None:
            raise SubjectLevelNotFoundError(
                f"Subject '{subject}' does not have subject-level compatibility configured"
            )
        await _run(lambda: registry.set_level(subject, None))
        return {"compatibilityLevel": str(own)}


def _compatibility_routes(app: FastAPI, registry: SchemaRegistry) -> None:
    def answer(problems: list[str], verbose: bool) -> JsonObject:
        body: JsonObject = {"is_compatible": not problems}
        if verbose:
            body["messages"] = problems
        return body

    @app.post("/compatibility/subjects/{subject}/versions/{version}", tags=TAGS)
    async def check_version(
        subject: str,
        version: str,
        body: SchemaBody,
        normalize: bool = False,
        verbose: bool = False,
    ) -> JsonObject:
        """Whether the schema could be registered, checked against one version in the
        direction of the subject's level."""
        _checked(body)
        problems = await _run(
            lambda: registry.check(subject, body.schema_type, body.schema_text, version)
        )
        return answer(problems, verbose)

    @app.post("/compatibility/subjects/{subject}/versions", tags=TAGS)
    async def check_all(
        subject: str, body: SchemaBody, normalize: bool = False, verbose: bool = False
    ) -> JsonObject:
        """Whether the schema could be registered: checked as a registration would be."""
        _checked(body)
        problems = await _run(lambda: registry.check(subject, body.schema_type, body.schema_text))
        return answer(problems, verbose)


__all__ = ["CompatibilityLevel", "install_schema_routes"]
