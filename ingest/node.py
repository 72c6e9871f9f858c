"""The ingest node process: NATS, ZooKeeper, the replicas it hosts and its REST API.

One asyncio loop runs everything; ZooKeeper watch callbacks (kazoo's thread) only hop onto the
loop to trigger a reconcile, and blocking ZooKeeper, file and Delta calls go to threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal

import nats
import nats.errors
from nats.aio.client import Client as NatsClient

from coordinator.brokers import (
    announce_shutdown,
    deregister_broker,
    live_broker_epochs,
    live_brokers,
    register_broker,
    shutting_down_brokers,
)
from coordinator.controller import Controller, RebalanceSettings
from coordinator.controller_election import current_controller
from coordinator.schemas.cache import SchemaCache
from coordinator.schemas.registry import SchemaRegistry
from coordinator.streams import StreamStore
from coordinator.zk import ZkSession
from coordinator.znodes import BrokerInfo
from ingest.admin.activity import ActivityPublisher
from ingest.admin.dead_letter import DeadLetterRouter
from ingest.api.server import ApiServer
from ingest.clock import SYSTEM_CLOCK, Clock
from ingest.liftbridge.server import LiftbridgeServer
from ingest.memory_release import MemoryRelease, use_arrow_pool
from ingest.metrics import NodeMetrics
from ingest.nats_connect import intake_settings, nats_connect_options
from ingest.peer_calls import call_peer
from ingest.produce.intake import IntakeConnection
from ingest.produce.value_check import ValueChecker
from ingest.replica.manager import ReplicaManager
from ingest.security.nats_grants import publish_refusal, specs_of
from ingest.security.nats_logins import NatsLogins
from ingest.security.node_auth import NodeAuth
from ingest.security.node_credentials import outgoing_credentials, prepare_node_credentials
from spark_log.api_models import ControlledShutdownResult
from spark_log.client.rest import RestClient
from spark_log.config import NodeConfig
from spark_log.errors import LiftlogError, UnavailableError
from spark_log.log import build_record_batch, encode_batch
from spark_log.nats_io import widen_read_buffer

log = logging.getLogger("liftlog.node")

ZK_START_TIMEOUT_S = 30.0
CONTROLLED_SHUTDOWN_TIMEOUT_S = 15.0
CONTROLLED_SHUTDOWN_RETRY_S = 0.5
CONTROLLED_SHUTDOWN_ATTEMPTS = 3
RECONCILE_RETRY_S = 1.0
# between attempts to register again after the session expired
REREGISTER_RETRY_S = 1.0


def _warm_up_arrow() -> None:
    """Build one record batch now: pyarrow imports some modules lazily on first use, which
    would otherwise stall the first produce request by a few hundred milliseconds."""
    encode_batch(0, 0, build_record_batch([0], [b"k"], [b"v"], [{"h": "v"}], ["s"]))


def _shutdown_outcome(remaining: int) -> str:
    if remaining == 0:
        return "leadership moved"
    if remaining > 0:
        return f"{remaining} partition(s) still led (no other in-sync replica can take them)"
    return "leadership not moved (no other broker to take it, or no controller answered)"


def _log_auth_mode(config: NodeConfig) -> None:
    """Say loudly when nobody's credentials are checked: that must never go unnoticed."""
    if not config.auth.enabled:
        log.warning(
            "node %d: authentication is DISABLED (auth.enabled = false): anyone who reaches "
            "the REST API may do anything",
            config.broker_id,
        )
    elif not (config.auth.bootstrap_token or config.auth.bootstrap_token_file):
        log.warning(
            "node %d: no auth.bootstrap_token: only existing tokens and client certificates "
            "of super users (%s) can administer the cluster",
            config.broker_id,
            ", ".join(config.auth.super_users),
        )
    if config.auth.enabled and not config.api_tls.enabled:
        log.warning(
            "node %d: the REST API is served without TLS (no api_tls): bearer tokens, the "
            "tokens it creates and partitions' data keys cross the network in clear",
            config.broker_id,
        )


