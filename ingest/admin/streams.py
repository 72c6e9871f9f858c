"""Admin operations shared by the REST routes: stream create/list/describe/delete/pause.

ZooKeeper is the source of truth; after a change this node reconciles at once so that a
client that gets a 201 can publish immediately. Every answer is one of the typed models of
``spark_log.api_models`` (the routes hand them to FastAPI as they are); another node's REST
answer is parsed into its model once, where it arrives.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

from coordinator.znodes import NO_LEADER, StreamRecord
from coordinator.znodes import PartitionState as PartitionRecord
from ingest.admin.compaction_view import compaction_state
from ingest.admin.limits import check_growth_limits, check_stream_limits
from ingest.admin.node_view import NodeView
from ingest.admin.unclean_loss import assess_loss
from ingest.lake.exporter import in_lake_thread
from ingest.peer_calls import call_peer
from ingest.replication.follower_path import LeaderReport
from ingest.replication.storage_stall import StorageStall
from ingest.security.node_credentials import outgoing_credentials
from spark_log.api_models import (
    EpochEntryView,
    ErrorDetail,
    FlushResult,
    LakeRef,
    LeaderReportView,
    PartitionFlush,
    PartitionState,
    RecoveryLossView,
    ReplicaView,
    StorageErrorView,
    StreamDescription,
    StreamSummary,
    UncleanElection,
)
from spark_log.client.rest import RestClient
from spark_log.errors import (
    AuthUnavailableError,
    ForbiddenError,
    InternalStreamError,
    InvalidRequestError,
    LiftlogError,
    PartitionNotFoundError,
    UnauthenticatedError,
    UnavailableError,
)
from spark_log.json_types import JsonMapping
from spark_log.lake import LakeTable, configured_table_uri
from spark_log.lake.storage import LakeStorage, lake_storage
from spark_log.log import RecoveryLoss
from spark_log.stream_spec import StreamSpec, is_internal_stream

LEADER_VIEW_TIMEOUT_S = 2.0
TABLE_FALLBACK_TIMEOUT_S = 5.0
"""How long a describe reads the lake table for offsets a leader could not give."""
FLUSH_FORWARD_MARGIN_S = 10.0
UNCLEAN_ELECTION_WARNING = (
    "every record the other replicas hold from where their logs diverge from the candidate's "
    "(its log end offset at most) is lost; consumers may see offsets reused"
)


async def create_stream(node: NodeView, spec: StreamSpec) -> tuple[bool, StreamDescription]:
    await asyncio.to_thread(check_stream_limits, node.store, node.config.limits, spec)
    provider = node.replicas.key_provider
    created, _record = await asyncio.to_thread(node.store.create, spec, provider)
    await node.reconcile_now()
    return created, await describe_stream(node, spec.name)


def refuse_internal(name: str, what: str) -> None:
    """The nodes' own streams are never deleted, paused, altered or made read-only."""
    if is_internal_stream(name):
        raise InternalStreamError(f"{name!r} is an internal stream: it cannot be {what}")


async def delete_stream(node: NodeView, name: str) -> None:
    refuse_internal(name, "deleted")
    await asyncio.to_thread(node.store.delete, name)
    await node.reconcile_now()


async def set_paused(node: NodeView, name: str, paused: bool) -> StreamDescription:
    refuse_internal(name, "paused or resumed")
    await asyncio.to_thread(node.store.set_paused, name, paused)
    await node.reconcile_now()
    return await describe_stream(node, name)


async def set_read_only(node: NodeView, name: str, read_only: bool) -> StreamDescription:
    """Every leader refuses publishes with ``stream_readonly`` once it has seen the flag
    (its stream watch); this node applies it before answering."""
    refuse_internal(name, "made read-only or read-write")
    await asyncio.to_thread(node.store.set_read_only, name, read_only)
    await node.reconcile_now()
    return await describe_stream(node, name)


