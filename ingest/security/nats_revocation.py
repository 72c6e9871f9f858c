"""Rights changes reach NATS connections already open: their principals log in again.

nats-server fixes a connection's permissions when it logs in. When a principal's grant
changes (an ACL added or removed, a stream created or deleted) or one of its tokens is
revoked, the controller finds the principal's connections on every server of the cluster
(``CONNZ`` filtered by user, through the system account) and disconnects them (``KICK``).
Clients reconnect at once and the callout judges them again: a revoked token is refused, a
changed grant applies. The check runs every ``CHECK_INTERVAL_S``, after the node's token and
ACL cache (refreshed by ZooKeeper watches) and its stream list have caught up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import nats
import nats.errors
from nats.aio.client import Client as NatsClient

from ingest.security.nats_callout import CalloutResponder
from ingest.security.nats_grants import NatsGrant
from ingest.security.node_auth import BOOTSTRAP_PRINCIPAL, NodeAuth
from spark_log.errors import LiftlogError
from spark_log.nats_auth_config import NatsAuthConfig
from spark_log.stream_spec import StreamSpec

log = logging.getLogger("liftlog.nats_auth")

CHECK_INTERVAL_S = 1.0
CONNZ_SUBJECT = "$SYS.REQ.SERVER.PING.CONNZ"
KICK_SUBJECT = "$SYS.REQ.SERVER.{server_id}.KICK"
# every server of the cluster answers a PING; answers later than this are not waited for
CONNZ_WINDOW_S = 0.5
CONNZ_LIMIT = 100_000
KICK_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Rights:
    """What a principal's connections were judged on: its grant and its live tokens."""

    grant: NatsGrant
    token_ids: frozenset[str]


def rights_changed(
    before: Rights | None, issued: set[tuple[NatsGrant, str]], after: Rights | None
) -> bool:
    """Whether a connection may hold rights ``after`` no longer gives: a grant other than
    today's, or a token since revoked. ``before`` is the last check's view, ``issued`` the
    logins granted since (a new token changes nothing for open connections)."""
    held = {(before.grant, t) for t in before.token_ids} if before is not None else set()
    held |= issued
    if not held:
        return False
    if after is None:
        return True
    return any(g != after.grant or (t and t not in after.token_ids) for g, t in held)


class RightsWatch:
    """Compares every principal's rights each second with what its connections were given,
    and disconnects the NATS connections of those whose rights changed: each node for the
    logins it answered, the controller for every principal."""

    def __init__(
        self,
        config: NatsAuthConfig,
        responder: CalloutResponder,
        auth: NodeAuth,
        is_controller: Callable[[], bool],
        connect_options: Mapping[str, Any],
    ) -> None:
        self._config = config
        self._responder = responder
        self._auth = auth
        self._is_controller = is_controller
        self._connect_options = dict(connect_options)
        self._system: NatsClient | None = None
        self._task: asyncio.Task[None] | None = None
        self._inputs: tuple[object, tuple[StreamSpec, ...]] = (None, ())
        self.disconnected = 0  # connections disconnected so far, for tests and metrics

    async def start(self) -> None:
        if not self._config.system_user:
            log.warning(
                "nats_auth.system_user is not set: a changed ACL or a revoked token applies "
                "to new NATS connections only"
            )
            return
        self._system = await nats.connect(
            **{
                **self._connect_options,
                "user": self._config.system_user,
                "password": self._config.system_password,
                "name": f"{self._connect_options.get('name', 'liftlog')}-system",
            }
        )
        self._task = asyncio.create_task(self._run(), name="nats-rights-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._system is not None and not self._system.is_closed:
            with contextlib.suppress(nats.errors.Error, OSError):
                await self._system.close()

    async def _run(self) -> None:
        before: dict[str, Rights] | None = None
        while True:
            await asyncio.sleep(CHECK_INTERVAL_S)
            try:
                before = await self._check(before)
            except LiftlogError as exc:
                # the cache is not trusted right now: judge nothing on it
                log.warning("NATS rights not checked: %s", exc.message)
            except Exception:
                # this task must outlive any bug: dead, it would leave revoked rights open
                log.exception("checking NATS rights failed; retrying")

    async def _check(self, before: dict[str, Rights] | None) -> dict[str, Rights]:
        issued = self._responder.take_issued()
        # rights derive from the token and ACL snapshot and the streams alone: while neither
        # changed, every login since the last look was judged on what ``before`` holds
        inputs = (self._auth.cache.snapshot, self._responder.specs())
        if before is not None and inputs[0] is self._inputs[0] and inputs[1] == self._inputs[1]:
            return before
        now = self.rights()
        self._inputs = inputs
        # every node answers for the logins it granted; the controller alone for the rest
        sampled = before if before is not None and self._is_controller() else {}
        changed = [
            p
            for p in sorted(set(sampled) | set(issued))
            if rights_changed(sampled.get(p), issued.get(p, set()), now.get(p))
        ]
        await asyncio.gather(*(self._disconnect_quietly(p) for p in changed))
        return now

    def rights(self) -> dict[str, Rights]:
        """Every principal that holds a token (or is a super user) and its rights now."""
        snapshot = self._auth.snapshot()
        tokens: dict[str, set[str]] = {}
        for token_id, record in snapshot.tokens.items():
            tokens.setdefault(record.principal, set()).add(token_id)
        principals = set(tokens) | set(self._auth.config.super_users) | {BOOTSTRAP_PRINCIPAL}
        return {
            p: Rights(self._responder.grant(p), frozenset(tokens.get(p, ()))) for p in principals
        }

    async def _disconnect_quietly(self, principal: str) -> None:
        try:
            count = await self.disconnect(principal)
        except (nats.errors.Error, OSError, ValueError) as exc:
            log.warning("could not disconnect %s's NATS connections: %s", principal, exc)
            return
        if count:
            log.info("rights of %s changed: %d NATS connection(s) log in again", principal, count)

    async def disconnect(self, principal: str) -> int:
        """Disconnect every connection of ``principal`` on every server; how many."""
        system = self._system
        if system is None:
            return 0
        count = 0
        for server_id, cid in await self._connections(system, principal):
            subject = KICK_SUBJECT.format(server_id=server_id)
            await system.request(subject, json.dumps({"cid": cid}).encode(), KICK_TIMEOUT_S)
            count += 1
        self.disconnected += count
        return count

    async def _connections(self, system: NatsClient, principal: str) -> list[tuple[str, int]]:
        inbox = system.new_inbox()
        sub = await system.subscribe(inbox)
        query = {"user": principal, "acc": self._config.account, "limit": CONNZ_LIMIT}
        await system.publish(CONNZ_SUBJECT, json.dumps(query).encode(), reply=inbox)
        found: list[tuple[str, int]] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CONNZ_WINDOW_S
        try:
            while (left := deadline - loop.time()) > 0:
                try:
                    msg = await sub.next_msg(timeout=left)
                except nats.errors.TimeoutError:
                    break
                found += _connz_connections(json.loads(msg.data))
        finally:
            await sub.unsubscribe()
        return found


def _connz_connections(answer: Mapping[str, Any]) -> list[tuple[str, int]]:
    server_id = str((answer.get("server") or {}).get("id", ""))
    connections = (answer.get("data") or {}).get("connections") or []
    return [(server_id, int(c["cid"])) for c in connections if "cid" in c]
