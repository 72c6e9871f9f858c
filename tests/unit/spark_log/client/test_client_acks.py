"""How the client reads acks: error codes to typed errors, no-responders, subscription bounds."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from spark_log.client.client import _fetch_limit, _is_no_responders, _wants_more
from spark_log.errors import (
    ExpectedOffsetMismatchError,
    NoRespondersError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderError,
    RecordTooLargeError,
    StreamPausedError,
    UnavailableError,
)
from spark_log.wire import decode_ack, error_from_json


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        ("stream_paused", StreamPausedError),
        ("not_enough_replicas", NotEnoughReplicasError),
        ("not_enough_replicas_after_append", NotEnoughReplicasAfterAppendError),
        ("not_leader", NotLeaderError),
        ("record_too_large", RecordTooLargeError),
        ("expected_offset_mismatch", ExpectedOffsetMismatchError),
        ("no_responders", NoRespondersError),
    ],
)
def test_error_codes_become_their_typed_errors(code, cls):
    error = error_from_json({"code": code, "message": "why"})
    assert type(error) is cls
    assert (error.code, error.message) == (code, "why")
    with pytest.raises(cls):
        decode_ack(
            b'{"stream":"s","partition":0,"error":{"code":"%s","message":"m"}}' % code.encode()
        )


def test_no_responders_is_an_unavailability():
    assert issubclass(NoRespondersError, UnavailableError)


@dataclass
class _Msg:
    data: bytes
    headers: dict[str, str] | None = field(default=None)


def test_no_responders_reply_is_recognised():
    assert _is_no_responders(_Msg(b"", {"Status": "503"}))
    assert not _is_no_responders(_Msg(b'{"offset":1}', None))
    assert not _is_no_responders(_Msg(b"", None))  # empty but no status: a malformed ack


def test_subscription_bounds():
    assert _wants_more(0, None, None)
    assert not _wants_more(5, 5, None)  # reached the end offset
    assert not _wants_more(0, None, 0)  # record budget used up
    assert _fetch_limit(1000, 3, 10, None) == 7
    assert _fetch_limit(1000, 0, None, 4) == 4
    assert _fetch_limit(2, 0, 10, 4) == 2


def test_acks_are_built_directly_not_through_the_generic_model_parse(monkeypatch):
    from spark_log.api_models import Ack
    from spark_log.client.client import ack_from_wire

    def generic(*_args, **_kwargs):
        raise AssertionError("the publish ack path must not use the generic Ack.from_json")

    monkeypatch.setattr(Ack, "from_json", classmethod(generic))
    body = decode_ack(b'{"stream":"s","partition":2,"offset":7}')
    assert ack_from_wire("s", body) == Ack("s", 2, 7, 1, False)
    assert ack_from_wire("s", {"partition": 2, "offset": 7}, 5) == Ack("s", 2, 7, 5, False)
    batch = decode_ack(b'{"stream":"s","partition":0,"offset":3,"count":4,"duplicate":true}')
    assert ack_from_wire("s", batch, 1) == Ack("s", 0, 3, 4, True)


def test_after_append_is_not_a_refusal_before_the_append():
    """Code catching ``NotEnoughReplicasError`` may rely on nothing having been stored."""
    assert not issubclass(NotEnoughReplicasAfterAppendError, NotEnoughReplicasError)
