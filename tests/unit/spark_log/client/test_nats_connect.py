"""A client's NATS connection: refusals no retry cures end it at once as typed errors that
say what to set, and nothing listening ends it within the bound."""

from __future__ import annotations

import socket
import ssl
import time

import pytest

from spark_log.client.nats_connect import _ConnectWatch, connect_nats
from spark_log.errors import NatsConnectError, NatsLoginError


def test_a_refused_login_names_what_was_presented_and_where_credentials_are() -> None:
    watch = _ConnectWatch("nats://h:4222", {"user": "bob", "password": "secret"}, None)
    refusal = watch.refusal(Exception("nats: 'Authorization Violation'"))
    assert isinstance(refusal, NatsLoginError)
    assert refusal.code == "unauthenticated"
    assert "of user 'bob'" in refusal.message and "secret" not in refusal.message
    assert "LIFTLOG_NATS_*" in refusal.message
    assert "nats-publisher.env" in refusal.message
    assert "LIFTLOG_CREDENTIALS_FILE" in refusal.message


def test_an_untrusted_certificate_says_which_ca_to_set() -> None:
    error = ssl.SSLCertVerificationError("certificate verify failed")
    error.verify_message = "self-signed certificate in certificate chain"
    refusal = _ConnectWatch("nats://h:4222", {}, None).refusal(error)
    assert isinstance(refusal, NatsConnectError)
    assert "self-signed" in refusal.message and "LIFTLOG_NATS_CA_FILE" in refusal.message


def test_other_failures_are_left_to_the_retries() -> None:
    assert _ConnectWatch("nats://h:4222", {}, None).refusal(ConnectionRefusedError()) is None


async def test_nothing_listening_ends_within_the_bound_though_retries_are_endless() -> None:
    with socket.socket() as spare:  # a port that was free a moment ago: nothing listens
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(NatsConnectError, match="nothing answers") as raised:
        await connect_nats(
            f"nats://127.0.0.1:{port}",
            {},
            timeout_s=1.5,
            max_reconnect_attempts=-1,
            reconnect_time_wait=0.1,
        )
    assert time.monotonic() - started < 5
    assert raised.value.code == "nats_unavailable"
