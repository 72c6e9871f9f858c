"""Every REST request body is bounded by ``limits.max_request_bytes`` (413 ``request_too_large``).

A pure ASGI middleware, so the bound holds on every route before any handler or body model runs:
a declared ``Content-Length`` over the limit is refused before a byte of the body is read. A
body without one (chunked transfer) is not read here at all: the app's ``receive`` is wrapped
in a counter that stops the request with 413 as soon as the bytes handed to the app pass the
limit. Buffering it here instead would cost the limit (64 MiB by default) per connection
before routing and authentication, so a few unauthenticated clients could exhaust the node's
memory; counting leaves memory to whoever consumes the body, after authentication. A declared
length needs no counting: the HTTP server never hands the app more bytes than it.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from spark_log.errors import RequestTooLargeError


class BodyLimitMiddleware:
    """Refuse request bodies larger than ``max_bytes`` with a JSON 413."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await _refuse(send, self.max_bytes, f"of {declared} bytes is")
            return
        if declared is not None or not _has_chunked_body(scope):
            await self.app(scope, receive, send)
            return
        await self._counted(scope, receive, send)

    async def _counted(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the app on a counted ``receive``; once the body passes the limit the answer is
        413, whatever the app made of the error it got from ``receive``."""
        body = _CountedBody(receive, send, self.max_bytes)
        try:
            await self.app(scope, body.receive, body.send)
        except RequestTooLargeError:
            if not body.over:
                raise  # the app's own refusal, not the counter's
        if body.over and not body.started:
            await body.refuse()


class _CountedBody:
    """A request's ``receive`` and ``send`` with a byte counter between the server and the app.

    Past the limit ``receive`` raises RequestTooLargeError (and keeps raising); a response the
    app then starts (a 400 for a body it could not read, say) is replaced by the 413."""

    def __init__(self, receive: Receive, send: Send, max_bytes: int) -> None:
        self._receive = receive
        self._send = send
        self._max_bytes = max_bytes
        self._size = 0
        self._replaced = False
        self.over = False
        self.started = False

    async def receive(self) -> Message:
        if self.over:
            raise RequestTooLargeError(_message(self._max_bytes, "is"))
        message: Message = await self._receive()
        if message["type"] == "http.request":
            self._size += len(message.get("body", b""))
            if self._size > self._max_bytes:
                self.over = True
                raise RequestTooLargeError(_message(self._max_bytes, "is"))
        return message

    async def send(self, message: Message) -> None:
        if self._replaced:
            return
        if self.over and not self.started:
            await self.refuse()
            return
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)

    async def refuse(self) -> None:
        self.started = self._replaced = True
        await _refuse(self._send, self._max_bytes, "is")


def _message(max_bytes: int, how: str) -> str:
    return f"request body {how} over limits.max_request_bytes ({max_bytes} bytes)"


async def _refuse(send: Send, max_bytes: int, how: str) -> None:
    """The app's JSON error shape, and ``connection: close``: the rest of the body is unread."""
    body = json.dumps(RequestTooLargeError(_message(max_bytes, how)).to_json()).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


def _has_chunked_body(scope: Scope) -> bool:
    return any(name == b"transfer-encoding" for name, _value in scope.get("headers", ()))
