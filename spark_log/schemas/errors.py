"""Errors of the schema registry and of records that do not match their schema.

Registry errors carry Confluent's numeric ``error_code`` and HTTP status beside Liftlog's
snake_case ``code``, so the registry routes can answer in the body Confluent's clients parse
(``{"error_code": 40401, "message": ...}``) while the rest of Liftlog keeps one error word.
"""

from __future__ import annotations

from collections.abc import Sequence

from spark_log.errors import LiftlogError, SchemaViolationError


class SchemaRegistryError(LiftlogError):
    """Base of the registry's errors: ``error_code`` and ``http_status`` are Confluent's."""

    code = "schema_registry_error"
    error_code: int = 50001
    http_status: int = 500

    def to_confluent_json(self) -> dict[str, object]:
        """The error body Confluent's registry returns and its clients parse."""
        return {"error_code": self.error_code, "message": self.message}


class SubjectNotFoundError(SchemaRegistryError):
    code = "subject_not_found"
    error_code = 40401
    http_status = 404


class VersionNotFoundError(SchemaRegistryError):
    code = "version_not_found"
    error_code = 40402
    http_status = 404


class SchemaNotFoundError(SchemaRegistryError):
    code = "schema_not_found"
    error_code = 40403
    http_status = 404


class SubjectSoftDeletedError(SchemaRegistryError):
    code = "subject_soft_deleted"
    error_code = 40404
    http_status = 404


class SubjectNotSoftDeletedError(SchemaRegistryError):
    """A permanent delete of a subject that was not soft-deleted first (Confluent's order)."""

    code = "subject_not_soft_deleted"
    error_code = 40405
    http_status = 404


class SchemaVersionSoftDeletedError(SchemaRegistryError):
    code = "schema_version_soft_deleted"
    error_code = 40406
    http_status = 404


class SchemaVersionNotSoftDeletedError(SchemaRegistryError):
    """A permanent delete of a version that was not soft-deleted first (Confluent's order)."""

    code = "schema_version_not_soft_deleted"
    error_code = 40407
    http_status = 404


class SubjectLevelNotFoundError(SchemaRegistryError):
    """The subject has no compatibility level of its own (the global one applies)."""

    code = "subject_level_not_found"
    error_code = 40408
    http_status = 404


class InvalidSchemaError(SchemaRegistryError):
    code = "invalid_schema"
    error_code = 42201
    http_status = 422


class InvalidVersionError(SchemaRegistryError):
    code = "invalid_version"
    error_code = 42202
    http_status = 422


class InvalidCompatibilityLevelError(SchemaRegistryError):
    code = "invalid_compatibility_level"
    error_code = 42203
    http_status = 422


class IncompatibleSchemaError(SchemaRegistryError):
    """A new version breaks the subject's compatibility level; ``reasons`` says how."""

    code = "incompatible_schema"
    error_code = 409
    http_status = 409

    def __init__(self, reasons: Sequence[str]) -> None:
        self.reasons = list(reasons)
        listed = "; ".join(self.reasons) if self.reasons else "no reason given"
        super().__init__(f"schema is incompatible with an earlier version: {listed}")


__all__ = ["SchemaViolationError"]  # defined with the core errors: acks carry it
