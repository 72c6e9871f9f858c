"""The node's part in NATS logins: answering the auth callout and following rights changes.

Started once the node has its NATS connection, its token and ACL cache and its stream list;
off (nothing subscribed) unless ``[nats_auth]`` names the callout's issuer seed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import nats.errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from ingest.security.nats_callout import AUTH_CALLOUT_SUBJECT, CALLOUT_QUEUE, CalloutResponder
from ingest.security.nats_revocation import RightsWatch
from ingest.security.node_auth import NodeAuth
from spark_log.errors import LiftlogError
from spark_log.nats_auth_config import NatsAuthConfig
from spark_log.stream_spec import StreamSpec

log = logging.getLogger("liftlog.nats_auth")


class NatsLogins:
    def __init__(
        self,
        config: NatsAuthConfig,
        auth: NodeAuth,
        streams: Callable[[], Iterable[StreamSpec]],
        is_controller: Callable[[], bool],
        connect_options: Mapping[str, Any],
    ) -> None:
        self.responder = CalloutResponder(config, auth, streams)
        self.watch = RightsWatch(config, self.responder, auth, is_controller, connect_options)
        self._nc: NatsClient | None = None
        self._sub: Subscription | None = None

    async def start(self, nc: NatsClient) -> None:
        self._nc = nc
        self._sub = await nc.subscribe(
            AUTH_CALLOUT_SUBJECT, queue=CALLOUT_QUEUE, cb=self._on_request
        )
        await self.watch.start()
        log.info("answering NATS logins as issuer %s", self.responder.issuer)

    async def stop(self) -> None:
        await self.watch.stop()
        if self._sub is not None:
            with contextlib.suppress(nats.errors.Error, OSError):
                await self._sub.unsubscribe()  # a closed connection has nothing left to undo

    async def _on_request(self, msg: Msg) -> None:
        if not msg.reply or self._nc is None:
            return
        try:
            answer = self.responder.answer(msg.data.decode())
        except (LiftlogError, UnicodeDecodeError) as exc:
            log.warning("ignored an authorization request that is not the server's: %s", exc)
            return
        await self._nc.publish(msg.reply, answer.encode())
