"""The consumer group RPCs. (not served yet)"""

from __future__ import annotations

from ingest.liftbridge.calls import RpcCall
from spark_log.errors import InvalidRequestError
from spark_log.liftbridge import api_pb2 as pb


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


async def check_member_assignment(
    call: RpcCall, consumer: pb.Consumer, stream: str, partition: int
) -> None:
    """Refuse (FAILED_PRECONDITION) a group member's subscription to a partition the group
    did not assign it in ``consumer.groupEpoch``."""
    raise InvalidRequestError("consumer group subscriptions are not served yet")
