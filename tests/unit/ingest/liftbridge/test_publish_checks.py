"""A Liftbridge publish is checked as Liftbridge checks it, before anything is stored."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import pytest

from coordinator.znodes import PartitionState, StreamRecord
from ingest.admin.node_view import NodeView
from ingest.liftbridge.publish_checks import (
    check_ack_inbox,
    check_publish_subject,
    publish_target,
)
from ingest.produce.envelope_intake import text_headers
from ingest.replica.manager import StreamView
from spark_log.errors import (
    InternalStreamError,
    InvalidRequestError,
    PartitionNotFoundError,
    RecordTooLargeError,
    StreamNotFoundError,
    StreamReadOnlyError,
)
from spark_log.liftbridge import api_pb2 as pb
from spark_log.stream_spec import StreamSpec


def _node(*records: StreamRecord) -> NodeView:
    streams = {
        r.spec.name: StreamView(
            r, {p: PartitionState(2, 1, (2,), (2,), 1) for p in range(r.spec.partitions)}, {}
        )
        for r in records
    }
    return cast(NodeView, SimpleNamespace(replicas=SimpleNamespace(streams=streams)))


def _record(*, read_only: bool = False, **spec: object) -> StreamRecord:
    return StreamRecord(
        StreamSpec(name="s", subject="s.in", **spec),  # type: ignore[arg-type]
        paused=False,
        created_at_ms=1,
        read_only=read_only,
    )


def test_a_publish_goes_to_its_partition_with_its_ack_policy_and_headers() -> None:
    node = _node(_record(partitions=2))
    request = pb.PublishRequest(
        stream="s", partition=1, ackPolicy=pb.ALL, headers={"h": "é".encode()}, value=b"v"
    )
    target = publish_target(node, request)
    assert (target.subject, target.leader, target.ack_policy) == ("s.in.1", 2, "all")
    assert target.headers == {"h": "é"}
    assert target.expected_offset is None


@pytest.mark.parametrize(
    ("request_", "error"),
    [
        (pb.PublishRequest(), InvalidRequestError),
        (pb.PublishRequest(stream="nope"), StreamNotFoundError),
        (pb.PublishRequest(stream="s", partition=1), PartitionNotFoundError),
        (pb.PublishRequest(stream="s", partition=-1), PartitionNotFoundError),
        (pb.PublishRequest(stream="__cursors"), InternalStreamError),
        (pb.PublishRequest(stream="s", ackPolicy=7), InvalidRequestError),  # type: ignore[arg-type]
        (pb.PublishRequest(stream="s", headers={"bin": b"\xff"}), InvalidRequestError),
    ],
)
def test_a_publish_liftbridge_refuses_is_refused_with_its_typed_error(
    request_: pb.PublishRequest, error: type[Exception]
) -> None:
    with pytest.raises(error):
        publish_target(_node(_record()), request_)


def test_a_header_that_is_not_utf8_is_named() -> None:
    with pytest.raises(InvalidRequestError, match="'bin'"):
        text_headers({"ok": b"x", "bin": b"\xff\xfe"})


def test_a_read_only_stream_refuses_publishes() -> None:
    with pytest.raises(StreamReadOnlyError):
        publish_target(_node(_record(read_only=True)), pb.PublishRequest(stream="s"))


def test_a_value_over_max_record_bytes_is_too_large() -> None:
    node = _node(_record(max_record_bytes=4))
    with pytest.raises(RecordTooLargeError):
        publish_target(node, pb.PublishRequest(stream="s", value=b"12345"))
    assert publish_target(node, pb.PublishRequest(stream="s", value=b"1234")).spec.name == "s"


def test_expected_offset_counts_only_with_optimistic_concurrency_control() -> None:
    plain = _node(_record())
    occ = _node(_record(optimistic_concurrency_control=True))
    request = pb.PublishRequest(stream="s", expectedOffset=5)
    assert publish_target(plain, request).expected_offset is None
    assert publish_target(occ, request).expected_offset == 5
    # unset is 0 on the wire: on such a stream Liftbridge expects offset 0, -1 asks for no check
    assert publish_target(occ, pb.PublishRequest(stream="s")).expected_offset == 0
    assert (
        publish_target(occ, pb.PublishRequest(stream="s", expectedOffset=-1)).expected_offset
        is None
    )


def test_acks_none_on_a_concurrency_controlled_stream_is_a_bad_request() -> None:
    occ = _node(_record(optimistic_concurrency_control=True))
    with pytest.raises(InvalidRequestError, match="ack"):
        publish_target(occ, pb.PublishRequest(stream="s", ackPolicy=pb.NONE))


@pytest.mark.parametrize("inbox", ["_LIFTLOG.x.inbox.1", "$SYS.x", "a.*", "a.>", "a b"])
def test_an_ack_inbox_in_a_namespace_of_the_nodes_or_with_wildcards_is_refused(
    inbox: str,
) -> None:
    with pytest.raises(InvalidRequestError):
        check_ack_inbox(inbox)


def test_a_client_inbox_is_a_valid_ack_inbox() -> None:
    check_ack_inbox("_INBOX.abc.1")
    check_ack_inbox("")


@pytest.mark.parametrize("subject", ["", "_INBOX.x", "_LIFTLOG.c.fetch", "$JS.API.x", "a.*"])
def test_publish_to_subject_refuses_inboxes_and_internal_subjects(subject: str) -> None:
    with pytest.raises(InvalidRequestError):
        check_publish_subject(subject)
