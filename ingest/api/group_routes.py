"""``/v1/groups``: consumer groups (join, heartbeat, leave, commit, fetch, describe, reset).

Any node answers; the group's coordinator (the leader of its ``__cursors`` partition) serves
and other nodes forward to it (docs/consumers.md). Authorization is per stream and done here,
since the streams are in the body or in the group: CONSUME on every stream a join subscribes
to, a commit names, or a member's heartbeat and leave concern; DESCRIBE filters describe and
fetch; ALTER on the stream for a reset. The route table only requires a credential.
"""

from __future__ import annotations

from fastapi import FastAPI, Request

from ingest.admin.node_view import NodeView
from ingest.api.auth import principal_of, require
from ingest.api.models import GroupCommit, GroupHeartbeat, GroupJoin, GroupOffsetsReset
from ingest.groups.coordinator import StreamFilter
from ingest.groups.cursors import HEADER_FORWARDED
from ingest.groups.service import GroupService, StreamCheck
from spark_log.api_models import (
    GroupCommitted,
    GroupDeleted,
    GroupDescription,
    GroupList,
    GroupOffset,
    GroupOffsets,
    MemberAssignment,
    MemberLeft,
)
from spark_log.api_models import GroupOffsetsReset as GroupOffsetsResetView
from spark_log.auth import Action, stream_resource

GROUP_PATH = "/v1/groups/{group}"
MEMBER_PATH = "/v1/groups/{group}/members/{member_id}"


def install_group_routes(app: FastAPI, node: NodeView, groups: GroupService) -> None:
    def checker(request: Request, action: Action) -> StreamCheck:
        principal = principal_of(request)

        def check(stream: str) -> None:
            require(node.auth, principal, action, stream_resource(stream))

        return check

    def visible(request: Request) -> StreamFilter:
        principal = principal_of(request)
        return lambda s: node.auth.allows(principal, Action.DESCRIBE, stream_resource(s))

    @app.post(f"{GROUP_PATH}/members", tags=["groups"], response_model=MemberAssignment)
    async def join_group(group: str, body: GroupJoin, request: Request) -> MemberAssignment:
        """Join (``member_id`` null) and get a first assignment; heartbeat from then on."""
        check = checker(request, Action.CONSUME)
        for stream in body.streams:
            check(stream)
        joined = body.model_dump()
        forwarded = _forwarded(request)
        if not forwarded:  # a forwarding node already put the member's own address there
            joined["client_host"] = request.client.host if request.client else None
        return await groups.join(group, joined, forwarded=forwarded)

    @app.post(f"{MEMBER_PATH}/heartbeat", tags=["groups"], response_model=MemberAssignment)
    async def heartbeat(
        group: str, member_id: str, body: GroupHeartbeat, request: Request
    ) -> MemberAssignment:
        """Keep the session; ``owned`` without a revoking partition acks its revocation."""
        return await groups.heartbeat(
            group,
            member_id,
            body.member_epoch,
            body.owned,
            checker(request, Action.CONSUME),
            forwarded=_forwarded(request),
        )

    @app.delete(MEMBER_PATH, tags=["groups"], response_model=MemberLeft)
    async def leave_group(group: str, member_id: str, request: Request) -> MemberLeft:
        """Leave now (commit first): the member's partitions move at once."""
        check = checker(request, Action.CONSUME)
        return await groups.leave(group, member_id, check, forwarded=_forwarded(request))

    @app.post(f"{GROUP_PATH}/offsets", tags=["groups"], response_model=GroupCommitted)
    async def commit_offsets(group: str, body: GroupCommit, request: Request) -> GroupCommitted:
        """Commit the last offset processed of partitions the member holds."""
        check = checker(request, Action.CONSUME)
        for entry in body.offsets:
            check(entry.stream)
        offsets = [GroupOffset(o.stream, o.partition, o.offset) for o in body.offsets]
        return await groups.commit(
            group, body.member_id, body.member_epoch, offsets, forwarded=_forwarded(request)
        )

    @app.get(f"{GROUP_PATH}/offsets", tags=["groups"], response_model=GroupOffsets)
    async def fetch_offsets(
        group: str, request: Request, stream: str | None = None
    ) -> GroupOffsets:
        """Committed offsets of every partition of the group's streams (null: none)."""
        return await groups.fetch_offsets(
            group, stream, visible(request), forwarded=_forwarded(request)
        )

    @app.post(f"{GROUP_PATH}/offsets/reset", tags=["groups"], response_model=GroupOffsetsResetView)
    async def reset_offsets(
        group: str, body: GroupOffsetsReset, request: Request
    ) -> GroupOffsetsResetView:
        """Plan (``execute`` false) or write new offsets of an empty group for one stream."""
        checker(request, Action.ALTER)(body.stream)
        return await groups.reset_offsets(group, body.model_dump(), forwarded=_forwarded(request))

    @app.get("/v1/groups", tags=["groups"], response_model=GroupList)
    async def list_groups(local: bool = False) -> GroupList:
        """Every group of every coordinator (``local``: this node's coordinators only)."""
        return await groups.list_groups(local=local)

    @app.get(GROUP_PATH, tags=["groups"], response_model=GroupDescription)
    async def describe_group(group: str, request: Request) -> GroupDescription:
        """Members, assignment, committed offsets, high watermarks and lag."""
        return await groups.describe(group, visible(request), forwarded=_forwarded(request))

    @app.delete(GROUP_PATH, tags=["groups"], response_model=GroupDeleted)
    async def delete_group(group: str, request: Request) -> GroupDeleted:
        """Delete an empty group with its committed offsets."""
        return await groups.delete(group, forwarded=_forwarded(request))


def _forwarded(request: Request) -> bool:
    return request.headers.get(HEADER_FORWARDED) == "1"
