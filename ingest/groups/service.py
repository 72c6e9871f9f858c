"""Consumer groups on the node: which coordinator serves a group, forwarding, and expiry.

A group's coordinator is the leader of ``__cursors`` partition
``cursors_partition("__group:<group>")``, found through the ``CursorService`` (which loads that
partition's ``CursorStore`` once per leadership). Any node accepts a group request and
forwards it once to the coordinator (``Liftlog-Forwarded``), as cursor requests are. Failover
is the ``__cursors`` partition's leader election: the new leader's store is a new object,
so a new ``GroupCoordinator`` is built from the log, with fresh sessions for every member.

Session expiry runs in one background task per node (started with the first coordinator,
stopped by ``close`` when the API stops): it sleeps until the earliest session deadline of
any coordinator this node still leads, and drops coordinators whose leadership ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from urllib.parse import quote

from ingest.admin.node_view import NodeView
from ingest.groups.coordinator import (
    GROUP_CURSOR_PREFIX,
    GroupCoordinator,
    PartitionStates,
    StreamFilter,
    group_cursor_id,
    now_ms,
    validate_group_id,
)
from ingest.groups.cursor_store import CursorStore
from ingest.groups.cursors import HEADER_FORWARDED, CursorService
from ingest.groups.state import GroupLimits, MemberClient
from ingest.groups.streams import GroupStreams
from ingest.peer_calls import call_peer
from ingest.security.node_credentials import outgoing_credentials
from spark_log.api_models import (
    GroupCommitted,
    GroupDeleted,
    GroupDescription,
    GroupList,
    GroupOffset,
    GroupOffsets,
    GroupOffsetsReset,
    GroupSummary,
    MemberAssignment,
    MemberLeft,
    PartitionState,
)
from spark_log.client.rest import RestClient
from spark_log.errors import GroupManagedError, LiftlogError, NotLeaderError
from spark_log.json_types import JsonObject, JsonValue
from spark_log.stream_spec import CURSORS_STREAM

log = logging.getLogger("liftlog.groups")

FORWARD_TIMEOUT_S = 30.0
MAX_EXPIRY_SLEEP_S = 1.0
"""The expiry task also notices lost leaderships: it never sleeps longer than this."""
LAG_REFRESH_TIMEOUT_S = 2.0
"""A scrape waits at most this long for the groups' lag (else it shows the last scrape's)."""

StreamCheck = Callable[[str], None]
"""Raises ForbiddenError unless the caller may act on the stream."""


def group_limits(node: NodeView) -> GroupLimits:
    config = node.config.groups
    return GroupLimits(
        min_session_timeout_ms=config.min_session_timeout_ms,
        max_session_timeout_ms=config.max_session_timeout_ms,
        default_session_timeout_ms=config.session_timeout_ms,
        heartbeat_interval_ms=config.heartbeat_interval_ms,
    )


class GroupService:
    """One per node: the coordinators of the ``__cursors`` partitions it leads."""

    def __init__(self, node: NodeView, cursors: CursorService) -> None:
        self._node = node
        self._cursors = cursors
        self._streams = GroupStreams(node)
        self._limits = group_limits(node)
        self._coordinators: dict[int, GroupCoordinator] = {}
        self._expiry: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._lag_labels: set[tuple[str, str, str]] = set()

    # ------------------------------------------------------------------ routing

    async def _route(self, group: str, forwarded: bool) -> GroupCoordinator | str:
        validate_group_id(group)
        target = await self._cursors.route(group_cursor_id(group), forwarded)
        if isinstance(target, str):
            return target
        return self._coordinator(target)

    def _coordinator(self, store: CursorStore) -> GroupCoordinator:
        partition = store.replica.partition
        coordinator = self._coordinators.get(partition)
        if coordinator is None or coordinator.store is not store:
            coordinator = GroupCoordinator(
                store, self._limits, self._streams, events=self._record_activity
            )
            self._coordinators[partition] = coordinator
            self._start_expiry()
            self._wake.set()
        return coordinator

    async def _record_activity(self, op: str, fields: JsonObject) -> None:
        """Queue a membership change for ``__activity`` when it is on. The change is already
        in ``__cursors`` (no ZooKeeper transaction can hold both), so an event ZooKeeper
        refuses is logged and skipped rather than failing a join that took effect."""
        try:
            await asyncio.to_thread(self._node.store.activity.record, op, **fields)
        except LiftlogError as exc:
            log.warning("activity: %s %s not recorded: %s", op, fields, exc)

    async def _forward(
        self,
        url: str,
        method: str,
        path: str,
        body: JsonObject | None = None,
        params: Mapping[str, str | None] | None = None,
    ) -> JsonValue:
        client = RestClient(url, FORWARD_TIMEOUT_S, outgoing_credentials(self._node.config))
        response = await call_peer(
            client.request,
            method,
            path,
            json_body=body,
            params=params,
            headers={HEADER_FORWARDED: "1"},
        )
        return response.json()

    # ------------------------------------------------------------------ members

    async def join(
        self,
        group: str,
        body: JsonObject,
        *,
        forwarded: bool,
    ) -> MemberAssignment:
        target = await self._route(group, forwarded)
        if isinstance(target, str):
            return MemberAssignment.from_json(
                await self._forward(target, "POST", f"{_group_path(group)}/members", body)
            )
        answer = await target.join(
            group,
            body.get("member_id"),
            body.get("instance_id"),
            list(body["streams"]),
            body.get("session_timeout_ms"),
            client=MemberClient(body.get("client_id"), body.get("client_host")),
        )
        self._wake.set()
        return answer

    async def heartbeat(
        self,
        group: str,
        member_id: str,
        member_epoch: int,
        owned: Mapping[str, list[int]],
        check: StreamCheck,
        *,
        forwarded: bool,
    ) -> MemberAssignment:
        target = await self._route(group, forwarded)
        if isinstance(target, str):
            path = f"{_member_path(group, member_id)}/heartbeat"
            body = {"member_epoch": member_epoch, "owned": dict(owned)}
            return MemberAssignment.from_json(await self._forward(target, "POST", path, body))
        for stream in target.member_streams(group, member_id):
            check(stream)
        return await target.heartbeat(group, member_id, member_epoch, owned)

    async def leave(
        self, group: str, member_id: str, check: StreamCheck, *, forwarded: bool
    ) -> MemberLeft:
        target = await self._route(group, forwarded)
        if isinstance(target, str):
            path = _member_path(group, member_id)
            return MemberLeft.from_json(await self._forward(target, "DELETE", path))
        for stream in target.member_streams(group, member_id):
            check(stream)
        await target.leave(group, member_id)
        return MemberLeft(group, member_id)

    # ------------------------------------------------------------------ offsets

    async def commit(
        self,
        group: str,
        member_id: str,
        member_epoch: int,
        offsets: list[GroupOffset],
        *,
        forwarded: bool,
    ) -> GroupCommitted:
        target = await self._route(group, forwarded)
        if isinstance(target, str):
            body = {
                "member_id": member_id,
                "member_epoch": member_epoch,
                "offsets": [o.to_json() for o in offsets],
            }
            path = f"{_group_path(group)}/offsets"
            return GroupCommitted.from_json(await self._forward(target, "POST", path, body))
        return await target.commit(group, member_id, member_epoch, offsets)

    async def fetch_offsets(
        self, group: str, stream: str | None, visible: StreamFilter, *, forwarded: bool
    ) -> GroupOffsets:
        target = await self._route(group, forwarded)
        if isinstance(target, str):
            path = f"{_group_path(group)}/offsets"
            params = {"stream": stream}
            return GroupOffsets.from_json(await self._forward(target, "GET", path, None, params))
        return await target.fetch_offsets(group, stream, visible)

    async def reset_offsets(
        self, group: str, body: JsonObject, *, forwarded: bool
    ) -> GroupOffsetsReset:
        target = await self._route(group, forwarded)
        if isinstance(target, str):
            path = f"{_group_path(group)}/offsets/reset"
            return GroupOffsetsReset.from_json(await self._forward(target, "POST", path, body))
        plan = await target.reset_offsets(
            group,
            body["stream"],
            body["to"],
            body.get("value"),
            body.get("partitions"),
            bool(body.get("execute")),
        )
        return GroupOffsetsReset(group, bool(body.get("execute")), tuple(plan))

    async def refuse_if_managed(self, cursor_id: str, *, forwarded: bool) -> None:
        """A ``__group:`` cursor is the group's commits while it has members: a direct set or
        delete is refused (checked at the coordinator; a forwarded cursor request is checked
        again there)."""
        if not cursor_id.startswith(GROUP_CURSOR_PREFIX):
            return
        group = cursor_id[len(GROUP_CURSOR_PREFIX) :]
        target = await self._route(group, forwarded)
        if isinstance(target, GroupCoordinator) and target.has_members(group):
            raise GroupManagedError(
                f"cursor {cursor_id!r} holds the commits of group {group!r}, which has "
                "members: stop them, or use `liftlog group reset-offsets`"
            )

    # ------------------------------------------------------------------ admin

    async def describe(
        self, group: str, visible: StreamFilter, *, forwarded: bool
    ) -> GroupDescription:
        target = await self._route(group, forwarded)
        if isinstance(target, str):
            return GroupDescription.from_json(
                await self._forward(target, "GET", _group_path(group))
            )
        return await target.describe(group, self._node.config.broker_id, visible)

    async def delete(self, group: str, *, forwarded: bool) -> GroupDeleted:
        target = await self._route(group, forwarded)
        if isinstance(target, str):
            return GroupDeleted.from_json(await self._forward(target, "DELETE", _group_path(group)))
        await target.delete(group)
        return GroupDeleted(group)

    async def list_groups(self, *, local: bool) -> GroupList:
        """Every coordinator's groups: this node's, and (unless ``local``) those of the
        leader of every other ``__cursors`` partition, asked with ``?local=true``."""
        summaries: list[GroupSummary] = []
        remote: set[str] = set()
        for partition in range(await self._cursors.partitions()):
            try:
                target = await self._cursors.route_partition(partition, forwarded=local)
            except NotLeaderError:  # ``local``: another node's partition, listed by it
                continue
            if isinstance(target, str):
                remote.add(target)
            else:
                summaries.extend(self._coordinator(target).summaries())
        for url in sorted(remote):
            listed = GroupList.from_json(
                await self._forward(url, "GET", "/v1/groups", None, {"local": "true"})
            )
            summaries.extend(listed.groups)
        return GroupList(tuple(sorted(summaries, key=lambda s: s.group)))

    # ------------------------------------------------------------------ metrics

    async def refresh_lag_metrics(self) -> None:
        """Set ``liftlog_consumer_group_lag_records`` for every group this node coordinates
        (called by a scrape, so the lag is as fresh as the scrape and costs nothing between
        scrapes). A slow or failing refresh keeps the last scrape's values."""
        try:
            async with asyncio.timeout(LAG_REFRESH_TIMEOUT_S):
                lags = await self._current_lags()
        except (TimeoutError, LiftlogError) as exc:
            log.warning("consumer group lag not refreshed: %s", exc)
            return
        gauge = self._node.metrics.consumer_group_lag
        for labels, lag in lags.items():
            gauge.labels(*labels).set(lag)
        for labels in self._lag_labels - lags.keys():
            gauge.remove(*labels)
        self._lag_labels = set(lags)

    async def _current_lags(self) -> dict[tuple[str, str, str], int]:
        lags: dict[tuple[str, str, str], int] = {}
        broker_id = self._node.config.broker_id
        states = _once_per_stream(self._streams.partition_states)  # many groups, one stream
        for (stream, partition), replica in list(self._node.replicas.replicas.items()):
            if stream != CURSORS_STREAM or not replica.state.is_leader:
                continue
            try:
                store = await self._cursors.route_partition(partition, forwarded=True)
            except NotLeaderError:
                continue  # leadership moved since the loop began
            if isinstance(store, str):
                continue
            coordinator = self._coordinator(store)
            for group in sorted(coordinator.known_groups()):
                described = await coordinator.describe(group, broker_id, lambda _: True, states)
                for p in described.partitions:
                    if p.lag is not None:
                        lags[(group, p.stream, str(p.partition))] = p.lag
        return lags

    # ------------------------------------------------------------------ expiry

    def _start_expiry(self) -> None:
        if self._expiry is None or self._expiry.done():
            self._expiry = asyncio.create_task(self._expire_loop(), name="group-expiry")

    async def _expire_loop(self) -> None:
        while True:
            self._wake.clear()
            deadline = await self._expire_once()
            delay = MAX_EXPIRY_SLEEP_S
            if deadline is not None:
                delay = min(delay, max(0.0, (deadline - now_ms()) / 1000))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    async def _expire_once(self) -> int | None:
        """Expire due sessions on every coordinator still led; the earliest next deadline."""
        deadlines: list[int] = []
        for partition, coordinator in list(self._coordinators.items()):
            if not coordinator.current:
                del self._coordinators[partition]
                continue
            try:
                deadline = await coordinator.expire_due()
            except LiftlogError as exc:
                log.warning("group session expiry on __cursors/%d failed: %s", partition, exc)
                continue
            if deadline is not None:
                deadlines.append(deadline)
        return min(deadlines, default=None)

    async def close(self) -> None:
        """Stop the expiry task (the API is stopping)."""
        task, self._expiry = self._expiry, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _group_path(group: str) -> str:
    return f"/v1/groups/{quote(group, safe='')}"


def _member_path(group: str, member_id: str) -> str:
    return f"{_group_path(group)}/members/{quote(member_id, safe='')}"


def _once_per_stream(read: PartitionStates) -> PartitionStates:
    """``read`` asked at most once per stream (a failed read is asked again)."""
    found: dict[str, list[PartitionState]] = {}

    async def states(stream: str) -> list[PartitionState]:
        if stream not in found:
            found[stream] = await read(stream)
        return found[stream]

    return states