class IngestNode:
    def __init__(self, config: NodeConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self._clock = clock
        self.metrics = NodeMetrics()
        self.memory_release = MemoryRelease(config.memory)
        self.nc: NatsClient | None = None
        self.zk = ZkSession.from_node_config(config)
        self.store = StreamStore(self.zk)
        self.intake = IntakeConnection(intake_settings(config), self.metrics.nats_disconnects.inc)
        self.replicas = ReplicaManager(
            config, self.store, self.metrics, self.intake, self._nats, self.zk, clock
        )
        self.auth = NodeAuth(config.auth, self.zk)
        self.schemas = SchemaRegistry(self.zk, SchemaCache(self.zk))
        self.replicas.value_checker = ValueChecker(self.schemas)
        self.replicas.dead_letters = DeadLetterRouter(self)
        self.replicas.schemas = self.schemas  # typed lake tables decode with it
        self.nats_logins = (
            NatsLogins(
                config.nats_auth,
                self.auth,
                lambda: specs_of(self.replicas.streams),
                self._is_controller,
                nats_connect_options(config),
            )
            if config.nats_auth.enabled
            else None
        )
        if config.nats_auth.enabled and config.auth.enabled:
            self.replicas.publish_check = functools.partial(publish_refusal, self.auth)
        self.activity = ActivityPublisher(self, self.store.activity)
        self.api = ApiServer(self, config.api_host, config.api_port)
        self.liftbridge = LiftbridgeServer(self, self.api.services)
        self.controller = Controller(
            self.zk,
            config.broker_id,
            rebalance=RebalanceSettings(
                config.auto_leader_rebalance_enable,
                config.leader_imbalance_check_interval_s,
                config.leader_imbalance_per_broker_percentage,
            ),
        )
        self.ready = False
        self._stopping = asyncio.Event()
        self._reconcile_wanted = asyncio.Event()
        self._reconciler: asyncio.Task[None] | None = None
        self._reconcile_stopped = asyncio.Event()  # set at stop, read after every await
        self._loop: asyncio.AbstractEventLoop | None = None
        # set from an expired session until the broker has registered on a new one: while set,
        # nothing lifts the fence on its leaderships
        self._session_lost = False
        self._session_losses = 0  # counts expiries, so an attempt knows if another came since
        self._reregistering: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()

    # ----------------------------------------------------------------- start / stop

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        use_arrow_pool(self.config.memory.arrow_pool)
        self.memory_release.start()
        await self.api.start()  # /healthz answers while the rest comes up
        await asyncio.to_thread(_warm_up_arrow)
        widen_read_buffer()
        self.nc = await nats.connect(
            **nats_connect_options(self.config),
            error_cb=self._on_nats_error,
            disconnected_cb=self._on_nats_disconnect,
            reconnected_cb=self._on_nats_reconnect,
        )
        await self.intake.connect()
        await asyncio.to_thread(self.zk.start, ZK_START_TIMEOUT_S)
        self.zk.add_state_listener(self._on_zk_state)
        await asyncio.to_thread(self.auth.start)  # REST answers 503 until tokens/ACLs load
        await asyncio.to_thread(self.schemas.cache.start)  # the registry, 503 until read
        await asyncio.to_thread(prepare_node_credentials, self.config)
        _log_auth_mode(self.config)
        # Logs are recovered before the broker registers (as Kafka's log manager does): a
        # replica that lost durable data leaves its ISRs while no controller can count this
        # broker as live, so it is never elected in between.
        await self.replicas.recover()
        await asyncio.to_thread(
            register_broker, self.zk, self.broker_info(), self._register_wait_s()
        )
        self._watch = await asyncio.to_thread(self.store.watch, self._trigger_reconcile)
        await self.controller.start()
        await self.replicas.reconcile()
        if self.nats_logins is not None:
            await self.nats_logins.start(self._nats())
        await self.activity.start()
        self._reconciler = asyncio.create_task(self._reconcile_loop(), name="reconciler")
        await self.liftbridge.start()
        self.ready = True
        log.info(
            "node %d ready: api %s, nats %s, zookeeper %s%s",
            self.config.broker_id,
            self.config.advertised_api_url,
            ",".join(self.config.nats_server_urls),
            self.config.zk_connect,
            self.config.zk_root,
        )

    async def stop(self) -> None:
        if self.ready:
            await self._controlled_shutdown()
        self.ready = False
        await self.liftbridge.stop()
        await self.activity.stop()
        if self.nats_logins is not None:
            await self.nats_logins.stop()
        with contextlib.suppress(LiftlogError):
            await self.controller.stop()
        await self._stop_reconciler()
        await self.replicas.close()
        await self.intake.close()
        if self.nc is not None and not self.nc.is_closed:
            with contextlib.suppress(nats.errors.Error, OSError):
                await self.nc.drain()
        with contextlib.suppress(UnavailableError):
            await asyncio.to_thread(deregister_broker, self.zk, self.config.broker_id)
        await asyncio.to_thread(self.auth.stop)
        await asyncio.to_thread(self.schemas.cache.stop)
        await asyncio.to_thread(self.zk.stop)
        await self.api.stop()
        await asyncio.to_thread(self.memory_release.stop)
        log.info("node %d stopped", self.config.broker_id)

    async def run_until_signalled(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._stopping.set)
        try:
            await self.start()
            await self._stopping.wait()
        finally:
            await self.stop()

    async def _controlled_shutdown(self) -> None:
        """Move leadership off this broker before it stops (Kafka's controlled shutdown), so a
        rolling restart leaves every partition writable but for a short blip.

        The broker first announces its shutdown in ZooKeeper, so that no controller (this one,
        or the next one should the controller stop meanwhile) makes it leader of anything from
        now on. It asks only while some other live broker is not shutting down too: when all
        stop at once there is nobody to hand leadership to, and waiting would only delay them.
        """
        try:
            await asyncio.to_thread(announce_shutdown, self.zk, self.config.broker_id)
        except LiftlogError as exc:
            log.warning("could not announce the shutdown in ZooKeeper: %s", exc.message)
        remaining = -1
        for attempt in range(CONTROLLED_SHUTDOWN_ATTEMPTS):
            if attempt:
                await asyncio.sleep(CONTROLLED_SHUTDOWN_RETRY_S)  # followers may catch up
            if not await self._possible_successors():
                break
            try:
                remaining = await self.request_controlled_shutdown(self.config.broker_id)
            except LiftlogError as exc:
                log.warning("controlled shutdown request failed: %s", exc.message)
            if remaining == 0:
                break
        await self.replicas.reconcile()  # take the follower role for what moved
        log.info(
            "controlled shutdown of broker %d: %s",
            self.config.broker_id,
            _shutdown_outcome(remaining),
        )

    async def _possible_successors(self) -> list[int]:
        """Other live brokers that are not shutting down (empty if ZooKeeper cannot say)."""
        try:
            epochs = await asyncio.to_thread(live_broker_epochs, self.zk)
            stopping = await asyncio.to_thread(shutting_down_brokers, self.zk, epochs)
        except LiftlogError as exc:
            log.warning("controlled shutdown: cannot read the live brokers: %s", exc.message)
            return []
        me = self.config.broker_id
        return [b for b in epochs if b != me and b not in stopping]

    async def request_controlled_shutdown(self, broker_id: int) -> int:
        """Ask the controller (this broker or another) to move leadership off ``broker_id``."""
        if self.controller.is_controller:
            return await self.controller.controlled_shutdown(broker_id)
        url = await self.controller_api_url()
        if url is None:
            raise UnavailableError("no controller is elected")
        response = await call_peer(
            RestClient(
                url, CONTROLLED_SHUTDOWN_TIMEOUT_S, outgoing_credentials(self.config)
            ).request,
            "POST",
            "/v1/cluster/controlled-shutdown",
            json_body={"broker_id": broker_id},
        )
        return ControlledShutdownResult.from_json(response.json()).remaining_leaderships

    async def controller_id(self) -> int | None:
        current = await asyncio.to_thread(current_controller, self.zk)
        return None if current is None else current[0]

    async def controller_api_url(self) -> str | None:
        current = await asyncio.to_thread(current_controller, self.zk)
        if current is None:
            return None
        brokers = {b.broker_id: b.api_url for b in await self.live_brokers()}
        return brokers.get(current[0])

    def _register_wait_s(self) -> float:
        # A previous incarnation's ephemeral znode lives until its session expires.
        return 2 * self.config.zk_session_timeout_s + 5

    def broker_info(self) -> BrokerInfo:
        return BrokerInfo(
            broker_id=self.config.broker_id,
            host=self.config.advertised_api_host,
            api_url=self.config.advertised_api_url,
            nats_url=self.config.advertised_nats_url,
            started_at_ms=self._clock.now_ms(),
            liftbridge_address=self.config.advertised_liftbridge_address,
        )

    # ----------------------------------------------------------------- cluster view

    async def live_brokers(self) -> list[BrokerInfo]:
        return await asyncio.to_thread(live_brokers, self.zk)

    # ----------------------------------------------------------------- reconcile

    def _trigger_reconcile(self, *_args: object) -> None:
        """Called on kazoo's thread: hop onto the loop, never block."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._reconcile_wanted.set)

    async def _reconcile_loop(self) -> None:
        while not self._reconcile_stopped.is_set():
            await self._reconcile_wanted.wait()
            self._reconcile_wanted.clear()
            if self._reconcile_stopped.is_set():
                return
            try:
                await self.replicas.reconcile()
            except UnavailableError as exc:
                log.warning("reconcile failed (%s); retrying", exc)
                await asyncio.sleep(RECONCILE_RETRY_S)
                self._reconcile_wanted.set()

    async def _stop_reconciler(self) -> None:
        """End the reconcile loop for good before the replicas close.

        Cancelling alone is not enough: a reconcile in the middle of a role change awaits a
        fetcher's task with CancelledError suppressed, which swallows the cancellation too,
        and the loop would then wait for the next ZooKeeper event (and apply it, taking new
        roles while the node stops) instead of ending. The flag ends it either way.
        """
        self._reconcile_stopped.set()
        self._reconcile_wanted.set()
        task, self._reconciler = self._reconciler, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def reconcile_now(self) -> None:
        """Apply ZooKeeper state immediately (after an admin change made through this node)."""
        await self.replicas.reconcile()

    def _on_zk_state(self, state: str) -> None:
        """Kazoo's thread: hop onto the loop (never block here)."""
        log.warning("ZooKeeper session %s", state)
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self._zk_state_changed, state)

    def _zk_state_changed(self, state: str) -> None:
        """Kafka's rule: a connection in doubt ("suspended") changes nothing, an expired
        session ("lost") fences every leadership until the broker has registered again.

        While suspended, a leader keeps serving with the ISR it has. That is safe for acks=all:
        the HW is the minimum LEO over that ISR and advances only as followers fetch, and a
        follower that learned of a newer leader fetches from it instead, so this leader cannot
        commit anything a newer one lacks. What needs ZooKeeper (an ISR shrink, a stream
        create) is refused meanwhile, so a dead follower holds the HW rather than being dropped.
        Fencing on "suspended" instead stopped every partition for the few seconds an ensemble
        takes to elect a new leader, which any single ZooKeeper server loss causes; fencing
        once suspended past the session timeout would stop every partition of the cluster
        during an outage of the ensemble's quorum, when sessions cannot expire at all. A
        leader cut off from ZooKeeper alone is held by its followers instead: they follow the
        newly elected leader and stop fetching, so its acks=all publishes cannot commit.
        """
        if state == "connected":
            if self._session_lost:
                self._start_reregistering()
                return
            self.replicas.fence_leaders(None)
            self._reconcile_wanted.set()
            return
        if state == "lost":
            self._session_lost = True
            self._session_losses += 1
            self.replicas.fence_leaders("ZooKeeper session lost")

    def _start_reregistering(self) -> None:
        """One re-registration at a time; a running one goes on across reconnects."""
        if self._reregistering is None or self._reregistering.done():
            self._reregistering = asyncio.ensure_future(self._reregister())
            self._background.add(self._reregistering)
            self._reregistering.add_done_callback(self._background.discard)

    async def _reregister(self) -> None:
        """The session expired: this broker is a new incarnation and must register again.

        Retried until it succeeds or the node stops: a broker that gave up would stay fenced
        and unregistered, invisible to the controller, for as long as it runs. An attempt
        that overlapped another expiry is not trusted (its znode may belong to the expired
        session): the loop registers again.
        """
        while not self._stopping.is_set() and self._session_lost:
            losses = self._session_losses
            try:
                await asyncio.to_thread(
                    register_broker, self.zk, self.broker_info(), self._register_wait_s()
                )
            except LiftlogError as exc:
                log.error(
                    "could not re-register broker %d (%s); retrying in %.1fs",
                    self.config.broker_id,
                    exc.message,
                    REREGISTER_RETRY_S,
                )
                await asyncio.sleep(REREGISTER_RETRY_S)
                continue
            if losses != self._session_losses:
                continue
            log.info("broker %d registered again on a new session", self.config.broker_id)
            self._session_lost = False
            self.replicas.fence_leaders(None)
            self._reconcile_wanted.set()
            return

    # ----------------------------------------------------------------- NATS

    def _is_controller(self) -> bool:
        return self.controller.is_controller

    def _nats(self) -> NatsClient:
        if self.nc is None:
            raise UnavailableError("not connected to NATS")
        return self.nc

    async def _on_nats_error(self, exc: Exception) -> None:
        log.warning("NATS error: %s", exc)

    async def _on_nats_disconnect(self) -> None:
        self.metrics.nats_disconnects.inc()
        log.warning("disconnected from NATS; reconnecting")

    async def _on_nats_reconnect(self) -> None:
        url = self.nc.connected_url if self.nc is not None else None
        log.info("reconnected to NATS %s; subscriptions restored", url.netloc if url else "?")
