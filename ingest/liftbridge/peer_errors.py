"""What a partition's leader answered a forwarded publish with, as the typed error it was.

A node answers a refusal as ``<liftlog code>: <message>`` (ingest/liftbridge/status.py), in
a gRPC status or a PublishAsync ``asyncError``. Rebuilding the typed error from it lets the
forwarding node answer its own client exactly as the leader would have: the same status code
and details, the same ``asyncError`` code.
"""

from __future__ import annotations

import re

import grpc

from ingest.liftbridge.acks import async_error
from ingest.liftbridge.status import GRPC_CODE_BY_ERROR, RelayedStatusError
from spark_log.errors import LiftlogError
from spark_log.liftbridge import api_pb2 as pb
from spark_log.wire import error_from_json

_CODE = re.compile(r"^[a-z][a-z0-9_]*$")


def error_from_status(status: grpc.StatusCode, details: str) -> LiftlogError:
    """The typed error behind a leader's status; a status that names no Liftlog error (the
    channel's own, such as a connection refused) is relayed as it came."""
    code, message = _split(details)
    if code is not None and GRPC_CODE_BY_ERROR.get(code, grpc.StatusCode.INTERNAL) == status:
        return error_from_json({"code": code, "message": message})
    return RelayedStatusError(status, details)


def error_from_async(error: pb.PublishAsyncError) -> LiftlogError:
    """The typed error behind a leader's ``asyncError`` (one whose code and message do not
    agree is an internal error, its message kept)."""
    code, message = _split(error.message)
    if code is not None:
        rebuilt = error_from_json({"code": code, "message": message})
        if async_error(rebuilt).code == error.code:
            return rebuilt
    return LiftlogError(error.message)


def _split(details: str) -> tuple[str | None, str]:
    code, separator, message = details.partition(": ")
    if separator and _CODE.match(code):
        return code, message
    return None, details
