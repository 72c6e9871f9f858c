"""A NATS client logging in with a Liftlog token, and what the server lets it do."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import nats
import nats.errors
from nats.aio.client import Client as NatsClient

from tests.support.waiting import wait_for_async

ACK_WAIT_S = 2.0
VIOLATION_WAIT_S = 0.5


@dataclass
class NatsLogin:
    """One connection and the errors the server sent it."""

    nc: NatsClient
    errors: list[str] = field(default_factory=list)
    reconnects: int = 0

    async def may_publish(self, subject: str) -> bool:
        """Published, then a round trip: nats-server answers a forbidden publish with a
        permissions violation before the PONG of the flush that follows it (nats-py may hand
        the violation over a moment after the PONG: it is waited for a little)."""
        before = len(self.errors)
        await self.nc.publish(subject, b"probe")
        await self.nc.flush()
        return not await self._violation_seen(before, "publish", subject)

    async def _violation_seen(self, before: int, kind: str, subject: str) -> bool:
        try:
            await wait_for_async(
                lambda: _violation(self.errors[before:], kind, subject), VIOLATION_WAIT_S
            )
        except AssertionError:
            return False
        return True

    async def acked(self, subject: str) -> bool:
        """A request on a stream's subject answered by its node: the publish got through."""
        try:
            await self.nc.request(subject, b"probe", timeout=ACK_WAIT_S)
        except nats.errors.TimeoutError:
            return False
        return True

    async def may_subscribe(self, subject: str) -> bool:
        before = len(self.errors)
        sub = await self.nc.subscribe(subject)
        await self.nc.flush()
        refused = await self._violation_seen(before, "subscription", subject)
        if not refused:
            await sub.unsubscribe()
        return not refused


async def login(url: str, ca_file: str, principal: str, token: str) -> NatsLogin:
    """A connection as ``user=<principal>`` with the token as password (NatsLoginError if
    the server refuses it)."""
    probe = NatsLogin(nc=NatsClient())

    async def on_error(exc: Exception) -> None:
        probe.errors.append(str(exc))

    async def on_reconnect() -> None:
        probe.reconnects += 1

    await probe.nc.connect(
        url,
        user=principal,
        password=token,
        tls=ssl.create_default_context(cafile=ca_file),
        error_cb=on_error,
        reconnected_cb=on_reconnect,
        connect_timeout=5,
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.2,
        allow_reconnect=True,
    )
    return probe


async def refused_login(url: str, ca_file: str, principal: str, token: str) -> str:
    """The server's refusal of a login, as the client sees it ("" when it was accepted)."""
    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(str(exc))

    try:
        nc = await nats.connect(
            url,
            user=principal,
            password=token,
            tls=ssl.create_default_context(cafile=ca_file),
            error_cb=on_error,
            connect_timeout=5,
            allow_reconnect=False,
            max_reconnect_attempts=0,
        )
    except (nats.errors.Error, OSError) as exc:
        return " ".join([str(exc), *errors]) or type(exc).__name__
    await nc.close()
    return ""


def _violation(errors: list[str], kind: str, subject: str) -> bool:
    wanted = f'permissions violation for {kind} to "{subject}"'.lower()
    return any(wanted in e.lower() for e in errors)


async def poll(check: Callable[[], Awaitable[bool]], timeout_s: float, message: str) -> float:
    """Seconds until ``check`` holds (AssertionError after ``timeout_s``); a check failing
    between a disconnect and the reconnect counts as not yet."""

    async def holds() -> bool:
        try:
            return await check()
        except (nats.errors.Error, OSError):
            return False

    start = asyncio.get_running_loop().time()
    await wait_for_async(holds, timeout_s, message=message)
    return asyncio.get_running_loop().time() - start