async def alter_stream(node: NodeView, name: str, changes: JsonMapping) -> StreamDescription:
    """Change the spec's alterable fields; every node adopts the new spec at its next
    reconcile (its stream watch), this one before answering. Growth stays within the
    ``[limits]`` a create does."""
    refuse_internal(name, "altered")
    await asyncio.to_thread(check_growth_limits, node.store, node.config.limits, name, changes)
    provider = node.replicas.key_provider
    await asyncio.to_thread(node.store.alter, name, changes, provider)
    await node.reconcile_now()
    return await describe_stream(node, name)


async def list_streams(node: NodeView) -> list[StreamSummary]:
    records = await asyncio.to_thread(node.store.list)
    return [stream_summary(r) for r in records]


async def describe_stream(
    node: NodeView, name: str, *, compaction: bool = True
) -> StreamDescription:
    """The stream with every partition's state; offsets come from each partition's leader.
    ``compaction``: also read how far key compaction has cleaned the lake (one table read;
    callers that want offsets only, such as group lag, skip it)."""
    record = await asyncio.to_thread(node.store.get, name)
    states = await asyncio.to_thread(node.store.partition_states, name)
    api_urls = {b.broker_id: b.api_url for b in await node.live_brokers()}
    partitions = [
        await _describe_partition(node, name, p, state, api_urls)
        for p, (state, _version) in sorted(states.items())
    ]
    uri = lake_table_uri(node, record)
    lake = _lake_ref(uri, _export_refusal(node))
    if uri is not None and lake is not None:
        storage = lake_storage(node.config.lake)
        partitions = await _fill_lake_offsets_from_table(uri, name, partitions, storage)
        if compaction:
            partitions, lake = await _with_compaction_state(uri, name, partitions, lake, storage)
    return StreamDescription(
        **_flattened_spec(record.spec),
        spec=record.spec,
        partitions=tuple(partitions),
        paused=record.paused,
        read_only=record.read_only,
        idle_paused_partitions=record.idle_paused_partitions,
        created_at_ms=record.created_at_ms,
        lake=lake,
    )


def _export_refusal(node: NodeView) -> str | None:
    safety = node.replicas.lake_safety
    return None if safety is None else safety.refusal


# dataclasses.asdict types every value Any: each is its spec field's own type
def _flattened_spec(spec: StreamSpec) -> dict[str, Any]:
    """The spec's fields as a describe repeats them at its top level; all but ``partitions``,
    which there is the per-partition list (the count stays in ``spec``)."""
    return {k: v for k, v in dataclasses.asdict(spec).items() if k != "partitions"}


def _lake_ref(uri: str | None, refused: str | None = None) -> LakeRef | None:
    return None if uri is None else LakeRef(uri, refused)


def lake_table_uri(node: NodeView, record: StreamRecord) -> str | None:
    """The stream's Delta table, or None when this node's lake is disabled (or the stream is
    internal: never exported)."""
    if record.spec.internal:
        return None
    return configured_table_uri(node.config.lake, record.spec.name, record.created_at_ms)


async def _fill_lake_offsets_from_table(
    uri: str, name: str, partitions: list[PartitionState], storage: LakeStorage
) -> list[PartitionState]:
    """Partitions whose leader could not say (offline, just elected, unreachable) get their
    lake offsets from the table itself, the source of truth. They are left null if the table
    cannot be read within ``TABLE_FALLBACK_TIMEOUT_S``: during an object-store outage a read
    waits for the store's own timeouts, and a describe must answer before its caller gives up.
    """
    if all(p.lake_offset is not None for p in partitions):
        return partitions
    table = LakeTable(uri, name, storage)
    try:
        async with asyncio.timeout(TABLE_FALLBACK_TIMEOUT_S):
            offsets = await in_lake_thread(table.exported_offsets, len(partitions))
            firsts = await in_lake_thread(table.first_offsets, len(partitions))
    except (LiftlogError, TimeoutError):
        return partitions
    return [
        p if p.lake_offset is not None else _with_table_offsets(p, offsets, firsts)
        for p in partitions
    ]


