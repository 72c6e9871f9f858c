"""The consumer group RPCs. (not served yet)"""

from __future__ import annotations

from ingest.liftbridge.calls import RpcCall
from ingest.liftbridge.proto import api_pb2 as pb
from spark_log.errors import InvalidRequestError


async def join_group(
    call: RpcCall, request: pb.JoinConsumerGroupRequest
) -> pb.JoinConsumerGroupResponse:
    raise InvalidRequestError("join_group is not served yet")


async def leave_group(
    call: RpcCall, request: pb.LeaveConsumerGroupRequest
) -> pb.LeaveConsumerGroupResponse:
    raise InvalidRequestError("leave_group is not served yet")


async def fetch_assignments(
    call: RpcCall, request: pb.FetchConsumerGroupAssignmentsRequest
) -> pb.FetchConsumerGroupAssignmentsResponse:
    raise InvalidRequestError("fetch_assignments is not served yet")


async def report_coordinator(
    call: RpcCall, request: pb.ReportConsumerGroupCoordinatorRequest
) -> pb.ReportConsumerGroupCoordinatorResponse:
    raise InvalidRequestError("report_coordinator is not served yet")
