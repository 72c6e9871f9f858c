"""gRPC status codes for Liftlog's typed errors, as Liftbridge's clients expect them.

Clients act on the code alone: FAILED_PRECONDITION makes them refresh metadata and retry (a
leader moved, an epoch went stale), NOT_FOUND and ALREADY_EXISTS are final, UNAVAILABLE is
retried after a pause. The message carries the Liftlog error code and its text.
"""

from __future__ import annotations

import grpc

from spark_log.errors import LiftlogError

GRPC_CODE_BY_ERROR: dict[str, grpc.StatusCode] = {
    "invalid_request": grpc.StatusCode.INVALID_ARGUMENT,
    "invalid_config": grpc.StatusCode.INVALID_ARGUMENT,
    "invalid_timestamp": grpc.StatusCode.INVALID_ARGUMENT,
    "internal_stream": grpc.StatusCode.INVALID_ARGUMENT,
    "immutable_field": grpc.StatusCode.INVALID_ARGUMENT,
    "encryption_unavailable": grpc.StatusCode.INVALID_ARGUMENT,
    "record_too_large": grpc.StatusCode.INVALID_ARGUMENT,
    "request_too_large": grpc.StatusCode.INVALID_ARGUMENT,
    "stream_exists": grpc.StatusCode.ALREADY_EXISTS,
    "stream_not_found": grpc.StatusCode.NOT_FOUND,
    "partition_not_found": grpc.StatusCode.NOT_FOUND,
    "cursor_not_found": grpc.StatusCode.NOT_FOUND,
    "group_not_found": grpc.StatusCode.NOT_FOUND,
    "no_reassignment": grpc.StatusCode.NOT_FOUND,
    "token_not_found": grpc.StatusCode.NOT_FOUND,
    "acl_not_found": grpc.StatusCode.NOT_FOUND,
    "no_committed_offset": grpc.StatusCode.NOT_FOUND,
    "not_leader": grpc.StatusCode.FAILED_PRECONDITION,
    "not_controller": grpc.StatusCode.FAILED_PRECONDITION,
    "stream_paused": grpc.StatusCode.FAILED_PRECONDITION,
    "stream_readonly": grpc.StatusCode.FAILED_PRECONDITION,
    "expected_offset_mismatch": grpc.StatusCode.FAILED_PRECONDITION,
    "stale_member_epoch": grpc.StatusCode.FAILED_PRECONDITION,
    "fenced_member": grpc.StatusCode.FAILED_PRECONDITION,
    "group_managed": grpc.StatusCode.FAILED_PRECONDITION,
    "group_not_empty": grpc.StatusCode.FAILED_PRECONDITION,
    "limit_exceeded": grpc.StatusCode.FAILED_PRECONDITION,
    "offset_out_of_range": grpc.StatusCode.OUT_OF_RANGE,
    "stop_position_reached": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "unauthenticated": grpc.StatusCode.UNAUTHENTICATED,
    "forbidden": grpc.StatusCode.PERMISSION_DENIED,
    "timeout": grpc.StatusCode.DEADLINE_EXCEEDED,
    "unknown_ack_error": grpc.StatusCode.UNKNOWN,
    "not_enough_replicas": grpc.StatusCode.UNAVAILABLE,
    "not_enough_replicas_after_append": grpc.StatusCode.UNAVAILABLE,
    "unavailable": grpc.StatusCode.UNAVAILABLE,
    "auth_unavailable": grpc.StatusCode.UNAVAILABLE,
    "coordinator_loading": grpc.StatusCode.UNAVAILABLE,
    "coordinator_error": grpc.StatusCode.UNAVAILABLE,
    "controller_moved": grpc.StatusCode.UNAVAILABLE,
    "controller_busy": grpc.StatusCode.UNAVAILABLE,
    "storage_error": grpc.StatusCode.UNAVAILABLE,
    "lake_error": grpc.StatusCode.UNAVAILABLE,
    "key_unavailable": grpc.StatusCode.UNAVAILABLE,
    "nats_unavailable": grpc.StatusCode.UNAVAILABLE,
    "no_responders": grpc.StatusCode.UNAVAILABLE,
}


class RelayedStatusError(LiftlogError):
    """A status the partition's leader (or the channel to it) ended a forwarded call with
    that names no Liftlog error: answered with the same code and details."""

    code = "relayed_status"

    def __init__(self, status: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.grpc_status = status


def grpc_code(error: LiftlogError) -> grpc.StatusCode:
    """The status an error is answered with; INTERNAL for a code without one."""
    if isinstance(error, RelayedStatusError):
        return error.grpc_status
    return GRPC_CODE_BY_ERROR.get(error.code, grpc.StatusCode.INTERNAL)


def status_details(error: LiftlogError) -> str:
    """``<code>: <message>``: the Liftlog code stays readable behind the gRPC status."""
    if isinstance(error, RelayedStatusError):
        return error.message
    return f"{error.code}: {error.message}"