async def _with_compaction_state(
    uri: str, name: str, partitions: list[PartitionState], lake: LakeRef, storage: LakeStorage
) -> tuple[list[PartitionState], LakeRef]:
    """Each partition's compacted offset and the last compaction's time, from the table's app
    transactions (``compaction_view``: never held by an object store that stopped answering;
    left null when the table was never read)."""
    state = await compaction_state(LakeTable(uri, name, storage), len(partitions))
    if state is None:
        return partitions, lake
    cleaned = [
        dataclasses.replace(p, lake_compacted_offset=state.partition(p.partition).cleaned_offset)
        for p in partitions
    ]
    return cleaned, dataclasses.replace(lake, compacted_at_ms=state.last_run)


def _with_table_offsets(
    state: PartitionState, offsets: dict[int, int | None], firsts: dict[int, int | None]
) -> PartitionState:
    exported = offsets.get(state.partition)
    if exported is None and state.log_start_offset is not None:
        exported = state.log_start_offset  # never exported: the lake holds nothing
    return dataclasses.replace(
        state, lake_start_offset=firsts.get(state.partition), lake_offset=exported
    )


def local_partition_view(node: NodeView, name: str, p: int) -> ReplicaView:
    """What this broker's replica knows (the leader also knows its followers' LEOs)."""
    replica = node.replicas.replica(name, p)
    state, log_, exporter = replica.state, replica.open_log, replica.exporter
    leos: dict[str, int] | None = None
    if state.is_leader and log_ is not None:
        followers = {str(r): leo for r, leo in state.followers.log_end_offsets().items()}
        leos = {str(node.config.broker_id): log_.log_end_offset, **followers}
    return ReplicaView(
        partition=p,
        broker=node.config.broker_id,
        role=state.role,
        leader_epoch=state.leader_epoch,
        high_watermark=log_.high_watermark if log_ else None,
        log_end_offset=log_.log_end_offset if log_ else None,
        log_start_offset=log_.log_start_offset if log_ else None,
        offline=state.offline_reason is not None,
        storage_error=_storage_error_view(state.storage_stall),
        fenced=state.fenced_reason is not None,
        lake_start_offset=exporter.lake_start_offset if exporter else None,
        lake_offset=exporter.lake_offset if exporter else None,
        lake_error=_lake_error_view(exporter.last_error if exporter else None),
        recovery_loss=_recovery_loss_view(log_.recovery_loss if log_ else None),
        replica_log_end_offsets=leos,
        last_leader_report=_leader_report_view(replica.follower_path.last_leader_report),
        epoch_entries=_epoch_entries_view(log_.epoch_entries) if log_ else None,
    )


def _epoch_entries_view(entries: list[tuple[int, int]]) -> tuple[EpochEntryView, ...]:
    """The leader-epoch cache, so that an unclean election's dry run can tell where another
    replica's log diverges from this one."""
    return tuple(EpochEntryView(epoch, start) for epoch, start in entries)


def _leader_report_view(report: LeaderReport | None) -> LeaderReportView | None:
    """The HW a leader last sent this replica as a follower, with its age: after that leader
    dies it is the best figure left of what it had committed."""
    if report is None:
        return None
    age_ms = int((time.monotonic() - report.at_monotonic_s) * 1000)
    return LeaderReportView(report.leader, report.leader_epoch, report.high_watermark, age_ms)


def _lake_error_view(error: LiftlogError | None) -> ErrorDetail | None:
    """The error the lake export last failed with, while it retries."""
    return None if error is None else ErrorDetail(error.code, error.message)


def _storage_error_view(stall: StorageStall | None) -> StorageErrorView | None:
    """A full disk's stall, while the replica retries until it has space again."""
    if stall is None:
        return None
    return StorageErrorView(stall.message, stall.since_ms, stall.retries)


def _recovery_loss_view(loss: RecoveryLoss | None) -> RecoveryLossView | None:
    """Durable offsets this replica lost at recovery and has not yet fetched again (it stays
    out of the ISR, never elected, until it has)."""
    if loss is None:
        return None
    return RecoveryLossView(loss.first_lost_offset, loss.durable_end_offset)


