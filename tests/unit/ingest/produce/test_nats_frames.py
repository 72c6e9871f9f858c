"""The intake's frame reader: whole frames however the socket cuts them, and broken ones."""

from __future__ import annotations

import pytest

from ingest.produce.nats_frames import (
    MAX_CONTROL_LINE,
    FrameReader,
    NatsProtocolError,
    parse_headers,
    pub_frame,
    sub_frame,
)

HEADERS = b"NATS/1.0\r\nLiftlog-Key: k1\r\n\r\n"
STREAM = (
    b"INFO {}\r\n"
    b"MSG orders.in 1 _INBOX.a.1 3\r\none\r\n"
    b"PING\r\n"
    + b"HMSG orders.in 2 _INBOX.a.2 %d %d\r\n" % (len(HEADERS), len(HEADERS) + 3)
    + HEADERS
    + b"abc\r\n"
    b"MSG orders.in 1 5\r\nno\r\nr\r\n"
)


def _all(chunks: list[bytes]) -> tuple[list[tuple[int, str, str, bytes, object]], list[bytes]]:
    reader = FrameReader()
    messages, controls = [], []
    for chunk in chunks:
        parsed = reader.feed(chunk)
        messages += [(m.sid, m.subject, m.reply, m.data, m.headers) for m in parsed.messages]
        controls += parsed.controls
    return messages, controls


EXPECTED = [
    (1, "orders.in", "_INBOX.a.1", b"one", None),
    (2, "orders.in", "_INBOX.a.2", b"abc", {"Liftlog-Key": "k1"}),
    (1, "orders.in", "", b"no\r\nr", None),
]


def test_one_read_holding_every_frame():
    assert _all([STREAM]) == (EXPECTED, [b"INFO {}", b"PING"])


@pytest.mark.parametrize("size", [1, 2, 3, 7, 16])
def test_frames_cut_anywhere_come_out_whole(size: int):
    chunks = [STREAM[i : i + size] for i in range(0, len(STREAM), size)]
    assert _all(chunks) == (EXPECTED, [b"INFO {}", b"PING"])


def test_a_large_message_arriving_in_pieces():
    payload = bytes(range(256)) * 4096  # 1 MiB
    frame = b"MSG big.in 7 r 1048576\r\n" + payload + b"\r\n"
    chunks = [frame[i : i + 65536] for i in range(0, len(frame), 65536)]
    messages, _ = _all(chunks)
    assert [(m[0], len(m[3])) for m in messages] == [(7, len(payload))]
    assert messages[0][3] == payload


@pytest.mark.parametrize(
    "frame",
    [
        b"MSG orders.in 1 x y z\r\n",  # too many arguments
        b"MSG orders.in one 3\r\nabc\r\n",  # a sid that is not a number
        b"MSG orders.in 1 -3\r\n",  # a negative size
        b"HMSG orders.in 1 3\r\nabc\r\n",  # no header size
        b"HMSG orders.in 1 4 4\r\nNOPE\r\n",  # a header block without NATS/1.0
    ],
)
def test_a_broken_frame_is_a_protocol_error(frame: bytes):
    with pytest.raises(NatsProtocolError):
        FrameReader().feed(frame)


def test_an_endless_control_line_is_a_protocol_error():
    with pytest.raises(NatsProtocolError, match="without its end"):
        FrameReader().feed(b"-ERR " + b"x" * (MAX_CONTROL_LINE + 1))


def test_headers_as_nats_clients_read_them():
    block = b"NATS/1.0\r\nA: 1\r\nB:2\r\nno colon\r\nbad name: x\r\nC:  spaced  \r\n\r\n"
    assert parse_headers(block) == {"A": "1", "B": "2", "C": "spaced"}
    assert parse_headers(b"NATS/1.0 503\r\n\r\n") is None


def test_frames_the_intake_writes():
    assert pub_frame("_INBOX.a.1", b"{}") == b"PUB _INBOX.a.1 2\r\n{}\r\n"
    assert sub_frame("orders.in", "", 3) == b"SUB orders.in 3\r\n"
    assert sub_frame("orders.in", "workers", 3) == b"SUB orders.in workers 3\r\n"
