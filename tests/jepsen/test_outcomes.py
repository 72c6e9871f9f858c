"""How the workload files each kind of error, and the publisher mix it runs: pure checks."""

from __future__ import annotations

from spark_log.errors import (
    NoRespondersError,
    NotEnoughReplicasError,
    NotLeaderError,
    RequestTimeoutError,
    UnavailableError,
)
from tests.support.jepsen.history import FAILED, INDETERMINATE
from tests.support.jepsen.workload import (
    ATTEMPT_TIMEOUT_CODE,
    CONNECTION_CODE,
    classify,
    default_mix,
)


def test_no_answer_is_indeterminate_and_an_error_reply_is_failed_with_its_code() -> None:
    cases = {
        TimeoutError(): (INDETERMINATE, ATTEMPT_TIMEOUT_CODE),
        RequestTimeoutError("no ack"): (INDETERMINATE, "timeout"),
        UnavailableError("connection lost"): (INDETERMINATE, "unavailable"),
        ConnectionResetError(): (INDETERMINATE, CONNECTION_CODE),
        NoRespondersError("nobody listens"): (FAILED, "no_responders"),
        NotEnoughReplicasError("isr too small"): (FAILED, "not_enough_replicas"),
        NotLeaderError("moved"): (FAILED, "not_leader"),
    }

    found = {exc: (classify(exc).outcome, classify(exc).code) for exc in cases}

    assert found == cases


def test_the_default_mix_has_every_acks_batch_and_msg_id_combination() -> None:
    mix = default_mix("nats://a", 12, first_worker=5)

    combos = {(s.acks, s.batch_size, s.with_msg_id) for s in mix}
    assert len(combos) == 12
    assert [s.worker for s in mix] == list(range(5, 17))
    assert {s.nats_url for s in mix} == {"nats://a"}
