"""HTTP status mapping for every Liftlog error code, in one place.

Clients of any route get ``{"error": {"code", "message"}}``; validation problems are 422 and no
input ever produces a 500 with a traceback.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from spark_log.api_models import ErrorBody, ErrorDetail
from spark_log.errors import LiftlogError
from spark_log.json_types import JsonMapping
from spark_log.schemas.errors import SchemaRegistryError

log = logging.getLogger("liftlog.api")

STATUS_BY_CODE: dict[str, int] = {
    "invalid_request": 422,
    "schema_violation": 422,
    "invalid_config": 400,
    "expected_offset_mismatch": 409,
    "stream_not_found": 404,
    "partition_not_found": 404,
    "stream_exists": 409,
    "record_too_large": 413,
    "request_too_large": 413,
    "limit_exceeded": 409,
    "offset_out_of_range": 416,
    "not_leader": 421,
    "stream_paused": 409,
    "stream_readonly": 409,
    "immutable_field": 409,
    "internal_stream": 409,
    "cursor_not_found": 404,
    "coordinator_loading": 503,
    "invalid_timestamp": 422,
    "not_enough_replicas": 503,
    "not_enough_replicas_after_append": 503,
    "unavailable": 503,
    "auth_unavailable": 503,
    "coordinator_error": 503,
    "storage_error": 503,
    "lake_error": 503,
    "incompatible_layout": 409,
    "unsupported_schema": 409,
    "unsafe_lake_store": 503,
    "timeout": 504,
    "not_controller": 421,
    "controller_moved": 503,
    "controller_busy": 503,
    "version_conflict": 409,
    "election_not_needed": 409,
    "ineligible_replica": 400,
    "invalid_isr": 400,
    "reassignment_in_progress": 409,
    "no_reassignment": 404,
    "encryption_unavailable": 400,
    "key_unavailable": 503,
    "decryption_failed": 500,
    "unauthenticated": 401,
    "forbidden": 403,
    "token_not_found": 404,
    "acl_not_found": 404,
    "group_not_found": 404,
    "group_not_empty": 409,
    "stale_member_epoch": 409,
    "fenced_member": 409,
    "group_managed": 409,
}

# Errors that report bad stored data, not a defect of the code: logged with the partition
# they came from so an operator can find it.
DATA_ERROR_CODES = frozenset({"decryption_failed"})

# A 401 says how to authenticate (RFC 6750).
HEADERS_BY_CODE: dict[str, dict[str, str]] = {"unauthenticated": {"WWW-Authenticate": "Bearer"}}

# Every route may answer these; OpenAPI shows the error body for each.
ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    422: {
        "model": ErrorBody,
        "description": "invalid request: a bad or unknown parameter or "
        "body field, named in the message (code invalid_request)",
    },
    "4XX": {
        "model": ErrorBody,
        "description": "refused: not found, conflict, paused, not "
        "the leader, ... (the code says which)",
    },
    "5XX": {"model": ErrorBody, "description": "unavailable, timeout or internal error"},
}


def error_body(code: str, message: str) -> dict[str, dict[str, str]]:
    return ErrorBody(ErrorDetail(code, message)).to_json()


# The schema registry's routes, served at the root as Confluent's: their errors also carry
# Confluent's fields, which its clients parse.
REGISTRY_PREFIXES = ("/subjects", "/schemas/", "/config", "/compatibility/", "/mode")


def error_response(
    request: Request,
    code: str,
    message: str,
    status: int,
    headers: dict[str, str] | None = None,
    error_code: int | None = None,
) -> JSONResponse:
    """Liftlog's error body; on a registry route also Confluent's ``error_code`` (the HTTP
    status for errors that are not the registry's own) and ``message``."""
    body: dict[str, object] = dict(error_body(code, message))
    if error_code is not None or request.url.path.startswith(REGISTRY_PREFIXES):
        body.update(error_code=error_code or status, message=message)
    return JSONResponse(body, status_code=status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(SchemaRegistryError)
    async def _registry(request: Request, exc: SchemaRegistryError) -> JSONResponse:
        """Confluent's body (what its clients parse) beside Liftlog's."""
        return error_response(
            request, exc.code, exc.message, exc.http_status, error_code=exc.error_code
        )

    @app.exception_handler(LiftlogError)
    async def _liftlog(request: Request, exc: LiftlogError) -> JSONResponse:
        status = STATUS_BY_CODE.get(exc.code, 500)
        if exc.code in DATA_ERROR_CODES:
            log.error(
                "stored data error %s on stream %s partition %s: %s",
                exc.code,
                request.path_params.get("stream", "-"),
                request.path_params.get("partition", "-"),
                exc.message,
            )
        elif status == 500:
            log.error("unmapped error %s: %s", exc.code, exc.message)
        return error_response(request, exc.code, exc.message, status, HEADERS_BY_CODE.get(exc.code))

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = [f"{_location(err)}: {err.get('msg')}" for err in exc.errors()]
        return error_response(request, "invalid_request", "; ".join(parts), 422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {400: "invalid_request", 404: "not_found", 405: "method_not_allowed"}.get(
            exc.status_code, "http_error"
        )
        return error_response(request, code, str(exc.detail), exc.status_code)

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, _exc: Exception) -> JSONResponse:
        """The last resort for a defect: still the documented JSON error, never a traceback
        (the server logs the exception itself)."""
        return JSONResponse(
            error_body("internal_error", "internal error; the node's log has the details"),
            status_code=500,
        )


def _location(err: JsonMapping) -> str:
    """``query.offset`` style location of a validation error (``body`` itself left out)."""
    return ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