async def flush_stream(node: NodeView, name: str) -> FlushResult:
    """Seal, fsync and export every partition of the stream, each on its leader (this node or
    another, asked over REST), in parallel; returns once the lake holds everything that was
    committed when each leader sealed, with the per-partition lake offsets."""
    record = await asyncio.to_thread(node.store.get, name)
    states = await asyncio.to_thread(node.store.partition_states, name)
    api_urls = {b.broker_id: b.api_url for b in await node.live_brokers()}
    results = await asyncio.gather(
        *(
            _flush_on_leader(node, name, p, state.leader, api_urls)
            for p, (state, _version) in sorted(states.items())
        ),
        return_exceptions=True,
    )
    partitions: list[PartitionFlush] = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        partitions.append(result)
    return FlushResult(
        stream=name,
        flushed_partitions=tuple(r.partition for r in partitions),
        partitions=tuple(partitions),
        lake=_lake_ref(lake_table_uri(node, record), _export_refusal(node)),
    )


async def flush_partition(node: NodeView, name: str, p: int) -> PartitionFlush:
    """Seal, fsync and export one partition this node leads (NotLeaderError otherwise)."""
    return await node.replicas.replica(name, p).seal_and_export()


async def _flush_on_leader(
    node: NodeView, name: str, p: int, leader: int, api_urls: dict[int, str]
) -> PartitionFlush:
    if leader == node.config.broker_id:
        return await flush_partition(node, name, p)
    url = api_urls.get(leader)
    if leader == NO_LEADER or url is None:
        raise UnavailableError(f"{name}/{p} has no live leader to flush it")
    timeout_s = node.config.lake.flush_timeout_s + FLUSH_FORWARD_MARGIN_S
    response = await call_peer(
        RestClient(url, timeout_s, outgoing_credentials(node.config)).request,
        "POST",
        f"/v1/streams/{name}/partitions/{p}/flush",
    )
    return PartitionFlush.from_json(response.json())


def stream_summary(record: StreamRecord) -> StreamSummary:
    return StreamSummary(
        **dataclasses.asdict(record.spec),
        paused=record.paused,
        read_only=record.read_only,
        idle_paused_partitions=record.idle_paused_partitions,
        created_at_ms=record.created_at_ms,
    )


async def _describe_partition(
    node: NodeView, name: str, p: int, state: PartitionRecord, api_urls: dict[int, str]
) -> PartitionState:
    """The controller's record of the partition, with the offsets its leader reports (null
    when the leader is silent)."""
    offline = state.leader == NO_LEADER
    described = PartitionState(
        partition=p,
        leader=state.leader,
        leader_epoch=state.leader_epoch,
        replicas=tuple(state.replicas),
        isr=tuple(state.isr),
        offline=offline,
    )
    view = await _replica_view(node, name, p, state.leader, api_urls)
    if view is None:
        return described
    return dataclasses.replace(
        described,
        high_watermark=view.high_watermark,
        log_end_offset=view.log_end_offset,
        log_start_offset=view.log_start_offset,
        lake_start_offset=view.lake_start_offset,
        lake_offset=view.lake_offset,
        lake_error=view.lake_error,
        offline=offline or view.offline,
        storage_error=view.storage_error,
        replica_log_end_offsets=view.replica_log_end_offsets or {},
    )


