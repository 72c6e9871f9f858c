"""The record of every publish attempt a workload made: what the checker judges the log by.

Every record payload is its own id (``w3-17``: worker 3, sequence 17), unique in a history and
readable back from the stored bytes, so the checker can tell who published each stored record
and which attempt it came from without any side table in the system under test.

An attempt has exactly one of three outcomes:

- ``ok``: the publish returned. With acks ``all``/``leader`` the ack carries the partition and
  the first offset (the batch's records are at ``offset + i``); with acks ``none`` nothing
  comes back, so an ok attempt has no offset and acknowledges nothing.
- ``failed``: an error reply with a code. Whether the record may still be stored depends on
  the code, which the checker decides (``checker.DEFINITELY_NOT_STORED``).
- ``indeterminate``: no answer (a timeout, a lost connection): the record may or may not be
  stored, and either is correct.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

OK = "ok"
FAILED = "failed"
INDETERMINATE = "indeterminate"
OUTCOMES = (OK, FAILED, INDETERMINATE)

ACKS_ALL = "all"
ACKS_LEADER = "leader"
ACKS_NONE = "none"
ACKS_LEVELS = (ACKS_ALL, ACKS_LEADER, ACKS_NONE)

HISTORY_FORMAT_VERSION = 1


class HistoryFormatError(ValueError):
    """A history file is not one this module wrote (unknown version, bad outcome)."""


def record_id(worker: int, seq: int) -> str:
    """The id of a worker's ``seq``-th record: also its payload, so stored bytes name it."""
    return f"w{worker}-{seq}"


def record_payload(rid: str) -> bytes:
    """The bytes a record with id ``rid`` is published as."""
    return rid.encode()


def record_id_of(payload: bytes) -> str:
    """The id a stored payload names (undecodable bytes come back escaped, still a key that
    matches no published id, so the checker reports them as unknown)."""
    return payload.decode("utf-8", "backslashreplace")


@dataclass(frozen=True, slots=True)
class Attempt:
    """One publish call (a single record or one ``publish_batch``), recorded once."""

    id: int
    worker: int
    acks: str
    with_msg_id: bool
    record_ids: tuple[str, ...]
    nats_url: str
    start_mono: float
    end_mono: float
    start_wall: float
    end_wall: float
    outcome: str
    partition: int | None = None
    offset: int | None = None
    """First offset of the acked records (the ack's), None unless acknowledged."""
    duplicate: bool = False
    """The node acked a msg id it had already stored (the offsets are the first copy's)."""
    error_code: str | None = None
    error_message: str | None = None

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise HistoryFormatError(f"unknown outcome {self.outcome!r}")
        if self.acks not in ACKS_LEVELS:
            raise HistoryFormatError(f"unknown acks level {self.acks!r}")

    @property
    def batch_size(self) -> int:
        return len(self.record_ids)

    @property
    def acknowledged(self) -> bool:
        """The system promised a place for the records (acks none promises nothing)."""
        return self.outcome == OK and self.offset is not None and self.partition is not None

    def acked_offsets(self) -> list[tuple[str, int, int]]:
        """(record id, partition, offset) of each acknowledged record; empty if not acked."""
        if not self.acknowledged:
            return []
        assert self.partition is not None and self.offset is not None
        return [(rid, self.partition, self.offset + i) for i, rid in enumerate(self.record_ids)]

    def to_json(self) -> dict[str, Any]:
        body = asdict(self)
        body["record_ids"] = list(self.record_ids)
        return body

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Attempt:
        return cls(**{**body, "record_ids": tuple(body["record_ids"])})


@dataclass
class History:
    """Attempts in the order they ended; appends are safe from threads and tasks alike."""

    attempts: list[Attempt] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _ids: itertools.count[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._ids = itertools.count(max((a.id for a in self.attempts), default=-1) + 1)

    def next_id(self) -> int:
        """A fresh attempt id (unique within this history)."""
        with self._lock:
            return next(self._ids)

    def append(self, attempt: Attempt) -> None:
        with self._lock:
            self.attempts.append(attempt)

    def snapshot(self) -> list[Attempt]:
        """A copy of the attempts so far (the workload may still be appending)."""
        with self._lock:
            return list(self.attempts)

    def published_ids(self) -> set[str]:
        """Every record id any attempt tried to publish, whatever its outcome."""
        return {rid for a in self.snapshot() for rid in a.record_ids}

    def to_json(self) -> dict[str, Any]:
        return {
            "version": HISTORY_FORMAT_VERSION,
            "attempts": [a.to_json() for a in self.snapshot()],
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> History:
        if body.get("version") != HISTORY_FORMAT_VERSION:
            raise HistoryFormatError(f"unknown history version {body.get('version')!r}")
        return cls([Attempt.from_json(a) for a in body["attempts"]])

    def dump(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=1))

    @classmethod
    def load(cls, path: Path) -> History:
        return cls.from_json(json.loads(path.read_text()))
