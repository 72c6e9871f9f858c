"""The NATS client protocol's frames, parsed many at a time from what the socket delivered.

A leader's intake reads every message a socket read brought in one pass and hands them to
the write path as one list, where a general NATS client builds an object, a queue entry and
a coroutine per message. Only what a subscriber receives is parsed here (``MSG``, ``HMSG`` and
the server's control lines); acks leave as ``PUB`` frames built by ``pub_frame``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.errors import IngestError

CRLF = b"\r\n"
HEADER_LINE = b"NATS/1.0"
MAX_CONTROL_LINE = 64 * 1024
"""A control line longer than this without its CRLF is a broken stream, not a slow one."""


class NatsProtocolError(IngestError):
    """The server sent something that is not the NATS protocol (the connection is dropped)."""


@dataclass(slots=True)
class InboundMessage:
    """One message delivered to a subscription: what a write path needs of it."""

    sid: int
    subject: str
    reply: str
    data: bytes
    headers: dict[str, str] | None


@dataclass(slots=True)
class Parsed:
    """What one ``FrameReader.feed`` found: messages in order, and the other lines."""

    messages: list[InboundMessage]
    controls: list[bytes]


class FrameReader:
    """Accumulates socket reads and cuts them into frames; a partial frame waits for more."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self._held = 0  # bytes in _chunks
        self._need = 0  # bytes the partial frame in _chunks needs before it can be parsed

    def reset(self) -> None:
        """Forget a partial frame (a new connection starts from nothing)."""
        self._chunks, self._held, self._need = [], 0, 0

    def feed(self, data: bytes) -> Parsed:
        """Every complete frame in what has arrived so far."""
        if self._chunks:
            self._chunks.append(data)
            self._held += len(data)
            if self._held < self._need:
                return Parsed([], [])  # a large message still arriving: no copy until whole
            buf = b"".join(self._chunks)
        else:
            buf = data
        messages: list[InboundMessage] = []
        controls: list[bytes] = []
        pos, size, need = 0, len(buf), 0
        while pos < size:
            eol = buf.find(CRLF, pos)
            if eol < 0:
                if size - pos > MAX_CONTROL_LINE:
                    raise NatsProtocolError("a control line without its end")
                break
            end = _frame_end(buf, pos, eol, size, messages)
            if end < 0:
                need = -end - pos  # the payload has not all arrived
                break
            if end == 0:
                controls.append(buf[pos:eol])
                end = eol + 2
            pos = end
        rest = buf[pos:]
        self._chunks, self._held, self._need = ([rest], len(rest), need) if rest else ([], 0, 0)
        return Parsed(messages, controls)


def _frame_end(buf: bytes, pos: int, eol: int, size: int, out: list[InboundMessage]) -> int:
    """Parse the message frame at ``pos`` into ``out``: the position after it; 0 if the line
    is not a message; minus the position the frame ends at if it has not all arrived."""
    if buf.startswith(b"MSG ", pos):
        args = buf[pos + 4 : eol].split()
        header_size = 0
    elif buf.startswith(b"HMSG ", pos):
        args = buf[pos + 5 : eol].split()
        header_size = _int(args.pop(-2)) if len(args) >= 4 else -1
    else:
        return 0
    if len(args) not in (3, 4) or header_size < 0:
        raise NatsProtocolError(f"malformed message line {buf[pos:eol][:200]!r}")
    total = _int(args[-1])
    start = eol + 2
    stop = start + total
    if stop + 2 > size:
        return -(stop + 2)
    headers = parse_headers(buf[start : start + header_size]) if header_size else None
    out.append(
        InboundMessage(
            sid=_int(args[1]),
            subject=args[0].decode(),
            reply=args[2].decode() if len(args) == 4 else "",
            data=buf[start + header_size : stop],
            headers=headers,
        )
    )
    return stop + 2


def _int(raw: bytes) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise NatsProtocolError(f"not a number in a message line: {raw[:40]!r}") from None
    if value < 0:
        raise NatsProtocolError(f"a negative size in a message line: {value}")
    return value


def parse_headers(block: bytes) -> dict[str, str] | None:
    """``NATS/1.0[ status]\\r\\nName: Value\\r\\n...``: names as sent, values stripped; a
    line without a colon or a name with spaces is skipped, as NATS clients do."""
    if not block.startswith(HEADER_LINE):
        raise NatsProtocolError("a header block without its NATS/1.0 line")
    out: dict[str, str] = {}
    for line in block.split(CRLF)[1:]:
        name, sep, value = line.partition(b":")
        if not sep:
            continue
        try:
            key = name.strip().decode("ascii")
        except UnicodeDecodeError:
            continue
        if not key or any(c.isspace() for c in key):
            continue
        out[key] = value.strip().decode("utf-8", "replace")
    return out or None


def pub_frame(subject: str, payload: bytes) -> bytes:
    """``PUB <subject> <size>\\r\\n<payload>\\r\\n``."""
    return b"PUB %s %d\r\n%s\r\n" % (subject.encode(), len(payload), payload)


def sub_frame(subject: str, queue: str, sid: int) -> bytes:
    """``SUB <subject> [queue] <sid>``."""
    if queue:
        return f"SUB {subject} {queue} {sid}\r\n".encode()
    return f"SUB {subject} {sid}\r\n".encode()


def unsub_frame(sid: int) -> bytes:
    return f"UNSUB {sid}\r\n".encode()