async def unclean_election(
    node: NodeView, name: str, p: int, broker_id: int | None, confirm: bool
) -> UncleanElection:
    """An explicit, visible choice to elect outside the ISR (off by default, as after Jepsen).

    The dry run names the candidate (the live replica with the highest LEO unless one is
    given) and the offsets known to be lost (``ingest.admin.unclean_loss``), counted from where each
    replica's log diverges from the candidate's by leader epoch, not merely from its LEO. The
    figure is exact only when every member of the last ISR (and the leader) answered, no
    answering replica reports a recovery loss, the candidate and every answering holder
    reported their leader epochs, the candidate's log and each holder's are prefixes one of
    the other, and no other figure claims more than the highest holder LEO minus the
    candidate's. Otherwise it is a lower bound, said plainly: a dead leader that acknowledged
    alone may hold records no live replica has, and a damaged or diverging log leaves the
    rest unknown.
    """
    states = await asyncio.to_thread(node.store.partition_states, name)
    if p not in states:
        raise PartitionNotFoundError(f"stream {name!r} has no partition {p}")
    state = states[p][0]
    api_urls = {b.broker_id: b.api_url for b in await node.live_brokers()}
    views = {
        r: view
        for r in state.replicas
        if r in api_urls
        and (view := await _replica_view(node, name, p, r, api_urls, refusal_fails=True))
        is not None
    }
    if not views:
        raise UnavailableError(f"no live replica of {name}/{p} answers")
    candidate = (
        broker_id
        if broker_id is not None
        else max(views, key=lambda r: views[r].log_end_offset or 0)
    )
    if candidate not in views:
        raise InvalidRequestError(f"broker {candidate} is not a live replica of {name}/{p}")
    known_hw = max(v.high_watermark or 0 for v in views.values())
    loss = assess_loss(state, views, candidate)
    result = UncleanElection(
        stream=name,
        partition=p,
        candidate=candidate,
        candidate_log_end_offset=views[candidate].log_end_offset or 0,
        highest_known_high_watermark=known_hw,
        offsets_known_lost=loss.offsets_known_lost,
        loss_bound=loss.loss_bound,
        loss_known=loss.loss_known,
        loss_explanation=loss.explanation,
        last_isr=loss.last_isr,
        unreachable_isr=loss.unreachable_isr,
        warning=UNCLEAN_ELECTION_WARNING,
    )
    if not confirm:
        return result
    leader, leader_epoch = await _elect_unclean(node, name, p, candidate, api_urls)
    return dataclasses.replace(result, elected=True, leader=leader, leader_epoch=leader_epoch)


async def _replica_view(
    node: NodeView,
    name: str,
    p: int,
    broker: int,
    api_urls: dict[int, str],
    *,
    refusal_fails: bool = False,
) -> ReplicaView | None:
    """A broker's own view of its replica: locally, or from its REST API (None if silent).

    With ``refusal_fails`` (an unclean election), a replica that answers but refuses the
    caller (401, 403, 503 auth_unavailable) raises that error: counting it as silent could
    elect a shorter log than the one it holds. A describe only loses that leader's offsets."""
    if broker == node.config.broker_id:
        try:
            return local_partition_view(node, name, p)
        except LiftlogError:
            return None
    url = api_urls.get(broker)
    if url is None:
        return None
    try:
        body = await call_peer(
            RestClient(url, LEADER_VIEW_TIMEOUT_S, outgoing_credentials(node.config)).get_json,
            f"/v1/streams/{name}/partitions/{p}",
        )
        return ReplicaView.from_json(body)
    except (UnauthenticatedError, ForbiddenError, AuthUnavailableError):
        if refusal_fails:
            raise
        return None
    except LiftlogError:
        return None


async def _elect_unclean(
    node: NodeView, name: str, p: int, candidate: int, api_urls: dict[int, str]
) -> tuple[int, int]:
    """Elect ``candidate`` on the controller (this node, or the controller over REST);
    returns the new leader and its epoch."""
    if node.controller.is_controller:
        state = await node.controller.elect_unclean(name, p, candidate)
        await node.reconcile_now()
        return state.leader, state.leader_epoch
    url = await node.controller_api_url()
    if url is None:
        raise UnavailableError("no controller is elected")
    response = await call_peer(
        RestClient(url, credentials=outgoing_credentials(node.config)).request,
        "POST",
        f"/v1/streams/{name}/partitions/{p}/unclean-election",
        params={"broker_id": candidate, "confirm": "true"},
    )
    elected = UncleanElection.from_json(response.json())
    if elected.leader is None or elected.leader_epoch is None:
        raise UnavailableError(f"the controller did not elect a leader for {name}/{p}")
    return elected.leader, elected.leader_epoch
