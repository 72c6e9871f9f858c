"""What the CLI prints for acks: offsets, batch counts, the deduplication marker."""

from __future__ import annotations

import json

import pytest

from liftlog.cli.common import ack_line
from liftlog.cli.plain_publish import _ack
from spark_log.api_models import Ack
from spark_log.errors import StreamPausedError


def test_ack_lines():
    assert ack_line(Ack("orders", 0, 3)) == "orders/0 offset=3"
    assert ack_line(Ack("orders", 0, 3, count=5)) == "orders/0 offset=3 count=5"
    assert ack_line(Ack("orders", 0, 3, duplicate=True)) == "orders/0 offset=3 duplicate"
    assert ack_line(None) == "published (no ack requested)"


def test_plain_acks_are_parsed_and_error_acks_raised_typed():
    body = {"stream": "orders", "partition": 1, "offset": 7, "duplicate": True}
    assert ack_line(_ack(json.dumps(body).encode(), "orders")) == "orders/1 offset=7 duplicate"
    paused = {"error": {"code": "stream_paused", "message": "stream orders is paused"}}
    with pytest.raises(StreamPausedError):
        _ack(json.dumps(paused).encode(), "orders")


@pytest.mark.parametrize("reply", [b"not json", b"[1, 2]", b'{"stream": "orders"}', b""])
def test_a_malformed_plain_reply_is_a_typed_error(reply):
    from spark_log.errors import InvalidRequestError

    with pytest.raises(InvalidRequestError, match="malformed ack"):
        _ack(reply, "orders")


def test_plain_publish_reuses_the_clients_pieces():
    import liftlog.cli.plain_publish as plain
    import spark_log.client.client as client

    assert plain.ack_from_wire is client.ack_from_wire
    assert plain.nats_url_from_cluster is client.nats_url_from_cluster
    assert plain.no_responders_error is client.no_responders_error
    assert not hasattr(plain, "_nats_url")
    assert _ack(b'{"partition": 0, "offset": 2}', "orders") == Ack("orders", 0, 2)
