"""The controller: Kafka's classic ZooKeeper controller, with Jepsen's lessons built in.

Every ingest node runs a ``Controller``; the one elected through ``/v1/controller`` acts. It
moves leadership when brokers die (only ever to an in-sync replica), shrinks ISRs of dead
followers, reports offline partitions loudly, moves leadership off a broker that shuts down
cleanly (and never onto a broker that announced its own shutdown), and performs unclean
elections only when an operator explicitly asks.

Threading: kazoo callbacks (watches, session states) only hop onto the asyncio loop with
``call_soon_threadsafe`` and never block. All work goes through one serial queue taken by one
task (``coordinator.controller_events``), and every ZooKeeper call runs in a worker thread
(``_in_thread``, which ``stop`` waits for: a cancelled task does not stop a thread, and a
stopped controller must not write). Every state write is fenced by the controller epoch
(``coordinator.fencing``): a failed fence means a newer controller exists, and this one
resigns at once instead of retrying.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar, cast

from coordinator import leader_selection
from coordinator.brokers import live_broker_epochs, shutting_down_brokers
from coordinator.controller_actions import (
    PartitionChange,
    PartitionKey,
    Rule,
    ScanResult,
    apply_everywhere,
    apply_to_partition,
)
from coordinator.controller_election import (
    ControllerFence,
    holds_controllership,
    release_seat,
    try_become_controller,
)
from coordinator.controller_events import (
    DEFAULT_CONTROLLER_MAX_REQUESTS,
    ControlledShutdown,
    Event,
    EventQueue,
    Notice,
    PreferredElection,
    Request,
    Rescan,
    UncleanElection,
)
from coordinator.controller_preferred import elect_preferred_in_stream, rebalance_leaders
from coordinator.controller_reassignment import Finished, advance_all
from coordinator.errors import (
    ControllerMovedError,
    CoordinatorError,
    NotControllerError,
    ZkUnavailableError,
)
from coordinator.preferred_leader import PreferredOutcome
from coordinator.stream_watch import StreamWatch
from coordinator.streams import StreamStore
from coordinator.zk import SessionState, WatchHandle, ZkSession
from coordinator.znodes import (
    BROKER_IDS_PATH,
    CONTROLLER_PATH,
    REASSIGNMENTS_PATH,
    PartitionState,
)
from spark_log.config import (
    DEFAULT_AUTO_LEADER_REBALANCE_ENABLE,
    DEFAULT_LEADER_IMBALANCE_CHECK_INTERVAL_S,
    DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE,
)
from spark_log.errors import LiftlogError, RequestTimeoutError

log = logging.getLogger("liftlog.controller")

DEFAULT_CONTROLLER_REQUEST_TIMEOUT_S = 30.0
# After ZooKeeper was unreachable mid-event, try the event again this much later (while the
# session is connected; a reconnect queues its own re-check).
ZK_RETRY_DELAY_S = 1.0

T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True)
class BrokerView:
    """The live brokers, and those of them that announced a clean shutdown (still live, still
    replicating, but never made leader: they are about to stop)."""

    live: frozenset[int]
    shutting_down: frozenset[int]

    def without(self, brokers: frozenset[int]) -> BrokerView:
        return BrokerView(self.live - brokers, self.shutting_down - brokers)


@dataclass(frozen=True)
class RebalanceSettings:
    """Kafka's ``auto.leader.rebalance.enable``, ``leader.imbalance.check.interval.seconds``
    and ``leader.imbalance.per.broker.percentage``: every interval, the controller moves
    leadership back to preferred replicas of any broker leading less than it should."""

    enabled: bool = DEFAULT_AUTO_LEADER_REBALANCE_ENABLE
    check_interval_s: float = DEFAULT_LEADER_IMBALANCE_CHECK_INTERVAL_S
    imbalance_percentage: float = DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE


class Controller:
    """Campaigns for the controller seat and, while holding it, keeps partitions led.

    ``session`` is the node's ZooKeeper session (shared with its broker registration; the
    controller never closes it). ``broker_id`` is written into ``/v1/controller``.
    """

    def __init__(
        self,
        session: ZkSession,
        broker_id: int,
        *,
        max_requests: int = DEFAULT_CONTROLLER_MAX_REQUESTS,
        request_timeout_s: float = DEFAULT_CONTROLLER_REQUEST_TIMEOUT_S,
        rebalance: RebalanceSettings | None = None,
    ) -> None:
        self._session = session
        self._broker_id = broker_id
        self._max_requests = max_requests
        self._request_timeout_s = request_timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._events: EventQueue | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._fence: ControllerFence | None = None
        self._seat_watch: WatchHandle | None = None
        self._broker_watch: WatchHandle | None = None
        self._stream_watch: StreamWatch | None = None
        self._reassignment_watch: WatchHandle | None = None
        self._needs_full_scan = False
        self._broker_epochs: dict[int, int] = {}
        self._offline: set[PartitionKey] = set()
        self._in_flight: Request | None = None
        self._rebalance = rebalance or RebalanceSettings()
        self._rebalance_timer: asyncio.TimerHandle | None = None
        self._thread_work: set[asyncio.Future[Any]] = set()

    # -- public ----------------------------------------------------------------------------

    @property
    def broker_id(self) -> int:
        return self._broker_id

    @property
    def is_controller(self) -> bool:
        """True while this node holds the seat and acts on it."""
        return self._fence is not None

    @property
    def controller_epoch(self) -> int | None:
        """The epoch this node won, None while it is not the controller."""
        fence = self._fence
        return fence.controller_epoch if fence is not None else None

    async def start(self) -> None:
        """Start the event task and watch the seat; the first campaign follows at once."""
        self._loop = asyncio.get_running_loop()
        self._events = EventQueue(self._max_requests)
        self._task = self._loop.create_task(self._run(), name=f"controller-{self._broker_id}")
        self._task.add_done_callback(self._on_task_done)
        self._session.add_state_listener(self._on_session_state)
        self._seat_watch = await self._in_thread(
            self._session.watch_data, CONTROLLER_PATH, self._on_seat_changed
        )
        self._schedule_rebalance_check()

    async def stop(self) -> None:
        """Stop acting and hand the seat over at once (the others need not wait for expiry)."""
        self._stopping = True
        self._session.remove_state_listener(self._on_session_state)
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
        if self._seat_watch is not None:
            self._seat_watch.cancel()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await asyncio.gather(*self._thread_work, return_exceptions=True)
        waiting = self._events.drain_requests() if self._events is not None else []
        for request in [self._in_flight, *waiting]:
            if request is not None:
                _fail(request, NotControllerError("the controller stopped"))
        await self._resign("stopping", release=True)

    async def controlled_shutdown(self, broker_id: int) -> int:
        """Move leadership off ``broker_id``; how many partitions it still leads afterwards.

        A partition whose only live in-sync replica is ``broker_id`` stays with it (moving it
        would make it offline); the count says how many, so the caller can report or wait.
        """
        reply: asyncio.Future[int] = self._require_loop().create_future()
        return await self._request(ControlledShutdown(broker_id, reply), reply)

    async def elect_unclean(
        self, stream: str, partition: int, broker_id: int | None = None
    ) -> PartitionState:
        """The explicit admin action: make a live out-of-sync replica lead an offline partition.

        Records acknowledged by the old ISR beyond the new leader's log end are lost; refused
        (ElectionNotNeededError) while a clean election is possible.
        """
        reply: asyncio.Future[PartitionState] = self._require_loop().create_future()
        return await self._request(UncleanElection(stream, partition, broker_id, reply), reply)

    async def elect_preferred(
        self, stream: str, partition: int | None = None
    ) -> tuple[PreferredOutcome, ...]:
        """Move leadership of ``stream``'s partitions (all, or ``partition``) back to their
        preferred replica wherever it is live and in sync; each partition's outcome."""
        reply: asyncio.Future[tuple[PreferredOutcome, ...]] = self._require_loop().create_future()
        return await self._request(PreferredElection(stream, partition, reply), reply)

    async def rescan(self) -> ScanResult:
        """Apply the leader rules to every partition now (after a manual fix, or to be sure)."""
        reply: asyncio.Future[ScanResult] = self._require_loop().create_future()
        return await self._request(Rescan(reply), reply)

    # -- kazoo callbacks: hop onto the loop, nothing else ------------------------------------

    def _on_seat_changed(self, _data: object, _version: int | None) -> None:
        self._hop(Notice.CONTROLLER_CHANGED)

    def _on_brokers_changed(self, _children: list[str]) -> None:
        self._hop(Notice.BROKERS_CHANGED)

    def _on_streams_changed(self) -> None:
        self._hop(Notice.STREAMS_CHANGED)

    def _on_reassignments_changed(self, _children: list[str]) -> None:
        self._hop(Notice.REASSIGNMENTS_CHANGED)

    def _on_session_state(self, state: SessionState) -> None:
        if state == "lost":
            self._hop(Notice.SESSION_LOST)
        elif state == "connected":
            self._hop(Notice.SESSION_CONNECTED)

    def _schedule_rebalance_check(self) -> None:
        """Queue the leader-imbalance check every interval (on every node: only the
        controller acts on it), if the automatic rebalance is enabled."""
        loop = self._loop
        if not self._rebalance.enabled or self._stopping or loop is None or loop.is_closed():
            return
        self._rebalance_timer = loop.call_later(
            self._rebalance.check_interval_s, self._on_rebalance_timer
        )

    def _on_rebalance_timer(self) -> None:
        self._hop(Notice.LEADER_IMBALANCE_CHECK)
        self._schedule_rebalance_check()

    def _hop(self, notice: Notice) -> None:
        loop, events = self._loop, self._events
        if self._stopping or loop is None or events is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed between check and call
            loop.call_soon_threadsafe(events.notify, notice)

    # -- the event task --------------------------------------------------------------------

    async def _run(self) -> None:
        events = self._events
        if events is None:
            return
        while True:
            event = await events.get()
            # Left set if the task is cancelled mid-request, so stop() can answer it.
            self._in_flight = None if isinstance(event, Notice) else event
            await self._handle(event)
            self._in_flight = None

    async def _handle(self, event: Event) -> None:
        if isinstance(event, Notice):
            await self._handle_notice(event)
        else:
            await self._handle_request(event)

    async def _handle_notice(self, notice: Notice) -> None:
        try:
            await self._on_notice(notice)
        except ControllerMovedError as exc:
            await self._resign(exc.message, release=True)
            self._retry_later(Notice.CONTROLLER_CHANGED, now=True)
        except ZkUnavailableError as exc:
            log.warning("controller: ZooKeeper unavailable during %s: %s", notice.value, exc)
            self._retry_later(notice)
        except LiftlogError as exc:
            log.error("controller: %s failed: %s", notice.value, exc)

    async def _on_notice(self, notice: Notice) -> None:
        if notice is Notice.SESSION_LOST:
            await self._resign("the ZooKeeper session expired", release=False)
        elif notice in (Notice.CONTROLLER_CHANGED, Notice.SESSION_CONNECTED):
            if notice is Notice.SESSION_CONNECTED:
                self._needs_full_scan = True  # changes may have been missed while away
            await self._check_seat_or_campaign()
        elif notice is Notice.BROKERS_CHANGED and self._fence is not None:
            await self._apply_broker_change()
        elif notice is Notice.STREAMS_CHANGED and self._fence is not None:
            view = await self._broker_view()
            await self._scan(view)
            await self._advance_reassignments(view)
        elif notice is Notice.REASSIGNMENTS_CHANGED and self._fence is not None:
            await self._advance_reassignments(await self._broker_view())
        elif notice is Notice.LEADER_IMBALANCE_CHECK and self._fence is not None:
            await self._rebalance_leaders()

    async def _handle_request(self, request: Request) -> None:
        try:
            result: object = await self._serve(request)
        except ControllerMovedError as exc:
            await self._resign(exc.message, release=True)
            self._retry_later(Notice.CONTROLLER_CHANGED, now=True)
            _fail(request, NotControllerError(f"this node is no longer the controller: {exc}"))
        except LiftlogError as exc:
            _fail(request, exc)
        else:
            reply = cast("asyncio.Future[object]", request.reply)  # each request's own type
            if not reply.done():
                reply.set_result(result)

    async def _serve(self, request: Request) -> object:
        if isinstance(request, ControlledShutdown):
            return await self._controlled_shutdown(request.broker_id)
        if isinstance(request, UncleanElection):
            return await self._unclean_election(request)
        if isinstance(request, PreferredElection):
            return await self._preferred_election(request)
        return await self._scan(await self._broker_view())

    # -- seat ------------------------------------------------------------------------------

    async def _check_seat_or_campaign(self) -> None:
        """Still ours: make sure we act. Lost: resign. Free: campaign."""
        fence = self._fence
        if fence is not None:
            if await self._in_thread(holds_controllership, self._session, fence):
                await self._ensure_acting()
                return
            await self._resign("the controller seat is no longer this node's", release=True)
        won = await self._in_thread(try_become_controller, self._session, self._broker_id)
        if won is None:
            # A seat held by this very session that nobody acts on (an earlier release failed)
            # would block every election until the session dies: free it.
            if await self._in_thread(release_seat, self._session):
                log.warning("controller: released a stale seat held by this session")
            return
        self._fence = won
        self._needs_full_scan = True
        self._broker_epochs = {}
        self._offline = set()
        log.info(
            "broker %d is now the controller (controller_epoch %d)",
            won.broker_id,
            won.controller_epoch,
        )
        await self._ensure_acting()

    async def _ensure_acting(self) -> None:
        """Install the controller's watches (if missing) and run the pending full scan."""
        if self._broker_watch is None:
            await self._in_thread(self._session.ensure_path, BROKER_IDS_PATH)
            self._broker_watch = await self._in_thread(
                self._session.watch_children, BROKER_IDS_PATH, self._on_brokers_changed
            )
        if self._stream_watch is None:
            store = StreamStore(self._session)
            self._stream_watch = await self._in_thread(store.watch, self._on_streams_changed)
        if self._reassignment_watch is None:
            await self._in_thread(self._session.ensure_path, REASSIGNMENTS_PATH)
            self._reassignment_watch = await self._in_thread(
                self._session.watch_children, REASSIGNMENTS_PATH, self._on_reassignments_changed
            )
        if self._needs_full_scan:
            await self._apply_broker_change()
            self._needs_full_scan = False

    async def _resign(self, reason: str, *, release: bool) -> None:
        """Stop acting at once; with ``release``, also free the seat if it is still ours."""
        fence, self._fence = self._fence, None
        for handle in (self._broker_watch, self._stream_watch, self._reassignment_watch):
            if handle is not None:
                handle.cancel()
        self._broker_watch = self._stream_watch = self._reassignment_watch = None
        if fence is None:
            return
        log.warning(
            "broker %d resigns as controller (controller_epoch %d): %s",
            fence.broker_id,
            fence.controller_epoch,
            reason,
        )
        if release:
            try:
                await self._in_thread(release_seat, self._session, fence.controller_epoch)
            except CoordinatorError as exc:
                log.warning("controller: could not release the seat (%s); it expires", exc)

    # -- the rules applied ------------------------------------------------------------------

    async def _apply_broker_change(self) -> None:
        """Re-apply the leader rules for the brokers live now.

        A broker whose epoch changed restarted: it is first treated as dead (its leaderships
        move to other ISR members, it leaves the ISRs, since its new incarnation may have lost
        unflushed records), then as live (it can lead partitions only it can serve again).
        """
        epochs = await self._in_thread(live_broker_epochs, self._session)
        view = await self._view_of(epochs)
        bounced = frozenset(b for b, e in epochs.items() if self._broker_epochs.get(b, e) != e)
        _log_broker_change(self._broker_epochs, epochs, bounced)
        if bounced:
            await self._scan(view.without(bounced))
        await self._scan(view)
        self._broker_epochs = epochs
        await self._advance_reassignments(view)

    async def _scan(self, view: BrokerView) -> ScanResult:
        fence = self._require_fence()

        def rule(state: PartitionState) -> PartitionState | None:
            return leader_selection.elect_on_broker_failure(
                state, view.live, shutting_down=view.shutting_down
            )

        return await self._apply_everywhere(fence, rule)

    async def _apply_everywhere(self, fence: ControllerFence, rule: Rule) -> ScanResult:
        result = await self._in_thread(apply_everywhere, self._session, fence, rule)
        self._report(fence, result)
        if result.incomplete:
            self._retry_later(Notice.STREAMS_CHANGED)
        return result

    async def _controlled_shutdown(self, broker_id: int) -> int:
        fence = self._require_fence()
        view = await self._broker_view()

        def rule(state: PartitionState) -> PartitionState | None:
            return leader_selection.elect_for_controlled_shutdown(
                state, broker_id, view.live, shutting_down=view.shutting_down
            )

        result = await self._apply_everywhere(fence, rule)
        still_led = sum(1 for state in result.states.values() if state.leader == broker_id)
        log.info(
            "controlled shutdown of broker %d: %d partition(s) changed, %d still led by it "
            "(no other live in-sync replica that is not shutting down too: %s are)",
            broker_id,
            len(result.changes),
            still_led,
            sorted(view.shutting_down - {broker_id}),
        )
        return still_led

    async def _unclean_election(self, request: UncleanElection) -> PartitionState:
        fence = self._require_fence()
        live = (await self._broker_view()).live

        def rule(state: PartitionState) -> PartitionState:
            return leader_selection.elect_unclean(state, live, request.broker_id)

        change, state = await self._in_thread(
            apply_to_partition, self._session, fence, request.stream, request.partition, rule
        )
        if change is not None:
            log.warning(
                "UNCLEAN election of partition %s/%d by operator request: leader %d -> %d, "
                "leader_epoch %d, isr %s (was %s); records acknowledged beyond the new "
                "leader's log end are lost",
                change.stream,
                change.partition,
                change.before.leader,
                change.after.leader,
                change.after.leader_epoch,
                list(change.after.isr),
                list(change.before.isr),
            )
            self._report(fence, ScanResult((), {(request.stream, request.partition): state}, False))
        return state

    async def _preferred_election(self, request: PreferredElection) -> tuple[PreferredOutcome, ...]:
        fence = self._require_fence()
        view = await self._broker_view()
        outcomes, changes = await self._in_thread(
            elect_preferred_in_stream,
            self._session,
            fence,
            request.stream,
            request.partition,
            view.live,
            view.shutting_down,
        )
        for outcome in outcomes:
            if outcome.reason is not None:
                log.info(
                    "preferred leader election of %s/%d not possible: %s",
                    request.stream,
                    outcome.partition,
                    outcome.reason,
                )
        states = {(request.stream, o.partition): o.state for o in outcomes}
        self._report(fence, ScanResult(changes, states, False))
        return outcomes

    async def _rebalance_leaders(self) -> None:
        """The periodic check: brokers over the imbalance threshold lead again."""
        fence = self._require_fence()
        view = await self._broker_view()
        result = await self._in_thread(
            rebalance_leaders,
            self._session,
            fence,
            view.live,
            view.shutting_down,
            self._rebalance.imbalance_percentage,
        )
        if result.changes:
            log.info(
                "auto leader rebalance: %d partition(s) moved back to their preferred replica",
                len(result.changes),
            )
        self._report(fence, result)

    async def _advance_reassignments(self, view: BrokerView) -> None:
        """Take every pending reassignment as far as it can go now (resumed after failover:
        the first full scan of a new controller comes here too)."""
        fence = self._require_fence()
        done = await self._in_thread(
            advance_all, self._session, fence, view.live, view.shutting_down
        )
        for change in done.changes:
            _log_reassignment_step(change, fence)
        for finished in done.finished:
            _log_reassignment_end(finished)
        if done.retry:
            self._retry_later(Notice.REASSIGNMENTS_CHANGED)

    async def _broker_view(self) -> BrokerView:
        return await self._view_of(await self._in_thread(live_broker_epochs, self._session))

    async def _view_of(self, epochs: dict[int, int]) -> BrokerView:
        """Read fresh at every decision (no watch): a shutdown notice only matters when the
        controller is about to pick a leader."""
        stopping = await self._in_thread(shutting_down_brokers, self._session, epochs)
        return BrokerView(frozenset(epochs), stopping)

    # -- reporting -------------------------------------------------------------------------

    def _report(self, fence: ControllerFence, result: ScanResult) -> None:
        """Log every change at INFO, every partition going offline at ERROR (once)."""
        for change in result.changes:
            _log_change(change, fence)
        for key, state in result.states.items():
            if state.offline and key not in self._offline:
                self._offline.add(key)
                log.error(
                    "partition %s/%d is OFFLINE: no live in-sync replica; unclean election is "
                    "disabled (isr %s, replicas %s)",
                    key[0],
                    key[1],
                    list(state.isr),
                    list(state.replicas),
                )
            elif not state.offline and key in self._offline:
                self._offline.discard(key)
                log.info("partition %s/%d is back online: leader %d", key[0], key[1], state.leader)

    # -- helpers ---------------------------------------------------------------------------

    async def _request(self, request: Request, reply: asyncio.Future[T]) -> T:
        """Queue ``request`` and wait (bounded) for ``reply``, its answer."""
        if self._events is None or self._stopping:
            raise NotControllerError("the controller is not running")
        self._events.submit(request)
        try:
            return await asyncio.wait_for(reply, self._request_timeout_s)
        except TimeoutError as exc:
            raise RequestTimeoutError(
                f"the controller did not answer within {self._request_timeout_s:.1f}s"
            ) from exc

    def _require_fence(self) -> ControllerFence:
        fence = self._fence
        if fence is None:
            raise NotControllerError(f"broker {self._broker_id} is not the controller")
        return fence

    async def _in_thread(self, func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a blocking ZooKeeper call in a worker thread that ``stop`` waits for.

        Cancelling the caller leaves the thread running (threads cannot be cancelled): without
        this, a reassignment pass begun before ``stop`` could still write after it returned.
        """
        work = asyncio.ensure_future(asyncio.to_thread(func, *args, **kwargs))
        self._thread_work.add(work)
        work.add_done_callback(self._forget_thread_work)
        return await asyncio.shield(work)

    def _forget_thread_work(self, work: asyncio.Future[T]) -> None:
        """Drop finished work; its error was raised to the caller, or nobody awaits it."""
        self._thread_work.discard(work)
        if not work.cancelled():
            work.exception()

    def _require_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise NotControllerError("the controller has not been started")
        return self._loop

    def _retry_later(self, notice: Notice, *, now: bool = False) -> None:
        """Queue ``notice`` again soon; while disconnected, the reconnect notice covers it."""
        loop, events = self._loop, self._events
        if loop is None or events is None or self._stopping:
            return
        if now:
            events.notify(notice)
        elif self._session.connected:
            loop.call_later(ZK_RETRY_DELAY_S, self._hop, notice)

    def _on_task_done(self, task: asyncio.Task[None]) -> None:
        """The event task only ends on stop; if it crashed, say so and free the seat."""
        if task.cancelled() or task.exception() is None:
            return
        log.critical("controller event task crashed", exc_info=task.exception())
        if self._loop is not None and not self._loop.is_closed():
            self._loop.create_task(self._resign("the event task crashed", release=True))


def _fail(request: Request, error: LiftlogError) -> None:
    if not request.reply.done():
        request.reply.set_exception(error)


def _log_change(change: PartitionChange, fence: ControllerFence) -> None:
    before, after = change.before, change.after
    if before.leader != after.leader or before.leader_epoch != after.leader_epoch:
        log.info(
            "partition %s/%d leader election: leader %d -> %d, leader_epoch %d, isr %s "
            "(was %s), controller_epoch %d",
            change.stream,
            change.partition,
            before.leader,
            after.leader,
            after.leader_epoch,
            list(after.isr),
            list(before.isr),
            fence.controller_epoch,
        )
    else:
        log.info(
            "partition %s/%d ISR %s -> %s (leader %d, leader_epoch %d), controller_epoch %d",
            change.stream,
            change.partition,
            list(before.isr),
            list(after.isr),
            after.leader,
            after.leader_epoch,
            fence.controller_epoch,
        )


def _log_reassignment_end(finished: Finished) -> None:
    item = finished.item
    if not finished.replicas:
        return  # the stream was deleted: logged when dropped
    if not item.cancelling:
        outcome = "complete"
    elif finished.replicas == item.target_replicas:
        outcome = "complete (cancelled after its last step)"
    else:
        outcome = "cancelled"
    log.info(
        "reassignment of %s/%d %s: replicas %s (were %s, target %s)",
        item.stream,
        item.partition,
        outcome,
        list(finished.replicas),
        list(item.original_replicas),
        list(item.target_replicas),
    )


def _log_reassignment_step(change: PartitionChange, fence: ControllerFence) -> None:
    before, after = change.before, change.after
    log.info(
        "partition %s/%d reassignment step: replicas %s -> %s, leader %d -> %d, isr %s -> %s, "
        "leader_epoch %d, controller_epoch %d",
        change.stream,
        change.partition,
        list(before.replicas),
        list(after.replicas),
        before.leader,
        after.leader,
        list(before.isr),
        list(after.isr),
        after.leader_epoch,
        fence.controller_epoch,
    )


def _log_broker_change(
    before: dict[int, int], after: dict[int, int], bounced: frozenset[int]
) -> None:
    """INFO when the live set or an incarnation changed; a mere re-check is DEBUG."""
    changed = before != after
    log.log(
        logging.INFO if changed else logging.DEBUG,
        "controller: live brokers %s (joined %s, gone %s, restarted %s)",
        sorted(after),
        sorted(set(after) - set(before)),
        sorted(set(before) - set(after)),
        sorted(bounced),
    )
