"""Replication request/response codecs: round trips and strict decoding."""

from __future__ import annotations

import pytest

from spark_log.errors import InvalidRequestError
from spark_log.fetch_wire import (
    EpochRequest,
    EpochResponse,
    FetchMeta,
    FetchRequest,
    cluster_token,
    fetch_subject,
)


def test_round_trips():
    req = FetchRequest(replica_id=2, leader_epoch=3, fetch_offset=10, max_bytes=100, wait_ms=50)
    assert FetchRequest.decode(req.encode()) == req
    meta = FetchMeta(leader_epoch=3, high_watermark=9, log_start_offset=0, log_end_offset=12)
    assert FetchMeta.decode(meta.encode()) == meta
    ereq = EpochRequest(replica_id=2, leader_epoch=3, epoch=1)
    assert EpochRequest.decode(ereq.encode()) == ereq
    eresp = EpochResponse(epoch=1, end_offset=7)
    assert EpochResponse.decode(eresp.encode()) == eresp


@pytest.mark.parametrize(
    "data",
    [
        b"nope",
        b"[]",
        b'{"replica_id": 1}',
        b'{"replica_id": "1", "leader_epoch": 0, "fetch_offset": 0, "max_bytes": 1, "wait_ms": 0}',
    ],
)
def test_malformed_requests_are_typed_errors(data):
    with pytest.raises(InvalidRequestError):
        FetchRequest.decode(data)


def test_subjects_are_per_cluster_and_per_leader():
    a, b = cluster_token("/liftlog"), cluster_token("/other")
    assert a != b
    assert fetch_subject(a, "s", 0, 1) != fetch_subject(a, "s", 0, 2)
