"""Connecting a client to NATS within a bound, every refusal a typed error that says what to do.

nats-py retries a first connection as it retries a lost one (for ever, with
``max_reconnect_attempts=-1``) and logs each failure with a traceback. A client that may not
log in, or that does not trust the server's certificate, would then wait without end. Here a
refused login or a failed TLS handshake ends the attempt at once, anything else ends it at
``timeout_s``, and the error names the credentials to set and where a secured stack keeps them.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import nats.errors

from spark_log.errors import LiftlogError, NatsConnectError, NatsLoginError
from spark_log.nats_options import NatsAuthOptions
from spark_log.nats_tls import NatsConnection

DEFAULT_NATS_CONNECT_TIMEOUT_S = 10.0
"""How long a client tries to connect to NATS before giving up (nats-py's own per-try
``connect_timeout`` stays 2 s)."""
AUTHORIZATION_VIOLATION = "authorization violation"
WHERE_NATS_CREDENTIALS = (
    "log in with a valid Liftlog token (--token, LIFTLOG_TOKEN or the credentials file, "
    "LIFTLOG_CREDENTIALS_FILE: on a cluster whose nodes answer NATS logins the token is the "
    "NATS login) or set LIFTLOG_NATS_* (on `liftlog standalone --secure`: "
    "`. <data-dir>/tls/nats-publisher.env`)"
)

logger = logging.getLogger(__name__)

ErrorCallback = Callable[[Exception], Awaitable[None]]


async def connect_nats(
    url: str,
    auth: NatsAuthOptions,
    *,
    timeout_s: float,
    on_error: ErrorCallback | None = None,
    **options: Any,
) -> NatsConnection:
    """A connection to ``url`` logged in with ``auth`` (nats-py's ``options`` besides);
    NatsLoginError or NatsConnectError once it is refused or ``timeout_s`` has passed.
    ``on_error`` gets the connection's errors once it is connected."""
    watch = _ConnectWatch(url, auth, on_error)
    nc = NatsConnection()
    try:
        async with asyncio.timeout(timeout_s):
            await nc.connect(url, error_cb=watch.on_error, **auth, **options)
    except LiftlogError:
        nc.abandon()
        raise
    except TimeoutError:
        nc.abandon()
        raise watch.failure(f"no connection within {timeout_s:g} s") from None
    except (nats.errors.Error, OSError) as exc:
        nc.abandon()
        raise watch.failure(str(exc) or type(exc).__name__) from None
    watch.connected = True
    return nc


class _ConnectWatch:
    """nats-py's error callback: while connecting it remembers the last failure and ends the
    attempt on a refusal no retry can cure; once connected it logs errors in one line."""

    def __init__(self, url: str, auth: NatsAuthOptions, forward: ErrorCallback | None) -> None:
        self.url = url
        self.auth = auth
        self.forward = forward
        self.connected = False
        self.last: BaseException | None = None

    async def on_error(self, exc: Exception) -> None:
        if self.connected:
            logger.warning("NATS at %s: %s", self.url, exc or type(exc).__name__)
            if self.forward is not None:
                await self.forward(exc)
            return
        self.last = exc
        refusal = self.refusal(exc)
        if refusal is not None:
            raise refusal  # ends nats-py's connect loop: retrying cannot help

    def refusal(self, exc: BaseException) -> LiftlogError | None:
        """The typed error of a failure that retrying cannot cure, else None."""
        if AUTHORIZATION_VIOLATION in str(exc).lower():
            return NatsLoginError(
                f"NATS at {self.url} refused the login {_presented(self.auth)}: "
                f"{WHERE_NATS_CREDENTIALS}"
            )
        if isinstance(exc, ssl.SSLCertVerificationError):
            return NatsConnectError(
                f"NATS at {self.url} uses TLS with a certificate this client does not trust "
                f"({exc.verify_message}): set LIFTLOG_NATS_CA_FILE, or ca_file of the "
                "credentials file (LIFTLOG_CREDENTIALS_FILE), to the CA that signed it"
            )
        if isinstance(exc, ssl.SSLError):
            return NatsConnectError(f"the TLS handshake with NATS at {self.url} failed: {exc}")
        return None

    def failure(self, reason: str) -> NatsConnectError:
        """The error of an attempt that ended without a refusal (no server, a timeout)."""
        last = self.last
        if isinstance(last, ConnectionRefusedError):
            return NatsConnectError(
                f"nothing answers at NATS {self.url} (connection refused): check the URL "
                "(--nats-url, or the brokers' in `liftlog cluster`) and that nats-server runs"
            )
        cause = f"; last error: {last}" if last is not None and str(last) else ""
        return NatsConnectError(f"cannot connect to NATS at {self.url}: {reason}{cause}")


def _presented(auth: NatsAuthOptions) -> str:
    """What the client logged in with, in words (never the secret itself)."""
    if "user" in auth:
        return f"of user {auth['user']!r}"
    if "token" in auth:
        return "with a token (revoked, unknown, or not what this server takes)"
    if "nkeys_seed" in auth:
        return "with an NKey seed"
    if "user_credentials" in auth:
        return "with a .creds file"
    return "without credentials"
